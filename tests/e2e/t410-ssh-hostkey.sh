#!/bin/sh
# Host keys over SSH: pinned at first contact; a worker that comes back
# with another key is refused (apply, exec, ssh) with both fingerprints and
# a way out, while the other workers carry on; `state rm` + apply re-pins;
# a node that tpuform re-creates (new node id) starts new pins by itself.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t410
export TPUFORM_SSH_RETRY=2
gcp_workers_start 8 127.0.41.1 --op-seconds 0.1
cat >fleet.yaml <<YAML
fleet: hk
provider:
  gcp: { project: test-project, endpoint: "http://127.0.0.1:$FAKEGCP_PORT" }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT }
run: |
  echo "\$TPUFORM_NODE \$TPUFORM_WORKER_ID retry=\$TPUFORM_RETRY" >> ~/starts
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 2, preemptible: true }
YAML

st() { jq -r "$1" tpuform.state.json; }
widx() { sshd_index "$(st ".nodes[] | select(.name == \"$1\") | .workers[$2].address")"; }
pin() { st ".nodes[] | select(.name == \"$1\") | .workers[$2].host_key"; }
# a fingerprint as an extended regular expression (base64 has + and /)
re() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'; }

ok "apply" tpuform apply -f fleet.yaml -auto-approve
i=$(widx hk-a-0 1)
old=$(pin hk-a-0 1)
is "the pin is the worker's key" "$old" "$(sshd_fingerprint "$i")"

# The worker comes back with another host key (rebuilt VM, or an impostor).
ok "worker restarts with a new host key" sshd_restart_one "$i" newkey
new=$(sshd_fingerprint "$i")
is "the key really changed" "$(test "$old" != "$new" && echo yes)" yes
# A new run command: every worker must be provisioned again.
sed -i 's/exec sleep 300/exec sleep 301/' fleet.yaml
fails "apply refuses the changed worker" 1 tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "naming the worker and its address" "$out" "host key of worker 'hk-a-0/w1' at $(sshd_addr "$i") port $SSHD_PORT has changed"
like "with both fingerprints" "$out" "pinned $(re "$old"), the worker presents $(re "$new"); refusing to connect"
like "and the way out" "$out" "tpuform state rm hk-a-0"
like "the recap counts it failed" "$out" "hk-a-0/w1 +: ok=0 +changed=0 +unreachable=0 +failed=1"
like "the other workers were provisioned" "$out" "hk-a-0/w0 +: ok=0 +changed=1 .*"
like "on both nodes" "$(grep -c '^changed: \[hk-a-' last.out)" "^3$"
is "the pin is kept" "$(pin hk-a-0 1)" "$old"
ok "nothing ran on the refused worker" test "$(wc -l <"$W/workers/w$i/home/starts")" -eq 1

fails "exec refuses it too" 1 tpuform exec -f fleet.yaml hk-a-0 -worker 1 -- 'touch ~/exec-ran'
like "and says why, not 'unreachable'" "$(cat last.out)" "hk-a-0/w1 : refused: host key changed"
like "with the same message" "$(cat last.out)" "has changed: pinned $(re "$old")"
ok "and ran nothing there" test ! -e "$W/workers/w$i/home/exec-ran"
fails "ssh refuses it too" 1 sh -c "echo 'touch ~/ssh-ran' | '$TPUFORM' ssh -f fleet.yaml hk-a-0 -worker 1"
like "before running ssh(1)" "$(cat last.out)" "has changed: pinned $(re "$old")"
ok "and ran nothing there" test ! -e "$W/workers/w$i/home/ssh-ran"

# ssh(1) itself refuses a key that differs from the one tpuform checked:
# the ssh program sees only the pinned key.
printf '#!/bin/sh\n# swap the key between our check and ssh(1)\n. "%s/tests/e2e/sshd.sh"\nsshd_restart_one %s newkey >/dev/null 2>&1\nexec ssh "$@"\n' "$TOP" "$(widx hk-a-0 0)" >swap-ssh
chmod +x swap-ssh
fails "a key swapped under ssh(1) is refused by ssh(1)" 255 sh -c "echo 'touch ~/swap-ran' | TPUFORM_SSH_PROGRAM='$W/swap-ssh' '$TPUFORM' ssh -f fleet.yaml hk-a-0 -worker 0"
like "as a changed host key" "$(cat last.out)" "Host key verification failed"
ok "and ran nothing there" test ! -e "$W/workers/w$(widx hk-a-0 0)/home/swap-ran"

# Trusting the new keys on purpose: forget the node, apply adopts it.
ok "state rm" tpuform state rm -f fleet.yaml hk-a-0
ok "apply adopts the node" tpuform apply -f fleet.yaml -auto-approve
is "worker 1's new key is pinned" "$(pin hk-a-0 1)" "$new"
is "worker 0's new key is pinned" "$(pin hk-a-0 0)" "$(sshd_fingerprint "$(widx hk-a-0 0)")"
like "and its job runs" "$(tail -n 1 "$W/workers/w$i/home/starts")" "^hk-a-0 1 retry=0$"
ok "plan is clean" tpuform plan -f fleet.yaml -detailed-exitcode

# A re-created node has a new id and new VMs: new pins, no refusal.
id1=$(st '.nodes[] | select(.name == "hk-a-1") | .id')
a1=$(st '.nodes[] | select(.name == "hk-a-1") | [.workers[].address] | join(" ")')
curl -s -o /dev/null -X POST "$FAKEGCP_URL/__admin/nodes/z1/hk-a-1:preempt"
like "plan replaces the preempted node" "$(tpuform plan -f fleet.yaml 2>&1)" "hk-a-1 must be replaced"
ok "apply re-creates it" tpuform apply -f fleet.yaml -auto-approve
id2=$(st '.nodes[] | select(.name == "hk-a-1") | .id')
a2=$(st '.nodes[] | select(.name == "hk-a-1") | [.workers[].address] | join(" ")')
is "a new node id" "$(test "$id1" != "$id2" && echo yes)" yes
is "on new workers" "$(test "$a1" != "$a2" && echo yes)" yes
for w in 0 1; do
	is "worker $w of the new node pinned its own key" "$(pin hk-a-1 $w)" "$(sshd_fingerprint "$(widx hk-a-1 $w)")"
	like "and runs the job with TPUFORM_RETRY=1" "$(cat "$W/workers/w$(widx hk-a-1 $w)/home/starts")" "^hk-a-1 $w retry=1$"
done
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

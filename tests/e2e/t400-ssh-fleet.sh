#!/bin/sh
# The gcp provider's workers over SSH, end to end: the Cloud TPU API
# emulator (tests/fakegcp) hands out worker addresses where real OpenSSH
# daemons listen (tests/e2e/sshd.sh), one per worker, each with its own
# host key and private home. A fleet of two v4-16 nodes (2 workers each):
# four sessions with the right TPUFORM_WORKER_ID/NUM_WORKERS, host keys
# pinned in state, hostile env and secret values intact, files with the
# right modes, a second apply that changes nothing; show, logs, exec -all
# and ssh per worker; a killed session restarts its node's workers together
# (restart_scope: node, the default on multi-host types); destroy.
# shellcheck disable=SC2016 # $vars in single quotes are for the workers' shell
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t400
export TPUFORM_SSH_RETRY=2
gcp_workers_start 4 127.0.40.1 --op-seconds 0.1

# Values a shell would love to misread. The secret travels in the env
# file, the env value in the script.
HOSTILE=$(printf 'a'"'"'b "c" $(touch /tmp/pwned) `id` \\n back\\slash\n2nd line\t%%s -x é ')
export T400_TOKEN="$HOSTILE tok-9f8e7d"
cat >fleet.yaml <<'YAML'
fleet: sf
provider:
  gcp: { project: test-project, endpoint: "http://127.0.0.1:@FGPORT@" }
ssh: { user: root, private_key: "@KEY@", port: @PORT@ }
env: { HOSTILE: "@HOSTILE@" }
secrets: { TOKEN: "${T400_TOKEN}" }
run: |
  printf '%s' "$HOSTILE" > ~/env.out
  printf '%s' "$TOKEN" > ~/secret.out
  echo "$TPUFORM_NODE $TPUFORM_WORKER_ID/$TPUFORM_NUM_WORKERS retry=$TPUFORM_RETRY coord=${TPUFORM_COORDINATOR:-}" >> ~/starts
  echo "step 1 on $TPUFORM_NODE/$TPUFORM_WORKER_ID"
  echo "step 2 on $TPUFORM_NODE/$TPUFORM_WORKER_ID"
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 2 }
YAML
# YAML double-quoted form of $HOSTILE
yq_hostile=$(printf '%s' "$HOSTILE" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/	/\\t/g' | awk 'NR > 1 { printf "\\n" } { printf "%s", $0 }')
FG=$FAKEGCP_PORT YH=$yq_hostile awk '
	function put(tok, val,   i) {
		while ((i = index($0, tok)) > 0)
			$0 = substr($0, 1, i - 1) val substr($0, i + length(tok))
	}
	{ put("@FGPORT@", ENVIRON["FG"]); put("@KEY@", ENVIRON["SSHD_KEY"])
	  put("@PORT@", ENVIRON["SSHD_PORT"]); put("@HOSTILE@", ENVIRON["YH"]); print }' fleet.yaml >fleet.tmp && mv fleet.tmp fleet.yaml

# which harness worker holds NODE/wN, from the address in state
widx() {
	sshd_index "$(jq -r --arg n "$1" --argjson w "$2" '.nodes[] | select(.name == $n) | .workers[$w].address' tpuform.state.json)"
}

ok "apply" tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "every worker reports changed" "$(grep -c '^changed: \[sf-a-[01]/w[01]\]' last.out)" "^4$"
like "the recap lists each worker" "$out" "sf-a-1/w1 +: ok=0 +changed=1 +unreachable=0 +failed=0"
like "apply completes" "$out" "Apply complete! Resources: 2 added, 0 changed, 0 destroyed\."

starts=$(cat "$W"/workers/w*/home/starts | sort | tr '\n' ';')
like "four sessions with their worker ids (node 0)" "$starts" "sf-a-0 0/2 retry=0 coord=127\.0\.40\.[0-9]+;sf-a-0 1/2 retry=0"
like "four sessions with their worker ids (node 1)" "$starts" "sf-a-1 0/2 retry=0 coord=127\.0\.40\.[0-9]+;sf-a-1 1/2 retry=0"
is "each worker started exactly once" "$(cat "$W"/workers/w*/home/starts | wc -l | tr -d ' ')" 4
w0=$(widx sf-a-1 0)
w1=$(widx sf-a-1 1)
like "the coordinator is worker 0's address" "$(cat "$W/workers/w$w1/home/starts")" "coord=$(sshd_addr "$w0")$"
is "the workers of a node are different VMs" "$(test "$w0" != "$w1" && echo yes)" yes

for i in 0 1 2 3; do
	is "worker $i: the hostile env value arrived intact" "$(cat "$W/workers/w$i/home/env.out"; echo .)" "$HOSTILE."
	is "worker $i: the hostile secret arrived intact" "$(cat "$W/workers/w$i/home/secret.out"; echo .)" "$T400_TOKEN."
done
ok "nothing ran the \$(...) in the value" test ! -e "$W/workers/w0/tmp/pwned"
is "secrets.env is 0600" "$(stat -c %a "$W/workers/w0/home/tpuform/secrets.env")" 600
is "bootstrap.sh is 0700" "$(stat -c %a "$W/workers/w0/home/tpuform/bootstrap.sh")" 700
unlike "the secret is not in the script" "$(cat "$W"/workers/w*/home/tpuform/bootstrap.sh)" "tok-9f8e7d"
unlike "nor in the state" "$(cat tpuform.state.json)" "tok-9f8e7d"
unlike "nor in apply's output" "$out" "tok-9f8e7d"

# host keys pinned per worker, as ssh-keygen prints them
pins=$(jq -r '.nodes[] | .name as $n | .workers[] | "\($n)/w\(.index) \(.address) \(.host_key)"' tpuform.state.json)
want=""
for n in sf-a-0 sf-a-1; do
	for w in 0 1; do
		i=$(widx $n $w)
		want="$want$n/w$w $(sshd_addr "$i") $(sshd_fingerprint "$i")
"
	done
done
is "each worker's host key is pinned in state" "$pins
" "$want"

ok "a second apply" tpuform apply -f fleet.yaml -auto-approve
like "changes nothing" "$(cat last.out)" "No changes\."
ok "plan is clean" tpuform plan -f fleet.yaml -detailed-exitcode
is "no job was started twice" "$(cat "$W"/workers/w*/home/starts | wc -l | tr -d ' ')" 4

show=$(tpuform show -detail -f fleet.yaml 2>&1)
like "show: every worker reachable and alive" "$(printf '%s\n' "$show" | grep -cE '^ +w[01] +yes +alive ')" "^4$"
like "show: the last log line" "$show" "w1 +yes +alive +- +0 +step 2 on sf-a-1/1"

logs=$(tpuform logs -f fleet.yaml sf-a-1 2>&1)
like "logs: worker 0's lines, prefixed" "$logs" "^sf-a-1/w0 \| step 1 on sf-a-1/0$"
like "logs: worker 1's lines, prefixed" "$logs" "^sf-a-1/w1 \| step 2 on sf-a-1/1$"
logs=$(tpuform logs -f fleet.yaml sf-a-0 -worker 1 -n 1 2>&1)
is "logs -worker 1 -n 1" "$logs" "sf-a-0/w1 | step 2 on sf-a-0/1"

ok "exec -all" tpuform exec -f fleet.yaml -all -- 'echo "$(cat ~/starts | cut -d" " -f1,2) in $(pwd)"; exit $(($(wc -l < ~/starts) - 1))'
ex=$(cat last.out)
for n in sf-a-0 sf-a-1; do
	for w in 0 1; do
		like "exec: $n/w$w's output, prefixed" "$ex" "^$n/w$w \| $n $w/2 in /root$"
		like "exec: $n/w$w's status" "$ex" "^$n/w$w : exit=0$"
	done
done
fails "exec: a failing command exits with its status (the worst worker's)" 7 tpuform exec -f fleet.yaml sf-a-0 -worker 1 -- 'echo oops >&2; exit 7'
like "with that worker's status and output" "$(cat last.out)" "sf-a-0/w1 \| oops"
like "and status 7" "$(cat last.out)" "sf-a-0/w1 : exit=7"

sh_out=$(echo 'cat ~/starts; echo "user=$(id -un)"' | tpuform ssh -f fleet.yaml sf-a-1 -worker 1 2>&1)
like "ssh: a shell on the chosen worker" "$sh_out" "sf-a-1 1/2 retry=0"
like "ssh: as the fleet's user" "$sh_out" "user=root"
unlike "ssh: with the pinned key, no prompt or warning" "$sh_out" "Permanently added|authenticity"

# A session killed behind tpuform's back: both workers of the node restart.
wk=$(widx sf-a-1 1)
wp=$(widx sf-a-1 0)
# shellcheck disable=SC2317 # called through wait_for
session_gone() { ! sshd_in "$1" screen -ls 2>/dev/null | grep -q tpuform-sf; }
sshd_in "$wk" screen -S tpuform-sf -X quit >/dev/null 2>&1
ok "the session is gone" wait_for 5 session_gone "$wk"
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: the killed session is restarted" "$out" "# sf-a-1 will be updated in-place"
like "plan: naming the worker" "$out" "restart all 2 workers of sf-a-1: worker 1 has a dead session"
unlike "plan: the other node is left alone" "$out" "sf-a-0 will be"
ok "apply restarts it" tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "that worker changed" "$out" "changed: \[sf-a-1/w1\]"
like "and its peer, stopped and started again" "$out" "changed: \[sf-a-1/w0\]"
is "no other worker was touched" "$(grep -cE '^(changed|ok): ' last.out)" 2
wait_for 5 grep -q "retry=1" "$W/workers/w$wk/home/starts"
wait_for 5 grep -q "retry=1" "$W/workers/w$wp/home/starts"
like "it restarted with TPUFORM_RETRY=1" "$(tail -n 1 "$W/workers/w$wk/home/starts")" "^sf-a-1 1/2 retry=1 "
like "its peer with the same TPUFORM_RETRY" "$(tail -n 1 "$W/workers/w$wp/home/starts")" "^sf-a-1 0/2 retry=1 "
is "the other node's workers ran once" "$(cat "$W"/workers/w*/home/starts | wc -l | tr -d ' ')" 6
ok "plan is clean again" tpuform plan -f fleet.yaml -detailed-exitcode

ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
is "no node is left" "$(curl -s "$FAKEGCP_URL/__admin/nodes" | jq 'length')" 0
finish

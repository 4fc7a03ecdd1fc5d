#!/bin/sh
# Unreachable workers: with one worker's sshd down, apply reports that
# worker by index and address, provisions every other worker, and exits 1;
# the node is not done until every worker runs its session, so the next
# plan provisions that worker alone. A worker whose sshd comes up late is
# waited for within the retry budget.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t420
export TPUFORM_SSH_RETRY=1
gcp_workers_start 6 127.0.42.1 --op-seconds 0.1
cat >fleet.yaml <<YAML
fleet: ur
provider:
  gcp: { project: test-project, endpoint: "http://127.0.0.1:$FAKEGCP_PORT" }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT }
run: |
  echo "\$TPUFORM_NODE \$TPUFORM_WORKER_ID" >> ~/starts
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-32, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1 }
YAML
# fakegcp hands out addresses in order: the node's workers are 0..3.
ok "worker 2's sshd is down before the node exists" sshd_stop_one 2
fails "apply exits 1" 1 tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "the worker is named, with its address and why" "$out" "Error: cannot connect to worker 'ur-a-0/w2' at $(sshd_addr 2) port $SSHD_PORT: Connection refused \(after [0-9]+ attempts over [0-9]+ s\)"
like "with a hint" "$out" "is the worker's VM up, and sshd listening on port $SSHD_PORT there\?"
like "the progress line says unreachable" "$out" "fatal: \[ur-a-0/w2\]: UNREACHABLE!"
like "the recap counts it unreachable" "$out" "ur-a-0/w2 +: ok=0 +changed=0 +unreachable=1 +failed=0"
for w in 0 1 3; do
	like "worker $w was provisioned all the same" "$out" "changed: \[ur-a-0/w$w\]"
	ok "worker $w runs its job" wait_for 5 grep -q "ur-a-0 $w" "$W/workers/w$w/home/starts"
done
ok "nothing reached worker 2" test ! -e "$W/workers/w2/home/tpuform"
is "the state says so" "$(jq -r '.nodes[0].workers[2].status' tpuform.state.json)" unreachable

show=$(tpuform show -detail -f fleet.yaml 2>&1)
like "show: worker 2 is unreachable" "$show" "w2 +[?] +unreachable "
like "show: the others are" "$(printf '%s\n' "$show" | grep -cE '^ +w[013] +yes +alive ')" "^3$"
plan=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: the node is not done" "$plan" "# ur-a-0 will be updated in-place"
like "plan: worker 2 still to provision" "$plan" "workers to provision: 2$"

ok "worker 2's sshd is back" sshd_restart_one 2
ok "apply" tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "provisions worker 2" "$out" "changed: \[ur-a-0/w2\]"
is "and touches nobody else" "$(grep -cE '^(changed|ok|fatal): ' last.out)" 1
ok "worker 2 runs its job" wait_for 5 grep -q "ur-a-0 2" "$W/workers/w2/home/starts"
ok "plan is clean" tpuform plan -f fleet.yaml -detailed-exitcode
is "every worker started once" "$(cat "$W"/workers/w[0-3]/home/starts | wc -l | tr -d ' ')" 4

# A VM whose sshd comes up a few seconds late: apply waits for it.
sed -i 's/exec sleep 300/exec sleep 301/' fleet.yaml
sshd_stop_one 3
(sleep 2; sshd_restart_one 3) >/dev/null 2>&1 &
late=$!
TPUFORM_SSH_RETRY=30 tpuform apply -f fleet.yaml -auto-approve >late.out 2>&1
is "apply waits for the late sshd" "$?" 0
like "and provisions it" "$(cat late.out)" "changed: \[ur-a-0/w3\]"
wait "$late"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

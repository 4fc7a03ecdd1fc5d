#!/bin/sh
# The state lock: a second apply is refused at once with the holder's info,
# or waits with -lock-timeout.
. "$(dirname "$0")/lib.sh"
setup_dir t110
cat >fleet.yaml <<'YAML'
fleet: lk
provider:
  local: { root: nodes, create_delay: 3s }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
"$TPUFORM" apply -f fleet.yaml -auto-approve >first.out 2>&1 &
first=$!
wait_for 5 test -f .tpuform.state.json.lock.info
ok "the lock info file appears while apply runs" test -f .tpuform.state.json.lock.info
fails "a concurrent apply is refused" 1 tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "with Terraform's message" "$out" "Error acquiring the state lock"
like "naming the operation that holds it" "$out" "Operation: +OperationTypeApply"
like "and its ID" "$out" "ID: +[0-9a-f-]{36}"
like "with the hint" "$out" "lock-timeout"
fails "a concurrent destroy is refused too" 1 tpuform destroy -f fleet.yaml -auto-approve
fails "plan takes the lock too, as Terraform's" 1 tpuform plan -f fleet.yaml
like "naming the apply that holds it" "$(cat last.out)" "Operation: +OperationTypeApply"
ok "plan -lock=false does not need the lock" tpuform plan -f fleet.yaml -lock=false
ok "a second apply with -lock-timeout=30s waits and then succeeds" tpuform apply -f fleet.yaml -auto-approve -lock-timeout=30s
wait $first
is "the first apply succeeded" "$?" 0
ok "the lock info file is removed after apply" test ! -f .tpuform.state.json.lock.info
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

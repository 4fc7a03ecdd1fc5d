#!/bin/sh
# restart_on_exit_codes (issue 21, as xpk's restart-on-exit-codes): a job
# that exits with a chosen code (42) is restarted; one that exits with any
# other failing code (3) ends its run: recorded as failed, not restarted.
. "$(dirname "$0")/lib.sh"
setup_dir t580
cat >fleet.yaml <<'YAML'
fleet: ec
provider:
  local: { root: nodes, create_delay: 0.2s }
max_restarts: 3
restart_backoff: 0s
restart_on_exit_codes: [42]
run: |
  mkdir -p "$TPUFORM_BUCKET"
  echo "$TPUFORM_NODE retry=$TPUFORM_RETRY" >>"$TPUFORM_BUCKET/starts"
  case "$TPUFORM_NODE" in
    ec-again-*) [ "$TPUFORM_RETRY" -ge 1 ] && exec sleep 300; exit 42 ;;
    ec-stop-*) exit 3 ;;
  esac
groups:
  - { name: again, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
  - { name: stop, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
# shellcheck disable=SC2317 # called through wait_for
exited() { "$TPUFORM" show -detail -f fleet.yaml | grep -c ' exited ' | grep -qx "$1"; }
wait_for 10 exited 2
out=$(tpuform plan -f fleet.yaml)
like "exit 42 is restarted" "$out" "ec-again-0 will be updated in-place"
unlike "exit 3 is not" "$out" "ec-stop-0 will be"
like "and says why" "$out" "job failed \(exit 3\); not restarted \(exit 3 is not in restart_on_exit_codes\)"
ok "apply restarts the exit-42 job" tpuform apply -f fleet.yaml -auto-approve
wait_for 10 grep -q "ec-again-0 retry=1" nodes/bucket/starts
ok "it ran again with TPUFORM_RETRY=1" grep -q "ec-again-0 retry=1" nodes/bucket/starts
is "the exit-3 job ran once" "$(grep -c ec-stop-0 nodes/bucket/starts)" 1
show=$(tpuform show -detail -f fleet.yaml)
like "show: the exit-3 node failed" "$show" "ec-stop-0.*failed"
fails "plan -detailed-exitcode: not as declared" 3 tpuform plan -f fleet.yaml -detailed-exitcode
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

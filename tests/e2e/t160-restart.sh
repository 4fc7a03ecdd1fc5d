#!/bin/sh
# Sessions: a killed session is restarted (only on its worker); a job that
# exits 0 is finished, not restarted; one that fails is restarted up to
# max_restarts; TPUFORM_RETRY counts the attempts.
. "$(dirname "$0")/lib.sh"
setup_dir t160
cat >fleet.yaml <<'YAML'
fleet: rs
provider:
  local: { root: nodes, create_delay: 0.2s }
restart: on-failure
max_restarts: 2
# Per-worker restarts, at once (t230 tests the default: the node's
# workers restart together, with a backoff).
restart_scope: worker
restart_backoff: 0s
run: |
  mkdir -p "$TPUFORM_BUCKET"
  echo "$TPUFORM_NODE/$TPUFORM_WORKER_ID retry=$TPUFORM_RETRY" >>"$TPUFORM_BUCKET/starts"
  case "$TPUFORM_NODE" in
    rs-long-*) exec sleep 300 ;;
    rs-ok-*) exit 0 ;;
    rs-bad-*) exit 3 ;;
  esac
groups:
  - { name: long, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1 }
  - { name: ok, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
  - { name: bad, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
# shellcheck disable=SC2016 # expanded by the inner sh, at each try
wait_for 10 sh -c '[ "$(wc -l < nodes/bucket/starts)" -ge 4 ]'
# The short jobs must have finished (exit codes recorded) before we look.
# shellcheck disable=SC2317 # called through wait_for
exited() { "$TPUFORM" show -detail -f fleet.yaml | grep -c ' exited ' | grep -qx "$1"; }
wait_for 10 exited 2
home=nodes/nodes/rs-long-0/workers/1
SCREENDIR=$home/.screen screen -ls | awk '/\t/ {print $1}' | while read -r s; do SCREENDIR=$home/.screen screen -S "$s" -X quit; done
pkill -f "$W/nodes/nodes/rs-long-0/workers/1" 2>/dev/null
out=$(tpuform plan -f fleet.yaml)
like "plan restarts the killed session" "$out" "# rs-long-0 will be updated in-place"
like "naming the worker" "$out" "worker 1 has a dead session: restart it"
like "the failed job is restarted" "$out" "rs-bad-0.*|worker 0 job failed"
like "with its retry counter going up" "$out" "~ w0.retry = 0 -> 1"
unlike "the finished job is left alone" "$out" "rs-ok-0 will be"
show=$(tpuform show -detail -f fleet.yaml)
like "show: the finished job exited 0" "$show" "w0 +yes +exited +0 "
like "show: the failed job exited 3" "$show" "w0 +yes +exited +3 "
like "show: the killed session is dead" "$show" "w1 +yes +dead "
ok "apply restarts" tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "only the dead worker of rs-long-0 is touched" "$out" "changed: \[rs-long-0/w1\]"
unlike "its live worker is not" "$out" "rs-long-0/w0"
wait_for 10 grep -q "rs-long-0/1 retry=1" nodes/bucket/starts
ok "the killed worker restarted with TPUFORM_RETRY=1" grep -q "rs-long-0/1 retry=1" nodes/bucket/starts
ok "the live worker kept its session (started once)" test "$(grep -c 'rs-long-0/0' nodes/bucket/starts)" -eq 1
wait_for 10 grep -q "rs-bad-0/0 retry=1" nodes/bucket/starts
wait_for 10 exited 2
ok "the failing job is restarted again" tpuform apply -f fleet.yaml -auto-approve
wait_for 10 grep -q "rs-bad-0/0 retry=2" nodes/bucket/starts
wait_for 10 exited 2
tpuform plan -f fleet.yaml >plan3.out 2>&1
unlike "but not past max_restarts=2" "$(cat plan3.out)" "rs-bad-0 will be"
is "rs-bad-0 ran three times: retry 0, 1, 2" "$(grep rs-bad-0 nodes/bucket/starts | tr '\n' ' ')" "rs-bad-0/0 retry=0 rs-bad-0/0 retry=1 rs-bad-0/0 retry=2 "
is "rs-ok-0 ran once" "$(grep -c rs-ok-0 nodes/bucket/starts)" 1
fails "a second plan: nothing to do, but rs-bad-0 is not as declared (exit 3)" 3 \
	tpuform plan -f fleet.yaml -detailed-exitcode
like "it says why" "$(cat "$W/last.out")" "rs-bad-0/w0: job failed \(exit 3\) after 2 restarts; restarts are used up"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

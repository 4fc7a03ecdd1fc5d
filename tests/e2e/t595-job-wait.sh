#!/bin/sh
# Job waits (issue 21): with `watch` at its default settings (-interval 10s,
# -session-check 60s), killing worker 1's job on a v4-16 node has both
# workers running again long before the next session check: the wait verb
# on worker 1's connection returns as the job ends, and the round plans at
# once. A worker whose job is waited on is re-attached after its
# connection breaks (the local transport's wait killed). The figures are
# measured by `make bench` (tests/bench/job_wait_bench.sh), not here.
. "$(dirname "$0")/lib.sh"
setup_dir t595
cat >fleet.yaml <<'YAML'
fleet: jw
provider:
  local: { root: nodes, create_delay: 0.2s }
run: |
  mkdir -p "$TPUFORM_BUCKET"
  echo "start w$TPUFORM_WORKER_ID retry=$TPUFORM_RETRY" >>"$TPUFORM_BUCKET/starts"
  echo $$ >"$HOME/sleep.pid"
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1 }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
# shellcheck disable=SC2317 # called through wait_for
both() { [ "$(grep -c "retry=$1" nodes/bucket/starts)" -eq 2 ]; }
wait_for 10 both 0
"$TPUFORM" watch -f fleet.yaml >watch.out 2>&1 &
wpid=$!
trap 'kill $wpid 2>/dev/null' EXIT
w1=$W/nodes/nodes/jw-a-0/workers/1
# The waits are attached once the first round has seen the node.
wait_for 15 grep -q "alive 1/1" watch.out
# shellcheck disable=SC2317 # called through wait_for
waiting() { ls "$W"/nodes/nodes/jw-a-0/workers/0/tpuform/run/wait.* "$w1"/tpuform/run/wait.* >/dev/null 2>&1; }
wait_for 10 waiting
ok "a wait on each worker" waiting
kill "$(cat "$w1/sleep.pid")"
wait_for 20 both 1
is "both workers restarted together, well before the 60 s session check" "$(grep -c "retry=1" nodes/bucket/starts)" 2
like "watch said why" "$(cat watch.out)" "restart all 2 workers of jw-a-0: worker 1 job failed \(exit 143\)"
# A broken wait (its process killed, as a dropped connection ends it) is
# made again, and still sees the next end.
wait_for 15 waiting
for f in "$w1"/tpuform/run/wait.*; do kill "${f##*.}" 2>/dev/null; done
sleep 3
kill "$(cat "$w1/sleep.pid")"
wait_for 25 both 2
is "after re-attaching, the next end is acted on too" "$(grep -c "retry=2" nodes/bucket/starts)" 2
kill -TERM $wpid
wait $wpid
is "watch exits 0" "$?" 0
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

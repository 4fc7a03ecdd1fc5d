#!/bin/sh
# serial: sub-second watch intervals, backoff and stall windows measured in seconds
# Gang restarts (docs/design.md section 5, "Restart units"): the workers of
# a multi-host node are one job. When worker 1's job dies, plan shows one
# action on the node, and apply (or watch) stops every worker, then starts
# them all with the same new TPUFORM_RETRY. restart_scope: worker keeps
# per-worker restarts. Restarts back off (restart_backoff) and stop at
# max_restarts, counted per node; the node is then failed and kept.
# Prints the time from a worker's failure to every worker restarted.
. "$(dirname "$0")/lib.sh"
setup_dir t230
cat >fleet.yaml <<'YAML'
fleet: gg
provider:
  local: { root: nodes, create_delay: 0.2s }
max_restarts: 3
run: |
  mkdir -p "$TPUFORM_BUCKET"
  echo "$TPUFORM_NODE/$TPUFORM_WORKER_ID retry=$TPUFORM_RETRY t=$(date +%s)" >>"$TPUFORM_BUCKET/starts"
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1, restart_backoff: 3s }
  - { name: b, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1, restart_scope: worker }
YAML
# Kill the job of worker $2 of node $1 (its command, not the session): the
# job exits 137.
kill_job() {
	pg=$(cat "nodes/nodes/$1/workers/$2/tpuform/run/job.pid")
	pkill -KILL -g "$pg" -x sleep
}
starts() { grep -c "^$1 retry=$2 " nodes/bucket/starts; }

ok "apply" tpuform apply -f fleet.yaml -auto-approve
# shellcheck disable=SC2016 # expanded by the inner sh
wait_for 10 sh -c '[ "$(wc -l <nodes/bucket/starts)" -ge 4 ]'
kill_job gg-a-0 1
kill_job gg-b-0 1
# shellcheck disable=SC2016 # expanded by the inner sh
wait_for 10 sh -c '[ "$("$0" show -detail -f fleet.yaml | grep -c "exited *137")" -eq 2 ]' "$TPUFORM"
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: one action restarts the whole node" "$out" \
	"# \(restart all 2 workers of gg-a-0: worker 1 job failed \(exit 137\)\)"
like "every worker gets the same new TPUFORM_RETRY (w0)" "$out" "~ w0.retry = 0 -> 1"
is "the node is one block" "$(printf '%s\n' "$out" | grep -c '# gg-a-0 will be updated in-place')" 1
like "restart_scope: worker restarts only the worker" "$out" \
	"# \(worker 1 job failed: restart it\)"
ok "apply restarts them" tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "both workers of the gang node are restarted" "$out" "changed: \[gg-a-0/w0\]"
like "(and w1)" "$out" "changed: \[gg-a-0/w1\]"
unlike "restart_scope worker: w0 is not touched" "$out" "gg-b-0/w0"
# shellcheck disable=SC2016
wait_for 10 sh -c '[ "$(grep -c "retry=1" nodes/bucket/starts)" -ge 3 ]'
is "gang: worker 0 started again with TPUFORM_RETRY=1" "$(starts gg-a-0/0 1)" 1
is "gang: worker 1 started again with TPUFORM_RETRY=1" "$(starts gg-a-0/1 1)" 1
is "worker scope: worker 1 started again with TPUFORM_RETRY=1" "$(starts gg-b-0/1 1)" 1
is "worker scope: worker 0 kept its first start" "$(grep -c '^gg-b-0/0 ' nodes/bucket/starts)" 1
show=$(tpuform show -detail -f fleet.yaml)
like "show: the node's workers count one restart each" "$show" "w1 +yes +alive +- +1 "
ok "the state remembers when" grep -q '"restarted_at"' tpuform.state.json

# Under watch: a failure to every worker restarted. The backoff after one
# restart is 3 s: let it pass first, so that the measure is watch's own.
sleep 3
"$TPUFORM" watch -f fleet.yaml -interval 0.5s -session-check 0.5s >watch.out 2>&1 &
wpid=$!
wait_for 10 grep -q "fleet gg: alive 2/2" watch.out
t0=$(date +%s.%N)
kill_job gg-a-0 1
# shellcheck disable=SC2016
wait_for 30 sh -c '[ "$(grep -c "^gg-a-0/[01] retry=2 " nodes/bucket/starts)" -eq 2 ]'
t1=$(date +%s.%N)
is "watch restarts every worker with TPUFORM_RETRY=2" \
	"$(grep -c "^gg-a-0/[01] retry=2 " nodes/bucket/starts)" 2
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null)
echo "# gang restart under watch (-interval 0.5s -session-check 0.5s): ${secs}s from worker 1's failure to both workers started again (load average ${load:-?})"
ok "watch says why" grep -q "gg-a-0: restart all 2 workers of gg-a-0: worker 1 job failed (exit 137)" watch.out

# The third restart waits for the backoff (3 s, then 6 s after the second).
t2=$(grep "^gg-a-0/1 retry=2 " nodes/bucket/starts | sed 's/.* t=//')
kill_job gg-a-0 0
wait_for 15 grep -q "restart_waiting\|restart 3 of 3 of all 2 workers in" watch.out
ok "watch reports the restart waiting for its backoff" \
	grep -q "gg-a-0: worker 0 job failed (exit 137); restart 3 of 3 of all 2 workers in [0-9]*s (restart_backoff)" watch.out
wait_for 20 grep -q "^gg-a-0/0 retry=3 " nodes/bucket/starts
t3=$(grep "^gg-a-0/0 retry=3 " nodes/bucket/starts | sed 's/.* t=//')
ok "and restarts only once it passed (6 s after the second restart's start: $((t3 - t2)) s)" \
	test $((t3 - t2)) -ge 5

# Restarts used up (max_restarts: 3): the node is failed and kept.
# shellcheck disable=SC2016
wait_for 10 sh -c '[ "$(grep -c "^gg-a-0/[01] retry=3 " nodes/bucket/starts)" -eq 2 ]'
kill_job gg-a-0 1
wait_for 20 grep -q "gg-a-0: failed:" watch.out
ok "watch reports the node failed" \
	grep -q "gg-a-0: failed: worker 1 job failed (exit 137) after 3 restarts of all 2 workers; restarts are used up (max_restarts: 3); the node is kept for debugging" watch.out
kill -TERM $wpid
wait $wpid
ok "the failed node is kept" test -d nodes/nodes/gg-a-0
fails "plan -detailed-exitcode: nothing to change, not as declared (3)" 3 \
	tpuform plan -f fleet.yaml -detailed-exitcode
like "plan says why" "$(cat "$W/last.out")" "^  - gg-a-0: failed: worker 1 job failed \(exit 137\) after 3 restarts"
like "show marks the node failed" "$(tpuform show -detail -f fleet.yaml)" "^gg-a-0  READY .*\[failed\]$"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

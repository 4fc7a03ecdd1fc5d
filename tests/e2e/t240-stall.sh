#!/bin/sh
# serial: sub-second watch intervals, backoff and stall windows measured in seconds
# Hang detection (docs/design.md section 5, "Stalled jobs"): with
# stall_timeout, a running job whose log has not grown and that has not
# touched $TPUFORM_HEARTBEAT for that long is stalled. The worker measures
# it in the status verb (no extra connection); plan, show and watch say
# "stalled: no output for ..."; watch restarts it under the gang rule. A
# job that prints steadily, or touches its heartbeat, is never restarted.
. "$(dirname "$0")/lib.sh"
setup_dir t240
cat >fleet.yaml <<'YAML'
fleet: st
provider:
  local: { root: nodes, create_delay: 0.2s }
stall_timeout: 3s
restart_backoff: 0s
max_restarts: 5
run: |
  mkdir -p "$TPUFORM_BUCKET"
  echo "$TPUFORM_NODE/$TPUFORM_WORKER_ID retry=$TPUFORM_RETRY" >>"$TPUFORM_BUCKET/starts"
  case "$TPUFORM_NODE/$TPUFORM_WORKER_ID" in
    st-quiet-*|st-off-*|st-half-0/1) echo "printed once"; exec sleep 300 ;;
    st-steady-*|st-half-0/0) while :; do echo "step"; sleep 0.5; done ;;
    st-beat-*) echo "quiet from now on"; while :; do touch "$TPUFORM_HEARTBEAT"; sleep 0.5; done ;;
  esac
groups:
  - { name: quiet, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
  - { name: steady, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
  - { name: beat, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
  - { name: half, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1 }
  - { name: off, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1, stall_timeout: 0s }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
# Past the timeout: the quiet jobs are stalled; plan and show say so.
sleep 4.5
show=$(tpuform show -detail -f fleet.yaml)
like "show marks the quiet job stalled" "$show" "^ +w0 .*printed once  \[stalled: no output for ([4-9]|[1-9][0-9]+)s\]$"
unlike "but not the steady one" "$(printf '%s\n' "$show" | grep -A2 '^st-steady-0')" "stalled"
unlike "nor the one that touches its heartbeat" "$(printf '%s\n' "$show" | grep -A2 '^st-beat-0')" "stalled"
unlike "nor one whose group turned detection off (stall_timeout: 0s)" \
	"$(printf '%s\n' "$show" | grep -A2 '^st-off-0')" "stalled"
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan restarts the quiet job, saying why" "$out" \
	"# \(worker 0 stalled: no output for ([4-9]|[1-9][0-9]+)s: restart it\)"
like "a stalled worker of a multi-host node restarts the node" "$out" \
	"# \(restart all 2 workers of st-half-0: worker 1 stalled: no output for ([4-9]|[1-9][0-9]+)s\)"
unlike "the steady job is left alone" "$out" "st-steady-0 will be"
unlike "so is the heartbeat job" "$out" "st-beat-0 will be"

# watch restarts the stalled jobs, and only those.
"$TPUFORM" watch -f fleet.yaml -interval 0.5s -session-check 0.5s >watch.out 2>&1 &
wpid=$!
wait_for 90 grep -q "^st-quiet-0/0 retry=2" nodes/bucket/starts
wait_for 60 grep -q "^st-half-0/1 retry=2" nodes/bucket/starts
sleep 2
kill -TERM $wpid
wait $wpid
ok "watch restarted the quiet job when it stalled (twice by now)" grep -q "^st-quiet-0/0 retry=2" nodes/bucket/starts
ok "watch events say why" grep -q "st-quiet-0: worker 0 stalled: no output for \([3-9]\|[1-9][0-9]\+\)s: restart it" watch.out
ok "the multi-host node restarted as one" grep -q "^st-half-0/0 retry=2" nodes/bucket/starts
is "the steady job was never restarted" "$(grep -c '^st-steady-0/' nodes/bucket/starts)" 1
is "the heartbeat job was never restarted" "$(grep -c '^st-beat-0/' nodes/bucket/starts)" 1
is "a group with stall_timeout 0s: never restarted" "$(grep -c '^st-off-0/' nodes/bucket/starts)" 1
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

#!/bin/sh
# shellcheck disable=SC2317 # the helpers are called through ok and wait_for
# A loss seen by watch's first round, end to end (issue 29; the unit case
# is test_watch_hooks first_round_loss_elapsed): the node was preempted
# while no watch ran, so the first round finds it and replaces it before
# asking any worker. The ledger's preempted line carries the detection
# latency ("elapsed", seconds from the start of the round that saw it);
# the first round used to count it from 0, giving the machine's uptime,
# and the report then said "back to running after" that long. Then the
# replacement message says how long after the loss the new node was READY.
# Without job waits (-job-wait=false) the first round heals the nodes
# before its session check answers: the path that counted from 0.
. "$(dirname "$0")/lib.sh"
setup_dir t772
cat >fleet.yaml <<'YAML'
fleet: frl
provider:
  local: { root: nodes, create_delay: 0.3s }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 2 }
YAML
L=tpuform.state.json.ledger.jsonl
ok "apply creates the node and starts its job" tpuform apply -f fleet.yaml -auto-approve
ok "the node is preempted while no watch runs" tpuform local preempt -f fleet.yaml frl-a-0
t0=$(date +%s)
"$TPUFORM" watch -f fleet.yaml -interval 0.5s -session-check 0.5s -job-wait=false >watch.out 2>&1 &
wpid=$!
replaced() { grep -q '"event":"replaced"' "$L"; }
ok "watch replaces the node" wait_for 60 replaced
kill "$wpid"
wait "$wpid"
took=$(($(date +%s) - t0 + 1))
el=$(jq -r 'select(.event == "preempted" and .cmd == "watch") | .elapsed' $L | head -1)
ok "the first round's preempted line has an elapsed ($el)" test -n "$el"
ok "its elapsed ($el s) is within the watch's own run ($took s), not the machine's uptime" \
	awk -v e="$el" -v t="$took" 'BEGIN { exit !(e >= 0 && e <= t) }'
secs=$(jq -r 'select(.event == "replaced") | .message' $L | sed -n 's/.*new node is READY \([0-9]*\) s after the loss.*/\1/p' | head -1)
ok "the replacement's READY message counts from the loss too ($secs s)" \
	awk -v e="$secs" -v t="$took" 'BEGIN { exit !(e != "" && e <= t) }'
finish

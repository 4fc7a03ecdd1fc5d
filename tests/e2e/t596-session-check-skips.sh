#!/bin/sh
# The session check skips workers its job waits cover (issue 21): a worker
# whose wait answered within its window is not asked for its status again
# by the periodic probe (at 256 workers those handshakes slowed the
# restarts they overlapped, docs/watch.md). A worker whose wait fails is
# not covered, and the session check asks it again: the safety net holds.
# A round planned from a probe's answers takes the waits' answers for the
# workers the probe skipped: with every round probed (-rounds, a session
# check each round), a job that exits on a covered worker is restarted.
# Worker 1's bootstrap is wrapped so that each verb it runs is logged.
. "$(dirname "$0")/lib.sh"
setup_dir t596
cat >fleet.yaml <<'YAML'
fleet: sk
provider:
  local: { root: nodes, create_delay: 0.2s }
run: |
  echo "start retry=$TPUFORM_RETRY" >>"$HOME/starts"
  echo $$ >"$HOME/sleep.pid"
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1 }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
w1=$W/nodes/nodes/sk-a-0/workers/1
mv "$w1/tpuform/bootstrap.sh" "$w1/tpuform/bootstrap.real.sh"
cat >"$w1/tpuform/bootstrap.sh" <<SH
echo "\$1" >>"$w1/verbs"
if [ "\$1" = wait ] && [ -f "$w1/refuse-wait" ]; then exit 1; fi
exec sh "$w1/tpuform/bootstrap.real.sh" "\$@"
SH
# shellcheck disable=SC2317 # called through wait_for
waits() { [ "$(grep -c '^wait$' "$w1/verbs" 2>/dev/null)" -ge 2 ]; }
statuses() { grep -c '^status$' "$w1/verbs" 2>/dev/null; }
# At start, the first session check waits for the waits' first attempts
# (issue 28): a worker whose wait answered is not asked by it. Before, the
# first check asked every worker at once, beside the waits' handshakes.
"$TPUFORM" watch -f fleet.yaml -interval 1s -session-check 30s >start.out 2>&1 &
wpid=$!
trap 'kill $wpid 2>/dev/null' EXIT
wait_for 20 waits
sleep 3
is "the first session check did not ask a worker its wait answered for" "$(statuses)" 0
kill -TERM $wpid
wait $wpid
# ... and a worker whose wait fails from the start is asked by it.
touch "$w1/refuse-wait"
: >"$w1/verbs"
"$TPUFORM" watch -f fleet.yaml -interval 1s -session-check 30s >start2.out 2>&1 &
wpid=$!
# shellcheck disable=SC2317 # called through wait_for
asked() { [ "$(statuses)" -ge 1 ]; }
wait_for 20 asked
ok "the first session check asks a worker whose wait failed" asked
kill -TERM $wpid
wait $wpid
rm -f "$w1/refuse-wait"
: >"$w1/verbs"

"$TPUFORM" watch -f fleet.yaml -interval 1s -session-check 2s >watch.out 2>&1 &
wpid=$!
wait_for 20 waits
ok "worker 1 is waited on" waits
sleep 2
before=$(statuses)
sleep 7
is "three session checks later, the covered worker was not probed again" "$(statuses)" "$before"
like "the checks ran" "$(cat watch.out)" "alive 1/1"
# Waits that fail: the worker is no longer covered, and the check asks it.
touch "$w1/refuse-wait"
for f in "$w1"/tpuform/run/wait.*; do kill "${f##*.}" 2>/dev/null; done
# shellcheck disable=SC2317 # called through wait_for
probed_again() { [ "$(statuses)" -gt "$before" ]; }
wait_for 20 probed_again
ok "a worker whose waits fail is probed by the session check" probed_again
is "nothing was restarted" "$(grep -c restart watch.out)" 0
kill -TERM $wpid
wait $wpid
is "watch exits 0" "$?" 0

# Every round probed: the waits' facts fill in what the probe skipped.
rm -f "$w1/refuse-wait"
: >"$w1/verbs"
"$TPUFORM" watch -f fleet.yaml -rounds 80 -interval 0.3s -session-check 0.1s >probed.out 2>&1 &
wpid=$!
wait_for 20 sh -c "tail -n 3 '$w1/verbs' | grep -q '^wait$'"
sleep 1
kill "$(cat "$w1/sleep.pid")"
wait_for 20 grep -q "retry=1" "$w1/starts"
ok "a job's exit on a covered worker is acted on in probed rounds" grep -q "retry=1" "$w1/starts"
like "watch said why" "$(cat probed.out)" "worker 1 job failed \(exit 143\)"
kill -TERM $wpid 2>/dev/null
wait $wpid
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

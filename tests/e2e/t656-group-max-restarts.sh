#!/bin/sh
# shellcheck disable=SC2317 # the helpers are called through ok and wait_for
# max_restarts per group (issue 26, item 4): a sweep group that gives up at
# once (max_restarts: 0), a training group with a budget of 2, and a group
# without the key, which takes the fleet's (1). Each job fails at every
# try; `watch` restarts each as its group says, and restarts_exhausted
# (webhook, tests/e2e/webhook_listener.py) names each group's own budget;
# the state and the plan agree. Local provider only: no loopback block.
. "$(dirname "$0")/lib.sh"
setup_dir t656
PY=$(command -v /usr/bin/python3 || command -v python3)
if [ -z "$PY" ]; then
	echo "ok 1 # SKIP python3 is not installed (the webhook listener is a python3 script)"
	echo "1..1"
	exit 0
fi
mkdir hook
"$PY" "$TOP/tests/e2e/webhook_listener.py" hook 0 &
lpid=$!
wait_for 10 test -s hook/port
port=$(cat hook/port)
cat >fleet.yaml <<YAML
fleet: gm
provider:
  local: { root: nodes, create_delay: 0.2s }
notify:
  webhook: http://127.0.0.1:$port/hook
  events: [job_failed, restarts_exhausted]
max_restarts: 1
restart_backoff: 0s
run: exit 1
groups:
  - { name: sweep, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1, max_restarts: 0 }
  - { name: train, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1, max_restarts: 2 }
  - { name: eval, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
ok "a group's max_restarts validates" tpuform validate -f fleet.yaml

TPUFORM_NOTIFY_BACKOFF=0.2s "$TPUFORM" watch -f fleet.yaml -interval 0.3s -session-check 0.5s \
	>watch.out 2>&1 &
wpid=$!
seen() { jq -r '[.event, .node] | join(" ")' hook/events.jsonl 2>/dev/null; }
all_exhausted() { [ "$(seen | grep -c '^restarts_exhausted ')" -ge 3 ]; }
ok "every group's restarts are used up (webhooks within 120 s)" wait_for 120 all_exhausted
kill -TERM $wpid
wait $wpid
is "watch exits 0 after delivering" "$?" 0
kill $lpid 2>/dev/null
wait $lpid 2>/dev/null

count() { seen | grep -cx "$1"; }
is "sweep (max_restarts: 0): one try, no restart" "$(count 'job_failed gm-sweep-0')" 1
is "train (max_restarts: 2): three tries" "$(count 'job_failed gm-train-0')" 3
is "eval (the fleet's max_restarts: 1): two tries" "$(count 'job_failed gm-eval-0')" 2
for n in sweep train eval; do
	is "one restarts_exhausted for gm-$n-0" "$(count "restarts_exhausted gm-$n-0")" 1
done
msg() {
	jq -r "select(.event == \"restarts_exhausted\" and .node == \"gm-$1-0\") | .message" \
		hook/events.jsonl
}
like "sweep's names its group's budget" "$(msg sweep)" 'max_restarts \(0\) is used up'
like "train's too" "$(msg train)" 'max_restarts \(2\) is used up'
like "eval's the fleet's" "$(msg eval)" 'max_restarts \(1\) is used up'
restarts() { jq -r ".nodes[] | select(.name == \"gm-$1-0\") | .workers[0].restarts" tpuform.state.json; }
is "the state counts each group's restarts" "$(restarts sweep) $(restarts train) $(restarts eval)" "0 2 1"
tpuform plan -f fleet.yaml -no-color >plan.out 2>&1
like "the plan names sweep's budget" "$(cat plan.out)" 'gm-sweep-0.*restarts are used up \(max_restarts: 0\)'
like "train's" "$(cat plan.out)" 'gm-train-0.*after 2 restarts; restarts are used up \(max_restarts: 2\)'
like "and eval's" "$(cat plan.out)" 'gm-eval-0.*after 1 restart; restarts are used up \(max_restarts: 1\)'

ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

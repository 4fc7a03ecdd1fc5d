#!/bin/sh
# shellcheck disable=SC2317 # the helpers are called through ok and wait_for
# Budgets (issue 20, docs/ledger.md "Budgets") on the local provider. A
# group with a budget of 1 chip-hour a day and a seeded ledger that has
# spent 0.99 of it today: plan shows the spend; apply creates the nodes;
# once their chip-hours pass the cap, plan says the budget is reached, a
# preempted node is not replaced by watch, and the webhook budget_reached
# arrives at a listener once. Then on_budget: delete deletes the group's
# nodes through the ordinary delete, and prices: in the fleet file
# changes the report's dollars.
. "$(dirname "$0")/lib.sh"
setup_dir t565
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
write_fleet() { # $1: extra keys of group a; $2: extra top-level keys
	cat >fleet.yaml <<YAML
fleet: bg
provider:
  local: { root: nodes, create_delay: 0.2s }
notify:
  webhook: http://127.0.0.1:$port/hook
run: exec sleep 300
$2
groups:
  - { name: a, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 3,
      budget: { chip_hours: 1, per: day }$1 }
  - { name: b, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
}
write_fleet "" ""
L=tpuform.state.json.ledger.jsonl
# The seeded spend: a node of group a, gone now, that billed 0.99
# chip-hours today (one second with many chips, so that it fits in today
# however early in the UTC day the test runs).
"$PY" - "$L" <<'PY'
import json, sys, time
now = time.time()
day = now - now % 86400
span = 1.0  # 3564 chips for 1 s: 0.99 chip-hours, exactly
chips = 3564
def ts(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int((t % 1) * 1000)
base = {"v": 1, "cmd": "watch", "writer": "seed:1", "node": "bg-a-9", "group": "a",
        "zone": "z1", "api": "tpu", "type": "v4-8", "chip": "v4", "chips": chips, "vms": 1,
        "class": "on-demand", "generation": 0}
with open(sys.argv[1], "w") as f:
    for i, (t, ev) in enumerate([(day + 0.001, "creating"), (day + 0.001, "ready"),
                                 (day + 0.001 + span, "deleted")]):
        f.write(json.dumps(dict(base, ts=ts(t), event=ev, seq=i + 1)) + "\n")
PY
ok "plan" tpuform plan -f fleet.yaml
like "plan shows group a's spend against its budget" "$(cat last.out)" \
	"Budget: group 'a': 0\.99 of 1 chip-hours today \(99%\)"
like "and plans every node" "$(cat last.out)" "Plan: 4 to add"
ok "apply creates the nodes (the budget is not reached yet)" tpuform apply -f fleet.yaml -auto-approve
reached() { "$TPUFORM" plan -f fleet.yaml >plan.out 2>&1 && grep -q "reached" plan.out; }
ok "their chip-hours pass the cap: plan says the budget is reached" wait_for 60 reached
like "plan names the budget and the period" "$(cat plan.out)" \
	"Budget: group 'a': 1\.[0-9][0-9] of 1 chip-hours today \([0-9]+%\): reached, nothing more is created"
like "with a warning saying until when" "$(cat plan.out)" "budget reached: group 'a'.*until 20[0-9-]* 00:00 UTC"
like "running nodes keep running: nothing to change" "$(cat plan.out)" "No changes"

"$TPUFORM" watch -f fleet.yaml -interval 0.3s >watch.out 2>&1 &
wpid=$!
hook_budget() { grep -q '"event": *"budget_reached"' hook/events.jsonl 2>/dev/null; }
ok "watch posts budget_reached to the webhook" wait_for 30 hook_budget
like "naming the scope and the spend" "$(grep budget_reached hook/events.jsonl)" \
	"budget reached: group 'a': 1\.[0-9]* of 1 chip-hours today"
ok "and records it in the ledger" grep -q '"event":"budget_reached".*"group":"a"' "$L"
ok "a node of group a is preempted" tpuform local preempt -f fleet.yaml bg-a-1
ok "a node of group b is preempted" tpuform local preempt -f fleet.yaml bg-b-0
b_back() { [ "$(grep -c '"event":"creating".*"node":"bg-b-0"' "$L")" -ge 2 ]; }
ok "watch replaces b's node (b has no budget)" wait_for 30 b_back
sleep 2 # a few more rounds
is "but not a's: no second create of bg-a-1" "$(grep -c '"event":"creating".*"node":"bg-a-1"' "$L")" 1
is "budget_reached was posted once" "$(grep -c budget_reached hook/events.jsonl)" 1
like "watch says why" "$(cat watch.out)" "budget reached: group 'a'"
kill -TERM $wpid
wait $wpid
is "watch stops cleanly" "$?" 0

# A second watch in the same period: the ledger already says it.
"$TPUFORM" watch -f fleet.yaml -interval 0.3s >watch2.out 2>&1 &
wpid=$!
sleep 3
kill -TERM $wpid
wait $wpid
is "a restarted watch does not post budget_reached again this period" \
	"$(grep -c budget_reached hook/events.jsonl)" 1

# ---- on_budget: delete --------------------------------------------------------
write_fleet ", on_budget: delete" ""
ok "plan with on_budget: delete" tpuform plan -f fleet.yaml
like "deletes group a's nodes, for the budget" "$(cat last.out)" "bg-a-0 will be destroyed"
unlike "not group b's" "$(cat last.out)" "bg-b-0 will be destroyed"
ok "apply" tpuform apply -f fleet.yaml -auto-approve
"$TPUFORM" state list -f fleet.yaml >state.txt 2>&1
unlike "group a's nodes are gone from the state" "$(cat state.txt)" "bg-a-[012]"
like "group b's node is still there" "$(cat state.txt)" "bg-b-0"
ok "through the ordinary delete (deleting, deleted in the ledger)" \
	grep -q '"event":"deleted".*"node":"bg-a-0"' "$L"

# ---- prices: in the fleet file ----------------------------------------------------
ok "report" tpuform report -f fleet.yaml -json
cp last.out before.json
billed=$(jq .totals.billed_chip_hours before.json)
usd=$(jq .totals.cost_usd_estimate before.json)
ok "with the built-in v4 price (\$3.22: $billed chip-hours, \$$usd)" \
	awk -v u="$usd" -v b="$billed" 'BEGIN { d = u - b * 3.22; if (d < 0) d = -d; exit !(d <= 0.01) }'
write_fleet ", on_budget: delete" "prices: [{ accelerator: v4, class: on-demand, usd_per_chip_hour: 100 }]"
ok "report with prices:" tpuform report -f fleet.yaml -json
cp last.out after.json
usd2=$(jq .totals.cost_usd_estimate after.json)
billed2=$(jq .totals.billed_chip_hours after.json)
ok "the fleet file's price is used (\$$usd2 for $billed2 chip-hours)" \
	awk -v u="$usd2" -v b="$billed2" 'BEGIN { d = u - b * 100; if (d < 0) d = -d; exit !(b > 0 && d <= 0.01 * b * 100 + 0.01) }'
is "the rows say where their price came from" "$(jq -r '[.rows[].price_source] | unique | join(",")' after.json)" "fleet file"
ok "report (text)" tpuform report -f fleet.yaml
like "names the fleet file's price" "$(cat last.out)" "Price from the fleet file: v4 on-demand \\\$100 per chip-hour"
like "and never calls it a bill" "$(cat last.out)" "an estimate, not a bill"
kill $lpid 2>/dev/null
finish

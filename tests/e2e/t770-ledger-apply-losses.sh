#!/bin/sh
# The ledger records what happened, whoever saw it (issue 29 item 7): a
# preemption that `apply` alone acts on (the README's `local preempt` then
# `apply`, no `watch`) is a `preempted` and a `replaced` line in the
# ledger, `report` counts 1 preemption and its page marks it; a second
# `preempted` line for the same loss (watch and apply both saw it) is
# counted once. Lines with impossible values (999999999 chips, a time in
# 1970, a negative elapsed) are skipped and counted, not summed.
# No sshd workers: local provider only.
. "$(dirname "$0")/lib.sh"
setup_dir t770
cat >fleet.yaml <<'YAML'
fleet: t770
provider:
  local: { root: nodes }
run: exec sleep 300
groups:
  - { name: train, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
L=tpuform.state.json.ledger.jsonl
ok "apply creates the node" tpuform apply -f fleet.yaml -auto-approve
ok "the node is preempted" tpuform local preempt -f fleet.yaml t770-train-0
ok "apply replaces it (no watch)" tpuform apply -f fleet.yaml -auto-approve
is "apply wrote one preempted line" "$(grep -c '"event":"preempted"' $L)" 1
like "with apply as its writer and the loss's reason" \
	"$(grep '"event":"preempted"' $L)" '"cmd":"apply".*"node":"t770-train-0".*"reason":"preempted"'
is "and one replaced line" "$(grep -c '"event":"replaced"' $L)" 1
ok "report -json" sh -c "'$TPUFORM' report -f fleet.yaml -json >r.json"
is "report counts 1 preemption" "$(jq .totals.preemptions r.json)" 1
ok "report -html" tpuform report -f fleet.yaml -html page.html
is "the page marks it" "$(grep -o '<path class="preemption"' page.html | wc -l | tr -d ' ')" 1

# The same loss written again (as watch would have): counted once.
again=$(grep '"event":"preempted"' $L | sed 's/"cmd":"apply"/"cmd":"watch"/; s/"seq":[0-9]*/"seq":999/')
echo "$again" >>$L
ok "report -json with the loss written twice" sh -c "'$TPUFORM' report -f fleet.yaml -json >r2.json"
is "still 1 preemption" "$(jq .totals.preemptions r2.json)" 1

# Impossible lines: skipped and counted, the totals unchanged.
before=$(jq .totals.billed_chip_hours r2.json)
skipped=$(jq .skipped_lines r2.json)
ready=$(grep '"event":"ready"' $L | tail -1)
lost=$(grep '"event":"preempted"' $L | head -1)
{
	echo "$ready" | sed 's/"chips":[0-9]*/"chips":999999999/'
	echo "$ready" | sed 's/"ts":"[^"]*"/"ts":"1970-01-01T00:00:01.000Z"/'
	echo "$ready" | sed 's/"ts":"[^"]*"/"ts":"2999-01-01T00:00:01.000Z"/'
	echo "$lost" | sed 's/"elapsed":[-0-9.e]*/"elapsed":-5000/'
} >>$L
ok "report -json with impossible lines" sh -c "'$TPUFORM' report -f fleet.yaml -json >r3.json"
is "they are counted as skipped lines" "$(jq .skipped_lines r3.json)" "$((skipped + 4))"
ok "billed chip-hours are what they were (within rounding)" \
	jq -e "(.totals.billed_chip_hours - $before) | fabs < 0.01" r3.json
ok "report (text) has no negative figure" sh -c "'$TPUFORM' report -f fleet.yaml >r3.txt && ! grep -q -- ' -[0-9]' r3.txt"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve

# A job that fails at once, with no watch: apply's refresh sees the exit
# and writes job_failed; that time is not goodput.
rm -f $L tpuform.state.json
sed -i 's/^run: .*/run: exit 3\nmax_restarts: 0/' fleet.yaml
ok "apply a fleet whose job fails at once" tpuform apply -f fleet.yaml -auto-approve
sleep 2
ok "apply again (no watch)" tpuform apply -f fleet.yaml -auto-approve
like "apply wrote the job's exit" "$(grep '"event":"job_failed"' $L | head -1)" '"cmd":"apply".*"exit_code":3'
sleep 2
ok "report -json" sh -c "'$TPUFORM' report -f fleet.yaml -json >r4.json"
# Goodput runs from job_started to the job_failed line, not on to the report.
want=$(python3 -c '
import json, sys, datetime
t = {}
for l in open(sys.argv[1]):
    o = json.loads(l)
    t.setdefault(o["event"], (datetime.datetime.strptime(o["ts"], "%Y-%m-%dT%H:%M:%S.%fZ"), o.get("chips", 0)))
(a, chips), (b, _) = t["job_started"], t["job_failed"]
print((b - a).total_seconds() * chips / 3600)' $L)
got=$(jq .totals.goodput_chip_hours r4.json)
ok "the failed job's time after its exit is not goodput ($got chip-hours, to the exit $want)" \
	python3 -c "import sys; sys.exit(abs($got - $want) > 0.0003)"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve

# A preempted node that destroy deletes: its billing ended at the
# preemption, so destroy writes the loss too (reason destroy, node
# PREEMPTED).
rm -f $L tpuform.state.json
sed -i 's/^run: .*/run: exec sleep 300/; /^max_restarts/d' fleet.yaml
ok "apply" tpuform apply -f fleet.yaml -auto-approve
ok "the node is preempted" tpuform local preempt -f fleet.yaml t770-train-0
ok "destroy deletes it" tpuform destroy -f fleet.yaml -auto-approve
like "destroy wrote its preemption" "$(grep '"event":"preempted"' $L)" \
	'"cmd":"destroy".*"node":"t770-train-0".*"reason":"preempted"'
ok "report -json" sh -c "'$TPUFORM' report -f fleet.yaml -json >r5.json"
is "report counts 1 preemption" "$(jq .totals.preemptions r5.json)" 1
finish

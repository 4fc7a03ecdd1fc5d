#!/bin/sh
# shellcheck disable=SC2317 # the helpers are called through ok and wait_for
# The run ledger and `tpuform report` on the local provider (issue 20):
# plan, apply and watch append typed events to STATE.ledger.jsonl; a fleet
# goes through creation, a job start, a preemption, a replacement, a
# restart after a job failure and completion with on_success: delete; the
# report's chip-hours match the ledger's own timestamps within 1 %,
# goodput is strictly between 0 and 1, goodput + badput = billed, one
# preemption, one restart. Then the ledger's bounds: a torn last line,
# rotation, -since and -group.
. "$(dirname "$0")/lib.sh"
setup_dir t560
cat >fleet.yaml <<'YAML'
fleet: gl
provider:
  local: { root: nodes, create_delay: 0.3s }
on_success: delete
max_restarts: 2
restart_backoff: 0s
run: |
  mkdir -p "$TPUFORM_BUCKET"
  echo "$TPUFORM_WORKER_ID retry=$TPUFORM_RETRY" >>"$TPUFORM_BUCKET/starts"
  case "$TPUFORM_RETRY" in
  0) echo "TPUFORM_STEP=7"; echo "checkpoint saved at step 5"; exec sleep 300 ;;
  1) sleep 3; echo "bad batch"; exit 3 ;;
  *) sleep 4; echo "trained" ;;
  esac
groups:
  - { name: train, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1 }
YAML
L=tpuform.state.json.ledger.jsonl
ok "plan" tpuform plan -f fleet.yaml
is "plan writes one line to the ledger" "$(jq -r '[.cmd, .event, .message] | join(" ")' $L)" \
	"plan planned Plan: 1 to add, 0 to change, 0 to destroy."
ok "apply creates the node and starts its job" tpuform apply -f fleet.yaml -auto-approve
started() { [ "$(grep -c 'retry=0' nodes/bucket/starts 2>/dev/null)" = 2 ]; }
ok "both workers run their job" wait_for 30 started
"$TPUFORM" watch -f fleet.yaml -interval 0.5s -session-check 0.5s -exit-when-done >watch.out 2>&1 &
wpid=$!
ckpt() { grep -q '"event":"checkpoint"' "$L"; }
ok "watch records the job's checkpoint, read from its log" wait_for 30 ckpt
sleep 1
ok "the node is preempted while its job runs" tpuform local preempt -f fleet.yaml gl-train-0
wait $wpid
is "watch runs the fleet to completion" "$?" 0
ok "the job failed once, then succeeded" sh -c 'grep -c "retry=2" nodes/bucket/starts | grep -qx 2'

# ---- the ledger ---------------------------------------------------------
ok "every line is a JSON object with version 1 and a UTC time to the ms" \
	sh -c "jq -e 'select(.v != 1 or (.ts | test(\"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\\\.[0-9]{3}Z\$\") | not))' $L | grep -q . && exit 1 || exit 0"
is "the lines come from plan, apply and watch" "$(jq -r .cmd $L | sort -u | tr '\n' ' ')" "apply plan watch "
create=$(jq -c 'select(.event == "creating")' $L | head -1)
for want in '"node":"gl-train-0"' '"group":"train"' '"zone":"z1"' '"api":"tpu"' '"type":"v4-16"' \
	'"chip":"v4"' '"chips":8' '"vms":2' '"class":"on-demand"' '"generation":0' '"retry":0'; do
	like "a create carries $want" "$create" "$want"
done
like "the replacement is generation 1" "$(jq -c 'select(.event == "creating")' $L | sed -n 2p)" \
	'"generation":1,"retry":1'
like "the restart started retry 2" "$(jq -c 'select(.event == "restarted")' $L)" '"retry":2'
like "the checkpoint's step" "$(jq -c 'select(.event == "checkpoint")' $L)" '"node":"gl-train-0".*"step":5'
like "and the job's step (TPUFORM_STEP=7)" "$(jq -c 'select(.event == "job_step")' $L | head -1)" '"step":7'
is "the lifecycle, in order" \
	"$(jq -r 'select(.event | test("^(creating|ready|preempted|replaced|job_failed|restarted|job_succeeded|completed|deleted)$")) | .event' $L | uniq | tr '\n' ' ')" \
	"creating ready preempted deleted creating replaced ready job_failed restarted job_succeeded completed deleted "

# ---- the report ---------------------------------------------------------
ok "report -json" tpuform report -f fleet.yaml -json
cp last.out report.json
is "one preemption" "$(jq .totals.preemptions report.json)" 1
is "one restart" "$(jq .totals.restarts report.json)" 1
billed=$(jq .totals.billed_chip_hours report.json)
# Google's category (ml-goodput-measurement): the time from the preemption
# to the job running again, within 1 % of the report's own figure.
infra=$(jq '.totals.ml_goodput.badput_seconds.INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION' report.json)
p2r=$(jq '.totals.preemption_to_running_seconds.p50' report.json)
ok "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION ($infra s) is the preemption-to-running time ($p2r s)" \
	awk -v a="$infra" -v b="$p2r" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= b / 100) }'
expect=$(python3 "$TOP/tests/e2e/ledger_hours.py" $L)
ok "chip-hours ($billed) match the ledger's timestamps ($expect) within 1 %" \
	awk -v a="$billed" -v b="$expect" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= b / 100) }'
ok "goodput is strictly between 0 and 1" \
	awk -v g="$(jq .totals.goodput report.json)" 'BEGIN { exit !(g > 0 && g < 1) }'
sum=$(jq '.totals.goodput_chip_hours + ([.totals.badput[]] | add)' report.json)
ok "goodput + badput ($sum) = billed ($billed)" \
	awk -v a="$sum" -v b="$billed" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 0.00001) }'
ok "the failed job's wait for its restart is badput" \
	awk -v r="$(jq .totals.badput.restart report.json)" 'BEGIN { exit !(r > 0) }'
ok "the work since the checkpoint, lost to the preemption, is badput" \
	awk -v r="$(jq .totals.badput.preempted report.json)" 'BEGIN { exit !(r > 0) }'
ok "so is the setup before each job started" \
	awk -v r="$(jq .totals.badput.setup report.json)" 'BEGIN { exit !(r > 0) }'
is "one row: group, zone, class, chip" "$(jq -r '.rows[] | [.group, .zone, .class, .chip] | join(" ")' report.json)" \
	"train z1 on-demand v4"
ok "cost = chip-hours x the list price of v4 on-demand" \
	awk -v c="$(jq .totals.cost_usd_estimate report.json)" -v h="$billed" \
	'BEGIN { d = c - h * 3.22; if (d < 0) d = -d; exit !(d <= 0.006) }'
is "the time from the preemption to running again is known" "$(jq .totals.preemption_to_running_seconds.n report.json)" 1
ok "report" tpuform report -f fleet.yaml
like "says the price date" "$(cat last.out)" "at list prices of [0-9]{4}-[0-9]{2}-[0-9]{2} \(https://cloud.google.com/tpu/pricing\); an estimate, not a bill"
like "shows the row" "$(cat last.out)" "^train +z1 +on-demand +v4 "
# issue 26: a group neither in the fleet file nor in the ledger is a typo, not "no events"
fails "-group of a group that does not exist" 1 tpuform report -f fleet.yaml -group other -json
like "names it and lists the groups" "$(cat last.out)" "no group 'other' in the fleet file fleet.yaml.*the groups of fleet 'gl': 'train'"
sleep 1.1
ok "-since 1s" tpuform report -f fleet.yaml -since 1s -json
is "bills nothing after the fleet was deleted" "$(jq '.totals.billed_chip_hours == 0' last.out)" true
first=$(jq -r .first_event report.json)
ok "-since the first event" tpuform report -f fleet.yaml -since "$first" -json
is "counts the same" "$(jq .totals.billed_chip_hours last.out)" "$billed"
fails "a bad -since is refused" 1 tpuform report -f fleet.yaml -since yesterday
like "saying what it takes" "$(cat last.out)" 'invalid value "yesterday" for -since'

# ---- metrics and the page of a later watch, from the ledger ---------------
TPUFORM_LEDGER_REFRESH=0s "$TPUFORM" watch -f fleet.yaml -interval 0.3s -rounds 40 \
	-metrics-addr 127.0.0.1:0 >mwatch.out 2>&1 &
mpid=$!
wait_for 10 grep -q "serving metrics on http://127.0.0.1:[0-9]*/metrics" mwatch.out
url=$(sed -n 's|.*serving metrics on \(http://[^ ]*\)/metrics.*|\1|p' mwatch.out | head -n 1)
scraped() { curl -sf "$url/metrics" >metrics.txt && grep -q '^tpuform_goodput_ratio' metrics.txt; }
ok "a new watch serves the ledger's metrics" wait_for 10 scraped
ok "the preemption counter survives the watch that saw it" \
	grep -qx 'tpuform_ledger_preemptions_total{group="train"} 1' metrics.txt
ok "so does the restart counter" grep -qx 'tpuform_ledger_restarts_total{group="train"} 1' metrics.txt
gp=$(sed -n 's/^tpuform_goodput_ratio{group="train"} //p' metrics.txt)
ok "the goodput gauge is the report's ($gp)" \
	awk -v a="$gp" -v b="$(jq .totals.goodput report.json)" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 0.001) }'
secs=$(awk '/^tpuform_chip_seconds_total/ { s += $NF } END { printf "%.3f", s }' metrics.txt)
ok "chip-seconds add up to the billed chip-hours ($secs s)" \
	awk -v a="$secs" -v b="$billed" 'BEGIN { d = a / 3600 - b; if (d < 0) d = -d; exit !(d < 0.0001) }'
if python3 -c 'import prometheus_client.parser' 2>/dev/null; then
	ok "the exposition parses (prometheus_client)" python3 "$TOP/tests/e2e/metrics_check.py" "$url/metrics"
fi
grep -o 'tpuform_[a-z_]*' "$TOP/examples/grafana-goodput.json" | sort -u >dashboard.txt
while read -r m; do
	fam=${m%_bucket}
	ok "the Grafana dashboard's $m is served" grep -q "^# TYPE $fam " metrics.txt
done <dashboard.txt
curl -sf "$url/" >served.html
ok "GET / serves the report's page" grep -q '<svg class="timeline"' served.html
ok "with the node's row" grep -q '<g class="row" data-node="gl-train-0"' served.html
kill -TERM $mpid
wait $mpid

# ---- bounds: a torn line, rotation --------------------------------------
lines=$(wc -l <$L | tr -d ' ')
printf '{"v":1,"ts":"2026-' >>$L
ok "a torn last line (a crash mid-write)" tpuform report -f fleet.yaml -json
is "is skipped" "$(jq .skipped_lines last.out)" 1
ok "plan again" tpuform plan -f fleet.yaml
is "the next line starts on a line of its own" "$(tail -1 $L | jq -r .event)" planned
is "and the torn one was not rewritten" "$(wc -l <$L | tr -d ' ')" $((lines + 2))
for i in 1 2 3 4 5 6; do
	TPUFORM_LEDGER_SEGMENT_BYTES=4096 "$TPUFORM" plan -f fleet.yaml >/dev/null 2>&1 || echo "plan $i failed"
done
ok "a full segment is rotated to .1" test -s $L.1
total=$(cat $L.1 $L | grep -c '"v":1')
ok "report after rotation" tpuform report -f fleet.yaml -json
is "reads every segment (billed unchanged)" "$(jq .totals.billed_chip_hours last.out)" "$billed"
ok "the segment being written stays within the bound" test "$(wc -c <$L)" -le 4096
ok "TPUFORM_LEDGER=off writes nothing" sh -c "TPUFORM_LEDGER=off \"$TPUFORM\" plan -f fleet.yaml >/dev/null && test \$(cat $L.1 $L | grep -c '\"v\":1') -eq $total"
finish

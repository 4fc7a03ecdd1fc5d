#!/bin/sh
# shellcheck disable=SC2317 # the helpers are called through ok and wait_for
# `monitoring: { project: P }`: watch writes the run ledger's report to
# Cloud Monitoring (docs/watch.md "Cloud Monitoring") and the emulator
# (tests/fakegcp/fg_monitoring.c) accepts every request, having checked
# its shape: the metric descriptors, created once, before the first write;
# timeSeries.create with the fleet, group and zone as labels, on the
# `global` resource, at most once a minute (one request in a run of
# several rounds; with the test-only TPUFORM_MONITORING_INTERVAL at its
# floor of 5 s, Cloud Monitoring's least time between two points of a
# series, requests at least 5 s apart). Without `monitoring:`, nothing is
# sent.
# And after a preemption healed by that watch, `report -json` gives
# INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION equal to the ledger's own
# preemption-to-running time within 1 % (docs/ledger.md "Google's goodput
# categories").
# The local provider (no sshd workers): no loopback block needed.
. "$(dirname "$0")/lib.sh"
setup_dir t791
export TPF_ROOT="$TOP"
. "$TOP/tests/e2e/fakegcp.sh"
if ! fakegcp_start --project mon-proj --log "$W/requests.jsonl"; then
	echo "1..0 # SKIP the emulator did not start"
	exit 0
fi
WP=
cleanup() {
	[ -n "$WP" ] && kill -9 "$WP" 2>/dev/null
	fakegcp_stop >/dev/null 2>&1
}
trap cleanup EXIT
export TPUFORM_MONITORING_ENDPOINT="$FAKEGCP_URL" TPUFORM_ACCESS_TOKEN=test-token
export TPUFORM_GCP_RETRY_BASE=0.05 TPUFORM_GCP_RETRY_CAP=0.1 TPUFORM_GCP_TRIES=2
cat >plain.yaml <<'YAML'
fleet: mon791
provider:
  local: { root: nodes }
run: |
  mkdir -p "$TPUFORM_BUCKET"
  echo "retry=$TPUFORM_RETRY" >>"$TPUFORM_BUCKET/starts"
  exec sleep 300
groups:
  - { name: g, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
{ cat plain.yaml; echo 'monitoring: { project: mon-proj }'; } >fleet.yaml
v3() { jq -c 'select(.path | startswith("/v3/"))' requests.jsonl; }
series_posts() { v3 | jq -c 'select(.path == "/v3/projects/mon-proj/timeSeries")'; }
runs() { [ "$(grep -c "retry=$1" nodes/bucket/starts 2>/dev/null)" -ge 1 ]; }
watch_for() { # SECONDS FILE [flags]: a watch of FILE for about SECONDS
	s=$1 f=$2
	shift 2
	"$TPUFORM" watch -f "$f" -interval 0.5s -session-check 0.5s "$@" >>watch.out 2>&1 &
	WP=$!
	sleep "$s"
	kill -TERM "$WP"
	wait "$WP"
	WP=
}
ok "apply" tpuform apply -f fleet.yaml -auto-approve
ok "its job runs" wait_for 30 runs 0

# ---- without monitoring: nothing ---------------------------------------------
watch_for 3 plain.yaml
is "without monitoring: no request to Cloud Monitoring" "$(v3 | wc -l | tr -d ' ')" 0

# ---- at most once a minute ---------------------------------------------------
watch_for 6 fleet.yaml
is "the four metric descriptors are created" \
	"$(v3 | jq -r 'select(.path == "/v3/projects/mon-proj/metricDescriptors") | .body.type' | sort | tr '\n' ' ')" \
	"custom.googleapis.com/tpuform/badput_chip_hours custom.googleapis.com/tpuform/chip_hours custom.googleapis.com/tpuform/cost_usd custom.googleapis.com/tpuform/goodput_ratio "
is "then one timeSeries.create in 6 s of rounds (at most once a minute)" \
	"$(series_posts | wc -l | tr -d ' ')" 1
is "after the descriptors" "$(v3 | jq -s -r '[.[].path | endswith("/timeSeries")] | index(true)')" 4
is "which the emulator accepts" "$(v3 | jq -r .status | sort -u | tr '\n' ' ')" "200 "
series_posts | jq -c '.body.timeSeries[]' >series.jsonl
is "labelled by fleet, group and zone" \
	"$(jq -r '.metric.labels | "\(.fleet) \(.group) \(.zone)"' series.jsonl | sort -u)" "mon791 g z1"
is "on the global resource of the project" \
	"$(jq -r '"\(.resource.type) \(.resource.labels.project_id)"' series.jsonl | sort -u)" "global mon-proj"
is "badput by Google's categories" \
	"$(jq -r 'select(.metric.type | endswith("/badput_chip_hours")) | .metric.labels.category' series.jsonl | sort | tr '\n' ' ')" \
	"INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION OTHER WASTED_PROGRESS_FROM_DISRUPTION "
billed_ok() { jq -s -e 'map(select(.metric.type | endswith("/chip_hours"))) | .[0].points[0].value.doubleValue > 0' series.jsonl >/dev/null; }
ok "billed chip-hours are above 0" billed_ok

# ---- a preemption, then writes every 5 s (TPUFORM_MONITORING_INTERVAL) --------
"$TPUFORM" watch -f plain.yaml -interval 0.5s -session-check 0.5s >>watch.out 2>&1 &
WP=$!
sleep 1
ok "the node is preempted" tpuform local preempt -f fleet.yaml mon791-g-0
ok "and watch replaces it: its job runs again" wait_for 60 runs 1
sleep 1
kill -TERM "$WP"
wait "$WP"
WP=
sleep 5 # the last point of each series is at least 5 s old
: >requests.jsonl
TPUFORM_MONITORING_INTERVAL=1s watch_for 13 fleet.yaml
n=$(series_posts | wc -l | tr -d ' ')
ok "several writes in 13 s at an interval of 1 s, raised to 5 s ($n)" test "$n" -ge 2
# Cloud Monitoring's rule is on the points' end times (a series' points at
# least 5 s apart), not on when the requests arrive.
gaps_ok() {
	series_posts | jq -r '.body.timeSeries[0].points[0].interval.endTime' |
		python3 -c '
import sys, datetime
t = [datetime.datetime.strptime(l.strip(), "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() for l in sys.stdin if l.strip()]
sys.exit(not all(b - a >= 5 for a, b in zip(t, t[1:])))'
}
ok "each point at least 5 s after the one before" gaps_ok
is "every one accepted" "$(v3 | jq -r .status | sort -u | tr '\n' ' ')" "200 "
is "no descriptor created twice by one watch" \
	"$(v3 | jq -r 'select(.path | endswith("/metricDescriptors")) | .body.type' | sort | uniq -d | wc -l | tr -d ' ')" 0

# ---- Google's INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION --------------------------
ok "report -json" sh -c "\"$TPUFORM\" report -f fleet.yaml -json >report.json"
L=tpuform.state.json.ledger.jsonl
expect=$(jq -s -r '
	def t: sub("\\.[0-9]+Z$"; "Z") as $s | ($s | fromdateiso8601) + ((capture("\\.(?<ms>[0-9]+)Z$").ms // "0") | tonumber / 1000);
	(map(select(.event == "preempted")) | first) as $p
	| (($p.ts | t) - ($p.elapsed // 0)) as $lost
	| map(select((.event == "job_started" or .event == "job_running") and (.ts | t) > $lost))
	| group_by(.worker) | map(first.ts | t) | max - $lost' "$L")
got=$(jq '.totals.ml_goodput.badput_seconds.INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION' report.json)
ok "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION ($got s) is the ledger's preemption to running ($expect s) within 1 %" \
	awk -v a="$got" -v b="$expect" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= b / 100) }'
is "one preemption" "$(jq .totals.preemptions report.json)" 1
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

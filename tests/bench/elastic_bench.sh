#!/bin/sh
# Benchmark of elastic slices (issue 30; docs/recovery.md "Elastic slices"):
# goodput during a stockout, with and without `elastic`. Against the
# emulator with sshd workers (the 127.0.97.x block), a `slices: 3` TPU7x
# group (2 VMs a slice, spot) runs its job under `watch`; a VM of slice 1 is
# preempted while the zone is stocked out for the machine type, the stockout
# lasts STOCKOUT seconds, then clears; once every worker runs again (and
# SETTLE seconds more) watch stops and `report -json` reads the ledger.
# Twice: without `elastic` (every slice waits) and with `elastic: {
# min_slices: 2 }` (the job runs on 2 slices meanwhile). Prints goodput
# chip-hours and their share of the run's slice-hours declared; passes or
# fails on nothing but a run that does not recover.
#
#   sh tests/bench/elastic_bench.sh [STOCKOUT] [SETTLE]     defaults: 600 10
#   smallest (make bench-smoke): sh tests/bench/elastic_bench.sh 10 2
set -u
STOCKOUT=${1:-600}
SETTLE=${2:-10}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/tests/e2e/lib.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/tpuform-elastic-bench.XXXXXX")
cd "$W" || exit 1
# shellcheck disable=SC2016 # expanded by the EXIT trap
GCP_WORKERS_CLEANUP='[ -n "${wpid:-}" ] && kill "$wpid" 2>/dev/null; cd /; [ -n "${BENCH_KEEP:-}" ] || rm -rf "$W"'
. "$TOP/tests/e2e/gcp_workers.sh"
export TPUFORM_SSH_RETRY=3
gcp_workers_start 20 127.0.97.1 --op-seconds 0.1 --compute-stage-seconds 0.1 >gcp_workers.out
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1" >/dev/null; }
fail() {
	echo "elastic_bench: FAILED: $*" >&2
	exit 1
}
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
# nstarts FLEET RETRY: the jobs of fleet FLEET that started with TPUFORM_RETRY >= RETRY
nstarts() { cat "$W"/workers/w*/home/starts 2>/dev/null | awk -v f="$1" -v r="$2" '$1 ~ "^" f "-" && $2 >= r' | wc -l; }
# until SECONDS COMMAND...: poll until it holds
until_() {
	_end=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -ge "$_end" ] && return 1
		sleep 0.2
	done
}
atleast() { test "$(nstarts "$1" "$2")" -ge "$3"; }

# run FLEET ELASTIC_KEY RETRY: one run, recovered once 6 jobs started with
# TPUFORM_RETRY >= RETRY (without elastic 1: the recreation; with, 2: the
# grow after the shrink); prints "NONE_S TWO_S RUN_S" then "GOODPUT BILLED
# WAITING" (chip-hours, the report's)
run() {
	mkdir "$1" && cd "$1" || exit 1
	cat >fleet.yaml <<YAML
fleet: $1
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
on_disruption: { grace: 2s }
run: |
  echo "\$TPUFORM_NODE \$TPUFORM_RETRY \$TPUFORM_WORKER_ID" >> ~/starts
  exec sleep 3600
groups:
  - { name: a, machine_type: tpu7x-standard-4t, topology: 2x2x2, spot: true, zones: [us-central1-c], count: 1, slices: 3$2 }
YAML
	"$TOP/tpuform" apply -f fleet.yaml -auto-approve >apply.out 2>&1 || fail "$1: apply: $(tail -3 apply.out)"
	until_ 60 atleast "$1" 0 6 || fail "$1: the job did not start on 6 workers"
	t0=$(date +%s)
	admin "compute/zones/us-central1-c:stockout?value=on&machine_type=tpu7x-standard-4t"
	"$TOP/tpuform" watch -f fleet.yaml -interval 1s >watch.out 2>&1 &
	wpid=$!
	admin "compute/instances/us-central1-c/$1-a-0-1-002:preempt"
	sleep "$STOCKOUT"
	admin "compute/zones/us-central1-c:stockout?value=off&machine_type=tpu7x-standard-4t"
	until_ 300 atleast "$1" "$3" 6 ||
		fail "$1: the job did not run on 6 workers again: $(tail -5 watch.out)"
	sleep "$SETTLE"
	kill -TERM "$wpid"
	wait "$wpid"
	wpid=
	t1=$(date +%s)
	# From the ledger, from t0 to t1: the seconds the job ran on no slice
	# (from the first line after the loss to every worker running again,
	# or to `shrunk`) and on 2 of 3 (`shrunk` to `grown`); and the report
	# from t0 on (its goodput, billed and waiting_for_capacity).
	jq -rs --argjson t0 "$t0" --argjson t1 "$t1" '
		def t: .ts | sub("\\.[0-9]+Z$"; "Z") | fromdate;
		[.[] | select(t >= $t0)] as $l
		| ($l | map(select(.event != "job_started")) | first | t) as $lost
		| ($l | map(select(.event == "shrunk")) | first | if . then t else null end) as $s
		| ($l | map(select(.event == "grown")) | first | if . then t else null end) as $g
		| ($l | map(select(.event == "job_started")) | last | t) as $back
		| if $s then "\($s - $lost) \($g - $s)" else "\($back - $lost) 0" end
		| . + " \($t1 - $t0)"' tpuform.state.json.ledger.jsonl
	"$TOP/tpuform" report -f fleet.yaml -json -since="$(date -u -d "@$t0" +%Y-%m-%dT%H:%M:%SZ)" 2>/dev/null |
		jq -r '.totals | "\(.goodput_chip_hours) \(.billed_chip_hours) \(.badput.waiting_for_capacity // 0)"'
	"$TOP/tpuform" destroy -f fleet.yaml -auto-approve >destroy.out 2>&1 || fail "$1: destroy"
	cd "$W" || exit 1
}
# say LABEL OUTPUT-OF-run: the goodput of the slices declared (3 slices
# while all run, 2 while shrunk, none while the job waits) over the run
# from the stockout on, and the report's figures
say() {
	echo "$2" | tr '\n' ' ' | awk -v l="$1" -v so="$STOCKOUT" '{
		none = $1; two = $2; run = $3
		good = (3 * (run - none - two) + 2 * two) / (3 * run)
		printf "goodput %s, stockout of %d s: %.0f%% of the slice-time declared over %d s (no slice for %d s, 2 of 3 for %d s); report: goodput %.4f chip-hours, billed %.4f, waiting_for_capacity %.4f\n",
			l, so, 100 * good, run, none, two, $4, $5, $6 }'
}
plain=$(run ebp "" 1)
elastic=$(run ebe ", elastic: { min_slices: 2 }" 2)
say "without elastic" "$plain"
say "with elastic (min_slices 2)" "$elastic"

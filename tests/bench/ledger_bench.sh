#!/bin/sh
# What the run ledger costs (issue 20, docs/ledger.md "What it costs").
#
# 1. A `plan` writes one `planned` line: with the state in Cloud Storage
#    (the emulator, tests/fakegcp) that is one object upload; this counts
#    the requests and bytes of each plan with the ledger on and off.
# 2. A quiet `watch` round of NODES nodes (default 200; BENCH_FULL=1 or
#    the first argument: 1,000) on the emulator, through
#    tests/bench/watch_round_bench.sh: CPU per round with TPUFORM_LEDGER=off,
#    with the ledger on, and with the ledger on, a budget declared and a
#    ledger of DAYS days of history (tests/e2e/ledger_gen.py) to measure it
#    from (watch reads it at most every TPUFORM_BUDGET_REFRESH, 60 s).
#    The issue's target: at most 5 % more CPU with the ledger on.
# 3. A budget in `watch` over that seeded ledger (local provider, one
#    node): the CPU of the first measure (the whole ledger, once), and of
#    each later one (only what was appended: issue 29), measured at
#    TPUFORM_BUDGET_REFRESH=1s against the same watch without a budget;
#    the share of a core at the default 60 s. Aim: under 1 %.
#
#   sh tests/bench/ledger_bench.sh [NODES] [SECONDS] [DAYS] [INTERVAL]
#   (INTERVAL: watch's -interval in seconds, default 5)
#   smallest (make bench-smoke): sh tests/bench/ledger_bench.sh 4 3 1 1
# Prints figures; nothing passes or fails on time. Exits 1 with a message
# when the emulator or a quiet-round run fails.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
NODES=${1:-200}
SECS=${2:-40}
DAYS=${3:-7}
INTERVAL=${4:-5}
T=$TOP/tpuform
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/bench/lib.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/tpuform-ledger-bench.XXXXXX")
trap 'fakegcp_stop >/dev/null 2>&1; cd /; [ -n "${BENCH_KEEP:-}" ] || rm -rf "$W"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() {
	echo "ledger_bench: FAILED: $*" >&2
	exit 1
}
cd "$W" || exit 1
export NO_COLOR=1 TPUFORM_ACCESS_TOKEN=bench

echo "== plan with the state in Cloud Storage (emulated), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
if fakegcp_start --project bench-project --bucket tpf-state --log "$W/requests.jsonl" >/dev/null; then
	export TPUFORM_STORAGE_ENDPOINT="$FAKEGCP_URL"
	cat >fleet.yaml <<'YAML'
fleet: lb
provider:
  local: { root: nodes }
state:
  gcs: { bucket: tpf-state, prefix: fleets/lb }
run: exec sleep 300
groups:
  - { name: g, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 4 }
YAML
	plans() { # MODE N: requests of N plans
		: >"$W/requests.jsonl"
		i=0
		while [ "$i" -lt "$2" ]; do
			if [ "$1" = off ]; then
				TPUFORM_LEDGER=off "$T" plan -f fleet.yaml >/dev/null 2>&1
			else
				"$T" plan -f fleet.yaml >/dev/null 2>&1
			fi
			i=$((i + 1))
		done
		n=$(wc -l <"$W/requests.jsonl" | tr -d ' ')
		up=$(jq -r 'select(.method == "POST" and (.path | test("/upload/"))) | .path' "$W/requests.jsonl" | wc -l | tr -d ' ')
		echo "ledger $1: $(echo "$n $2" | awk '{ printf "%.1f", $1 / $2 }') requests per plan, $(echo "$up $2" | awk '{ printf "%.1f", $1 / $2 }') uploads per plan"
	}
	plans off 5
	plans on 5
	seg=$(jq -r 'select(.method == "POST" and (.path | test("/upload/"))) | .path' "$W/requests.jsonl" | tail -1)
	echo "the last plan's ledger upload: $seg"
	fakegcp_stop >/dev/null 2>&1
	unset TPUFORM_STORAGE_ENDPOINT
else
	fail "the emulator did not start"
fi
cat >local.yaml <<'YAML'
fleet: ll
provider:
  local: { root: nodes }
run: exec sleep 300
groups:
  - { name: g, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 4 }
YAML
"$T" plan -f local.yaml >/dev/null 2>&1
b0=$(wc -c <tpuform.state.json.ledger.jsonl 2>/dev/null || echo 0)
"$T" plan -f local.yaml >/dev/null 2>&1
b1=$(wc -c <tpuform.state.json.ledger.jsonl)
echo "local state: a plan appends $((b1 - b0)) bytes (one line) to the ledger file"

python3 "$TOP/tests/e2e/ledger_gen.py" "$W/seed.jsonl" "$NODES" "$DAYS" 24 "$(date -d "-$DAYS days" +%s 2>/dev/null || echo 1767225600)" ||
	fail "tests/e2e/ledger_gen.py failed"

echo "== a budget in watch over a seeded ledger: $(wc -l <"$W/seed.jsonl" | tr -d ' ') lines, $(du -h "$W/seed.jsonl" | cut -f1)"
mkdir -p "$W/budget" && cd "$W/budget" || exit 1
cat >fleet.yaml <<'YAML'
fleet: lbb
provider:
  local: { root: nodes }
run: exec sleep 600
budget: { chip_hours: 9000000, per: month }
groups:
  - { name: g, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
sed '/^budget:/d' fleet.yaml >nobudget.yaml
cp "$W/seed.jsonl" tpuform.state.json.ledger.jsonl
"$T" apply -f fleet.yaml -auto-approve >apply.out 2>&1 || { tail -n 5 apply.out; fail "apply of the budget fleet failed"; }
# MODE: watch with fleet file MODE.yaml, -interval 1s, a measure a second;
# prints "ROUNDS CPU_SECONDS FIRST_SECONDS" (the first: up to the end of
# its first round, which reads the whole ledger).
bwatch() {
	TPUFORM_BUDGET_REFRESH=1s "$T" watch -f "$1.yaml" -interval 1s -session-check 1h -json >"$1.jsonl" 2>"$1.err" &
	BW=$!
	i=0
	until grep -q '"watch_summary"' "$1.jsonl" 2>/dev/null; do
		sleep 0.2
		i=$((i + 1))
		[ "$i" -lt 1500 ] || { kill "$BW"; fail "no first watch round in 300 s: $(tail -n 2 "$1.err")"; }
	done
	c0=$(awk '{ print $14 + $15 }' "/proc/$BW/stat")
	r0=$(grep -c '"watch_summary"' "$1.jsonl")
	sleep "$SECS"
	c1=$(awk '{ print $14 + $15 }' "/proc/$BW/stat")
	r1=$(grep -c '"watch_summary"' "$1.jsonl")
	kill -TERM "$BW"
	wait "$BW"
	echo "$((r1 - r0)) $c0 $c1 $(getconf CLK_TCK)" | awk '{ printf "%d %.3f %.3f", $1, ($3 - $2) / $4, $2 / $4 }'
}
# shellcheck disable=SC2046 # the three figures of each run, split
set -- $(bwatch fleet) $(bwatch nobudget)
"$T" destroy -f fleet.yaml -auto-approve >destroy.out 2>&1 || { tail -n 5 destroy.out; fail "destroy of the budget fleet failed"; }
[ $# -eq 6 ] || fail "a budget watch run printed no figures"
echo "first measure (the whole ledger, once): $(echo "$3 $6" | awk '{ d = $1 - $2; if (d < 0) d = 0; printf "%.2f s", d }') of CPU"
per=$(echo "$1 $2 $4 $5" | awk '{ if ($1 > 0 && $3 > 0) { d = $2 / $1 - $4 / $3; if (d < 0) d = 0; printf "%.2f", 1000 * d } }')
echo "each later measure (what was appended): ${per:-n/a} ms of CPU ($1 rounds with a budget, $4 without, ${SECS} s each)"
pct=$(echo "$per" | awk '{ if ($1 != "") printf "%.3f", $1 / 60000 * 100 }')
echo "a budget's CPU in watch at the default 60 s: ${pct:-n/a} % of a core   [aim: < 1 %: $(bench_aim "${pct:-}" '<' 1)]"
cd "$W" || exit 1

echo "== quiet watch rounds, $NODES nodes, ${SECS} s each, -interval ${INTERVAL}s"
# One run of watch_round_bench.sh: its CPU line, or the bench's own failure.
r() {
	sh "$TOP/tests/bench/watch_round_bench.sh" "$NODES" "$SECS" "$INTERVAL" >round.out 2>&1 ||
		{ cat round.out >&2; fail "watch_round_bench.sh failed"; }
	grep -E "CPU per quiet round|skipped" round.out || { cat round.out >&2; fail "watch_round_bench.sh printed no CPU figure"; }
}
ms() { sed -n 's/.*quiet round: \([0-9.]*\) ms.*/\1/p'; }
off=$(TPUFORM_LEDGER=off r) || exit 1
echo "ledger off:        $off"
on=$(r) || exit 1
echo "ledger on:         $on"
budget=$(BENCH_LEDGER_SEED="$W/seed.jsonl" BENCH_FLEET_EXTRA='budget: { chip_hours: 9000000, per: month }' r) || exit 1
echo "ledger on, budget: $budget  [seeded ledger: $(wc -l <"$W/seed.jsonl" | tr -d ' ') lines, $(du -h "$W/seed.jsonl" | cut -f1)]"
# The issue's aim: at most 5 % more CPU per quiet round with the ledger on.
more() { echo "$1 $2" | awk '{ if ($1 > 0 && $2 != "") printf "%+.0f", 100 * ($2 - $1) / $1; else print "n/a" }'; }
o=$(echo "$off" | ms)
d=$(more "$o" "$(echo "$on" | ms)")
echo "the ledger's CPU per quiet round: ${d} % with it on than off   [aim: <= +5 %: $(bench_aim "$d" '<=' 5)]"

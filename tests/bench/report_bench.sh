#!/bin/sh
# Benchmark of the run ledger's report (issue 20): a ledger of NODES nodes
# over DAYS days (tests/e2e/ledger_gen.py: a preemption every 2 days and a
# job restart every day per node), then `report -json`, `report -html`, and
# headless Chromium loading the page. Prints figures; passes or fails on
# nothing (the issue's aim: a page under 5 MB that loads in under 2 s).
#
#   sh tests/bench/report_bench.sh [NODES] [DAYS]      defaults: 1000 30
#   smallest (make bench-smoke): sh tests/bench/report_bench.sh 4 1
#
# The ledger's cost in a quiet `watch` round (the issue's aim: at most 5 %
# more CPU at 1,000 nodes): a quiet round writes no line, so that cost is
# the per-round refresh of the writer's node list. Measure it with
#   TPUFORM_LEDGER=off sh tests/bench/watch_round_bench.sh 1000 60
#   sh tests/bench/watch_round_bench.sh 1000 60
# and compare "watch CPU per quiet round" (BENCH_LEDGER=1 runs both here).
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
NODES=${1:-1000}
DAYS=${2:-30}
T=$TOP/tpuform
. "$TOP/tests/bench/lib.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/tpuform-report-bench.XXXXXX")
# Chromium's helpers (zygote, crash handler) can outlive a headless load:
# they run with HOME in $W, so the exit ends them.
trap 'bench_reap "$W"; cd /; [ -n "${BENCH_KEEP:-}" ] || rm -rf "$W"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() {
	echo "report_bench: FAILED: $*" >&2
	exit 1
}
cd "$W" || exit 1
now() { date +%s.%N; }
took() { echo "$1 $(now)" | awk '{ printf "%.2f s", $2 - $1 }'; }
cat >fleet.yaml <<'YAML'
fleet: fleet
provider:
  local: { root: nodes }
run: exec sleep 300
groups:
  - { name: g0, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1 }
YAML
L=tpuform.state.json.ledger.jsonl
echo "== report: $NODES nodes over $DAYS days, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$TOP/tests/e2e/ledger_gen.py" $L "$NODES" "$DAYS" || fail "tests/e2e/ledger_gen.py failed"
echo "ledger: $(wc -l <$L | tr -d ' ') lines, $(du -h $L | cut -f1)"
t=$(now)
"$T" report -f fleet.yaml -json >report.json || fail "report -json exited $?"
echo "report -json: $(took "$t")"
t=$(now)
"$T" report -f fleet.yaml -html page.html >/dev/null || fail "report -html exited $?"
bytes=$(wc -c <page.html | tr -d ' ')
echo "report -html: $(took "$t"), page $bytes bytes   [aim: under 5 MB: $(bench_aim "$bytes" '<' 5000000)]"
BROWSER=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$BROWSER" ]; then
	load() {
		HOME=$W timeout 60 "$BROWSER" --headless --no-sandbox --disable-gpu --user-data-dir="$W/chromium" \
			--dump-dom "file://$W/$1" >/dev/null 2>&1
	}
	echo '<!DOCTYPE html><title>empty</title>' >empty.html
	load empty.html # warm the browser's files
	t=$(now); load empty.html; e=$(echo "$t $(now)" | awk '{ print $2 - $1 }')
	t=$(now); load page.html; p=$(echo "$t $(now)" | awk '{ print $2 - $1 }')
	own=$(echo "$p $e" | awk '{ printf "%.2f", $1 - $2 }')
	echo "$p $e" | awk '{ printf "chromium: %.2f s to load the page, %.2f s for an empty one: ", $1, $2 }'
	echo "$own s for the page itself   [aim: under 2 s: $(bench_aim "$own" '<' 2)]"
else
	echo "chromium: not installed, load time not measured"
fi
if [ "${BENCH_LEDGER:-}" = 1 ]; then
	echo "== the ledger's cost in a quiet watch round"
	TPUFORM_LEDGER=off sh "$TOP/tests/bench/watch_round_bench.sh" "$NODES" 60 | grep "CPU per quiet round" | sed 's/^/ledger off: /'
	sh "$TOP/tests/bench/watch_round_bench.sh" "$NODES" 60 | grep "CPU per quiet round" | sed 's/^/ledger on:  /'
fi

#!/bin/sh
# tpuform report -html (issue 20): one self-contained page (no script, no
# network), loaded in a real browser (Debian's chromium, headless): the
# timeline SVG has one row per node and the preemption marks, a screenshot
# is saved as an artifact (tests/out/t561.d/timeline.png). A fleet of
# 1,000 nodes over 30 days gives a page under 5 MB with one row per group.
# The ledgers are made by tests/e2e/ledger_gen.py: the report reads only
# the ledger. How fast the browser loads the big page: tests/bench/report_bench.sh.
. "$(dirname "$0")/lib.sh"
BROWSER=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$BROWSER" ]; then
	echo "1..0 # SKIP chromium is not installed (Debian: apt-get install chromium)"
	exit 0
fi
setup_dir t561
browse() { # FILE ARGS...: the DOM after the page loaded
	f=$1
	shift
	timeout 60 "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars "$@" "file://$W/$f" 2>/dev/null
}
cat >fleet.yaml <<'YAML'
fleet: fleet
provider:
  local: { root: nodes }
run: exec sleep 300
groups:
  - { name: g0, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 3 }
YAML
L=tpuform.state.json.ledger.jsonl
# 3 nodes over two days, each preempted every 6 hours, its job restarted once.
python3 "$TOP/tests/e2e/ledger_gen.py" $L 3 2 6
want_losses=$(grep -c '"event":"preempted"' $L)
ok "report -html" tpuform report -f fleet.yaml -html page.html
like "says where the page is" "$(cat last.out)" "Wrote the report's page to page.html"
ok "the page has no script, no external resource" \
	sh -c '! grep -Eiq "<script|<link|<iframe|<img|src=|url\(|@import" page.html'
browse page.html --dump-dom >dom.html
ok "chromium loads it" grep -q '</svg>' dom.html
is "the timeline has one row per node" "$(grep -o '<g class="row"' dom.html | wc -l | tr -d ' ')" 3
is "one preemption mark per preemption" "$(grep -o '<path class="preemption"' dom.html | wc -l | tr -d ' ')" "$want_losses"
like "a mark's tooltip gives its exact time" "$(cat dom.html)" \
	'<title>fleet-g1-1 preempted \(seen\) at 2026-01-01T[0-9:]{8}\.[0-9]{3}Z</title>'
like "a span's tooltip gives its phase, start and end" "$(cat dom.html)" \
	'<title>fleet-g0-0 running 2026-01-01T[0-9:.]+Z to 2026-01-01T[0-9:.]+Z</title>'
ok "restarts are marked" grep -q '<path class="restart"' dom.html
ok "the goodput and badput bar" grep -q '<svg class="bar"' dom.html
like "and the table of rows" "$(cat dom.html)" "<td>g1</td><td>us-central2-b</td><td>spot</td><td>v4</td>"
browse page.html --window-size=1400,700 --screenshot="$W/timeline.png" >/dev/null
ok "a screenshot of it is saved (tests/out/t561.d/timeline.png)" test -s timeline.png
is "it is a PNG" "$(head -c 4 timeline.png | tail -c 3)" "PNG"

# 1,000 nodes over 30 days: rows by group, a page under 5 MB.
python3 "$TOP/tests/e2e/ledger_gen.py" $L 1000 30
ok "report -html of 1,000 nodes over 30 days" tpuform report -f fleet.yaml -html big.html
size=$(wc -c <big.html | tr -d ' ')
ok "the page is under 5 MB ($size bytes)" test "$size" -lt 5000000
browse big.html --dump-dom >bigdom.html
ok "chromium loads it" grep -q '</svg>' bigdom.html
is "one row per group past 200 nodes" "$(grep -o '<g class="row"' bigdom.html | wc -l | tr -d ' ')" 4
like "and says so" "$(cat bigdom.html)" "1000 nodes: one row per group"
ok "preemptions are still marked" grep -q '<path class="preemption"' bigdom.html
finish

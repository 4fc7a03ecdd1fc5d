#!/bin/sh
# The report's page (issue 29 items 5 and 2), in headless Chromium at
# 1,280 x 900: the page of 1,000 nodes over 30 days has no horizontal
# scroll bar (document.documentElement.scrollWidth <= 1280), the legend
# has no entry twice, counts print as integers (1, not 1.0000), the time
# axis has short labels (not RFC 3339 stamps), and a total with rows
# without a price says it is a lower bound (text, JSON and the page).
# No sshd workers. The ledgers: tests/e2e/ledger_gen.py.
. "$(dirname "$0")/lib.sh"
BROWSER=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$BROWSER" ]; then
	echo "1..0 # SKIP chromium is not installed (Debian: apt-get install chromium)"
	exit 0
fi
setup_dir t771
# report reads only the ledger: the fleet file only names the fleet.
printf '%s\n' 'fleet: fleet' 'provider: { local: { root: nodes } }' 'run: "true"' \
	'groups: [{ name: g0, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 3 }]' >fleet.yaml
L=tpuform.state.json.ledger.jsonl
python3 "$TOP/tests/e2e/ledger_gen.py" $L 1000 30
ok "report -html of 1,000 nodes over 30 days" tpuform report -f fleet.yaml -html big.html
# The page has no script: a measuring one is added to a copy.
{ cat big.html; echo '<script>document.body.setAttribute("data-sw", document.documentElement.scrollWidth)</script>'; } >measure.html
timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --window-size=1280,900 \
	--dump-dom "file://$W/measure.html" >dom.html 2>/dev/null
sw=$(grep -o 'data-sw="[0-9]*"' dom.html | grep -o '[0-9]*')
ok "chromium measured the page (scrollWidth $sw)" test -n "$sw"
ok "no horizontal scroll bar at 1,280 px (scrollWidth $sw <= 1280)" test "${sw:-99999}" -le 1280
grep -o '<p class="legend">.*</p>' big.html | sed 's/<span[^>]*><\/span>/\n/g; s/<[^>]*>//g' | sed '/^$/d' >legend.txt
ok "the legend lists the phases and marks" test "$(wc -l <legend.txt)" -ge 8
is "no legend entry twice" "$(sort legend.txt | uniq -d)" ""
ok "counts are integers in the totals" grep -q '<tr><td>preemptions</td><td>[0-9]*</td></tr>' big.html
ok "no count as 1.0000" sh -c "! grep -Eq '<td>(preemptions|restarts)</td><td>[0-9]+\.[0-9]' big.html"
ok "axis labels are short" grep -q '<text class="tick"[^>]*>[A-Z][a-z][a-z] [0-9][0-9] [0-9][0-9]:[0-9][0-9]</text>' big.html
ok "no RFC 3339 stamp on the axis" sh -c "! grep -Eq '<text class=\"tick\"[^>]*>[0-9]{4}-' big.html"

# A row without a price (ledger_gen.py's spot v4 row): the total is a lower bound.
ok "report -json" sh -c "'$TPUFORM' report -f fleet.yaml -json >r.json"
unpriced=$(jq .totals.rows_without_price r.json)
ok "some rows have no price ($unpriced)" test "$unpriced" -gt 0
is "the JSON total says it is a lower bound" "$(jq .totals.cost_usd_estimate_lower_bound r.json)" true
ok "report (text)" tpuform report -f fleet.yaml
like "the text says at least" "$(cat last.out)" 'Estimated cost: at least \$[0-9]'
like "and why" "$(cat last.out)" 'the cost is a lower bound'
ok "the page says it" grep -q 'class="lower-bound">The cost is a lower bound' big.html
ok "its total is marked" grep -q '<td>cost_usd_estimate</td><td>[0-9.]* (a lower bound)</td>' big.html
finish

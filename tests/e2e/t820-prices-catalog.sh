#!/bin/sh
# `tpuform prices -refresh` reads TPU list prices from the Cloud Billing
# Catalog API (the emulator's, tests/fakegcp/fg_billing.c: both services,
# pages of --page-size 4, a commitment, a SKU in euros, a TPU SKU that names
# no generation, SKUs of other resources) and stores the table beside the
# state; then `report -json` prices v5e, v5p, v6e, TPU7x and v4 rows from
# the catalog, each row naming it as the source, a spot row (and a
# preemptible v4 row) with the spot SKU, and a row of a region the catalog
# does not list as missing, with the total marked as a lower bound
# (docs/ledger.md "Prices", issue 29).
# The local provider, no sshd workers: no loopback block needed (the
# 127.0.90-94 blocks of this range are unused).
. "$(dirname "$0")/lib.sh"
setup_dir t820
export TPF_ROOT="$TOP"
. "$TOP/tests/e2e/fakegcp.sh"
if ! fakegcp_start --page-size 4 --log "$W/requests.jsonl"; then
	echo "1..0 # SKIP the emulator did not start"
	exit 0
fi
trap 'fakegcp_stop >/dev/null 2>&1' EXIT
export TPUFORM_BILLING_ENDPOINT="$FAKEGCP_URL" TPUFORM_ACCESS_TOKEN=test-token
export TPUFORM_GCP_RETRY_BASE=0.05 TPUFORM_GCP_RETRY_CAP=0.1 TPUFORM_GCP_TRIES=2
cat >fleet.yaml <<'YAML'
fleet: prices820
provider:
  local: { root: nodes }
run: exec sleep 300
groups:
  - { name: g, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
# One node an hour per row: group, zone, chip, chips, class.
L=tpuform.state.json.ledger.jsonl
seq=0
node() { # GROUP ZONE CHIP CHIPS CLASS
	for e in creating:10:00 ready:10:01 job_started:10:02 deleting:10:59 deleted:11:00; do
		seq=$((seq + 1))
		jq -nc --arg ev "${e%%:*}" --arg ts "2026-11-01T${e#*:}:00Z" --arg g "$1" \
			--arg z "$2" --arg chip "$3" --argjson chips "$4" --arg cls "$5" \
			--argjson seq "$seq" \
			'{v:1, ts:$ts, event:$ev, cmd:"watch", writer:"t820:1", seq:$seq,
			  node:("n-" + $g), group:$g, zone:$z, api:"tpu", type:($chip + "-8"),
			  chip:$chip, chips:$chips, vms:1, class:$cls, generation:0, retry:0}
			 + (if $ev == "job_started" then {worker:0} else {} end)' >>$L
	done
}
node v5e us-central1-a v5e 8 on-demand
node v5e-spot us-central1-a v5e 8 spot
node v5p us-east5-a v5p 4 on-demand
node v6e us-east5-b v6e 8 on-demand
node tpu7x us-central1-c tpu7x 4 on-demand
node v4 us-central2-b v4 4 on-demand
node v4-pre us-central2-b v4 4 preemptible
node mars mars-north1-a v6e 8 on-demand

row() { jq -c --arg g "$1" '.rows[] | select(.group == $g) | [.price_source, .usd_per_chip_hour, .cost_usd_estimate, .price_sku]' report.json; }

# ---- before: no catalog ------------------------------------------------------
ok "prices without a catalog" tpuform prices -f fleet.yaml
like "says none is stored" "$(cat last.out)" "Catalog: none stored"
like "lists the built-in rows with their source and date" "$(cat last.out)" \
	"v4 +on-demand +\(every\) +3\.2200  built-in +2026-11-26"
tpuform report -f fleet.yaml -json >report.json
is "report prices v6e in the unknown region from the built-in table" "$(row mars)" '["built-in, unverified",2.7,21.6,null]'

# ---- prices -refresh ---------------------------------------------------------
ok "prices -refresh" tpuform prices -f fleet.yaml -refresh
like "says how many SKUs it read" "$(cat last.out)" "Read 14 SKUs from the Cloud Billing Catalog: 1[0-9] TPU prices"
like "names the skipped TPU SKUs and why: another currency" "$(cat last.out)" \
	'Skipped SKU 0A1B-0000-0009 "TpuV6e chip running in Paris": it is not priced in US dollars'
like "a SKU that names no generation" "$(cat last.out)" \
	'Skipped SKU 0A1B-0000-0008 "Tpu Interconnect Egress between regions": its description names no TPU generation'
like "catalog rows carry the fetch date" "$(cat last.out)" \
	"v5e +spot +us-central1 +0\.4800  catalog +20[0-9]{2}-[0-9]{2}-[0-9]{2}"
is "pages were read with pageSize and pageToken, both services" \
	"$(jq -r 'select(.path | startswith("/v1/services/")) | .path' requests.jsonl | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')" \
	"/v1/services/6F81-5844-456A/skus=3 /v1/services/E000-3F24-B8AA/skus=1 "
is "pages of 5,000, with the fleet's credentials (no key=)" \
	"$(jq -r 'select(.path | startswith("/v1/services/")) | .query' requests.jsonl | grep -v key= | grep -c '^pageSize=5000')" 4
ok "the table is stored beside the state" test -s tpuform.state.json.prices.json
tpuform prices -f fleet.yaml -json >prices.json
is "prices -json: the v4 on-demand row from the catalog, per chip (a Pod SKU prices 4 chips)" \
	"$(jq -c '.rows[] | select(.chip == "v4" and .class == "on-demand" and .source == "catalog") | [.region, .usd_per_chip_hour, .sku]' prices.json)" \
	'["us-central2",3.22,"0B2C-0000-0003"]'
is "v2: the device SKU, not the Pod one" \
	"$(jq -c '.rows[] | select(.chip == "v2" and .source == "catalog") | [.usd_per_chip_hour, .sku]' prices.json)" \
	'[1.125,"0B2C-0000-0001"]'
is "v6e: the tier from usage 0" \
	"$(jq -c '[.rows[] | select(.chip == "v6e" and .source == "catalog") | .usd_per_chip_hour] | unique' prices.json)" '[2.7]'
is "the commitment is left out" "$(jq '[.rows[] | select(.sku == "0A1B-0000-0007")] | length' prices.json)" 0

# ---- report uses it ----------------------------------------------------------
tpuform report -f fleet.yaml -json >report.json
is "v5e from the catalog" "$(row v5e)" "[\"catalog $(date -u +%Y-%m-%d)\",1.2,9.6,\"0A1B-0000-0002\"]"
d=$(date -u +%Y-%m-%d)
is "v5e spot with the spot SKU" "$(row v5e-spot)" "[\"catalog $d\",0.48,3.84,\"0A1B-0000-0003\"]"
is "v5p from the catalog, per chip" "$(row v5p)" "[\"catalog $d\",4.2,16.8,\"0A1B-0000-0004\"]"
is "v6e from the catalog" "$(row v6e)" "[\"catalog $d\",2.7,21.6,\"0A1B-0000-0005\"]"
is "TPU7x from the catalog" "$(row tpu7x)" "[\"catalog $d\",5,20,\"0A1B-0000-0006\"]"
is "v4 from the catalog" "$(row v4)" "[\"catalog $d\",3.22,12.88,\"0B2C-0000-0003\"]"
is "preemptible v4 with the spot SKU" "$(row v4-pre)" "[\"catalog $d\",0.965,3.86,\"0B2C-0000-0004\"]"
is "v6e in a region the catalog does not list: missing, not the built-in price" "$(row mars)" \
	'["missing",null,null,null]'
is "the total is a lower bound, one row without a price" \
	"$(jq -c '.totals | [.cost_usd_estimate_lower_bound, .rows_without_price, .cost_usd_estimate]' report.json)" \
	'[true,1,88.58]'
like "report -json says list price" "$(jq -r .prices.note report.json)" "list price"
ok "report (text)" tpuform report -f fleet.yaml
like "text rows name the price source" "$(cat last.out)" "v5e-spot +us-central1-a +spot +v5e .* catalog $d"
like "and the missing one" "$(cat last.out)" "mars +mars-north1-a .* no price +missing"
like "the estimate names the catalog" "$(cat last.out)" "list prices of $d \(Cloud Billing Catalog API"

like "the text says list prices" "$(cat last.out)" "list price"
ok "report -html" tpuform report -f fleet.yaml -html page.html
like "the page's rows name the source" "$(cat page.html)" "<td>catalog $d</td>"
finish

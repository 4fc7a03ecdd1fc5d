#!/bin/sh
# `tpuform prices -refresh` when the Cloud Billing Catalog refuses: the
# API's own message and status and a hint at the fix, exit 1, and the
# table stored before is kept (report still prices from it). With an API
# key (TPUFORM_BILLING_API_KEY) the key goes in the X-goog-api-key header,
# never in the URL, and no token is needed (the emulator answers 401
# without one); a key the API does not take is its 400 "API key not valid".
# The emulator: tests/fakegcp/fg_billing.c (--billing-disabled,
# --billing-api-key). The local provider, no sshd workers: no loopback
# block needed.
. "$(dirname "$0")/lib.sh"
setup_dir t821
export TPF_ROOT="$TOP"
. "$TOP/tests/e2e/fakegcp.sh"
export TPUFORM_GCP_RETRY_BASE=0.05 TPUFORM_GCP_RETRY_CAP=0.1 TPUFORM_GCP_TRIES=2
cat >fleet.yaml <<'YAML'
fleet: prices821
provider:
  local: { root: nodes }
run: exec sleep 300
groups:
  - { name: g, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
start() {
	if ! fakegcp_start --log "$W/requests.jsonl" "$@"; then
		echo "1..0 # SKIP the emulator did not start"
		exit 0
	fi
	export TPUFORM_BILLING_ENDPOINT="$FAKEGCP_URL"
}
trap 'fakegcp_stop >/dev/null 2>&1' EXIT

# ---- an API key, with no credentials at all ------------------------------------
start --auth token --billing-api-key k-821
unset TPUFORM_ACCESS_TOKEN GOOGLE_APPLICATION_CREDENTIALS
export HOME="$W/home" TPUFORM_BILLING_API_KEY=k-821
mkdir -p "$HOME"
ok "prices -refresh with an API key and no credentials" tpuform prices -f fleet.yaml -refresh
is "both services were listed" "$(jq -r 'select(.path | startswith("/v1/services/")) | .path' requests.jsonl | sort -u | wc -l)" 2
is "the key is in no URL" "$(grep -c 'k-821' requests.jsonl)" 0
cp tpuform.state.json.prices.json kept.json

TPUFORM_BILLING_API_KEY=wrong
fails "a key the API does not take" 1 tpuform prices -f fleet.yaml -refresh
like "the API's status and message" "$(cat last.out)" "HTTP 400 INVALID_ARGUMENT: API key not valid\. Please pass a valid API key\."
like "and the hint" "$(cat last.out)" "TPUFORM_BILLING_API_KEY"
unlike "the key is not printed" "$(cat last.out)" "key=wrong"
ok "the table stored before is kept" cmp tpuform.state.json.prices.json kept.json
fakegcp_stop >/dev/null 2>&1

# ---- the API disabled in the project: 403 --------------------------------------
start --billing-disabled
unset TPUFORM_BILLING_API_KEY
export TPUFORM_ACCESS_TOKEN=test-token
fails "prices -refresh when the API is disabled" 1 tpuform prices -f fleet.yaml -refresh
like "names what it was doing" "$(cat last.out)" "listing the SKUs of service 6F81-5844-456A in the Cloud Billing Catalog"
like "the API's status and message" "$(cat last.out)" \
	"HTTP 403 PERMISSION_DENIED: Cloud Billing API has not been used in project [0-9]+ before or it is disabled"
like "and a hint at the fix" "$(cat last.out)" "must be enabled in the project the credentials bill to"
ok "the table stored before is kept" cmp tpuform.state.json.prices.json kept.json
ok "prices still shows it" tpuform prices -f fleet.yaml
like "with its source" "$(cat last.out)" "v5e +on-demand +us-central1 +1\.2000  catalog"

# ---- a stored table that is not JSON: a warning, the rest still prices ---------
echo 'not json' >tpuform.state.json.prices.json
ok "prices with a damaged table" tpuform prices -f fleet.yaml
like "warns, naming the object and where" "$(cat last.out)" "the catalog's price table was not used: .*prices\.json:1:[0-9]+: the price table is not a JSON object"
like "the built-in rows still show" "$(cat last.out)" "v4 +on-demand +\(every\) +3\.2200  built-in"
finish

#!/bin/sh
# shellcheck disable=SC2317 # the helpers are called through ok and the EXIT trap
# 50 plans in a day against a state in the emulated bucket leave one
# ledger object for their host (docs/ledger.md section 1: the short-lived
# commands append to HOST.YYYYMMDD.K.jsonl with ifGenerationMatch, instead
# of an object per process), holding the 50 `planned` lines once each;
# two plans at once both land; apply and destroy append to it too.
# No sshd workers (the local provider): no loopback block needed.
. "$(dirname "$0")/lib.sh"
setup_dir t790
export TPF_ROOT="$TOP"
. "$TOP/tests/e2e/fakegcp.sh"
if ! fakegcp_start --project test-project --bucket tpf-state; then
	echo "1..0 # SKIP the emulator did not start"
	exit 0
fi
trap 'fakegcp_stop >/dev/null 2>&1' EXIT
export TPUFORM_STORAGE_ENDPOINT="$FAKEGCP_URL" TPUFORM_ACCESS_TOKEN=test-token
export TPUFORM_GCP_RETRY_BASE=0.05 TPUFORM_GCP_RETRY_CAP=0.1 TPUFORM_GCP_TRIES=4
cat >fleet.yaml <<YAML
fleet: ld790
provider:
  local: { root: $W/nodes }
state:
  gcs: { bucket: tpf-state, prefix: fleets/ld790 }
run: exec sleep 300
groups:
  - { name: g, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
objects() { # the ledger's object names
	curl -s "$FAKEGCP_URL/__admin/storage" |
		jq -r '.buckets[0].objects[].name' | grep '^fleets/ld790/ld790\.ledger/'
}
plans() {
	i=0
	while [ "$i" -lt 48 ]; do
		"$TPUFORM" plan -f fleet.yaml >plan.out 2>&1 || { cat plan.out; return 1; }
		i=$((i + 1))
	done
	# two at once (without the state lock, which would order them): both
	# lines land, whichever finds the other's generation retrying
	"$TPUFORM" plan -lock=false -f fleet.yaml >p1.out 2>&1 &
	p=$!
	"$TPUFORM" plan -lock=false -f fleet.yaml >p2.out 2>&1 || { cat p2.out; return 1; }
	wait "$p" || { cat p1.out; return 1; }
}
ok "50 plans against the bucket" plans
objects >objects.txt
is "one ledger object for this host" "$(wc -l <objects.txt | tr -d ' ')" 1
day=$(date -u +%Y%m%d)
like "named after the host and the day" "$(cat objects.txt)" "ld790\.ledger/[0-9a-f]{12}\.$day\.001\.jsonl$"
enc=$(jq -Rr @uri <objects.txt)
curl -s -H 'Authorization: Bearer t' "$FAKEGCP_URL/storage/v1/b/tpf-state/o/$enc?alt=media" >day.jsonl
is "50 planned lines in it" "$(jq -r 'select(.event == "planned") | .event' day.jsonl | wc -l | tr -d ' ')" 50
is "each from its own process, once" "$(jq -r '"\(.writer) \(.seq)"' day.jsonl | sort -u | wc -l | tr -d ' ')" 50
ok "report reads it" sh -c "\"$TPUFORM\" report -f fleet.yaml -json >report.json"
is "no line skipped" "$(jq .skipped_lines report.json)" 0
ok "apply" "$TPUFORM" apply -f fleet.yaml -auto-approve
ok "destroy" "$TPUFORM" destroy -f fleet.yaml -auto-approve
objects >objects2.txt
is "apply and destroy appended to the same object" "$(cat objects2.txt)" "$(cat objects.txt)"
finish

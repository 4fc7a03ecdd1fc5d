#!/bin/sh
# The emulator's stockout that lasts until cleared, for one zone and one
# machine type (issue 30 item 4; tests/fakegcp/README.md): with
# zones/Z:stockout?value=on&machine_type=tpu7x-standard-4t, a TPU7x insert in
# Z fails in its operation with ZONE_RESOURCE_POOL_EXHAUSTED while a v6e one
# there succeeds, and keeps failing after the emulator's time moves on
# (settle); value=off with the same machine_type clears it. A zone-wide
# stockout (no machine_type) still holds every machine type. No workers.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/fakegcp.sh"
setup_dir t831
export TPF_ROOT="$TOP"
trap 'fakegcp_stop >/dev/null 2>&1' EXIT
fakegcp_start --op-seconds 0.1 --compute-stage-seconds 0.1 || exit 1
Z=us-central1-c
P=$FAKEGCP_URL/compute/v1/projects/test-project/zones/$Z
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
body() {
	printf '{"name":"%s","machineType":"zones/%s/machineTypes/%s","scheduling":{"onHostMaintenance":"TERMINATE"},"disks":[{"boot":true,"initializeParams":{"sourceImage":"projects/ubuntu-os-accelerator-images/global/images/family/ubuntu-accel-2404-amd64-tpu-tpu7x"}}],"networkInterfaces":[{}]}' "$1" "$Z" "$2"
}
insert() { curl -s -X POST "$P/instances" -H "content-type: application/json" -d "$(body "$1" "$2")" >/dev/null; }
# the error code of the last insert operation of instance $1, "ok" without one
outcome() {
	wait_for 10 sh -c "curl -s '$P/operations' | jq -e --arg n '$1' '[.items[] | select(.targetLink | endswith(\"/instances/\" + \$n))] | last | .status == \"DONE\"' >/dev/null"
	curl -s "$P/operations" | jq -r --arg n "$1" \
		'[.items[] | select(.targetLink | endswith("/instances/" + $n))] | last | .error.errors[0].code // "ok"'
}

is "a stockout for one machine type is accepted" \
	"$(admin "compute/zones/$Z:stockout?value=on&machine_type=tpu7x-standard-4t" | jq -r .ok)" "true"
like "an unknown machine type is refused" \
	"$(admin "compute/zones/$Z:stockout?value=on&machine_type=nope-1t")" "no such machine type"
insert x1 tpu7x-standard-4t
insert v1 ct6e-standard-4t
is "the stocked-out machine type is refused" "$(outcome x1)" "ZONE_RESOURCE_POOL_EXHAUSTED"
is "another machine type in the zone is made" "$(outcome v1)" "ok"
admin "compute:settle" >/dev/null
admin "compute:settle" >/dev/null
insert x2 tpu7x-standard-4t
is "the stockout lasts until cleared" "$(outcome x2)" "ZONE_RESOURCE_POOL_EXHAUSTED"
admin "compute/zones/$Z:stockout?value=off&machine_type=tpu7x-standard-4t" >/dev/null
insert x3 tpu7x-standard-4t
is "cleared: the machine type is made again" "$(outcome x3)" "ok"
admin "compute/zones/$Z:stockout?value=on" >/dev/null
insert v2 ct6e-standard-4t
is "a zone-wide stockout still holds every machine type" "$(outcome v2)" "ZONE_RESOURCE_POOL_EXHAUSTED"
admin "compute/zones/$Z:stockout?value=off" >/dev/null
insert v3 ct6e-standard-4t
is "and clears" "$(outcome v3)" "ok"
finish

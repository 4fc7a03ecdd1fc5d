#!/bin/sh
# Benchmark of the Compute Engine side of the gcp provider against the
# emulator (prints figures; it never fails on time), as issue 18 asks:
# refresh + plan of SLICES four-VM TPU7x slices (default 2,500: 10,000
# instances) in 8 zones, 20 ms per API request: wall time, CPU, peak RSS and
# the HTTP requests, which must be list pages only (per zone
# instances.list pages, one aggregated MIG walk, one aggregated operations
# walk for preemptions), never a request per node.
#
# The slices are seeded RUNNING in the emulator (POST
# /__admin/compute/instanceGroupManagers:seed) as tpuform makes them: MIG
# N = FLEET-GROUP-INDEX with the description tpuform writes, members
# N-001.. carrying tpuform-slice=N, from one instance template with the
# fleet's labels, and a 2x2x4 workload policy per region.
#
#   sh tests/bench/compute_bench.sh [SLICES] [ZONES]
#   smallest (make bench-smoke): sh tests/bench/compute_bench.sh 8 2
#
# Exits 1 with a message when the emulator, a seed or the plan fails.
# TPUFORM_BIN runs another build (default ./tpuform).
set -u
SLICES=${1:-2500}
ZONES=${2:-8}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/bench/lib.sh"
T=${TPUFORM_BIN:-$TOP/tpuform}
W=$(mktemp -d "${TMPDIR:-/tmp}/tpuform-bench.XXXXXX")
cd "$W" || exit 1
trap 'fakegcp_stop >/dev/null 2>&1; cd /; [ -n "${KEEP:-}${BENCH_KEEP:-}" ] || rm -rf "$W"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() {
	echo "compute_bench: FAILED: $*" >&2
	exit 1
}
export TPUFORM_ACCESS_TOKEN=bench NO_COLOR=1 TPUFORM_GCP_POLL_MIN=0.05 TPUFORM_GCP_POLL_MAX=0.2
export TPUFORM_SSH_RETRY=0 TPUFORM_SSH_CONNECT_TIMEOUT=1
ssh-keygen -q -t ed25519 -N '' -f "$W/key" || exit 1
now() { date +%s.%N; }
secs() { echo "$1 $2" | awk '{ printf "%.2f", $2 - $1 }'; }
P=bench-project
CE() { # METHOD PATH [BODY]: a Compute request; waits for its operation
	_op=$(curl -s -X "$1" -H "Content-Type: application/json" ${3:+-d "$3"} "$FAKEGCP_URL/compute/v1/projects/$P/$2")
	_self=$(echo "$_op" | jq -r '.selfLink // empty')
	[ -n "$_self" ] && curl -s -X POST "$_self/wait" >/dev/null
}

# TPU7x zones of the emulator (docs/compute-engine.md section 1)
ALL="us-central1-a us-central1-b us-central1-c us-central1-f us-east1-b us-east1-c us-east1-d europe-west2-a europe-west2-b europe-west2-c"
zones=$(echo "$ALL" | tr ' ' '\n' | head -n "$ZONES" | tr '\n' ' ')
per=$((SLICES / ZONES))
extra=$((SLICES % ZONES)) # the first zones take one more
echo "== refresh + plan: $SLICES four-VM TPU7x slices ($((SLICES * 4)) instances) in $ZONES zones, 20 ms per request"
fakegcp_start --project "$P" --latency-ms 20 --op-seconds 0 --worker-ip-base 127.0.98.1 >/dev/null ||
	fail "the emulator did not start"
tmpl=$(jq -cn '{name: "bench-t", properties: {machineType: "tpu7x-standard-4t",
	disks: [{boot: true, autoDelete: true, initializeParams: {sourceImage:
	"projects/ubuntu-os-accelerator-images/global/images/family/ubuntu-accel-2404-amd64-tpu-tpu7x"}}],
	networkInterfaces: [{network: "global/networks/default"}],
	scheduling: {onHostMaintenance: "TERMINATE"},
	labels: {"tpuform-fleet": "bench", "tpuform-slice": "x"}}}')
CE POST global/instanceTemplates "$tmpl"
for r in $(echo "$zones" | tr ' ' '\n' | sed 's/-[a-z]$//' | sort -u); do
	CE POST "regions/$r/resourcePolicies" \
		"{\"name\":\"bench-wp\",\"workloadPolicy\":{\"type\":\"HIGH_THROUGHPUT\",\"acceleratorTopology\":\"2x2x4\"}}"
done
{
	echo "fleet: bench"
	echo "provider:"
	echo "  gcp: { project: $P }"
	echo "ssh: { user: root, private_key: \"$W/key\", port: 1 }"
	echo "run: exec sleep 300"
	echo "groups:"
} >fleet.yaml
# A state with a known lineage, so the slices carry its label (plan/ownership.h).
LIN=0123456789abcdef0123456789abcdef
printf '{"version": 2, "serial": 1, "lineage": "%s", "fleet": "bench", "nodes": []}\n' \
	"01234567-89ab-cdef-0123-456789abcdef" >tpuform.state.json
g=0
for z in $zones; do
	n=$per
	[ "$g" -lt "$extra" ] && n=$((per + 1))
	r=${z%-*}
	desc="{\"machine_type\":\"tpu7x-standard-4t\",\"topology\":\"2x2x4\",\"tpuform-fleet\":\"bench\",\"tpuform-group\":\"g$g\",\"tpuform-index\":\"{index}\",\"tpuform-lineage\":\"${LIN%????????????????}\",\"tpuform-slice\":\"{name}\"}"
	curl -sf -o /dev/null -X POST -G "$FAKEGCP_URL/__admin/compute/instanceGroupManagers:seed" \
		--data-urlencode "zone=$z" --data-urlencode "prefix=bench-g$g" --data-urlencode "count=$n" \
		--data-urlencode "template=bench-t" --data-urlencode "policy=$r/bench-wp" \
		--data-urlencode "description=$desc" --data-urlencode "mig_label=tpuform-slice" ||
		fail "seeding $n slices in zone $z failed"
	echo "  - { name: g$g, machine_type: tpu7x-standard-4t, topology: 2x2x4, zones: [$z], count: $n }" >>fleet.yaml
	g=$((g + 1))
done
seeded=$(curl -s "$FAKEGCP_URL/__admin/compute" | jq -r '"\(.instances | length) instances, \(.instanceGroupManagers | length) MIGs"')
curl -s -X POST "$FAKEGCP_URL/__admin/requests:clear" >/dev/null
load=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(now)
/usr/bin/time -q -f '%M %U %S' -o time.out "$T" plan -f fleet.yaml >plan.out 2>&1
rc=$?
t1=$(now)
if [ "$rc" -ne 0 ]; then
	sed 's/^/  plan: /' plan.out | tail -n 15 >&2
	fail "tpuform plan exited $rc (its last lines above)"
fi
curl -s "$FAKEGCP_URL/__admin/requests" >requests.json
reqs=$(jq length requests.json)
lists=$(jq '[.[] | select(.path | endswith("/instances"))] | length' requests.json)
migs=$(jq '[.[] | select(.path | endswith("aggregated/instanceGroupManagers"))] | length' requests.json)
ops=$(jq '[.[] | select(.path | endswith("aggregated/operations"))] | length' requests.json)
other=$((reqs - lists - migs - ops))
planned=$(grep -cE 'will be updated in-place|must be replaced|will be created' plan.out)
pages=$((((per + (extra > 0)) * 4 + 499) / 500))
read -r maxrss utime stime <time.out
echo "seeded: $seeded; planned: $planned slices ($(grep -m1 '^Plan:' plan.out))"
[ "$planned" -eq "$SLICES" ] || fail "the plan has $planned of the $SLICES slices"
wall=$(secs "$t0" "$t1")
mb=$((maxrss / 1024))
echo "refresh+plan of $SLICES slices ($((SLICES * 4)) instances) in $ZONES zones: $wall s wall, CPU ${utime} s user + ${stime} s sys, peak RSS $mb MB   [aim: < 0.7 s: $(bench_aim "$wall" '<' 0.7), < 150 MB: $(bench_aim "$mb" '<' 150)]"
echo "  HTTP requests: $reqs = $lists instance list pages (zones x pages = $ZONES x $pages = $((ZONES * pages))) + $migs aggregated MIG pages ($(((SLICES + 499) / 500)) expected) + $ops aggregated operations pages + $other other   [aim: 0 other (no per-node request): $(bench_aim "$other" = 0)]"
echo "  load average before the run: $load"

#!/bin/sh
# watch keeps a Compute Engine slice group through a stockout of its only
# zone (issue 26 item 0): a `slices: 3` TPU7x group (tpu7x-standard-4t,
# 2x2x2: 2 VMs a slice, one zone) is applied; the zone is stocked out and
# one slice's VM preempted under `watch`. The slice's re-creation is refused
# (ZONE_RESOURCE_POOL_EXHAUSTED), the zone is backed off, and the rounds
# that follow skip it while the backoff lasts: watch crashed there
# (SIGSEGV, the backoff table compared a Compute Engine node's accelerator
# type, NULL, with strcmp). Once the stockout clears, watch recreates the
# lost slice (within 2 minutes, the issue's bound) and every worker runs
# again; watch is alive all along and exits 0 on SIGTERM.
# sshd workers: the 127.0.64.x block.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t640
export TPUFORM_SSH_RETRY=3
# shellcheck disable=SC2016 # expanded by the EXIT trap
GCP_WORKERS_CLEANUP='[ -n "${wpid:-}" ] && kill "$wpid" 2>/dev/null'
gcp_workers_start 10 127.0.64.1 --op-seconds 0.1 --compute-stage-seconds 0.1
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
world() { curl -s "$FAKEGCP_URL/__admin/compute"; }
instances() { world | jq -r '[.instances[]? | "\(.name):\(.status)"] | sort | join(" ")'; }
# shellcheck disable=SC2317 # called through started
starts() { cat "$W"/workers/w*/home/starts 2>/dev/null | grep -c " retry=$1\$"; }
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
cat >fleet.yaml <<YAML
fleet: bo
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
run: |
  echo "\$TPUFORM_NODE w=\$TPUFORM_WORKER_ID retry=\$TPUFORM_RETRY" >> ~/starts
  exec sleep 600
groups:
  - { name: a, machine_type: tpu7x-standard-4t, topology: 2x2x2, spot: true, zones: [us-central1-c], count: 1, slices: 3 }
YAML
all6="bo-a-0-0-001:RUNNING bo-a-0-0-002:RUNNING bo-a-0-1-001:RUNNING bo-a-0-1-002:RUNNING bo-a-0-2-001:RUNNING bo-a-0-2-002:RUNNING"

ok "apply" tpuform apply -f fleet.yaml -auto-approve
is "three slices of two VMs" "$(instances)" "$all6"
# shellcheck disable=SC2317 # called through wait_for
started() { test "$(starts "$1")" -ge 6; }
ok "the six workers run the job" wait_for 30 started 0

# ---- the zone stocks out; a VM of slice 1 is preempted -----------------------
admin "compute/zones/us-central1-c:stockout?value=details" >/dev/null
"$TPUFORM" watch -f fleet.yaml -interval 1s >watch.out 2>&1 &
wpid=$!
admin "compute/instances/us-central1-c/bo-a-0-1-002:preempt" >/dev/null
# Like wait_for, but gives up at once when watch is gone (it crashed).
# shellcheck disable=SC2317 # called through ok
# shellcheck disable=SC2317 # called through while_watching
said() { grep -Eq -- "$1" watch.out; }
ok "watch: the re-creation is refused and the zone backed off" while_watching 60 said \
	"zone us-central1-c refused \(no capacity\): backing off"
ok "watch: a later round skips the backed-off zone" while_watching 60 said "zone us-central1-c is backed off"
# shellcheck disable=SC2317 # called through while_watching
refused_twice() { test "$(grep -c 'zone us-central1-c refused (no capacity)' watch.out)" -ge 2; }
ok "watch: and tries it again once the backoff ends" while_watching 60 refused_twice
ok "watch is still running" kill -0 "$wpid"

# ---- the stockout clears: the lost slice comes back ---------------------------
admin "compute/zones/us-central1-c:stockout?value=off" >/dev/null
cleared=$(date +%s)
# shellcheck disable=SC2317 # called through while_watching
recovered() { [ "$(instances)" = "$all6" ] && started 1; }
ok "watch recreates the slice and every worker runs again" while_watching 150 recovered
took=$(($(date +%s) - cleared))
ok "within 2 minutes of the stockout's end (${took}s)" test "$took" -le 120
ok "watch is still running" kill -0 "$wpid"
kill -TERM "$wpid"
wait "$wpid"
is "watch exits 0 on SIGTERM" "$?" 0
wpid=
unlike "watch said nothing of a crash" "$(cat watch.out)" "Segmentation|AddressSanitizer|runtime error"
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

#!/bin/sh
# A slice lost from a Compute Engine multislice node is a preemption in the
# run ledger and the report (docs/ledger.md "A lost slice"), against the
# emulator with sshd workers (the 127.0.102.x block). A `slices: 2` TPU7x
# group (2 VMs and 8 chips a slice) runs; its zone is stocked out for the
# machine type and a VM of slice 1 is preempted:
#   - `apply` writes ONE `preempted` line naming slice 1 (slices "1",
#     workers 2, lost_chips 8) although its create of slice 1 is refused;
#     the next `apply`, once the stockout clears, sees the same loss again
#     and remakes slice 1; the report counts it once;
#   - then a VM of slice 0 is preempted under `watch`: watch writes one
#     `preempted` line naming slice 0 and remakes it.
# After destroy, `report -json` says 2 preemptions, 2 recoveries, and bills
# each lost slice's 8 chips only until its create made it again (the
# node's 16 chips from its create to its delete, less 8 chips from each
# loss to the `ready` of the create that remade the slice); the
# recovery's seconds (loss -> every worker runs again) are Google's
# INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION. The old code wrote no line:
# 0 preemptions, and the lost slices billed as if they ran.
# shellcheck disable=SC2317 # the helpers are called through while_watching and ok
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t870
export TPUFORM_SSH_RETRY=3
# shellcheck disable=SC2016 # expanded by the EXIT trap
GCP_WORKERS_CLEANUP='[ -n "${wpid:-}" ] && kill "$wpid" 2>/dev/null'
gcp_workers_start 12 127.0.102.1 --op-seconds 0.1 --compute-stage-seconds 0.1
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
world() { curl -s "$FAKEGCP_URL/__admin/compute"; }
instances() { world | jq -r '[.instances[]? | "\(.name):\(.status)"] | sort | join(" ")'; }
nstarts() { cat "$W"/workers/w*/home/starts 2>/dev/null | grep -c " retry=$1 "; }
L=tpuform.state.json.ledger.jsonl
# the ledger's preempted lines: cmd slices workers lost_chips
losses() { jq -r 'select(.event == "preempted") | "\(.cmd) \(.slices) \(.workers) \(.lost_chips)"' "$L" | tr '\n' ';'; }
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
cat >fleet.yaml <<YAML
fleet: sl
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
run: |
  echo "\$TPUFORM_NODE retry=\$TPUFORM_RETRY w=\$TPUFORM_WORKER_ID" >> ~/starts
  exec sleep 600
groups:
  - { name: a, machine_type: tpu7x-standard-4t, topology: 2x2x2, spot: true, zones: [us-central1-c], count: 1, slices: 2 }
YAML
all4="sl-a-0-0-001:RUNNING sl-a-0-0-002:RUNNING sl-a-0-1-001:RUNNING sl-a-0-1-002:RUNNING"

ok "apply" tpuform apply -f fleet.yaml -auto-approve
is "two slices of two VMs" "$(instances)" "$all4"
ok "the four workers run the job" wait_for 120 sh -c "test \$(cat '$W'/workers/w*/home/starts 2>/dev/null | grep -c ' retry=0 ') -ge 4"
# the jobs' job_started lines are written by the apply that started them
is "no preemption yet" "$(losses)" ""

# ---- apply: slice 1 preempted while its machine type is stocked out -------------
admin "compute/zones/us-central1-c:stockout?value=details&machine_type=tpu7x-standard-4t" >/dev/null
admin "compute/instances/us-central1-c/sl-a-0-1-002:preempt" >/dev/null
admin "compute:settle" >/dev/null
admin "compute:settle" >/dev/null
lost_at=$(date +%s)
like "plan: slice 1 is recreated" "$(tpuform plan -f fleet.yaml 2>&1)" "slice 1 of 2 is preempted: only it is recreated"
tpuform apply -f fleet.yaml -auto-approve >apply1.out 2>&1
like "apply: slice 1's create is refused (stockout)" "$(cat apply1.out)" "zone us-central1-c is out of capacity"
is "apply wrote one preempted line for slice 1: its 2 VMs and 8 chips" "$(losses)" "apply 1 2 8;"
# the lost slice stays unbilled while the zone has no capacity: long enough
# that billing it would show (8 chips x 8 s is 0.018 chip-hours)
ok "some seconds pass" wait_for 30 sh -c "test \$(date +%s) -ge $((lost_at + 8))"
admin "compute/zones/us-central1-c:stockout?value=off&machine_type=tpu7x-standard-4t" >/dev/null
ok "apply again: slice 1 is made again" tpuform apply -f fleet.yaml -auto-approve
is "four VMs again" "$(instances)" "$all4"
ok "all 4 workers run again, TPUFORM_RETRY=1" wait_for 120 sh -c "test \$(cat '$W'/workers/w*/home/starts 2>/dev/null | grep -c ' retry=1 ') -ge 4"
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode
n=$(tpuform report -f fleet.yaml -json 2>/dev/null | jq -r '.totals.preemptions')
is "report: 1 preemption, though the second apply saw the loss again" "$n" 1

# ---- watch: slice 0 preempted ----------------------------------------------------
"$TPUFORM" watch -f fleet.yaml -interval 1s -json >watch.out 2>watch.err &
wpid=$!
admin "compute/instances/us-central1-c/sl-a-0-0-001:preempt" >/dev/null
admin "compute:settle" >/dev/null
ok "watch: all 4 workers run again, TPUFORM_RETRY=2" while_watching 180 sh -c "test \$(cat '$W'/workers/w*/home/starts 2>/dev/null | grep -c ' retry=2 ') -ge 4"
ok "watch: the replaced line" while_watching 60 sh -c "jq -se 'any(.[]; .event == \"replaced\" and .cmd == \"watch\")' '$L' >/dev/null"
kill -TERM "$wpid"
wait "$wpid"
wpid=
is "watch wrote one preempted line for slice 0" "$(losses)" "apply 1 2 8;apply 1 2 8;watch 0 2 8;"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
is "no instance is left" "$(instances)" ""

# ---- the report -------------------------------------------------------------------
tpuform report -f fleet.yaml -json >report.json 2>report.err
is "report: 2 preemptions" "$(jq -r '.totals.preemptions' report.json)" 2
is "report: 2 recoveries" "$(jq -r '.totals.preemption_to_running_seconds.n' report.json)" 2
# Expected from the ledger's own times: 16 chips from the create to the
# delete, less 8 chips from each loss (ts - elapsed of its first line) to
# the ready of the create after it.
want=$(jq -rs '
	def t: (.ts | sub("\\.[0-9]+Z$"; "Z") | fromdate) + (.ts | capture("(?<f>\\.[0-9]+)Z$").f | tonumber);
	. as $all
	| (map(select(.event == "creating")) | first | t) as $c
	| (map(select(.event == "deleted")) | last | t) as $d
	| [map(select(.event == "preempted")) | unique_by(.slices) | .[] | (t - (.elapsed // 0)) as $l
	   | ([$all[] | select(.event == "ready" and t > $l) | t] | min) - $l] as $gaps
	| (16 * ($d - $c) - 8 * ($gaps | add)) / 3600' "$L")
got=$(jq -r '.totals.billed_chip_hours' report.json)
ok "report: billed chip-hours stop for each lost slice until it is made again (~$want, got $got)" \
	awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(g > 0 && d <= 2 / 3600) }'
full=$(jq -rs '(map(select(.event == "creating")) | first | .ts | sub("\\.[0-9]+Z$"; "Z") | fromdate) as $c
	| (map(select(.event == "deleted")) | last | .ts | sub("\\.[0-9]+Z$"; "Z") | fromdate) as $d | 16 * ($d - $c) / 3600' "$L")
ok "report: less than the node's 16 chips for its whole life ($got < $full - 8 chips x 8 s)" \
	awk -v g="$got" -v f="$full" 'BEGIN { exit !(g < f - 8 * 7 / 3600) }'
rec=$(jq -r '.totals.ml_goodput.badput_seconds.INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION' report.json)
ok "report: INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION seconds cover the stockout (>= 8 s, got $rec)" \
	awk -v r="$rec" 'BEGIN { exit !(r >= 8) }'
ok "report: its chip-hours too" \
	jq -e '.totals.ml_goodput.badput_chip_hours.INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION > 0' report.json
like "report: the text says 2 preemptions" "$(tpuform report -f fleet.yaml 2>&1)" "Preemptions: 2"
finish

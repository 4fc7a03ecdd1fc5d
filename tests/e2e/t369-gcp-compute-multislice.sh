#!/bin/sh
# Multislice on Compute Engine (docs/compute-engine.md "Multislice") against
# the emulator with sshd workers whose authorized_keys start empty: a group
# with `slices: 2` of tpu7x-standard-4t 2x2x2 (2 VMs a slice) is ONE node of
# 4 workers made of two MIGs, NODE-0 and NODE-1, each with its own template
# and workload policy. Every worker gets its slice (TPUFORM_SLICE_ID,
# MEGASCALE_*), its place in its slice (TPU_WORKER_ID) and its slice's
# TPU_WORKER_HOSTNAMES. Preempting a VM of slice 1 recreates slice 1 only:
# the request log shows no delete of slice 0's MIG, slice 0's VMs are the
# same, and all 4 workers restart with TPUFORM_RETRY=1.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t369
export TPUFORM_SSH_RETRY=3
gcp_workers_start 10 127.0.53.1 --op-seconds 0.1 --compute-stage-seconds 0.1
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
world() { curl -s "$FAKEGCP_URL/__admin/compute"; }
instances() { world | jq -r '[.instances[]? | "\(.name):\(.status)"] | sort | join(" ")'; }
ids_of() { world | jq -r --arg p "$1" '[.instances[]? | select(.name | startswith($p)) | .id] | sort | join(" ")'; }
parts() {
	world | jq -r '[(.instanceGroupManagers[]? | "mig:\(.name):\(.targetSize)"), (.instanceTemplates[]? | "tmpl:\(.name)"),
		(.resourcePolicies[]? | "wp:\(.name)")] | sort | join(" ")'
}
ip_of() { world | jq -r --arg n "$1" '.instances[] | select(.name == $n) | .networkInterfaces[0].networkIP'; }
starts() { cat "$W"/workers/w*/home/starts 2>/dev/null | grep " retry=$1 " | sort | tr '\n' ';'; }

cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
cat >fleet.yaml <<YAML
fleet: ms
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
env: { MEGASCALE_PORT: "9999" }
run: |
  echo "\$TPUFORM_NODE retry=\$TPUFORM_RETRY w=\$TPUFORM_WORKER_ID/\$TPUFORM_NUM_WORKERS slice=\$TPUFORM_SLICE_ID/\$TPUFORM_NUM_SLICES id=\$TPU_WORKER_ID hosts=\$TPU_WORKER_HOSTNAMES mega=\$MEGASCALE_SLICE_ID/\$MEGASCALE_NUM_SLICES@\$MEGASCALE_COORDINATOR_ADDRESS" >> ~/starts
  exec sleep 300
groups:
  - { name: a, machine_type: tpu7x-standard-4t, topology: 2x2x2, spot: true, zones: [us-central1-c], count: 1, slices: 2 }
YAML

ok "validate" tpuform validate -f fleet.yaml
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: 2 slices" "$out" "slices += 2"
like "plan: 4 workers" "$out" "workers += 4"
ok "apply" tpuform apply -f fleet.yaml -auto-approve
is "two MIGs of 2, each with its template and workload policy" "$(parts)" \
	"mig:ms-a-0-0:2 mig:ms-a-0-1:2 tmpl:ms-a-0-0-t tmpl:ms-a-0-1-t wp:ms-a-0-0-wp wp:ms-a-0-1-wp"
is "four VMs" "$(instances)" \
	"ms-a-0-0-001:RUNNING ms-a-0-0-002:RUNNING ms-a-0-1-001:RUNNING ms-a-0-1-002:RUNNING"
is "the state has ONE node of 4 workers and 2 slices" \
	"$(jq -c '[.nodes[] | [.name, .recipe.slices, .recipe.workers, (.workers | length)]]' tpuform.state.json)" \
	'[["ms-a-0",2,4,4]]'
wait_for 15 sh -c "test \"\$(cat '$W'/workers/w*/home/starts 2>/dev/null | wc -l)\" -ge 4"
a1=$(ip_of ms-a-0-0-001)
a2=$(ip_of ms-a-0-0-002)
b1=$(ip_of ms-a-0-1-001)
b2=$(ip_of ms-a-0-1-002)
is "every worker: its slice, its place in the slice, its slice's hostnames, TPUFORM_RETRY=0" "$(starts 0)" \
	"ms-a-0 retry=0 w=0/4 slice=0/2 id=0 hosts=$a1,$a2 mega=0/2@$a1;ms-a-0 retry=0 w=1/4 slice=0/2 id=1 hosts=$a1,$a2 mega=0/2@$a1;ms-a-0 retry=0 w=2/4 slice=1/2 id=0 hosts=$b1,$b2 mega=1/2@$a1;ms-a-0 retry=0 w=3/4 slice=1/2 id=1 hosts=$b1,$b2 mega=1/2@$a1;"
unlike "host keys came from every member's guest attributes" "$(cat last.out)" "trusting the key it presents on first use"
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode

# ---- slice 1 preempted: only slice 1 is recreated --------------------------------
slice0=$(ids_of ms-a-0-0-)
admin "requests:clear" >/dev/null
admin "compute/instances/us-central1-c/ms-a-0-1-002:preempt" >/dev/null
admin "compute:settle" >/dev/null
admin "compute:settle" >/dev/null
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: the node is replaced" "$out" "# ms-a-0 must be replaced"
like "plan: says slice 1 was preempted and only it is recreated" "$out" \
	"slice 1 of 2 is preempted: only it is recreated, and every worker of every slice restarts"
ok "apply" tpuform apply -f fleet.yaml -auto-approve
is "the log: slice 1's parts deleted and made again; nothing of slice 0's" \
	"$(requests | jq -r '.[] | select(.method == "DELETE" or (.method == "POST" and (.path | test("/(instanceGroupManagers|instanceTemplates|resourcePolicies|instances)$")))) | "\(.method) \(.path | sub(".*/projects/test-project/"; ""))"' | tr '\n' ';')" \
	"DELETE zones/us-central1-c/instanceGroupManagers/ms-a-0-1;DELETE global/instanceTemplates/ms-a-0-1-t;DELETE regions/us-central1/resourcePolicies/ms-a-0-1-wp;POST global/instanceTemplates;POST regions/us-central1/resourcePolicies;POST zones/us-central1-c/instanceGroupManagers;"
unlike "no request deleted slice 0's MIG" \
	"$(requests | jq -r '.[] | select(.method == "DELETE") | .path')" "instanceGroupManagers/ms-a-0-0\$"
is "slice 0 kept its VMs" "$(ids_of ms-a-0-0-)" "$slice0"
is "four VMs again" "$(instances)" \
	"ms-a-0-0-001:RUNNING ms-a-0-0-002:RUNNING ms-a-0-1-001:RUNNING ms-a-0-1-002:RUNNING"
wait_for 15 sh -c "test \"\$(cat '$W'/workers/w*/home/starts 2>/dev/null | grep -c ' retry=1 ')\" -ge 4"
b1=$(ip_of ms-a-0-1-001)
b2=$(ip_of ms-a-0-1-002)
is "all 4 workers restarted together with TPUFORM_RETRY=1" "$(starts 1)" \
	"ms-a-0 retry=1 w=0/4 slice=0/2 id=0 hosts=$a1,$a2 mega=0/2@$a1;ms-a-0 retry=1 w=1/4 slice=0/2 id=1 hosts=$a1,$a2 mega=0/2@$a1;ms-a-0 retry=1 w=2/4 slice=1/2 id=0 hosts=$b1,$b2 mega=1/2@$a1;ms-a-0 retry=1 w=3/4 slice=1/2 id=1 hosts=$b1,$b2 mega=1/2@$a1;"
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode

# ---- destroy -------------------------------------------------------------------
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
admin "compute:settle" >/dev/null
is "no instance is left" "$(instances)" ""
is "no MIG, template or workload policy is left" "$(parts)" ""
finish

#!/bin/sh
# TPU VMs on Compute Engine (issue 18, docs/compute-engine.md) against the
# emulator's Compute Engine side with sshd workers whose authorized_keys
# start EMPTY: only the emulator's guest agent writes them, from the
# instances' ssh-keys metadata (a slice's: its template's).
#   1. a single-host v6e instance (ct6e-standard-4t, spot) and a 2-VM TPU7x
#      slice (tpu7x-standard-4t, 2x2x2: template, workload policy, MIG)
#      apply; every worker runs the job with its TPU_WORKER_ID, the worker
#      count, TPU_WORKER_HOSTNAMES (the slice's addresses in worker order)
#      and TPUFORM_RETRY=0; then no changes;
#   2. one VM of the slice preempted (admin hook): plan shows the slice
#      replaced, apply replaces it, both workers run again, TPUFORM_RETRY=1;
#   3. destroy leaves no instance, MIG, template or policy;
#   4. a stockout in the first zone lands the node in the second;
#   5. a group moved from machine_type back to a Cloud TPU accelerator_type
#      with no `api` key: the node is replaced, its instance deleted.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t366
export TPUFORM_SSH_RETRY=3
# Each instance the emulator makes takes the next worker address.
gcp_workers_start 14 127.0.50.1 --op-seconds 0.1 --compute-stage-seconds 0.1
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
world() { curl -s "$FAKEGCP_URL/__admin/compute"; }
# name:status of every instance, sorted
instances() { world | jq -r '[.instances[]? | "\(.name):\(.status)"] | sort | join(" ")'; }
# what the emulator holds besides instances: MIGs, templates, policies
parts() {
	world | jq -r '[(.instanceGroupManagers[]? | "mig:\(.name)"), (.instanceTemplates[]? | "tmpl:\(.name)"),
		(.resourcePolicies[]? | "wp:\(.name)")] | sort | join(" ")'
}
# every line the jobs wrote for retry R, sorted
starts() { cat "$W"/workers/w*/home/starts 2>/dev/null | grep " retry=$1 " | sort; }
ip_of() { world | jq -r --arg n "$1" '.instances[] | select(.name == $n) | .networkInterfaces[0].networkIP'; }

cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
cat >fleet.yaml <<YAML
fleet: ce
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
run: |
  env > ~/env.\$TPUFORM_RETRY
  echo "\$TPUFORM_NODE retry=\$TPUFORM_RETRY id=\$TPU_WORKER_ID w=\$TPUFORM_WORKER_ID/\$TPUFORM_NUM_WORKERS hosts=\$TPU_WORKER_HOSTNAMES" >> ~/starts
  exec sleep 300
groups:
  - { name: one, machine_type: ct6e-standard-4t, spot: true, zones: [us-east5-b], count: 1 }
  - { name: big, machine_type: tpu7x-standard-4t, topology: 2x2x2, spot: true, zones: [us-central1-c], count: 1 }
YAML

# ---- 1. apply ----------------------------------------------------------------
is "every worker's authorized_keys starts empty" "$(cat "$W"/workers/w*/home/.ssh/authorized_keys)" ""
ok "validate" tpuform validate -f fleet.yaml
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: the slice's machine type and topology" "$out" "tpu7x-standard-4t"
like "plan: 2 workers for 2x2x2" "$out" "workers *= 2"
ok "apply" tpuform apply -f fleet.yaml -auto-approve
is "one instance and a slice of two members, all RUNNING" "$(instances)" \
	"ce-big-0-001:RUNNING ce-big-0-002:RUNNING ce-one-0:RUNNING"
is "the slice's parts: MIG, template, workload policy" "$(parts)" "mig:ce-big-0 tmpl:ce-big-0-t wp:ce-big-0-wp"
wait_for 15 sh -c "test \"\$(cat '$W'/workers/w*/home/starts 2>/dev/null | wc -l)\" -ge 3"
h1=$(ip_of ce-big-0-001)
h2=$(ip_of ce-big-0-002)
is "every worker ran with its TPU_WORKER_ID, count, hostnames, TPUFORM_RETRY=0" \
	"$(starts 0 | tr '\n' ';')" \
	"ce-big-0 retry=0 id=0 w=0/2 hosts=$h1,$h2;ce-big-0 retry=0 id=1 w=1/2 hosts=$h1,$h2;ce-one-0 retry=0 id= w=0/1 hosts=;"
i1=$(sshd_index "$h1")
like "the job's environment is in its home" "$(cat "$W/workers/w$i1/home/env.0")" "^TPU_WORKER_HOSTNAMES=$h1,$h2\$"
unlike "host keys came from guest attributes" "$(cat last.out)" "trusting the key it presents on first use"
is "each VM's host keys were read from its guest attributes, a slice's per member" \
	"$(requests | jq -r '[.[] | select(.path | endswith("/getGuestAttributes")) | .path | split("/") | .[-2]] | sort | join(" ")')" \
	"ce-big-0-001 ce-big-0-002 ce-one-0"
admin "requests:clear" >/dev/null
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode
is "a quiet plan lists, never asks per node" \
	"$(requests | jq -r '[.[] | select(.path | test("/instances/[^/]+$"))] | length')" "0"
is "a fleet all on Compute Engine sends no Cloud TPU API request" \
	"$(requests | jq '[.[] | select(.path | startswith("/v2/"))] | length')" "0"
is "preemptions are read in one aggregated call, not per node" \
	"$(requests | jq -r '[.[] | select(.path | test("operations"))] | map(.path | sub(".*/projects/test-project/"; "")) | join(" ")')" \
	"aggregated/operations"

# ---- 2. one member of the slice preempted ------------------------------------
admin "requests:clear" >/dev/null
admin "compute/instances/us-central1-c/ce-big-0-002:preempt" >/dev/null
admin "compute:settle" >/dev/null
admin "compute:settle" >/dev/null
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: the slice is replaced" "$out" "ce-big-0.*(must be replaced|replaced)"
like "plan: because it was preempted (its zone operation says so)" "$out" "\(the node is preempted\)"
unlike "plan: the single instance is left alone" "$out" "ce-one-0.*replaced"
ok "apply replaces it" tpuform apply -f fleet.yaml -auto-approve
is "the log: the MIG deleted and made again" \
	"$(requests | jq -r '.[] | select(.method == "DELETE" or (.method == "POST" and (.path | test("/(instanceGroupManagers|instanceTemplates|resourcePolicies|instances)$")))) | "\(.method) \(.path | sub(".*/projects/test-project/"; ""))"' | tr '\n' ';')" \
	"DELETE zones/us-central1-c/instanceGroupManagers/ce-big-0;DELETE global/instanceTemplates/ce-big-0-t;DELETE regions/us-central1/resourcePolicies/ce-big-0-wp;POST global/instanceTemplates;POST regions/us-central1/resourcePolicies;POST zones/us-central1-c/instanceGroupManagers;"
is "the slice is back" "$(instances)" "ce-big-0-001:RUNNING ce-big-0-002:RUNNING ce-one-0:RUNNING"
wait_for 15 sh -c "test \"\$(cat '$W'/workers/w*/home/starts 2>/dev/null | grep -c ' retry=1 ')\" -ge 2"
h1=$(ip_of ce-big-0-001)
h2=$(ip_of ce-big-0-002)
is "both workers of the slice ran again with TPUFORM_RETRY=1" "$(starts 1 | tr '\n' ';')" \
	"ce-big-0 retry=1 id=0 w=0/2 hosts=$h1,$h2;ce-big-0 retry=1 id=1 w=1/2 hosts=$h1,$h2;"
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode

# ---- 2b. a member lost without a preemption: terminated, not preempted -------------
admin "compute/instances/us-central1-c/ce-big-0-001:delete" >/dev/null
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: the slice is replaced because it was lost" "$out" "\(the node is terminated\)"
unlike "plan: not called preempted" "$out" "PREEMPTED|preempted"
ok "apply replaces it" tpuform apply -f fleet.yaml -auto-approve
is "the slice is back" "$(instances)" "ce-big-0-001:RUNNING ce-big-0-002:RUNNING ce-one-0:RUNNING"

# ---- 2c. the spot instance preempted and deleted (termination action DELETE) -------
admin "compute/instances/us-east5-b/ce-one-0:preempt" >/dev/null
admin "compute:settle" >/dev/null
admin "compute:settle" >/dev/null
is "the preempted instance is gone" "$(instances)" "ce-big-0-001:RUNNING ce-big-0-002:RUNNING"
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: created again, because it was preempted, not deleted by someone" "$out" "the node was preempted: Compute Engine deleted it"
unlike "plan: not 'deleted outside tpuform'" "$out" "deleted outside tpuform"
ok "apply creates it again" tpuform apply -f fleet.yaml -auto-approve
is "everything runs" "$(instances)" "ce-big-0-001:RUNNING ce-big-0-002:RUNNING ce-one-0:RUNNING"

# ---- 3. destroy ----------------------------------------------------------------
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
admin "compute:settle" >/dev/null
is "no instance is left" "$(instances)" ""
is "no MIG, template or policy is left" "$(parts)" ""

# ---- 4. a stockout in the first zone -----------------------------------------
admin "compute/zones/us-east5-a:stockout?value=details" >/dev/null
cat >fleet.yaml <<YAML
fleet: ce
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
run: |
  echo "\$TPUFORM_NODE retry=\$TPUFORM_RETRY" >> ~/starts
  exec sleep 300
groups:
  - { name: one, machine_type: ct6e-standard-1t, zones: [us-east5-a, us-east5-b], count: 1 }
YAML
ok "apply with the first zone stocked out" tpuform apply -f fleet.yaml -auto-approve
like "apply says the zone had no capacity" "$(cat last.out)" "zone .us-east5-a.*does not have enough resources"
is "the node landed in the second zone" \
	"$(world | jq -r '[.instances[] | "\(.name)@\(.__zone)"] | join(" ")')" "ce-one-0@us-east5-b"
is "the state says so" "$(jq -r '.nodes[] | "\(.name)@\(.recipe.zone)"' tpuform.state.json)" "ce-one-0@us-east5-b"

# ---- 5. back to the Cloud TPU API, no api key ----------------------------------
sed -i 's/machine_type: ct6e-standard-1t/accelerator_type: v6e-8, runtime_version: v2-alpha-tpuv6e/' fleet.yaml
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: the node is replaced, moving between APIs" "$out" "moving a group between APIs"
admin "requests:clear" >/dev/null
ok "apply" tpuform apply -f fleet.yaml -auto-approve
is "the Compute Engine instance was deleted" "$(instances)" ""
is "a Cloud TPU node took its place" \
	"$(curl -s "$FAKEGCP_URL/v2/projects/test-project/locations/us-east5-a/nodes" | jq -r '[.nodes[]? | .name | split("/") | last] | join(" ")')$(curl -s "$FAKEGCP_URL/v2/projects/test-project/locations/us-east5-b/nodes" | jq -r '[.nodes[]? | .name | split("/") | last] | join(" ")')" \
	"ce-one-0"
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
admin "compute:settle" >/dev/null
is "nothing is left" "$(instances)$(parts)" ""
finish

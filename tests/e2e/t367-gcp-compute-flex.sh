#!/bin/sh
# Flex-start on Compute Engine (docs/compute-engine.md "Flex-start")
# against the emulator, whose flex-start VMs wait PENDING (and a flex-start
# MIG makes no member) until the zone is granted capacity (admin hook):
#   1. a flex-start instance and a flex-start 2-VM slice whose capacity does
#      not come, beside an on-demand instance: apply exits 0, its lines name
#      each flex node and say it is waiting; the on-demand node is READY and
#      its job runs (waiting never blocks others); plan says waiting too;
#   2. past flex_start.wait (1m), plan gives them up: replaced, i.e. deleted
#      and requested again, and apply does so (new instance, new MIG);
#   3. the capacity comes: the next apply provisions them and the jobs run.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t367
export TPUFORM_SSH_RETRY=3
gcp_workers_start 12 127.0.51.1 --op-seconds 0.1 --compute-stage-seconds 0.1
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
world() { curl -s "$FAKEGCP_URL/__admin/compute"; }
instances() { world | jq -r '[.instances[]? | "\(.name):\(.status)"] | sort | join(" ")'; }
ids() { world | jq -r '[(.instances[]? | .id), (.instanceGroupManagers[]? | .id)] | sort | join(" ")'; }
migs() { world | jq -r '[.instanceGroupManagers[]? | "\(.name):\(.targetSize)"] | sort | join(" ")'; }
starts() { cat "$W"/workers/w*/home/starts 2>/dev/null | sort | tr '\n' ';'; }

cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
cat >fleet.yaml <<YAML
fleet: fx
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
run: |
  echo "\$TPUFORM_NODE w=\$TPUFORM_WORKER_ID retry=\$TPUFORM_RETRY" >> ~/starts
  exec sleep 300
groups:
  - { name: now, machine_type: ct6e-standard-1t, zones: [us-east5-b], count: 1 }
  - name: flex
    machine_type: ct6e-standard-1t
    zones: [us-central1-a]
    count: 1
    flex_start: { max_run_duration: 24h, wait: 1m }
  - name: big
    machine_type: tpu7x-standard-4t
    topology: 2x2x2
    zones: [us-central1-a]
    count: 1
    flex_start: { max_run_duration: 24h, wait: 1m }
YAML

# ---- 1. no capacity: waiting, never blocking -----------------------------------
t0=$(date +%s)
ok "apply exits 0 while flex-start nodes wait" tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "apply: the flex instance's line says it is waiting" "$out" "fx-flex-0: .*waiting for flex-start capacity in zone us-central1-a"
like "apply: the flex slice's line says it is waiting" "$out" "fx-big-0: .*waiting for flex-start capacity in zone us-central1-a"
like "apply: the on-demand node is provisioned" "$out" "fx-now-0"
is "the flex instance waits PENDING; the slice's MIG has no member" "$(instances)" "fx-flex-0:PENDING fx-now-0:RUNNING"
is "the flex slice's MIG exists" "$(migs)" "fx-big-0:2"
wait_for 15 sh -c "test -n \"\$(cat '$W'/workers/w*/home/starts 2>/dev/null)\""
is "the on-demand node's job ran: nothing waited for the flex nodes" "$(starts)" "fx-now-0 w=0 retry=0;"
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: the flex instance is waiting" "$out" "fx-flex-0.*waiting for flex-start capacity in zone us-central1-a \\([0-9ms.]+ of flex_start.wait 1m0s"
like "plan: the flex slice is waiting" "$out" "fx-big-0.*waiting for flex-start capacity"
unlike "plan: nothing to replace yet" "$out" "must be replaced"
ok "a second apply still exits 0" tpuform apply -f fleet.yaml -auto-approve
ids1=$(ids)

# ---- 2. past flex_start.wait: given up, requested again ---------------------------
sleep $((t0 + 62 - $(date +%s)))
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: the flex instance is replaced" "$out" "# fx-flex-0 must be replaced"
like "plan: the flex slice is replaced" "$out" "# fx-big-0 must be replaced"
like "plan: because each was given up" "$out" "waited 1m[0-9.]+s for flex-start capacity in zone us-central1-a, flex_start.wait is 1m0s: given up, so it is deleted and requested again"
like "plan: 2 to replace" "$out" "Plan: 2 to add, 0 to change, 2 to destroy"
admin "requests:clear" >/dev/null
ok "apply gives them up and requests them again, exit 0" tpuform apply -f fleet.yaml -auto-approve
is "the log: each deleted and requested again" \
	"$(requests | jq -r '.[] | select(.method == "DELETE" or (.method == "POST" and (.path | test("/(instanceGroupManagers|instances)$")))) | "\(.method) \(.path | sub(".*/projects/test-project/"; ""))"' | sort | tr '\n' ';')" \
	"DELETE global/instanceTemplates/fx-big-0-t;DELETE regions/us-central1/resourcePolicies/fx-big-0-wp;DELETE zones/us-central1-a/instanceGroupManagers/fx-big-0;DELETE zones/us-central1-a/instances/fx-flex-0;POST zones/us-central1-a/instanceGroupManagers;POST zones/us-central1-a/instances;"
ids2=$(ids)
unlike "new resources, not the old ones" "$ids2" "^$ids1\$"
is "waiting again" "$(instances) $(migs)" "fx-flex-0:PENDING fx-now-0:RUNNING fx-big-0:2"

# ---- 3. the capacity comes -------------------------------------------------------
admin "compute/zones/us-central1-a:flex?value=grant" >/dev/null
admin "compute:settle" >/dev/null
ok "apply once the capacity came" tpuform apply -f fleet.yaml -auto-approve
wait_for 15 sh -c "test \"\$(cat '$W'/workers/w*/home/starts 2>/dev/null | wc -l)\" -ge 4"
# the given-up nodes were replaced: their jobs start as the next generation
is "every job ran" "$(starts)" "fx-big-0 w=0 retry=1;fx-big-0 w=1 retry=1;fx-flex-0 w=0 retry=1;fx-now-0 w=0 retry=0;"
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
admin "compute:settle" >/dev/null
is "nothing is left" "$(instances)$(migs)" ""
finish

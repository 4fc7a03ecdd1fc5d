#!/bin/sh
# Ownership at delete time (docs/design.md section 4, providers/provider.h
# tpf_delete_check; docs/compute-engine.md "Undo and ownership of a slice's
# parts"): "ownership must mean this state, not this name".
#   a. state one's destroy has refreshed and planned, and waits for its
#      "yes"; meanwhile its node is deleted behind its back and state two
#      (same fleet file, another directory) makes a node of the same name.
#      Approved, the destroy reads the node again and refuses the delete
#      with two's lineage in the message; two's node survives with the
#      same id. A delete plan one saved before, applied now, refuses too
#      (its refresh sees two's node), and so does a fresh destroy.
#   b. a Compute Engine slice whose instance template name is taken by
#      another state's template (two's slice, its MIG gone): one's create
#      fails, naming the template and its lineage, and deletes nothing of
#      two's (the template keeps its id) nor anything it did not make.
#   c. crash recovery: two's slice, its MIG gone (as if an apply stopped
#      after the template and the workload policy), is finished by two's
#      next apply, which reuses the template and the policy (they carry
#      two's lineage); destroy then deletes every part.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t316
export TPUFORM_ACCESS_TOKEN=test-token TPUFORM_SSH_RETRY=3
# Each VM the emulator makes takes the next worker address.
gcp_workers_start 12 127.0.116.1 --project test-project --op-seconds 0.1 --compute-stage-seconds 0.1
CE="$FAKEGCP_URL/compute/v1/projects/test-project"
world() { curl -s "$FAKEGCP_URL/__admin/compute"; }
node_json() { curl -s "$FAKEGCP_URL/__admin/nodes" | jq -c '.[] | select(.name | endswith("/dd-a-0"))'; }
parts() {
	world | jq -r '[(.instanceGroupManagers[]? | "mig:\(.name)"), (.instanceTemplates[]? | "tmpl:\(.name)"),
		(.resourcePolicies[]? | "wp:\(.name)")] | sort | join(" ")'
}
part_of() { world | jq -c --arg k "$1" --arg n "$2" '.[$k][]? | select(.name == $n)'; }
api() { curl -s -X "$1" -H "Authorization: Bearer $TPUFORM_ACCESS_TOKEN" "$2"; }
lineage_of() { jq -r .lineage "$1" | tr -d - | cut -c1-16; }
# The state of fleet ds is ds.state.json (a state file holds one fleet).
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
cat >fleet.yaml <<YAML
fleet: dd
provider:
  gcp: { project: test-project }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [z-ok], count: 1 }
YAML
sed 's/fleet: dd/fleet: ds\nstate: { path: ds.state.json }/; /name: a,/d' fleet.yaml >slice.yaml
cat >>slice.yaml <<'YAML'
  - { name: big, machine_type: tpu7x-standard-4t, topology: 2x2x2, zones: [us-central1-c], count: 1 }
YAML
mkdir one two
cp fleet.yaml slice.yaml one/
cp fleet.yaml slice.yaml two/

# ---- a. a delete meets a node another state made since the refresh ---------------
cd one || exit 1
ok "one applies fleet dd" tpuform apply -f fleet.yaml -auto-approve
lin1=$(lineage_of tpuform.state.json)
id1=$(node_json | jq -r .id)
sed 's/count: 1 }/count: 0 }/' fleet.yaml >shrunk.yaml
ok "one saves a plan that deletes its node" tpuform plan -f shrunk.yaml -out=shrink.plan
like "the plan destroys dd-a-0" "$(cat "$W/last.out")" "dd-a-0 will be destroyed"

# destroy refreshes, plans and asks; while it waits for the answer, the node
# is deleted behind its back and two makes one of the same name.
# The prompt needs a terminal: script(1) gives it one, fed from a FIFO.
mkfifo answer
script -qfec "'$TPUFORM' destroy -f fleet.yaml" /dev/null <answer >destroy.out 2>&1 &
pid=$!
exec 3>answer
ok "one's destroy asks for its approval" wait_for 120 grep -q "Enter a value" destroy.out
like "having planned on its own node" "$(cat destroy.out)" "dd-a-0 will be destroyed"
curl -s -X POST "$FAKEGCP_URL/__admin/nodes/z-ok/dd-a-0:delete" >/dev/null
wait_for 10 sh -c "[ -z \"\$(curl -s '$FAKEGCP_URL/__admin/nodes' | jq -c '.[] | select(.name | endswith(\"/dd-a-0\"))')\" ]"
is "the node is deleted behind one's back" "$(node_json)" ""
cd ../two || exit 1
ok "two makes a node of the same name" tpuform apply -f fleet.yaml -auto-approve
lin2=$(lineage_of tpuform.state.json)
id2=$(node_json | jq -r .id)
is "it carries two's lineage" "$(node_json | jq -r '.labels["tpuform-lineage"]')" "$lin2"
is "and a new id" "$([ "$id1" != "$id2" ] && echo differs)" differs
cd ../one || exit 1
curl -s -X POST "$FAKEGCP_URL/__admin/requests:clear" >/dev/null
echo yes >&3
exec 3>&-
wait $pid
is "one's destroy, approved now, fails" "$?" 1
out=$(cat destroy.out)
like "refusing the delete, naming the node, its zone and two's lineage" "$out" \
	"refusing to delete node 'dd-a-0' in zone 'z-ok': it belongs to another state: it carries tpuform-lineage=$lin2, and this state's is $lin1"
like "with the fix" "$out" "Run 'tpuform plan' again"
is "it read the node and sent no delete" \
	"$(curl -s "$FAKEGCP_URL/__admin/requests" | jq -r '[.[] | select(.path | endswith("/nodes/dd-a-0")) | .method] | join(" ")')" "GET"
is "two's node survives: same id, READY" "$(node_json | jq -r '"\(.id) \(.state)"')" "$id2 READY"

fails "one's saved delete plan, applied later, refuses too (at its refresh)" 1 \
	tpuform apply -f shrunk.yaml shrink.plan
like "as another state's node" "$(cat "$W/last.out")" \
	"node 'dd-a-0' in zone 'z-ok' belongs to another state: it carries tpuform-lineage=$lin2"
fails "a fresh destroy from one refuses too" 1 tpuform destroy -f fleet.yaml -auto-approve
like "as another state's node" "$(cat "$W/last.out")" "belongs to another state"
is "two's node still survives" "$(node_json | jq -r '"\(.id) \(.state)"')" "$id2 READY"
is "no delete request ever reached the API" \
	"$(curl -s "$FAKEGCP_URL/__admin/requests" | jq '[.[] | select(.method == "DELETE")] | length')" 0
cd ../two || exit 1
ok "two destroys its own node" tpuform destroy -f fleet.yaml -auto-approve
is "it is gone" "$(node_json)" ""

# ---- b. a slice create meets another state's template --------------------------
ok "two applies a slice" tpuform apply -f slice.yaml -auto-approve
lin2=$(lineage_of ds.state.json)
is "its parts" "$(parts)" "mig:ds-big-0 tmpl:ds-big-0-t wp:ds-big-0-wp"
tid=$(part_of instanceTemplates ds-big-0-t | jq -r .id)
wid=$(part_of resourcePolicies ds-big-0-wp | jq -r .id)
is "its template carries two's lineage" \
	"$(part_of instanceTemplates ds-big-0-t | jq -r '.properties.labels["tpuform-lineage"]')" "$lin2"
like "its workload policy records two's lineage in its description" \
	"$(part_of resourcePolicies ds-big-0-wp | jq -r .description)" "\"tpuform-lineage\":\"$lin2\""
api DELETE "$CE/zones/us-central1-c/instanceGroupManagers/ds-big-0" >/dev/null
wait_for 20 sh -c "[ \"\$(curl -s '$FAKEGCP_URL/__admin/compute' | jq '[.instanceGroupManagers[]?, .instances[]?] | length')\" = 0 ]"
is "two's MIG is gone; its template and policy stay" "$(parts)" "tmpl:ds-big-0-t wp:ds-big-0-wp"
cd ../one || exit 1
curl -s -X POST "$FAKEGCP_URL/__admin/requests:clear" >/dev/null
fails "one's slice create fails on two's template" 1 tpuform apply -f slice.yaml -auto-approve
lin1=$(lineage_of ds.state.json)
out=$(cat "$W/last.out")
like "naming the template and two's lineage" "$out" \
	"its instance template 'ds-big-0-t' already exists and is not this state's: it carries tpuform-lineage=$lin2, and this state's is $lin1"
is "two's template survives with the same id, and its policy" \
	"$(part_of instanceTemplates ds-big-0-t | jq -r .id) $(parts)" "$tid tmpl:ds-big-0-t wp:ds-big-0-wp"
is "one sent no delete at all" \
	"$(curl -s "$FAKEGCP_URL/__admin/requests" | jq '[.[] | select(.method == "DELETE")] | length')" 0

# ---- c. crash recovery: a state's own half-made slice is finished ---------------
cd ../two || exit 1
ok "two's next apply finishes its slice" tpuform apply -f slice.yaml -auto-approve
is "every part once" "$(parts)" "mig:ds-big-0 tmpl:ds-big-0-t wp:ds-big-0-wp"
is "the template and the policy were reused (same ids)" \
	"$(part_of instanceTemplates ds-big-0-t | jq -r .id) $(part_of resourcePolicies ds-big-0-wp | jq -r .id)" \
	"$tid $wid"
is "the slice's members run" \
	"$(world | jq -r '[.instances[]? | "\(.name):\(.status)"] | sort | join(" ")')" \
	"ds-big-0-001:RUNNING ds-big-0-002:RUNNING"
fails "no change is left" 0 tpuform plan -f slice.yaml -detailed-exitcode
ok "destroy" tpuform destroy -f slice.yaml -auto-approve
is "deletes every part" "$(parts)" ""
finish

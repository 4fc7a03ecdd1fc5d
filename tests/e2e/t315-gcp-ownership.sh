#!/bin/sh
# Ownership is this state, not this name (docs/state.md "What a fleet owns",
# plan/ownership.h). Two directories hold the same fleet file (fleet `dup`)
# with two states. The first applies; the second's plan, apply and destroy
# must stop with the lineage error and touch nothing of the first. Then the
# first fleet's node loses its lineage label, as a node an earlier tpuform
# made: the second state still refuses it (and says how to import it), and
# the first state, which lists it, labels it in place without replacing it.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t315
export TPUFORM_ACCESS_TOKEN=test-token TPUFORM_SSH_RETRY=2
gcp_workers_start 4 127.0.49.1 --project test-project --op-seconds 0.2
API="$FAKEGCP_URL/v2/projects/test-project/locations"
node_json() { curl -s "$FAKEGCP_URL/__admin/nodes" | jq -c '.[] | select(.name | endswith("/dup-a-0"))'; }

cat >fleet.yaml <<'YAML'
fleet: dup
provider:
  gcp: { project: test-project }
ssh: { user: root, private_key: "@KEY@", port: @PORT@ }
run: exec sleep 300
groups:
  - name: a
    accelerator_type: v2-8
    runtime_version: tpu-ubuntu2204-base
    zones: [z-ok]
    count: 1
YAML
sed -i "s|@KEY@|$SSHD_KEY|; s|@PORT@|$SSHD_PORT|" fleet.yaml
mkdir one two
cp fleet.yaml one/
cp fleet.yaml two/

cd one || exit 1
ok "the first state applies fleet dup" tpuform apply -f fleet.yaml -auto-approve
lin=$(jq -r .lineage tpuform.state.json | tr -d - | cut -c1-16)
id=$(node_json | jq -r .id)
is "its node carries the first state's lineage label" \
	"$(node_json | jq -r '.labels["tpuform-lineage"]')" "$lin"

cd ../two || exit 1
fails "a second state of the same fleet name: plan stops" 1 tpuform plan -f fleet.yaml
out=$(cat "$W/last.out")
like "the error names the node, its zone and the other lineage" "$out" \
	"node 'dup-a-0' in zone 'z-ok' belongs to another state: it carries tpuform-lineage=$lin"
like "and the fix" "$out" "Rename 'fleet' in this fleet file, or"
unlike "no action is planned on it" "$out" "Plan:|must be replaced|will be destroyed|orphan"
fails "apply stops too" 1 tpuform apply -f fleet.yaml -auto-approve
like "with the same error" "$(cat "$W/last.out")" "belongs to another state"
fails "destroy stops too" 1 tpuform destroy -f fleet.yaml -auto-approve
like "with the same error" "$(cat "$W/last.out")" "belongs to another state"
unlike "destroy deleted nothing" "$(cat "$W/last.out")" "Destroying|Destruction complete"
fails "watch stops rather than fight it" 1 tpuform watch -f fleet.yaml -interval 1s -rounds 3
like "with the same error" "$(cat "$W/last.out")" "belongs to another state"
is "the first fleet's node is untouched: same id, READY" \
	"$(node_json | jq -r '"\(.id) \(.state)"')" "$id READY"

cd ../one || exit 1
fails "the first state sees no change" 0 tpuform plan -f fleet.yaml -detailed-exitcode

# A node an earlier tpuform made: no lineage label.
code=$(curl -s -o "$W/patch.out" -w '%{http_code}' -X PATCH -H 'Content-Type: application/json' \
	-H "Authorization: Bearer $TPUFORM_ACCESS_TOKEN" \
	-d '{"labels":{"tpuform-fleet":"dup","tpuform-group":"a","tpuform-index":"0"}}' \
	"$API/z-ok/nodes/dup-a-0?updateMask=labels")
is "nodes.patch of its labels is accepted" "$code" 200
# The patch is a long-running operation.
wait_for 10 sh -c "curl -s '$FAKEGCP_URL/__admin/nodes' | jq -e '.[] | select(.name | endswith(\"/dup-a-0\")) | .labels[\"tpuform-lineage\"] == null'"
is "the node has lost its lineage label" "$(node_json | jq -r '.labels["tpuform-lineage"] // "none"')" none

cd ../two || exit 1
fails "a state that does not list an unlabelled node refuses it" 1 tpuform plan -f fleet.yaml
like "and says how to adopt it if it is this fleet's" "$(cat "$W/last.out")" \
	"no tpuform-lineage label.*|tpuform import dup-a-0 z-ok/dup-a-0"

cd ../one || exit 1
fails "the state that lists it plans a labels update in place" 2 tpuform plan -f fleet.yaml -detailed-exitcode
out=$(cat "$W/last.out")
like "adding the lineage label" "$out" "tpuform-lineage"
unlike "not a replacement" "$out" "must be replaced"
ok "apply labels it" tpuform apply -f fleet.yaml -auto-approve
is "the node carries the lineage label again, same id" \
	"$(node_json | jq -r '"\(.id) \(.labels["tpuform-lineage"])"')" "$id $lin"
ok "destroy from the owning state" tpuform destroy -f fleet.yaml -auto-approve
is "deletes it" "$(node_json)" ""
finish

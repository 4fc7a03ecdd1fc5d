#!/bin/sh
# The targeted operations Terraform users reach for (docs/commands.md "Commands",
# docs/terraform-behaviour.md section 5), on the local provider:
# -target on plan, apply and destroy, and a saved plan that carries it;
# -replace (generation + 1, TPUFORM_RETRY=1); -refresh-only on plan and
# apply (a node deleted behind tpuform's back, a labelled node missing
# from state, a moved id: the state follows, no node is touched);
# `tpuform import` of a node created by hand; `show -json PLANFILE`.
# Then import through the Cloud TPU API emulator, which must see no read
# or write of an unlabelled node other than the one named.
. "$(dirname "$0")/lib.sh"
setup_dir t260

cat >fleet.yaml <<'YAML'
fleet: tg
provider:
  local: { root: nodes, create_delay: 0.1s }
run: 'echo "retry=$TPUFORM_RETRY"; exec sleep 300'
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 2 }
  - { name: b, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
state_nodes() { tpuform state list -f fleet.yaml | tr '\n' ' '; }
state_field() { jq -r --arg n "$1" ".nodes[] | select(.name == \$n) | .$2" tpuform.state.json; }
node_id() { jq -r .id "nodes/nodes/$1/node.json"; }
# shellcheck disable=SC2317 # called through wait_for
log_has() { tpuform logs -f fleet.yaml "$1" 2>/dev/null | grep -q "$2"; }

# ---- -target ----------------------------------------------------------------
out=$(tpuform plan -f fleet.yaml -target=tg-a-1 2>&1)
like "-target: the plan has the targeted node" "$out" "# tg-a-1 will be created"
unlike "and no other" "$out" "# tg-(a-0|b-0) will"
like "counted alone" "$out" "^Plan: 1 to add, 0 to change, 0 to destroy\.$"
like "Terraform's warning follows the plan" "$out" "Warning: Resource targeting is in effect"
like "saying -target is not for routine use" "$out" "The -target option is not for routine use"
out=$(tpuform plan -f fleet.yaml -target=b 2>&1)
like "a group name targets its nodes" "$out" "# tg-b-0 will be created"
unlike "and only them" "$out" "# tg-a-[01] will"
is "-json: one planned_change" \
	"$(tpuform plan -f fleet.yaml -json -target=tg-a-1 -target=tg-a-1 2>/dev/null | jq -r 'select(.type == "planned_change") | .change.resource.addr')" "tg-a-1"
fails "an unknown -target is an error" 1 tpuform plan -f fleet.yaml -target=tg-a-9
like "naming it and the nodes there are" "$(cat last.out)" "-target: no node or group 'tg-a-9' in fleet 'tg'.*|The nodes of fleet 'tg' are: tg-a-0, tg-a-1, tg-b-0"
fails "an empty -target is an error" 1 tpuform plan -f fleet.yaml -target=

ok "apply -target" tpuform apply -f fleet.yaml -auto-approve -target=tg-a-1
out=$(cat last.out)
like "creates only the target" "$out" "Apply complete! Resources: 1 added, 0 changed, 0 destroyed\."
like "and warns that the apply may be incomplete" "$out" "Warning: Applied changes may be incomplete"
like "saying how to check" "$out" "    tpuform plan"
is "only the target is in state" "$(state_nodes)" "tg-a-1 "
ok "and only it exists" test -d nodes/nodes/tg-a-1 -a ! -e nodes/nodes/tg-a-0 -a ! -e nodes/nodes/tg-b-0

ok "plan -target=b -out saves a targeted plan" tpuform plan -f fleet.yaml -target=b -out=b.plan
show=$(tpuform show -f fleet.yaml -json b.plan)
is "show -json PLANFILE: Terraform's format_version" "$(printf '%s' "$show" | jq -r .format_version)" "1.2"
is "it carries the targets" "$(printf '%s' "$show" | jq -c .targets)" '["b"]'
is "resource_changes: the targeted create only" \
	"$(printf '%s' "$show" | jq -c '[.resource_changes[] | [.address, .change.actions]]')" '[["tg-b-0",["create"]]]'
is "a targeted plan is not complete" "$(printf '%s' "$show" | jq -c '[.complete, .applyable, .errored, .plan_mode]')" \
	'[false,true,false,"normal"]'
is "it names the fleet, lineage and serial of its state" \
	"$(printf '%s' "$show" | jq -r '[.fleet, .serial == (input | .serial), .lineage == (input | .lineage)] | @tsv' - tpuform.state.json tpuform.state.json)" \
	"tg	true	true"
like "show PLANFILE renders it for people" "$(tpuform show -f fleet.yaml b.plan)" "# tg-b-0 will be created"
fails "apply PLANFILE refuses planning options" 1 tpuform apply -f fleet.yaml -target=tg-a-0 b.plan
like "saying the saved plan is applied as planned" "$(cat last.out)" "cannot be used with a saved plan"
ok "apply the saved targeted plan" tpuform apply -f fleet.yaml b.plan
like "it warns that the apply may be incomplete" "$(cat last.out)" "Applied changes may be incomplete"
is "exactly the target was added" "$(state_nodes)" "tg-a-1 tg-b-0 "
ok "tg-a-0 still does not exist" test ! -e nodes/nodes/tg-a-0

out=$(tpuform plan -f fleet.yaml -destroy -target=tg-b-0 2>&1)
like "plan -destroy -target" "$out" "# tg-b-0 will be destroyed"
unlike "destroys nothing else" "$out" "# tg-a-1 will be destroyed"
ok "destroy -target" tpuform destroy -f fleet.yaml -auto-approve -target=tg-b-0
like "destroys one node" "$(cat last.out)" "Destroy complete! Resources: 1 destroyed\."
is "the other stays" "$(state_nodes)" "tg-a-1 "
ok "its directory is gone" test ! -e nodes/nodes/tg-b-0
ok "apply the rest" tpuform apply -f fleet.yaml -auto-approve
is "all three nodes" "$(state_nodes)" "tg-a-0 tg-a-1 tg-b-0 "

# ---- -replace ---------------------------------------------------------------
ok "tg-a-0's job runs with retry 0" wait_for 10 log_has tg-a-0 "retry=0"
old_id=$(node_id tg-a-0)
out=$(tpuform plan -f fleet.yaml -replace=tg-a-0 2>&1)
like "-replace: Terraform's header" "$out" "# tg-a-0 will be replaced, as requested"
like "a -/+ block" "$out" '^-/\+ node "tg-a-0" \{$'
like "with the reason" "$out" "# \(requested with -replace\)"
like "the id goes" "$out" "~ id = \"$old_id\" -> \(known after apply\)"
like "counted as an add and a destroy" "$out" "Plan: 1 to add, 0 to change, 1 to destroy\."
is "-json: action replace, reason replace_by_request" \
	"$(tpuform plan -f fleet.yaml -json -replace=tg-a-0 2>/dev/null | jq -r 'select(.type == "planned_change") | "\(.change.resource.addr) \(.change.action) \(.change.reason)"')" \
	"tg-a-0 replace replace_by_request"
ok "plan -replace -out" tpuform plan -f fleet.yaml -replace=tg-a-0 -out=r.plan
is "show -json: delete then create, Terraform's action_reason" \
	"$(tpuform show -f fleet.yaml -json r.plan | jq -c '[.resource_changes[] | [.address, .change.actions, .action_reason, .change.before.id]]')" \
	"[[\"tg-a-0\",[\"delete\",\"create\"],\"replace_by_request\",\"$old_id\"]]"
fails "-replace with -destroy is refused" 1 tpuform plan -f fleet.yaml -destroy -replace=tg-a-0
like "as Terraform: Unsupported plan mode" "$(cat last.out)" "Unsupported plan mode"
fails "an unknown -replace is an error" 1 tpuform plan -f fleet.yaml -replace=zz
like "naming it" "$(cat last.out)" "-replace: no node or group 'zz'"
ok "apply -replace" tpuform apply -f fleet.yaml -auto-approve -replace=tg-a-0
like "re-creates it" "$(cat last.out)" "Apply complete! Resources: 1 added, 0 changed, 1 destroyed\."
new_id=$(node_id tg-a-0)
ok "it has a new id" test "$new_id" != "$old_id"
is "the state records it" "$(state_field tg-a-0 id)" "$new_id"
is "generation + 1" "$(state_field tg-a-0 generation)" 1
ok "its job runs with TPUFORM_RETRY=1" wait_for 10 log_has tg-a-0 "retry=1"
fails "the others are as declared" 0 tpuform plan -f fleet.yaml -detailed-exitcode

# ---- -refresh-only ------------------------------------------------------------
gone_id=$(node_id tg-a-1)
rm -rf nodes/nodes/tg-a-1 # deleted behind tpuform's back
serial=$(jq .serial tpuform.state.json)
out=$(tpuform plan -f fleet.yaml -refresh-only 2>&1)
like "-refresh-only: Terraform's note" "$out" "^Note: Objects have changed outside of tpuform$"
like "the deleted node" "$out" "# tg-a-1 has been deleted"
like "its id goes from the state" "$out" "- id   = \"$gone_id\" -> null"
like "nothing will be undone" "$out" "This is a refresh-only plan, so tpuform will not take any actions to undo these\."
unlike "no create is planned" "$out" "will be created|to add"
fails "-detailed-exitcode: 2, the state would change" 2 tpuform plan -f fleet.yaml -refresh-only -detailed-exitcode
is "-json: a resource_drift message" \
	"$(tpuform plan -f fleet.yaml -refresh-only -json 2>/dev/null | jq -r 'select(.type == "resource_drift") | "\(.change.resource.addr) \(.change.action)"')" \
	"tg-a-1 delete"
fails "-refresh-only with -refresh=false is refused" 1 tpuform plan -f fleet.yaml -refresh-only -refresh=false
like "tpuform would have nothing to do" "$(cat last.out)" "would have nothing to do"
fails "-refresh-only with -destroy is refused" 1 tpuform plan -f fleet.yaml -refresh-only -destroy
is "plans wrote nothing" "$(jq .serial tpuform.state.json)" "$serial"
if command -v script >/dev/null; then
	printf 'no\n' | script -qec "\"$TPUFORM\" apply -f fleet.yaml -refresh-only" /dev/null >ro.out 2>&1
	is "apply -refresh-only asks first; 'no' exits 1" "$?" 1
	like "Terraform's question about the state" "$(cat ro.out)" "Would you like to update the tpuform state to reflect these detected changes\?"
	like "saying no node is modified" "$(cat ro.out)" "without modifying any real infrastructure"
	is "'no' wrote nothing" "$(jq .serial tpuform.state.json)" "$serial"
fi
ok "apply -refresh-only" tpuform apply -f fleet.yaml -refresh-only -auto-approve
like "changes no node" "$(cat last.out)" "Apply complete! Resources: 0 added, 0 changed, 0 destroyed\."
is "the deleted node left the state" "$(state_nodes)" "tg-a-0 tg-b-0 "
ok "and was not created again" test ! -e nodes/nodes/tg-a-1
ok "the state was written once" test "$(jq .serial tpuform.state.json)" -eq $((serial + 1))
like "now nothing differs" "$(tpuform plan -f fleet.yaml -refresh-only 2>&1)" "No changes\. Your infrastructure still matches the configuration\."
like "a normal plan creates it again" "$(tpuform plan -f fleet.yaml 2>&1)" "# tg-a-1 will be created"

ok "state rm tg-b-0 (it keeps its labels)" tpuform state rm -f fleet.yaml tg-b-0
out=$(tpuform plan -f fleet.yaml -refresh-only 2>&1)
like "a labelled node missing from state is found" "$out" "# tg-b-0 has been found"
ok "plan -refresh-only -out saves it" tpuform plan -f fleet.yaml -refresh-only -out=ro.plan
is "show -json: a refresh-only plan, its drift" \
	"$(tpuform show -f fleet.yaml -json ro.plan | jq -c '[.plan_mode, [.resource_drift[] | [.address, .change.actions]], (.resource_changes | length)]')" \
	'["refresh-only",[["tg-b-0",["create"]]],0]'
ok "applying the saved refresh-only plan records it" tpuform apply -f fleet.yaml ro.plan
like "and changes no node" "$(cat last.out)" "Apply complete! Resources: 0 added, 0 changed, 0 destroyed\."
is "it is in state again" "$(state_nodes)" "tg-a-0 tg-b-0 "
is "with its live id" "$(state_field tg-b-0 id)" "$(node_id tg-b-0)"
is "its group and index" "$(state_field tg-b-0 group)/$(state_field tg-b-0 index)" "b/0"

jq '(.nodes[] | select(.name == "tg-a-0") | .id) = "123"' tpuform.state.json >st.tmp && mv st.tmp tpuform.state.json
out=$(tpuform plan -f fleet.yaml -refresh-only 2>&1)
like "an id that moved: the node has changed" "$out" "# tg-a-0 has changed"
like "from the state's id to the live one" "$out" "~ id = \"123\" -> \"$new_id\""
ok "apply -refresh-only writes it" tpuform apply -f fleet.yaml -refresh-only -auto-approve
is "the state has the live id" "$(state_field tg-a-0 id)" "$new_id"
is "the node was not touched" "$(node_id tg-a-0)" "$new_id"

# ---- import -------------------------------------------------------------------
ok "a node created by hand, without labels" tpuform local create-unlabelled -f fleet.yaml tg-a-1
hand_id=$(node_id tg-a-1)
is "it carries no label" "$(jq -c .labels nodes/nodes/tg-a-1/node.json)" "{}"
like "tpuform does not see it" "$(tpuform plan -f fleet.yaml 2>&1)" "# tg-a-1 will be created"
ok "import tg-a-1 z1/tg-a-1" tpuform import -f fleet.yaml tg-a-1 z1/tg-a-1
out=$(cat last.out)
like "Terraform's progress lines" "$out" "^tg-a-1: Importing from ID \"z1/tg-a-1\"\.\.\.$"
like "the id it found" "$out" "^tg-a-1: Refreshing state\.\.\. \[id=$hand_id\]$"
like "Import successful!" "$out" "^Import successful!$"
like "now managed by tpuform" "$out" "These resources are now in your tpuform state and will henceforth be managed by tpuform\."
is "it got the fleet's labels" "$(jq -c .labels nodes/nodes/tg-a-1/node.json)" \
	'{"tpuform-fleet":"tg","tpuform-group":"a","tpuform-index":"1","tpuform-lineage":"'"$(lineage_label tpuform.state.json)"'"}'
is "it is in state with its id" "$(state_field tg-a-1 id)" "$hand_id"
is "as group a, index 1, generation 0" \
	"$(state_field tg-a-1 group)/$(state_field tg-a-1 index)/$(state_field tg-a-1 generation)" "a/1/0"
out=$(tpuform plan -f fleet.yaml 2>&1)
unlike "the next plan creates nothing" "$out" "will be created|will be replaced"
like "it provisions its workers" "$out" "# tg-a-1 will be updated in-place"
fails "importing a node already in state is refused" 1 tpuform import -f fleet.yaml tg-a-1 z1/tg-a-1
like "as Terraform" "$(cat last.out)" "Resource already managed by tpuform"
like "saying how to import anyway" "$(cat last.out)" "tpuform state rm tg-a-1"
fails "importing an undeclared node is refused" 1 tpuform import -f fleet.yaml tg-a-7 z1/tg-a-7
like "naming it" "$(cat last.out)" "node 'tg-a-7' is not declared by fleet 'tg'"
ok "state rm tg-b-0" tpuform state rm -f fleet.yaml tg-b-0
fails "no such node in that zone" 1 tpuform import -f fleet.yaml tg-b-0 z9/tg-b-0
like "Cannot import non-existent remote object" "$(cat last.out)" "Cannot import non-existent remote object"
fails "an ID that is not ZONE/NAME" 1 tpuform import -f fleet.yaml tg-b-0 tg-b-0
like "is refused" "$(cat last.out)" "invalid import ID 'tg-b-0': expected ZONE/NAME"
fails "a NAME other than NODE" 1 tpuform import -f fleet.yaml tg-b-0 z1/tg-a-0
like "is refused" "$(cat last.out)" "the names differ"
fails "import needs two arguments" 1 tpuform import -f fleet.yaml tg-b-0
ok "a labelled node can be imported too" tpuform import -f fleet.yaml tg-b-0 z1/tg-b-0
ok "apply provisions the imported node" tpuform apply -f fleet.yaml -auto-approve
ok "its job runs" wait_for 10 log_has tg-a-1 "retry=0"
fails "the fleet is as declared" 0 tpuform plan -f fleet.yaml -detailed-exitcode
ok "plan -out of no changes" tpuform plan -f fleet.yaml -out=none.plan
is "show -json: nothing to apply" \
	"$(tpuform show -f fleet.yaml -json none.plan | jq -c '[.applyable, .complete, (.resource_changes | length)]')" '[false,true,0]'
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
is "nothing left" "$(dir_names nodes/nodes)" ""

# ---- import on gcp: the emulator ------------------------------------------------
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
if fakegcp_start --project test-project --op-seconds 0.1; then
	trap 'fakegcp_stop >/dev/null 2>&1' EXIT
	export TPUFORM_ACCESS_TOKEN=test-token TPUFORM_GCP_POLL_MIN=0.05 TPUFORM_GCP_POLL_MAX=0.2
	API="$FAKEGCP_URL/v2/projects/test-project/locations"
	mkdir gcp && cd gcp || exit 1
	cat >fleet.yaml <<'YAML'
fleet: gi
provider:
  gcp: { project: test-project }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 2, labels: { team: nlp } }
YAML
	for n in gi-a-0 hand-made; do
		curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
			-d '{"acceleratorType":"v2-8","runtimeVersion":"tpu-ubuntu2204-base","labels":{"owner":"alice"}}' \
			"$API/z1/nodes?nodeId=$n"
	done
	wait_for 5 sh -c "[ \"\$(curl -s '$FAKEGCP_URL/__admin/nodes' | jq '[.[] | select(.state == \"READY\")] | length')\" = 2 ]"
	before=$(curl -s "$FAKEGCP_URL/__admin/requests" | jq length)
	ok "gcp: import gi-a-0 z1/gi-a-0" tpuform import -f fleet.yaml gi-a-0 z1/gi-a-0
	labels() { curl -s "$FAKEGCP_URL/__admin/nodes" | jq -c --arg n "$1" '.[] | select(.name | endswith("/nodes/" + $n)) | .labels'; }
	is "gcp: it has the fleet's and the group's labels (its own replaced)" "$(labels gi-a-0)" \
		'{"team":"nlp","tpuform-fleet":"gi","tpuform-group":"a","tpuform-index":"0","tpuform-lineage":"'"$(lineage_label tpuform.state.json)"'"}'
	is "gcp: the other hand-made node is untouched" "$(labels hand-made)" '{"owner":"alice"}'
	reqs=$(curl -s "$FAKEGCP_URL/__admin/requests" | jq ".[$before:]")
	is "gcp: the import read and patched only the node named" \
		"$(printf '%s' "$reqs" | jq -c '[.[] | select(.path | test("/nodes/")) | .path | split("/")[7]] | unique')" '["gi-a-0"]'
	is "gcp: its labels were patched once" \
		"$(printf '%s' "$reqs" | jq '[.[] | select(.method == "PATCH" and (.path | endswith("/nodes/gi-a-0")))] | length')" 1
	is "gcp: it is in state" "$(jq -r '.nodes[].name' tpuform.state.json | tr '\n' ' ')" "gi-a-0 "
	out=$(tpuform plan -f fleet.yaml 2>&1)
	like "gcp: the next plan creates only the node that does not exist" "$out" "Plan: 1 to add, 1 to change, 0 to destroy\."
	unlike "gcp: and never the imported one" "$out" "# gi-a-0 will be created"
	fails "gcp: a node that does not exist cannot be imported" 1 tpuform import -f fleet.yaml gi-a-1 z1/gi-a-1
	like "gcp: in Terraform's words" "$(cat "$W/last.out")" "Cannot import non-existent remote object"
	cd .. || exit 1
	fakegcp_stop >/dev/null 2>&1
	trap - EXIT
else
	echo "not ok - the Cloud TPU API emulator did not start (make tests/fakegcp/fakegcp)"
	_fail=$((_fail + 1))
fi
finish

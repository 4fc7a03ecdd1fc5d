#!/bin/sh
# Zone fallback past the dead ends a real project meets, against the Cloud
# TPU API emulator with per-zone faults (--zone-fault), workers over SSH:
#   z-bad   the project cannot use it: every request there is a 403
#           "Location z-bad is not found or access is unauthorized."
#   z-full  a stockout reported by the create operation (code 8)
#   z-lost  a stockout reported while creating: the node is PREEMPTED before
#           it is READY and the operation ends with code 3
#   z-good  takes it
# A group with zones [z-bad, z-full, z-lost, z-good] ends up in z-good, the
# reasons are printed, nothing is left behind in the other zones, and a
# refresh (plan) of the unusable zone is a warning, not a failed run.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t355
export TPUFORM_ACCESS_TOKEN=test-token
# Worker addresses go one per worker of every node created (the lost ones too).
gcp_workers_start 6 127.0.36.1 --project test-project --op-seconds 0.2 \
	--zone-fault z-bad=unauthorized --capacity z-full=0 --zone-fault z-lost=preempted
nodes() { curl -s "$FAKEGCP_URL/__admin/nodes"; }
# name:zone:state of every node, sorted
summary() { nodes | jq -r '.[] | (.name | split("/")) as $p | "\($p[5]):\($p[3]):\(.state)"' | sort | tr '\n' ' '; }

cat >fleet.yaml <<'YAML'
fleet: zf
provider:
  gcp: { project: test-project }
ssh: { user: root, private_key: "@KEY@", port: @PORT@ }
run: exec sleep 300
groups:
  - name: a
    accelerator_type: v2-8
    runtime_version: tpu-ubuntu2204-base
    zones: [z-bad, z-full, z-lost, z-good]
    count: 1
YAML
sed -i "s|@KEY@|$SSHD_KEY|; s|@PORT@|$SSHD_PORT|" fleet.yaml

is "the emulator refuses z-bad as the real API words it" \
	"$(curl -s "$FAKEGCP_URL/v2/projects/test-project/locations/z-bad/nodes" | jq -c '[.error.code, .error.status, .error.message]')" \
	'[403,"PERMISSION_DENIED","Location z-bad is not found or access is unauthorized."]'

out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: the refresh of z-bad is a warning, the plan goes on" "$out" "Plan: 1 to add, 0 to change, 0 to destroy\."
like "the warning quotes the API" "$out" "list nodes in zone 'z-bad': HTTP 403 PERMISSION_DENIED: Location z-bad is not found or access is unauthorized\."

ok "apply ends up in the good zone" tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "z-bad: the reason is printed" "$out" "create node 'zf-a-0' in zone 'z-bad': HTTP 403 PERMISSION_DENIED: Location z-bad is not found or access is unauthorized\."
like "z-bad: with a hint naming the zone list" "$out" "cannot use this zone .*tries the group's next zone"
like "z-full: the stockout of the create operation is printed" "$out" "in zone 'z-full': operation failed with code 8 \(RESOURCE_EXHAUSTED\): There is no more capacity in the zone \"z-full\""
like "z-lost: the stockout while creating is printed" "$out" "in zone 'z-lost': operation failed with code 3 \(INVALID_ARGUMENT\): .*while in state PREEMPTED"
like "and then the good zone is tried" "$out" "zf-a-0: trying zone z-good"
like "Apply complete" "$out" "Apply complete! Resources: 1 added"
is "the node is READY in z-good and nothing is left elsewhere (the lost node was deleted)" \
	"$(summary)" "zf-a-0:z-good:READY "
is "the state records z-good" "$(jq -r '.nodes[] | .name + ":" + .recipe.zone' tpuform.state.json)" "zf-a-0:z-good"
out=$(tpuform plan -f fleet.yaml -detailed-exitcode 2>&1)
rc=$?
is "a second plan has nothing to do (exit 0)" "$rc" 0
# A node the state records in a zone that now answers "not found or
# unauthorized" (an IAM change, a zone gone dark) may still exist: the plan
# must stop, never read it as gone and create a second one.
cp tpuform.state.json good.state.json
jq '.nodes[0].recipe.zone = "z-bad"' good.state.json >tpuform.state.json
posts_before=$(curl -s "$FAKEGCP_URL/__admin/requests" | jq '[.[] | select(.method == "POST")] | length')
fails "plan stops when a state node's zone cannot be listed" 1 tpuform plan -f fleet.yaml
like "saying why and what to do" "$(cat last.out)" "cannot tell whether node 'zf-a-0' still exists: zone 'z-bad' answered that it is not found or unauthorized"
fails "apply stops too" 1 tpuform apply -f fleet.yaml -auto-approve
is "and nothing was created" \
	"$(curl -s "$FAKEGCP_URL/__admin/requests" | jq '[.[] | select(.method == "POST")] | length')" "$posts_before"
cp good.state.json tpuform.state.json
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
is "nothing is left" "$(summary)" ""
finish

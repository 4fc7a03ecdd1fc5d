#!/bin/sh
# Money safety: tpuform killed with SIGKILL in the middle of an apply leaks
# nothing. The next plan accounts for every node (adopt, create, or
# delete), and a second apply converges.
. "$(dirname "$0")/lib.sh"
setup_dir t150
cat >fleet.yaml <<'YAML'
fleet: cr
provider:
  local: { root: nodes, create_delay: 2s }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 3 }
YAML
"$TPUFORM" apply -f fleet.yaml -auto-approve >apply1.out 2>&1 &
pid=$!
# Kill once the create requests are out (nodes exist, CREATING) but before
# any completes.
wait_for 5 sh -c 'ls nodes/nodes/*/node.json >/dev/null 2>&1'
sleep 0.3
kill -9 $pid
wait $pid 2>/dev/null
is "nodes were being created when tpuform died" "$(dir_names nodes/nodes | wc -l | tr -d ' ')" 3
ok "the state file is valid JSON after the kill" sh -c "\"$TPUFORM\" state pull -f fleet.yaml >/dev/null"
like "the state recorded them as pending before the creates were sent" "$("$TPUFORM" state pull -f fleet.yaml)" '"status": "pending"'
ok "the lock died with the process: plan works" tpuform plan -f fleet.yaml
out=$(cat last.out)
unlike "no node is planned for creation twice" "$out" "will be created"
like "the nodes are accounted for (waiting or adopting)" "$out" "cr-a-0 will be updated in-place"
ok "a second apply converges" tpuform apply -f fleet.yaml -auto-approve
is "still exactly three nodes" "$(dir_names nodes/nodes | wc -l | tr -d ' ')" 3
ok "then there are no changes" tpuform plan -f fleet.yaml -detailed-exitcode

# An orphan: a node that carries the fleet's labels but is in no state
# (e.g. the state file was lost). Plan deletes it, with the reason.
"$TPUFORM" state rm -f fleet.yaml cr-a-2 >/dev/null 2>&1
sed -i 's/count: 3/count: 2/' fleet.yaml
out=$("$TPUFORM" plan -f fleet.yaml)
like "an orphan with the fleet's labels is planned for deletion" "$out" "# cr-a-2 will be destroyed"
like "with the reason" "$out" "in neither the configuration nor the state"
# A node of another fleet under the same root is never touched.
mkdir -p nodes/nodes/other-a-0 && sed 's/"tpuform-fleet": "cr"/"tpuform-fleet": "other"/; s/cr-a-0/other-a-0/' nodes/nodes/cr-a-0/node.json >nodes/nodes/other-a-0/node.json
ok "apply" tpuform apply -f fleet.yaml -auto-approve
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
is "only the other fleet's node is left" "$(dir_names nodes/nodes | tr '\n' ' ')" "other-a-0 "
finish

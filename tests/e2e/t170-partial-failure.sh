#!/bin/sh
# One failed node does not stop the others; the failure is reported with
# exit 1, nothing is leaked, and the next apply finishes the job. Zone
# fallback: no capacity in the first zone -> created in the next.
. "$(dirname "$0")/lib.sh"
setup_dir t170
cat >fleet.yaml <<'YAML'
fleet: pf
provider:
  local: { root: nodes, create_delay: 0.2s }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 3 }
  - { name: b, accelerator_type: v2-8, runtime_version: rt, zones: [full, z2], count: 1 }
YAML
export TPUFORM_LOCAL_NO_CAPACITY=full
TPUFORM_LOCAL_FAIL_CREATE=pf-a-1 "$TPUFORM" apply -f fleet.yaml -auto-approve >apply1.out 2>&1
is "apply with one failing node exits 1" "$?" 1
out=$(cat apply1.out)
like "the others were created, and the ending says what failed" "$out" "Apply failed: 3 added, 0 changed, 0 destroyed; 1 action failed\."
unlike "a failed apply never says 'Apply complete!'" "$out" "Apply complete!"
like "the failure is reported as an error for that node" "$out" "Error: .*pf-a-1"
like "the group b node fell back to the next zone" "$out" "pf-b-0: trying zone z2"
is "three nodes exist" "$(dir_names nodes/nodes | tr '\n' ' ')" "pf-a-0 pf-a-2 pf-b-0 "
is "pf-b-0 is in zone z2" "$(tpuform state show -f fleet.yaml pf-b-0 | grep '"zone"' | tr -d ' ,')" '"zone":"z2"'
out=$(tpuform plan -f fleet.yaml)
like "the next plan creates only the failed node" "$out" "Plan: 1 to add, 0 to change, 0 to destroy"
ok "the next apply converges" tpuform apply -f fleet.yaml -auto-approve
ok "and then nothing changes" tpuform plan -f fleet.yaml -detailed-exitcode
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
is "nothing is left" "$(dir_names nodes/nodes | wc -l | tr -d ' ')" 0
finish

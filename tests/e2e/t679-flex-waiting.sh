#!/bin/sh
# A Compute Engine VM or slice waiting for flex-start capacity is not
# "Creation complete" (issue 26 item 10; docs/commands.md): apply says it is
# still waiting for capacity and counts it apart in its closing line and in
# -json. The emulator grants no flex-start capacity until told, so no worker
# is ever reached: no loopback block.
. "$(dirname "$0")/lib.sh"
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
setup_dir t679
export TPUFORM_ACCESS_TOKEN=test-token
fakegcp_start --project test-project --op-seconds 0.1 --compute-stage-seconds 0.1 || exit 1
trap 'fakegcp_stop >/dev/null 2>&1' EXIT
ssh-keygen -q -t ed25519 -N '' -f key
cat >fleet.yaml <<YAML
fleet: t679
provider:
  gcp: { project: test-project }
ssh: { user: root, private_key: "$W/key" }
run: exec sleep 300
groups:
  - name: flex
    machine_type: ct6e-standard-1t
    zones: [us-central1-a]
    count: 1
    flex_start: { max_run_duration: 24h }
  - name: big
    machine_type: tpu7x-standard-4t
    topology: 2x2x2
    zones: [us-central1-a]
    count: 1
    flex_start: { max_run_duration: 24h }
YAML
ok "apply exits 0 while both wait" tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "the VM: still waiting for capacity" "$out" "t679-flex-0: Still waiting for capacity \(flex-start\) after [0-9]+s \[id=[0-9]+\]"
like "the slice too" "$out" "t679-big-0: Still waiting for capacity \(flex-start\) after"
unlike "neither is 'Creation complete'" "$out" "Creation complete"
like "the closing line counts them apart" "$out" "Apply complete! Resources: 0 added, 2 waiting for capacity, 0 changed, 0 destroyed\."
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
tpuform apply -f fleet.yaml -auto-approve -json >apply.json 2>&1
is "-json: an apply_waiting line per node" \
	"$(jq -r 'select(.type == "apply_waiting") | "\(.hook.resource.addr) \(.hook.waiting_for) \(.hook.scheduling)"' apply.json | sort | tr '\n' ';')" \
	"t679-big-0 capacity flex-start;t679-flex-0 capacity flex-start;"
is "-json: no apply_complete for them" "$(jq -r 'select(.type == "apply_complete") | .hook.resource.addr' apply.json)" ""
is "-json: the change_summary counts them apart" \
	"$(jq -r 'select(.type == "change_summary" and .changes.operation == "apply") | "\(.changes.add) \(.changes.waiting_for_capacity)"' apply.json)" "0 2"
ok "destroy again" tpuform destroy -f fleet.yaml -auto-approve
finish

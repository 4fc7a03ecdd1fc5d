#!/bin/sh
# examples/compute.yaml, as shipped, through validate -> plan -> apply ->
# destroy against the emulator's Compute Engine side with sshd workers.
# Replaced in a copy, and nothing else: the project (test-project), the SSH
# user, key and port (the workers'), the source repository (a local one
# holding train.py and eval.py) and `setup` (pip is not on the CI machine).
# So the TPU7x slice (template, workload policy, MIG), the reservation, the
# boot disk, the node fields, the v6e spot sweep and the flex-start group
# reach the emulator exactly as the example writes them, and the emulator
# checks each request body against gcloud 528's Compute v1 schema.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t368
export TPUFORM_SSH_RETRY=3
gcp_workers_start 10 127.0.36.201 --project test-project --op-seconds 0.1 --compute-stage-seconds 0.1
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
world() { curl -s "$FAKEGCP_URL/__admin/compute"; }
instances() { world | jq -r '[.instances[]? | "\(.name):\(.status)"] | sort | join(" ")'; }
parts() {
	world | jq -r '[(.instanceGroupManagers[]? | "mig:\(.name)"), (.instanceTemplates[]? | "tmpl:\(.name)"),
		(.resourcePolicies[]? | "wp:\(.name)")] | sort | join(" ")'
}
body_of() { requests | jq -c --arg p "$1" '[.[] | select(.method == "POST" and (.path | test($p)))][0].body'; }

# The job's repository: a sweep trial finishes (exit 0), the rest keep running.
mkdir repo repo/configs
cat >repo/train.py <<'PY'
import os, sys, time
print("train", os.environ.get("TPUFORM_NODE"), os.environ.get("TPU_WORKER_ID", "-"), sys.argv[1:], flush=True)
if os.environ.get("SWEEP"):
    sys.exit(0)
time.sleep(300)
PY
cp repo/train.py repo/eval.py
: >repo/requirements.txt
: >repo/configs/base.yaml
git -C repo init -q -b main && git -C repo add -A && git -C repo -c user.email=t@t -c user.name=t commit -qm job

sed -e 's/^    project: my-ml-project$/    project: test-project/' \
	-e "s|^  repo: https://github.com/my-team/llm-train.git\$|  repo: $W/repo|" \
	-e 's/^  user: tpuform$/  user: root/' \
	-e "s|^  private_key: ~/.ssh/google_compute_engine .*|  private_key: \"$SSHD_KEY\"\\n  port: $SSHD_PORT|" \
	-e 's/^setup: pip install -r requirements.txt$/setup: "true"/' \
	"$TOP/examples/compute.yaml" >fleet.yaml
is "only the named lines differ from the example" \
	"$(diff "$TOP/examples/compute.yaml" fleet.yaml | grep -c '^>')" 6
export WANDB_API_KEY=example-secret-t368

ok "validate" tpuform validate -f fleet.yaml
like "3 groups, 5 nodes" "$(cat last.out)" "fleet 'ironwood', 3 groups, 5 nodes"
fails "plan: changes (exit 2)" 2 tpuform plan -f fleet.yaml -detailed-exitcode
plan=$(cat last.out)
like "plan shows the TPU7x machine type" "$plan" 'machine_type += "tpu7x-standard-4t"'
like "plan shows the slice's 2 workers" "$plan" "workers += 2"
like "plan shows the reservation" "$plan" "ironwood-reservation"
like "plan shows flex-start" "$plan" 'scheduling += "flex-start"'
like "plan: 5 to add" "$plan" "Plan: 5 to add, 0 to change, 0 to destroy"

ok "apply (exit 0 while the flex-start VM waits)" tpuform apply -f fleet.yaml -auto-approve
like "apply says the flex-start VM waits" "$(cat last.out)" "ironwood-eval-0: .*waiting for flex-start capacity"
is "every request was accepted" "$(requests | jq '[.[] | select(.status >= 400 and (.path | test("getGuestAttributes") | not))] | length')" 0
is "the slice's parts" "$(parts)" "mig:ironwood-pretrain-0 tmpl:ironwood-pretrain-0-t wp:ironwood-pretrain-0-wp"
tb=$(body_of '/instanceTemplates$')
like "the template: the reservation" "$tb" '"consumeReservationType":"SPECIFIC_RESERVATION"'
like "the template: the 500 GB boot disk" "$tb" '"diskSizeGb":"500"'
like "the template: tags" "$tb" '"tags":\{"items":\["tpu","allow-ssh"\]\}'
like "the workload policy: the topology" "$(body_of '/resourcePolicies$')" '"acceleratorTopology":"2x2x2"'
ib=$(body_of '/instances$')
like "the sweep: SPOT, deleted on preemption" "$ib" '"provisioningModel":"SPOT".*|"instanceTerminationAction":"DELETE"'
like "the service account" "$ib" '"email":"tpu-trainer@my-ml-project.iam.gserviceaccount.com"'

# The flex-start capacity comes; the sweep's trials finish meanwhile.
admin "compute/zones/us-central1-a:flex?value=grant" >/dev/null
admin "compute:settle" >/dev/null
ok "apply once the flex-start capacity came" tpuform apply -f fleet.yaml -auto-approve
like "apply: the finished sweep VMs are deleted (on_success: delete)" "$(cat last.out)" \
	"ironwood-sweep-0: Destruction complete"
ok "the slice's workers run their job" tpuform exec -f fleet.yaml ironwood-pretrain-0 -- 'pgrep -f "python3 train.py" >/dev/null'
ok "the flex VM runs its job" tpuform exec -f fleet.yaml ironwood-eval-0 -- 'pgrep -f "python3 eval.py" >/dev/null'
is "what is left: the slice's members and the flex VM" "$(instances)" \
	"ironwood-eval-0:RUNNING ironwood-pretrain-0-001:RUNNING ironwood-pretrain-0-002:RUNNING"
ok "the fleet converged" tpuform plan -f fleet.yaml -detailed-exitcode

ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
admin "compute:settle" >/dev/null
is "no instance is left" "$(instances)" ""
is "no MIG, template or workload policy is left" "$(parts)" ""
finish

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
gcp_workers_start 14 127.0.52.1 --project test-project --op-seconds 0.1 --compute-stage-seconds 0.1
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
world() { curl -s "$FAKEGCP_URL/__admin/compute"; }
instances() { world | jq -r '[.instances[]? | "\(.name):\(.status)"] | sort | join(" ")'; }
parts() {
	world | jq -r '[(.instanceGroupManagers[]? | "mig:\(.name)"), (.instanceTemplates[]? | "tmpl:\(.name)"),
		(.resourcePolicies[]? | "wp:\(.name)")] | sort | join(" ")'
}
# The body of the first POST to a path matching $1 whose body matches $2
# (default: any): the groups are created in parallel, so "the first
# template" may be any group's.
body_of() {
	requests | jq -c --arg p "$1" --arg b "${2:-}" \
		'[.[] | select(.method == "POST" and (.path | test($p)) and ((.body | tostring) | test($b)))][0].body'
}

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
like "4 groups, 6 nodes" "$(cat last.out)" "fleet 'ironwood', 4 groups, 6 nodes"
fails "plan: changes (exit 2)" 2 tpuform plan -f fleet.yaml -detailed-exitcode
plan=$(cat last.out)
like "plan shows the TPU7x machine type" "$plan" 'machine_type += "tpu7x-standard-4t"'
like "plan shows the slice's 2 workers" "$plan" "workers += 2"
like "plan shows the reservation" "$plan" "ironwood-reservation"
like "plan shows flex-start" "$plan" 'scheduling += "flex-start"'
like "plan shows the 2-slice group" "$plan" "slices += 2"
like "plan: 6 to add" "$plan" "Plan: 6 to add, 0 to change, 0 to destroy"

ok "apply (exit 0 while the flex-start VM waits)" tpuform apply -f fleet.yaml -auto-approve
like "apply says the flex-start VM waits" "$(cat last.out)" "ironwood-eval-0: .*waiting for flex-start capacity"
# (GETs may be 404: "does this slice exist yet?", "no host keys published yet")
is "every request that changes something was accepted" "$(requests | jq -r '[.[] | select(.status >= 400 and .method != "GET" and (.path | test("getGuestAttributes") | not)) | "\(.status) \(.method) \(.path)"] | unique | join(";")')" ""
is "no node was looked for zone by zone: refresh and create told the access layer of each" \
	"$(requests | jq -r '[.[] | select(.status == 404 and (.path | test("/(instances|nodes)/[^/]+$"))) | .path] | unique | join(";")')" ""
is "the slices' parts: one MIG, template and policy per slice" "$(parts)" \
	"mig:ironwood-multi-0-0 mig:ironwood-multi-0-1 mig:ironwood-pretrain-0 tmpl:ironwood-multi-0-0-t tmpl:ironwood-multi-0-1-t tmpl:ironwood-pretrain-0-t wp:ironwood-multi-0-0-wp wp:ironwood-multi-0-1-wp wp:ironwood-pretrain-0-wp"
tb=$(body_of '/instanceTemplates$' '"name":"ironwood-pretrain-0-t"')
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
# shellcheck disable=SC2016 # $(...) runs on the worker
ok "the multislice workers run their job, each told its slice" \
	tpuform exec -f fleet.yaml ironwood-multi-0 -- 'pgrep -f "python3 train.py" >/dev/null && test "$(tr "\\0" "\\n" </proc/$(pgrep -f "python3 train.py" | head -n 1)/environ | grep -c "^MEGASCALE_NUM_SLICES=2$")" = 1'
is "what is left: the slices' members and the flex VM" "$(instances)" \
	"ironwood-eval-0:RUNNING ironwood-multi-0-0-001:RUNNING ironwood-multi-0-0-002:RUNNING ironwood-multi-0-1-001:RUNNING ironwood-multi-0-1-002:RUNNING ironwood-pretrain-0-001:RUNNING ironwood-pretrain-0-002:RUNNING"
ok "the fleet converged" tpuform plan -f fleet.yaml -detailed-exitcode

ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
admin "compute:settle" >/dev/null
is "no instance is left" "$(instances)" ""
is "no MIG, template or workload policy is left" "$(parts)" ""
finish

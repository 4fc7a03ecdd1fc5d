#!/bin/sh
# examples/gcp.yaml, as shipped, through validate -> plan -> apply -> destroy
# against the emulator (tests/fakegcp) with sshd workers. Replaced in a copy,
# and nothing else: the project (test-project), the SSH user, key and port
# (the workers'), the source repository (a local one holding train.py and
# eval.py) and `setup` (pip is not on the CI machine). So every node field,
# the multislice group, the reservation, the topology group and the spot
# sweep reach the emulator exactly as the example writes them, and the
# emulator validates each request body against the discovery document.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t390
gcp_workers_start 12 127.0.39.1 --project test-project --op-seconds 0.2 --log "$W/requests.jsonl"
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
posts() { requests | jq --arg p "$1" '[.[] | select(.method == "POST" and (.path | test($p)))] | length'; }
body_of() { requests | jq -c --arg p "$1" '[.[] | select(.method == "POST" and (.path | test($p)))][0].body'; }

# The job's repository: what the example's run lines start.
mkdir repo repo/configs
cat >repo/train.py <<'PY'
import os, sys, time
print("train", os.environ.get("TPUFORM_NODE"), os.environ.get("TPUFORM_SLICE_ID", "-"), sys.argv[1:], flush=True)
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
	"$TOP/examples/gcp.yaml" >fleet.yaml
is "only the named lines differ from the example" \
	"$(diff "$TOP/examples/gcp.yaml" fleet.yaml | grep -c '^>')" 6
export WANDB_API_KEY=example-secret-t390

ok "validate" tpuform validate -f fleet.yaml
like "3 groups, 6 nodes" "$(cat last.out)" "fleet 'llm', 3 groups, 6 nodes"
fails "plan: changes (exit 2)" 2 tpuform plan -f fleet.yaml -detailed-exitcode
plan=$(cat last.out)
like "plan shows the network" "$plan" 'network += "tpu-network"|network: "tpu-network"|tpu-network'
like "plan shows the multislice unit" "$plan" "llm-pretrain-0"
like "plan shows the reservation" "$plan" "llm-pretrain-reservation"
like "plan: 6 to add" "$plan" "Plan: 6 to add, 0 to change, 0 to destroy"

ok "apply" tpuform apply -f fleet.yaml -auto-approve
like "apply complete" "$(cat last.out)" "Apply complete! Resources: 6 added"
is "one queued resource for the 2 slices" "$(posts '/queuedResources$')" 1
qr=$(body_of '/queuedResources$')
like "with multisliceParams" "$qr" '"multisliceParams":\{"nodeCount":2'
like "and the reservation" "$qr" '"reservationName":"projects/test-project/locations/us-central2-b/reservations/llm-pretrain-reservation"'
nb=$(body_of '/nodes$')
like "nodes carry the network config" "$nb" '"network":"tpu-network"'
like "the service account" "$nb" '"email":"tpu-trainer@my-ml-project.iam.gserviceaccount.com"'
like "shielded VM" "$nb" '"enableSecureBoot":true'
like "tags" "$nb" '"tags":\["tpu","allow-ssh"\]'
like "and the ssh-keys metadata next to the startup script" "$nb" '"ssh-keys":"root:ssh-'
is "every request was accepted" "$(requests | jq '[.[] | select(.status >= 400)] | length')" 0
ok "the fleet converged" tpuform plan -f fleet.yaml -detailed-exitcode
ok "every worker runs its job" tpuform exec -f fleet.yaml -all -- 'pgrep -f "python3 (train|eval).py" >/dev/null'

ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
is "nothing left in the emulator" "$(curl -s "$FAKEGCP_URL/__admin/nodes" | jq length)" 0
finish

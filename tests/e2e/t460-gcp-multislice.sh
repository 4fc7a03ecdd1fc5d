#!/bin/sh
# Multislice (docs/design.md section 9) against the emulator with sshd
# workers: a group with `slices: 2` of v4-16 (2 workers a slice) is ONE
# queued resource with multisliceParams {nodeCount 2, nodeIdPrefix NODE};
# Google's nodes NODE-0 and NODE-1 are one tpuform node of 4 workers, each
# told its slice (TPUFORM_SLICE_ID, TPUFORM_NUM_SLICES, MEGASCALE_*).
# Preempting ONE slice re-queues the unit (delete force=true, queue again)
# and every worker of both slices restarts with TPUFORM_RETRY=1.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t460
export TPUFORM_SSH_RETRY=3
gcp_workers_start 12 127.0.46.1 --op-seconds 0.1
API="$FAKEGCP_URL/v2/projects/test-project/locations/z1"
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
nodes() { curl -s "$API/nodes" | jq -r '[.nodes[]? | "\(.name | split("/") | last):\(.state)"] | join(" ")'; }
qrs() { curl -s "$API/queuedResources" | jq -r '[.queuedResources[]? | "\(.name | split("/") | last):\(.state.state)"] | join(" ")'; }
# every line the jobs wrote, sorted, for retry R
starts() { cat "$W"/workers/w*/home/starts 2>/dev/null | grep " retry=$1 " | sort; }

cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
cat >fleet.yaml <<YAML
fleet: ms
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
env: { MEGASCALE_PORT: "9999" }
run: |
  echo "\$TPUFORM_NODE retry=\$TPUFORM_RETRY w=\$TPUFORM_WORKER_ID/\$TPUFORM_NUM_WORKERS slice=\$TPUFORM_SLICE_ID/\$TPUFORM_NUM_SLICES mega=\$MEGASCALE_SLICE_ID/\$MEGASCALE_NUM_SLICES@\$MEGASCALE_COORDINATOR_ADDRESS:\$MEGASCALE_PORT" >> ~/starts
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1, slices: 2 }
YAML

ok "validate: slices implies a queued resource" tpuform validate -f fleet.yaml
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan shows the slices and the 4 workers" "$out" "slices *= 2"
like "plan: 4 workers" "$out" "workers *= 4"
ok "apply" tpuform apply -f fleet.yaml -auto-approve
# (getGuestAttributes is a POST too: it creates nothing)
creates() { requests | jq -r '[.[] | select(.method == "POST" and (.path | contains(":") | not)) | .path | split("/") | last] | join(" ")'; }
is "exactly one queued resource, no nodes.create" "$(creates)" "queuedResources"
is "host keys were read from each slice node's guest attributes" \
	"$(requests | jq -r '[.[] | select(.path | endswith(":getGuestAttributes")) | .path | split("/") | last] | sort | join(" ")')" \
	"ms-a-0-0:getGuestAttributes ms-a-0-1:getGuestAttributes"
body=$(requests | jq -c '[.[] | select(.method == "POST")][0].body.tpu.nodeSpec[0]')
is "its node spec: multisliceParams, no nodeId" \
	"$(echo "$body" | jq -c '[.multisliceParams, has("nodeId")]')" '[{"nodeCount":2,"nodeIdPrefix":"ms-a-0"},false]'
is "Google made the slices NODE-0 and NODE-1" "$(nodes)" "ms-a-0-0:READY ms-a-0-1:READY"
is "the queued resource is ACTIVE" "$(qrs)" "ms-a-0:ACTIVE"
is "the state has ONE node of 4 workers" \
	"$(jq -c '[.nodes[] | [.name, .recipe.slices, .recipe.workers, (.workers | length)]]' tpuform.state.json)" \
	'[["ms-a-0",2,4,4]]'
wait_for 10 sh -c "test \"\$(cat '$W'/workers/w*/home/starts 2>/dev/null | wc -l)\" -ge 4"
coord=$(curl -s "$API/nodes/ms-a-0-0" | jq -r '.networkEndpoints[0].ipAddress')
is "every worker of both slices got its slice; MEGASCALE_* only where unset (env wins)" \
	"$(starts 0 | tr '\n' ';')" \
	"ms-a-0 retry=0 w=0/4 slice=0/2 mega=0/2@$coord:9999;ms-a-0 retry=0 w=1/4 slice=0/2 mega=0/2@$coord:9999;ms-a-0 retry=0 w=2/4 slice=1/2 mega=1/2@$coord:9999;ms-a-0 retry=0 w=3/4 slice=1/2 mega=1/2@$coord:9999;"
unlike "host keys came from the slices' guest attributes" "$(cat last.out)" "trusting the key it presents on first use"
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode

# ---- one slice preempted: the unit is re-queued --------------------------------
admin "requests:clear" >/dev/null
admin "nodes/z1/ms-a-0-1:preempt" >/dev/null
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: the unit is replaced" "$out" "ms-a-0.*must be replaced|replaced.*ms-a-0|ms-a-0 must be replaced"
like "because its queued resource was suspended" "$out" "queued resource was suspended"
ok "apply re-queues it" tpuform apply -f fleet.yaml -auto-approve
is "the log: DELETE ?force=true, then ONE queued resource again" \
	"$(requests | jq -r '.[] | select(.method == "DELETE" or (.method == "POST" and (.path | contains(":") | not))) | "\(.method) \(.path | split("/") | last) \(.query | sub("&requestId=[-0-9a-f]+$"; ""))"' | tr '\n' ';')" \
	"DELETE ms-a-0 force=true;POST queuedResources queuedResourceId=ms-a-0;"
is "both slices are back" "$(nodes)" "ms-a-0-0:READY ms-a-0-1:READY"
wait_for 10 sh -c "test \"\$(cat '$W'/workers/w*/home/starts 2>/dev/null | grep -c ' retry=1 ')\" -ge 4"
coord=$(curl -s "$API/nodes/ms-a-0-0" | jq -r '.networkEndpoints[0].ipAddress')
is "every worker of BOTH slices restarted with TPUFORM_RETRY=1 and its slice" \
	"$(starts 1 | tr '\n' ';')" \
	"ms-a-0 retry=1 w=0/4 slice=0/2 mega=0/2@$coord:9999;ms-a-0 retry=1 w=1/4 slice=0/2 mega=0/2@$coord:9999;ms-a-0 retry=1 w=2/4 slice=1/2 mega=1/2@$coord:9999;ms-a-0 retry=1 w=3/4 slice=1/2 mega=1/2@$coord:9999;"
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode

admin "requests:clear" >/dev/null
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
is "destroy deleted the queued resource with force=true" \
	"$(requests | jq -r '.[] | select(.method == "DELETE") | "\(.path | split("/") | last) \(.query)"' | tr '\n' ';')" \
	"ms-a-0 force=true;"
is "nothing is left" "$(qrs)$(nodes)" ""
finish

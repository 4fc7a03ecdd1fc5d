#!/bin/sh
# Queued resources end to end (docs/cloud-tpu-api.md section 5): a group with
# `queued: true` and `valid_until` is requested through queuedResources
# against the emulator (tests/fakegcp) with sshd workers
# (tests/e2e/sshd.sh). The request body; apply returning while the queued
# resources wait for capacity; plan, show and watch showing them without
# blocking; capacity returning -> nodes READY -> apply provisions them; a
# FAILED queued resource deleted (force=true) and queued again by watch; a
# preempted node (queued resource SUSPENDED) replaced; destroy deleting the
# queued resources; no nodes.create at any point. First, `queued: true`
# on the local provider: the node simply comes up, with no replacement loop.
. "$(dirname "$0")/lib.sh"
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/e2e/sshd.sh"
setup_dir t330
trap 'fakegcp_stop >/dev/null 2>&1; sshd_stop' EXIT
export TPUFORM_GCP_POLL_MIN=0.05 TPUFORM_GCP_POLL_MAX=0.2 TPUFORM_GCP_RETRY_BASE=0.05
unset GOOGLE_APPLICATION_CREDENTIALS CLOUDSDK_CONFIG GCE_METADATA_HOST SSH_AUTH_SOCK
export TPUFORM_ACCESS_TOKEN=test-token TPUFORM_SSH_RETRY=2

# ---- the local provider: queued is simulated (CREATING -> READY after create_delay)
mkdir local && cat >local/fleet.yaml <<'YAML'
fleet: lq
provider:
  local: { root: nodes, create_delay: 0.2s }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1, queued: true, valid_until: 1h }
YAML
ok "local: apply of a queued group" tpuform apply -f local/fleet.yaml -auto-approve
ok "local: the state records queued and valid_until" \
	sh -c "grep -q '\"queued\": true' local/tpuform.state.json && grep -q '\"valid_until\": \"1h\"' local/tpuform.state.json"
ok "local: then no changes (no replacement loop)" tpuform plan -f local/fleet.yaml -detailed-exitcode
sed -i 's/queued: true, valid_until: 1h/queued: false/' local/fleet.yaml
out=$(tpuform plan -f local/fleet.yaml 2>&1)
like "local: turning queued off forces replacement" "$out" "queued = true -> false # forces replacement"
ok "local: destroy" tpuform destroy -f local/fleet.yaml -auto-approve
cleanup_screens

# ---- gcp against the emulator, workers over SSH (keys only from metadata)
SSHD_NO_KEYS=1
sshd_start "$W/workers" 6 127.0.33.1
rc=$?
if [ "$rc" -eq 2 ]; then
	echo "# SKIP: this machine cannot run the sshd workers (needs root, sshd, unshare)"
	finish
fi
[ "$rc" -eq 0 ] || { echo "not ok - sshd workers start"; echo "1..$((_n + 1))"; exit 1; }
sshd_watch $$
if ! fakegcp_start --project test-project --op-seconds 0.3 --worker-ip-base 127.0.33.1 \
	--worker-port "$SSHD_PORT" --worker-dir "$SSHD_DIR" --capacity zq=0 --log "$W/requests.jsonl"; then
	echo "not ok - the emulator starts"
	echo "1..$((_n + 1))"
	exit 1
fi
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
# name:state of every queued resource / node, sorted
qrs() { curl -s "$FAKEGCP_URL/__admin/queuedResources" | jq -r '.[] | "\(.name | split("/")[5]):\(.state.state)"' | sort | tr '\n' ' '; }
nodes() { curl -s "$FAKEGCP_URL/__admin/nodes" | jq -r '.[] | "\(.name | split("/")[5]):\(.state)"' | sort | tr '\n' ' '; }

cat >fleet.yaml <<'YAML'
fleet: gq
provider:
  gcp: { project: test-project }
ssh: { user: root, private_key: "@KEY@", port: @PORT@ }
run: exec sleep 300
groups:
  - name: a
    accelerator_type: v2-8
    runtime_version: tpu-ubuntu2204-base
    zones: [zq]
    count: 2
    spot: true
    queued: true
    valid_until: 6h
YAML
sed -i "s|@KEY@|$SSHD_KEY|; s|@PORT@|$SSHD_PORT|" fleet.yaml

out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: two to add" "$out" "Plan: 2 to add, 0 to change, 0 to destroy\."
ok "apply with no capacity in the zone returns (the queue waits, apply does not)" \
	tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "apply says the node is queued" "$out" "gq-a-0: queued: its queued resource is WAITING_FOR_RESOURCES"
like "and counts both apart, as waiting for capacity" "$out" "Apply complete! Resources: 0 added, 2 waiting for capacity, 0 changed, 0 destroyed\."
is "two queued resources wait for resources" "$(qrs)" "gq-a-0:WAITING_FOR_RESOURCES gq-a-1:WAITING_FOR_RESOURCES "
is "no node exists yet" "$(nodes)" ""
body=$(requests | jq -c '[.[] | select(.method == "POST" and (.path | endswith("/queuedResources")) and (.query | startswith("queuedResourceId=gq-a-0&")))][0].body')
# queuedResources.create carries a requestId (a UUID), so google/gapi.c may retry it
like "the queued resource request carries a requestId" \
	"$(requests | jq -r '[.[] | select(.method == "POST" and (.path | endswith("/queuedResources")))][0].query')" \
	"^queuedResourceId=gq-a-[01]&requestId=[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
is "the queued resource request: node spec with labels, spot tier, validUntilDuration 21600s" \
	"$(printf '%s' "$body" | jq -c 'del(.tpu.nodeSpec[0].node.metadata)')" \
	'{"tpu":{"nodeSpec":[{"parent":"projects/test-project/locations/zq","nodeId":"gq-a-0","node":{"acceleratorType":"v2-8","runtimeVersion":"tpu-ubuntu2204-base","labels":{"tpuform-fleet":"gq","tpuform-group":"a","tpuform-index":"0","tpuform-lineage":"'"$(lineage_label tpuform.state.json)"'"},"networkConfig":{"enableExternalIps":true}}}]},"spot":{},"queueingPolicy":{"validUntilDuration":"21600s"}}'
is "its node carries the SSH key in ssh-keys metadata, as gcloud writes it" \
	"$(printf '%s' "$body" | jq -c '.tpu.nodeSpec[0].node.metadata')" \
	"$(jq -cn --arg k "root:$(cut -d' ' -f1,2 "$SSHD_KEY.pub") root" '{"ssh-keys": $k}')"

out=$(tpuform plan -f fleet.yaml -detailed-exitcode 2>&1)
is "plan while waiting: no changes, but not as declared (exit 3)" "$?" 3
like "plan lists the waiting queued resources" "$out" "  - gq-a-1: waiting in its queued resource, which is WAITING_FOR_RESOURCES"
like "plan notes the waiting queued resources" "$out" "queued: node 'gq-a-1' waits: its queued resource is WAITING_FOR_RESOURCES"
out=$(tpuform show -detail -f fleet.yaml 2>&1)
like "show: the node's state is its queued resource's" "$out" "gq-a-0  WAITING_FOR_RESOURCES  v2-8  zq  spot .* queued=WAITING_FOR_RESOURCES"
ok "watch does not block on waiting queued resources" \
	tpuform watch -f fleet.yaml -rounds 1 -interval 1s -session-check 1s
like "watch counts them as queued" "$(cat last.out)" "alive 0/2, creating 0, waiting for quota 0, dead 0, missing 0, queued 2"

# capacity comes back: the nodes are made READY; apply provisions their workers
admin "capacity?zone=zq&value=2" >/dev/null
wait_for 10 sh -c "curl -s '$FAKEGCP_URL/__admin/queuedResources' | jq -e 'length == 2 and all(.state.state == \"ACTIVE\")'"
is "both queued resources ACTIVE, nodes READY" "$(qrs)$(nodes)" \
	"gq-a-0:ACTIVE gq-a-1:ACTIVE gq-a-0:READY gq-a-1:READY "
is "the nodes are spot nodes of their queued resources" \
	"$(curl -s "$FAKEGCP_URL/__admin/nodes" | jq -c '[.[] | [.schedulingConfig.spot, (.queuedResource | split("/")[5])]]')" \
	'[[true,"gq-a-0"],[true,"gq-a-1"]]'
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: provision the workers of the READY nodes" "$out" "gq-a-0 will be updated in-place"
ok "apply provisions them" tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "worker of gq-a-0 changed" "$out" "changed: \[gq-a-0/w0\]"
like "worker of gq-a-1 changed" "$out" "changed: \[gq-a-1/w0\]"
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode
out=$(tpuform show -detail -f fleet.yaml 2>&1)
like "show: READY, with the queued resource ACTIVE, session alive" "$out" "gq-a-1  READY .* queued=ACTIVE"
like "show: the session runs" "$out" "w0 +yes +alive"

# a FAILED queued resource: watch deletes it (force) and queues it again
admin "requests:clear" >/dev/null
admin "queuedResources/zq/gq-a-1:state?value=FAILED" >/dev/null
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: the failed one must be replaced" "$out" "gq-a-1 must be replaced"
like "because its queued resource failed" "$out" "\(the queued resource failed\)"
ok "watch heals it" tpuform watch -f fleet.yaml -rounds 1 -interval 1s -session-check 1s
out=$(cat last.out)
like "watch reports the failure and the replacement" "$out" "gq-a-1: the queued resource failed: replacing"
like "watch starts the job on the new node" "$out" "gq-a-1: w0: session started"
is "the log: DELETE ?force=true, then the queued resource requested again" \
	"$(requests | jq -r '.[] | select(.path | endswith("/queuedResources/gq-a-1") or endswith("/queuedResources")) | select(.method != "GET") | "\(.method) \(.path | split("/") | last) \(.query | sub("&requestId=[-0-9a-f]+$"; ""))"' | tr '\n' ';')" \
	"DELETE gq-a-1 force=true;POST queuedResources queuedResourceId=gq-a-1;"
is "it is ACTIVE again, its node READY" "$(qrs)$(nodes)" "gq-a-0:ACTIVE gq-a-1:ACTIVE gq-a-0:READY gq-a-1:READY "
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode

# preemption of a queued resource's node suspends the queued resource
admin "nodes/zq/gq-a-0:preempt" >/dev/null
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: suspended -> replace" "$out" "\(the queued resource was suspended: its node is gone\)"
ok "apply replaces it" tpuform apply -f fleet.yaml -auto-approve
like "and starts its job again" "$(cat last.out)" "changed: \[gq-a-0/w0\]"
is "the replacement is generation 1 (its job's TPUFORM_RETRY)" \
	"$(jq -r '.nodes[] | select(.name == "gq-a-0") | .generation' tpuform.state.json)" 1
is "both ACTIVE again" "$(qrs)" "gq-a-0:ACTIVE gq-a-1:ACTIVE "

# destroy deletes the queued resources, and with them the nodes
admin "requests:clear" >/dev/null
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
is "destroy deleted both queued resources with force=true" \
	"$(requests | jq -r '.[] | select(.method == "DELETE") | "\(.path | split("/") | last) \(.query)"' | sort | tr '\n' ';')" \
	"gq-a-0 force=true;gq-a-1 force=true;"
is "nothing is left" "$(qrs)$(nodes)" ""
is "no nodes.create was ever sent" \
	"$(jq -s '[.[] | select(.method == "POST" and (.path | endswith("/nodes")))] | length' "$W/requests.jsonl")" 0
finish

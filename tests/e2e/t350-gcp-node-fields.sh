#!/bin/sh
# The node fields (docs/fleet-file.md "Node fields", docs/cloud-tpu-api.md section 4)
# end to end against the emulator (tests/fakegcp) with sshd workers: a fleet
# with every field applies; the emulator's request log holds the exact
# nodes.create and queuedResources.create bodies, which it validated
# against the discovery document; a patchable field (tags) changes in
# place with one nodes.patch (same node id); a field that is not
# patchable (service_account) forces replacement and the plan says so; an
# injected symptom and maintenance show in `show` and as notes in `plan`.
. "$(dirname "$0")/lib.sh"
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/e2e/sshd.sh"
setup_dir t350
trap 'fakegcp_stop >/dev/null 2>&1; sshd_stop' EXIT
export TPUFORM_GCP_POLL_MIN=0.05 TPUFORM_GCP_POLL_MAX=0.2 TPUFORM_GCP_RETRY_BASE=0.05
unset GOOGLE_APPLICATION_CREDENTIALS CLOUDSDK_CONFIG GCE_METADATA_HOST SSH_AUTH_SOCK
export TPUFORM_ACCESS_TOKEN=test-token TPUFORM_SSH_RETRY=2

SSHD_NO_KEYS=1
sshd_start "$W/workers" 6 127.0.35.1
rc=$?
if [ "$rc" -eq 2 ]; then
	echo "# SKIP: this machine cannot run the sshd workers (needs root, sshd, unshare)"
	finish
fi
[ "$rc" -eq 0 ] || { echo "not ok - sshd workers start"; echo "1..$((_n + 1))"; exit 1; }
sshd_watch $$
if ! fakegcp_start --project test-project --op-seconds 0.3 --worker-ip-base 127.0.35.1 \
	--worker-port "$SSHD_PORT" --worker-dir "$SSHD_DIR" --log "$W/requests.jsonl"; then
	echo "not ok - the emulator starts"
	echo "1..$((_n + 1))"
	exit 1
fi
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
node_id() { curl -s "$FAKEGCP_URL/__admin/nodes" | jq -r --arg n "$1" '.[] | select(.name | endswith("/nodes/" + $n)) | .id'; }

cat >fleet.yaml <<'YAML'
fleet: nf
provider:
  gcp: { project: test-project }
ssh: { user: root, private_key: "@KEY@", port: @PORT@ }
run: exec sleep 300
network: default
subnetwork: tpu-subnet
can_ip_forward: true
tags: [tpu, ssh]
service_account:
  email: trainer@test-project.iam.gserviceaccount.com
  scopes: [https://www.googleapis.com/auth/cloud-platform]
metadata:
  startup-script: "echo hello"
  ssh-keys: "alice:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx0ZXN0a2V5 alice"
groups:
  - name: a
    accelerator_type: v4
    topology: 2x2x1
    runtime_version: tpu-ubuntu2204-base
    zones: [us-central2-b]
    count: 1
    enable_external_ips: true
    data_disks: [{ source_disk: projects/test-project/zones/us-central2-b/disks/data, mode: read-only }]
    shielded_instance: { secure_boot: true }
    reserved: true
    metadata: { role: trainer }
  - name: q
    accelerator_type: v2-8
    runtime_version: tpu-ubuntu2204-base
    zones: [us-central2-b]
    count: 1
    queued: true
    reservation: my-res
YAML
sed -i "s|@KEY@|$SSHD_KEY|; s|@PORT@|$SSHD_PORT|" fleet.yaml

ok "validate a fleet with every node field" tpuform validate -f fleet.yaml
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan shows the topology" "$out" '\+ topology += "2x2x1"'
like "plan shows the service account" "$out" '\+ service_account += \{"email":"trainer@test-project.iam.gserviceaccount.com","scopes":\["https://www.googleapis.com/auth/cloud-platform"\]\}'
like "plan shows the data disks" "$out" '\+ data_disks += \[\{"mode":"READ_ONLY","source_disk":"projects/test-project/zones/us-central2-b/disks/data"\}\]'
like "plan shows the reservation" "$out" '\+ reservation += "my-res"'
ok "apply" tpuform apply -f fleet.yaml -auto-approve

key="root:$(cut -d' ' -f1,2 "$SSHD_KEY.pub") root"
body=$(requests | jq -c '[.[] | select(.method == "POST" and (.path | endswith("/nodes")) and .query == "nodeId=nf-a-0")][0].body')
is "nodes.create body: every field as the discovery document spells it" \
	"$(printf '%s' "$body" | jq -cS '.')" \
	"$(jq -cnS --arg k "alice:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx0ZXN0a2V5 alice
$key" --arg lin "$(lineage_label tpuform.state.json)" '{"runtimeVersion":"tpu-ubuntu2204-base","labels":{"tpuform-fleet":"nf","tpuform-group":"a","tpuform-index":"0","tpuform-lineage":$lin},
  "metadata":{"startup-script":"echo hello","role":"trainer","ssh-keys":$k},
  "networkConfig":{"network":"default","subnetwork":"tpu-subnet","enableExternalIps":true,"canIpForward":true},
  "acceleratorConfig":{"type":"V4","topology":"2x2x1"},"schedulingConfig":{"reserved":true},
  "tags":["tpu","ssh"],
  "serviceAccount":{"email":"trainer@test-project.iam.gserviceaccount.com","scope":["https://www.googleapis.com/auth/cloud-platform"]},
  "dataDisks":[{"sourceDisk":"projects/test-project/zones/us-central2-b/disks/data","mode":"READ_ONLY"}],
  "shieldedInstanceConfig":{"enableSecureBoot":true}}')"
qbody=$(requests | jq -c '[.[] | select(.method == "POST" and (.path | endswith("/queuedResources")))][0].body')
is "queued resource: reservationName in full, the node spec carries the fleet's fields" \
	"$(printf '%s' "$qbody" | jq -c '[.reservationName, .tpu.nodeSpec[0].node.tags, .tpu.nodeSpec[0].node.serviceAccount.email, .tpu.nodeSpec[0].node.schedulingConfig]')" \
	'["projects/test-project/locations/us-central2-b/reservations/my-res",["tpu","ssh"],"trainer@test-project.iam.gserviceaccount.com",null]'
ok "then no changes (the API's defaults and tpuform's ssh key are no drift)" \
	tpuform plan -f fleet.yaml -detailed-exitcode

# ---- a patchable field: one nodes.patch, same node
id0=$(node_id nf-a-0)
sed -i 's/^tags: \[tpu, ssh\]/tags: [tpu, ssh, web]/' fleet.yaml
out=$(tpuform plan -f fleet.yaml 2>&1)
like "tags: updated in place" "$out" "# nf-a-0 will be updated in-place"
unlike "tags: no replacement" "$out" "forces replacement"
admin "requests:clear" >/dev/null
ok "apply the tags change" tpuform apply -f fleet.yaml -auto-approve
is "one nodes.patch per node with updateMask=tags" \
	"$(requests | jq -r '[.[] | select(.method == "PATCH") | "\(.path | split("/") | last) \(.query) \(.body.tags | join(","))"] | sort | join(";")')" \
	"nf-a-0 updateMask=tags tpu,ssh,web;nf-q-0 updateMask=tags tpu,ssh,web"
is "the node id is unchanged" "$(node_id nf-a-0)" "$id0"
is "the emulator now holds the new tags" \
	"$(curl -s "$FAKEGCP_URL/__admin/nodes" | jq -c '.[] | select(.name | endswith("/nf-a-0")) | .tags')" '["tpu","ssh","web"]'

# ---- enable_external_ips: patchable too, through its nested mask path
sed -i 's/    enable_external_ips: true/    enable_external_ips: false/' fleet.yaml
sed -i 's/^ssh: { user: root,/ssh: { address: internal, user: root,/' fleet.yaml
admin "requests:clear" >/dev/null
ok "apply enable_external_ips: false" tpuform apply -f fleet.yaml -auto-approve
is "patched with updateMask=network_config.enable_external_ips" \
	"$(requests | jq -r '[.[] | select(.method == "PATCH") | "\(.query) \(.body.networkConfig.enableExternalIps)"] | join(";")')" \
	"updateMask=network_config.enable_external_ips false"
is "same node id" "$(node_id nf-a-0)" "$id0"

# ---- a field that is not patchable: replace, and the plan says which
sed -i 's/  email: trainer@test-project/  email: other@test-project/' fleet.yaml
out=$(tpuform plan -f fleet.yaml 2>&1)
like "service_account forces replacement" "$out" 'service_account += \{.*"trainer@test-project.iam.gserviceaccount.com".*\} -> \{.*"other@test-project.iam.gserviceaccount.com".*\} # forces replacement'
like "nf-a-0 must be replaced" "$out" "# nf-a-0 must be replaced"
ok "apply the replacement" tpuform apply -f fleet.yaml -auto-approve
new=$(node_id nf-a-0)
ok "the node has a new id" test -n "$new" -a "$new" != "$id0"

# ---- the emulator refuses a body the discovery document does not allow
code=$(curl -s -o "$W/bad.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	-d '{"acceleratorType":"v2-8","runtimeVersion":"tpu-ubuntu2204-base","serviceAccount":{"scopes":["x"]}}' \
	"$FAKEGCP_URL/v2/projects/test-project/locations/us-central2-b/nodes?nodeId=bad")
is "a misspelt field (serviceAccount.scopes) is refused with 400" "$code" 400
like "in the API's words" "$(cat "$W/bad.json")" 'Unknown name \\"scopes\\" at .node.service_account.'
code=$(curl -s -o /dev/null -w '%{http_code}' -X PATCH -H 'Content-Type: application/json' -d '{}' \
	"$FAKEGCP_URL/v2/projects/test-project/locations/us-central2-b/nodes/nf-a-0?updateMask=service_account")
is "a patch of a field nodes.patch does not support is refused" "$code" 400

# ---- the node's condition: show and plan
ok "inject a symptom" admin "nodes/us-central2-b/nf-a-0:symptom?value=OUT_OF_MEMORY&worker=0&details=HBM%20full"
ok "inject upcoming maintenance" admin "nodes/us-central2-b/nf-a-0:maintenance?value=SCHEDULED&status=PENDING&start=2030-01-01T00:00:00Z&end=2030-01-01T04:00:00Z"
ok "an unknown symptom type is refused" sh -c "! admin 'nodes/us-central2-b/nf-a-0:symptom?value=BAD' | grep -q '^ok'"
out=$(tpuform show -detail -f fleet.yaml 2>&1)
like "show: symptoms" "$out" "symptoms: OUT_OF_MEMORY \(worker 0\): HBM full"
like "show: maintenance" "$out" "upcoming maintenance: SCHEDULED maintenance PENDING, window 2030-01-01T00:00:00Z to 2030-01-01T04:00:00Z"
out=$(tpuform plan -f fleet.yaml -detailed-exitcode 2>&1)
is "plan: the symptom is a note, not a change (exit 0)" "$?" 0
like "plan: the note" "$out" "note: node 'nf-a-0' symptoms: OUT_OF_MEMORY \(worker 0\): HBM full"

ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

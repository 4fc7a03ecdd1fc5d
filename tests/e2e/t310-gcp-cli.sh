#!/bin/sh
# The gcp provider through the tpuform command against the Cloud TPU API
# emulator (tests/fakegcp), workers reached over SSH (tests/e2e/sshd.sh):
# plan, apply with zone fallback on quota and capacity errors, labels on
# created nodes, another fleet's node left alone, preemption seen by plan
# and healed by apply, destroy leaving nothing, the endpoint policy, a
# service-account key flow with --auth token, and no key material in
# output or state.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t310
export TPUFORM_ACCESS_TOKEN=test-token TPUFORM_SSH_RETRY=2
# Worker addresses are handed out in order, one per worker of every node
# the emulator creates (failed creates included): 10 is plenty here.
gcp_workers_start 10 127.0.30.1 --project test-project --op-seconds 0.2 \
	--quota 'z-q:v2-8:preemptible=0' --capacity z-c=0
# For the emulator's second start, with other options.
EMU="--project test-project --op-seconds 0.2 --worker-ip-base 127.0.30.1 --worker-port $SSHD_PORT --worker-dir $SSHD_DIR"
API="$FAKEGCP_URL/v2/projects/test-project/locations"
nodes() { curl -s "$FAKEGCP_URL/__admin/nodes"; }
# name:zone:state of every node, sorted
summary() { nodes | jq -r '.[] | (.name | split("/")) as $p | "\($p[5]):\($p[3]):\(.state)"' | sort | tr '\n' ' '; }

cat >fleet.yaml <<'YAML'
fleet: gf
provider:
  gcp: { project: test-project }
ssh: { user: root, private_key: "@KEY@", port: @PORT@ }
run: exec sleep 300
groups:
  - name: a
    accelerator_type: v2-8
    runtime_version: tpu-ubuntu2204-base
    zones: [z-q, z-c, z-ok]
    count: 2
    preemptible: true
    labels: { team: nlp }
YAML
sed -i "s|@KEY@|$SSHD_KEY|; s|@PORT@|$SSHD_PORT|" fleet.yaml

# a node of another fleet in the same zone: never touched
curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
	-d '{"acceleratorType":"v2-8","runtimeVersion":"tpu-vm-base","labels":{"tpuform-fleet":"other"}}' \
	"$API/z-ok/nodes?nodeId=other-a-0"
wait_for 5 sh -c "curl -s '$FAKEGCP_URL/__admin/nodes' | grep -q READY"

ok "validate" tpuform validate -f fleet.yaml
ok "validate -remote: the emulator's zones offer v2-8 and the runtime" tpuform validate -f fleet.yaml -remote
sed 's/runtime_version: tpu-ubuntu2204-base/runtime_version: no-such-runtime/' fleet.yaml >badrt.yaml
fails "validate -remote refuses a runtime no zone offers" 1 tpuform validate -f badrt.yaml -remote
like "naming the runtime" "$(cat last.out)" "no-such-runtime"
ok "plain validate does not ask the API" tpuform validate -f badrt.yaml
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan: two creates" "$out" "Plan: 2 to add, 0 to change, 0 to destroy\."
unlike "plan does not touch the other fleet's node" "$out" "other-a-0"

ok "apply" tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "apply falls back past the quota and capacity zones" "$out" "gf-a-0: trying zone z-ok"
like "the quota error quotes the API" "$out" "create node 'gf-a-[01]' in zone 'z-q': HTTP 429 RESOURCE_EXHAUSTED: Quota '[A-Za-z0-9]+PerProjectPerZoneForTPUAPI' exhausted"
like "the capacity error quotes the operation" "$out" "in zone 'z-c': operation failed with code 8 \(RESOURCE_EXHAUSTED\): There is no more capacity in the zone"
like "apply completes" "$out" "Apply complete! Resources: 2 added, 0 changed, 0 destroyed\."
is "both nodes live in z-ok, next to the other fleet's" "$(summary)" "gf-a-0:z-ok:READY gf-a-1:z-ok:READY other-a-0:z-ok:READY "
# the lineage label: the first 16 hex digits of the state's lineage
lin=$(jq -r .lineage tpuform.state.json | tr -d - | cut -c1-16)
is "created nodes carry the fleet, group, index, lineage and user labels" \
	"$(nodes | jq -c '[.[] | select(.labels["tpuform-fleet"] == "gf") | .labels] | sort_by(.["tpuform-index"])')" \
	'[{"team":"nlp","tpuform-fleet":"gf","tpuform-group":"a","tpuform-index":"0","tpuform-lineage":"'"$lin"'"},{"team":"nlp","tpuform-fleet":"gf","tpuform-group":"a","tpuform-index":"1","tpuform-lineage":"'"$lin"'"}]'
is "nothing was left in the zones that failed" "$(nodes | jq '[.[] | select(.name | test("/locations/z-[qc]/"))] | length')" 0

curl -s -o /dev/null -X POST "$FAKEGCP_URL/__admin/nodes/z-ok/gf-a-1:preempt"
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan sees the preemption and replaces the node" "$out" "gf-a-1 must be replaced"
ok "apply replaces it" tpuform apply -f fleet.yaml -auto-approve
is "the replacement is READY" "$(summary)" "gf-a-0:z-ok:READY gf-a-1:z-ok:READY other-a-0:z-ok:READY "

ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
is "destroy leaves only the other fleet's node" "$(summary)" "other-a-0:z-ok:READY "

# plain http to anything but loopback is refused before a request is sent
sed 's|gcp: { project: test-project }|gcp: { project: test-project, endpoint: "http://10.9.8.7:80" }|' fleet.yaml >insecure.yaml
fails "http to a non-loopback endpoint is refused" 1 tpuform plan -f insecure.yaml
like "with a clear message" "$(cat last.out)" "uses plain http to host '10.9.8.7': http is allowed only to loopback hosts"

fakegcp_stop
# service-account key: RS256 JWT exchanged at the key's token_uri
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.pem 2>/dev/null
openssl pkey -in sa.pem -pubout -out sa.pub 2>/dev/null
# shellcheck disable=SC2086
if ! fakegcp_start $EMU --auth token --sa-public-key sa.pub; then
	echo "not ok - the emulator starts with --auth token"
	finish
fi
unset TPUFORM_ACCESS_TOKEN
jq -n --rawfile k sa.pem --arg uri "$FAKEGCP_URL/token" \
	'{type:"service_account", project_id:"test-project", private_key_id:"k1", private_key:$k,
	  client_email:"tpuform@test-project.iam.gserviceaccount.com", token_uri:$uri}' >key.json
sed 's|gcp: { project: test-project }|gcp: { project: test-project, credentials: key.json }|; s|z-q, z-c, z-ok|z1|' fleet.yaml >sa.yaml
ok "apply with a service-account key" tpuform apply -f sa.yaml -auto-approve
cp last.out sa-apply.out
like "it created the nodes" "$(summary)" "gf-a-0:z1:READY gf-a-1:z1:READY"
is "one token served the whole apply" "$(curl -s "$FAKEGCP_URL/__admin/requests" | jq '[.[] | select(.path == "/token")] | length')" 1
tpuform plan -f sa.yaml >sa-plan.out 2>&1
chunk=$(sed -n 5p sa.pem | cut -c1-40)
for f in sa-apply.out sa-plan.out tpuform.state.json; do
	ok "no key material or bearer in $f" sh -c "test -s '$f' && ! grep -qF -- '$chunk' '$f' && ! grep -qi 'bearer' '$f'"
done
ok "destroy with the key" tpuform destroy -f sa.yaml -auto-approve
is "nothing left" "$(summary)" ""
finish

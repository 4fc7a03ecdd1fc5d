#!/bin/sh
# A real client checks the emulator: the Google Cloud CLI (gcloud) drives
# the Cloud TPU operations tpuform relies on against tests/fakegcp, and
# every request it sends must be accepted and every answer read. gcloud is
# pointed at the emulator the documented way:
#   CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU / _COMPUTE  the emulator's URL
#   CLOUDSDK_AUTH_ACCESS_TOKEN                      a fixed bearer
#   CLOUDSDK_CONFIG, HOME                           throwaway directories
#   core/project, --quiet                           no prompts
# (cloud.google.com/sdk/docs/properties). `tpu-vm ssh` runs a fake `ssh`
# first on PATH, so everything gcloud does before connecting (read the
# node, read host keys from guest attributes, read project metadata, patch
# the node's ssh-keys metadata, poll the operation) really happens.
#
# Without gcloud the test prints "1..0 # SKIP", which tests/run.sh counts
# as a skip, never a pass. Multislice (`queued-resources create
# --node-count`) is checked like the rest.
#
# Needs: gcloud (skips without), curl, jq. Prints TAP.
# shellcheck disable=SC2016 # jq programs in single quotes

. "$(dirname "$0")/lib.sh"
setup_dir t360
if ! command -v gcloud >/dev/null 2>&1; then
	echo "1..0 # SKIP gcloud is not installed (the Google Cloud CLI: cloud.google.com/sdk/docs/install)"
	exit 0
fi
for tool in curl jq ssh-keygen; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "not ok 1 - $tool is installed"
		echo "1..1"
		exit 1
	fi
done
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
fakegcp_start --project test-project --op-seconds 0.2 || exit 1
trap 'fakegcp_stop >/dev/null 2>&1' EXIT

mkdir -p "$W/home" "$W/bin"
# The fake ssh: records its arguments, one line per call, and succeeds.
cat >"$W/bin/ssh" <<EOF
#!/bin/sh
printf '%s\n' "\$*" >>"$W/ssh-calls"
exit 0
EOF
chmod +x "$W/bin/ssh"
PATH="$W/bin:$PATH"
HOME="$W/home"
CLOUDSDK_CONFIG="$W/gcloud-config"
CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU="$FAKEGCP_URL/"
CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE="$FAKEGCP_URL/compute/v1/"
CLOUDSDK_AUTH_ACCESS_TOKEN=fake-token
CLOUDSDK_CORE_PROJECT=test-project
CLOUDSDK_CORE_ACCOUNT=tester@example.com
CLOUDSDK_CORE_DISABLE_PROMPTS=1
CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=1
CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1
export PATH HOME CLOUDSDK_CONFIG CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU \
	CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE CLOUDSDK_AUTH_ACCESS_TOKEN CLOUDSDK_CORE_PROJECT \
	CLOUDSDK_CORE_ACCOUNT CLOUDSDK_CORE_DISABLE_PROMPTS CLOUDSDK_CORE_DISABLE_USAGE_REPORTING \
	CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK
Z=us-central2-b

gc() { timeout 60 gcloud "$@" --quiet; }
tpu() { gc compute tpus tpu-vm "$@" --zone "$Z"; }
qr() { gc compute tpus queued-resources "$@" --zone "$Z"; }
# The requests the emulator logged since mark (a count), as a JSON array.
mark() { curl -s "$FAKEGCP_URL/__admin/requests" | jq length; }
since() { curl -s "$FAKEGCP_URL/__admin/requests" | jq -c ".[$1:]"; }
# The last request of METHOD whose path ends with SUFFIX, since mark $1.
last_req() { since "$1" | jq -c --arg m "$2" --arg s "$3" '[.[] | select(.method == $m and (.path | endswith($s)))] | last'; }
# Every answer the emulator gave since mark $1 was a success.
all_2xx() { since "$1" | jq -e 'all(.status < 300)' >/dev/null; }
# The emulator's own view (not gcloud's), for checks gcloud need not read.
node_json() { curl -s "$FAKEGCP_URL/__admin/nodes" | jq -c --arg n "$1" '.[] | select(.name | endswith("/nodes/" + $n))'; }
node_ids() { curl -s "$FAKEGCP_URL/__admin/nodes" | jq -r '[.[] | .name | split("/") | last] | sort | join(" ")'; }
# shellcheck disable=SC2317 # called through wait_for
qr_is() { [ "$(qr_state "$1")" = "$2" ]; }
qr_state() { curl -s "$FAKEGCP_URL/__admin/queuedResources" | jq -r --arg q "$1" '[.[] | select(.name | endswith("/queuedResources/" + $q)) | .state.state] | join(" ")'; }

# ---- tpu-vm create / list / describe --------------------------------------
m=$(mark)
ok "tpu-vm create (v4-16, two workers, labels, metadata) succeeds" \
	tpu create n1 --accelerator-type v4-16 --version tpu-ubuntu2204-base \
	--labels team=nlp --metadata foo=bar
ok "every request of the create was accepted (POST, operation polls)" all_2xx "$m"
is "create sent nodeId as a query parameter" \
	"$(last_req "$m" POST /nodes | jq -r '.query')" "alt=json&nodeId=n1"
is "describe: gcloud reads the node READY with two endpoints" \
	"$(tpu describe n1 --format='value(state,networkEndpoints.len())' 2>&1)" "READY	2"
is "list: gcloud reads the list" "$(tpu list --format='value(name.basename())' 2>&1)" "n1"

# ---- tpu-vm update ---------------------------------------------------------
m=$(mark)
ok "tpu-vm update --update-labels succeeds" tpu update n1 --update-labels owner=alice
is "it patched with updateMask=labels" "$(last_req "$m" PATCH /nodes/n1 | jq -r '.query')" \
	"alt=json&updateMask=labels"
is "the node has both labels" "$(node_json n1 | jq -c .labels)" '{"owner":"alice","team":"nlp"}'
m=$(mark)
ok "tpu-vm update --internal-ips succeeds" tpu update n1 --internal-ips
is "it patched updateMask=network_config.enable_external_ips (the discovery document lists it)" \
	"$(last_req "$m" PATCH /nodes/n1 | jq -r '.query')" \
	"alt=json&updateMask=network_config.enable_external_ips"
is "external IPs are off and the endpoints lost theirs" \
	"$(node_json n1 | jq -c '[.networkConfig.enableExternalIps // false, [.networkEndpoints[].accessConfig.externalIp // empty]]')" \
	'[false,[]]'

# ---- get-guest-attributes ---------------------------------------------------
ga=$(tpu get-guest-attributes n1 --format=json 2>&1)
is "get-guest-attributes: one ssh-ed25519 host key per worker" \
	"$(printf '%s' "$ga" | jq -c '[.[] | select(.key == "ssh-ed25519") | .worker_id] | sort')" '[0,1]'
is "the host keys are well-formed ed25519 public keys" \
	"$(printf '%s' "$ga" | jq -r '.[] | "ssh-ed25519 " + .value' | while read -r l; do
		printf '%s\n' "$l" >"$W/k.pub" && ssh-keygen -l -f "$W/k.pub" | awk '{print $NF}'
	done | sort -u)" "(ED25519)"

# ---- tpu-vm ssh: what gcloud sends to put a key on the node -----------------
m=$(mark)
ok "tpu-vm ssh --worker=all (a fake ssh) succeeds" \
	tpu ssh alice@n1 --worker=all --command=true
is "every request of the ssh was accepted" "$(all_2xx "$m" && echo yes)" yes
is "the requests, in order" \
	"$(since "$m" | jq -r '.[] | .method + " " + (.path | sub(".*/test-project"; "P")) + " " + (.query | sub("alt=json&?"; ""))' |
		sed 's/operations\/.*/operations\/OP /' | uniq | tr '\n' '|')" \
	"GET P/locations/$Z/nodes/n1 |POST P/locations/$Z/nodes/n1:getGuestAttributes |GET P |PATCH P/locations/$Z/nodes/n1 updateMask=metadata|GET P/locations/$Z/operations/OP |GET P/locations/$Z/nodes/n1 |"
key=$(cut -d' ' -f1,2 "$HOME/.ssh/google_compute_engine.pub")
is "the patch kept the node's metadata and added USER:KEY USER to ssh-keys" \
	"$(last_req "$m" PATCH /nodes/n1 | jq -c '.body.metadata | [.foo, (."ssh-keys" | split("\n"))]')" \
	"$(jq -cn --arg k "alice:$key alice" '["bar", ["", $k]]')"
is "the node now carries that key" \
	"$(node_json n1 | jq -r '.metadata."ssh-keys"' | grep -c "^alice:$key alice\$")" 1
is "ssh ran once per worker" "$(wc -l <"$W/ssh-calls" | tr -d ' ')" 2
for k in 0 1; do
	suffix=$(printf '%s' "$ga" | jq -r --arg w "$k" '.[] | select(.worker_id == ($w | tonumber) and .key == "ssh-ed25519") | .value[-6:]')
	like "worker $k: gcloud's HostKeyAlias ends with its guest attribute key's last 6 characters" \
		"$(cat "$W/ssh-calls")" "HostKeyAlias=tpu\\.[0-9]+-$k-$(printf '%s' "$suffix" | sed 's/[+/]/\\&/g') "
done
m=$(mark)
ok "a second tpu-vm ssh succeeds" tpu ssh alice@n1 --worker=0 --command=true
is "and sends no second patch: the key is there" \
	"$(since "$m" | jq '[.[] | select(.method == "PATCH")] | length')" 0

# ---- queued-resources: single node -------------------------------------------
m=$(mark)
ok "queued-resources create (one node) succeeds" \
	qr create q1 --accelerator-type v4-8 --runtime-version tpu-ubuntu2204-base --node-id qn1
ok "every request of the create was accepted" all_2xx "$m"
wait_for 10 qr_is q1 ACTIVE
is "describe: gcloud reads it ACTIVE" "$(qr describe q1 --format='value(state.state)' 2>&1)" ACTIVE
is "list: gcloud reads the list" "$(qr list --format='value(name.basename())' 2>&1)" q1
is "its node exists" "$(node_ids)" "n1 qn1"

# ---- queued-resources: multislice (--node-count) ----------------------------
m=$(mark)
ok "queued-resources create --node-count 2 --node-prefix np --spot succeeds" \
	qr create q2 --accelerator-type v4-16 --runtime-version tpu-ubuntu2204-base \
	--node-count 2 --node-prefix np --spot
ok "every request of the multislice create was accepted" all_2xx "$m"
wait_for 10 qr_is q2 ACTIVE
is "describe: gcloud reads the multislice queued resource ACTIVE with nodeCount 2" \
	"$(qr describe q2 --format='value(state.state,tpu.nodeSpec[0].multisliceParams.nodeCount)' 2>&1)" "ACTIVE	2"
is "its slices np-0 and np-1 exist" "$(node_ids)" "n1 np-0 np-1 qn1"
ok "queued-resources delete --force of the multislice one succeeds" qr delete q2 --force
wait_for 10 qr_is q2 ""

# ---- queued-resources delete --force ----------------------------------------
m=$(mark)
ok "queued-resources delete --force succeeds" qr delete q1 --force
is "gcloud sent force=True (Python's spelling) and it was accepted" \
	"$(last_req "$m" DELETE /queuedResources/q1 | jq -c '[.query, .status]')" '["alt=json&force=True",200]'
wait_for 10 qr_is q1 ""
is "the queued resource is gone" "$(qr_state q1)" ""
is "and its node with it" "$(node_ids)" "n1"

# ---- tpu-vm delete ------------------------------------------------------------
m=$(mark)
ok "tpu-vm delete succeeds" tpu delete n1
ok "every request of the delete was accepted" all_2xx "$m"
is "list: gcloud reads an empty list (proto3: no nodes key)" "$(tpu list --format='value(name)' 2>&1)" ""
is "the emulator answered gcloud with no 4xx or 5xx at all" \
	"$(since 0 | jq '[.[] | select(.status >= 400)] | length')" 0

fakegcp_stop || echo "not ok - the emulator exited cleanly"
trap - EXIT
finish

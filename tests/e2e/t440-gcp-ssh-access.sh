#!/bin/sh
# SSH access to Cloud TPU workers, the way gcloud gets it, against sshd
# workers whose authorized_keys start EMPTY: only the emulator's guest agent
# writes them, from the nodes' ssh-keys metadata or from keys imported with
# OS Login. So every job here runs only because tpuform sent its key.
#   1. create: the node's metadata carries "root:KEY root" (the key derived
#      from the private key: no .pub next to it); host keys pinned from the
#      guest attributes, no trust-on-first-use warning;
#   2. an existing node without the key (adopted) is patched
#      (updateMask=metadata) keeping its other entries and keys; a plan
#      never patches;
#   3. a worker whose host key is not its guest attribute is refused before
#      any credential or file reaches it; fixed, it is provisioned;
#   4. OS Login (ssh.os_login, then enable-oslogin in node metadata): the
#      key is imported for the account tokeninfo names, with an expiry, and
#      tpuform logs in as the POSIX user the import returns; no metadata
#      write.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t440
# A worker's "starts" file once its job has written it: provisioning
# returns when the session is up, the job writes a moment later.
settled() { wait_for 10 test -s "$1"; cat "$1"; }
export TPUFORM_SSH_RETRY=3
gcp_workers_start 12 127.0.44.1 --op-seconds 0.1 --oslogin-username root \
	--token-email tester@example.com
API="$FAKEGCP_URL/v2/projects/test-project/locations/z1"
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
node_md() { curl -s "$API/nodes/$1" | jq -c '.metadata // {}'; }
# harness worker index of NODE's worker W, from the emulator
widx() { sshd_index "$(curl -s "$API/nodes/$1" | jq -r ".networkEndpoints[$2].ipAddress")"; }
keys_of() { cat "$W/workers/w$1/home/.ssh/authorized_keys"; }
# sshd log lines of worker I where a client named a user or offered a key
logins() { cat "$W/workers/w$1/log" "$W/workers/w$1/log.start" | grep -cE 'publickey|authenticating user|user root'; }

# The fleet's key has no .pub beside it: tpuform derives the public key.
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
PUB=$(cut -d' ' -f1,2 "$SSHD_KEY.pub")
cat >fleet.yaml <<YAML
fleet: ak
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
run: |
  echo "\$TPUFORM_NODE \$TPUFORM_WORKER_ID" >> ~/starts
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1 }
YAML

# ---- 1. create ---------------------------------------------------------------
is "every worker's authorized_keys starts empty" "$(cat "$W"/workers/w*/home/.ssh/authorized_keys)" ""
ok "apply" tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
wait_for 10 sh -c "test \"\$(cat '$W'/workers/w*/home/starts 2>/dev/null | wc -l)\" -ge 2"
like "the job runs on both workers" "$(cat "$W"/workers/w*/home/starts | sort | tr '\n' ';')" "^ak-a-0 0;ak-a-0 1;$"
body=$(requests | jq -c '[.[] | select(.method == "POST" and (.path | endswith("/nodes")))][0].body.metadata')
is "the create request carries ssh-keys 'USER:KEY USER'" "$body" \
	"$(jq -cn --arg k "root:$PUB root" '{"ssh-keys": $k}')"
is "which the guest agent installed" "$(keys_of 0)" "$PUB root"
is "no metadata patch was needed" "$(requests | jq '[.[] | select(.method == "PATCH")] | length')" 0
is "the guest attributes were read once for the node" \
	"$(requests | jq '[.[] | select(.path | endswith(":getGuestAttributes"))] | length')" 1
for w in 0 1; do
	is "worker $w pinned its published host key" \
		"$(jq -r ".nodes[0].workers[$w].host_key" tpuform.state.json)" "$(sshd_fingerprint "$(widx ak-a-0 $w)")"
done
unlike "nothing was trusted on first use" "$out" "trusting the key it presents on first use"

# ---- 2 and 3. an existing node without the key; an impostor ----------------
# A node of this fleet made elsewhere: other metadata, someone else's key.
# It carries this state's lineage label, as a node whose create an
# interrupted apply sent does (plan/ownership.h): so it is adopted.
BOB="bob:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBobBobBobBobBobBobBobBobBobBobBobBobBobBob bob"
lin=$(jq -r .lineage tpuform.state.json | tr -d - | cut -c1-16)
jq -n --arg bob "$BOB" --arg lin "$lin" '{acceleratorType: "v4-16", runtimeVersion: "tpu-ubuntu2204-base",
	networkConfig: {enableExternalIps: true},
	labels: {"tpuform-fleet": "ak", "tpuform-group": "a", "tpuform-index": "1", "tpuform-lineage": $lin},
	metadata: {"startup-script": "echo hi", "ssh-keys": $bob}}' >node.json
ok "a node without our key exists" sh -c "curl -sf -X POST -d @node.json '$API/nodes?nodeId=ak-a-1' >/dev/null"
sleep 0.5
i0=$(widx ak-a-1 0)
i1=$(widx ak-a-1 1)
is "its workers have no key for root (bob's is bob's)" "$(keys_of "$i0")" ""
# Worker 1's guest attribute names another key than its sshd has: an impostor
# answers at its address (or the VM was tampered with).
ssh-keygen -q -t ed25519 -N '' -C impostor -f "$W/impostor"
cp "$W/workers/w$i1/hostkey.pub" "$W/real-hostkey.pub"
cp "$W/impostor.pub" "$W/workers/w$i1/hostkey.pub"
imp_fp=$(ssh-keygen -l -E sha256 -f "$W/impostor.pub" | awk '{print $2}')
real_fp=$(ssh-keygen -l -E sha256 -f "$W/real-hostkey.pub" | awk '{print $2}')
sed -i 's/count: 1/count: 2/' fleet.yaml
# ak-a-0 loses our key (someone rewrote its metadata): a plan's status
# probes still write nothing, they only fail to log in.
curl -s -X PATCH -d '{"metadata": {"startup-script": "keep"}}' "$API/nodes/ak-a-0?updateMask=metadata" >/dev/null
sleep 0.3
is "ak-a-0's metadata no longer has it" "$(node_md ak-a-0)" '{"startup-script":"keep"}'
is "nor do its workers" "$(keys_of "$(widx ak-a-0 0)")" ""
curl -s -X POST "$FAKEGCP_URL/__admin/requests:clear" >/dev/null
probed_before=$(logins "$(widx ak-a-0 0)")
tpuform plan -f fleet.yaml >plan.out 2>&1
is "a plan writes no metadata" "$(requests | jq '[.[] | select(.method == "PATCH")] | length')" 0
like "it probed ak-a-0's workers" "$(($(logins "$(widx ak-a-0 0)") - probed_before))" "^[1-9]"
curl -s -X POST "$FAKEGCP_URL/__admin/requests:clear" >/dev/null
auth_before=$(logins "$i1")
fails "apply adopts the node and refuses the impostor" 1 tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "naming the worker and the guest attributes" "$out" \
	"host key of worker 'ak-a-1/w1' at $(sshd_addr "$i1") port $SSHD_PORT is not the one the node's guest attributes \(hostkeys/\) names"
re() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'; }
like "with both fingerprints" "$out" "expected $(re "$imp_fp") \(ssh-ed25519\), the worker presents $(re "$real_fp")"
is "no user or key was offered to it" "$(logins "$i1")" "$auth_before"
ok "nothing was sent to it" test ! -e "$W/workers/w$i1/home/tpuform"
is "no host key is pinned for it" "$(jq -r '.nodes[] | select(.name == "ak-a-1") | .workers[1].host_key' tpuform.state.json)" null
patch=$(requests | jq -c '[.[] | select(.method == "PATCH" and (.path | endswith("/nodes/ak-a-1")))]')
is "one metadata patch" "$(printf '%s' "$patch" | jq -r '.[] | .query')" "updateMask=metadata"
is "keeping every entry and the old key, ours appended" "$(printf '%s' "$patch" | jq -c '.[0].body')" \
	"$(jq -cn --arg k "$BOB
root:$PUB root" '{metadata: {"startup-script": "echo hi", "ssh-keys": $k}}')"
is "the node has it" "$(node_md ak-a-1)" "$(printf '%s' "$patch" | jq -c '.[0].body.metadata')"
is "worker 0 of the adopted node runs the job" "$(settled "$W/workers/w$i0/home/starts")" "ak-a-1 0"

cp "$W/real-hostkey.pub" "$W/workers/w$i1/hostkey.pub"
curl -s -X POST "$FAKEGCP_URL/__admin/requests:clear" >/dev/null
ok "with its real key published, apply provisions it" tpuform apply -f fleet.yaml -auto-approve
is "its job runs" "$(settled "$W/workers/w$i1/home/starts")" "ak-a-1 1"
is "its key is pinned" "$(jq -r '.nodes[] | select(.name == "ak-a-1") | .workers[1].host_key' tpuform.state.json)" \
	"$(sshd_fingerprint "$i1")"
is "the key was not patched in twice" \
	"$(requests | jq '[.[] | select(.method == "PATCH" and (.path | endswith("/nodes/ak-a-1")))] | length')" 0
# Like gcloud's ssh, exec (and apply, logs, ssh) puts the key back.
ok "exec reaches every worker" tpuform exec -f fleet.yaml -all -- true
# The project's metadata comes from Compute Engine: when that endpoint is
# down, the warning names it (not the Cloud TPU endpoint), and exec goes on.
ok "exec with Compute Engine unreachable still runs" \
	env TPUFORM_COMPUTE_ENDPOINT=http://127.0.0.1:9 "$TPUFORM" exec -f fleet.yaml ak-a-0 -- true
like "the warning names the Compute Engine endpoint that failed" "$(cat last.out)" \
	"read the metadata of project 'test-project': cannot reach 'http://127.0.0.1:9'"
is "ak-a-0 has our key again, its other entries kept" "$(node_md ak-a-0 | jq -c '[.["startup-script"], .["ssh-keys"]]')" \
	"$(jq -cn --arg k "
root:$PUB root" '["keep", $k]')"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve

# ---- 4. OS Login ---------------------------------------------------------------
# An organization policy requires OS Login (no metadata says so): the
# guest agents install only keys imported through OS Login. ssh.user is
# one the workers do not have: only the POSIX user that OS Login returns
# (root here) can log in.
curl -s -X POST "$FAKEGCP_URL/__admin/oslogin?required=true" >/dev/null
mkdir ol
sed -e 's/fleet: ak/fleet: ol/' -e 's/user: root,/user: nobody-here, os_login: true,/' \
	-e 's/count: 2/count: 1/' fleet.yaml >ol/fleet.yaml
cd ol || exit 1
curl -s -X POST "$FAKEGCP_URL/__admin/requests:clear" >/dev/null
sed 's/user: nobody-here, os_login: true,/user: root,/' fleet.yaml >plain.yaml
fails "without ssh.os_login the metadata key is refused" 1 tpuform apply -f plain.yaml -auto-approve
like "and the error says what to set" "$(cat "$W/last.out")" "ssh.os_login: true"
ok "destroy it" tpuform destroy -f plain.yaml -auto-approve
curl -s -X POST "$FAKEGCP_URL/__admin/requests:clear" >/dev/null
ok "apply with ssh.os_login" tpuform apply -f fleet.yaml -auto-approve
w0=$(widx ol-a-0 0)
is "the job runs" "$(settled "$W/workers/w$w0/home/starts")" "ol-a-0 0"
imp=$(requests | jq -c '[.[] | select(.path | endswith(":importSshPublicKey"))]')
is "the key was imported once" "$(printf '%s' "$imp" | jq length)" 1
is "for the account tokeninfo names, in the fleet's project" \
	"$(printf '%s' "$imp" | jq -r '.[0] | "\(.path) \(.query)"')" \
	"/v1/users/tester@example.com:importSshPublicKey projectId=test-project"
is "with the key" "$(printf '%s' "$imp" | jq -r '.[0].body.key')" "$PUB"
now_us=$(($(date +%s) * 1000000))
ok "and an expiry in the future" test "$(printf '%s' "$imp" | jq -r '.[0].body.expirationTimeUsec')" -gt "$now_us"
is "the token went to tokeninfo in a form, not a URL" \
	"$(requests | jq -r '[.[] | select(.path == "/tokeninfo")][0] | "\(.method) \(.query)"')" "POST null"
is "the worker's keys come from OS Login" "$(keys_of "$w0")" "$PUB"
is "no metadata was patched" "$(requests | jq '[.[] | select(.method == "PATCH")] | length')" 0
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve

# enable-oslogin in a node's metadata turns it on without ssh.os_login.
curl -s -X POST "$FAKEGCP_URL/__admin/oslogin?required=false" >/dev/null
lin=$(jq -r .lineage tpuform.state.json | tr -d - | cut -c1-16)
jq --arg lin "$lin" '.labels["tpuform-fleet"] = "ol" | .labels["tpuform-index"] = "0" | .labels["tpuform-lineage"] = $lin
	| .metadata = {"enable-oslogin": "TRUE"}' ../node.json >ol-node.json
ok "a node with enable-oslogin=TRUE" sh -c "curl -sf -X POST -d @ol-node.json '$API/nodes?nodeId=ol-a-0' >/dev/null"
sleep 0.5
curl -s -X POST "$FAKEGCP_URL/__admin/requests:clear" >/dev/null
sed 's/ os_login: true,//' fleet.yaml >meta.yaml
ok "apply adopts and provisions it through OS Login" tpuform apply -f meta.yaml -auto-approve
is "its job runs" "$(settled "$W/workers/w$(widx ol-a-0 0)/home/starts")" "ol-a-0 0"
is "no metadata was patched" "$(requests | jq '[.[] | select(.method == "PATCH")] | length')" 0
is "the key was imported" "$(requests | jq '[.[] | select(.path | endswith(":importSshPublicKey"))] | length')" 1
is "with the key OS Login holds" "$(keys_of "$(widx ol-a-0 0)")" "$PUB"
ok "destroy" tpuform destroy -f meta.yaml -auto-approve
cd "$W" || exit 1
finish

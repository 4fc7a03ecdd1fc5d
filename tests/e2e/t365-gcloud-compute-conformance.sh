#!/bin/sh
# A real client checks the emulator's Compute Engine subset: the Google
# Cloud CLI (gcloud 528) drives TPU VM instances, workload policies,
# instance templates and managed instance groups against tests/fakegcp,
# and every request it sends must be accepted and every answer read. Then
# the emulator's strictness: requests gcloud would never send, made with
# curl, must be refused as Google refuses them.
#
# gcloud is pointed at the emulator as in t360:
#   CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE  $FAKEGCP_URL/compute/v1/ (used
#       verbatim by every track, so `gcloud alpha` also speaks to /compute/v1/:
#       BULK mode and flex-start exist only in gcloud 528's alpha surface)
#   CLOUDSDK_AUTH_ACCESS_TOKEN  a bearer the emulator issued (--auth token)
#   CLOUDSDK_CONFIG, HOME       throwaway directories
#
# Without gcloud the test prints "1..0 # SKIP". Needs curl, jq, ssh-keygen.
# shellcheck disable=SC2016 # jq programs in single quotes

. "$(dirname "$0")/lib.sh"
setup_dir t365
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
# Worker 0 laid out as tests/e2e/sshd.sh does (no sshd needed here): the first
# instance gets its address, so the guest agent publishes this host key and
# writes this authorized_keys.
mkdir -p "$W/workers/w0/home"
ssh-keygen -q -t ed25519 -N '' -f "$W/workers/w0/hostkey"
# Stages of 60 s: instances move on only when the test settles them, so
# "still PENDING after gcloud's create returned" holds even when gcloud
# takes seconds to exit on a loaded machine (it once saw STAGING at 5 s).
fakegcp_start --project test-project --op-seconds 0.2 --compute-stage-seconds 60 \
	--compute-wait-seconds 2 --auth token --authorized-user cid:csecret:rtok \
	--worker-dir "$W/workers" || exit 1
trap 'fakegcp_stop >/dev/null 2>&1' EXIT
TOKEN=$(curl -s "$FAKEGCP_URL/token" -d grant_type=refresh_token -d client_id=cid \
	-d client_secret=csecret -d refresh_token=rtok | jq -r .access_token)

mkdir -p "$W/home"
HOME="$W/home"
CLOUDSDK_CONFIG="$W/gcloud-config"
CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE="$FAKEGCP_URL/compute/v1/"
CLOUDSDK_AUTH_ACCESS_TOKEN=$TOKEN
CLOUDSDK_CORE_PROJECT=test-project
CLOUDSDK_CORE_ACCOUNT=tester@example.com
CLOUDSDK_CORE_DISABLE_PROMPTS=1
CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=1
CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1
export HOME CLOUDSDK_CONFIG CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE CLOUDSDK_AUTH_ACCESS_TOKEN \
	CLOUDSDK_CORE_PROJECT CLOUDSDK_CORE_ACCOUNT CLOUDSDK_CORE_DISABLE_PROMPTS \
	CLOUDSDK_CORE_DISABLE_USAGE_REPORTING CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK
ZE=us-east5-b   # v6e
ZC=us-central1-c  # TPU7x
P=projects/test-project
API=$FAKEGCP_URL/compute/v1/$P
IMG6=ubuntu-accel-2204-amd64-tpu-v5e-v5p-v6e
IMG7=ubuntu-accel-2404-amd64-tpu-tpu7x

gc() { timeout 90 gcloud "$@" --quiet; }
mark() { curl -s "$FAKEGCP_URL/__admin/requests" | jq length; }
since() { curl -s "$FAKEGCP_URL/__admin/requests" | jq -c ".[$1:]"; }
last_req() { since "$1" | jq -c --arg m "$2" --arg s "$3" '[.[] | select(.method == $m and (.path | endswith($s)))] | last'; }
# shellcheck disable=SC2317 # called through ok
all_2xx() { since "$1" | jq -e 'all(.status < 300)' >/dev/null; }
# The emulator's own view, and "everything due now" (no waiting on timers).
view() { curl -s "$FAKEGCP_URL/__admin/compute"; }
settle() { curl -s -X POST "$FAKEGCP_URL/__admin/compute:settle" >/dev/null; }
inst() { view | jq -c --arg n "$1" '.instances[] | select(.name == $n)'; }
# curl with the bearer: METHOD PATH [BODY]; prints the body, then the status on its own line.
api() {
	if [ $# -ge 3 ]; then
		curl -s -w '\n%{http_code}' -X "$1" -H "Authorization: Bearer $TOKEN" "$API/$2" -d "$3"
	else
		curl -s -w '\n%{http_code}' -X "$1" -H "Authorization: Bearer $TOKEN" "$API/$2"
	fi
}
status_of() { printf '%s\n' "$1" | tail -n 1; }
body_of() { printf '%s\n' "$1" | sed '$d'; }

# ---- instances create: v6e SPOT, TPU7x on-demand -----------------------------
m=$(mark)
ok "instances create ct6e-standard-4t SPOT (DELETE on preemption, guest attributes) succeeds" \
	gc compute instances create v6 --zone=$ZE --machine-type=ct6e-standard-4t \
	--image-family=$IMG6 --image-project=ubuntu-os-accelerator-images \
	--maintenance-policy=TERMINATE --provisioning-model=SPOT --instance-termination-action=DELETE \
	--scopes=cloud-platform --metadata=enable-guest-attributes=TRUE --labels=fleet=f1,group=g1
ok "every request of the create was accepted (zone GET, insert, operation wait, GET)" all_2xx "$m"
is "gcloud waited with POST .../operations/OP/wait" \
	"$(since "$m" | jq -r '[.[] | select(.path | endswith("/wait")) | .method] | unique | join(" ")')" POST
is "the instance carries SPOT, DELETE and the labels" \
	"$(inst v6 | jq -c '[.scheduling.provisioningModel, .scheduling.preemptible, .scheduling.instanceTerminationAction, .labels]')" \
	'["SPOT",true,"DELETE",{"fleet":"f1","group":"g1"}]'
ok "instances create tpu7x-standard-4t on demand (global image family scope) succeeds" \
	gc compute instances create t7 --zone=$ZC --machine-type=tpu7x-standard-4t \
	--image-family=$IMG7 --image-project=ubuntu-os-accelerator-images --image-family-scope=global \
	--maintenance-policy=TERMINATE --no-address --metadata=enable-guest-attributes=TRUE
is "the insert operation is done while the instance is still PENDING (TPU instances start there)" \
	"$(inst t7 | jq -r .status)" PENDING
settle

# ---- list / describe ------------------------------------------------------------
is "list (aggregated): gcloud reads both RUNNING" \
	"$(gc compute instances list --format='value(name,status)' 2>&1 | sort | tr '\t\n' ' |')" \
	"t7 RUNNING|v6 RUNNING|"
m=$(mark)
is "list --zones (two: one /batch/compute/v1 request) --filter=scheduling.provisioningModel=SPOT" \
	"$(gc compute instances list --zones=$ZE,$ZC --filter=scheduling.provisioningModel=SPOT --format='value(name)' 2>&1)" v6
is "the batch held one list per zone, each logged as its own request" \
	"$(since "$m" | jq -c '[.[] | select(.path | endswith("/instances")) | .path | split("/")[-2]] | sort')" \
	"[\"$ZC\",\"$ZE\"]"
like "the filter went to the server in the regex form" \
	"$(since "$m" | jq -r '.[] | .query // empty')" 'filter=scheduling\.provisioningModel(\+|%20)eq(\+|%20)SPOT'
is "describe: gcloud reads status, machine type and internal IP" \
	"$(gc compute instances describe v6 --zone=$ZE --format='value(status,machineType.basename(),networkInterfaces[0].networkIP)' 2>&1)" \
	"RUNNING	ct6e-standard-4t	127.0.10.1"

# ---- guest attributes, add-metadata --------------------------------------------
ga=$(gc compute instances get-guest-attributes v6 --zone=$ZE --query-path=hostkeys/ --format=json 2>&1)
printf 'ssh-ed25519 %s\n' "$(printf '%s' "$ga" | jq -r '.[] | select(.key == "ssh-ed25519") | .value')" >"$W/k.pub"
is "get-guest-attributes: a well-formed ssh-ed25519 host key" \
	"$(ssh-keygen -l -f "$W/k.pub" 2>&1 | awk '{print $NF}')" "(ED25519)"
is "it is the worker's own host key (the guest agent publishes hostkey.pub)" \
	"$(cut -d' ' -f2 "$W/k.pub")" "$(cut -d' ' -f2 "$W/workers/w0/hostkey.pub")"
is "the worker's authorized_keys is empty: no ssh-keys in the metadata yet" \
	"$(wc -c <"$W/workers/w0/home/.ssh/authorized_keys" | tr -d ' ')" 0
fp0=$(inst v6 | jq -r .metadata.fingerprint)
m=$(mark)
ok "add-metadata ssh-keys succeeds (read, setMetadata with the fingerprint, wait)" \
	gc compute instances add-metadata v6 --zone=$ZE --metadata=ssh-keys='root:ssh-ed25519 AAAAKEY root'
is "setMetadata carried the fingerprint gcloud had read (apitools may re-encode it URL-safe)" \
	"$(last_req "$m" POST /setMetadata | jq -r '.body.fingerprint' | tr -- '-_' '+/')" "$fp0"
fp=$(inst v6 | jq -r .metadata.fingerprint)
is "the guest agent wrote the key to the worker's authorized_keys" \
	"$(cat "$W/workers/w0/home/.ssh/authorized_keys")" "ssh-ed25519 AAAAKEY root"
curl -s -X POST "$FAKEGCP_URL/__admin/oslogin?required=true" >/dev/null
is "OS Login required (an organization policy): the agent drops the metadata key" \
	"$(wc -c <"$W/workers/w0/home/.ssh/authorized_keys" | tr -d ' ')" 0
curl -s -X POST "$FAKEGCP_URL/__admin/oslogin?required=false" >/dev/null
is "and writes it back when the policy goes" \
	"$(cat "$W/workers/w0/home/.ssh/authorized_keys")" "ssh-ed25519 AAAAKEY root"
is "the instance keeps both keys, under a new fingerprint" \
	"$(inst v6 | jq -c '[.metadata.items[].key]')" '["enable-guest-attributes","ssh-keys"]'
r=$(api POST "zones/$ZE/instances/v6/setMetadata" '{"fingerprint":"c3RhbGVmcD0=","items":[]}')
is "setMetadata with a stale fingerprint: 412 conditionNotMet" \
	"$(status_of "$r") $(body_of "$r" | jq -r '.error.errors[0].reason')" "412 conditionNotMet"
r=$(api POST "zones/$ZE/instances/v6/setMetadata" '{"items":[]}')
is "setMetadata without a fingerprint: 400 required" \
	"$(status_of "$r") $(body_of "$r" | jq -r '.error.errors[0].reason')" "400 required"
is "the refused writes changed nothing" "$(inst v6 | jq -r .metadata.fingerprint)" "$fp"

m=$(mark)
ok "add-labels succeeds (read, setLabels with the labelFingerprint, wait)" \
	gc compute instances add-labels v6 --zone=$ZE --labels=owner=alice
ok "every request of add-labels was accepted" all_2xx "$m"
is "the instance has the three labels" "$(inst v6 | jq -c .labels)" '{"fleet":"f1","group":"g1","owner":"alice"}'
is "machine-types list --zones: the TPU7x types, with their chips" \
	"$(gc compute machine-types list --zones=$ZC --filter='name~tpu7x' --format='value(name,guestCpus)' 2>&1 | tr '\t\n' ' |')" \
	"tpu7x-standard-1t 56|tpu7x-standard-4t 224|"

# ---- workload policy, template, MIG (BULK) -------------------------------------
m=$(mark)
ok "resource-policies create workload-policy HIGH_THROUGHPUT 2x2x2 succeeds" \
	gc compute resource-policies create workload-policy wp-2x2x2 --type=HIGH_THROUGHPUT \
	--accelerator-topology=2x2x2 --region=us-central1
ok "instance-templates create (tpu7x-standard-4t, SPOT, labels) succeeds" \
	gc compute instance-templates create tmpl7 --machine-type=tpu7x-standard-4t \
	--image-family=$IMG7 --image-project=ubuntu-os-accelerator-images \
	--maintenance-policy=TERMINATE --provisioning-model=SPOT --instance-termination-action=DELETE \
	--metadata=enable-guest-attributes=TRUE --labels=fleet=f1,group=slice
ok "alpha instance-groups managed create --size=2 --target-size-policy-mode=bulk succeeds" \
	gc alpha compute instance-groups managed create s7 --zone=$ZC --size=2 \
	--template=$P/global/instanceTemplates/tmpl7 \
	--workload-policy=$P/regions/us-central1/resourcePolicies/wp-2x2x2 \
	--target-size-policy-mode=bulk --default-action-on-vm-failure=do-nothing
ok "every request of policy, template and MIG was accepted" all_2xx "$m"
is "the MIG insert body: BULK, DO_NOTHING, the workload policy" \
	"$(last_req "$m" POST /instanceGroupManagers | jq -c '.body | [.targetSize, .targetSizePolicy.mode, .instanceLifecyclePolicy.defaultActionOnFailure, (.resourcePolicies.workloadPolicy | split("/") | last)]')" \
	'[2,"BULK","DO_NOTHING","wp-2x2x2"]'
settle
li=$(gc compute instance-groups managed list-instances s7 --zone=$ZC --format='value(name,instanceStatus,currentAction)' 2>&1)
is "list-instances: two RUNNING members, no action" \
	"$(printf '%s\n' "$li" | awk '{print $2, $3}' | sort | uniq -c | awk '{print $1, $2, $3}')" "2 RUNNING NONE"
like "members are named after the MIG with a 4-character suffix" "$(printf '%s\n' "$li" | awk '{print $1}' | tr '\n' ' ')" \
	'^s7-[a-z0-9]{4} s7-[a-z0-9]{4} $'
m1=$(printf '%s\n' "$li" | awk 'NR == 1 {print $1}')
is "instance-groups managed list (aggregated MIGs, zonal instanceGroups): size 2 of 2" \
	"$(gc compute instance-groups managed list --format='value(name,size,targetSize)' 2>&1)" "s7	2	2"
is "members carry the template's labels" "$(inst "$m1" | jq -c .labels)" '{"fleet":"f1","group":"slice"}'
is "describe: stable, topology ACTIVE (status the provider must read)" \
	"$(gc compute instance-groups managed describe s7 --zone=$ZC --format=json 2>&1 | jq -c '[.status.isStable, .status.appliedAcceleratorTopologies[0].state, .status.currentInstanceStatuses.running]')" \
	'[true,"ACTIVE",2]'

# ---- preemption of a member ----------------------------------------------------
ok "admin: preempt one member" curl -sf -X POST "$FAKEGCP_URL/__admin/compute/instances/$ZC/$m1:preempt"
settle
is "operations list --filter=operationType=compute.instances.preempted finds it" \
	"$(gc compute operations list --zones=$ZC --filter=operationType=compute.instances.preempted --format='value(targetLink.basename())' 2>&1)" "$m1"
is "one aggregated list of operations finds the preemption too (no per-zone call)" \
	"$(api GET 'aggregated/operations?filter=operationType%20eq%20%22.*compute%5C.instances%5C.preempted.*%22&returnPartialSuccess=true' | sed '$d' | jq -r --arg z "zones/$ZC" '.items[$z].operations[] | .targetLink | split("/") | last')" "$m1"
is "the member is gone (DELETE); DO_NOTHING leaves it; the topology is INCOMPLETE" \
	"$(curl -s -X POST -H "Authorization: Bearer $TOKEN" "$API/zones/$ZC/instanceGroupManagers/s7/listManagedInstances" | jq -c --arg n "$m1" '[.managedInstances[] | select(.name == $n) | .instanceStatus // "none"]')|$(api GET "zones/$ZC/instanceGroupManagers/s7" | sed '$d' | jq -r '.status.appliedAcceleratorTopologies[0].state')" \
	'["none"]|INCOMPLETE'

# ---- delete: in-use policy refused, MIG, template, policy, instance ------------
r=$(api DELETE "regions/us-central1/resourcePolicies/wp-2x2x2")
is "deleting a workload policy a MIG uses: 400 resourceInUseByAnotherResource" \
	"$(status_of "$r") $(body_of "$r" | jq -r '.error.errors[0].reason')" "400 resourceInUseByAnotherResource"
m=$(mark)
ok "instance-groups managed delete succeeds" gc compute instance-groups managed delete s7 --zone=$ZC
settle
is "the MIG and its members are gone" "$(view | jq -c '[(.instanceGroupManagers | length), ([.instances[] | select(.name | startswith("s7-"))] | length)]')" '[0,0]'
ok "instance-templates delete succeeds" gc compute instance-templates delete tmpl7
ok "resource-policies delete succeeds" gc compute resource-policies delete wp-2x2x2 --region=us-central1
ok "instances delete succeeds" gc compute instances delete t7 --zone=$ZC
ok "every request of the deletes was accepted" all_2xx "$m"
is "the request log shows the one DELETE of the MIG (what a test of slice recovery asserts on)" \
	"$(since 0 | jq '[.[] | select(.method == "DELETE" and (.path | endswith("/instanceGroupManagers/s7")))] | length')" 1
settle
is "only v6 is left" "$(view | jq -r '[.instances[].name] | join(" ")')" v6

# ---- capacity: stockout and quota as gcloud shows them ---------------------------
curl -s -X POST "$FAKEGCP_URL/__admin/compute/zones/$ZE:stockout?value=details" >/dev/null
out=$(gc compute instances create so --zone=$ZE --machine-type=ct6e-standard-1t --image-family=$IMG6 \
	--image-project=ubuntu-os-accelerator-images --maintenance-policy=TERMINATE 2>&1)
like "stockout: the operation ends with ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS and gcloud prints it" \
	"$out" 'code: ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS'
is "and no instance was made" "$(inst so)" ""
curl -s -X POST "$FAKEGCP_URL/__admin/compute/zones/$ZE:stockout?value=off" >/dev/null
curl -s -X POST "$FAKEGCP_URL/__admin/compute/quota?region=us-east5&limit=4&mode=sync" >/dev/null
out=$(gc compute instances create qx --zone=$ZE --machine-type=ct6e-standard-1t --image-family=$IMG6 \
	--image-project=ubuntu-os-accelerator-images --maintenance-policy=TERMINATE 2>&1)
like "quota: a 403 quotaExceeded that gcloud prints" "$out" "Quota 'TPUS_PER_TPU_FAMILY' exceeded\.  Limit: 4\.0 in region us-east5\."
curl -s -X POST "$FAKEGCP_URL/__admin/compute/quota?region=us-east5&limit=none" >/dev/null

# ---- flex-start waits for capacity ---------------------------------------------
ok "alpha instances create FLEX_START --async succeeds" \
	gc alpha compute instances create fx --zone=$ZE --machine-type=ct6e-standard-4t \
	--image-family=$IMG6 --image-project=ubuntu-os-accelerator-images --provisioning-model=FLEX_START \
	--instance-termination-action=DELETE --max-run-duration=4h --reservation-affinity=none \
	--maintenance-policy=TERMINATE --no-restart-on-failure --async
settle
is "it waits PENDING, its insert operation still RUNNING" \
	"$(inst fx | jq -r .status) $(view | jq -r '[.operations[] | select(.operationType == "insert" and (.targetLink | endswith("/fx")))][0].status')" \
	"PENDING RUNNING"
curl -s -X POST "$FAKEGCP_URL/__admin/compute/zones/$ZE:flex?value=grant" >/dev/null
settle
is "granted: RUNNING, and gcloud reads FLEX_START" \
	"$(gc compute instances describe fx --zone=$ZE --format='value(status,scheduling.provisioningModel)' 2>&1)" "RUNNING	FLEX_START"

# ---- BULK under a stockout, REPAIR, an unreachable zone (curl) -----------------
TB='{"name":"tb","properties":{"machineType":"ct6e-standard-4t","disks":[{"boot":true,"initializeParams":{"sourceImage":"projects/ubuntu-os-accelerator-images/global/images/family/'$IMG6'"}}],"networkInterfaces":[{}],"scheduling":{"onHostMaintenance":"TERMINATE","provisioningModel":"SPOT","instanceTerminationAction":"STOP"}}}'
api POST global/instanceTemplates "$TB" >/dev/null
api POST regions/us-east5/resourcePolicies '{"name":"wp44e","workloadPolicy":{"type":"HIGH_THROUGHPUT","acceleratorTopology":"4x4"}}' >/dev/null
curl -s -X POST "$FAKEGCP_URL/__admin/compute/zones/$ZE:stockout?value=on" >/dev/null
r=$(api POST "zones/$ZE/instanceGroupManagers" '{"name":"mb","baseInstanceName":"mb-###","targetSize":4,"instanceTemplate":"global/instanceTemplates/tb","resourcePolicies":{"workloadPolicy":"regions/us-east5/resourcePolicies/wp44e"},"targetSizePolicy":{"mode":"BULK"}}')
is "a BULK MIG in a stocked-out zone is accepted" "$(status_of "$r")" 200
settle
mig() { api GET "zones/$ZE/instanceGroupManagers/mb" | sed '$d'; }
is "it makes no VM: 4 planned members, a bulk operation in progress with the stockout as its last error" \
	"$(mig | jq -c '.status | [.currentInstanceStatuses, .bulkInstanceOperation.inProgress, .bulkInstanceOperation.lastProgressCheck.error.errors[0].code, .appliedAcceleratorTopologies[0].state]')" \
	'[{"nonExistent":4},true,"ZONE_RESOURCE_POOL_EXHAUSTED","ACTIVATING"]'
is "listManagedInstances shows them, numbered (mb-###), CREATING, with the last attempt's error" \
	"$(api POST "zones/$ZE/instanceGroupManagers/mb/listManagedInstances" | sed '$d' | jq -c '[.managedInstances[] | [.name, .currentAction, .lastAttempt.errors.errors[0].code]] | .[0]')" \
	'["mb-001","CREATING","ZONE_RESOURCE_POOL_EXHAUSTED"]'
curl -s -X POST "$FAKEGCP_URL/__admin/compute/zones/$ZE:stockout?value=off" >/dev/null
settle
is "capacity back: all four at once, RUNNING, topology ACTIVE" \
	"$(mig | jq -c '.status | [.isStable, .currentInstanceStatuses.running, .appliedAcceleratorTopologies[0].state]')" '[true,4,"ACTIVE"]'
curl -s -X POST "$FAKEGCP_URL/__admin/compute/instances/$ZE/mb-002:preempt" >/dev/null
curl -s -X POST "$FAKEGCP_URL/__admin/compute:settle" >/dev/null
is "a preempted member (STOP) under REPAIR is recreated with its name: the topology is whole again" \
	"$(settle; mig | jq -c '.status | [.currentInstanceStatuses.running, .appliedAcceleratorTopologies[0].state]')|$(inst mb-002 | jq -r .status)" \
	'[4,"ACTIVE"]|RUNNING'
r=$(api POST "zones/$ZE/instanceGroupManagers/mb/resize?size=8")
is "BULK: the size can be raised only from 0" "$(status_of "$r") $(body_of "$r" | jq -r '.error.errors[0].reason')" "400 invalid"
curl -s -X POST "$FAKEGCP_URL/__admin/compute/zones/$ZE:unreachable?value=on" >/dev/null
is "an unreachable zone: the aggregated list names it in unreachables (returnPartialSuccess)" \
	"$(api GET "aggregated/instances?returnPartialSuccess=true" | sed '$d' | jq -c '[.unreachables, .items["zones/'$ZE'"].warning.code]')" \
	'[["zones/'$ZE'"],"UNREACHABLE"]'
is "and the zone's own list is a 503" "$(status_of "$(api GET "zones/$ZE/instances")")" 503
curl -s -X POST "$FAKEGCP_URL/__admin/compute/zones/$ZE:unreachable?value=off" >/dev/null

# ---- what gcloud never sends: the emulator must refuse it ------------------------
BODY='{"name":"neg","machineType":"zones/'$ZE'/machineTypes/ct6e-standard-1t","disks":[{"boot":true,"initializeParams":{"sourceImage":"projects/ubuntu-os-accelerator-images/global/images/family/'$IMG6'"}}],"networkInterfaces":[{}],"scheduling":{"onHostMaintenance":"TERMINATE"}}'
neg() { r=$(api POST "zones/$ZE/instances" "$(printf '%s' "$BODY" | jq -c "$1")"); printf '%s %s' "$(status_of "$r")" "$(body_of "$r" | jq -r '.error.errors[0].reason + ": " + .error.message')"; }
like "a bad enum: 400 invalid, named" "$(neg '.scheduling.provisioningModel = "CHEAP"')" \
	"^400 invalid: Invalid value at 'resource\.scheduling\.provisioning_model' .*\"CHEAP\""
like "an unknown field: 400 invalid" "$(neg '.acceleratorType = "v6e-4"')" \
	'^400 invalid: Invalid JSON payload received\. Unknown name "acceleratorType" at .resource.: Cannot find field\.'
like "a missing required field: 400 required" "$(neg 'del(.machineType)')" \
	"^400 required: Required field 'resource\.machineType' not specified"
like "live migration on a TPU machine type: 400 invalid" "$(neg 'del(.scheduling)')" \
	"^400 invalid: .*onHostMaintenance"
like "a machine type the zone does not offer: 400 invalid" \
	"$(neg '.machineType = "zones/'$ZE'/machineTypes/tpu7x-standard-4t"')" "does not exist in zone"
ok "a 4x4 workload policy (gcloud)" gc compute resource-policies create workload-policy wp44 \
	--type=HIGH_THROUGHPUT --accelerator-topology=4x4 --region=us-central1
ok "a TPU7x template (gcloud)" gc compute instance-templates create t7b \
	--machine-type=tpu7x-standard-4t --image-family=$IMG7 --image-project=ubuntu-os-accelerator-images \
	--maintenance-policy=TERMINATE
r=$(api POST "zones/$ZC/instanceGroupManagers" '{"name":"bad","targetSize":4,"instanceTemplate":"'$P'/global/instanceTemplates/t7b","resourcePolicies":{"workloadPolicy":"'$P'/regions/us-central1/resourcePolicies/wp44"}}')
like "a MIG whose 2-D topology does not fit TPU7x: 400 invalid" \
	"$(status_of "$r") $(body_of "$r" | jq -r .error.message)" \
	"^400 .*Accelerator topology 4x4 is not valid for machine type tpu7x-standard-4t"
r=$(api POST "zones/$ZC/instanceGroupManagers" '{"name":"bad","targetSize":2,"instanceTemplate":"'$P'/global/instanceTemplates/nope"}')
like "a MIG whose template does not exist: 400 invalid" \
	"$(status_of "$r") $(body_of "$r" | jq -r .error.message)" "^400 .*instance template does not exist"
RID=0b6c7a2e-5d1f-4c3e-9a8b-7f6e5d4c3b2a
r1=$(api POST "zones/$ZE/instances?requestId=$RID" "$(printf '%s' "$BODY" | jq -c '.name = "once"')" | sed '$d' | jq -r .name)
r2=$(api POST "zones/$ZE/instances?requestId=$RID" "$(printf '%s' "$BODY" | jq -c '.name = "once"')" | sed '$d' | jq -r .name)
is "a repeated requestId: the same operation" "$r2" "$r1"
is "and one VM" "$(view | jq '[.instances[] | select(.name == "once")] | length')" 1
r=$(curl -s -w '\n%{http_code}' "$API/zones/$ZE/instances")
is "no bearer: 401 required (Login Required.)" \
	"$(status_of "$r") $(body_of "$r" | jq -r '.error.errors[0].reason')" "401 required"
fakegcp_stop || echo "not ok - the emulator exited cleanly"
trap - EXIT
finish

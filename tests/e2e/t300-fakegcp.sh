#!/bin/sh
# The Cloud TPU API emulator itself (tests/fakegcp), driven with curl and jq:
# nodes and operations, pagination, request validation in the real API's
# words, quota and capacity, admin actions, the request log, the token
# endpoint and --auth token, the metadata server, faults, keep-alive and
# concurrent clients, and clean shutdown (no sanitizer report when
# FAKEGCP_BIN is a sanitizer build).
#
# Needs: curl, jq, openssl, basenc (coreutils). Prints TAP.
# shellcheck disable=SC2016 # $vars in single quotes are for eval, sh -c and jq

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TPF_ROOT=${TPF_ROOT:-$ROOT}
. "$ROOT/tests/e2e/fakegcp.sh"

echo "TAP version 13"
n=0
failed=0
T=$(mktemp -d "${TMPDIR:-/tmp}/t300.XXXXXX")
trap 'fakegcp_stop >/dev/null 2>&1; rm -rf "$T"' EXIT

for tool in curl jq openssl basenc; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "not ok 1 - $tool is installed (apt-get install $tool)"
		echo "1..1"
		exit 1
	fi
done

pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() {
	n=$((n + 1)); failed=$((failed + 1))
	echo "not ok $n - $1"
	[ -s "$T/body" ] && sed 's/^/#   /' "$T/body" | head -20
}
# check DESCRIPTION COMMAND...: one TAP line from a command's status.
check() { _d=$1; shift; if "$@"; then pass "$_d"; else fail "$_d"; fi; }
# jqt FILTER: true if FILTER holds on the last answer body.
jqt() { jq -e "$@" "$T/body" >/dev/null 2>&1; }
# req METHOD PATH [curl args...]: the answer body goes to $T/body; prints the status.
req() {
	_m=$1; _p=$2; shift 2
	curl -s -o "$T/body" -D "$T/headers" -w '%{http_code}' -X "$_m" "$@" "$FAKEGCP_URL$_p"
}
ms() { date +%s%N | cut -b1-13; }

P=/v2/projects/test-project/locations
Z=us-central2-b
NODE='{"acceleratorType":"v4-16","runtimeVersion":"tpu-ubuntu2204-base","labels":{"team":"nlp"}}'

# Instance 1 runs with a long --op-seconds so that intermediate states
# (CREATING, DELETING, STOPPING) can be seen whatever the machine's load;
# finish_op ends every running operation through the admin endpoint.
# finish_op NAME: finish operations now, then GET NAME into $T/body.
finish_op() {
	req POST /__admin/operations:finish >/dev/null
	req GET "/v2/$1" >/dev/null
	jqt '.done == true'
}
# wait_op NAME: poll the operation until done (at most 10 s); body in $T/body.
wait_op() {
	_i=0
	while [ $_i -lt 200 ]; do
		req GET "/v2/$1" >/dev/null
		jqt '.done == true' && return 0
		_i=$((_i + 1))
		sleep 0.05
	done
	return 1
}

# ---------------------------------------------------------------- instance 1
t0=$(ms)
fakegcp_start --op-seconds 30 --page-size 2 --seed 7 --log "$T/requests.jsonl" \
	--quota us-east1-d:v2-8:preemptible=1 --capacity europe-west4-a=0 || exit 1
t1=$(ms)
echo "# start-to-listening: $((t1 - t0)) ms (fakegcp_start, including the shell's polling)"
echo "# $(cat "$FAKEGCP_DIR/stderr")"

# create -> operation -> done -> READY with one endpoint per worker
st=$(req POST "$P/$Z/nodes?nodeId=tpu-a" -H 'Content-Type: application/json' -d "$NODE")
check "create answers 200 with an operation" [ "$st" = 200 ]
check "operation name is projects/P/locations/Z/operations/operation-<ms>-<hex>..." \
	jqt '.name | test("^projects/test-project/locations/us-central2-b/operations/operation-[0-9]{13}-[0-9a-f]+")'
check "operation metadata: OperationMetadata, verb create, target, createTime; not done" \
	jqt '.metadata["@type"] == "type.googleapis.com/google.cloud.tpu.v2.OperationMetadata" and .metadata.verb == "create" and .metadata.target == "projects/test-project/locations/us-central2-b/nodes/tpu-a" and (.metadata.createTime | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?Z$")) and (.done != true)'
OP=$(jq -r .name "$T/body")
req GET "$P/$Z/nodes/tpu-a" >/dev/null
check "node is CREATING while the operation runs" jqt '.state == "CREATING"'
req GET "/v2/$OP" >/dev/null
check "operation still running (no done key) before --op-seconds" jqt 'has("done") | not'
check "operation finishes" finish_op "$OP"
check "done operation: response is the Node, READY; no error" \
	jqt '.response["@type"] == "type.googleapis.com/google.cloud.tpu.v2.Node" and .response.state == "READY" and (has("error") | not) and (.metadata.endTime | type == "string")'
st=$(req GET "$P/$Z/nodes/tpu-a")
check "get node answers 200" [ "$st" = 200 ]
check "node READY, HEALTHY, v4-16 has 2 network endpoints (workers)" \
	jqt '.state == "READY" and .health == "HEALTHY" and (.networkEndpoints | length) == 2 and .networkEndpoints[0].ipAddress == "127.0.10.1" and .networkEndpoints[1].ipAddress == "127.0.10.2" and .networkEndpoints[0].port == 22'
check "node id is a 19-digit string, createTime RFC 3339, acceleratorConfig V4 2x2x2" \
	jqt '(.id | type == "string" and test("^[1-9][0-9]{18}$")) and (.createTime | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}(\\.[0-9]+)?Z$")) and .acceleratorConfig == {"type":"V4","topology":"2x2x2"} and .labels == {"team":"nlp"}'

st=$(req POST "$P/$Z/nodes?nodeId=tpu-a" -d "$NODE")
check "create of an existing node: 409 ALREADY_EXISTS" \
	eval '[ "$st" = 409 ] && jqt ".error.status == \"ALREADY_EXISTS\" and .error.code == 409"'

# list pagination: --page-size 2 over 5 nodes
for i in 1 2 3 4 5; do
	req POST "$P/us-central1-a/nodes?nodeId=p$i" \
		-d '{"acceleratorType":"v2-8","runtimeVersion":"tpu-vm-base"}' >/dev/null
done
token=
pages=0
: >"$T/names"
while :; do
	if [ -n "$token" ]; then
		req GET "$P/us-central1-a/nodes?pageToken=$token&pageSize=10" >/dev/null
	else
		req GET "$P/us-central1-a/nodes" >/dev/null
	fi
	pages=$((pages + 1))
	jq -r '.nodes[].name' "$T/body" >>"$T/names"
	token=$(jq -r '.nextPageToken // empty' "$T/body")
	[ -z "$token" ] && break
	[ $pages -gt 10 ] && break
done
check "list: 5 nodes in 3 pages of at most 2 (pageSize 10 capped by --page-size)" \
	eval '[ "$pages" = 3 ] && [ "$(sort -u "$T/names" | wc -l)" = 5 ]'
check "list: the last page has no nextPageToken and every node once" \
	[ "$(sed 's,.*/,,' "$T/names" | tr '\n' ' ')" = "p1 p2 p3 p4 p5 " ]
req GET "$P/us-central1-a/nodes?pageSize=1" >/dev/null
check "list: pageSize=1 gives one node and a token" jqt '(.nodes | length) == 1 and (.nextPageToken | length) > 0'
req GET "$P/asia-east1-c/nodes" >/dev/null
check "list of an empty zone is {} (proto3 JSON omits empty lists)" jqt '. == {}'

# request validation against the discovery document
st=$(req POST "$P/$Z/nodes?nodeId=bad1" -d '{"acceleratorTyp":"v4-8","runtimeVersion":"tpu-vm-base"}')
check "unknown field: 400 INVALID_ARGUMENT in the real API's words" \
	eval '[ "$st" = 400 ] && jqt ".error.status == \"INVALID_ARGUMENT\" and .error.message == \"Invalid JSON payload received. Unknown name \\\"acceleratorTyp\\\" at '"'"'node'"'"': Cannot find field.\" and .error.details[0][\"@type\"] == \"type.googleapis.com/google.rpc.BadRequest\""'
st=$(req POST "$P/$Z/nodes?nodeId=bad2" -d '{"acceleratorType":"v4-8","runtimeVersion":"tpu-vm-base","schedulingConfig":{"preemptible":"yes"}}')
check "wrong type: 400 Invalid value at 'node.scheduling_config.preemptible' (TYPE_BOOL), \"yes\"" \
	eval '[ "$st" = 400 ] && jqt ".error.message == \"Invalid value at '"'"'node.scheduling_config.preemptible'"'"' (TYPE_BOOL), \\\"yes\\\"\""'
st=$(req POST "$P/$Z/nodes?nodeId=bad3" -d '{"acceleratorType":"v4-8","runtimeVersion":"tpu-vm-base","networkConfig":"default"}')
check "string where an object is expected: 400 naming NetworkConfig" \
	eval '[ "$st" = 400 ] && jqt ".error.message | contains(\"node.network_config\") and contains(\"NetworkConfig\")"'
st=$(req POST "$P/$Z/nodes?nodeId=bad4" -d '{"acceleratorType":"v4-8"}')
check "missing runtimeVersion: 400 naming node.runtime_version" \
	eval '[ "$st" = 400 ] && jqt ".error.message | contains(\"node.runtime_version\")"'
st=$(req POST "$P/$Z/nodes?nodeId=bad5&nodeID=x" -d '{"acceleratorType":"v4-8","runtimeVersion":"tpu-vm-base"}')
check "unknown query parameter: 400 Cannot bind query parameter" \
	eval '[ "$st" = 400 ] && jqt ".error.message | contains(\"Unknown name \\\"nodeID\\\": Cannot bind query parameter\")"'
st=$(req POST "$P/$Z/nodes?nodeId=bad6" -d '{"acceleratorType":"v9-8","runtimeVersion":"tpu-vm-base"}')
check "unknown accelerator type: 400 could not be found in the zonal accelerator configurations" \
	eval '[ "$st" = 400 ] && jqt ".error.message | contains(\"could not be found in the zonal accelerator configurations\")"'
n_bad=0
for i in 1 2 3 4 5 6; do
	st=$(req GET "$P/$Z/nodes/bad$i")
	[ "$st" = 404 ] || n_bad=$((n_bad + 1))
done
check "no node was created by a refused request (get answers 404)" [ "$n_bad" = 0 ]
st=$(req POST "$P/$Z/nodes?nodeId=ro" -d '{"name":"projects/x/locations/y/nodes/z","id":"1","state":"READY","acceleratorType":"v4-8","runtimeVersion":"tpu-vm-base","schedulingConfig":{"preemptible":false}}')
req GET "$P/$Z/nodes/ro" >/dev/null
check "output-only fields in a create body are ignored; false reads back absent" \
	eval '[ "$st" = 200 ] && jqt ".name == \"projects/test-project/locations/us-central2-b/nodes/ro\" and .id != \"1\" and .state == \"CREATING\" and .schedulingConfig == {}"'
st=$(req GET "/v2/projects/other-project/locations/$Z/nodes")
check "another project: 403 PERMISSION_DENIED" eval '[ "$st" = 403 ] && jqt ".error.status == \"PERMISSION_DENIED\""'
st=$(req GET "$P/$Z/nodes/nope")
check "missing node: 404 NOT_FOUND with ResourceInfo" \
	eval '[ "$st" = 404 ] && jqt ".error.status == \"NOT_FOUND\" and .error.details[0].resourceName == \"projects/test-project/locations/us-central2-b/nodes/nope\""'

# quota: synchronous 429, no node
st=$(req POST "$P/us-east1-d/nodes?nodeId=q1" -d '{"acceleratorType":"v2-8","runtimeVersion":"tpu-vm-base","schedulingConfig":{"preemptible":true}}')
check "within quota: 200" [ "$st" = 200 ]
st=$(req POST "$P/us-east1-d/nodes?nodeId=q2" -d '{"acceleratorType":"v2-8","runtimeVersion":"tpu-vm-base","schedulingConfig":{"preemptible":true}}')
check "over quota: 429 RESOURCE_EXHAUSTED \"Quota '...ForTPUAPI' exhausted. Limit 1 in zone us-east1-d\"" \
	eval '[ "$st" = 429 ] && jqt ".error.status == \"RESOURCE_EXHAUSTED\" and .error.message == \"Quota '"'"'TPUV2PreemptiblePerProjectPerZoneForTPUAPI'"'"' exhausted. Limit 1 in zone us-east1-d\""'
st=$(req GET "$P/us-east1-d/nodes/q2")
check "over quota: no node created" [ "$st" = 404 ]
st=$(req POST "$P/us-east1-d/nodes?nodeId=q3" -d '{"acceleratorType":"v2-8","runtimeVersion":"tpu-vm-base"}')
check "on-demand is not counted against the preemptible quota" [ "$st" = 200 ]

# capacity: the POST succeeds, the operation fails with code 8, no node is left
st=$(req POST "$P/europe-west4-a/nodes?nodeId=c1" -d '{"acceleratorType":"v3-8","runtimeVersion":"tpu-vm-base"}')
COP=$(jq -r .name "$T/body")
check "stockout create: POST answers 200" [ "$st" = 200 ]
finish_op "$COP"
check "stockout: operation error code 8 with the real message, no status string" \
	jqt '.done == true and .error.code == 8 and (.error.message | startswith("There is no more capacity in the zone \"europe-west4-a\"; you can try in another zone")) and (.error | has("status") | not) and (has("response") | not)'
st=$(req GET "$P/europe-west4-a/nodes/c1")
check "stockout: no node left" [ "$st" = 404 ]

# admin preempt -> PREEMPTED stays listed
st=$(req POST "/__admin/nodes/us-central1-a/p1:preempt")
req GET "$P/us-central1-a/nodes?pageSize=1" >/dev/null
check "admin preempt: node listed as PREEMPTED" \
	eval '[ "$st" = 200 ] && jqt ".nodes[0].name | endswith(\"/p1\")" && jqt ".nodes[0].state == \"PREEMPTED\""'

# patch labels
st=$(req PATCH "$P/$Z/nodes/tpu-a?updateMask=labels" -d '{"labels":{"env":"prod"},"description":"ignored: not in the mask"}')
POP=$(jq -r .name "$T/body")
check "patch labels: 200 with an update operation" eval '[ "$st" = 200 ] && jqt ".metadata.verb == \"update\""'
finish_op "$POP"
req GET "$P/$Z/nodes/tpu-a" >/dev/null
check "patch labels: labels replaced, fields outside the mask untouched" \
	jqt '.labels == {"env":"prod"} and (has("description") | not) and .state == "READY"'
st=$(req PATCH "$P/$Z/nodes/tpu-a?updateMask=acceleratorType" -d '{"acceleratorType":"v4-8"}')
check "patch of a field outside labels/metadata/tags/description: 400" [ "$st" = 400 ]
st=$(req PATCH "$P/us-central1-a/nodes/p1?updateMask=labels" -d '{"labels":{"a":"b"}}')
check "patch of a PREEMPTED node: 400 update is not supported while in state PREEMPTED" \
	eval '[ "$st" = 400 ] && jqt ".error.message | contains(\"PREEMPTED\")"'

# delete: DELETING until the operation is done, then gone
st=$(req DELETE "$P/$Z/nodes/tpu-a")
DOP=$(jq -r .name "$T/body")
check "delete: 200 with a delete operation" eval '[ "$st" = 200 ] && jqt ".metadata.verb == \"delete\""'
req GET "$P/$Z/nodes/tpu-a" >/dev/null
check "delete: node DELETING while the operation runs" jqt '.state == "DELETING"'
finish_op "$DOP"
check "delete: operation response is google.protobuf.Empty" \
	jqt '.response == {"@type":"type.googleapis.com/google.protobuf.Empty"}'
st=$(req GET "$P/$Z/nodes/tpu-a")
check "delete: node gone (404)" [ "$st" = 404 ]

# catalog
req GET "$P/$Z/acceleratorTypes" >/dev/null
check "acceleratorTypes list: the fixed table of 8 (one page of 2 at a time)" \
	jqt '(.acceleratorTypes | length) == 2 and (.nextPageToken | length) > 0'
req GET "$P/$Z/runtimeVersions?pageSize=2" >/dev/null
check "runtimeVersions list: names and versions" \
	jqt '.runtimeVersions[0] == {"name":"projects/test-project/locations/us-central2-b/runtimeVersions/tpu-ubuntu2204-base","version":"tpu-ubuntu2204-base"}'

# the request log
req GET /__admin/requests >/dev/null
check "request log records the create with query, body and status" \
	jqt 'map(select(.method == "POST" and .path == "/v2/projects/test-project/locations/us-central2-b/nodes" and .query == "nodeId=tpu-a" and .status == 200 and .body.acceleratorType == "v4-16" and .fault == null)) | length == 1'
check "request log records refused requests with their status" \
	jqt 'map(select(.status == 429)) | length == 1'
check "request log leaves out admin requests" jqt 'map(select(.path | startswith("/__admin"))) | length == 0'
# shellcheck disable=SC2034 # read by the eval below
entries=$(jq length "$T/body")
check "--log file has one JSON line per request" \
	eval '[ "$(wc -l <"$T/requests.jsonl")" = "$entries" ] && jq -e -s "length == $entries" "$T/requests.jsonl" >/dev/null'

# keep-alive: two requests on one connection
nc=$(curl -s -o /dev/null -o /dev/null -w '%{num_connects}\n' "$FAKEGCP_URL$P/$Z/nodes" "$FAKEGCP_URL$P/$Z/nodes" | tr '\n' ' ')
check "keep-alive: the second request reuses the connection" [ "$nc" = "1 0 " ]

# many concurrent clients (wait for the curls only: the emulator is a child too)
pids=
for i in $(seq 1 16); do
	curl -s -o /dev/null -w '%{http_code}\n' -X POST "$FAKEGCP_URL$P/us-west4-a/nodes?nodeId=cc$i" \
		-d '{"acceleratorType":"v5litepod-16","runtimeVersion":"v2-alpha-tpuv5-lite"}' >>"$T/codes" &
	pids="$pids $!"
done
# shellcheck disable=SC2086
wait $pids
req GET "/__admin/nodes" >/dev/null
check "16 concurrent creates all answered 200 and made 16 nodes" \
	eval '[ "$(grep -c "^200$" "$T/codes")" = 16 ] && jqt "map(select(.name | contains(\"/us-west4-a/\"))) | length == 16"'
req POST /__admin/operations:finish >/dev/null
req GET "/__admin/nodes" >/dev/null
check "v5litepod-16 has 4 workers, all 64 worker addresses distinct" \
	jqt '[.[] | select(.name | contains("/us-west4-a/"))] as $n | ($n | all(.state == "READY" and (.networkEndpoints | length) == 4)) and ([$n[].networkEndpoints[].ipAddress] | length == 64 and length == (unique | length))'

# snake_case names, prettyPrint=false, stop/start
st=$(req POST "$P/us-east5-a/nodes?nodeId=s1&prettyPrint=false" -d '{"accelerator_type":"v2-8","runtime_version":"tpu-vm-base"}')
SOP=$(jq -r .name "$T/body")
check "snake_case field names are accepted (like a proto parser); prettyPrint=false is one line" \
	eval '[ "$st" = 200 ] && [ "$(wc -l <"$T/body")" = 1 ]'
finish_op "$SOP"
req GET "$P/us-east5-a/nodes/s1" >/dev/null
check "snake_case fields are stored under their JSON names" \
	jqt '.acceleratorType == "v2-8" and .runtimeVersion == "tpu-vm-base" and (has("runtime_version") | not)'
st=$(req POST "$P/us-east5-a/nodes/s1:stop" -d '{}')
SOP=$(jq -r .name "$T/body")
req GET "$P/us-east5-a/nodes/s1" >/dev/null
check "stop: 200, node STOPPING" eval '[ "$st" = 200 ] && jqt ".state == \"STOPPING\""'
finish_op "$SOP"
req GET "$P/us-east5-a/nodes/s1" >/dev/null
check "stop: node STOPPED once the operation is done" jqt '.state == "STOPPED" and (has("health") | not)'
st=$(req POST "$P/us-east5-a/nodes/s1:start" -d '{}')
SOP=$(jq -r .name "$T/body")
finish_op "$SOP"
req GET "$P/us-east5-a/nodes/s1" >/dev/null
check "start: node READY and HEALTHY again" eval '[ "$st" = 200 ] && jqt ".state == \"READY\" and .health == \"HEALTHY\""'
st=$(req POST "$P/us-west4-a/nodes/cc1:stop" -d '{}')
check "stop of a multi-host node: 400 only available with single TPU nodes" \
	eval '[ "$st" = 400 ] && jqt ".error.message | contains(\"single TPU nodes\")"'
req GET "$P/us-east5-a/operations" >/dev/null
tok=$(jq -r '.nextPageToken // empty' "$T/body")
check "operations list: the zone's create and stop operations on page 1 (of 2 at most)" \
	jqt '[.operations[].metadata.verb] == ["create","stop"]'
req GET "$P/us-east5-a/operations?pageToken=$tok" >/dev/null
check "operations list: the start operation on page 2, no further token" \
	jqt '[.operations[].metadata.verb] == ["start"] and (has("nextPageToken") | not)'

# admin: states, out-of-band delete, capacity and quota at run time
st=$(req POST "/__admin/nodes/us-central1-a/p3:state?value=REPAIRING")
req GET "$P/us-central1-a/nodes/p3" >/dev/null
check "admin state=REPAIRING" eval '[ "$st" = 200 ] && jqt ".state == \"REPAIRING\" and (has(\"health\") | not)"'
st=$(req POST "/__admin/nodes/us-central1-a/p3:state?value=SLEEPY")
check "admin state with a value not in the discovery enum: 400" [ "$st" = 400 ]
req POST "/__admin/nodes/us-central1-a/p4:terminate" >/dev/null
req GET "$P/us-central1-a/nodes/p4" >/dev/null
check "admin terminate: TERMINATED" jqt '.state == "TERMINATED"'
req POST "/__admin/nodes/us-central1-a/p5:delete" >/dev/null
st=$(req GET "$P/us-central1-a/nodes/p5")
check "admin delete: gone at once" [ "$st" = 404 ]
req POST "/__admin/capacity?zone=us-east5-a&value=1" >/dev/null
req POST "$P/us-east5-a/nodes?nodeId=s2" -d '{"acceleratorType":"v2-8","runtimeVersion":"tpu-vm-base"}' >/dev/null
finish_op "$(jq -r .name "$T/body")"
check "admin capacity=1 with one node in the zone: the next create fails with code 8" jqt '.error.code == 8'
req POST "/__admin/capacity?zone=us-east5-a&value=none" >/dev/null
req POST "$P/us-east5-a/nodes?nodeId=s3" -d '{"acceleratorType":"v2-8","runtimeVersion":"tpu-vm-base"}' >/dev/null
finish_op "$(jq -r .name "$T/body")"
check "admin capacity=none lifts the limit" jqt '.response.state == "READY"'
req POST "/__admin/quota?zone=us-east5-a&type=*&sched=spot&value=0" >/dev/null
st=$(req POST "$P/us-east5-a/nodes?nodeId=s4" -d '{"acceleratorType":"v2-8","runtimeVersion":"tpu-vm-base","schedulingConfig":{"spot":true}}')
check "admin quota spot=0: a spot create gets 429" [ "$st" = 429 ]

# admin faults at run time: drop and 429
req POST "/__admin/faults?rate=1&kinds=drop" >/dev/null
curl -s -o /dev/null "$FAKEGCP_URL$P/$Z/nodes"
rc=$?
check "fault drop: the connection closes without an answer (curl exit 52)" [ "$rc" = 52 ]
req POST "/__admin/faults?rate=1&kinds=429" >/dev/null
st=$(req GET "$P/$Z/nodes")
check "fault 429: RESOURCE_EXHAUSTED with Retry-After: 1" \
	eval '[ "$st" = 429 ] && grep -qi "^Retry-After: 1" "$T/headers" && jqt ".error.status == \"RESOURCE_EXHAUSTED\""'
req POST "/__admin/faults?rate=0" >/dev/null
st=$(req GET "$P/$Z/nodes")
check "faults off again: 200" [ "$st" = 200 ]

# queued resources (reference section 5): state is an object, the tier an
# empty message; WAITING_FOR_RESOURCES without capacity instead of failing
QZ=qz-a
qr_body() { # NODE_ID [extra top-level JSON members]
	printf '{"tpu":{"nodeSpec":[{"parent":"projects/test-project/locations/%s","nodeId":"%s","node":{"acceleratorType":"v2-8","runtimeVersion":"tpu-vm-base","labels":{"team":"nlp"}}}]}%s}' "$QZ" "$1" "${2:-}"
}
req POST "/__admin/capacity?zone=$QZ&value=0" >/dev/null
st=$(req POST "$P/$QZ/queuedResources?queuedResourceId=qr-a" -d "$(qr_body qa ',"spot":{},"queueingPolicy":{"validUntilDuration":"3600s"},"state":{"state":"ACTIVE"}')")
QOP=$(jq -r .name "$T/body")
check "QR create: 200 with a create operation targeting the queued resource" \
	eval '[ "$st" = 200 ] && jqt ".metadata.verb == \"create\" and .metadata.target == \"projects/test-project/locations/qz-a/queuedResources/qr-a\" and (.done != true)"'
req GET "$P/$QZ/queuedResources/qr-a" >/dev/null
check "QR get: ACCEPTED while the operation runs; output-only state in the body ignored; spot tier kept as {}" \
	jqt '.state == {"state":"ACCEPTED"} and .spot == {} and .name == "projects/test-project/locations/qz-a/queuedResources/qr-a" and (.createTime | type == "string") and .queueingPolicy.validUntilDuration == "3600s"'
finish_op "$QOP"
check "QR create operation done: response is the QueuedResource, WAITING_FOR_RESOURCES (no capacity)" \
	jqt '.response["@type"] == "type.googleapis.com/google.cloud.tpu.v2.QueuedResource" and .response.state.state == "WAITING_FOR_RESOURCES" and (has("error") | not)'
st=$(req GET "$P/$QZ/nodes/qa")
check "QR waiting: no node yet" [ "$st" = 404 ]
st=$(req POST "$P/$QZ/queuedResources?queuedResourceId=qr-a" -d "$(qr_body qa2)")
check "QR create of an existing id: 409 ALREADY_EXISTS" eval '[ "$st" = 409 ] && jqt ".error.status == \"ALREADY_EXISTS\""'
st=$(req POST "$P/$QZ/queuedResources?queuedResourceId=qr-dup" -d "$(qr_body qa)")
check "QR for a node id another queued resource asks for: 409" [ "$st" = 409 ]
st=$(req POST "$P/$QZ/queuedResources?queuedResourceId=qr-v1" -d '{"tpu":{"nodeSpec":[{"parent":"projects/test-project/locations/qz-a","nodeId":"v1","node":{"acceleratorTyp":"v2-8","runtimeVersion":"tpu-vm-base"}}]}}')
check "QR body validated like nodes: unknown name at 'queued_resource.tpu.node_spec[0].node'" \
	eval '[ "$st" = 400 ] && jqt ".error.message == \"Invalid JSON payload received. Unknown name \\\"acceleratorTyp\\\" at '"'"'queued_resource.tpu.node_spec[0].node'"'"': Cannot find field.\""'
st=$(req POST "$P/$QZ/queuedResources?queuedResourceId=qr-v2" -d '{"tpu":{"nodeSpec":[{"parent":"projects/test-project/locations/qz-a","nodeId":"v2","node":{"acceleratorType":"v2-8"}}]}}')
check "QR body: a missing runtimeVersion in the node spec is named" \
	eval '[ "$st" = 400 ] && jqt ".error.message | contains(\"queued_resource.tpu.node_spec[0].node.runtime_version\")"'
st=$(req POST "$P/$QZ/queuedResources?queuedResourceId=qr-v3" -d "$(qr_body v3 ',"spot":{},"guaranteed":{}')")
check "QR with both the spot and the guaranteed tier: 400" [ "$st" = 400 ]
st=$(req POST "$P/$QZ/queuedResources?queuedResourceId=qr-v4" -d '{"tpu":{"nodeSpec":[{"parent":"projects/test-project/locations/elsewhere","nodeId":"v4","node":{"acceleratorType":"v2-8","runtimeVersion":"tpu-vm-base"}}]}}')
check "QR whose node spec names another parent: 400" [ "$st" = 400 ]
st=$(req POST "$P/$QZ/queuedResources?queuedResourceId=bad%20id" -d "$(qr_body v5)")
check "QR id outside ^[A-Za-z0-9_.~+%-]+\$: 400" [ "$st" = 400 ]
st=$(req POST "$P/$QZ/queuedResources?queuedResourceId=qr-v6" -d "$(qr_body v6 ',"queueingPolicy":{"validUntilDuration":"6h"}')")
check "QR validUntilDuration must be a google-duration (\"21600s\"): 400" \
	eval '[ "$st" = 400 ] && jqt ".error.message | contains(\"queued_resource.queueing_policy.valid_until_duration\")"'
st=$(req POST "$P/us-east1-d/queuedResources?queuedResourceId=qr-q" -d '{"tpu":{"nodeSpec":[{"parent":"projects/test-project/locations/us-east1-d","nodeId":"qq","node":{"acceleratorType":"v2-8","runtimeVersion":"tpu-vm-base","schedulingConfig":{"preemptible":true}}}]}}')
check "QR over quota: 429 RESOURCE_EXHAUSTED at once, as for nodes" \
	eval '[ "$st" = 429 ] && jqt ".error.message | contains(\"exhausted\")"'

# capacity arrives: PROVISIONING (node CREATING), then ACTIVE (node READY)
req POST "/__admin/capacity?zone=$QZ&value=1" >/dev/null
req GET "$P/$QZ/queuedResources/qr-a" >/dev/null
check "QR with capacity: PROVISIONING" jqt '.state.state == "PROVISIONING"'
req GET "$P/$QZ/nodes/qa" >/dev/null
check "its node is CREATING, names its queued resource, is spot by the tier, carries the labels" \
	jqt '.state == "CREATING" and .queuedResource == "projects/test-project/locations/qz-a/queuedResources/qr-a" and .schedulingConfig == {"spot":true} and .labels == {"team":"nlp"}'
req POST /__admin/operations:finish >/dev/null
req GET "$P/$QZ/queuedResources/qr-a" >/dev/null
check "QR ACTIVE once provisioned" jqt '.state.state == "ACTIVE"'
req GET "$P/$QZ/nodes/qa" >/dev/null
check "its node READY with its worker endpoint" jqt '.state == "READY" and (.networkEndpoints | length) == 1'
st=$(req DELETE "$P/$QZ/queuedResources/qr-a")
check "QR delete without force while its node lives: 400 FAILED_PRECONDITION" \
	eval '[ "$st" = 400 ] && jqt ".error.status == \"FAILED_PRECONDITION\""'
st=$(req DELETE "$P/$QZ/queuedResources/qr-a?force=maybe")
check "QR delete force must be a bool: 400" [ "$st" = 400 ]
st=$(req DELETE "$P/$QZ/queuedResources/qr-a?force=true")
DQOP=$(jq -r .name "$T/body")
req GET "$P/$QZ/queuedResources/qr-a" >/dev/null
check "QR delete force=true: DELETING (initiated by the user)" \
	eval '[ "$st" = 200 ] && jqt ".state == {\"state\":\"DELETING\",\"stateInitiator\":\"USER\"}"'
req GET "$P/$QZ/nodes/qa" >/dev/null
check "its node DELETING" jqt '.state == "DELETING"'
finish_op "$DQOP"
check "QR delete operation: google.protobuf.Empty" jqt '.response == {"@type":"type.googleapis.com/google.protobuf.Empty"}'
qs=$(req GET "$P/$QZ/queuedResources/qr-a")
ns=$(req GET "$P/$QZ/nodes/qa")
check "QR delete force=true: the queued resource and its node are gone" [ "$qs$ns" = 404404 ]

# list paging, admin states, reset, preemption, valid-until
req POST "/__admin/capacity?zone=$QZ&value=0" >/dev/null
for i in 1 2 3; do req POST "$P/$QZ/queuedResources?queuedResourceId=ql$i" -d "$(qr_body l$i)" >/dev/null; done
req POST /__admin/operations:finish >/dev/null
req GET "$P/$QZ/queuedResources" >/dev/null
tok=$(jq -r '.nextPageToken // empty' "$T/body")
check "QR list: a page of 2 (--page-size 2) and a token" \
	jqt '[.queuedResources[].name | split("/") | last] == ["ql1","ql2"] and (.queuedResources | all(.state.state == "WAITING_FOR_RESOURCES"))'
req GET "$P/$QZ/queuedResources?pageToken=$tok" >/dev/null
check "QR list: the last one on page 2, no further token" \
	jqt '[.queuedResources[].name | split("/") | last] == ["ql3"] and (has("nextPageToken") | not)'
st=$(req POST "/__admin/queuedResources/$QZ/ql1:state?value=FAILED&code=8&message=no+luck")
req GET "$P/$QZ/queuedResources/ql1" >/dev/null
check "admin QR state=FAILED: failedData.error, initiated by the service" \
	eval '[ "$st" = 200 ] && jqt ".state == {\"state\":\"FAILED\",\"stateInitiator\":\"SERVICE\",\"failedData\":{\"error\":{\"code\":8,\"message\":\"no luck\"}}}"'
st=$(req POST "/__admin/queuedResources/$QZ/ql1:state?value=SLEEPY")
check "admin QR state not in the discovery enum: 400" [ "$st" = 400 ]
st=$(req POST "$P/$QZ/queuedResources/ql2:reset" -d '{}')
check "QR reset of a waiting queued resource: 400 FAILED_PRECONDITION" [ "$st" = 400 ]
st=$(req POST "$P/$QZ/queuedResources/ql1:reset" -d '{}')
ROP=$(jq -r .name "$T/body")
req GET "$P/$QZ/queuedResources/ql1" >/dev/null
check "QR reset of a FAILED one: ACCEPTED again" eval '[ "$st" = 200 ] && jqt ".state.state == \"ACCEPTED\""'
finish_op "$ROP"
check "QR reset: queued again (WAITING_FOR_RESOURCES)" jqt '.response.state.state == "WAITING_FOR_RESOURCES"'
st=$(req DELETE "$P/$QZ/queuedResources/ql2")
check "QR delete without force of one that has no node: 200" [ "$st" = 200 ]
req POST "/__admin/capacity?zone=$QZ&value=none" >/dev/null
req POST /__admin/operations:finish >/dev/null
req POST "/__admin/nodes/$QZ/l3:preempt" >/dev/null
req GET "$P/$QZ/queuedResources/ql3" >/dev/null
check "preempting the node of an ACTIVE queued resource suspends it (SERVICE)" \
	jqt '.state == {"state":"SUSPENDED","stateInitiator":"SERVICE"}'
st=$(req GET "$P/$QZ/nodes/l3")
check "the suspended queued resource's node is gone" [ "$st" = 404 ]
req POST "/__admin/capacity?zone=qz-b&value=0" >/dev/null
QZ=qz-b
req POST "$P/$QZ/queuedResources?queuedResourceId=qv" -d "$(qr_body v ',"queueingPolicy":{"validUntilDuration":"0.3s"}')" >/dev/null
sleep 0.4
req POST /__admin/operations:finish >/dev/null
req GET "$P/$QZ/queuedResources/qv" >/dev/null
check "QR not provisioned before validUntilDuration: FAILED with an error" \
	jqt '.state.state == "FAILED" and .state.failedData.error.code == 4 and (.state.failedData.error.message | length) > 0'
req GET /__admin/queuedResources >/dev/null
check "admin lists every queued resource (ql2's delete finished)" \
	jqt '[.[].name | split("/") | last] == ["ql1","ql3","qv"]'
req GET /__admin/requests >/dev/null
check "request log records the QR create with its queuedResourceId and body" \
	jqt 'map(select(.method == "POST" and .path == "/v2/projects/test-project/locations/qz-a/queuedResources" and .query == "queuedResourceId=qr-a" and .body.spot == {} and .status == 200)) | length == 1'

st=$(req POST /__admin/shutdown)
wait "$FAKEGCP_PID"
rc=$?
check "POST /__admin/shutdown answers and the emulator exits 0" eval '[ "$st" = 200 ] && [ "$rc" = 0 ]'
if grep -q -e Sanitizer -e 'runtime error:' "$FAKEGCP_DIR/stderr"; then
	fail "no sanitizer report after /__admin/shutdown"
	sed 's/^/#   /' "$FAKEGCP_DIR/stderr"
else
	pass "no sanitizer report after /__admin/shutdown"
fi
rm -rf "$FAKEGCP_DIR"
FAKEGCP_PID=

# ---------------------------------------------------------------- instance 2: auth
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/key.pem" 2>/dev/null
openssl pkey -in "$T/key.pem" -pubout -out "$T/pub.pem"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/other.pem" 2>/dev/null
fakegcp_start --auth token --sa-public-key "$T/pub.pem" \
	--authorized-user cid:csecret:rtok || exit 1

b64url() { basenc --base64url -w0 | tr -d '='; }
# jwt KEY IAT EXP AUD
jwt() {
	_h=$(printf '{"alg":"RS256","typ":"JWT","kid":"k1"}' | b64url)
	_c=$(printf '{"iss":"sa@test-project.iam.gserviceaccount.com","scope":"https://www.googleapis.com/auth/cloud-platform","aud":"%s","iat":%s,"exp":%s}' "$4" "$2" "$3" | b64url)
	_s=$(printf '%s.%s' "$_h" "$_c" | openssl dgst -sha256 -sign "$1" -binary | b64url)
	printf '%s.%s.%s' "$_h" "$_c" "$_s"
}
token_post() {
	req POST /token --data-urlencode 'grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer' \
		--data-urlencode "assertion=$1"
}
now=$(date +%s)
st=$(token_post "$(jwt "$T/key.pem" "$now" $((now + 3600)) https://oauth2.googleapis.com/token)")
check "token endpoint: a JWT signed by the test key gets a Bearer token" \
	eval '[ "$st" = 200 ] && jqt ".token_type == \"Bearer\" and (.access_token | length) > 10 and .expires_in == 3600"'
TOKEN=$(jq -r .access_token "$T/body")
st=$(token_post "$(jwt "$T/key.pem" "$now" $((now + 3600)) "$FAKEGCP_URL/token")")
check "token endpoint: the emulator's own /token URL is an accepted audience" [ "$st" = 200 ]
st=$(token_post "$(jwt "$T/other.pem" "$now" $((now + 3600)) https://oauth2.googleapis.com/token)")
check "token endpoint: a JWT signed by another key: 400 invalid_grant" \
	eval '[ "$st" = 400 ] && jqt ".error == \"invalid_grant\" and .error_description == \"Invalid JWT Signature.\""'
st=$(token_post "$(jwt "$T/key.pem" $((now - 7200)) $((now - 3600)) https://oauth2.googleapis.com/token)")
check "token endpoint: an expired JWT: 400 invalid_grant" \
	eval '[ "$st" = 400 ] && jqt ".error == \"invalid_grant\" and (.error_description | contains(\"iat and exp\"))"'
st=$(token_post "$(jwt "$T/key.pem" "$now" $((now + 3600)) https://example.com/token)")
check "token endpoint: a JWT for another audience: 400 invalid_grant" \
	eval '[ "$st" = 400 ] && jqt ".error == \"invalid_grant\""'
st=$(token_post "not.a.jwt")
check "token endpoint: garbage assertion: 400 invalid_grant" [ "$st" = 400 ]
st=$(req POST /token -d grant_type=refresh_token -d client_id=cid -d client_secret=csecret -d refresh_token=rtok)
check "token endpoint: refresh-token grant of an --authorized-user" \
	eval '[ "$st" = 200 ] && jqt ".token_type == \"Bearer\""'
RTOKEN=$(jq -r .access_token "$T/body")
st=$(req POST /token -d grant_type=refresh_token -d client_id=cid -d client_secret=csecret -d refresh_token=wrong)
check "token endpoint: wrong refresh token: 400 invalid_grant" \
	eval '[ "$st" = 400 ] && jqt ".error == \"invalid_grant\""'

st=$(req GET "$P/$Z/nodes")
check "--auth token: no bearer: 401 UNAUTHENTICATED" \
	eval '[ "$st" = 401 ] && jqt ".error.status == \"UNAUTHENTICATED\" and .error.code == 401"'
st=$(req GET "$P/$Z/nodes" -H 'Authorization: Bearer ya29.bogus')
check "--auth token: bogus bearer: 401 Request had invalid authentication credentials..." \
	eval '[ "$st" = 401 ] && jqt ".error.message | startswith(\"Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.\")"'
st=$(req GET "$P/$Z/nodes" -H "Authorization: Bearer $TOKEN")
check "--auth token: an issued token is accepted" [ "$st" = 200 ]
st=$(req GET "$P/$Z/nodes" -H "Authorization: Bearer $RTOKEN")
check "--auth token: a refresh-grant token is accepted" [ "$st" = 200 ]

st=$(req GET /computeMetadata/v1/instance/service-accounts/default/token)
check "metadata server: no Metadata-Flavor header: 403" [ "$st" = 403 ]
st=$(req GET /computeMetadata/v1/instance/service-accounts/default/token -H 'Metadata-Flavor: Google')
MTOKEN=$(jq -r .access_token "$T/body")
check "metadata server: token, answered with Metadata-Flavor: Google" \
	eval '[ "$st" = 200 ] && grep -qi "^Metadata-Flavor: Google" "$T/headers" && jqt ".token_type == \"Bearer\""'
st=$(req GET "$P/$Z/nodes" -H "Authorization: Bearer $MTOKEN")
check "--auth token: a metadata-server token is accepted" [ "$st" = 200 ]
req GET /computeMetadata/v1/project/project-id -H 'Metadata-Flavor: Google' >/dev/null
check "metadata server: project id" [ "$(cat "$T/body")" = test-project ]

check "SIGTERM: the emulator exits 0 with no sanitizer report" fakegcp_stop

# token lifetime: a token is refused once --token-ttl has passed
fakegcp_start --auth token --token-ttl 1 || exit 1
req GET /computeMetadata/v1/instance/service-accounts/default/token -H 'Metadata-Flavor: Google' >/dev/null
check "--token-ttl 1: expires_in is 1" jqt '.expires_in == 1'
STOKEN=$(jq -r .access_token "$T/body")
sleep 1.2
st=$(req GET "$P/$Z/nodes" -H "Authorization: Bearer $STOKEN")
check "--auth token: a token past --token-ttl is refused (401, ACCESS_TOKEN_EXPIRED)" \
	eval '[ "$st" = 401 ] && jqt ".error.details[0].reason == \"ACCESS_TOKEN_EXPIRED\""'
check "SIGTERM: the emulator exits 0 with no sanitizer report" fakegcp_stop

# operations end by themselves after --op-seconds
fakegcp_start --op-seconds 0.2 || exit 1
req POST "$P/$Z/nodes?nodeId=t1" -d '{"acceleratorType":"v6e-8","runtimeVersion":"v2-alpha-tpuv6e"}' >/dev/null
check "--op-seconds 0.2: the create operation is done without admin help" wait_op "$(jq -r .name "$T/body")"
check "--op-seconds 0.2: v6e-8 READY with one worker" \
	jqt '.response.state == "READY" and (.response.networkEndpoints | length) == 1 and .response.acceleratorConfig == {"type":"V6E","topology":"2x4"}'
check "SIGTERM: the emulator exits 0 with no sanitizer report" fakegcp_stop

# ---------------------------------------------------------------- instance 3: faults
fakegcp_start --fault-rate 1.0 --fault-kinds 503 || exit 1
n503=0
for i in 1 2 3 4 5; do
	st=$(req GET "$P/$Z/nodes")
	[ "$st" = 503 ] && jqt '.error.code == 503 and .error.status == "UNAVAILABLE" and (.error.message | length) > 0' && n503=$((n503 + 1))
done
check "--fault-rate 1.0 --fault-kinds 503: every API request gets an AIP-193 503" [ "$n503" = 5 ]
st=$(req GET /__admin/health)
check "faults spare the admin endpoints" [ "$st" = 200 ]
check "SIGTERM: the emulator exits 0 with no sanitizer report" fakegcp_stop

echo "1..$n"
[ "$failed" -eq 0 ]

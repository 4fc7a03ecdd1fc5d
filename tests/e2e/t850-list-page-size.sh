#!/bin/sh
# The Cloud TPU lists ask for big pages (issue 28, "requests equal to list
# pages"; providers/gcp/gcp_client_internal.h TPF_GCP_PAGE_SIZE), and the
# emulator pages as Google's list rule AIP-158 says (tests/fakegcp/fg_page.c):
#   1. the emulator: no pageSize is a page of 50, a pageSize above the
#      maximum (--page-size, default 1000) is coerced to it, a negative one
#      is 400;
#   2. a plan of 1,200 nodes seeded in one zone lists them in 2 pages of
#      pageSize=1000 (it was 24 pages of the server's 50), and the queued
#      resources' list asks pageSize=1000 too; the plan adopts all 1,200.
# No worker is reached (plan only); the emulator's worker addresses are
# 127.0.85.x (this test's block), where nothing listens.
. "$(dirname "$0")/lib.sh"
setup_dir t850
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
trap 'fakegcp_stop >/dev/null 2>&1' EXIT
export TPUFORM_ACCESS_TOKEN=t850 NO_COLOR=1 TPUFORM_SSH_RETRY=0 TPUFORM_SSH_CONNECT_TIMEOUT=1
fakegcp_start --project p850 --op-seconds 0 --worker-ip-base 127.0.85.1 --log "$W/requests.jsonl" ||
	exit 1
LINEAGE=01234567-89ab-cdef-0123-456789abcdef
curl -sf -o /dev/null -X POST -H "Content-Type: application/json" \
	-d '{"acceleratorType":"v2-8","runtimeVersion":"tpu-ubuntu2204-base","labels":{"tpuform-fleet":"pg","tpuform-group":"a","tpuform-lineage":"0123456789abcdef"}}' \
	"$FAKEGCP_URL/__admin/nodes:seed?zone=z1&prefix=pg-a&count=1200&index_label=tpuform-index"
is "1,200 nodes seeded in z1" "$?" 0

N="$FAKEGCP_URL/v2/projects/p850/locations/z1/nodes"
H="Authorization: Bearer t850"
count() { curl -s -H "$H" "$1" | jq '.nodes | length'; }
is "no pageSize: a page of 50" "$(count "$N")" 50
is "pageSize=200: a page of 200" "$(count "$N?pageSize=200")" 200
is "pageSize=5000: coerced to the maximum, 1000" "$(count "$N?pageSize=5000")" 1000
ok "a page of 1000 says more follow" \
	sh -c "curl -s -H '$H' '$N?pageSize=1000' | jq -e '.nextPageToken | length > 0' >/dev/null"
is "pageSize=-1: 400" "$(curl -s -o /dev/null -w '%{http_code}' -H "$H" "$N?pageSize=-1")" 400

ssh-keygen -q -t ed25519 -N '' -f "$W/key" || exit 1
printf '{"version": 2, "serial": 1, "lineage": "%s", "fleet": "pg", "nodes": []}\n' "$LINEAGE" \
	>tpuform.state.json
cat >fleet.yaml <<YAML
fleet: pg
provider:
  gcp: { project: p850 }
ssh: { user: root, private_key: "$W/key", port: 1 }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1200 }
  - { name: q, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [z2], count: 1, queued: true }
YAML
curl -s -X POST "$FAKEGCP_URL/__admin/requests:clear" >/dev/null
"$TPUFORM" plan -f fleet.yaml >plan.out 2>&1
is "plan exits 0" "$?" 0
is "the plan adopts all 1,200" "$(grep -c 'will be updated in-place' plan.out)" 1200
curl -s "$FAKEGCP_URL/__admin/requests" >requests.json
lists() { jq -r --arg p "$1" '.[] | select(.method == "GET" and (.path | endswith($p))) | .query // ""' requests.json; }
is "z1's nodes in 2 list pages ($(lists /z1/nodes | wc -l) requests)" "$(lists /z1/nodes | wc -l)" 2
is "each asks pageSize=1000" "$(lists /z1/nodes | grep -c 'pageSize=1000')" 2
ok "the queued resources' list asks pageSize=1000" sh -c "$(printf '%s' \
	"jq -r '.[] | select(.path | endswith(\"/z2/queuedResources\")) | .query' requests.json | grep -q 'pageSize=1000'")"
is "no other request than lists" \
	"$(jq '[.[] | select((.path | test("/(nodes|queuedResources)$")) | not)] | length' requests.json)" 0
finish

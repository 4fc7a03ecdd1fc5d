#!/bin/sh
# watch reads no node one by one when nothing changed (issue 28 item 2,
# docs/watch.md "API requests"): on a fleet of six nodes in three zones,
# every worker provisioned, a watch's first four rounds -- the refresh, the
# probe of every session and the job waits attaching to every worker --
# send the zone lists and no nodes.get (GET .../nodes/NAME) or
# instances.get: the job waits learn each node (zone, id, metadata) from
# what the round's lists returned, not by reading it again in each zone.
# Workers: sshd on 127.0.72.x (this test's block: 127.0.72.x-127.0.74.x).
. "$(dirname "$0")/lib.sh"
setup_dir t740
. "$TOP/tests/e2e/gcp_workers.sh"
gcp_workers_start 6 127.0.72.1 --project test-project --op-seconds 0.2 \
	--log "$W/requests.jsonl"

cat >fleet.yaml <<YAML
fleet: nog
provider:
  gcp: { project: test-project }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [z1, z2, z3], count: 6 }
YAML
ok "apply provisions six workers" "$TPUFORM" apply -f fleet.yaml -auto-approve
is "every worker provisioned" "$(grep -c '^changed: ' last.out)" 6

# A node looked up again costs a nodes.get in each of the fleet's zones
# until it is found.
start=$(date +%s.%N)
"$TPUFORM" watch -f fleet.yaml -json -rounds 4 -interval 1s -session-check 1s >watch.out 2>watch.err
is "watch of four rounds exits 0" "$?" 0
ok "its rounds saw all six alive" grep -q '"alive":6' watch.out
# Requests from the watch's start on: "METHOD PATH".
jq -r --argjson t "$start" 'select(.t >= $t) | "\(.method) \(.path)"' requests.jsonl >reqs.txt
ok "the watch listed the zones" grep -q 'GET /v2/projects/test-project/locations/z1/nodes$' reqs.txt
gets=$(grep -cE '^GET .*/(nodes|instances)/[^/:]+$' reqs.txt)
is "no nodes.get or instances.get in the first rounds ($(grep -E '^GET .*/(nodes|instances)/[^/:]+$' reqs.txt | head -3 | tr '\n' ' '))" "$gets" 0
is "no per-node request at all (guest attributes, patches)" \
	"$(grep -cE '/(nodes|instances|queuedResources)/' reqs.txt)" 0
finish

#!/bin/sh
# shellcheck disable=SC2317 # the helpers are called through ok and wait_for
# watch attaches its job waits from the list pages, not from one GET per
# node (issue 28): after `apply`, a watch over 6 Cloud TPU nodes waits on
# every worker's job, and the emulator sees no GET of a single node from
# watch's start on: only the zone lists. Loopback block 127.0.72.x.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t740
gcp_workers_start 6 127.0.72.1 --op-seconds 0.1
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
cat >fleet.yaml <<YAML
fleet: nog
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [us-central1-f], count: 6 }
YAML
ok "apply makes 6 nodes and starts their jobs" tpuform apply -f fleet.yaml -auto-approve
before=$(requests | jq 'length')
"$TPUFORM" watch -f fleet.yaml -interval 1s -session-check 1h >watch.out 2>&1 &
wpid=$!
waiting() { [ "$(find "$W"/workers -path '*/tpuform/run/wait.*' 2>/dev/null | wc -l)" -ge 6 ]; }
ok "watch waits on every worker's job" wait_for 60 waiting
sleep 2
kill "$wpid"
wait "$wpid"
since=$(requests | jq -r --argjson n "$before" '.[$n:][] | "\(.method) \(.path)"')
like "watch listed the zone" "$since" "GET /v2/projects/test-project/locations/us-central1-f/nodes"
is "and asked for no node alone" "$(echo "$since" | grep -c '/nodes/[^/]*$')" 0
finish

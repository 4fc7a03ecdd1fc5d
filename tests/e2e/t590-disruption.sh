#!/bin/sh
# Disruptions reach the job (issue 21): a spot preemption notice on a
# worker's (fake) metadata server (~/metadata/instance/preempted, the local
# provider's TPUFORM_METADATA_DIR) gives the job SIGTERM with
# $TPUFORM_DISRUPTION present; the job's TPUFORM_CHECKPOINT=1200 is in
# `show` and its restart on that VM starts with TPUFORM_LAST_CHECKPOINT=1200;
# a planned `-replace` tells the job (reason=replaced) and waits for it to
# checkpoint (its handler takes 2 s) before the node is deleted.
. "$(dirname "$0")/lib.sh"
setup_dir t590
cat >fleet.yaml <<'YAML'
fleet: dr
provider:
  local: { root: nodes, create_delay: 0.2s }
restart_backoff: 0s
on_disruption: { signal: SIGTERM, grace: 20s }
run: |
  b=$TPUFORM_BUCKET; mkdir -p "$b"
  echo "start retry=$TPUFORM_RETRY last=$TPUFORM_LAST_CHECKPOINT" >>"$b/starts"
  trap 'sleep 2; { echo "signal retry=$TPUFORM_RETRY"; cat "$TPUFORM_DISRUPTION"; } >>"$b/told"; exit 143' TERM
  echo TPUFORM_CHECKPOINT=1200
  while :; do sleep 0.2; done
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1, spot: true }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
wait_for 10 grep -q "start retry=0" nodes/bucket/starts
home=$W/nodes/nodes/dr-a-0/workers/0
wait_for 10 sh -c "\"$TPUFORM\" show -detail -f fleet.yaml | grep -q 'last checkpoint: 1200'"
like "show: the job's last checkpoint" "$(tpuform show -detail -f fleet.yaml)" "last checkpoint: 1200"
mkdir -p "$home/metadata/instance" && echo TRUE >"$home/metadata/instance/preempted"
wait_for 15 grep -q "reason=preempted" nodes/bucket/told
like "the notice reached the job as SIGTERM with \$TPUFORM_DISRUPTION" "$(cat nodes/bucket/told)" "signal retry=0
reason=preempted
deadline=[0-9]+
deadline_rfc3339=[0-9T:Z-]+
signal=SIGTERM"
rm -f "$home/metadata/instance/preempted"
# shellcheck disable=SC2317 # called through wait_for
exited() { "$TPUFORM" show -detail -f fleet.yaml | grep -q ' exited '; }
wait_for 10 exited
like "show: the job was told of the preemption" "$(tpuform show -detail -f fleet.yaml)" "told of a disruption: preempted"
ok "apply restarts the job" tpuform apply -f fleet.yaml -auto-approve
wait_for 10 grep -q "start retry=1" nodes/bucket/starts
like "the restart starts with TPUFORM_LAST_CHECKPOINT=1200" "$(cat nodes/bucket/starts)" "start retry=1 last=1200"

: >nodes/bucket/told
ok "apply -replace" tpuform apply -f fleet.yaml -auto-approve -replace dr-a-0
like "the replaced job was told before its VM went" "$(cat nodes/bucket/told)" "signal retry=1
reason=replaced"
wait_for 10 grep -q "start retry=2" nodes/bucket/starts
ok "the new node's job started" grep -q "start retry=2" nodes/bucket/starts
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

#!/bin/sh
# A job's checkpoint outlives its VM (issue 21): the job prints
# TPUFORM_CHECKPOINT=1200; watch records it in the state (show -json:
# last_checkpoint) without restarting anything; the node is preempted (the
# local provider's `local preempt`: its VMs and their disks are gone) and
# watch replaces it; the replacement's job, on a new VM with no checkpoint
# of its own, starts with TPUFORM_LAST_CHECKPOINT=1200. The preemption
# event gives the checkpoint's age; the run ledger's checkpoint event
# carries it.
. "$(dirname "$0")/lib.sh"
setup_dir t591
cat >fleet.yaml <<'YAML'
fleet: ck
provider:
  local: { root: nodes, create_delay: 0.2s }
run: |
  b=$TPUFORM_BUCKET; mkdir -p "$b"
  echo "start retry=$TPUFORM_RETRY last=$TPUFORM_LAST_CHECKPOINT" >>"$b/starts"
  [ "$TPUFORM_RETRY" != 0 ] || echo TPUFORM_CHECKPOINT=1200
  exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1, spot: true }
YAML
"$TPUFORM" watch -f fleet.yaml -interval 0.5s -session-check 1s >watch.out 2>&1 &
wpid=$!
wait_for 30 grep -q "start retry=0" nodes/bucket/starts
# shellcheck disable=SC2317 # called through wait_for
recorded() { "$TPUFORM" show -f fleet.yaml -json 2>/dev/null | grep -q '"last_checkpoint": *"1200"'; }
wait_for 30 recorded
ok "show -json: the node's last checkpoint, from the state" recorded
like "show -json: when it was seen" "$(tpuform show -f fleet.yaml -json)" '"checkpoint_at": *"[0-9-]+T[0-9:]+Z"'
like "the state records it for the node" "$(cat tpuform.state.json)" '"last_checkpoint": "1200"'
sleep 2 # a few more rounds: recording a checkpoint must not restart the job
is "recording it restarted nothing" "$(wc -l <nodes/bucket/starts | tr -d ' ')" 1
like "the run ledger's checkpoint event carries it" "$(cat tpuform.state.json.ledger.jsonl)" \
	'"event": *"checkpoint".*"checkpoint": *"1200"|"checkpoint": *"1200".*"event": *"checkpoint"'
# A step number reported this way is also the ledger's checkpoint step
# (what `report` counts lost work from), as "checkpoint saved at step N" is.
like "the ledger's checkpoint event has the step" \
	"$(grep '"event": *"checkpoint"' tpuform.state.json.ledger.jsonl | grep '"step"')" '"step": *1200[,}]'

"$TPUFORM" local preempt -f fleet.yaml ck-a-0 >/dev/null
wait_for 60 grep -q "start retry=1" nodes/bucket/starts
like "the replacement's job starts with TPUFORM_LAST_CHECKPOINT=1200" \
	"$(cat nodes/bucket/starts)" "start retry=1 last=1200"
like "the preemption event (ledger and webhook) says the checkpoint and its age" \
	"$(grep '"event":"preempted"' tpuform.state.json.ledger.jsonl)" \
	'"message":"the node is preempted: replacing it; last checkpoint 1200, [0-9]+s ago"'
like "the record survives the replacement" "$(tpuform show -f fleet.yaml -json)" \
	'"last_checkpoint": *"1200"'
kill -TERM "$wpid"
wait "$wpid"
is "watch exits 0 on SIGTERM" "$?" 0
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

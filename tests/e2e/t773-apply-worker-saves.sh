#!/bin/sh
# apply saves worker records in batches (engine/apply/apply_internal.h
# APPLY_WORKER_SAVE_INTERVAL): one save per worker made N saves of a state
# that grows with N. 8 v4-32 nodes = 32 workers on the local provider: the
# state's serial (one per save) stays well under one save per worker plus
# the nodes' own saves (48 before), and every worker's record is in the
# state the apply leaves (its last save). No sshd workers.
. "$(dirname "$0")/lib.sh"
setup_dir t773
cat >fleet.yaml <<'YAML'
fleet: t773
provider:
  local: { root: nodes }
run: exec sleep 300
groups:
  - { name: train, accelerator_type: v4-32, runtime_version: rt, zones: [z1], count: 8 }
YAML
t0=$(date +%s)
ok "apply provisions 32 workers" tpuform apply -f fleet.yaml -auto-approve
secs=$(($(date +%s) - t0 + 1))
is "every worker's record is saved" \
	"$(jq '[.nodes[].workers[] | select(.script_hash != null)] | length' tpuform.state.json)" 32
serial=$(jq .serial tpuform.state.json)
# Node saves (create requested, created, running: 2 per node) plus at most
# one worker save a second of the apply and the last save.
bound=$((16 + secs + 2))
ok "saves: $serial for 32 workers in ${secs}s (at most $bound; 48 when each worker saved)" \
	test "$serial" -le "$bound" -a "$serial" -lt 48
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

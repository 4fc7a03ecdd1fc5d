#!/bin/sh
# Completion (docs/design.md section 8, "Completion"): with on_success:
# delete, a node whose every worker's job exited 0 is deleted to free its
# quota and is never created again; the state remembers it as completed
# (exit status, time); plan and show list it; watch -exit-when-done exits 0
# once every node completed, and 1 when the rest failed (restarts used up,
# the node kept for debugging).
. "$(dirname "$0")/lib.sh"
setup_dir t250
cat >fleet.yaml <<'YAML'
fleet: sw
provider:
  local: { root: nodes, create_delay: 0.2s }
# One node's worth of quota for two nodes: the second waits for the first.
quota:
  - { zone: z1, accelerator_type: v4-16, on_demand: 1 }
on_success: delete
run: |
  mkdir -p "$TPUFORM_BUCKET"
  echo "$TPUFORM_NODE/$TPUFORM_WORKER_ID retry=$TPUFORM_RETRY" >>"$TPUFORM_BUCKET/starts"
  sleep 1
  echo "trial done"
groups:
  - { name: trial, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 2 }
YAML
ok "watch -exit-when-done runs the sweep to its end and exits 0" \
	timeout 120 "$TPUFORM" watch -f fleet.yaml -interval 0.5s -session-check 0.5s -exit-when-done
cp last.out watch.out
ok "it says so" grep -q "done: 2 nodes completed, 0 failed" watch.out
ok "the first node was deleted as completed" \
	grep -q "sw-trial-0: delete (completed: every worker's job exited 0; delete the node to free its quota (on_success: delete))" watch.out
ok "the second one ran once the first freed the quota" grep -q "^sw-trial-1/1 retry=0" nodes/bucket/starts
is "the local nodes are gone" "$(dir_names nodes/nodes | wc -l | tr -d ' ')" 0
is "each job ran once per worker" "$(wc -l <nodes/bucket/starts | tr -d ' ')" 4
state=$("$TPUFORM" state pull -f fleet.yaml)
is "the state remembers both as completed" "$(printf '%s\n' "$state" | grep -c '"status": "completed"')" 2
like "with the exit status" "$state" '"exit_code": 0,'
like "and the time" "$state" '"completed_at": "[0-9-]+T[0-9:]+Z"'
ok "a later plan: nothing to do (-detailed-exitcode 0)" tpuform plan -f fleet.yaml -detailed-exitcode
out=$(cat last.out)
like "plan lists them as completed with exit 0" "$out" \
	"^  - sw-trial-0: completed with exit 0 at [0-9-]+T[0-9:]+Z; deleted, not created again \(on_success: delete\)$"
unlike "not missing, not created" "$out" "will be created|missing"
like "show lists them" "$(tpuform show -detail -f fleet.yaml)" \
	"^sw-trial-1  COMPLETED  v4-16  z1  on-demand .*\[completed: exit 0 at [0-9-]+T[0-9:]+Z\]$"
ok "apply creates nothing" tpuform apply -f fleet.yaml -auto-approve
is "no node exists" "$(dir_names nodes/nodes | wc -l | tr -d ' ')" 0
ok "a second watch is done at once" \
	timeout 30 "$TPUFORM" watch -f fleet.yaml -interval 0.5s -exit-when-done
ok "destroy forgets the completed nodes" tpuform destroy -f fleet.yaml -auto-approve
is "the state is empty" "$("$TPUFORM" state list -f fleet.yaml | wc -l | tr -d ' ')" 0

# A job that fails for good: restarts used up, the node failed and kept;
# watch -exit-when-done ends with status 1.
cat >fail.yaml <<'YAML'
fleet: sf
provider:
  local: { root: failnodes, create_delay: 0.2s }
state: { path: fail.state.json }
on_success: delete
max_restarts: 1
restart_backoff: 0s
run: echo "no luck"; exit 3
groups:
  - { name: trial, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1 }
YAML
fails "watch -exit-when-done: every node failed, exit 1" 1 \
	timeout 120 "$TPUFORM" watch -f fail.yaml -interval 0.5s -session-check 0.5s -exit-when-done
cp last.out fail.out
# both workers exit 3 at once: either may be the one named
ok "it says why" grep -Eq "sf-trial-0: failed: worker [01] job failed \(exit 3\) after 1 restart of all 2 workers; restarts are used up \(max_restarts: 1\); the node is kept for debugging" fail.out
ok "and that it is done" grep -q "done: 0 nodes completed, 1 failed" fail.out
ok "the failed node is kept for debugging" test -d failnodes/nodes/sf-trial-0
fails "plan: not as declared (3)" 3 tpuform plan -f fail.yaml -detailed-exitcode
ok "destroy the failed fleet" tpuform destroy -f fail.yaml -auto-approve

# on_success: keep: the node stays; the plan lists it as completed and kept.
sed -e 's/^on_success: delete/on_success: keep/' -e 's/^fleet: sw/fleet: sk/' \
	-e 's/root: nodes,/root: keepnodes,/' -e 's/count: 2/count: 1/' fleet.yaml >keep.yaml
printf 'state: { path: keep.state.json }\n' >>keep.yaml
ok "keep: watch -exit-when-done exits 0" \
	timeout 120 "$TPUFORM" watch -f keep.yaml -interval 0.5s -session-check 0.5s -exit-when-done
ok "the node is kept" test -d keepnodes/nodes/sk-trial-0
like "plan lists it as completed and kept" "$(tpuform plan -f keep.yaml)" \
	"^  - sk-trial-0: completed with exit 0; the node is kept \(on_success: keep\)$"
like "show marks it" "$(tpuform show -detail -f keep.yaml)" "^sk-trial-0  READY .*\[succeeded\]$"
ok "destroy the kept fleet" tpuform destroy -f keep.yaml -auto-approve
finish

#!/bin/sh
# serial: watch rounds of a fraction of a second, timed detection
# tpuform watch on the local provider: heals preemptions and out-of-band
# deletions, reports but does not apply non-healing changes (unless
# -apply-all), falls back to the next zone on "no capacity" and backs the
# refusing zone off, keeps quota, and exits 0 on SIGTERM with state intact.
. "$(dirname "$0")/lib.sh"
setup_dir t500
cat >fleet.yaml <<'YAML'
fleet: wa
provider:
  local: { root: nodes, create_delay: 0.3s }
quota:
  - { zone: z1, accelerator_type: v2-8, preemptible: 3 }
  - { zone: z2, accelerator_type: v2-8, preemptible: 0 }
run: |
  mkdir -p "$TPUFORM_BUCKET"
  echo "$TPUFORM_NODE retry=$TPUFORM_RETRY" >>"$TPUFORM_BUCKET/starts"
  exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1, z2], count: 4, preemptible: true }
YAML
start_watch() {
	"$TPUFORM" watch -f fleet.yaml -interval 0.5s -session-check 1s "$@" >>watch.out 2>&1 &
	wpid=$!
}
start_watch
wait_for 60 grep -q "alive 3/4" watch.out
ok "watch brings up what quota allows: 3 alive" grep -q "alive 3/4, creating 0, waiting for quota 1" watch.out
ok "the fourth node waits for quota, as a warning" grep -q "deferred: quota" watch.out
is "no node beyond quota exists" "$(dir_names nodes/nodes | wc -l | tr -d ' ')" 3

"$TPUFORM" local preempt -f fleet.yaml wa-a-1 >/dev/null
wait_for 60 grep -q "wa-a-1 retry=1" nodes/bucket/starts
ok "a preempted node is replaced and its job sees TPUFORM_RETRY=1" grep -q "wa-a-1 retry=1" nodes/bucket/starts
ok "the detection is reported" grep -q "wa-a-1: the node is preempted: replacing" watch.out

rm -rf nodes/nodes/wa-a-2
wait_for 60 grep -q "wa-a-2 retry=1" nodes/bucket/starts
ok "a node deleted out of band is recreated from the state's recipe" test -d nodes/nodes/wa-a-2
ok "reported as missing" grep -q "wa-a-2: the node is missing" watch.out

sed -i 's/runtime_version: rt,/runtime_version: rt2,/' fleet.yaml
: >watch.out
kill -TERM $wpid; wait $wpid
is "SIGTERM: watch exits 0" "$?" 0
ok "and says nothing was deleted" grep -q "nothing deleted" watch.out
is "all three nodes still exist after watch stopped" "$(dir_names nodes/nodes | wc -l | tr -d ' ')" 3
ok "the state is intact" sh -c "\"$TPUFORM\" state list -f fleet.yaml | grep -c wa-a | grep -qx 3"

: >watch.out
start_watch -rounds 2
wait $wpid
ok "a changed runtime version is reported as pending, not applied" grep -q "pending, not healing" watch.out
ok "no node was replaced" sh -c "! grep -q 'deleting' watch.out"
ok "show reads the last watch summary" sh -c "\"$TPUFORM\" show -f fleet.yaml | grep -q '^Watch: leader .*, last round .* ago (round [0-9]*: alive 3/4'"
: >watch.out
start_watch -rounds 3 -apply-all
wait $wpid
ok "with -apply-all the change is applied" grep -q "wa-a-0: deleting" watch.out
ok "nodes run the new runtime" grep -q '"runtime_version": "rt2"' tpuform.state.json

# A READY node that stays unhealthy past -unhealthy-timeout is replaced.
id_before=$("$TPUFORM" state show -f fleet.yaml wa-a-0 | grep '"id"')
sed -i 's/"health": "HEALTHY"/"health": "UNHEALTHY_MAINTENANCE"/' nodes/nodes/wa-a-0/node.json
: >watch.out
"$TPUFORM" watch -f fleet.yaml -interval 0.3s -unhealthy-timeout 1s -rounds 8 >watch.out 2>&1
ok "an unhealthy node is noticed" grep -q "wa-a-0: health is UNHEALTHY_MAINTENANCE" watch.out
ok "and replaced once the timeout passed" grep -q "wa-a-0: the node has been UNHEALTHY_MAINTENANCE for [0-9]* s: replacing" watch.out
ok "the replacement has a new id" test "$("$TPUFORM" state show -f fleet.yaml wa-a-0 | grep '"id"')" != "$id_before"
ok "and is healthy" grep -q '"health": "HEALTHY"' nodes/nodes/wa-a-0/node.json

# SIGTERM in the middle of a heal: the step in flight finishes, the state
# stays readable, nothing is deleted, and the next watch converges.
cat >slow.yaml <<'YAML'
fleet: ws
provider:
  local: { root: slownodes, create_delay: 2s }
state: { path: slow.state.json }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 3 }
YAML
"$TPUFORM" watch -f slow.yaml -interval 0.3s >slow.out 2>&1 &
spid=$!
wait_for 40 grep -q "ws-a-0: creating" slow.out
kill -TERM $spid
wait $spid
is "SIGTERM while nodes are CREATING: watch exits 0" "$?" 0
ok "the state is readable" tpuform state list -f slow.yaml
# In-flight creates stop waiting (the nodes go on CREATING): each is recorded.
recorded=$("$TPUFORM" state pull -f slow.yaml | grep -c '"status": "\(created\|pending\)"')
is "the creates in flight were recorded" "$recorded" 3
"$TPUFORM" watch -f slow.yaml -interval 0.3s -rounds 20 >slow2.out 2>&1
ok "the next watch converges" grep -q "alive 3/3" slow2.out
ok "destroy the slow fleet" tpuform destroy -f slow.yaml -auto-approve

# Capacity: z1 has none and z2 has quota for one node. Two nodes keep
# wanting z1; the backoff must keep them from asking it every round.
cat >cap.yaml <<'YAML'
fleet: wc
provider:
  local: { root: capnodes, create_delay: 0.1s }
state: { path: cap.state.json }
quota:
  - { zone: z2, accelerator_type: v2-8, on_demand: 1 }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1, z2], count: 3 }
YAML
TPUFORM_LOCAL_NO_CAPACITY=z1 "$TPUFORM" watch -f cap.yaml -interval 0.3s -rounds 12 >cap.out 2>&1
is "watch with refusals still exits 0" "$?" 0
ok "a node refused by z1 is created in z2" grep -q "trying zone z2" cap.out
is "exactly one node exists (z2's quota)" "$(dir_names capnodes/nodes | wc -l | tr -d ' ')" 1
ok "the others are deferred, not failed" grep -q "deferred: no zone of its group can take it now" cap.out
ok "z1 is skipped while backed off" grep -q "zone z1 is backed off" cap.out
asked=$(grep -c "zone z1 refused" cap.out)
ok "z1 was not asked every round ($asked refusals in 12 rounds, 3 in the first)" test "$asked" -le 9
ok "destroy the capacity fleet" tpuform destroy -f cap.yaml -auto-approve

ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

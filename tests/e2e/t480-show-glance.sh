#!/bin/sh
# tpuform show at a glance (issue 19 item 7; docs/commands.md "show"): one
# line per node with its columns, so 20 nodes fit in about 22 lines; a
# preempted node's workers are never "running", and its replacement counts
# a preemption that the state keeps; show NODE gives the per-worker
# detail, an unknown NODE a "did you mean"; the Watch line says who ran
# the last round and how long ago.
. "$(dirname "$0")/lib.sh"
setup_dir t480
cat >fleet.yaml <<'YAML'
fleet: gl
provider:
  local: { root: nodes, create_delay: 0.1s }
run: |
  echo "step 1 of a job that says a lot more than forty characters on one line"
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 20 }
YAML
ok "apply creates 20 nodes" tpuform apply -f fleet.yaml -auto-approve
wait_for 30 sh -c "\"$TPUFORM\" show -f fleet.yaml | grep -c ' running ' | grep -qx 20"
show=$(tpuform show -f fleet.yaml)
printf '%s\n' "$show" >show1.out
lines=$(printf '%s\n' "$show" | wc -l | tr -d ' ')
ok "20 nodes fit in at most 23 lines (got $lines)" test "$lines" -le 23
like "a header names the columns" "$show" \
	"^NODE +STATE +TYPE +ZONE +CLASS +AGE +WORKERS +RESTARTS +PREEMPTED +JOB +LAST LOG LINE$"
is "one line per node" "$(printf '%s\n' "$show" | grep -c '^gl-a-[0-9]* ')" 20
is "in the order of their index" "$(printf '%s\n' "$show" | grep '^gl-a-' | head -3 | cut -d' ' -f1 | tr '\n' ' ')" "gl-a-0 gl-a-1 gl-a-2 "
like "a node's row: state, type, zone, class, age, workers, restarts, preemptions, job" "$show" \
	"^gl-a-7 +READY +v4-8 +z1 +on-demand +[0-9]+[smh][0-9m]* +1/1 +0 +0 +running +step 1"
like "the last log line is cut to 40 characters when stdout is no terminal" "$show" \
	"running +step 1 of a job that says a lot more \.\.\.$"
unlike "no per-worker rows by default" "$show" "^ +w0 "

tpuform local preempt -f fleet.yaml gl-a-3 >/dev/null
show=$(tpuform show -f fleet.yaml)
like "a preempted node shows its state" "$show" "^gl-a-3 +PREEMPTED "
like "and its job as unknown, not running" "$show" "^gl-a-3 .* 0/1 +0 +0 +unknown: node preempted"
unlike "never running" "$(printf '%s\n' "$show" | grep '^gl-a-3 ')" "running"
detail=$(tpuform show -f fleet.yaml gl-a-3)
like "show NODE: the node's header line" "$detail" "^gl-a-3  PREEMPTED  v4-8  z1  on-demand  generation=0 .*preemptions=0"
like "show NODE: per-worker rows, the worker not running" "$detail" "^ +w0 +- +unknown: node preempted"
unlike "show NODE: nothing said to run" "$detail" "running"
is "show NODE shows that node only" "$(printf '%s\n' "$detail" | grep -c '^gl-a-')" 1
like "show -json: the workers' session is not running" \
	"$(tpuform show -f fleet.yaml -json | jq -c '.nodes[] | select(.name == "gl-a-3") | [.workers[0].session, .workers_unknown, .job]')" \
	'\["unknown: node preempted","node preempted","unknown: node preempted"\]'

ok "apply replaces the preempted node" tpuform apply -f fleet.yaml -auto-approve
wait_for 30 sh -c "\"$TPUFORM\" show -f fleet.yaml | grep -q '^gl-a-3 .* running '"
show=$(tpuform show -f fleet.yaml)
like "the replacement counts one preemption" "$show" "^gl-a-3 +READY .* 1/1 +0 +1 +running "
like "the others none" "$show" "^gl-a-4 +READY .* 1/1 +0 +0 +running "
is "the state keeps the count" "$(tpuform state pull -f fleet.yaml | jq '.nodes[] | select(.name == "gl-a-3") | .preemptions')" 1
is "show -json has it, and the other new fields" \
	"$(tpuform show -f fleet.yaml -json | jq -c '.nodes[] | select(.name == "gl-a-3") | [.preemptions, .workers_up, .workers_total, .job, .class, .type, (.age_seconds >= 0), .generation]')" \
	'[1,1,1,"running","on-demand","v4-8",true,1]'
is "show -json keeps the old fields" \
	"$(tpuform show -f fleet.yaml -json | jq -c '.nodes[0] | [has("name"), has("state"), has("accelerator_type"), has("scheduling"), has("workers"), (.workers[0] | has("session")), (.workers[0] | has("last_log"))]')" \
	'[true,true,true,true,true,true,true]'
like "-detail: every node's workers" "$(tpuform show -f fleet.yaml -detail)" "^gl-a-19  READY"

fails "an unknown node is an error" 1 tpuform show -f fleet.yaml gl-a-3x
like "with a did-you-mean" "$(cat last.out)" "node 'gl-a-3x' is not in the state of fleet 'gl'; did you mean 'gl-a-3'\?"
fails "a plan file that does not exist is still read as one" 1 tpuform show -f fleet.yaml nope.plan
unlike "not taken for a node" "$(cat last.out)" "not in the state"

ok "a watch round runs" tpuform watch -f fleet.yaml -rounds 1 -interval 0.2s
show=$(tpuform show -f fleet.yaml)
like "the Watch line names the leader and the round's age" "$show" \
	"^Watch: leader [^ ]+:[0-9]+, last round [0-9]+s ago \(round 1: alive 20/20"
like "show -json: the watch's age" "$(tpuform show -f fleet.yaml -json | jq -c '[.watch.age_seconds >= 0, (.watch.leader | test(":[0-9]+$"))]')" '\[true,true\]'
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

#!/bin/sh
# serial: watch rounds of a fraction of a second, timed detection
# watch acts on a preemption before it asks the workers for their sessions
# (issue 13: detection must not wait behind probes). One worker's status
# verb is made to hang; every round checks sessions (-session-check 0.5s),
# so before the change every round waited for that worker before acting.
# The preempted node must be replaced while the hanging probe is still
# running: an ordering, seen through a file the probe writes when it ends,
# not a timing.
. "$(dirname "$0")/lib.sh"
setup_dir t540
cat >fleet.yaml <<'YAML'
fleet: wp
provider:
  local: { root: nodes, create_delay: 0.2s }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 2, preemptible: true }
YAML
"$TPUFORM" apply -f fleet.yaml -auto-approve >apply.out 2>&1
is "apply brings up both nodes" "$?" 0

# Worker 0 of wp-a-0 answers its status only after 20 s (its script is
# replaced; the probe runs `sh tpuform/bootstrap.sh status` in its home).
H=nodes/nodes/wp-a-0/workers/0
ok "the worker's bootstrap script is where the local provider keeps it" test -f "$H/tpuform/bootstrap.sh"
printf '%s\n' "touch \"$PWD/probe-started\"" 'sleep 20' "touch \"$PWD/probe-ended\"" \
	>"$H/tpuform/bootstrap.sh"

"$TPUFORM" watch -f fleet.yaml -interval 0.5s -session-check 0.5s >watch.out 2>&1 &
wpid=$!
wait_for 30 test -f probe-started
ok "watch is probing the hanging worker" test -f probe-started
"$TPUFORM" local preempt -f fleet.yaml wp-a-1 >/dev/null
wait_for 18 grep -q "wp-a-1: the node is preempted: replacing" watch.out
ok "the preemption is acted on" grep -q "wp-a-1: the node is preempted: replacing" watch.out
ok "while the probe still hangs (acted on before the workers were asked)" test ! -f probe-ended
kill -TERM $wpid
wait $wpid
is "watch exits 0 on SIGTERM" "$?" 0
finish

#!/bin/sh
# The bootstrap's status while a start is under way (issue 21, job waits):
# between writing script.sha256 and the new job's wrapper writing job.pid
# (the stop before it removed the old one), the session is "none", not
# "dead". A wait that answered "dead" in that window had watch restart the
# job it had just started (t560 in CI). A session that died after its
# wrapper ran (job.pid left) is still "dead".
. "$(dirname "$0")/lib.sh"
setup_dir t597
cat >fleet.yaml <<'YAML'
fleet: sw
provider:
  local: { root: nodes, create_delay: 0s }
run: exit 0
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
h=$W/nodes/nodes/sw-a-0/workers/0
run=$h/tpuform/run
wait_for 10 test -f "$run/exit_code"
status() { (cd "$h" && HOME=$h sh tpuform/bootstrap.sh status | sed -n 's/^TPUFORM session=//p'); }
is "the job ran and exited" "$(status)" exited
rm -f "$run/exit_code" "$run/job.pid"
is "mid-start (script written, no wrapper yet): none" "$(status)" none
echo 999999 >"$run/job.pid"
is "a wrapper that ran and whose session is gone: dead" "$(status)" dead
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

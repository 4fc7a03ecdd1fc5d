#!/bin/sh
# The everyday chores on the local provider's 2-worker node (issue 19): cp
# up and back, exec with stdin, streaming and Ctrl-C, ssh -L and ssh --
# CMD; the job is never restarted (tests/e2e/chores_check.sh).
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/chores_check.sh"
setup_dir t470
cat >fleet.yaml <<'YAML'
fleet: ch
provider:
  local: { root: nodes, create_delay: 0.1s }
run: exec sleep 3000
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1 }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
chores_checks ch-a-0
# A YAML file is a file to copy, not a fleet file given by mistake.
ok "cp of a YAML file" tpuform cp -f fleet.yaml fleet.yaml ch-a-0:cfg.yaml
like "reaches the workers" "$(cat "$W/last.out")" "ch-a-0/w1 : sent 1 file"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

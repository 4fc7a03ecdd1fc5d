#!/bin/sh
# `tpuform exec` sees what the job sees (issue 26 item 10; docs/commands.md
# "exec"): every TPUFORM_* variable, with the job's value, including
# TPUFORM_HEARTBEAT, TPUFORM_DISRUPTION, TPUFORM_CHECKPOINT_FILE and
# TPUFORM_LAST_CHECKPOINT (the checkpoint the current run was given), and
# every variable docs/fleet-file.md lists as what the job sees. Local
# provider: no loopback block.
# shellcheck disable=SC2016 # $TPUFORM_* in the fleet file are the worker's
. "$(dirname "$0")/lib.sh"
setup_dir t680
cat >fleet.yaml <<'YAML'
fleet: t680
provider:
  local: { root: nodes, create_delay: 0.1s }
env: { MY_VAR: hello }
restart: on-failure
max_restarts: 1
run: |
  env | grep '^TPUFORM_' | sort >"$TPUFORM_BUCKET/job-$TPUFORM_WORKER_ID-$TPUFORM_RETRY"
  if [ "$TPUFORM_RETRY" = 0 ]; then echo "TPUFORM_CHECKPOINT=step-7"; exit 1; fi
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1 }
YAML
mkdir -p nodes/bucket
ok "apply" tpuform apply -f fleet.yaml -auto-approve
wait_for 20 test -s nodes/bucket/job-1-0
# the first run exits 1 after its checkpoint line; apply restarts it
wait_for 20 sh -c "'$TPUFORM' plan -f fleet.yaml -detailed-exitcode >/dev/null 2>&1; test \$? = 2"
ok "apply restarts the failed job" tpuform apply -f fleet.yaml -auto-approve
wait_for 20 test -s nodes/bucket/job-1-1
# exec's view of worker 1, as NAME=VALUE lines
tpuform exec -f fleet.yaml t680-a-0 -worker 1 -- "env | grep '^TPUFORM_' | sort" >exec.out 2>&1
sed -n 's#^t680-a-0/w1 | ##p' exec.out >exec.env
is "exec sees every TPUFORM_* variable of the job, with the job's values" \
	"$(diff nodes/bucket/job-1-1 exec.env)" ""
for v in TPUFORM_HEARTBEAT TPUFORM_DISRUPTION TPUFORM_CHECKPOINT_FILE; do
	like "exec sees $v" "$(cat exec.env)" "^$v=/"
done
like "exec sees the checkpoint the current run was given" "$(cat exec.env)" "^TPUFORM_LAST_CHECKPOINT=step-7$"
# The docs' list: the names of "The job sees `...`" in docs/fleet-file.md.
docs=$(awk '/^## What every worker gets/ { on = 1 } on' "$TOP/docs/fleet-file.md" |
	tr '\n' ' ' | sed -n 's/.*The job sees `\([^`]*\)`.*/\1/p' | tr ' ' '\n' | grep . | sort)
ok "docs/fleet-file.md lists what the job sees" test -n "$docs"
missing=$(for v in $docs; do grep -q "^$v=" exec.env || echo "$v"; done)
is "exec sees every variable the docs list" "$missing" ""
like "docs/commands.md points exec at that list" "$(cat "$TOP/docs/commands.md")" \
	"the command sees what the job sees: the variables of \[What every worker gets\]"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

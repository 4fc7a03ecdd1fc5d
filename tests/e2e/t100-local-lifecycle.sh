#!/bin/sh
# The main job on the local provider: apply, idempotent plan, re-provision,
# scale down, preemption with resume, destroy.
# shellcheck disable=SC2016 # $vars in single quotes are for the job, on the worker
. "$(dirname "$0")/lib.sh"
setup_dir t100
make_repo

fleet() { # $1 = count of group a, $2 = run command of group a
	cat >fleet.yaml <<YAML
fleet: lc
provider:
  local: { root: nodes, create_delay: 0.3s }
source: { repo: repo, ref: main }
env: { GREETING: "hello world" }
run: sh job.sh; echo "greeting=\$GREETING"; exec sleep 300
groups:
  - name: a
    accelerator_type: v4-16
    runtime_version: tpu-ubuntu2204-base
    zones: [z1]
    count: $1
    preemptible: true
    run: $2
  - name: b
    accelerator_type: v2-8
    runtime_version: tpu-ubuntu2204-base
    zones: [z1, z2]
    count: 1
YAML
}
RUN_A='sh job.sh; echo "greeting=$GREETING"; mkdir -p $TPUFORM_BUCKET; echo "$TPUFORM_NODE/$TPUFORM_WORKER_ID retry=$TPUFORM_RETRY" >>$TPUFORM_BUCKET/runs; exec sleep 300'
fleet 2 "'$RUN_A'"

ok "validate accepts the fleet" tpuform validate -f fleet.yaml
out=$(tpuform plan -f fleet.yaml)
like "plan lists three creates" "$out" "Plan: 3 to add, 0 to change, 0 to destroy\."
like "plan shows the pinned commit" "$out" "commit += \"$(git -C repo rev-parse main)\""
fails "plan -detailed-exitcode says 2 when there are changes" 2 tpuform plan -f fleet.yaml -detailed-exitcode

ok "apply creates the fleet" tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "apply prints creation lines" "$out" "lc-a-0: Creation complete after [0-9]+s \[id=[0-9]+\]"
like "apply prints a recap per worker" "$out" "lc-a-1/w1 +: ok=0 +changed=1 +unreachable=0 +failed=0"
like "apply summary" "$out" "Apply complete! Resources: 3 added, 0 changed, 0 destroyed\."
# shellcheck disable=SC2012 # tpuform's own names: no spaces or newlines
is "five worker homes exist (2 x v4-16 + 1 x v2-8)" "$(ls -d nodes/nodes/*/workers/* | wc -l | tr -d ' ')" 5

wait_for 10 sh -c "\"$TPUFORM\" logs -f fleet.yaml lc-a-1 -worker 1 | grep -q 'greeting=hello world'"
out=$(tpuform logs -f fleet.yaml lc-a-1)
like "the job's output is visible with worker prefixes" "$out" "^lc-a-1/w1 \| job on lc-a-1/1 of 2 retry=0 commit=$(git -C repo rev-parse main)"
like "env reaches the job" "$out" "lc-a-1/w0 \| greeting=hello world"

out=$(tpuform show -detail -f fleet.yaml)
like "show lists every worker with a live session" "$out" "w1 +yes +alive"
is "show: 5 alive sessions" "$(printf '%s\n' "$out" | grep -c ' alive ')" 5

ok "a second plan has no changes (exit 0 with -detailed-exitcode)" tpuform plan -f fleet.yaml -detailed-exitcode
like "and says so" "$(cat last.out)" "No changes. Your infrastructure matches the configuration."

ids_before=$(tpuform state pull -f fleet.yaml | grep '"id"' | sort)
RUN_A2='echo "second version retry=$TPUFORM_RETRY"; exec sleep 300'
fleet 2 "'$RUN_A2'"
out=$(tpuform plan -f fleet.yaml)
like "a changed run command is an in-place update" "$out" "Plan: 0 to add, 2 to change, 0 to destroy\."
like "the plan shows the old and new run" "$out" '~ run += ".*exec sleep 300" -> "echo \\"second version'
unlike "nothing is replaced" "$out" "must be replaced"
like "and says the running job will be restarted" "$out" "the running job will be restarted"
ok "apply re-provisions" tpuform apply -f fleet.yaml -auto-approve
like "only group a's workers changed" "$(cat last.out)" "Resources: 0 added, 2 changed, 0 destroyed"
is "no node was re-created (ids unchanged)" "$(tpuform state pull -f fleet.yaml | grep '"id"' | sort)" "$ids_before"
wait_for 10 sh -c "\"$TPUFORM\" logs -f fleet.yaml lc-a-0 -worker 1 | grep -q 'second version'"
like "the new run command runs" "$(tpuform logs -f fleet.yaml lc-a-0 -worker 1)" "second version retry=0"

fleet 1 "'$RUN_A2'"
out=$(tpuform plan -f fleet.yaml)
like "a lower count deletes the last node" "$out" "# lc-a-1 will be destroyed"
like "with Terraform's reason" "$out" "because index \[1\] is out of range for count"
ok "apply deletes it" tpuform apply -f fleet.yaml -auto-approve
is "its directory is gone" "$(dir_names nodes/nodes | tr '\n' ' ')" "lc-a-0 lc-b-0 "

fleet 1 "'$RUN_A'"
ok "back to the first run command" tpuform apply -f fleet.yaml -auto-approve
ok "preempt lc-a-0" tpuform local preempt -f fleet.yaml lc-a-0
out=$(tpuform plan -f fleet.yaml)
like "plan replaces the preempted node" "$out" "# lc-a-0 must be replaced"
like "and says why" "$out" "the node is preempted"
like "replace counts as add and destroy" "$out" "Plan: 1 to add, 0 to change, 1 to destroy\."
ok "apply replaces it" tpuform apply -f fleet.yaml -auto-approve
wait_for 10 sh -c "grep -q 'lc-a-0/1 retry=1' nodes/bucket/runs"
like "the job restarted with TPUFORM_RETRY=1 on both workers" "$(sort nodes/bucket/runs | tr '\n' ' ')" "lc-a-0/0 retry=1 .*lc-a-0/1 retry=1"
is "state records generation 1" "$(tpuform state show -f fleet.yaml lc-a-0 | grep '"generation"' | tr -d ' ,')" '"generation":1'

ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
like "destroy summary" "$(cat last.out)" "Destroy complete! Resources: 2 destroyed\."
is "no node directories remain" "$(dir_names nodes/nodes | wc -l | tr -d ' ')" 0
is "no job processes remain" "$(pgrep -f "$W/nodes" | wc -l | tr -d ' ')" 0
is "state is empty" "$(tpuform state list -f fleet.yaml | wc -l | tr -d ' ')" 0
ok "a plan after destroy has no changes except creating again" sh -c "\"$TPUFORM\" plan -f fleet.yaml | grep -q 'Plan: 2 to add'"
finish

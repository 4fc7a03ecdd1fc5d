#!/bin/sh
# Machine-readable output and saved plans, as GitOps pipelines use them.
. "$(dirname "$0")/lib.sh"
setup_dir t140
command -v jq >/dev/null || { echo "1..0 # SKIP jq is not installed"; exit 0; }
cat >fleet.yaml <<'YAML'
fleet: js
provider:
  local: { root: nodes, create_delay: 0.2s }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 2 }
YAML
tpuform plan -f fleet.yaml -json >plan.jsonl 2>&1
ok "every line of plan -json is a JSON object" sh -c "jq -e 'type == \"object\"' plan.jsonl >/dev/null"
is "the first line is the version message" "$(head -n1 plan.jsonl | jq -r .type)" version
is "each line has @level @message @module @timestamp type" \
	"$(jq -r 'has("@level") and has("@message") and has("@module") and has("@timestamp") and has("type")' plan.jsonl | sort -u)" true
is "two planned_change lines with action create" "$(jq -r 'select(.type=="planned_change") | .change.action' plan.jsonl | tr '\n' ' ')" "create create "
is "the change summary counts" "$(jq -c 'select(.type=="change_summary") | .changes | [.add,.change,.remove]' plan.jsonl)" "[2,0,0]"
is "and carries Terraform's message" "$(jq -r 'select(.type=="change_summary") | .["@message"]' plan.jsonl)" "Plan: 2 to add, 0 to change, 0 to destroy."
fails "apply -json without -auto-approve or a plan is refused" 1 tpuform apply -f fleet.yaml -json
like "with Terraform's message" "$(cat last.out)" "Plan file or auto-approve required"
ok "nothing was created by that" test ! -e nodes/nodes

ok "plan -out saves a plan" tpuform plan -f fleet.yaml -out=tf.plan
like "and says how to apply it" "$(cat last.out)" 'tpuform apply "tf.plan"'
is "the saved plan file is mode 0600" "$(stat -c %a tf.plan)" 600
ok "apply of the saved plan needs no prompt" tpuform apply -f fleet.yaml -json tf.plan </dev/null
cp last.out apply.jsonl
is "apply -json reports two apply_complete lines for creates" \
	"$(jq -r 'select(.type=="apply_complete" and .hook.action=="create") | .hook.resource.addr' apply.jsonl | sort | tr '\n' ' ')" "js-a-0 js-a-1 "
is "and a provision recap per worker" "$(jq -r 'select(.type=="provision_recap") | .recap.changed' apply.jsonl | tr '\n' ' ')" "1 1 "
fails "the same saved plan again is stale" 1 tpuform apply -f fleet.yaml tf.plan
like "with Terraform's message" "$(cat last.out)" "Saved plan is stale"

sed -i 's/count: 2/count: 1/' fleet.yaml
tpuform plan -f fleet.yaml -out=down.plan >/dev/null 2>&1
sed -i 's/count: 1/count: 3/' fleet.yaml
fails "a saved plan whose fleet file changed is refused" 1 tpuform apply -f fleet.yaml down.plan
like "saying the fleet file changed" "$(cat last.out)" "fleet file changed"
is "nothing was deleted" "$(dir_names nodes/nodes | wc -l | tr -d ' ')" 2
echo '{"format":"nonsense"}' >junk.plan
fails "a file that is not a plan is refused" 1 tpuform apply -f fleet.yaml junk.plan

tpuform show -f fleet.yaml -json >show.json 2>&1
is "show -json lists the nodes with workers and sessions" "$(jq -r '.nodes[] | select(.in_state != false) | .name + ":" + .workers[0].session' show.json | tr '\n' ' ')" "js-a-0:alive js-a-1:alive "
is "and the declared node not created yet" "$(jq -r '.nodes[] | select(.in_state == false) | .name + ":" + .not_as_declared' show.json)" "js-a-2:not_created"
fails "-detailed-exitcode gives 2 with changes" 2 tpuform plan -f fleet.yaml -detailed-exitcode
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

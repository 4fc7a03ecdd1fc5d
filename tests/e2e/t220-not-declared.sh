#!/bin/sh
# What is not as declared and no action can change is said plainly, never
# as "No changes. Your infrastructure matches the configuration.": a job
# whose restarts are used up, and a node that no zone has quota for. With
# -detailed-exitcode such a plan exits 3 (docs/commands.md, "Exit codes"), so a
# pipeline can tell "nothing to do" (0) from "cannot converge" (3).
. "$(dirname "$0")/lib.sh"
setup_dir t220

# 1. A job that always fails, max_restarts: 1.
mkdir rs && cd rs || exit 1
cat >fleet.yaml <<'YAML'
fleet: nd
provider:
  local: { root: nodes, create_delay: 0.2s }
restart: on-failure
max_restarts: 1
run: echo boom; exit 1
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
# w0's session: exited with status 1 after RESTARTS restarts.
# shellcheck disable=SC2317 # called through wait_for
failed_after() { "$TPUFORM" show -detail -f fleet.yaml | grep -qE "^ +w0 +yes +exited +1 +$1 "; }
ok "apply" tpuform apply -f fleet.yaml -auto-approve
ok "the job failed" wait_for 10 failed_after 0
fails "first failure: a restart is planned (exit 2)" 2 tpuform plan -f fleet.yaml -detailed-exitcode
like "it restarts the worker" "$(cat "$W/last.out")" "worker 0 job failed: restart it"
unlike "nothing is listed as not declared yet" "$(cat "$W/last.out")" "Not as declared"
ok "apply restarts it" tpuform apply -f fleet.yaml -auto-approve
ok "the job failed again" wait_for 10 failed_after 1
fails "restarts used up: -detailed-exitcode gives 3" 3 tpuform plan -f fleet.yaml -detailed-exitcode
out=$(cat "$W/last.out")
like "the plan has its own section" "$out" "^Not as declared \(tpuform cannot change these now\):$"
like "naming the worker, the exit status and the limit" "$out" \
	"^  - nd-a-0/w0: job failed \(exit 1\) after 1 restart; restarts are used up \(max_restarts: 1\)$"
unlike "and never says it matches the configuration" "$out" "matches the configuration"
like "it says no change can be made now" "$out" \
	"^No changes can be made now, but the fleet is not as declared: see above\.$"
ok "without -detailed-exitcode, plan succeeds" tpuform plan -f fleet.yaml
out=$(tpuform plan -f fleet.yaml -json 2>&1)
is "-json: an unconverged message per entry" \
	"$(printf '%s\n' "$out" | jq -S -c 'select(.type == "unconverged") | .unconverged')" \
	'{"exit_code":1,"kind":"restarts_exhausted","node":"nd-a-0","reason":"job failed (exit 1) after 1 restart; restarts are used up (max_restarts: 1)","worker":0}'
is "-json: change_summary counts it" \
	"$(printf '%s\n' "$out" | jq -c 'select(.type == "change_summary") | [.changes.unconverged, .changes.add, .changes.change]')" \
	'[1,0,0]'
like "show marks the worker" "$(tpuform show -detail -f fleet.yaml)" "^ +w0 +yes +exited +1 +1 .*\[restarts exhausted\]$"
like "show -json too" "$(tpuform show -f fleet.yaml -json)" '"not_as_declared": "restarts_exhausted"'
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
cd .. || exit 1

# 2. An on-demand node where the declared quota for on-demand is 0.
mkdir q && cd q || exit 1
write_fleet() {
	cat >fleet.yaml <<YAML
fleet: nq
provider:
  local: { root: nodes, create_delay: 0.2s }
quota:
  - { zone: local-a, accelerator_type: v2-8, on_demand: $1 }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [local-a], count: 1 }
YAML
}
write_fleet 0
fails "0 of 1 nodes, no quota: -detailed-exitcode gives 3" 3 tpuform plan -f fleet.yaml -detailed-exitcode
out=$(cat "$W/last.out")
like "the plan says the node waits for quota, naming the rule" "$out" \
	"^  - nq-a-0: waiting for quota: on_demand cap 0 in local-a \(quota\[0\], v2-8\)$"
unlike "and never says it matches the configuration" "$out" "matches the configuration"
ok "apply creates nothing" tpuform apply -f fleet.yaml -auto-approve
ok "no node exists" test ! -d nodes/nodes/nq-a-0
show=$(tpuform show -detail -f fleet.yaml)
like "show marks the node" "$show" "^nq-a-0  NOT CREATED  \[waiting for quota: on_demand cap 0 in local-a"
unlike "and does not suggest apply" "$show" "Run 'tpuform apply' to create them"
write_fleet 1
fails "with quota, the create is a change (exit 2)" 2 tpuform plan -f fleet.yaml -detailed-exitcode
unlike "and nothing is listed as not declared" "$(cat "$W/last.out")" "Not as declared"
ok "apply" tpuform apply -f fleet.yaml -auto-approve
ok "as declared: -detailed-exitcode gives 0" tpuform plan -f fleet.yaml -detailed-exitcode
like "and says it matches the configuration" "$(cat "$W/last.out")" \
	"^No changes\. Your infrastructure matches the configuration\.$"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

#!/bin/sh
# Declared quota on the local provider: caps are per scheduling class
# (a rule with preemptible: 2, spot: 1 takes two preemptible nodes AND one
# spot node), plan and apply agree, nothing is created beyond a cap, and a
# "*" rule caps every accelerator type of its zone together.
. "$(dirname "$0")/lib.sh"
setup_dir t190
write_fleet() {
	cat >fleet.yaml <<YAML
fleet: qt
provider:
  local: { root: nodes, create_delay: 0.2s }
quota:
  - { zone: local-a, accelerator_type: v2-8, preemptible: 2, spot: 1 }
$1
run: exec sleep 300
groups:
  - { name: pre, accelerator_type: v2-8, runtime_version: rt, zones: [local-a], count: 2, preemptible: true }
  - { name: sp, accelerator_type: v2-8, runtime_version: rt, zones: [local-a], count: $2, spot: true }
$3
YAML
}
nodes() { find nodes/nodes -mindepth 1 -maxdepth 1 2>/dev/null | wc -l | tr -d ' '; }

write_fleet "" 1 ""
out=$(tpuform plan -f fleet.yaml 2>&1)
like "2 preemptible + 1 spot under one rule: plan plans 3 nodes" "$out" "Plan: 3 to add, 0 to change, 0 to destroy\."
unlike "and defers nothing" "$out" "wait for quota|deferred"

out=$(tpuform apply -f fleet.yaml -auto-approve 2>&1)
like "apply creates all 3" "$out" "Apply complete! Resources: 3 added"
is "3 nodes exist" "$(nodes)" 3
unlike "apply refuses none of them" "$out" "declared quota"

write_fleet "" 2 ""
out=$(tpuform plan -f fleet.yaml 2>&1)
like "a second spot node waits for the spot cap" "$out" "1 of 2 nodes of group 'sp' wait for quota \(v2-8 spot in local-a\)"
tpuform apply -f fleet.yaml -auto-approve >apply2.out 2>&1
is "apply creates nothing beyond the cap" "$(nodes)" 3

# A "*" rule for the zone caps every type together: the two v2-8
# preemptible nodes already use it, so a v3-8 preemptible node waits.
write_fleet '  - { zone: local-a, accelerator_type: "*", preemptible: 2 }' 1 \
	'  - { name: other, accelerator_type: v3-8, runtime_version: rt, zones: [local-a], count: 1, preemptible: true }'
out=$(tpuform plan -f fleet.yaml 2>&1)
like "a '*' rule counts nodes of every type" "$out" "1 of 1 nodes of group 'other' wait for quota \(v3-8 preemptible in local-a\)"
like "existing nodes keep their place: no changes, but not as declared" "$out" \
	"No changes can be made now, but the fleet is not as declared"
like "the waiting node is listed with its rule" "$out" \
	"qt-other-0: waiting for quota: preemptible cap 2 in local-a \(quota\[1\], all accelerator types, 2 in use\)"
tpuform apply -f fleet.yaml -auto-approve >apply3.out 2>&1
is "and apply creates nothing beyond it" "$(nodes)" 3
finish

#!/bin/sh
# Leak-proof lifecycle against the Cloud TPU API emulator: tpuform SIGKILLed
# right after its create requests are sent, and right after the nodes
# become READY, leaks nothing (the next plan adopts or waits, never creates
# twice); transient faults at a 20% rate still converge with no duplicate
# node; and a quiet fleet's plan costs exactly one nodes.list per zone.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t320
export TPUFORM_ACCESS_TOKEN=test-token
export TPUFORM_SSH_RETRY=2
gcp_workers_start 40 127.0.32.1 --project test-project --op-seconds 1.5
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
# name:state of every node of this fleet, sorted
nodes() { curl -s "$FAKEGCP_URL/__admin/nodes" | jq -r '.[] | (.name | split("/"))[5] + ":" + .state' | sort | tr '\n' ' '; }
creates() { requests | jq '[.[] | select(.method == "POST" and (.path | endswith("/nodes")))] | length'; }

cat >fleet.yaml <<YAML
fleet: gk
provider:
  gcp: { project: test-project }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 3, preemptible: true }
YAML

# 1. Killed right after the three create requests went out.
"$TPUFORM" apply -f fleet.yaml -auto-approve >kill1.out 2>&1 &
pid=$!
wait_for 10 sh -c "[ \"\$(curl -s '$FAKEGCP_URL/__admin/requests' | jq '[.[] | select(.method == \"POST\" and (.path | endswith(\"/nodes\")))] | length')\" -ge 3 ]"
kill -9 $pid
wait $pid 2>/dev/null
is "three creates were sent before the kill" "$(creates)" 3
ok "the state is readable after the kill" tpuform state pull -f fleet.yaml
out=$(tpuform plan -f fleet.yaml)
unlike "the next plan creates nothing again" "$out" "will be created"
like "it waits for (or adopts) the nodes it sent" "$out" "gk-a-0 will be updated in-place"
ok "the next apply converges" tpuform apply -f fleet.yaml -auto-approve
is "no create was sent twice" "$(creates)" 3
is "three nodes, READY" "$(nodes)" "gk-a-0:READY gk-a-1:READY gk-a-2:READY "
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode

# 2. Killed right after the nodes became READY (before, or just after,
#    the state recorded them).
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
admin "requests:clear" >/dev/null
"$TPUFORM" apply -f fleet.yaml -auto-approve >kill2.out 2>&1 &
pid=$!
wait_for 15 sh -c "[ \"\$(curl -s '$FAKEGCP_URL/__admin/nodes' | jq '[.[] | select(.state == \"READY\")] | length')\" -ge 3 ]"
kill -9 $pid
wait $pid 2>/dev/null
out=$(tpuform plan -f fleet.yaml)
unlike "after a kill at READY the plan creates nothing" "$out" "will be created"
ok "and apply converges" tpuform apply -f fleet.yaml -auto-approve
is "still exactly three creates" "$(creates)" 3
ok "then no changes" tpuform plan -f fleet.yaml -detailed-exitcode

# 3. A quiet fleet's plan: exactly one nodes.list in its one zone, and one
#    read of the project's metadata (enable-oslogin there decides who the
#    status probes log in as); no metadata write: the nodes have the key.
admin "requests:clear" >/dev/null
ok "plan of a quiet fleet" tpuform plan -f fleet.yaml -detailed-exitcode
is "costs exactly two API requests" "$(requests | jq -r '.[] | .method + " " + .path' | tr '\n' ';')" \
	"GET /v2/projects/test-project/locations/z1/nodes;GET /compute/v1/projects/test-project;"

# 4. Transient faults at 20%: apply still converges, with no duplicates.
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
sed -i 's/count: 3/count: 6/' fleet.yaml
admin "faults?rate=0.2&kinds=429,500,503,drop" >/dev/null
admin "requests:clear" >/dev/null
"$TPUFORM" apply -f fleet.yaml -auto-approve >faults.out 2>&1
is "one apply converges through the faults (the client retries)" "$?" 0
like "all six created" "$(cat faults.out)" "Apply complete! Resources: 6 added, 0 changed, 0 destroyed."
injected=$(requests | jq '[.[] | select(.fault != null)] | length')
ok "faults were injected ($injected)" test "$injected" -gt 0
admin "faults?rate=0" >/dev/null
is "six nodes exist, each once" "$(nodes)" "gk-a-0:READY gk-a-1:READY gk-a-2:READY gk-a-3:READY gk-a-4:READY gk-a-5:READY "
ok "and the fleet converged" tpuform plan -f fleet.yaml -detailed-exitcode
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
is "nothing is left" "$(nodes)" ""
# 5. watch with quota for 2 of 4 desired nodes: 2 alive, 2 waiting, and no
#    create request beyond the quota is ever sent.
cat >quota.yaml <<YAML
fleet: gq
provider:
  gcp: { project: test-project }
state: { path: quota.state.json }
quota:
  - { zone: z1, accelerator_type: v2-8, preemptible: 2 }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 4, preemptible: true }
YAML
admin "requests:clear" >/dev/null
# Rounds until two are alive (a loaded sanitizer build needs more than a
# few), then SIGTERM: every round in between must respect the quota.
"$TPUFORM" watch -f quota.yaml -interval 0.5s >quota.out 2>&1 &
qpid=$!
wait_for 60 grep -q "alive 2/4.*waiting for quota 2" quota.out
kill -TERM $qpid
wait $qpid
is "watch: two nodes alive" "$(nodes)" "gq-a-0:READY gq-a-1:READY "
ok "two waiting for quota" grep -q "alive 2/4.*waiting for quota 2" quota.out
ok "over several rounds" test "$(grep -c 'fleet gq: alive' quota.out)" -ge 2
is "exactly two creates were sent in all those rounds" "$(creates)" 2
ok "destroy the quota fleet" tpuform destroy -f quota.yaml -auto-approve
finish

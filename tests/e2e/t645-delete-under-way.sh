#!/bin/sh
# A delete under way after a crash (issue 26 item 1; docs/state.md "A delete
# under way"), against the emulator with slow deletes (--delete-seconds 6)
# and sshd workers (loopback block 127.0.66.x). tpuform is SIGKILLed at a
# request it sent, found in the emulator's request log (polled every 20 ms,
# never a fixed sleep):
#   A. Cloud TPU API: `apply -replace` killed right after its nodes.delete:
#      the next plan says the node is being deleted (state DELETING) by
#      tpuform, the next apply waits for the delete and creates the node
#      (it does not report success with the node still going), and then
#      `plan -detailed-exitcode` is 0; a killed `destroy` is finished by the
#      next one.
#   B. Compute Engine: `apply -replace` of a slice killed while its MIG's
#      delete runs: the MIG is still listed, every VM being deleted, and a
#      second delete is 400 resourceNotReady; the next apply waits for it,
#      and then the plan is empty.
#   C. `apply` killed right after its instance template POST: the next
#      apply converges; killed so again, `destroy` leaves no part.
#   D. `destroy` killed after its template DELETE (the workload policy
#      left), and E. killed mid-MIG-delete: the next `destroy` leaves no
#      template, workload policy or MIG (the emulator's lists).
#   F. a single Compute Engine instance: `apply -replace` killed after its
#      instances.delete: the VM still answers STOPPING, which the plan
#      calls a delete under way, not a lost VM; the next apply converges.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t645
export TPUFORM_SSH_RETRY=3
# Each node or instance the emulator makes takes the next worker address.
gcp_workers_start 30 127.0.66.1 --project test-project --op-seconds 0.8 \
	--compute-stage-seconds 0.1 --delete-seconds 6
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
world() { curl -s "$FAKEGCP_URL/__admin/compute"; }
tpu_nodes() { curl -s "$FAKEGCP_URL/__admin/nodes" | jq -r '[.[] | ((.name | split("/"))[5] + ":" + .state)] | sort | join(" ")'; }
# MIGs, templates and workload policies the emulator holds
parts() {
	world | jq -r '[(.instanceGroupManagers[]? | "mig:\(.name)"), (.instanceTemplates[]? | "tmpl:\(.name)"),
		(.resourcePolicies[]? | "wp:\(.name)")] | sort | join(" ")'
}
# The parts of fleet NAME's slice only (every case has its own fleet).
parts_of() { parts | tr ' ' '\n' | grep ":$1-" | tr '\n' ' ' | sed 's/ $//'; }
# Wait (at most 20 s) until no delete the emulator runs is left: what a
# plan says then no longer hangs on a delete still under way.
deletes_done() {
	_i=0
	while [ "$_i" -lt 100 ] && { curl -s "$FAKEGCP_URL/__admin/nodes" | grep -q DELETING ||
		world | jq -e '[.instanceGroupManagers[]? | select(.deleting)] | length > 0' >/dev/null; }; do
		_i=$((_i + 1))
		sleep 0.2
	done
}
# How many METHOD requests on a path matching the regex RE the log holds.
sent() { requests | jq --arg m "$1" --arg re "$2" '[.[] | select(.method == $m and (.path | test($re)))] | length'; }
# Run tpuform ARGS in the background and SIGKILL it once the log holds
# METHOD on RE (at most 60 s; it must not have ended by itself).
kill_at() {
	_m=$1
	_re=$2
	shift 2
	"$TPUFORM" "$@" >killed.out 2>&1 &
	_pid=$!
	_i=0
	while [ "$(sent "$_m" "$_re")" -eq 0 ] && kill -0 "$_pid" 2>/dev/null && [ "$_i" -lt 3000 ]; do
		_i=$((_i + 1))
		sleep 0.02
	done
	if kill -9 "$_pid" 2>/dev/null; then
		killed=yes
	else
		killed="no: it ended by itself ($(tail -n 3 killed.out | tr '\n' ' '))"
	fi
	wait "$_pid" 2>/dev/null
}

cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
cat >tpu.yaml <<YAML
fleet: gt
provider:
  gcp: { project: test-project }
state: { path: tpu.state.json }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1 }
YAML
# One fleet per Compute Engine case, each with its own state: a case fails
# or passes by itself. ce_fleet NAME writes NAME.yaml (node NAME-big-0).
ce_fleet() {
	cat >"$1.yaml" <<YAML
fleet: $1
provider:
  gcp: { project: test-project }
state: { path: $1.state.json }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
run: exec sleep 300
groups:
  - { name: big, machine_type: tpu7x-standard-4t, topology: 2x2x2, spot: true, zones: [us-central1-c], count: 1 }
YAML
}

# ---- A. Cloud TPU API: apply -replace killed after its delete ----------------------
ok "apply a Cloud TPU node" tpuform apply -f tpu.yaml -auto-approve
is "it is READY" "$(tpu_nodes)" "gt-a-0:READY"
admin "requests:clear" >/dev/null
kill_at DELETE '/nodes/gt-a-0$' apply -f tpu.yaml -auto-approve -replace=gt-a-0
is "apply -replace was killed after its delete went out" "$killed" yes
is "the node is being deleted" "$(tpu_nodes)" "gt-a-0:DELETING"
out=$(tpuform plan -f tpu.yaml 2>&1)
like "plan: it is being deleted, by tpuform, and is created again" "$out" \
	"the node is being deleted \(state DELETING\); tpuform sent its delete at .*: wait for the delete to finish, then create it again"
unlike "plan: never 'deleted outside tpuform'" "$out" "deleted outside tpuform"
ok "the next apply waits for the delete, then creates the node" tpuform apply -f tpu.yaml -auto-approve
like "it reports the node added" "$(cat last.out)" "Apply complete! Resources: 1 added"
is "the node is READY again" "$(tpu_nodes)" "gt-a-0:READY"
is "no second nodes.delete was sent" "$(sent DELETE '/nodes/gt-a-0$')" 1
deletes_done
ok "then plan -detailed-exitcode is 0" tpuform plan -f tpu.yaml -detailed-exitcode
kill_at DELETE '/nodes/gt-a-0$' destroy -f tpu.yaml -auto-approve
is "destroy was killed after its delete went out" "$killed" yes
ok "the next destroy finishes it" tpuform destroy -f tpu.yaml -auto-approve
is "no Cloud TPU node is left" "$(tpu_nodes)" ""

# ---- B. Compute Engine: apply -replace killed mid-MIG-delete ------------------------
ce_fleet gb
ok "apply a Compute Engine slice" tpuform apply -f gb.yaml -auto-approve
is "its parts" "$(parts_of gb)" "mig:gb-big-0 tmpl:gb-big-0-t wp:gb-big-0-wp"
admin "requests:clear" >/dev/null
kill_at DELETE '/instanceGroupManagers/gb-big-0$' apply -f gb.yaml -auto-approve -replace=gb-big-0
is "apply -replace was killed after the MIG's delete went out" "$killed" yes
is "the MIG is still listed while its delete runs" "$(world | jq -r '[.instanceGroupManagers[] | "\(.name):\(.deleting)"] | join(" ")')" \
	"gb-big-0:true"
code=$(curl -s -o mig.json -w '%{http_code}' -X DELETE \
	"$FAKEGCP_URL/compute/v1/projects/test-project/zones/us-central1-c/instanceGroupManagers/gb-big-0")
is "a second delete of it is 400 resourceNotReady" "$code $(jq -r '.error.errors[0].reason' mig.json)" \
	"400 resourceNotReady"
out=$(tpuform plan -f gb.yaml 2>&1)
like "plan: the slice is being deleted, by tpuform" "$out" \
	"the node is being deleted \(state DELETING\); tpuform sent its delete at"
ok "the next apply waits for the delete (retrying resourceNotReady), then creates the slice" \
	tpuform apply -f gb.yaml -auto-approve
like "it reports the slice added" "$(cat last.out)" "Apply complete! Resources: 1 added"
is "its parts are back" "$(parts_of gb)" "mig:gb-big-0 tmpl:gb-big-0-t wp:gb-big-0-wp"
deletes_done
ok "then plan -detailed-exitcode is 0" tpuform plan -f gb.yaml -detailed-exitcode
admin "compute:settle" >/dev/null
ok "destroy" tpuform destroy -f gb.yaml -auto-approve
is "nothing is left" "$(parts_of gb)" ""

# ---- C. apply killed right after its instance template POST -------------------------
ce_fleet gc
admin "requests:clear" >/dev/null
kill_at POST '/global/instanceTemplates$' apply -f gc.yaml -auto-approve
is "apply was killed after its template POST" "$killed" yes
is "and before its MIG POST" "$(sent POST '/instanceGroupManagers$')" 0
ok "the next apply converges" tpuform apply -f gc.yaml -auto-approve
ok "then plan -detailed-exitcode is 0" tpuform plan -f gc.yaml -detailed-exitcode
ce_fleet gc2
admin "requests:clear" >/dev/null
kill_at POST '/global/instanceTemplates$' apply -f gc2.yaml -auto-approve
is "apply was killed after its template POST again" "$killed" yes
is "and before its MIG POST" "$(sent POST '/instanceGroupManagers$')" 0
ok "destroy after that crash" tpuform destroy -f gc2.yaml -auto-approve
unlike "it does not merely forget the node" "$(cat last.out)" "will be removed from the state"
is "destroy leaves no template, workload policy or MIG" "$(parts_of gc2)" ""

# ---- D. destroy killed after its template DELETE ------------------------------------
ok "destroy the first" tpuform destroy -f gc.yaml -auto-approve
is "nothing is left of it" "$(parts_of gc)" ""
ce_fleet gd
ok "apply" tpuform apply -f gd.yaml -auto-approve
admin "requests:clear" >/dev/null
kill_at DELETE '/instanceTemplates/gd-big-0-t$' destroy -f gd.yaml -auto-approve
is "destroy was killed after its template DELETE" "$killed" yes
is "the workload policy is left" "$(parts_of gd)" "wp:gd-big-0-wp"
ok "the next destroy" tpuform destroy -f gd.yaml -auto-approve
is "it leaves no template, workload policy or MIG" "$(parts_of gd)" ""

# ---- E. destroy killed mid-MIG-delete ------------------------------------------------
ce_fleet ge
ok "apply" tpuform apply -f ge.yaml -auto-approve
admin "requests:clear" >/dev/null
kill_at DELETE '/instanceGroupManagers/ge-big-0$' destroy -f ge.yaml -auto-approve
is "destroy was killed after the MIG's delete went out" "$killed" yes
ok "the next destroy waits for it" tpuform destroy -f ge.yaml -auto-approve
is "it leaves no template, workload policy or MIG" "$(parts_of ge)" ""
is "nor an instance" "$(world | jq -r '[.instances[]? | select(.name | startswith("ge-"))] | length')" 0

# ---- F. one instance: apply -replace killed after its instances.delete --------------
ce_fleet gf
sed -i 's/machine_type: tpu7x-standard-4t, topology: 2x2x2, spot: true, zones: \[us-central1-c\]/machine_type: ct6e-standard-4t, spot: true, zones: [us-east5-b]/' gf.yaml
ok "apply one instance" tpuform apply -f gf.yaml -auto-approve
admin "requests:clear" >/dev/null
kill_at DELETE '/instances/gf-big-0$' apply -f gf.yaml -auto-approve -replace=gf-big-0
is "apply -replace was killed after the instance's delete went out" "$killed" yes
is "the instance still answers, STOPPING" \
	"$(world | jq -r '[.instances[]? | select(.name == "gf-big-0") | .status] | join(" ")')" STOPPING
out=$(tpuform plan -f gf.yaml 2>&1)
like "plan: it is being deleted, by tpuform" "$out" \
	"the node is being deleted \(state STOPPING\); tpuform sent its delete at"
ok "the next apply waits for the delete, then creates it" tpuform apply -f gf.yaml -auto-approve
like "it reports the instance added" "$(cat last.out)" "Apply complete! Resources: 1 added"
deletes_done
ok "then plan -detailed-exitcode is 0" tpuform plan -f gf.yaml -detailed-exitcode
finish

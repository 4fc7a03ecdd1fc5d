#!/bin/sh
# A one-zone -replace under a stockout (issue 26 item 8), on Compute Engine:
# `apply -replace` of a TPU7x slice whose only zone is stocked out deletes
# the old slice (a replacement destroys before it creates), is refused, and
# then says what happened: the node is not created, the zone is out of
# capacity, the old one is gone, the group has no other zone, and when it
# is tried again (apply: the next apply, or watch). It does not say "the
# next zone is tried". The node stays in the state (pending, with its
# generation) with why; `show` lists it, and a declared node never created,
# as NOT CREATED with the reason; `plan` gives the reason. Under watch the
# deferral names the zone and the time of the retry (its backoff), `show`
# says "retry after HH:MM:SS UTC", and once the stockout clears watch
# creates both nodes.
# sshd workers: the 127.0.65.x block.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t641
export TPUFORM_SSH_RETRY=3
# shellcheck disable=SC2016 # expanded by the EXIT trap
GCP_WORKERS_CLEANUP='[ -n "${wpid:-}" ] && kill "$wpid" 2>/dev/null'
gcp_workers_start 8 127.0.65.1 --op-seconds 0.1 --compute-stage-seconds 0.1
admin() { curl -s -X POST "$FAKEGCP_URL/__admin/$1"; }
world() { curl -s "$FAKEGCP_URL/__admin/compute"; }
instances() { world | jq -r '[.instances[]? | "\(.name):\(.status)"] | sort | join(" ")'; }
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
fleet() {
	cat >fleet.yaml <<YAML
fleet: rz
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
run: |
  exec sleep 600
groups:
  - { name: a, machine_type: tpu7x-standard-4t, topology: 2x2x2, zones: [us-central1-c], count: $1 }
YAML
}
fleet 1
ok "apply" tpuform apply -f fleet.yaml -auto-approve
is "one slice of two VMs" "$(instances)" "rz-a-0-001:RUNNING rz-a-0-002:RUNNING"

# ---- apply -replace with the only zone stocked out --------------------------
admin "compute/zones/us-central1-c:stockout?value=details" >/dev/null
fails "apply -replace fails: the zone is out of capacity" 1 \
	tpuform apply -f fleet.yaml -auto-approve -replace rz-a-0
out=$(cat last.out)
like "the old slice was deleted" "$out" "rz-a-0: Destruction complete"
like "apply: the node was not created, the zone is out of capacity" "$out" \
	"Error: node 'rz-a-0' was not created: zone us-central1-c is out of capacity"
like "apply: the node it replaces is gone" "$out" \
	"The node it replaces was deleted first \(a replacement destroys before it creates\): it is gone until a create succeeds"
like "apply: the group has no other zone" "$out" "Its group has no other zone\."
like "apply: when it is tried again" "$out" \
	"'tpuform apply' does not wait for capacity: run it again later, or run 'tpuform watch', which tries again by itself"
unlike "apply: no 'the next zone is tried'" "$out" "the next zone is tried"
is "one error (the zone's own words are a warning)" "$(grep -c 'Error:' last.out)" 1
is "no VM is left" "$(instances)" ""
is "the state keeps the node, pending, with why and its generation" \
	"$(jq -c '[.nodes[] | [.name, .status, .generation, .refused, .retry_after]]' tpuform.state.json)" \
	'[["rz-a-0","pending",1,"zone us-central1-c is out of capacity",null]]'

out=$(tpuform show -f fleet.yaml 2>&1)
like "show lists the node as not created, with why" "$out" \
	"^rz-a-0 +NOT CREATED +tpu7x-standard-4t +us-central1-c +on-demand +- +0/2 .* not created: zone us-central1-c is out of capacity; the next 'tpuform apply' or 'watch' round tries again"
is "show -json: not_created" \
	"$(tpuform show -f fleet.yaml -json | jq -r '.nodes[] | "\(.name) \(.state) \(.not_created)"')" \
	"rz-a-0 NOT CREATED not created: zone us-central1-c is out of capacity; the next 'tpuform apply' or 'watch' round tries again"
like "plan: created, because the zone refused it" "$(tpuform plan -f fleet.yaml 2>&1)" \
	"\(the node was not created: zone us-central1-c is out of capacity\)"

# ---- a declared node never created is listed too ------------------------------
fleet 2
out=$(tpuform show -f fleet.yaml 2>&1)
like "show: the new declared node, not created" "$out" "^rz-a-1 +NOT CREATED .* not created"
like "show: and the refused one" "$out" "^rz-a-0 +NOT CREATED "
is "show -json: both" \
	"$(tpuform show -f fleet.yaml -json | jq -r '[.nodes[] | "\(.name):\(.state // "-"):\(.not_created // .not_as_declared)"] | sort | join(" ")')" \
	"rz-a-0:NOT CREATED:not created: zone us-central1-c is out of capacity; the next 'tpuform apply' or 'watch' round tries again rz-a-1:-:not_created"

# ---- watch: deferred until the zone's backoff ends; then it creates both -----
"$TPUFORM" watch -f fleet.yaml -interval 1s >watch.out 2>&1 &
wpid=$!
# shellcheck disable=SC2317 # called through wait_for
said() { grep -Eq -- "$1" watch.out; }
ok "watch: deferred, naming the zone and when it is tried again" wait_for 60 said \
	"rz-a-0: deferred: no zone of its group can take it now \(zone us-central1-c is out of capacity\); tried again after [0-9]{2}:[0-9]{2}:[0-9]{2} UTC"
# shellcheck disable=SC2317 # called through wait_for
show_retry() {
	tpuform show -f fleet.yaml | grep -Eq \
		"^rz-a-0 +NOT CREATED .* not created: zone us-central1-c is out of capacity, retry after [0-9]{2}:[0-9]{2}:[0-9]{2} UTC"
}
ok "show: retry after the backoff's end" wait_for 60 show_retry
admin "compute/zones/us-central1-c:stockout?value=off" >/dev/null
# shellcheck disable=SC2317 # called through wait_for
both() { [ "$(instances)" = "rz-a-0-001:RUNNING rz-a-0-002:RUNNING rz-a-1-001:RUNNING rz-a-1-002:RUNNING" ]; }
ok "watch creates both once the zone has capacity" wait_for 120 both
ok "watch is still running" kill -0 "$wpid"
# The instances run before watch's heal records them: wait for the state.
# shellcheck disable=SC2317 # called through wait_for
created() { [ "$(jq -c '[.nodes[] | [.name, .status, .refused]]' tpuform.state.json)" = '[["rz-a-0","created",null],["rz-a-1","created",null]]' ]; }
ok "the state: both created, no note left" wait_for 60 created
kill -TERM "$wpid"
wait "$wpid"
wpid=
unlike "show: nothing not created" "$(tpuform show -f fleet.yaml 2>&1)" "NOT CREATED|not created"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

#!/bin/sh
# Disruption notices on the gcp provider (issue 21), with sshd workers that
# each have their own metadata server in the emulator
# (GCP_WORKERS_METADATA=1: TPUFORM_METADATA_URL, tests/fakegcp/fg_guest_md.c):
#   - a spot preemption notice on worker 1's metadata server
#     (instance/preempted TRUE) gives that worker's job SIGTERM with
#     $TPUFORM_DISRUPTION present, while the node still exists; worker 0,
#     whose server says nothing, is not told;
#   - a maintenance window on the Cloud TPU node (Node.upcomingMaintenance)
#     reaches both jobs through watch: reason=maintenance, the window's
#     start as the deadline, nothing stopped; a second watch does not tell
#     them again; the ledger has the maintenance event;
#   - the node is then preempted and watch replaces it: the preemption
#     webhook says the job's last checkpoint (700), which the new VM's jobs
#     start with as TPUFORM_LAST_CHECKPOINT;
#   - the bootstrap's metadata waits keep the ETag: a handful of requests,
#     not a spinning loop.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t592
export TPUFORM_SSH_RETRY=3
GCP_WORKERS_METADATA=1 gcp_workers_start 4 127.0.57.1 --op-seconds 0.1
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
PY=$(command -v /usr/bin/python3 || command -v python3)
mkdir hook
"$PY" "$TOP/tests/e2e/webhook_listener.py" hook 0 &
lpid=$!
GCP_WORKERS_CLEANUP="kill $lpid"
wait_for 10 test -s hook/port
cat >fleet.yaml <<YAML
fleet: gd
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
on_disruption: { signal: SIGTERM, grace: 5s }
notify: { webhook: "http://127.0.0.1:$(cat hook/port)/hook", events: [preempted, maintenance] }
run: |
  echo "start retry=\$TPUFORM_RETRY last=\$TPUFORM_LAST_CHECKPOINT" >>"\$HOME/starts"
  [ "\$TPUFORM_RETRY" != 0 ] || echo TPUFORM_CHECKPOINT=700
  trap '{ echo "signal w=\$TPUFORM_WORKER_ID"; cat "\$TPUFORM_DISRUPTION"; } >>"\$HOME/told"' TERM
  while :; do sleep 0.2; done
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [us-central2-b], count: 1, spot: true }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
# The sshd worker behind each of the node's workers, from the state.
addr_of() { jq -r --argjson w "$1" '.nodes[0].workers[$w].address' tpuform.state.json | sed 's/:.*//'; }
a0=$(addr_of 0)
w0=$(sshd_index "$a0")
w1=$(sshd_index "$(addr_of 1)")
h0=$(sshd_home "$w0")
h1=$(sshd_home "$w1")
wait_for 30 grep -q "start retry=0" "$h1/starts"
ok "worker 1's job runs" grep -q "start retry=0" "$h1/starts"
ok "the worker's sessions have its metadata server" \
	grep -q "__worker/$(addr_of 1)/computeMetadata/v1" "$h1/.ssh/environment"

ok "a spot preemption notice on worker 1's metadata server" \
	gcp_worker_notice "$(addr_of 1)" instance/preempted TRUE
wait_for 20 grep -q "reason=preempted" "$h1/told"
like "worker 1's job got SIGTERM with \$TPUFORM_DISRUPTION" "$(cat "$h1/told" 2>&1)" "signal w=1
reason=preempted
deadline=[0-9]+
deadline_rfc3339=[0-9T:Z-]+
signal=SIGTERM"
like "while the node still exists" "$(curl -s "$FAKEGCP_URL/__admin/nodes")" '"state": *"READY"'
ok "worker 0's server said nothing: its job was not told" test ! -e "$h0/told"
like "show: worker 1 was told" "$(tpuform show -f fleet.yaml gd-a-0)" "told of a disruption: preempted"
gcp_worker_notice "$(addr_of 1)" instance/preempted FALSE

# ---- a maintenance window on the TPU API node ------------------------------
start=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)
end=$(date -u -d '+6 hours' +%Y-%m-%dT%H:%M:%SZ)
epoch=$(date -u -d "$start" +%s)
ok "the API schedules maintenance" curl -s -f -X POST \
	"$FAKEGCP_URL/__admin/nodes/us-central2-b/gd-a-0:maintenance?value=SCHEDULED&status=PENDING&start=$start&end=$end"
: >"$h1/told"
"$TPUFORM" watch -f fleet.yaml -interval 0.3s -rounds 2 >watch.out 2>&1
is "watch" "$?" 0
like "watch says the jobs were told" "$(cat watch.out)" \
	"gd-a-0: SCHEDULED maintenance PENDING, window $start to $end: 2 jobs told \(deadline $start\)"
for h in "$h0" "$h1"; do
	like "the job on $(basename "$(dirname "$h")") was told of the maintenance, deadline the window's start" \
		"$(cat "$h/told" 2>&1)" "reason=maintenance
deadline=$epoch
deadline_rfc3339=$start
signal=SIGTERM"
done
is "nothing was restarted" "$(cat "$h0/starts" "$h1/starts" | sort | uniq -c | tr -s ' ')" " 2 start retry=0 last="
like "the ledger has the maintenance event with its deadline" \
	"$(grep '"event":"maintenance"' tpuform.state.json.ledger.jsonl)" "\"deadline\":\"$start\""
ok "a second watch" tpuform watch -f fleet.yaml -interval 0.3s -rounds 2
is "does not tell the jobs again" "$(grep -c 'reason=maintenance' "$h0/told")" 1

# ---- the node goes: watch replaces it --------------------------------------
ok "the node is preempted" curl -s -f -X POST "$FAKEGCP_URL/__admin/nodes/us-central2-b/gd-a-0:preempt"
ok "watch replaces it" tpuform watch -f fleet.yaml -interval 0.3s -rounds 3
like "the new node's jobs started from the old one's checkpoint" \
	"$(cat "$SSHD_DIR"/w*/home/starts)" "start retry=1 last=700"
wait_for 10 grep -q '"event": *"preempted"' hook/events.jsonl
like "the webhook: the maintenance event with the deadline" "$(cat hook/events.jsonl)" \
	'"event": *"maintenance".*jobs told \(deadline '"$start"'\)'
is "one maintenance webhook: the second watch told no one" \
	"$(grep -c '"event": *"maintenance"' hook/events.jsonl)" 1
like "the webhook: the preemption with the last checkpoint and its age" "$(cat hook/events.jsonl)" \
	'"event": *"preempted".*last checkpoint 700, [0-9]+[smh] ago'
# The first node's worker 0, up all along: its job's two watchers ask
# once, then wait 60 s per request; without
# the ETag each request would answer at once and they would spin.
n=$(curl -s "$FAKEGCP_URL/__admin/requests" | jq "[.[] | select(.path | startswith(\"/__worker/$a0/\"))] | length")
ok "the metadata watchers did not spin ($n requests)" test "$n" -lt 40
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

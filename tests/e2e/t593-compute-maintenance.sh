#!/bin/sh
# Maintenance of TPU VMs on Compute Engine reaches their jobs (issue 21,
# with the Compute provider of issue 18): the emulator sets an instance's
# resourceStatus.upcomingMaintenance (Compute v1 UpcomingMaintenance), and
# watch tells the jobs through the bootstrap's disrupt verb
# ($TPUFORM_DISRUPTION: reason=maintenance, the window's start as the
# deadline), stopping nothing:
#   - on a single-host instance (ct6e-standard-4t), its one job;
#   - on ONE member of a 2-VM TPU7x slice (MIG), the jobs on BOTH VMs: a
#     slice's instances are recovered together, so a member's window is
#     the slice's;
#   - a second watch does not tell them again.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t593
export TPUFORM_SSH_RETRY=3
gcp_workers_start 3 127.0.58.1 --op-seconds 0.1 --compute-stage-seconds 0.1
world() { curl -s "$FAKEGCP_URL/__admin/compute"; }
ip_of() { world | jq -r --arg n "$1" '.instances[] | select(.name == $n) | .networkInterfaces[0].networkIP'; }
home_of() { sshd_home "$(sshd_index "$(ip_of "$1")")"; }
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
cat >fleet.yaml <<YAML
fleet: cm
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
on_disruption: { signal: SIGUSR1, grace: 5s }
run: |
  echo "start retry=\$TPUFORM_RETRY" >>"\$HOME/starts"
  trap '{ echo "signal w=\$TPUFORM_WORKER_ID"; cat "\$TPUFORM_DISRUPTION"; } >>"\$HOME/told"' USR1
  while :; do sleep 0.2; done
groups:
  - { name: one, machine_type: ct6e-standard-4t, zones: [us-east5-b], count: 1 }
  - { name: big, machine_type: tpu7x-standard-4t, topology: 2x2x2, zones: [us-central1-c], count: 1 }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
hs=$(home_of cm-one-0)
h1=$(home_of cm-big-0-001)
h2=$(home_of cm-big-0-002)
# shellcheck disable=SC2317 # called through wait_for
all_started() { test -s "$hs/starts" && test -s "$h1/starts" && test -s "$h2/starts"; }
wait_for 30 all_started
ok "the three jobs run" all_started

start=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)
end=$(date -u -d '+6 hours' +%Y-%m-%dT%H:%M:%SZ)
epoch=$(date -u -d "$start" +%s)
s2=$(date -u -d '+3 hours' +%Y-%m-%dT%H:%M:%SZ)
q="value=SCHEDULED&status=PENDING&end=$end"
ok "Compute schedules maintenance on member 002 of the slice" curl -s -f -X POST \
	"$FAKEGCP_URL/__admin/compute/instances/us-central1-c/cm-big-0-002:maintenance?$q&start=$start"
ok "and on the single-host instance, an hour later" curl -s -f -X POST \
	"$FAKEGCP_URL/__admin/compute/instances/us-east5-b/cm-one-0:maintenance?$q&start=$s2"
like "the API serves it as resourceStatus.upcomingMaintenance" \
	"$(world | jq -c '.instances[] | select(.name == "cm-big-0-002") | .resourceStatus.upcomingMaintenance')" \
	"\"windowStartTime\":\"$start\""
"$TPUFORM" watch -f fleet.yaml -interval 0.3s -rounds 2 >watch.out 2>&1
is "watch" "$?" 0
like "watch: the slice's jobs were told, the member named" "$(cat watch.out)" \
	"cm-big-0: cm-big-0-002: SCHEDULED maintenance PENDING, window $start to $end: 2 jobs told \(deadline $start\)"
like "watch: the single-host instance's job was told" "$(cat watch.out)" \
	"cm-one-0: SCHEDULED maintenance PENDING, window $s2 to $end: 1 job told \(deadline $s2\)"
for h in "$h1" "$h2"; do
	like "a slice job was told (SIGUSR1, \$TPUFORM_DISRUPTION), deadline the member's window start" \
		"$(cat "$h/told" 2>&1)" "reason=maintenance
deadline=$epoch
deadline_rfc3339=$start
signal=SIGUSR1"
done
like "the single-host job was told of its own window" "$(cat "$hs/told" 2>&1)" "deadline_rfc3339=$s2"
is "nothing was restarted" "$(cat "$hs/starts" "$h1/starts" "$h2/starts" | sort | uniq -c | tr -s ' ')" \
	" 3 start retry=0"
ok "a second watch" tpuform watch -f fleet.yaml -interval 0.3s -rounds 2
is "does not tell the slice's jobs again" "$(grep -c 'reason=maintenance' "$h1/told")" 1
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

#!/bin/sh
# Apply's provisioning on one event loop (engine/workers/provision_fanout.c,
# issue 28): 48 workers of the many-worker harness (12 v4-32 nodes), apply
# at -parallelism=8.
#   - threads stay fixed: at most the 8 node actions + 1 loop + 4 helpers
#     + main and heartbeat (the threads before: 8 per node under 8 node
#     threads, about 45);
#   - the files go over a command's stdin: the secrets 0600 and the script
#     0700 in a 0700 directory, no temporary file left, the job started;
#   - the next plan is empty (-detailed-exitcode 0) and a second apply
#     has nothing to do;
#   - a worker whose upload fails (its tpuform/ directory made read-only)
#     fails alone with the command's own words, and the next apply, with
#     the directory writable again, converges it;
#   - apply killed (SIGKILL) while the loop provisions: the next apply
#     converges, one job and one screen session per worker;
#   - a bootstrap that fails at setup is reported as before (step and
#     exit status), through the loop.
# Loopback block: 127.2.10.x.
. "$(dirname "$0")/lib.sh"
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/e2e/ssh_workers.sh"
setup_dir t872
D=$(mktemp -d "${TMPDIR:-/tmp}/t872.XXXXXX")
trap 'chmod -R u+w "$D" 2>/dev/null; ssh_workers_stop; fakegcp_stop >/dev/null 2>&1; rm -rf "$D"' EXIT
unset SSH_AUTH_SOCK
export TPUFORM_ACCESS_TOKEN=test TPUFORM_GCP_POLL_MIN=0.05 TPUFORM_GCP_POLL_MAX=0.2
N=48
SSH_WORKERS_NO_KEYS=1
ssh_workers_start "$D/w" "$N" 127.2.10.1
rc=$?
if [ "$rc" -eq 2 ]; then
	echo "# SKIP: no python3 with asyncssh (apt-get install python3-asyncssh)"
	echo "1..0"
	exit 0
fi
is "the harness starts $N workers" "$rc" 0
fakegcp_start --project p872 --op-seconds 0.2 --worker-ip-base 127.2.10.1 \
	--worker-port "$SSH_WORKERS_PORT" --worker-dir "$SSH_WORKERS_DIR" >/dev/null
is "the emulator starts" "$?" 0
write_fleet() { # $1: the setup command
	cat >fleet.yaml <<YAML
fleet: t872
provider:
  gcp: { project: p872 }
ssh: { user: root, private_key: "$SSH_WORKERS_KEY", port: $SSH_WORKERS_PORT }
secrets: { TOKEN: s3cret }
setup: $1
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v4-32, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 12 }
YAML
}
write_fleet "true"

# apply, its threads sampled while it runs
"$TPUFORM" apply -f fleet.yaml -auto-approve -parallelism=8 >apply.out 2>&1 &
APID=$!
peak=0
while kill -0 "$APID" 2>/dev/null; do
	th=$(awk '/^Threads:/ { print $2 }' "/proc/$APID/status" 2>/dev/null)
	[ -n "$th" ] && [ "$th" -gt "$peak" ] && peak=$th
	sleep 0.05
done
wait "$APID"
is "apply of $N workers" "$?" 0
is "every worker provisioned" "$(grep -c '^changed: ' apply.out)" "$N"
echo "# apply's threads at most: $peak"
[ "$peak" -gt 0 ] && [ "$peak" -le 16 ]
is "apply's threads stay fixed (8 node actions + 5 + 2, at most 16; were about 45)" "$?" 0

# What landed on each worker.
bad=
i=0
while [ "$i" -lt "$N" ]; do
	h=$(ssh_workers_home "$i")
	[ "$(stat -c %a "$h/tpuform/secrets.env" 2>/dev/null)" = 600 ] || bad="$bad w$i(secrets)"
	[ "$(stat -c %a "$h/tpuform/bootstrap.sh" 2>/dev/null)" = 700 ] || bad="$bad w$i(script)"
	[ "$(stat -c %a "$h/tpuform" 2>/dev/null)" = 700 ] || bad="$bad w$i(dir)"
	grep -q s3cret "$h/tpuform/secrets.env" 2>/dev/null || bad="$bad w$i(content)"
	i=$((i + 1))
done
is "secrets 0600, script 0700, in a 0700 directory, on every worker" "$bad" ""
is "no temporary file left" "$(find "$D/w" -name '*.tmp-*' | wc -l)" 0
script=$(ssh_workers_home 5)/tpuform/bootstrap.sh
# the bytes on worker 5 are those whose hash the state records for it
ip5=$(ssh_workers_addr 5 2>/dev/null)
want=$(jq -r --arg ip "$ip5" '[.nodes[].workers[] | select(.address == $ip) | .script_hash][0] // empty' tpuform.state.json)
is "the script arrived whole (its sha256 is the state's script_hash)" \
	"sha256:$(sha256sum "$script" | cut -d' ' -f1)" "$want"
like "the script is the bootstrap" "$(head -n 3 "$script")" "^#!/bin/sh"
ok "the next plan is empty" tpuform plan -f fleet.yaml -detailed-exitcode
ok "a second apply" tpuform apply -f fleet.yaml -auto-approve -parallelism=8
like "it has nothing to do" "$(cat last.out)" "No changes"

# A worker whose upload fails: its directory read-only (the harness runs
# as root, so a read-only directory is made with chattr where it works,
# else a file in the way of the directory).
h=$(ssh_workers_home 7)
mv "$h/tpuform" "$h/tpuform.away"
: >"$h/tpuform" # a file where the directory should be: mkdir -p fails
write_fleet "echo v2"
fails "apply with one worker's upload failing" 1 tpuform apply -f fleet.yaml -auto-approve -parallelism=8
like "the failing worker is named, with the command's words" "$(cat last.out)" \
	"cannot upload 'tpuform/secrets.env' to worker 't872-a-[0-9]*/w[0-9]': the command writing it exited with status"
is "the other workers were provisioned" "$(grep -c '^changed: ' last.out)" $((N - 1))
rm -f "$h/tpuform"
mv "$h/tpuform.away" "$h/tpuform"
ok "the next apply converges it" tpuform apply -f fleet.yaml -auto-approve -parallelism=8
is "one worker changed" "$(grep -c '^changed: ' last.out)" 1
ok "and the plan is empty" tpuform plan -f fleet.yaml -detailed-exitcode

# apply killed while the loop provisions: the next apply converges
# (workers provisioned before the kill, their records unsaved, are found
# running the same script) and leaves one job per worker.
write_fleet "echo v3"
"$TPUFORM" apply -f fleet.yaml -auto-approve -parallelism=8 >kill.out 2>&1 &
APID=$!
# shellcheck disable=SC2317 # called through wait_for
some_changed() { [ "$(grep -c '^changed: ' kill.out)" -ge 8 ]; }
wait_for 60 some_changed
kill -9 "$APID"
wait "$APID" 2>/dev/null
echo "# killed after $(grep -c '^changed: ' kill.out) workers said changed"
fails "after the kill the plan is not empty" 2 tpuform plan -f fleet.yaml -detailed-exitcode
ok "the next apply" tpuform apply -f fleet.yaml -auto-approve -parallelism=8
ok "converges: the plan is empty" tpuform plan -f fleet.yaml -detailed-exitcode
jobs=0
i=0
while [ "$i" -lt "$N" ]; do
	pg=$(cat "$(ssh_workers_home "$i")/tpuform/run/job.pid" 2>/dev/null)
	[ -n "$pg" ] && kill -s 0 -- "-$pg" 2>/dev/null && jobs=$((jobs + 1))
	i=$((i + 1))
done
is "a job runs on every worker" "$jobs" "$N"
is "one screen session per worker" "$(find "$D"/w/w*/screen -mindepth 1 2>/dev/null | wc -l)" "$N"

# A bootstrap that fails at setup, through the loop.
write_fleet "exit 7"
fails "apply with a failing setup" 1 tpuform apply -f fleet.yaml -auto-approve -parallelism=8 -target=t872-a-0
like "the step and its exit status" "$(cat last.out)" "bootstrap failed on worker 't872-a-0/w[0-3]' at step 'setup' \\(exit status 7\\)"
finish

#!/bin/sh
# Job waits that cost nothing while nothing happens (issue 28 item 1):
# over SSH a worker's `wait` stays open for the job's life, with a
# heartbeat record every TPUFORM_ATTACH_BEAT seconds, instead of being run
# again at every window's end. Over 16 workers of the many-worker harness
# (4 v4-32 nodes), with a 3 s window and a 3 s beat:
#   - watch's threads are fixed (one loop, at most 4 helpers: fewer
#     than the 16 workers; the code before had one per worker);
#   - after attaching, no worker runs another `wait` in a quiet 20 s
#     (the code before ran one per worker every 3 s);
#   - a job's end still has its unit's 4 workers running again at once;
#   - a connection that goes silent (the harness stopped with SIGSTOP: TCP
#     stays up, nothing answers) is noticed by the missing heartbeat
#     (beat or window + 30 s) and made again once the workers answer, and
#     the next job end is acted on too.
# Loopback block: 127.0.81.x (issue 28's helper blocks 127.0.80-84).
. "$(dirname "$0")/lib.sh"
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/e2e/ssh_workers.sh"
setup_dir t800
# screen's sockets under the workers' directories must fit in 107 bytes
D=$(mktemp -d "${TMPDIR:-/tmp}/t800.XXXXXX")
WPID=
trap 'kill -CONT "$SSH_WORKERS_PID" 2>/dev/null; kill $WPID 2>/dev/null; ssh_workers_stop; fakegcp_stop >/dev/null 2>&1; rm -rf "$D"' EXIT
unset SSH_AUTH_SOCK
export TPUFORM_ACCESS_TOKEN=test TPUFORM_GCP_POLL_MIN=0.05 TPUFORM_GCP_POLL_MAX=0.2
ssh_workers_emulated "$D/w" 16 127.0.81.1 p800
rc=$?
if [ "$rc" -eq 2 ]; then
	echo "# SKIP: no python3 with asyncssh (apt-get install python3-asyncssh)"
	echo "1..0"
	exit 0
fi
is "the harness (16 workers) and the emulator start" "$rc" 0
mkdir ev
cat >fleet.yaml <<YAML
fleet: t800
provider:
  gcp: { project: p800 }
ssh: { user: root, private_key: "$SSH_WORKERS_KEY", port: $SSH_WORKERS_PORT }
run: |
  echo \$\$ >"$W/ev/\$TPUFORM_NODE-\$TPUFORM_WORKER_ID.pid"
  echo start >>"$W/ev/\$TPUFORM_NODE-\$TPUFORM_WORKER_ID.starts"
  exec sleep 600
groups:
  - { name: a, accelerator_type: v4-32, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 4 }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
# Every worker's bootstrap notes the verbs it is asked to run.
i=0
while [ "$i" -lt 16 ]; do
	h=$(ssh_workers_home "$i")
	mv "$h/tpuform/bootstrap.sh" "$h/tpuform/bootstrap.real.sh"
	cat >"$h/tpuform/bootstrap.sh" <<SH
echo "\$1" >>"$h/verbs"
exec sh "$h/tpuform/bootstrap.real.sh" "\$@"
SH
	i=$((i + 1))
done
# shellcheck disable=SC2317 # called through wait_for
waits() { cat "$D"/w/w*/home/verbs 2>/dev/null | grep -c '^wait$'; }
# shellcheck disable=SC2317 # called through wait_for
each_waited() {
	for f in "$D"/w/w*/home; do
		[ "$(grep -c '^wait$' "$f/verbs" 2>/dev/null)" -ge "$1" ] || return 1
	done
}
# shellcheck disable=SC2317 # called through wait_for
starts() { cat ev/t800-a-"$1"-*.starts | wc -l; }
# shellcheck disable=SC2317 # called through wait_for
restarted() { [ "$(starts "$1")" -ge "$2" ]; }

TPUFORM_ATTACH_WINDOW=3 TPUFORM_ATTACH_BEAT=3 "$TPUFORM" watch -f fleet.yaml >watch.out 2>&1 &
WPID=$!
# A new connection's wait gives the record at once and lasts: one wait
# per worker (two before: the first answered and ended).
wait_for 90 each_waited 1
ok "every worker is waited on" each_waited 1
sleep 2
is "one wait per worker" "$(waits)" 16
threads=$(sed -n 's/^Threads:[[:space:]]*//p' "/proc/$WPID/status")
# One loop and at most 4 helpers whatever the number of workers
# (the code before: a thread per worker, 16 here, beside the main thread).
ok "watch has fewer threads than waited workers ($threads)" test "$threads" -lt 16
sleep 2
before=$(waits)
sleep 20
is "no wait is run again in a quiet 20 s (3 s windows)" "$(waits)" "$before"
ok "the heartbeats keep watch's loop quiet" grep -q "alive 4/4" watch.out

kill "$(cat ev/t800-a-1-1.pid)"
wait_for 30 restarted 1 8
ok "a job's end has its unit's 4 workers running again" restarted 1 8
is "the other unit was left alone" "$(starts 0)" 4

# A silent connection: the harness stopped, its sockets still open. Each
# worker whose verbs are still logged (the restart above uploaded the real
# bootstrap over the logging one on its unit's workers) must run a new
# wait: its connection was noticed silent and made again.
sleep 5
for f in "$D"/w/w*/home; do
	grep -q bootstrap.real.sh "$f/tpuform/bootstrap.sh" && echo "$f $(grep -c '^wait$' "$f/verbs")"
done >before.txt
ok "12 workers' verbs are still logged" test "$(wc -l <before.txt)" -eq 12
kill -STOP "$SSH_WORKERS_PID"
sleep 45
kill -CONT "$SSH_WORKERS_PID"
# shellcheck disable=SC2317 # called through wait_for
rewaited() {
	while read -r f n; do
		[ "$(grep -c '^wait$' "$f/verbs")" -gt "$n" ] || return 1
	done <before.txt
}
wait_for 90 rewaited
ok "the silent connections are noticed and made again" rewaited
sleep 3
kill "$(cat ev/t800-a-0-2.pid)"
wait_for 60 restarted 0 8
ok "after reconnecting, the next job end is acted on" restarted 0 8
kill -TERM "$WPID"
wait "$WPID"
is "watch exits 0" "$?" 0
WPID=
finish

#!/bin/sh
# Many workers behind one bastion (ssh.proxy_jump) share its connections
# (providers/ssh/ssh_jump_hub.c: at most 64 tunnels per bastion
# connection, one relay thread). 72 workers of the many-worker harness
# (tests/e2e/ssh_workers.py, 18 v4-32 nodes), one more harness address as
# the bastion (the harness allows direct-tcpip). Shown: apply and exec -all
# through it; watch holds its 72 job waits over 2 bastion connections
# (64 + 8), not 72, with a fixed number of threads; when both are cut, the
# waits come back through new ones and a job that ends afterwards is
# restarted; a worker the bastion cannot reach fails alone. Loopback block: 127.2.9.x (the harness's; t760 has 127.2.8.x).
# shellcheck disable=SC2016 # $TPUFORM_WORKER_ID in single quotes is for the workers' shell
. "$(dirname "$0")/lib.sh"
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/e2e/ssh_workers.sh"
setup_dir t871
# screen's sockets under the workers' directories must fit in 107 bytes
D=$(mktemp -d "${TMPDIR:-/tmp}/t871.XXXXXX")
WPID=
trap 'kill $WPID 2>/dev/null; ssh_workers_stop; fakegcp_stop >/dev/null 2>&1; rm -rf "$D"' EXIT
unset SSH_AUTH_SOCK
export TPUFORM_ACCESS_TOKEN=test TPUFORM_GCP_POLL_MIN=0.05 TPUFORM_GCP_POLL_MAX=0.2
N=72
BASTION=127.2.9.73
SSH_WORKERS_NO_KEYS=1
ssh_workers_start "$D/w" $((N + 1)) 127.2.9.1
rc=$?
if [ "$rc" -eq 2 ]; then
	echo "# SKIP: no python3 with asyncssh (apt-get install python3-asyncssh)"
	echo "1..0"
	exit 0
fi
is "the harness starts 72 workers and a bastion" "$rc" 0
# The bastion is no node's worker: no guest agent writes its key.
cp "$SSH_WORKERS_KEY.pub" "$(ssh_workers_home $N)/.ssh/authorized_keys"
fakegcp_start --project p871 --op-seconds 0.2 --worker-ip-base 127.2.9.1 \
	--worker-port "$SSH_WORKERS_PORT" --worker-dir "$SSH_WORKERS_DIR" >/dev/null
is "the emulator starts" "$?" 0
mkdir ev
cat >fleet.yaml <<YAML
fleet: t871
provider:
  gcp: { project: p871 }
ssh: { user: root, private_key: "$SSH_WORKERS_KEY", port: $SSH_WORKERS_PORT, proxy_jump: "root@$BASTION:$SSH_WORKERS_PORT" }
run: |
  echo start >>"$W/ev/\$TPUFORM_NODE-\$TPUFORM_WORKER_ID.starts"
  echo \$\$ >"$W/ev/\$TPUFORM_NODE-\$TPUFORM_WORKER_ID.pid"
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-32, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 18 }
YAML
ok "apply through the bastion" tpuform apply -f fleet.yaml -auto-approve -parallelism=100
is "every worker provisioned" "$(grep -c '^changed: ' last.out)" $N
like "the bastion's key is trusted on first use, with a warning" "$(cat last.out)" "trusting the host key"
ok "exec -all through the bastion" tpuform exec -f fleet.yaml -all -- 'echo "here $TPUFORM_WORKER_ID"'
is "every worker answered" "$(grep -c '| here [0-3]$' last.out)" $N

# shellcheck disable=SC2317 # called through wait_for
bastion_conns() { ss -Htn state established "dst $BASTION:$SSH_WORKERS_PORT" | wc -l | tr -d ' '; }
# Every worker with a job wait (its FIFO in the run directory) since `since`.
# shellcheck disable=SC2317 # called through wait_for
waited_all() {
	n=$(find "$SSH_WORKERS_DIR" -path '*/home/tpuform/run/wait.*' -newer "$1" 2>/dev/null |
		sed 's|.*/w\([0-9]*\)/home/.*|\1|' | sort -u | wc -l)
	[ "$n" -ge "$N" ]
}
touch since0
"$TPUFORM" watch -f fleet.yaml >watch.out 2>&1 &
WPID=$!
wait_for 60 waited_all since0
ok "watch waits on all 72 workers through the bastion" waited_all since0
is "over 2 bastion connections (64 tunnels each at most)" "$(bastion_conns)" 2
threads=$(find "/proc/$WPID/task" -mindepth 1 -maxdepth 1 | wc -l)
ok "watch's threads stay few: $threads for 72 waits" test "$threads" -le 16

# Both bastion connections cut (as a bastion reboot would): every wait
# loses its tunnel, reconnects after its backoff, through new ones.
sleep 1
touch since1
cut=$(ss -HtnK state established "dst $BASTION:$SSH_WORKERS_PORT" 2>/dev/null | wc -l | tr -d ' ')
if [ "$cut" -eq 0 ]; then
	_n=$((_n + 1))
	echo "ok $_n - cutting the bastion's connections # SKIP ss -K needs CONFIG_INET_DIAG_DESTROY"
else
	is "both bastion connections are cut" "$cut" 2
	wait_for 90 waited_all since1
	ok "every wait came back through the bastion" waited_all since1
	is "again over 2 bastion connections" "$(bastion_conns)" 2
fi
# A job that ends now is seen through the new tunnels: its unit restarts.
kill "$(cat ev/t871-a-5-1.pid)"
# shellcheck disable=SC2317 # called through wait_for
restarted() { [ "$(wc -l <ev/t871-a-5-1.starts)" -ge 2 ] && [ "$(wc -l <ev/t871-a-5-0.starts)" -ge 2 ]; }
wait_for 60 restarted
ok "a job that ended after the cut restarts its unit" restarted
kill -TERM "$WPID"
wait "$WPID"
is "watch exits 0" "$?" 0
WPID=

# A worker the bastion cannot reach: its channel open is never answered
# (the harness's stall-open file). The open outlives its connect timeout
# inside the shared bastion session; only that worker fails, and the
# tunnels beside it on the same bastion connection, in flight meanwhile,
# finish their commands (before, a late open cut its whole connection).
addr=$(jq -r '.nodes[] | select(.name == "t871-a-3") | .workers[1].address' tpuform.state.json)
touch "$SSH_WORKERS_DIR/stall-open.$addr"
export TPUFORM_SSH_CONNECT_TIMEOUT=3 TPUFORM_SSH_RETRY=8
fails "exec -all exits 1: one worker did not answer the bastion" 1 \
	tpuform exec -f fleet.yaml -all -- 'sleep 4; echo "there $TPUFORM_WORKER_ID"'
is "the 71 others answered" "$(grep -c '| there [0-3]$' last.out)" 71
like "the silent one timed out" "$(cat last.out)" "t871-a-3/w1.*timed out"
unset TPUFORM_SSH_CONNECT_TIMEOUT TPUFORM_SSH_RETRY
rm -f "$SSH_WORKERS_DIR/stall-open.$addr"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
ssh_workers_stop
finish

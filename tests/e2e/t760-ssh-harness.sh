#!/bin/sh
# The many-worker SSH harness (tests/e2e/ssh_workers.py, issue 28 item 4)
# serves tpuform as the per-worker sshd workers do: 8 workers in one
# process behind the Cloud TPU emulator (2 v4-32 nodes), their keys written
# by the emulator's guest agent. apply provisions every worker (SFTP
# uploads, execs), each job is a real process in its own worker's home,
# exec returns output, stdin and the exit status, cp uploads over SFTP, a
# key tpuform did not send is refused, watch restarts a unit whose job
# ended, and stopping the harness ends every process its workers started.
# Loopback block: 127.2.8.x (the harness's 127.2.0.0/16 and up; 127.0.x.y
# is the sshd.sh tests').
. "$(dirname "$0")/lib.sh"
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/e2e/ssh_workers.sh"
setup_dir t760
# screen's sockets under the workers' directories must fit in 107 bytes
D=$(mktemp -d "${TMPDIR:-/tmp}/t760.XXXXXX")
WPID=
trap 'kill $WPID 2>/dev/null; ssh_workers_stop; fakegcp_stop >/dev/null 2>&1; rm -rf "$D"' EXIT
unset SSH_AUTH_SOCK
export TPUFORM_ACCESS_TOKEN=test TPUFORM_GCP_POLL_MIN=0.05 TPUFORM_GCP_POLL_MAX=0.2
SSH_WORKERS_NO_KEYS=1
ssh_workers_start "$D/w" 8 127.2.8.1
rc=$?
if [ "$rc" -eq 2 ]; then
	echo "# SKIP: no python3 with asyncssh (apt-get install python3-asyncssh)"
	echo "1..0"
	exit 0
fi
is "the harness starts 8 workers" "$rc" 0
fakegcp_start --project p760 --op-seconds 0.2 --worker-ip-base 127.2.8.1 \
	--worker-port "$SSH_WORKERS_PORT" --worker-dir "$SSH_WORKERS_DIR" >/dev/null
is "the emulator starts" "$?" 0
mkdir ev
cat >fleet.yaml <<YAML
fleet: t760
provider:
  gcp: { project: p760 }
ssh: { user: root, private_key: "$SSH_WORKERS_KEY", port: $SSH_WORKERS_PORT }
run: |
  echo "\$TPUFORM_NODE/\$TPUFORM_WORKER_ID \$HOME" >"\$HOME/where"
  echo \$\$ >"$W/ev/\$TPUFORM_NODE-\$TPUFORM_WORKER_ID.pid"
  echo start >>"$W/ev/\$TPUFORM_NODE-\$TPUFORM_WORKER_ID.starts"
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-32, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 2 }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
is "every worker provisioned" "$(grep -c '^changed: ' last.out)" 8

# Each job is a real process, in the home of the worker it runs on.
# shellcheck disable=SC2317 # called through wait_for
all_where() { [ "$(cat "$D"/w/w*/home/where 2>/dev/null | wc -l)" -eq 8 ]; }
wait_for 20 all_where
bad=
i=0
while [ "$i" -lt 8 ]; do
	h=$(ssh_workers_home "$i")
	[ "$(cut -d' ' -f2 "$h/where" 2>/dev/null)" = "$h" ] || bad="$bad w$i"
	pg=$(cat "$h/tpuform/run/job.pid" 2>/dev/null)
	kill -s 0 -- "-$pg" 2>/dev/null || bad="$bad w$i(no job)"
	i=$((i + 1))
done
is "every worker's job runs, in its own home" "$bad" ""
is "8 distinct node/worker pairs" "$(cut -d' ' -f1 "$D"/w/w*/home/where | sort -u | wc -l)" 8

# exec: output (stderr merged), stdin, exit status of the worst worker
fails "exec returns the command's exit status" 3 tpuform exec -f fleet.yaml t760-a-0 -- 'echo out; echo err >&2; exit 3'
like "exec shows stdout" "$(cat last.out)" "t760-a-0/w3 \| out"
like "exec shows stderr" "$(cat last.out)" "t760-a-0/w0 \| err"
ok "exec with stdin" sh -c "echo piped | '$TPUFORM' exec -f fleet.yaml t760-a-1 -worker 2 -- 'read -r l; test \"\$l\" = piped && echo got-\$l'"
like "stdin reached the command" "$(cat last.out)" "t760-a-1/w2 \| got-piped"
# shellcheck disable=SC2016 # expanded on the worker
ok "exec sees the worker's home" tpuform exec -f fleet.yaml t760-a-1 -worker 0 -- 'test "$(pwd)" = "$HOME/tpuform/src" || test -d "$HOME/tpuform"'

# cp: SFTP upload to every worker of a node
echo payload >payload.txt
ok "cp uploads over SFTP" tpuform cp -f fleet.yaml payload.txt 't760-a-0:~/payload.txt'
n=0
for f in "$D"/w/w*/home/payload.txt; do
	[ "$(cat "$f" 2>/dev/null)" = payload ] && n=$((n + 1))
done
is "the file is in 4 workers' homes" "$n" 4

# Login: only keys the guest agent wrote from the node's metadata.
ssh-keygen -q -t ed25519 -N '' -f other
o="-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -p $SSH_WORKERS_PORT"
# shellcheck disable=SC2086 # the options, split
fails "a key tpuform did not send is refused" 255 ssh $o -i other "root@$(ssh_workers_addr 0)" true
# shellcheck disable=SC2086,SC2016 # the options, split; $HOME is the worker's
ok "the fleet's key logs in" ssh $o -i "$SSH_WORKERS_KEY" "root@$(ssh_workers_addr 0)" 'test "$HOME" = "'"$(ssh_workers_home 0)"'"'

# watch: a job that ends has its unit (the node's 4 workers) started again
"$TPUFORM" watch -f fleet.yaml >watch.out 2>&1 &
WPID=$!
# (each worker's wait FIFO seen at least once: a wait between two windows
# has none for a moment)
: >seen
# shellcheck disable=SC2317 # called through wait_for
waited() {
	find "$D/w" -path '*/tpuform/run/wait.*' | sed 's|/home/tpuform/run/.*||' | sort -u - seen >seen.new
	mv seen.new seen
	[ "$(wc -l <seen)" -ge 8 ]
}
wait_for 60 waited
ok "watch waits on every worker" waited
kill "$(cat ev/t760-a-1-1.pid)"
# shellcheck disable=SC2317 # called through wait_for
again() { [ "$(cat ev/t760-a-1-*.starts | wc -l)" -ge 8 ]; }
wait_for 30 again
ok "the unit's 4 workers run again" again
kill -TERM "$WPID"
wait "$WPID"
is "watch exits 0" "$?" 0
WPID=

# Stopping the harness ends every process its workers started.
ssh_workers_stop
left=$(grep -lsF "TPF_WORKERS_DIR=$SSH_WORKERS_DIR" /proc/[0-9]*/environ | wc -l)
is "no worker process left" "$left" 0
finish

# shellcheck shell=sh
# Many emulated TPU worker VMs in ONE process over real SSH
# (tests/e2e/ssh_workers.py, Debian's python3-asyncssh): what tests and
# benches use when one OpenSSH sshd per worker (tests/e2e/sshd.sh) is too
# many processes, from a few workers to thousands. Same files as sshd.sh, so
# the Cloud TPU emulator's guest agent (fakegcp --worker-dir) serves them the
# same way. Source this file (POSIX sh), then:
#
#   ssh_workers_start DIR N BASE_IP [PORT]
#       Starts N workers, worker i on BASE_IP + i (use 127.2.0.1 and up:
#       127.0.x.y belongs to the sshd.sh tests), one port for all (PORT,
#       else a free one). Each worker: DIR/wI/home (the login's home: any
#       user name), DIR/wI/hostkey.pub, DIR/wI/screen (SCREENDIR). Login with
#       the key DIR/id_ed25519, put in every worker's authorized_keys unless
#       SSH_WORKERS_NO_KEYS=1 (then the emulator's guest agent writes them
#       from the nodes' ssh-keys metadata). Commands run as real processes
#       (/bin/sh -c in the worker's home). Exports SSH_WORKERS_DIR
#       SSH_WORKERS_N SSH_WORKERS_BASE SSH_WORKERS_PORT SSH_WORKERS_KEY
#       SSH_WORKERS_PID. Returns 2 when this machine cannot run it (no
#       python3 with asyncssh: apt-get install python3-asyncssh), 1 when it
#       did not start (its log: DIR/log).
#   ssh_workers_emulated DIR N BASE_IP PROJECT
#       ssh_workers_start with SSH_WORKERS_NO_KEYS=1, then the Cloud TPU
#       emulator (tests/e2e/fakegcp.sh, sourced by the caller) handing the
#       workers out as those of PROJECT's nodes. Returns as
#       ssh_workers_start, or 3 when the emulator did not start.
#   ssh_workers_stop
#       Ends the harness and every process a worker started (their screen
#       sessions and jobs): SIGTERM to the harness, which ends them.
#   ssh_workers_addr I    worker I's address
#   ssh_workers_home I    worker I's home directory
#
# Not VMs: the workers share this machine's processes, /tmp and user (root
# or not: no root needed), which tpuform's bootstrap copes with (its files
# are under $HOME, its screen sessions under $SCREENDIR, its libtpu lock
# file at $TPUFORM_LIBTPU_LOCKFILE).

# written by the harness at start
ssh_workers_addr() {
	cat "$SSH_WORKERS_DIR/w$1/addr"
}

ssh_workers_home() {
	echo "$SSH_WORKERS_DIR/w$1/home"
}

# The python3 that has asyncssh (Debian's, when another comes first on PATH).
ssh_workers_python() {
	for _swp in python3 /usr/bin/python3; do
		if command -v "$_swp" >/dev/null 2>&1 &&
			"$_swp" -W ignore -c 'import asyncssh' >/dev/null 2>&1; then
			echo "$_swp"
			return 0
		fi
	done
	return 1
}

ssh_workers_start() {
	SSH_WORKERS_DIR=$1
	SSH_WORKERS_N=$2
	SSH_WORKERS_BASE=$3
	SSH_WORKERS_PORT=${4:-0}
	SSH_WORKERS_PID=
	_sws_py=$(ssh_workers_python) || {
		echo "ssh_workers_start: needs python3 with asyncssh (apt-get install python3-asyncssh)" >&2
		return 2
	}
	command -v ssh-keygen >/dev/null 2>&1 || { echo "ssh_workers_start: needs ssh-keygen" >&2; return 2; }
	mkdir -p "$SSH_WORKERS_DIR" || return 1
	SSH_WORKERS_DIR=$(cd "$SSH_WORKERS_DIR" && pwd)
	SSH_WORKERS_KEY=$SSH_WORKERS_DIR/id_ed25519
	[ -f "$SSH_WORKERS_KEY" ] || ssh-keygen -q -t ed25519 -N '' -C tpuform-test -f "$SSH_WORKERS_KEY" || return 1
	_sws_keys=
	[ "${SSH_WORKERS_NO_KEYS:-}" = 1 ] || _sws_keys=$SSH_WORKERS_KEY.pub
	rm -f "$SSH_WORKERS_DIR/ready"
	"$_sws_py" -W ignore "${TPF_ROOT:-$TOP}/tests/e2e/ssh_workers.py" --dir "$SSH_WORKERS_DIR" \
		--count "$SSH_WORKERS_N" --base "$SSH_WORKERS_BASE" --port "$SSH_WORKERS_PORT" \
		${_sws_keys:+--authorized "$_sws_keys"} --ready "$SSH_WORKERS_DIR/ready" \
		</dev/null >>"$SSH_WORKERS_DIR/log" 2>&1 &
	SSH_WORKERS_PID=$!
	export SSH_WORKERS_DIR SSH_WORKERS_N SSH_WORKERS_BASE SSH_WORKERS_KEY SSH_WORKERS_PID
	# About 1 s per 1,000 workers (their host keys, first time), more
	# under load: allow 10 minutes.
	_sws_i=0
	while [ ! -s "$SSH_WORKERS_DIR/ready" ]; do
		if ! kill -0 "$SSH_WORKERS_PID" 2>/dev/null || [ "$_sws_i" -ge 6000 ]; then
			echo "ssh_workers_start: the harness did not start; its log:" >&2
			tail -n 5 "$SSH_WORKERS_DIR/log" >&2
			ssh_workers_stop
			return 1
		fi
		sleep 0.1
		_sws_i=$((_sws_i + 1))
	done
	SSH_WORKERS_PORT=$(cat "$SSH_WORKERS_DIR/ready")
	export SSH_WORKERS_PORT
}

ssh_workers_emulated() {
	SSH_WORKERS_NO_KEYS=1
	ssh_workers_start "$1" "$2" "$3" || return
	fakegcp_start --project "$4" --op-seconds 0.2 --worker-ip-base "$3" \
		--worker-port "$SSH_WORKERS_PORT" --worker-dir "$SSH_WORKERS_DIR" >/dev/null || return 3
}

ssh_workers_stop() {
	[ -n "${SSH_WORKERS_PID:-}" ] || return 0
	kill -TERM "$SSH_WORKERS_PID" 2>/dev/null
	# it ends the workers' processes (TERM, 3 s, KILL) before it exits
	_swt_i=0
	while kill -0 "$SSH_WORKERS_PID" 2>/dev/null && [ "$_swt_i" -lt 200 ]; do
		sleep 0.05
		_swt_i=$((_swt_i + 1))
	done
	kill -KILL "$SSH_WORKERS_PID" 2>/dev/null
	wait "$SSH_WORKERS_PID" 2>/dev/null
	SSH_WORKERS_PID=
	return 0
}

# shellcheck shell=sh
# Emulated TPU worker VMs for tests: one OpenSSH sshd per worker.
# Source this file (POSIX sh), then:
#
#   sshd_start DIR N BASE_IP [PORT]
#       Starts N workers, worker i listening on BASE_IP + i (127.0.x.y; every
#       loopback address works on Linux without configuration), all on one
#       port (PORT, else a free one is picked). Each worker is a small "VM":
#       its own PID and mount namespaces (unshare --pid --mount, with its own
#       /proc), a private directory bind-mounted over the login user's home
#       (root: /root), over /run/screen (screen sessions) and, when DIR is
#       not under /tmp, over /tmp; its own ed25519 host key. Workers do not
#       see each other's files or processes, as separate VMs would not. The
#       namespaces' first process keeps the VM up (and reaps orphans) while
#       its sshd is stopped and started again. Login: root with the client
#       key DIR/id_ed25519 (PermitRootLogin prohibit-password), which is put
#       in each worker's authorized_keys unless SSHD_NO_KEYS=1: then every
#       authorized_keys starts empty and only a guest agent fills it (the
#       Cloud TPU emulator's, tests/fakegcp/fg_agent.c, from node metadata).
#       Exports SSHD_DIR SSHD_N SSHD_BASE SSHD_PORT SSHD_KEY. Returns 2 when
#       the machine cannot do it (not root, no sshd, no unshare): skip then.
#   sshd_stop
#       Ends every worker VM: each one's namespaces die with every process in
#       them (sshd, screen sessions, jobs).
#   sshd_stop_one I      stop worker I's sshd only: the VM and its jobs live on
#   sshd_restart_one I [newkey]
#                        start worker I's sshd again, on the same VM; with
#                        "newkey", with a new host key first (a rebuilt VM,
#                        or an impostor)
#   sshd_addr I          worker I's address
#   sshd_index ADDR      the I of the worker at ADDR (inverse of sshd_addr)
#   sshd_home I          worker I's home directory, as seen from here
#   sshd_fingerprint I   worker I's host key fingerprint ("SHA256:...")
#   sshd_known_hosts FILE   a known_hosts file for every worker
#   sshd_in I CMD...     run CMD inside worker I's VM (its mounts and processes)
#   sshd_watch PID       sshd_stop by itself once process PID is gone (a test
#                        that crashes leaves nothing running)
#
# Files: DIR/wI/{home,screen,tmp,hostkey,sshd_config,log}; DIR/wI/vm holds
# the pid of the process whose end ends the VM (unshare --kill-child).

_sshd_ip() {
	# $1 + $2 as an IPv4 address
	_si_old_ifs=${IFS-}
	IFS=.
	# shellcheck disable=SC2086
	set -- $1 "$2"
	IFS=$_si_old_ifs
	_si_n=$((($1 << 24) + ($2 << 16) + ($3 << 8) + $4 + $5))
	echo "$(((_si_n >> 24) & 255)).$(((_si_n >> 16) & 255)).$(((_si_n >> 8) & 255)).$((_si_n & 255))"
}

sshd_addr() {
	_sshd_ip "$SSHD_BASE" "$1"
}

sshd_index() {
	_sx_a=$(_sshd_ip "$1" 0)
	_si_old_ifs=${IFS-}
	IFS=.
	# shellcheck disable=SC2086
	set -- $_sx_a $SSHD_BASE
	IFS=$_si_old_ifs
	echo $(((($1 << 24) + ($2 << 16) + ($3 << 8) + $4) - (($5 << 24) + ($6 << 16) + ($7 << 8) + $8)))
}

sshd_home() {
	echo "$SSHD_DIR/w$1/home"
}

sshd_fingerprint() {
	ssh-keygen -l -E sha256 -f "$SSHD_DIR/w$1/hostkey.pub" | awk '{print $2}'
}

sshd_known_hosts() {
	: >"$1"
	_sk_i=0
	while [ "$_sk_i" -lt "$SSHD_N" ]; do
		echo "[$(sshd_addr "$_sk_i")]:$SSHD_PORT $(cut -d' ' -f1,2 "$SSHD_DIR/w$_sk_i/hostkey.pub")" >>"$1"
		_sk_i=$((_sk_i + 1))
	done
}

_sshd_config() {
	_sc_w=$SSHD_DIR/w$1
	cat >"$_sc_w/sshd_config" <<EOF
ListenAddress $(sshd_addr "$1"):$SSHD_PORT
HostKey $_sc_w/hostkey
PidFile none
AuthorizedKeysFile .ssh/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes yes
UseDNS no
PrintMotd no
PrintLastLog no
MaxStartups 200:30:400
MaxSessions 50
LogLevel INFO
Subsystem sftp /usr/lib/openssh/sftp-server
PermitUserEnvironment TPUFORM_METADATA_URL
EOF
}

_sshd_prepare() {
	_sp_w=$SSHD_DIR/w$1
	mkdir -p "$_sp_w/home/.ssh" "$_sp_w/screen" "$_sp_w/tmp" || return 1
	chmod 700 "$_sp_w/home" "$_sp_w/home/.ssh"
	chmod 1777 "$_sp_w/screen" "$_sp_w/tmp"
	if [ "${SSHD_NO_KEYS:-}" = 1 ]; then
		# the guest agent's file: left as it is on a restart
		[ -f "$_sp_w/home/.ssh/authorized_keys" ] || : >"$_sp_w/home/.ssh/authorized_keys"
	else
		cp "$SSHD_KEY.pub" "$_sp_w/home/.ssh/authorized_keys"
	fi
	chmod 600 "$_sp_w/home/.ssh/authorized_keys"
	[ -f "$_sp_w/hostkey" ] || ssh-keygen -q -t ed25519 -N '' -C "worker$1" -f "$_sp_w/hostkey" || return 1
	_sshd_config "$1"
}

# The VM's first process (pid 1 of its namespaces): mounts, then runs sshd
# while DIR/wI/sshd.up exists. Its waits reap orphaned processes, as init
# does; it outlives sshd, so jobs survive an sshd restart.
# shellcheck disable=SC2016 # run by the VM's own sh, with its arguments
_SSHD_KEEPER='
	mount --bind "$1/home" /root &&
	mount --bind "$1/screen" /run/screen &&
	{ [ -z "$2" ] || mount --bind "$1/tmp" /tmp; } || exit 1
	while :; do
		if [ -e "$1/sshd.up" ]; then
			/usr/sbin/sshd -D -f "$1/sshd_config" -E "$1/log.start" </dev/null >/dev/null 2>&1 &
			wait $!
			[ -e "$1/sshd.up" ] && sleep 0.2
		else
			sleep 0.1 &
			wait $!
		fi
	done'

# pid (as seen from here) of worker $1's VM init, and of its sshd listener
_sshd_init_pid() {
	pgrep -P "$(cat "$SSHD_DIR/w$1/vm" 2>/dev/null)" 2>/dev/null | head -n 1
}

_sshd_listener_pid() {
	_sl_init=$(_sshd_init_pid "$1")
	[ -n "$_sl_init" ] && pgrep -P "$_sl_init" -x sshd | head -n 1
}

# Wait until worker $1's sshd logs that it listens (its log was reset).
_sshd_wait_listening() {
	_sw_w=$SSHD_DIR/w$1
	_sw_i=0
	while ! grep -q 'Server listening' "$_sw_w/log.start" 2>/dev/null; do
		if ! kill -0 "$(cat "$_sw_w/vm" 2>/dev/null)" 2>/dev/null || [ "$_sw_i" -ge 500 ] ||
			grep -q 'Bind to port .* failed\|Cannot bind any address' "$_sw_w/log.start" 2>/dev/null; then
			cat "$_sw_w/log.start" >>"$_sw_w/log" 2>/dev/null
			return 1
		fi
		sleep 0.01
		_sw_i=$((_sw_i + 1))
	done
	cat "$_sw_w/log.start" >>"$_sw_w/log"
}

# Boot worker $1's VM and wait until its sshd listens.
_sshd_launch() {
	_sl_w=$SSHD_DIR/w$1
	_sl_tmp=yes
	case $SSHD_DIR in /tmp | /tmp/*) _sl_tmp= ;; esac
	: >"$_sl_w/log.start"
	: >"$_sl_w/sshd.up"
	unshare --mount --pid --fork --kill-child --mount-proc --propagation private \
		sh -c "$_SSHD_KEEPER" sh "$_sl_w" "$_sl_tmp" </dev/null >/dev/null 2>>"$_sl_w/log" &
	echo $! >"$_sl_w/vm"
	_sshd_wait_listening "$1"
}

sshd_start() {
	SSHD_DIR=$1
	SSHD_N=$2
	SSHD_BASE=$3
	SSHD_PORT=${4:-}
	if [ "$(id -u)" != 0 ] || [ ! -x /usr/sbin/sshd ] || ! command -v unshare >/dev/null 2>&1 ||
		! command -v ssh-keygen >/dev/null 2>&1 || ! command -v pgrep >/dev/null 2>&1 ||
		! unshare --mount --pid --fork --kill-child --mount-proc --propagation private true 2>/dev/null; then
		echo "sshd_start: needs root, /usr/sbin/sshd, ssh-keygen, pgrep and unshare --pid --mount" >&2
		return 2
	fi
	mkdir -p "$SSHD_DIR" /run/sshd /run/screen || return 1
	SSHD_DIR=$(cd "$SSHD_DIR" && pwd)
	SSHD_KEY=$SSHD_DIR/id_ed25519
	[ -f "$SSHD_KEY" ] || ssh-keygen -q -t ed25519 -N '' -C tpuform-test -f "$SSHD_KEY" || return 1
	export SSHD_DIR SSHD_N SSHD_BASE SSHD_PORT SSHD_KEY
	_ss_tries=0
	while :; do
		[ -n "$SSHD_PORT" ] || SSHD_PORT=$((20000 + ($$ * 7919 + _ss_tries * 104729) % 20000))
		export SSHD_PORT
		_ss_i=0
		_ss_ok=yes
		while [ "$_ss_i" -lt "$SSHD_N" ]; do
			if ! _sshd_prepare "$_ss_i" || ! _sshd_launch "$_ss_i"; then
				_ss_ok=
				break
			fi
			_ss_i=$((_ss_i + 1))
		done
		[ -n "$_ss_ok" ] && return 0
		sshd_stop
		_ss_tries=$((_ss_tries + 1))
		if [ -n "${4:-}" ] || [ "$_ss_tries" -ge 5 ]; then
			echo "sshd_start: worker $_ss_i did not start; its log:" >&2
			tail -n 5 "$SSHD_DIR/w$_ss_i/log" >&2
			return 1
		fi
		SSHD_PORT=
	done
}

sshd_stop_one() {
	rm -f "$SSHD_DIR/w$1/sshd.up"
	_so_pid=$(_sshd_listener_pid "$1")
	[ -n "$_so_pid" ] || return 0
	kill "$_so_pid" 2>/dev/null
	_so_i=0
	while kill -0 "$_so_pid" 2>/dev/null && [ "$_so_i" -lt 200 ]; do
		sleep 0.01
		_so_i=$((_so_i + 1))
	done
}

sshd_restart_one() {
	sshd_stop_one "$1"
	if [ "${2:-}" = newkey ]; then
		rm -f "$SSHD_DIR/w$1/hostkey" "$SSHD_DIR/w$1/hostkey.pub"
	fi
	_sshd_prepare "$1" || return 1
	if kill -0 "$(cat "$SSHD_DIR/w$1/vm" 2>/dev/null)" 2>/dev/null; then
		: >"$SSHD_DIR/w$1/log.start"
		: >"$SSHD_DIR/w$1/sshd.up"
		_sshd_wait_listening "$1"
	else
		_sshd_launch "$1"
	fi
}

sshd_in() {
	_sn_i=$1
	shift
	nsenter -t "$(_sshd_init_pid "$_sn_i")" -m -p -- "$@"
}

sshd_watch() {
	(
		trap '' HUP INT
		while kill -0 "$1" 2>/dev/null; do
			sleep 1
		done
		sshd_stop
	) </dev/null >/dev/null 2>&1 &
}

sshd_stop() {
	[ -n "${SSHD_DIR:-}" ] && [ -d "$SSHD_DIR" ] || return 0
	_st_pids=
	for _st_f in "$SSHD_DIR"/w*/vm; do
		[ -f "$_st_f" ] || continue
		_st_p=$(cat "$_st_f")
		rm -f "$_st_f" "${_st_f%/vm}/sshd.up"
		# unshare --kill-child (which ignores TERM while it waits): its end SIGKILLs the VM's init, and with
		# it every process of the PID namespace.
		[ -n "$_st_p" ] && kill -9 "$_st_p" 2>/dev/null && _st_pids="$_st_pids $_st_p"
	done
	for _st_p in $_st_pids; do
		_st_i=0
		while kill -0 "$_st_p" 2>/dev/null && [ "$_st_i" -lt 300 ]; do
			sleep 0.01
			_st_i=$((_st_i + 1))
		done
	done
	return 0
}

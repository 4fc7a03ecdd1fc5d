# Emulated TPU worker VMs for tests: one OpenSSH sshd per worker.
# Source this file (POSIX sh), then:
#
#   sshd_start DIR N BASE_IP [PORT]
#       Starts N sshd, worker i listening on BASE_IP + i (127.0.x.y; every
#       loopback address works on Linux without configuration), all on one
#       port (PORT, else a free one is picked). Each worker has its own
#       ed25519 host key and its own mount namespace (unshare -m) in which
#       a private directory is bind-mounted over the login user's home
#       (root: /root), over /run/screen (screen sessions) and, when DIR is
#       not under /tmp, over /tmp: workers do not see each other's files,
#       as separate VMs would not. Login: root with the client key
#       DIR/id_ed25519 (PermitRootLogin prohibit-password).
#       Exports SSHD_DIR SSHD_N SSHD_BASE SSHD_PORT SSHD_KEY. Returns 2 when
#       the machine cannot do it (not root, no sshd, no unshare): skip then.
#   sshd_stop
#       Kills every sshd and every process left in the workers' namespaces
#       (screen sessions, jobs).
#   sshd_stop_one I      stop worker I's sshd (listener only: its jobs live on)
#   sshd_restart_one I [newkey]
#                        start worker I's sshd again; "newkey": with a new
#                        host key first (a rebuilt VM, or an impostor)
#   sshd_addr I          worker I's address
#   sshd_index ADDR      the I of the worker at ADDR (inverse of sshd_addr)
#   sshd_home I          worker I's home directory, as seen from here
#   sshd_fingerprint I   worker I's host key fingerprint ("SHA256:...")
#   sshd_known_hosts FILE   a known_hosts file for every worker
#   sshd_in I CMD...     run CMD inside worker I's namespace (as on the VM)
#   sshd_watch PID       sshd_stop by itself once process PID is gone (a test
#                        that crashes leaves nothing running)
#
# sshd logs go to DIR/wI/log.

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
EOF
}

_sshd_prepare() {
	_sp_w=$SSHD_DIR/w$1
	mkdir -p "$_sp_w/home/.ssh" "$_sp_w/screen" "$_sp_w/tmp" || return 1
	chmod 700 "$_sp_w/home" "$_sp_w/home/.ssh"
	chmod 1777 "$_sp_w/screen" "$_sp_w/tmp"
	cp "$SSHD_KEY.pub" "$_sp_w/home/.ssh/authorized_keys"
	chmod 600 "$_sp_w/home/.ssh/authorized_keys"
	[ -f "$_sp_w/hostkey" ] || ssh-keygen -q -t ed25519 -N '' -C "worker$1" -f "$_sp_w/hostkey" || return 1
	_sshd_config "$1"
}

# Launch worker $1's sshd in a new mount namespace; wait until it listens.
_sshd_launch() {
	_sl_w=$SSHD_DIR/w$1
	_sl_tmp=yes
	case $SSHD_DIR in /tmp | /tmp/*) _sl_tmp= ;; esac
	: >"$_sl_w/log.start"
	unshare --mount --propagation private sh -c '
		mount --bind "$1/home" /root &&
		mount --bind "$1/screen" /run/screen &&
		{ [ -z "$2" ] || mount --bind "$1/tmp" /tmp; } &&
		exec /usr/sbin/sshd -D -f "$1/sshd_config" -E "$1/log.start"' sh "$_sl_w" "$_sl_tmp" \
		</dev/null >/dev/null 2>>"$_sl_w/log.start" &
	echo $! >"$_sl_w/pid"
	_sl_i=0
	while ! grep -q 'Server listening' "$_sl_w/log.start" 2>/dev/null; do
		if ! kill -0 "$(cat "$_sl_w/pid")" 2>/dev/null || [ "$_sl_i" -ge 500 ]; then
			cat "$_sl_w/log.start" >>"$_sl_w/log"
			return 1
		fi
		sleep 0.01
		_sl_i=$((_sl_i + 1))
	done
	# Never record our own namespace: sshd_stop kills what is in these.
	_sl_ns=$(readlink "/proc/$(cat "$_sl_w/pid")/ns/mnt")
	[ "$_sl_ns" != "$(readlink /proc/self/ns/mnt)" ] || return 1
	echo "$_sl_ns" >>"$_sl_w/ns"
	cat "$_sl_w/log.start" >>"$_sl_w/log"
}

sshd_start() {
	SSHD_DIR=$1
	SSHD_N=$2
	SSHD_BASE=$3
	SSHD_PORT=${4:-}
	if [ "$(id -u)" != 0 ] || [ ! -x /usr/sbin/sshd ] || ! command -v unshare >/dev/null 2>&1 ||
		! command -v ssh-keygen >/dev/null 2>&1 ||
		! unshare --mount --propagation private true 2>/dev/null; then
		echo "sshd_start: needs root, /usr/sbin/sshd, ssh-keygen and unshare -m" >&2
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
	_so_pid=$(cat "$SSHD_DIR/w$1/pid" 2>/dev/null)
	[ -n "$_so_pid" ] || return 0
	kill "$_so_pid" 2>/dev/null
	_so_i=0
	while kill -0 "$_so_pid" 2>/dev/null && [ "$_so_i" -lt 200 ]; do
		sleep 0.01
		_so_i=$((_so_i + 1))
	done
	rm -f "$SSHD_DIR/w$1/pid"
}

sshd_restart_one() {
	sshd_stop_one "$1"
	if [ "${2:-}" = newkey ]; then
		rm -f "$SSHD_DIR/w$1/hostkey" "$SSHD_DIR/w$1/hostkey.pub"
	fi
	_sshd_prepare "$1" && _sshd_launch "$1"
}

sshd_in() {
	_sn_i=$1
	shift
	nsenter -t "$(cat "$SSHD_DIR/w$_sn_i/pid")" -m -- "$@"
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
	# Every mount namespace any of our workers ever had.
	_st_ns=$(cat "$SSHD_DIR"/w*/ns 2>/dev/null | sort -u)
	for _st_p in "$SSHD_DIR"/w*/pid; do
		[ -f "$_st_p" ] && kill "$(cat "$_st_p")" 2>/dev/null
		rm -f "$_st_p"
	done
	[ -n "$_st_ns" ] || return 0
	for _st_round in 1 2 3; do
		_st_left=
		for _st_d in /proc/[0-9]*; do
			_st_m=$(readlink "$_st_d/ns/mnt" 2>/dev/null) || continue
			case "
$_st_ns
" in
			*"
$_st_m
"*)
				kill -9 "${_st_d#/proc/}" 2>/dev/null && _st_left=yes
				;;
			esac
		done
		[ -n "$_st_left" ] || break
		sleep 0.1
	done
	return 0
}

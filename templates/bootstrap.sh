# shellcheck shell=sh
#
# Body of the per-worker bootstrap script (templates/bootstrap.sh).
#
# tpuform renders a worker's script as "#!/bin/sh", a comment, one
# assignment per setting (TPUFORM_FLEET ... TPUFORM_RUN, every value
# single-quoted), the user's env exports, then this body unchanged
# (templates/render.c). It is uploaded to ~/tpuform/bootstrap.sh and run as
#
#	sh tpuform/bootstrap.sh start|restart|status|wait TOKEN SECONDS [BEAT]|disrupt REASON DEADLINE|logs N|setup-log N|env|stop [REASON]
#
# printing "TPUFORM key=value" lines for tpuform (the protocol is in
# engine/workers/provision.h). "job" is the verb the screen session runs.
#
# POSIX sh only (the worker's /bin/sh may be dash). Needs screen, git (for
# a source), sha256sum and coreutils. Secrets live in secrets.env (0600),
# sourced by setup and the job only, never printed.

unset IFS CDPATH
set -u
umask 077

# $0's directory and name by expansion, not dirname(1) and basename(1):
# every verb starts here, and a process costs (issue 28).
case $0 in
*/*) tpf_d0=${0%/*} ;;
*) tpf_d0=. ;;
esac
tpf_dir=$(cd -P -- "${tpf_d0:-/}" && pwd) || exit 2
tpf_self=$tpf_dir/${0##*/}
tpf_src=$tpf_dir/src
tpf_rundir=$tpf_dir/run
tpf_logs=$tpf_dir/logs
tpf_secrets=$tpf_dir/secrets.env
tpf_bundle=$tpf_dir/source.bundle
tpf_heartbeat=$tpf_rundir/heartbeat
tpf_lockfile=${TPUFORM_LIBTPU_LOCKFILE:-/tmp/libtpu_lockfile}
# The TPU's device files, as glob patterns: /dev/accel* (v2-v4) or the
# VFIO groups /dev/vfio/N (v5e and later). Tests point this at fake files
# in the worker's home (the local provider does); nothing else sets it.
tpf_devices=${TPUFORM_TPU_DEVICES:-/dev/accel* /dev/vfio/[0-9]*}

tpf_say() {
	printf 'TPUFORM %s\n' "$*"
}

# tpf_fail STEP CODE MESSAGE: report a failed step and end the script.
tpf_fail() {
	printf 'tpuform: %s\n' "$3"
	tpf_say "result=failed step=$1 exit_code=$2"
	exit 1
}

# Replace file $1 with the line $2 (temp file + rename), so a reader never
# sees a partial value.
tpf_put() {
	printf '%s\n' "$2" >"$1.tmp.$$" && mv -f -- "$1.tmp.$$" "$1"
}

# First line of file $1, or nothing. read(1) is a builtin: callers take
# this with $(...), which is then a fork and no exec.
tpf_read() {
	if [ -f "$1" ]; then
		tpf_rl=
		{ IFS= read -r tpf_rl <"$1"; } 2>/dev/null
		printf '%s\n' "$tpf_rl"
	fi
}

tpf_is_number() {
	case $1 in
	'' | *[!0-9]*) return 1 ;;
	esac
	return 0
}

# The screen sessions named $TPUFORM_SESSION ("pid.name"), one a line.
# Dead sockets (the screen process is gone) do not count.
tpf_pipelines() {
	command -v screen >/dev/null 2>&1 || return 0
	screen -ls 2>/dev/null | tpf_name=$TPUFORM_SESSION awk '
		$1 ~ /^[0-9]+\./ && $0 !~ /\(Dead/ {
			s = $1
			sub(/^[0-9]+\./, "", s)
			if (s == ENVIRON["tpf_name"])
				print $1
		}'
}

tpf_alive() {
	[ -n "$(tpf_pipelines)" ]
}

# State letter of process $1 (R, S, Z, ...), empty if there is none.
tpf_proc_state() {
	if [ ! -d /proc/self ]; then
		kill -s 0 "$1" 2>/dev/null && echo R
		return 0
	fi
	{ read -r tpf_line <"/proc/$1/stat"; } 2>/dev/null || return 0
	tpf_line=${tpf_line##*) }
	echo "${tpf_line%% *}"
}

# Has process group $1 a member that is not a zombie? Zombies do not
# count: where nothing reaps orphans (a container without an init) they
# stay forever.
tpf_group_running() {
	kill -s 0 -- "-$1" 2>/dev/null || return 1
	[ -d /proc/self ] || return 0
	# One awk over every /proc/PID/stat (a shell loop over a busy host's
	# processes costs a second). After the command name: state, ppid,
	# pgrp, ...
	cat /proc/[0-9]*/stat 2>/dev/null | tpf_want=$1 awk '
		{
			sub(/.*\) /, "")
			if ($3 == ENVIRON["tpf_want"] && $1 != "Z") {
				found = 1
				exit
			}
		}
		END { exit !found }'
}

# Is process group $1 the job this script started? The kernel does not
# reuse a pid while it is still a process group id, so a running group
# whose leader is gone (or a zombie) is our job's orphans; a live leader
# must be our job shell (its pid may have been recycled since job.pid was
# written).
tpf_group_ours() {
	tpf_group_running "$1" || return 1
	case $(tpf_proc_state "$1") in
	'' | Z) return 0 ;;
	esac
	tpf_args=
	if [ -r "/proc/$1/cmdline" ]; then
		tpf_args=$(tr '\000' ' ' <"/proc/$1/cmdline" 2>/dev/null)
	else
		tpf_args=$(ps -o args= -p "$1" 2>/dev/null)
	fi
	case $tpf_args in
	*"$tpf_self job"*) return 0 ;;
	esac
	return 1
}

# tpf_wait_group PGID TENTHS: wait up to TENTHS/10 s for the group to end;
# 0 if it did.
tpf_wait_group() {
	tpf_i=0
	while tpf_group_running "$1"; do
		[ "$tpf_i" -ge "$2" ] && return 1
		sleep 0.1
		tpf_i=$((tpf_i + 1))
	done
	return 0
}

# Stop the session and every process of the job [tpf_stop REASON]: with a
# REASON (a planned replacement or delete), $TPUFORM_DISRUPTION is written
# first, as for a notice. Then the fleet's on_disruption signal (default
# TERM) to the job's process group and on_disruption.grace
# (TPUFORM_DISRUPTION_GRACE, default 15 s) for it to checkpoint and exit;
# then TERM (when the signal was another) with 5 s more, then KILL; then
# quit screen.
tpf_stop() {
	tpf_pg=$(tpf_read "$tpf_rundir/job.pid")
	if tpf_is_number "$tpf_pg" && tpf_group_ours "$tpf_pg"; then
		tpf_grace=${TPUFORM_DISRUPTION_GRACE:-15}
		tpf_is_number "$tpf_grace" || tpf_grace=15
		if [ -n "${1:-}" ]; then
			tpf_disrupt "$tpf_pg" "$1" "$tpf_grace"
		else
			kill -s "$(tpf_dsig)" -- "-$tpf_pg" 2>/dev/null
		fi
		if ! tpf_wait_group "$tpf_pg" $((tpf_grace * 10)); then
			if [ "$(tpf_dsig)" != TERM ]; then
				kill -s TERM -- "-$tpf_pg" 2>/dev/null
				tpf_wait_group "$tpf_pg" 50 && tpf_pg=
			fi
			if [ -n "$tpf_pg" ]; then
				kill -s KILL -- "-$tpf_pg" 2>/dev/null
				sleep 0.2
			fi
		fi
	fi
	# The screen daemon ends with the job's wrapper. When the one we
	# started has gone, `screen -ls` would only meet its dying socket
	# (and sleep a second on it): wipe in the background instead.
	tpf_sp=$(tpf_read "$tpf_rundir/screen.pid")
	tpf_i=0
	while tpf_is_number "$tpf_sp" && [ "$tpf_i" -lt 40 ] && kill -s 0 "$tpf_sp" 2>/dev/null &&
		[ "$(tpf_proc_state "$tpf_sp")" != Z ]; do
		sleep 0.05
		tpf_i=$((tpf_i + 1))
	done
	if tpf_is_number "$tpf_sp" && { ! kill -s 0 "$tpf_sp" 2>/dev/null ||
		[ "$(tpf_proc_state "$tpf_sp")" = Z ]; }; then
		if command -v screen >/dev/null 2>&1; then
			(screen -wipe </dev/null >/dev/null 2>&1 &) 9>&-
		fi
		rm -f -- "$tpf_rundir/job.pid" "$tpf_rundir/screen.pid"
		return 0
	fi
	tpf_i=0
	while :; do
		tpf_list=$(tpf_pipelines)
		[ -n "$tpf_list" ] || break
		if [ "$tpf_i" -ge 50 ]; then
			printf 'tpuform: screen session %s did not quit\n' "$TPUFORM_SESSION"
			break
		fi
		for tpf_s in $tpf_list; do
			screen -S "$tpf_s" -X quit >/dev/null 2>&1
		done
		sleep 0.1
		tpf_i=$((tpf_i + 1))
	done
	if command -v screen >/dev/null 2>&1; then
		screen -wipe >/dev/null 2>&1
	fi
	rm -f -- "$tpf_rundir/job.pid" "$tpf_rundir/screen.pid"
}

# The paths that make up the TPU here, one a line: the libtpu lock file
# and every device file that exists.
tpf_tpu_paths() {
	printf '%s\n' "$tpf_lockfile"
	# shellcheck disable=SC2086 # glob patterns, split and expanded on purpose
	for tpf_g in $tpf_devices; do
		if [ -e "$tpf_g" ]; then
			printf '%s\n' "$tpf_g"
		fi
	done
}

# Processes holding any of the paths $1 (one a line) open: "PID PATH" a
# line, one line per process. One `ls` over /proc/*/fd, as fuser(1) reads
# it (fuser is not on every image). Nothing without /proc.
tpf_holders() {
	[ -d /proc/self ] || return 0
	# None of the paths exists (no lock file, no device: a host whose TPU
	# is free, or no TPU): no process can hold one, and the scan of every
	# process's descriptors is skipped. It costs a moment on a TPU VM, but
	# grows with the host's processes: one machine emulating a thousand
	# workers (issue 28) ran a thousand such scans of its thousands of
	# processes at each apply.
	tpf_any=
	while read -r tpf_p; do
		if [ -n "$tpf_p" ] && { [ -e "$tpf_p" ] || [ -L "$tpf_p" ]; }; then
			tpf_any=1
		fi
	done <<EOF
$1
EOF
	[ -n "$tpf_any" ] || return 0
	# shellcheck disable=SC2012 # the link targets are what we read
	ls -l /proc/[0-9]*/fd 2>/dev/null | tpf_want=$1 tpf_me=$$ awk '
		BEGIN {
			n = split(ENVIRON["tpf_want"], w, "\n")
			for (i = 1; i <= n; i++)
				if (w[i] != "")
					want[w[i]] = 1
		}
		/^\/proc\/[0-9]+\/fd:$/ { split($0, a, "/"); pid = a[3]; next }
		{
			k = index($0, " -> ")
			if (!k || pid == ENVIRON["tpf_me"])
				next
			t = substr($0, k + 4)
			if ((t in want) && !(pid in seen)) {
				seen[pid] = 1
				print pid, t
			}
		}'
}

# The command line of process $1, at most 200 bytes.
tpf_cmdline() {
	if [ -r "/proc/$1/cmdline" ]; then
		tr '\000' ' ' <"/proc/$1/cmdline" 2>/dev/null | cut -c1-200
	else
		ps -o args= -p "$1" 2>/dev/null | cut -c1-200
	fi
}

# "pid 4242 (python3 train.py) holds /dev/accel0; ..." for holders $1.
tpf_holders_words() {
	tpf_words=
	while read -r tpf_pid tpf_path; do
		[ -n "$tpf_pid" ] || continue
		tpf_c=$(tpf_cmdline "$tpf_pid")
		tpf_words="${tpf_words:+$tpf_words; }pid $tpf_pid (${tpf_c% }) holds $tpf_path"
	done <<EOF
$1
EOF
	printf '%s' "$tpf_words"
}

# TERM every holder in $1, KILL after 10 s.
tpf_kill_holders() {
	tpf_pids=$(printf '%s\n' "$1" | awk '{ print $1 }')
	for tpf_pid in $tpf_pids; do
		kill -s TERM "$tpf_pid" 2>/dev/null
	done
	tpf_i=0
	while [ "$tpf_i" -lt 100 ]; do
		tpf_left=
		for tpf_pid in $tpf_pids; do
			if [ "$(tpf_proc_state "$tpf_pid")" != Z ] && kill -s 0 "$tpf_pid" 2>/dev/null; then
				tpf_left=1
			fi
		done
		[ -n "$tpf_left" ] || return 0
		sleep 0.1
		tpf_i=$((tpf_i + 1))
	done
	for tpf_pid in $tpf_pids; do
		kill -s KILL "$tpf_pid" 2>/dev/null
	done
	sleep 0.2
}

# The TPU half of the preflight, before the source and setup: our own job
# is stopped by now, so whatever still holds the libtpu lock file or a
# device file is some other process, which would make the job fail at
# start ("TPU in use", jax-ml/jax#10192). TPUFORM_TPU_BUSY says what to do
# about it: refuse (fail, naming the process), wait for it to let go (up
# to TPUFORM_PREFLIGHT_TIMEOUT seconds) or kill it. Then a lock file no
# one holds, left by a killed or preempted job, is removed; and with
# TPUFORM_REQUIRE_DEVICES=1 a host without a device file fails (its TPU
# did not come up).
tpf_preflight_tpu() {
	tpf_paths=$(tpf_tpu_paths)
	tpf_waited=0
	while :; do
		tpf_held=$(tpf_holders "$tpf_paths")
		[ -n "$tpf_held" ] || break
		tpf_who=$(tpf_holders_words "$tpf_held")
		case ${TPUFORM_TPU_BUSY:-refuse} in
		kill)
			printf 'tpuform: the TPU is in use (%s): killing (tpu_busy: kill)\n' "$tpf_who"
			tpf_kill_holders "$tpf_held"
			tpf_held=$(tpf_holders "$tpf_paths")
			[ -z "$tpf_held" ] && break
			tpf_fail preflight 1 "the TPU is still in use after SIGKILL: $(tpf_holders_words "$tpf_held"); the host may need a reboot"
			;;
		wait)
			if [ "$tpf_waited" -ge "${TPUFORM_PREFLIGHT_TIMEOUT:-300}" ]; then
				tpf_fail preflight 1 "the TPU is in use: $tpf_who; waited ${tpf_waited}s (tpu_busy: wait, preflight_timeout): stop that process, or set tpu_busy: kill"
			fi
			sleep 1
			tpf_waited=$((tpf_waited + 1))
			;;
		*)
			tpf_pids=$(printf '%s\n' "$tpf_held" | awk '{ printf "%s%s", s, $1; s = " " }')
			tpf_fail preflight 1 "the TPU is in use: $tpf_who; stop that process (kill $tpf_pids), or set tpu_busy: kill or tpu_busy: wait for this group"
			;;
		esac
	done
	if [ -e "$tpf_lockfile" ] || [ -L "$tpf_lockfile" ]; then
		rm -f -- "$tpf_lockfile" 2>/dev/null
		if [ -e "$tpf_lockfile" ] && command -v sudo >/dev/null 2>&1; then
			sudo -n rm -f -- "$tpf_lockfile" >/dev/null 2>&1
		fi
		if [ -e "$tpf_lockfile" ]; then
			printf 'tpuform: cannot remove stale %s\n' "$tpf_lockfile"
			tpf_say "warning=libtpu-lockfile-not-removed"
		fi
	fi
	if [ "${TPUFORM_REQUIRE_DEVICES:-0}" = 1 ] && [ "$(printf '%s\n' "$tpf_paths" | wc -l)" -le 1 ]; then
		tpf_fail preflight 1 "no TPU device on this host (looked for $tpf_devices): its TPU did not come up; tpuform replaces a node whose workers fail preflight_failures times in a row"
	fi
	return 0
}

# The user's preflight command (TPUFORM_PREFLIGHT, the group's
# `preflight`), after source and setup, in src, with the secrets, within
# TPUFORM_PREFLIGHT_TIMEOUT seconds. Its output goes to preflight.log.
tpf_preflight_user() {
	[ -n "${TPUFORM_PREFLIGHT:-}" ] || return 0
	tpf_t=${TPUFORM_PREFLIGHT_TIMEOUT:-300}
	(
		if [ -f "$tpf_secrets" ]; then
			# shellcheck source=/dev/null
			. "$tpf_secrets"
		fi
		cd -P -- "$tpf_src" || exit 126
		if command -v timeout >/dev/null 2>&1; then
			exec timeout -k 5 "$tpf_t" sh -c "$TPUFORM_PREFLIGHT"
		fi
		exec sh -c "$TPUFORM_PREFLIGHT"
	) </dev/null >"$tpf_logs/preflight.log" 2>&1 9>&-
	tpf_code=$?
	[ "$tpf_code" -eq 0 ] && return 0
	printf 'tpuform: last lines of %s:\n' "$tpf_logs/preflight.log"
	tail -n 20 -- "$tpf_logs/preflight.log" | sed 's/^/  | /'
	tpf_last=$(grep -v '^[[:space:]]*$' "$tpf_logs/preflight.log" | tail -n 1 | cut -c1-200)
	if [ "$tpf_code" -eq 124 ]; then
		tpf_fail preflight "$tpf_code" "the preflight command did not finish within ${tpf_t}s (preflight_timeout)"
	fi
	tpf_fail preflight "$tpf_code" "the preflight command exited with status $tpf_code${tpf_last:+: $tpf_last}"
}

# ---- Cloud Storage (docs/storage.md): the fleet's `mounts` and
# `checkpoint_dir`, set up before setup and the job ---------------------

# The local provider stands in for Cloud Storage with directories:
# TPUFORM_LOCAL_GCS/BUCKET/PREFIX for gs://BUCKET/PREFIX, and mount paths
# under TPUFORM_LOCAL_MOUNT_ROOT (a worker there cannot create /data).
# Elsewhere neither is set: the real thing.
tpf_mroot=${TPUFORM_LOCAL_MOUNT_ROOT:-}

# What the job sees: TPUFORM_CHECKPOINT_DIR (the gs:// URL, or its local
# directory) and, with mounts, TPUFORM_MOUNT_ROOT (empty but on the local
# provider: a job reads "$TPUFORM_MOUNT_ROOT/data" to run on both).
tpf_storage_env() {
	if [ -n "${TPUFORM_CHECKPOINT_URL:-}" ]; then
		if [ -n "${TPUFORM_LOCAL_GCS:-}" ]; then
			TPUFORM_CHECKPOINT_DIR=$TPUFORM_LOCAL_GCS/${TPUFORM_CHECKPOINT_URL#gs://}
		else
			TPUFORM_CHECKPOINT_DIR=$TPUFORM_CHECKPOINT_URL
		fi
		export TPUFORM_CHECKPOINT_DIR
	fi
	if [ "${TPUFORM_MOUNTS:-0}" -gt 0 ]; then
		TPUFORM_MOUNT_ROOT=$tpf_mroot
		export TPUFORM_MOUNT_ROOT
	fi
}

# Mount $1 (1-based) into tpf_m_*: path as given, where it goes here
# (tpf_m_at), bucket, prefix, mode, read-only, and its URL. The names are
# ours and $1 a number, so the eval expands nothing else.
tpf_mount_get() {
	tpf_m_path='' tpf_m_bucket='' tpf_m_prefix='' tpf_m_mode='' tpf_m_ro=''
	eval "tpf_m_path=\${TPUFORM_MOUNT_$1_PATH} tpf_m_bucket=\${TPUFORM_MOUNT_$1_BUCKET}"
	eval "tpf_m_prefix=\${TPUFORM_MOUNT_$1_PREFIX} tpf_m_mode=\${TPUFORM_MOUNT_$1_MODE}"
	eval "tpf_m_ro=\${TPUFORM_MOUNT_$1_RO}"
	tpf_m_url=gs://$tpf_m_bucket${tpf_m_prefix:+/$tpf_m_prefix}
	tpf_m_at=$tpf_mroot$tpf_m_path
}

# A command as root: itself when we are root, else through sudo -n (a TPU
# VM's login user has passwordless sudo).
tpf_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	else
		sudo -n "$@"
	fi
}

# Directory $1, made if missing and owned by us, so the job can write it.
tpf_mkdir_ours() {
	[ -d "$1" ] && [ -w "$1" ] && return 0
	mkdir -p -- "$1" 2>/dev/null && return 0
	if ! tpf_root mkdir -p -- "$1" || ! tpf_root chown "$(id -u):$(id -g)" "$1"; then
		tpf_fail mount 1 "cannot create mount point $1 (as $(id -un), nor with sudo -n)"
	fi
}

# Is $1 a mount point? /proc/mounts' second field (mount paths have no
# spaces: config/config_mounts.c refuses them).
tpf_is_mounted() {
	[ -r /proc/mounts ] || return 1
	tpf_want=$1 awk '$2 == ENVIRON["tpf_want"] { found = 1 } END { exit !found }' /proc/mounts
}

# Unmount the FUSE mount at $1 if there is one (a mount left by an earlier
# start, whose flags may differ, or a stop).
tpf_unmount_one() {
	tpf_is_mounted "$1" || return 0
	fusermount -u "$1" 2>/dev/null || fusermount3 -u "$1" 2>/dev/null ||
		tpf_root umount "$1" 2>/dev/null ||
		printf 'tpuform: cannot unmount %s\n' "$1"
}

# Cloud Storage FUSE where it is missing, by Google's steps for Debian and
# Ubuntu (https://cloud.google.com/storage/docs/cloud-storage-fuse/install):
# the gcsfuse-CODENAME apt repository signed by Google's key, then
# `apt-get install fuse gcsfuse`. install_gcsfuse: false skips it.
tpf_gcsfuse_install() {
	command -v gcsfuse >/dev/null 2>&1 && return 0
	if [ "${TPUFORM_GCSFUSE_INSTALL:-1}" != 1 ]; then
		tpf_fail mount 127 "'gcsfuse' not found on the worker and install_gcsfuse is false: put Cloud Storage FUSE in the image (https://cloud.google.com/storage/docs/cloud-storage-fuse/install)"
	fi
	printf 'tpuform: installing Cloud Storage FUSE (log: %s)\n' "$tpf_logs/gcsfuse-install.log"
	(
		set -e
		# shellcheck disable=SC1091 # the worker's file, read there
		tpf_cn=$(lsb_release -c -s 2>/dev/null || (. /etc/os-release && echo "$VERSION_CODENAME"))
		echo "deb [signed-by=/usr/share/keyrings/cloud.google.asc] https://packages.cloud.google.com/apt gcsfuse-$tpf_cn main" |
			tpf_root tee /etc/apt/sources.list.d/gcsfuse.list >/dev/null
		curl -fsSL https://packages.cloud.google.com/apt/doc/apt-key.gpg |
			tpf_root tee /usr/share/keyrings/cloud.google.asc >/dev/null
		tpf_root apt-get update -q
		tpf_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q fuse gcsfuse
	) </dev/null >"$tpf_logs/gcsfuse-install.log" 2>&1 9>&-
	if ! command -v gcsfuse >/dev/null 2>&1; then
		tail -n 20 -- "$tpf_logs/gcsfuse-install.log" | sed 's/^/  | /'
		tpf_fail mount 127 "cannot install Cloud Storage FUSE (gcsfuse): see $tpf_logs/gcsfuse-install.log, or install it in the image and set install_gcsfuse: false"
	fi
}

# The last lines of mount.log and a failed step naming the mount: $1 the
# exit status, $2 what failed.
tpf_mount_failed() {
	printf 'tpuform: last lines of %s:\n' "$tpf_logs/mount.log"
	tail -n 20 -- "$tpf_logs/mount.log" | sed 's/^/  | /'
	tpf_last=$(grep -v '^[[:space:]]*$' "$tpf_logs/mount.log" | tail -n 1 | cut -c1-300)
	tpf_fail mount "$1" "$2 $tpf_m_url at $tpf_m_path failed (exit status $1)${tpf_last:+: $tpf_last}; check that the bucket exists and that the VM's service account may read it (roles/storage.objectViewer; objectUser to write)"
}

# mode: mount with gcsfuse and its documented flags
# (https://cloud.google.com/storage/docs/cloud-storage-fuse/cli-options):
# --implicit-dirs (prefixes without directory objects show as
# directories), --only-dir PREFIX (the prefix, not the whole bucket), -o ro
# (read_only), and --uid/--gid/--file-mode/--dir-mode so that the job's
# user owns and can write what it sees. gcsfuse runs in the background
# once mounted; its output before that goes to mount.log.
tpf_mount_fuse() {
	set -- --implicit-dirs --uid "$(id -u)" --gid "$(id -g)" --file-mode 664 --dir-mode 775
	if [ -n "$tpf_m_prefix" ]; then
		set -- "$@" --only-dir "$tpf_m_prefix"
	fi
	if [ "$tpf_m_ro" = 1 ]; then
		set -- "$@" -o ro
	fi
	printf '$ gcsfuse %s %s %s\n' "$*" "$tpf_m_bucket" "$tpf_m_at" >>"$tpf_logs/mount.log"
	gcsfuse "$@" "$tpf_m_bucket" "$tpf_m_at" </dev/null >>"$tpf_logs/mount.log" 2>&1 9>&-
	tpf_code=$?
	[ "$tpf_code" -eq 0 ] || tpf_mount_failed "$tpf_code" "mounting"
	printf '%s\n' "$tpf_m_at" >>"$tpf_rundir/mounts"
}

# mode: copy: the prefix's objects into the path, one way (files the job
# wrote there stay: no --delete-unmatched-destination-objects). gcloud
# storage rsync where gcloud is
# (https://cloud.google.com/sdk/gcloud/reference/storage/rsync), else
# gsutil -m rsync -r (https://cloud.google.com/storage/docs/gsutil/commands/rsync).
tpf_mount_copy() {
	if command -v gcloud >/dev/null 2>&1; then
		set -- gcloud storage rsync --recursive "$tpf_m_url" "$tpf_m_at"
	elif command -v gsutil >/dev/null 2>&1; then
		set -- gsutil -m rsync -r "$tpf_m_url" "$tpf_m_at"
	else
		tpf_fail mount 127 "mode: copy of $tpf_m_url needs gcloud or gsutil on the worker: install the Google Cloud CLI, or use mode: mount"
	fi
	printf '$ %s\n' "$*" >>"$tpf_logs/mount.log"
	"$@" </dev/null >>"$tpf_logs/mount.log" 2>&1 9>&-
	tpf_code=$?
	[ "$tpf_code" -eq 0 ] || tpf_mount_failed "$tpf_code" "copying"
}

# The local provider: the bucket's directory, linked (mount) or copied.
# read_only is not enforced by a link.
tpf_mount_local() {
	tpf_m_dir=$TPUFORM_LOCAL_GCS/$tpf_m_bucket${tpf_m_prefix:+/$tpf_m_prefix}
	mkdir -p -- "$tpf_m_dir" "$(dirname -- "$tpf_m_at")" ||
		tpf_fail mount 1 "cannot create $tpf_m_dir (the local stand-in for $tpf_m_url)"
	if [ "$tpf_m_mode" = copy ]; then
		[ -L "$tpf_m_at" ] && rm -f -- "$tpf_m_at"
		if ! mkdir -p -- "$tpf_m_at" || ! cp -R -- "$tpf_m_dir/." "$tpf_m_at/"; then
			tpf_fail mount 1 "copying $tpf_m_url ($tpf_m_dir) to $tpf_m_at failed"
		fi
		return 0
	fi
	if [ -d "$tpf_m_at" ] && [ ! -L "$tpf_m_at" ]; then
		rmdir -- "$tpf_m_at" 2>/dev/null ||
			tpf_fail mount 1 "$tpf_m_at is a directory with files in it: cannot mount $tpf_m_url there"
	fi
	ln -sfn -- "$tpf_m_dir" "$tpf_m_at" ||
		tpf_fail mount 1 "cannot link $tpf_m_at to $tpf_m_dir (the local stand-in for $tpf_m_url)"
}

# Every mount, in the fleet file's order, and the local checkpoint
# directory. A failure ends the start (step=mount) with the tool's own
# last line.
tpf_mounts() {
	if [ -n "${TPUFORM_CHECKPOINT_DIR:-}" ] && [ -n "${TPUFORM_LOCAL_GCS:-}" ]; then
		mkdir -p -- "$TPUFORM_CHECKPOINT_DIR" ||
			tpf_fail mount 1 "cannot create $TPUFORM_CHECKPOINT_DIR (checkpoint_dir)"
	fi
	tpf_unmount_all
	tpf_n=${TPUFORM_MOUNTS:-0}
	[ "$tpf_n" -gt 0 ] || return 0
	: >"$tpf_logs/mount.log"
	tpf_i=1
	while [ "$tpf_i" -le "$tpf_n" ]; do
		tpf_mount_get "$tpf_i"
		# A read-only copy's files, made writable for this start's copy
		# to replace them (cp and a non-root rsync would be refused).
		if [ "$tpf_m_mode" = copy ] && [ "$tpf_m_ro" = 1 ] && [ -d "$tpf_m_at" ] && [ ! -L "$tpf_m_at" ]; then
			chmod -R u+w -- "$tpf_m_at" 2>/dev/null
		fi
		if [ -n "${TPUFORM_LOCAL_GCS:-}" ]; then
			tpf_mount_local
		else
			[ "$tpf_m_mode" = copy ] || tpf_gcsfuse_install
			tpf_unmount_one "$tpf_m_at"
			tpf_mkdir_ours "$tpf_m_at"
			if [ "$tpf_m_mode" = copy ]; then
				tpf_mount_copy
			else
				tpf_mount_fuse
			fi
		fi
		# read_only copy: the files, not the directories (the next
		# start's sync writes into them).
		if [ "$tpf_m_mode" = copy ] && [ "$tpf_m_ro" = 1 ]; then
			find "$tpf_m_at" -type f -exec chmod a-w {} + 2>/dev/null
		fi
		tpf_i=$((tpf_i + 1))
	done
}

# The FUSE mounts this script made, as run/mounts lists them (one path a
# line: paths have no newlines), go on stop and before the next start's
# mounts, so a mount the fleet file no longer names does not linger.
tpf_unmount_all() {
	[ -f "$tpf_rundir/mounts" ] || return 0
	while read -r tpf_p; do
		# stdin is the list: the unmount commands must not read it
		[ -z "$tpf_p" ] || tpf_unmount_one "$tpf_p" </dev/null
	done <"$tpf_rundir/mounts"
	rm -f -- "$tpf_rundir/mounts"
}

tpf_head() {
	if command -v git >/dev/null 2>&1; then
		git -C "$tpf_src" rev-parse --verify --quiet 'HEAD^{commit}' 2>/dev/null
	else
		tpf_read "$tpf_src/.git/HEAD"
	fi
}

# One attempt to make src a checkout of $TPUFORM_COMMIT from the repo or
# the bundle. src is initialised in place rather than cloned, so files a
# previous job left there do not make git refuse.
tpf_fetch_once() {
	if [ ! -d "$tpf_src/.git" ]; then
		mkdir -p -- "$tpf_src" && git -C "$tpf_src" init --quiet || return 1
	fi
	if ! git -C "$tpf_src" cat-file -e "$TPUFORM_COMMIT^{commit}" 2>/dev/null; then
		if [ "$TPUFORM_SOURCE" = bundle ]; then
			git -C "$tpf_src" fetch --quiet --no-tags "$tpf_bundle" \
				'+refs/heads/tpuform:refs/tpuform/bundle' || return 1
		else
			if git -C "$tpf_src" remote get-url origin >/dev/null 2>&1; then
				git -C "$tpf_src" remote set-url origin "$TPUFORM_REPO" || return 1
			else
				git -C "$tpf_src" remote add origin "$TPUFORM_REPO" || return 1
			fi
			git -C "$tpf_src" fetch --quiet --tags origin || return 1
			if ! git -C "$tpf_src" cat-file -e "$TPUFORM_COMMIT^{commit}" 2>/dev/null; then
				# Not on any branch or tag: servers that allow it
				# (GitHub does) serve a commit by id.
				git -C "$tpf_src" fetch --quiet origin "$TPUFORM_COMMIT" || return 1
			fi
		fi
	fi
	git -C "$tpf_src" -c advice.detachedHead=false checkout --quiet --force --detach \
		"$TPUFORM_COMMIT" || return 1
	if [ "$TPUFORM_SOURCE" = clone ] && [ -f "$tpf_src/.gitmodules" ]; then
		git -C "$tpf_src" submodule --quiet update --init --recursive || return 1
	fi
	return 0
}

tpf_source() {
	case $TPUFORM_SOURCE in
	none)
		mkdir -p -- "$tpf_src" || tpf_fail source 1 "cannot create $tpf_src"
		;;
	present)
		tpf_h=$(tpf_head)
		if [ "$tpf_h" != "$TPUFORM_COMMIT" ]; then
			tpf_fail source 1 "$tpf_src is at '${tpf_h:-nothing}', expected commit $TPUFORM_COMMIT"
		fi
		;;
	clone | bundle)
		command -v git >/dev/null 2>&1 ||
			tpf_fail source 127 "'git' not found on the worker: install it (apt-get install git)"
		if [ "$TPUFORM_SOURCE" = bundle ] && [ ! -f "$tpf_bundle" ]; then
			tpf_fail source 1 "$tpf_bundle is missing: it should have been uploaded by tpuform"
		fi
		tpf_n=1
		: >"$tpf_logs/source.log"
		while ! tpf_fetch_once >>"$tpf_logs/source.log" 2>&1 9>&-; do
			if [ "$tpf_n" -ge 4 ]; then
				tail -n 20 -- "$tpf_logs/source.log" | sed 's/^/  | /'
				tpf_fail source 1 "cannot check out commit $TPUFORM_COMMIT of '$TPUFORM_REPO' (tried $tpf_n times; is it pushed?)"
			fi
			sleep $((tpf_n * 2))
			tpf_n=$((tpf_n + 1))
		done
		;;
	*)
		tpf_fail source 2 "unknown source mode '$TPUFORM_SOURCE'"
		;;
	esac
}

# Run setup once per (commit, setup): the marker's name hashes both.
tpf_setup() {
	[ -n "$TPUFORM_SETUP" ] || return 0
	tpf_key=$(printf '%s\n%s' "$TPUFORM_COMMIT" "$TPUFORM_SETUP" | sha256sum | cut -c1-64)
	tpf_marker=$tpf_rundir/setup.$tpf_key
	[ -f "$tpf_marker" ] && return 0
	(
		if [ -f "$tpf_secrets" ]; then
			# shellcheck source=/dev/null
			. "$tpf_secrets"
		fi
		cd -P -- "$tpf_src" || exit 126
		exec sh -c "$TPUFORM_SETUP"
	) </dev/null >"$tpf_logs/setup.log" 2>&1 9>&-
	tpf_code=$?
	if [ "$tpf_code" -ne 0 ]; then
		printf 'tpuform: last lines of %s:\n' "$tpf_logs/setup.log"
		tail -n 20 -- "$tpf_logs/setup.log" | sed 's/^/  | /'
		tpf_fail setup "$tpf_code" "setup exited with status $tpf_code"
	fi
	: >"$tpf_marker"
}

# Keep the newest 20 run logs.
tpf_prune_logs() {
	# shellcheck disable=SC2012 # our own names: no spaces or newlines
	ls -1t -- "$tpf_logs"/run-*.log 2>/dev/null | tail -n +21 | while read -r tpf_f; do
		rm -f -- "$tpf_f"
	done
}

tpf_start() {
	tpf_hash=sha256:$(sha256sum <"$tpf_self" | cut -c1-64)
	if [ "$1" = start ] && tpf_alive &&
		[ "$(tpf_read "$tpf_rundir/script.sha256")" = "$tpf_hash" ]; then
		tpf_say result=unchanged
		return 0
	fi
	command -v screen >/dev/null 2>&1 ||
		tpf_fail session 127 "'screen' not found on the worker: install it (apt-get install screen)"
	# secrets.env is uploaded with the script: a mismatch means a stale
	# or edited file, and the job would run with the wrong secrets.
	if [ -n "$TPUFORM_SECRETS_HASH" ]; then
		tpf_sh=sha256:$(cat -- "$tpf_secrets" 2>/dev/null | sha256sum | cut -c1-64)
		if [ "$tpf_sh" != "$TPUFORM_SECRETS_HASH" ]; then
			tpf_fail secrets 1 "$tpf_secrets does not match this script (expected $TPUFORM_SECRETS_HASH): run tpuform apply again"
		fi
	fi
	# A job still running is stopped by tpuform (a restart, a new
	# script): it is told so, as for a notice.
	tpf_stop restarted
	rm -f -- "$tpf_rundir/script.sha256" "$tpf_rundir/exit_code" "$tpf_heartbeat" \
		"$tpf_rundir"/life.*
	tpf_preflight_tpu
	tpf_mounts
	tpf_source
	tpf_setup
	tpf_preflight_user
	tpf_prune_logs
	if ! tpf_put "$tpf_rundir/script.sha256" "$tpf_hash" ||
		! tpf_put "$tpf_rundir/retry" "$TPUFORM_RETRY"; then
		tpf_fail session 1 "cannot write $tpf_rundir"
	fi
	# stdio to /dev/null: whoever runs us reads our output to EOF (a pipe,
	# an SSH channel) and the screen daemon must not hold it open.
	screen -dmS "$TPUFORM_SESSION" sh "$tpf_self" job </dev/null >/dev/null 2>&1 9>&-
	tpf_code=$?
	[ "$tpf_code" -eq 0 ] || tpf_fail session "$tpf_code" "screen -dmS $TPUFORM_SESSION failed"
	# The job's wrapper writes job.pid first thing: proof the session
	# runs, without `screen -ls`, which sleeps a second on a socket that
	# is not answering yet. That is asked only every 5 s, and the session
	# is given 30 s in all: on a loaded machine (4,096 emulated workers
	# on 2 cores) a session took longer than 5 s to start.
	tpf_i=0
	until [ -f "$tpf_rundir/job.pid" ] || [ -f "$tpf_rundir/exit_code" ]; do
		if [ "$tpf_i" -gt 0 ] && [ $((tpf_i % 100)) -eq 0 ]; then
			tpf_alive && break
			[ "$tpf_i" -ge 600 ] &&
				tpf_fail session 1 "screen session $TPUFORM_SESSION did not appear within 30 s"
		fi
		sleep 0.05
		tpf_i=$((tpf_i + 1))
	done
	tpf_say result=started
}

# ---- disruptions (issue 21): notices from the metadata server, passed on
# to the job as $TPUFORM_DISRUPTION and a signal ------------------------

# The signal the fleet chose (on_disruption.signal, default TERM), without
# "SIG".
tpf_dsig() {
	tpf_s=${TPUFORM_DISRUPTION_SIGNAL:-TERM}
	echo "${tpf_s#SIG}"
}

# tpf_disrupt PGID REASON SECONDS [DEADLINE]: tell the job in process group
# PGID that its VM goes in SECONDS (or at DEADLINE, seconds since the
# epoch): write $TPUFORM_DISRUPTION (reason=, deadline=
# in seconds since the epoch and RFC 3339, signal=), then send the chosen
# signal to the group. The file comes first, so a job that reads it in
# its handler finds it.
tpf_disrupt() {
	tpf_now=$(date +%s)
	tpf_dl=${4:-$((tpf_now + $3))}
	tpf_dl3339=$(date -u -d "@$tpf_dl" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r "$tpf_dl" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
	printf 'reason=%s\ndeadline=%s\ndeadline_rfc3339=%s\nsignal=SIG%s\n' "$2" "$tpf_dl" \
		"$tpf_dl3339" "$(tpf_dsig)" >"$tpf_rundir/disruption.tmp.$$" &&
		mv -f -- "$tpf_rundir/disruption.tmp.$$" "$tpf_rundir/disruption"
	kill -s "$(tpf_dsig)" -- "-$1" 2>/dev/null
}

# One value of the metadata server, into tpf_md_val (and its ETag into
# tpf_md_etag): GET $1 (e.g. instance/preempted); when tpf_md_etag is set,
# with wait_for_change=true and last_etag, as Google's docs describe
# (https://cloud.google.com/compute/docs/metadata/querying-metadata#waitforchange,
# https://cloud.google.com/compute/docs/instances/create-use-preemptible#detecting_if_an_instance_was_preempted,
# https://cloud.google.com/compute/docs/instances/monitor-plan-host-maintenance-event):
# the request returns when the value's ETag is no longer the one given
# (at once if it changed since), or after timeout_sec with the same value.
# The first call (no ETag yet) does not wait: a notice already there is
# seen at once. For tests, TPUFORM_METADATA_DIR holds the values as files
# (the local provider's ~/metadata), polled every second.
tpf_md_get() {
	if [ -n "${TPUFORM_METADATA_DIR:-}" ]; then
		sleep 1
		tpf_md_val=
		{ read -r tpf_md_val <"$TPUFORM_METADATA_DIR/$1"; } 2>/dev/null
		return 0
	fi
	tpf_md_q=
	[ -z "${tpf_md_etag:-}" ] ||
		tpf_md_q="?wait_for_change=true&timeout_sec=60&last_etag=$tpf_md_etag"
	# -i: the ETag header, then a blank line, then the value.
	tpf_md_out=$(curl -s -f -i -m 70 -H 'Metadata-Flavor: Google' \
		"${TPUFORM_METADATA_URL:-http://metadata.google.internal/computeMetadata/v1}/$1$tpf_md_q" 2>/dev/null |
		tr -d '\r')
	[ -n "$tpf_md_out" ] || return 1
	tpf_md_etag=$(printf '%s\n' "$tpf_md_out" | sed -n 's/^[Ee][Tt][Aa][Gg]: *//p' | head -n 1)
	tpf_md_val=$(printf '%s\n' "$tpf_md_out" | sed '1,/^$/d' | head -n 1)
	[ -n "$tpf_md_etag" ] || sleep 1 # a server without ETags: do not spin
	return 0
}

# Is a metadata server there to watch? The test directory, or one GET.
tpf_md_here() {
	[ -n "${TPUFORM_METADATA_DIR:-}" ] && return 0
	command -v curl >/dev/null 2>&1 || return 1
	curl -s -f -m 2 -H 'Metadata-Flavor: Google' \
		"${TPUFORM_METADATA_URL:-http://metadata.google.internal/computeMetadata/v1}/instance/id" >/dev/null 2>&1
}

# tpf_notice_loop PGID KEY: until the job's wrapper (PGID) is gone, watch metadata
# KEY and pass its notice on. instance/preempted turns TRUE when a spot or
# preemptible VM is preempted (about 30 s before it stops);
# instance/maintenance-event leaves NONE about 60 s before a host
# maintenance event (MIGRATE_ON_HOST_MAINTENANCE, TERMINATE_ON_HOST_MAINTENANCE).
tpf_notice_loop() {
	tpf_fails=0
	tpf_md_etag=
	while kill -s 0 "$1" 2>/dev/null; do
		if ! tpf_md_get "$2"; then
			# The server did not answer: try again, slowly after 5 misses.
			tpf_fails=$((tpf_fails + 1))
			[ "$tpf_fails" -lt 5 ] || sleep 10
			continue
		fi
		tpf_fails=0
		case $2:$tpf_md_val in
		*:) ;; # no value (the test directory has no such file yet)
		instance/preempted:TRUE)
			tpf_disrupt "$1" preempted 30
			return 0
			;;
		instance/maintenance-event:NONE) ;;
		instance/maintenance-event:*)
			tpf_disrupt "$1" "maintenance:$tpf_md_val" 60
			return 0
			;;
		esac
	done
}

# tpf_tell REASON DEADLINE (the disrupt verb): a notice tpuform learnt
# from the API rather than the VM (Node.upcomingMaintenance: reason
# maintenance, DEADLINE the window's start in seconds since the epoch),
# passed on as the metadata server's are. The same notice twice (a watch
# that restarted) is said once: result=unchanged. No job running:
# result=no_job.
tpf_tell() {
	tpf_is_number "$2" || tpf_fail disrupt 2 "disrupt: expected a deadline in seconds since the epoch, got '$2'"
	tpf_pg=$(tpf_read "$tpf_rundir/job.pid")
	if ! tpf_is_number "$tpf_pg" || [ -f "$tpf_rundir/exit_code" ] || ! tpf_group_running "$tpf_pg"; then
		tpf_say result=no_job
		return 0
	fi
	if [ "$(sed -n 's/^reason=//p' "$tpf_rundir/disruption" 2>/dev/null)" = "$1" ] &&
		[ "$(sed -n 's/^deadline=//p' "$tpf_rundir/disruption" 2>/dev/null)" = "$2" ]; then
		tpf_say result=unchanged
		return 0
	fi
	tpf_left=$(($2 - $(date +%s)))
	[ "$tpf_left" -ge 0 ] || tpf_left=0
	tpf_disrupt "$tpf_pg" "$1" "$tpf_left" "$2"
	tpf_say result=told
}

# Start the notice watchers for the job in group $1 (its wrapper's pid),
# in the background, when there is a metadata server to watch. They end
# with the wrapper.
tpf_notices() {
	(
		tpf_md_here || exit 0
		tpf_notice_loop "$1" instance/maintenance-event &
		tpf_notice_loop "$1" instance/preempted
	) </dev/null >/dev/null 2>&1 8>&- &
}

# The job's last checkpoint on this VM: the newest of the file
# $TPUFORM_CHECKPOINT_FILE (run/checkpoint, its first line) and the last
# "TPUFORM_CHECKPOINT=<step or path>" line of the current log (its last
# MiB). Nothing when there is none.
tpf_checkpoint() {
	tpf_c=
	if [ -f "$tpf_rundir/checkpoint" ]; then
		{ IFS= read -r tpf_c <"$tpf_rundir/checkpoint"; } 2>/dev/null
	fi
	if [ -z "$tpf_c" ] && [ -e "$tpf_logs/current.log" ]; then
		tpf_c=$(tail -c 1048576 -- "$tpf_logs/current.log" 2>/dev/null | awk '
			/^TPUFORM_CHECKPOINT=[^[:cntrl:]]*$/ { c = substr($0, 20) }
			END { printf "%s", c }')
	fi
	printf '%.300s' "$tpf_c"
}

# The job wrapper's life lock (issue 28), run/life.PGID: an exclusive
# flock(1) on fd 8, which this shell holds until it ends, however it ends
# (the kernel drops the lock of a killed process too). A long wait sleeps
# in flock on it rather than ticking every second (tpf_wait). The file is
# made under another name and renamed once locked, so a life file always
# has its lock while the wrapper lives. fd 8 is closed for every child
# that outlives a moment (the job, the notice watchers): a job that
# outlived its wrapper must not hold the lock. Without flock(1), no lock:
# the waits tick once a second, as before.
tpf_life_lock() {
	command -v flock >/dev/null 2>&1 || return 0
	tpf_lf=$tpf_rundir/life.$$
	exec 8>"$tpf_lf.tmp"
	if flock -n 8 2>/dev/null && mv -f -- "$tpf_lf.tmp" "$tpf_lf"; then
		return 0
	fi
	exec 8>&-
	rm -f -- "$tpf_lf.tmp"
}

# Inside the screen session: run the job, log it, record its exit status.
tpf_job() {
	tpf_ts=$(date -u +%Y%m%dT%H%M%SZ)
	tpf_name=run-$TPUFORM_RETRY-$tpf_ts.log
	tpf_log=$tpf_logs/$tpf_name
	# The checkpoint the last run on this VM reported (before current.log
	# moves to the new run); on a VM without one (a replacement: its disk
	# is new), the one tpuform's state recorded for the node, which start
	# was given as TPUFORM_SAVED_CHECKPOINT (docs/recovery.md).
	tpf_last_ck=$(tpf_checkpoint)
	[ -n "$tpf_last_ck" ] || tpf_last_ck=${TPUFORM_SAVED_CHECKPOINT:-}
	rm -f -- "$tpf_rundir/disruption" "$tpf_rundir/checkpoint"
	# What this run was given, for the env verb (tpuform exec). The job
	# sees it as TPUFORM_LAST_CHECKPOINT only: the hand-on variable is
	# provisioning's, not the job's.
	tpf_put "$tpf_rundir/last_checkpoint" "$tpf_last_ck"
	unset TPUFORM_SAVED_CHECKPOINT
	# screen makes us a session and process group leader: $$ is the
	# group that stop kills.
	tpf_put "$tpf_rundir/screen.pid" "$PPID"
	tpf_life_lock
	tpf_put "$tpf_rundir/job.pid" "$$"
	printf '# tpuform: node %s worker %s retry %s commit %s started %s\n' \
		"$TPUFORM_NODE" "$TPUFORM_WORKER_ID" "$TPUFORM_RETRY" \
		"${TPUFORM_COMMIT:-none}" "$tpf_ts" >>"$tpf_log"
	ln -s -- "$tpf_name" "$tpf_logs/current.log.tmp.$$" &&
		mv -f -- "$tpf_logs/current.log.tmp.$$" "$tpf_logs/current.log"
	(
		if [ -f "$tpf_secrets" ]; then
			# shellcheck source=/dev/null
			. "$tpf_secrets"
		fi
		# Touch it (e.g. every step) to show progress without printing:
		# status counts a job stalled when neither it nor the log moves.
		TPUFORM_HEARTBEAT=$tpf_heartbeat
		# Appears (reason=, deadline=) when the VM is about to go: a
		# preemption or maintenance notice, or a stop by tpuform.
		TPUFORM_DISRUPTION=$tpf_rundir/disruption
		# Write where you checkpointed here (or print a line
		# TPUFORM_CHECKPOINT=<step or path>): the next start gets it.
		TPUFORM_CHECKPOINT_FILE=$tpf_rundir/checkpoint
		TPUFORM_LAST_CHECKPOINT=$tpf_last_ck
		# As a job in the foreground would: Ctrl-C in an attached screen.
		trap - INT QUIT
		export TPUFORM_HEARTBEAT TPUFORM_DISRUPTION TPUFORM_CHECKPOINT_FILE \
			TPUFORM_LAST_CHECKPOINT
		cd -P -- "$tpf_src" || exit 126
		exec sh -c "$TPUFORM_RUN"
	) </dev/null >>"$tpf_log" 2>&1 8>&- &
	tpf_jp=$!
	# The disruption signal (and stop's) is for the job: this shell
	# outlives it to record the exit status. A trap, not an ignore, so
	# the job (already started) and the watchers keep the default.
	trap ':' TERM "$(tpf_dsig)"
	tpf_notices "$$"
	while :; do
		wait "$tpf_jp"
		tpf_rc=$?
		kill -s 0 "$tpf_jp" 2>/dev/null || break
	done
	tpf_put "$tpf_rundir/exit_code" "$tpf_rc"
	rm -f -- "$tpf_rundir/life.$$"
	exec 8>&-
	tpf_wake
}

# The last non-blank line of the log's last 4 KiB as a terminal shows it:
# progress bars redraw with \r, so the last redraw is the line to show,
# without terminal escapes and control characters. One tail, tr and awk
# (it was six processes; issue 28).
tpf_last_log() {
	[ -e "$tpf_logs/current.log" ] || return 0
	# Every control character but \n, \r and ESC goes first; awk splits
	# at \r and drops the escape sequences, then the other ESCs.
	tail -c 4096 -- "$tpf_logs/current.log" 2>/dev/null |
		tr -d '\000-\011\013\014\016-\032\034-\037\177' |
		awk 'BEGIN { esc = "\033" }
		{
			n = split($0, seg, "\r")
			for (i = 1; i <= n; i++) {
				s = seg[i]
				gsub(esc "\\[[0-9;?]*[A-Za-z]", "", s)
				gsub(esc, "", s)
				if (s ~ /[^[:space:]]/)
					last = s
			}
		}
		END { if (last != "") print last }'
}

# tpf_stall: seconds since the job last showed progress: its log grew
# (the log's mtime) or it touched $TPUFORM_HEARTBEAT, whichever is later.
# Empty when neither can be read. tpuform compares it with stall_timeout.
# One stat(1) for both files (GNU stat, then BSD stat's flags), and it
# sets the variable rather than printing, so no subshell.
tpf_stalled_for() {
	tpf_stall=
	set --
	[ ! -e "$tpf_logs/current.log" ] || set -- "$tpf_logs/current.log"
	[ ! -e "$tpf_heartbeat" ] || set -- "$@" "$tpf_heartbeat"
	[ "$#" -gt 0 ] || return 0
	tpf_mt=
	for tpf_m in $(stat -L -c %Y -- "$@" 2>/dev/null || stat -L -f %m -- "$@" 2>/dev/null); do
		tpf_is_number "$tpf_m" || continue
		if [ -z "$tpf_mt" ] || [ "$tpf_m" -gt "$tpf_mt" ]; then
			tpf_mt=$tpf_m
		fi
	done
	[ -n "$tpf_mt" ] || return 0
	tpf_now=$(date +%s)
	tpf_is_number "$tpf_now" || return 0
	if [ "$tpf_now" -gt "$tpf_mt" ]; then
		tpf_stall=$((tpf_now - tpf_mt))
	else
		tpf_stall=0
	fi
}

# tpf_progress: what the job says of its progress (docs/ledger.md): its
# step, from the file $TPUFORM_HEARTBEAT.step or the last "TPUFORM_STEP=N"
# in the log's last 64 KiB, and the last "checkpoint saved at step N" there,
# or else the checkpoint the job reported the resume protocol's way
# ($tpf_ck, from tpf_checkpoint) when that is a step number: one report
# serves both the ledger and TPUFORM_LAST_CHECKPOINT (docs/recovery.md).
tpf_progress() {
	tpf_step=
	tpf_ckpt=
	if [ -f "$tpf_heartbeat.step" ]; then
		tpf_step=$(head -c 32 -- "$tpf_heartbeat.step" | tr -dc '0-9')
	fi
	if [ -f "$tpf_logs/current.log" ]; then
		# Both in one pass: "STEP CKPT" (either may be empty); the last
		# of each on the last line that has one.
		tpf_found=$(tail -c 65536 -- "$tpf_logs/current.log" 2>/dev/null | tr -d '\000' | awk '
			{
				s = $0
				while (match(s, /TPUFORM_STEP=[0-9]+/)) {
					step = substr(s, RSTART + 13, RLENGTH - 13)
					s = substr(s, RSTART + RLENGTH)
				}
				s = $0
				while (match(s, /[Cc]heckpoint saved at step [0-9]+/)) {
					m = substr(s, RSTART, RLENGTH)
					sub(/.* /, "", m)
					ck = m
					s = substr(s, RSTART + RLENGTH)
				}
			}
			END { print step " " ck }')
		[ -n "$tpf_step" ] || tpf_step=${tpf_found%% *}
		tpf_ckpt=${tpf_found#* }
	fi
	if [ -z "$tpf_ckpt" ]; then
		case ${tpf_ck:-} in
		'' | *[!0-9]*) ;;
		*) tpf_ckpt=$tpf_ck ;;
		esac
	fi
	[ -z "$tpf_step" ] || tpf_say "step=$(printf '%.18s' "$tpf_step")"
	[ -z "$tpf_ckpt" ] || tpf_say "checkpoint_step=$(printf '%.18s' "$tpf_ckpt")"
}

tpf_status() {
	tpf_code=-1
	# The exit status first: the wrapper writes it as the job ends, a
	# moment before its screen session closes.
	if [ -f "$tpf_rundir/exit_code" ]; then
		tpf_state=exited
		tpf_code=$(tpf_read "$tpf_rundir/exit_code")
		tpf_is_number "$tpf_code" || tpf_code=-1
	elif tpf_alive; then
		tpf_state=alive
	elif [ -f "$tpf_rundir/script.sha256" ] && [ -f "$tpf_rundir/job.pid" ]; then
		# A job's wrapper wrote job.pid, and its session is gone. Not
		# while a start is between writing script.sha256 and the new
		# wrapper's job.pid (stop removed the old one): a wait that
		# answered "dead" then had watch restart the job it had just
		# started (t560 in CI).
		tpf_state=dead
	else
		tpf_state=none
	fi
	tpf_say "session=$tpf_state"
	tpf_say "exit_code=$tpf_code"
	if [ "$tpf_state" = alive ]; then
		tpf_stalled_for
		[ -z "$tpf_stall" ] || tpf_say "stalled_for=$tpf_stall"
	fi
	tpf_ck=$(tpf_checkpoint)
	[ "$tpf_state" = none ] || tpf_progress
	[ -z "$tpf_ck" ] || tpf_say "checkpoint=$tpf_ck"
	tpf_d=
	[ ! -f "$tpf_rundir/disruption" ] || tpf_d=$(sed -n 's/^reason=//p' "$tpf_rundir/disruption" 2>/dev/null)
	[ -z "$tpf_d" ] || tpf_say "disruption=$tpf_d"
	tpf_say "script=$(tpf_read "$tpf_rundir/script.sha256")"
	tpf_say "last_log=$(tpf_last_log)"
}

# ---- the wait verb (issue 21): tpuform learns of a job's end without a
# periodic probe --------------------------------------------------------

# The job's identity and state in one word, into tpf_tok, with builtins
# only (it runs every second): "none" (never started, or stopped),
# "PGID:alive", "PGID:exited:CODE" or "PGID:dead" (its process group is
# gone without an exit status: the session was killed).
tpf_token() {
	tpf_tpg=
	tpf_tcode=
	{ read -r tpf_tpg <"$tpf_rundir/job.pid"; } 2>/dev/null
	if { read -r tpf_tcode <"$tpf_rundir/exit_code"; } 2>/dev/null; then
		tpf_tok=${tpf_tpg:-0}:exited:$tpf_tcode
	elif ! tpf_is_number "$tpf_tpg"; then
		tpf_tok=none
	elif kill -s 0 -- "-$tpf_tpg" 2>/dev/null; then
		tpf_tok=$tpf_tpg:alive
	else
		tpf_tok=$tpf_tpg:dead
	fi
}

# Wake every waiter now (the job's wrapper calls it when the job ended).
# Opening a FIFO read-write never blocks (Linux), so a waiter that is
# gone costs nothing; one between two reads is woken by its next tick.
tpf_wake() {
	for tpf_f in "$tpf_rundir"/wait.*; do
		if [ -p "$tpf_f" ]; then
			printf x 1<>"$tpf_f" 2>/dev/null
		fi
	done
}

# tpf_wait TOKEN SECONDS [BEAT]: block until the job's token differs from
# TOKEN, or SECONDS pass, then print the status and "TPUFORM token=...".
# The wait sleeps in a read of a FIFO of its own, which the job's wrapper
# writes to when the job ends (at once) and a ticker every second (a
# session that died without its wrapper); without mkfifo it polls.
# With BEAT (seconds, issue 28) the wait lasts the job's life: SECONDS is
# not counted (it is for bootstraps older than BEAT, which answer after
# it as before), and every BEAT seconds the same record (status and token)
# goes out as a heartbeat, so that the reader knows the connection and
# the job's progress are current. A connection that closed ends the wait
# at its next heartbeat (the write fails: SIGPIPE). While the job's
# wrapper holds its life lock, the wait sleeps on that lock instead
# (tpf_wait_life): no process a second. With BEAT and an empty TOKEN (a
# new connection) the record goes out at once, and the wait goes on from
# the token it gave.
tpf_wait() {
	tpf_want=$1
	tpf_left=${2:-10}
	tpf_is_number "$tpf_left" || tpf_left=10
	tpf_beat=${3:-0}
	tpf_is_number "$tpf_beat" || tpf_beat=0
	tpf_since=0
	tpf_fifo=$tpf_rundir/wait.$$
	tpf_mark=$tpf_rundir/beat.$$
	tpf_rec=
	tpf_fl=
	[ ! -e "$tpf_fifo" ] || rm -f -- "$tpf_fifo"
	mkfifo -m 600 "$tpf_fifo" 2>/dev/null || tpf_fifo=
	tpf_ticker=
	trap 'rm -f -- "${tpf_fifo:-/nonexistent}" "$tpf_mark"; kill $tpf_ticker $tpf_fl 2>/dev/null' EXIT
	trap 'exit 1' HUP INT TERM PIPE
	tpf_token
	# An empty TOKEN with BEAT (a new connection's first wait): the record
	# at once, as a first heartbeat, then the long wait on the token it
	# gave. So attaching is one exec, not an answer that ends and a second
	# wait (at 1,024 workers closing those answers was most of watch's
	# attach, issue 28), and the first beat is the cheap one when nothing
	# changed. A job already ended is still said at once: its token is
	# not the one the client had.
	if [ -z "$tpf_want" ] && [ "$tpf_beat" -gt 0 ]; then
		tpf_beat_record
		tpf_want=$tpf_tok
	fi
	if [ "$tpf_tok" = "$tpf_want" ] && [ "$tpf_beat" -gt 0 ]; then
		tpf_wait_life
	fi
	if [ "$tpf_tok" = "$tpf_want" ] && [ -n "$tpf_fifo" ]; then
		# One ticker for the whole wait: a session killed with its
		# wrapper wakes no one, so look once a second anyway. It ends
		# with the wait (its FIFO gone, or the wait's shell).
		(
			while [ -p "$tpf_fifo" ] && kill -s 0 $$; do
				sleep 1
				if [ -p "$tpf_fifo" ]; then
					printf t 1<>"$tpf_fifo"
				fi
			done
		) </dev/null >/dev/null 2>&1 &
		tpf_ticker=$!
	fi
	# Each pass is about a second (a tick), or ends the wait (a wake).
	while [ "$tpf_tok" = "$tpf_want" ] && { [ "$tpf_beat" -gt 0 ] || [ "$tpf_left" -gt 0 ]; }; do
		if [ -n "$tpf_fifo" ]; then
			read -r _ <"$tpf_fifo"
		else
			sleep 1
		fi
		tpf_left=$((tpf_left - 1))
		tpf_since=$((tpf_since + 1))
		tpf_token
		if [ "$tpf_beat" -gt 0 ] && [ "$tpf_since" -ge "$tpf_beat" ] && [ "$tpf_tok" = "$tpf_want" ]; then
			tpf_since=0
			tpf_status
			tpf_say "token=$tpf_tok"
		fi
	done
	tpf_status
	tpf_say "token=$tpf_tok"
}

# The part of a long wait (BEAT > 0) while the job's wrapper holds its life
# lock (tpf_life_lock): sleep in flock(1) on that lock, at most BEAT seconds
# at a time, with a heartbeat (tpf_beat_record) each time the lock was still
# held. The lock is freed when the wrapper ends, however it ends: after the
# job's exit status is written (the token changes), or killed with its
# session (SIGKILL too); so nothing else needs watching meanwhile. Returns
# when the token changed, or when the lock is free or there is none (an
# older wrapper, no flock(1)): the ticker then looks once a second, as
# before, for a job that outlived its wrapper. So a waiting worker starts
# one process a beat instead of one `sleep` a second, and has two processes
# (this shell and flock) instead of three: on a TPU VM that is nothing
# either way, but one machine emulating 4,096 workers could not fork 4,096
# `sleep`s a second (issue 28). flock runs in the background and is waited
# for, so that a signal's trap runs at once (and kills it).
tpf_wait_life() {
	tpf_is_number "$tpf_tpg" || return 0
	tpf_lf=$tpf_rundir/life.$tpf_tpg
	[ -f "$tpf_lf" ] && command -v flock >/dev/null 2>&1 || return 0
	while [ "$tpf_tok" = "$tpf_want" ]; do
		# 75: the lock is still held after BEAT seconds (-E, the exit
		# status of a timeout); 0: it is free; anything else (the
		# file went, a flock without -E): back to ticking.
		flock -s -w "$tpf_beat" -E 75 7 7<"$tpf_lf" </dev/null >/dev/null 2>&1 &
		tpf_fl=$!
		wait "$tpf_fl"
		tpf_rc=$?
		tpf_fl=
		tpf_token
		[ "$tpf_rc" -eq 75 ] || return 0
		if [ "$tpf_tok" = "$tpf_want" ]; then
			tpf_beat_record
		fi
	done
}

# tpf_unchanged: is every file the status reads (those that exist) older
# than the marker $tpf_mark? Builtins only. The same time stamp counts as
# a change (a coarse clock).
tpf_unchanged() {
	[ -f "$tpf_mark" ] || return 1
	for tpf_f in "$tpf_logs/current.log" "$tpf_heartbeat" "$tpf_heartbeat.step" \
		"$tpf_rundir/checkpoint" "$tpf_rundir/disruption" "$tpf_rundir/script.sha256" \
		"$tpf_rundir/exit_code" "$tpf_rundir/job.pid"; do
		# -nt: dash, bash, ksh, busybox and POSIX.1-2024; a test that
		# does not know it fails, which counts as a change.
		# shellcheck disable=SC3013
		[ ! -e "$tpf_f" ] || [ "$tpf_mark" -nt "$tpf_f" ] || return 1
	done
	return 0
}

# A heartbeat of a wait whose job's wrapper still holds its lock (so its
# session is alive): the status and the token, as tpf_status says them.
# When none of the files it reads changed since the last heartbeat's
# marker, the last record is said again with only stalled_for moved on by
# the clock: one `date` instead of the status's 30-odd processes (an idle
# job's heartbeat). The marker is touched before the status is gathered,
# so a change made meanwhile shows at the next beat.
tpf_beat_record() {
	tpf_now=$(date +%s)
	if [ -n "$tpf_rec" ] && tpf_is_number "$tpf_now" && tpf_unchanged; then
		case $tpf_rec in
		*"TPUFORM stalled_for="*)
			tpf_rest=${tpf_rec#*TPUFORM stalled_for=}
			tpf_n=${tpf_rest%%[!0-9]*}
			tpf_rest=${tpf_rest#"$tpf_n"}
			tpf_is_number "$tpf_n" || tpf_n=0
			printf '%sTPUFORM stalled_for=%s%s\n' "${tpf_rec%%TPUFORM stalled_for=*}" \
				$((tpf_n + tpf_now - tpf_rec_at)) "$tpf_rest"
			;;
		*) printf '%s\n' "$tpf_rec" ;;
		esac
		return 0
	fi
	: >"$tpf_mark"
	tpf_rec_at=$tpf_now
	tpf_rec=$(
		tpf_status
		tpf_say "token=$tpf_tok"
	)
	tpf_is_number "$tpf_rec_at" || tpf_rec=
	printf '%s\n' "$tpf_rec"
}

# tpf_show_logs N FILE WHAT: the last N lines of FILE (0: all).
tpf_show_logs() {
	tpf_is_number "$1" || {
		printf 'tpuform: logs: expected a number of lines, got %s\n' "$1" >&2
		exit 2
	}
	if [ ! -e "$2" ]; then
		printf 'tpuform: no %s yet (%s)\n' "$3" "$2" >&2
		exit 1
	fi
	if [ "$1" -eq 0 ]; then
		cat -- "$2"
	else
		tail -n "$1" -- "$2"
	fi
}

# Serialise the verbs that change things (start, restart, stop), where
# flock(1) exists. fd 9 is closed for git, setup and screen so that no
# long-lived child (an ssh ControlPersist master, a daemon setup starts,
# the session) keeps the lock.
tpf_lock() {
	command -v flock >/dev/null 2>&1 || return 0
	exec 9>"$tpf_rundir/lock" || return 0
	flock -w 300 9 || tpf_fail lock 1 "another tpuform run holds $tpf_rundir/lock"
}

{ [ -d "$tpf_rundir" ] && [ -d "$tpf_logs" ]; } || mkdir -p -- "$tpf_rundir" "$tpf_logs" || {
	printf 'tpuform: cannot create %s\n' "$tpf_rundir"
	exit 2
}

tpf_storage_env

# tpf_export_line NAME VALUE: "export NAME='VALUE'", quoted for eval.
tpf_export_line() {
	printf "export %s='%s'\n" "$1" "$(printf '%s' "$2" | sed "s/'/'\\\\''/g")"
}

case ${1:-} in
start | restart)
	tpf_lock
	tpf_start "$1"
	;;
stop)
	tpf_lock
	tpf_stop "${2:-}"
	tpf_unmount_all
	# The exit status the stopped job left is tpuform's doing, not its.
	rm -f -- "$tpf_rundir/script.sha256" "$tpf_rundir/exit_code"
	tpf_say result=stopped
	;;
status)
	tpf_status
	;;
wait)
	tpf_wait "${2:-}" "${3:-10}" "${4:-0}"
	;;
disrupt)
	tpf_tell "${2:-}" "${3:-}"
	;;
logs)
	tpf_show_logs "${2:-0}" "$tpf_logs/current.log" "job log"
	;;
setup-log)
	tpf_show_logs "${2:-0}" "$tpf_logs/setup.log" "setup log"
	;;
job)
	tpf_job
	;;
env)
	# The variables the job sees beyond the script's head, as shell
	# assignments: the storage ones (tpf_storage_env) and the four tpf_job
	# sets, with the last checkpoint the current run was given. `tpuform
	# exec` evals them, so its command sees what the job sees
	# (docs/commands.md "exec").
	[ -z "${TPUFORM_CHECKPOINT_DIR+x}" ] || tpf_export_line TPUFORM_CHECKPOINT_DIR "$TPUFORM_CHECKPOINT_DIR"
	[ -z "${TPUFORM_MOUNT_ROOT+x}" ] || tpf_export_line TPUFORM_MOUNT_ROOT "$TPUFORM_MOUNT_ROOT"
	tpf_export_line TPUFORM_HEARTBEAT "$tpf_heartbeat"
	tpf_export_line TPUFORM_DISRUPTION "$tpf_rundir/disruption"
	tpf_export_line TPUFORM_CHECKPOINT_FILE "$tpf_rundir/checkpoint"
	tpf_export_line TPUFORM_LAST_CHECKPOINT "$(tpf_read "$tpf_rundir/last_checkpoint")"
	;;
*)
	printf 'usage: sh %s start|restart|status|wait TOKEN SECONDS [BEAT]|disrupt REASON DEADLINE|logs N|setup-log N|env|stop [REASON]\n' "$0" >&2
	exit 2
	;;
esac

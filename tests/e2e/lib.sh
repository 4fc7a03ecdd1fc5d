# shellcheck shell=sh
# Shared helpers for end-to-end tests (POSIX sh, TAP output).
#
#   . tests/e2e/lib.sh
#   setup_fleet NAME          # fresh work dir $W with a git repo $W/repo
#   ok "title" COMMAND...     # runs COMMAND; ok if it exits 0
#   is "title" GOT WANT       # string equality
#   like "title" TEXT PATTERN # grep -E
#   finish                    # prints the plan line, cleans up, exits
#
# Every test works in its own directory under tests/out/ and stops every
# screen session it started (the local provider's workers) at the end.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
TPUFORM="$TOP/tpuform"
export NO_COLOR=1
export TPUFORM_HEARTBEAT="${TPUFORM_HEARTBEAT:-10}"
_n=0
_fail=0

ok() {
	title=$1
	shift
	_n=$((_n + 1))
	if "$@" >"$W/last.out" 2>&1; then
		echo "ok $_n - $title"
	else
		echo "not ok $_n - $title"
		_fail=$((_fail + 1))
		sed 's/^/#   /' "$W/last.out" | tail -n 25
	fi
}

# Expect a command to fail with a given exit status.
fails() {
	title=$1
	want=$2
	shift 2
	_n=$((_n + 1))
	"$@" >"$W/last.out" 2>&1
	rc=$?
	if [ "$rc" -eq "$want" ]; then
		echo "ok $_n - $title"
	else
		echo "not ok $_n - $title (exit $rc, wanted $want)"
		_fail=$((_fail + 1))
		sed 's/^/#   /' "$W/last.out" | tail -n 25
	fi
}

is() {
	_n=$((_n + 1))
	if [ "$2" = "$3" ]; then
		echo "ok $_n - $1"
	else
		echo "not ok $_n - $1"
		echo "#   got:  '$2'"
		echo "#   want: '$3'"
		_fail=$((_fail + 1))
	fi
}

like() {
	_n=$((_n + 1))
	if printf '%s\n' "$2" | grep -Eq -- "$3"; then
		echo "ok $_n - $1"
	else
		echo "not ok $_n - $1"
		echo "#   pattern: $3"
		printf '%s\n' "$2" | sed 's/^/#   | /' | tail -n 25
		_fail=$((_fail + 1))
	fi
}

unlike() {
	_n=$((_n + 1))
	if printf '%s\n' "$2" | grep -Eq -- "$3"; then
		echo "not ok $_n - $1"
		echo "#   must not match: $3"
		printf '%s\n' "$2" | grep -E -- "$3" | sed 's/^/#   | /' | head -n 10
		_fail=$((_fail + 1))
	else
		echo "ok $_n - $1"
	fi
}

# Wait until COMMAND succeeds, up to N seconds (polling every 0.2 s).
wait_for() {
	secs=$1
	shift
	end=$(($(date +%s) + secs))
	while ! "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -ge "$end" ] && return 1
		sleep 0.2
	done
	return 0
}

# while_watching SECONDS CMD...: wait_for, but gives up at once when the
# test's `watch` ($wpid) is gone (it crashed).
while_watching() {
	_end=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		# shellcheck disable=SC2154 # wpid: the calling test's watch
		kill -0 "$wpid" 2>/dev/null || return 1
		[ "$(date +%s)" -ge "$_end" ] && return 1
		sleep 0.2
	done
}

setup_dir() {
	W="$TOP/tests/out/$1.d"
	rm -rf "$W"
	mkdir -p "$W"
	cd "$W" || exit 1
}

# A small git repo with a job script, for fleets' source.
make_repo() {
	mkdir -p "$W/repo"
	# shellcheck disable=SC2016 # the job script expands them, on the worker
	(
		cd "$W/repo" &&
		git init -q -b main . &&
		git config user.email t@example.invalid &&
		git config user.name test &&
		printf '#!/bin/sh\necho "job on $TPUFORM_NODE/$TPUFORM_WORKER_ID of $TPUFORM_NUM_WORKERS retry=$TPUFORM_RETRY commit=$TPUFORM_COMMIT"\n' >job.sh &&
		git add job.sh && git commit -qm "first"
	)
}

tpuform() {
	"$TPUFORM" "$@"
}

# The entries of directory $1, sorted, one per line; nothing when it does
# not exist. For directories whose names tpuform made (nodes, workers).
dir_names() {
	# shellcheck disable=SC2012 # tpuform's own names: no spaces or newlines
	ls "$1" 2>/dev/null
}

# Stop every screen session that the local provider's workers under $W run.
cleanup_screens() {
	find "$W" -type d -name .screen 2>/dev/null | while IFS= read -r sd; do
		SCREENDIR=$sd screen -ls 2>/dev/null | awk '/\t/ {print $1}' | while read -r s; do
			SCREENDIR=$sd screen -S "$s" -X quit >/dev/null 2>&1
		done
	done
}

finish() {
	cleanup_screens
	echo "1..$_n"
	[ "$_fail" -eq 0 ]
	exit $?
}

# The tpuform-lineage label of the state in FILE (default tpuform.state.json):
# the first 16 hex digits of its lineage (plan/ownership.h).
lineage_label() {
	jq -r .lineage "${1:-tpuform.state.json}" | tr -d - | cut -c1-16
}

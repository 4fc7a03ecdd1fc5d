# shellcheck shell=sh
# Start and stop the Cloud TPU API emulator (tests/fakegcp) from a test.
# Source this file (POSIX sh), then:
#
#   fakegcp_start [fakegcp options...]
#       Starts it in the background on an ephemeral loopback port, waits until
#       it listens, and exports FAKEGCP_PID, FAKEGCP_PORT, FAKEGCP_URL,
#       TPUFORM_TPU_ENDPOINT, TPUFORM_COMPUTE_ENDPOINT, TPUFORM_OSLOGIN_ENDPOINT,
#       TPUFORM_STORAGE_ENDPOINT (each = FAKEGCP_URL), TPUFORM_TOKENINFO_ENDPOINT (FAKEGCP_URL/tokeninfo)
#       and FAKEGCP_DIR (a scratch directory holding its stderr). Returns
#       non-zero if it did not start.
#   fakegcp_stop
#       SIGTERM, wait, and return the emulator's exit status; non-zero too if
#       a sanitizer (ASan, UBSan, LeakSanitizer) reported anything, in which
#       case the report is copied to stderr.
#
# FAKEGCP_BIN overrides the binary, e.g. a sanitizer build; by default it is
# ${TPF_ROOT:-.}/tests/fakegcp/fakegcp. One emulator per shell at a time.

fakegcp_start() {
	_fg_bin=${FAKEGCP_BIN:-${TPF_ROOT:-.}/tests/fakegcp/fakegcp}
	if [ ! -x "$_fg_bin" ]; then
		echo "fakegcp_start: no emulator at '$_fg_bin'; build it with 'make tests/fakegcp/fakegcp'" >&2
		return 1
	fi
	_fg_host=127.0.0.1
	_fg_prev=
	for _fg_a in "$@"; do
		[ "$_fg_prev" = --listen ] && _fg_host=$_fg_a
		_fg_prev=$_fg_a
	done
	case $_fg_host in *:*) _fg_host="[$_fg_host]" ;; esac
	FAKEGCP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/fakegcp.XXXXXX") || return 1
	"$_fg_bin" --port-file "$FAKEGCP_DIR/port" "$@" 2>"$FAKEGCP_DIR/stderr" &
	FAKEGCP_PID=$!
	# Normally well under a second; allow 10 s for sanitizer builds on a busy machine.
	_fg_i=0
	while [ ! -s "$FAKEGCP_DIR/port" ]; do
		if ! kill -0 "$FAKEGCP_PID" 2>/dev/null; then
			wait "$FAKEGCP_PID" 2>/dev/null
			echo "fakegcp_start: the emulator exited at start:" >&2
			cat "$FAKEGCP_DIR/stderr" >&2
			rm -rf "$FAKEGCP_DIR"
			FAKEGCP_PID=
			return 1
		fi
		_fg_i=$((_fg_i + 1))
		if [ "$_fg_i" -gt 1000 ]; then
			echo "fakegcp_start: no port after 10 s" >&2
			kill "$FAKEGCP_PID" 2>/dev/null
			wait "$FAKEGCP_PID" 2>/dev/null
			FAKEGCP_PID=
			return 1
		fi
		sleep 0.01
	done
	FAKEGCP_PORT=$(cat "$FAKEGCP_DIR/port")
	FAKEGCP_URL=http://$_fg_host:$FAKEGCP_PORT
	TPUFORM_TPU_ENDPOINT=$FAKEGCP_URL
	TPUFORM_COMPUTE_ENDPOINT=$FAKEGCP_URL
	TPUFORM_OSLOGIN_ENDPOINT=$FAKEGCP_URL
	TPUFORM_STORAGE_ENDPOINT=$FAKEGCP_URL
	TPUFORM_TOKENINFO_ENDPOINT=$FAKEGCP_URL/tokeninfo
	export FAKEGCP_PID FAKEGCP_PORT FAKEGCP_URL FAKEGCP_DIR TPUFORM_TPU_ENDPOINT \
		TPUFORM_COMPUTE_ENDPOINT TPUFORM_OSLOGIN_ENDPOINT TPUFORM_TOKENINFO_ENDPOINT \
		TPUFORM_STORAGE_ENDPOINT
}

fakegcp_stop() {
	[ -n "$FAKEGCP_PID" ] || return 0
	kill -TERM "$FAKEGCP_PID" 2>/dev/null
	wait "$FAKEGCP_PID"
	_fg_rc=$?
	if grep -q -e 'Sanitizer' -e 'runtime error:' "$FAKEGCP_DIR/stderr" 2>/dev/null; then
		cat "$FAKEGCP_DIR/stderr" >&2
		[ "$_fg_rc" -eq 0 ] && _fg_rc=1
	fi
	rm -rf "$FAKEGCP_DIR"
	FAKEGCP_PID=
	return "$_fg_rc"
}

# shellcheck shell=sh
# What the benchmarks share (tests/bench/*_bench.sh, soak.sh). Source it
# (POSIX sh):
#
#   bench_aim VALUE OP LIMIT
#       Prints "met" when VALUE OP LIMIT holds (OP: < <= > >= =, numbers),
#       "MISSED" when it does not, "MISSED (no figure)" when VALUE is not a
#       number (nothing was measured). A figure line that has an aim ends
#       with "[aim: WHAT: met]" or "[aim: WHAT: MISSED]"; nothing fails on it.
#   bench_procs DIR
#       The pids of the processes, other than this shell, whose command line
#       or environment names DIR (one a line): what a bench started under its
#       own scratch directory, whatever their session or process group
#       (screen sessions, sshd, the jobs that workers' logins started).
#   bench_reap DIR
#       Ends them: SIGTERM, up to 5 s for them to go, then SIGKILL. For a
#       bench's exit trap, where a worker that is not a VM of its own
#       (one sshd for many addresses) leaves its sessions and jobs.
#
# `sh tests/bench/run.sh -smoke` (make bench-smoke) uses bench_procs to find
# what a bench left behind.

# A bench's exit trap calls fakegcp_stop (tests/e2e/fakegcp.sh), which reads
# FAKEGCP_PID: under set -u, unset before the emulator started, that would
# end the trap (exit 2) before the rest of its cleanup.
FAKEGCP_PID=${FAKEGCP_PID:-}

bench_aim() {
	awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN {
		if (v !~ /^[-+]?[0-9]+(\.[0-9]*)?$/) { print "MISSED (no figure)"; exit }
		v += 0; l += 0
		ok = op == "<" ? v < l : op == "<=" ? v <= l : op == ">" ? v > l : op == ">=" ? v >= l : v == l
		print ok ? "met" : "MISSED" }'
}

bench_procs() {
	# The search runs with an empty environment and reads the pattern from
	# a file: a pattern in its own command line or environment (an
	# exported variable naming DIR) would find the search itself.
	_bp_f=$(mktemp "${TMPDIR:-/tmp}/bench-procs.XXXXXX") || return 1
	printf '%s\n' "$1" >"$_bp_f"
	# shellcheck disable=SC2016 # for the inner sh
	env -i PATH="$PATH" sh -c 'grep -lsF -f "$1" /proc/[0-9]*/cmdline /proc/[0-9]*/environ |
		cut -d/ -f3 | sort -un' sh "$_bp_f" | while read -r _bp_p; do
		[ "$_bp_p" != "$$" ] && [ -d "/proc/$_bp_p" ] && echo "$_bp_p"
	done
	rm -f "$_bp_f"
}

bench_reap() {
	_br_p=$(bench_procs "$1")
	[ -n "$_br_p" ] || return 0
	# shellcheck disable=SC2086 # one pid a word
	kill -TERM $_br_p 2>/dev/null
	_br_i=0
	while [ "$_br_i" -lt 50 ]; do
		_br_p=$(bench_procs "$1")
		[ -n "$_br_p" ] || return 0
		sleep 0.1
		_br_i=$((_br_i + 1))
	done
	# shellcheck disable=SC2086
	kill -KILL $_br_p 2>/dev/null
	return 0
}

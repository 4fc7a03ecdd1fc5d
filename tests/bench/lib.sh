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
#   bench_traps
#       The traps of a bench: its function cleanup on any exit, and exit
#       130 on ^C, 143 on SIGTERM (so that cleanup runs then too).
#   bench_client_env
#       tpuform's environment against the emulator: no color, a ready
#       access token, quick operation polls, no ssh-agent.
#   bench_job_fleet NAME KEY PORT ACCEL NODES EVDIR
#       Prints a fleet file for the job-wait benches: NODES nodes of ACCEL in
#       zones z1 and z2 of the emulator's project bench-project, logged in as
#       root with private key KEY on PORT; each worker's job writes its
#       shell's pid to EVDIR/NODE-WORKER.pid, appends its start time to
#       EVDIR/NODE-WORKER.starts, then execs sleep.
#   bench_unit_trials PREFIX NODES WORKERS TRIALS EVDIR OUT
#       TRIALS times: kills worker 1's job of node PREFIX-(k mod NODES) and
#       appends to OUT the seconds from the kill to the latest new start of
#       the node's WORKERS workers (their jobs' own clocks), 999.000 when
#       they are not all running again within 60 s (on the clock); 1 s
#       between trials, for the restarted unit's waits to attach again.
#   bench_percentiles FILE
#       "N P50 P99 MAX" of the numbers in FILE, one a line.
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

bench_job_fleet() {
	cat <<YAML
fleet: $1
provider:
  gcp: { project: bench-project }
ssh: { user: root, private_key: "$2", port: $3 }
run: |
  e=$6/\$TPUFORM_NODE-\$TPUFORM_WORKER_ID
  echo \$\$ >"\$e.pid"
  date +%s.%N >>"\$e.starts"
  exec sleep 100000
max_restarts: 1000000
groups:
  - { name: a, accelerator_type: $4, runtime_version: tpu-ubuntu2204-base, zones: [z1, z2], count: $5 }
YAML
}

# the number of start lines of node $1's workers 0 to $2 - 1 in $3, one a word
_bench_starts() {
	_bs_j=0
	while [ "$_bs_j" -lt "$2" ]; do
		printf '%s ' "$(wc -l <"$3/$1-$_bs_j.starts")"
		_bs_j=$((_bs_j + 1))
	done
}

bench_unit_trials() {
	_bt_k=0
	while [ "$_bt_k" -lt "$4" ]; do
		_bt_node=$1-$((_bt_k % $2))
		_bt_before=$(_bench_starts "$_bt_node" "$3" "$5")
		_bt_t=$(date +%s.%N)
		kill "$(cat "$5/$_bt_node-1.pid")"
		_bt_end=$(($(date +%s) + 60))
		_bt_ok=
		while [ "$(date +%s)" -le "$_bt_end" ]; do
			# every worker has more start lines than before the kill
			if echo "$_bt_before $(_bench_starts "$_bt_node" "$3" "$5")" |
				awk -v n="$3" '{ for (j = 1; j <= n; j++) if ($(n + j) <= $j) exit 1 }'; then
				_bt_ok=1
				break
			fi
			sleep 0.05
		done
		if [ -z "$_bt_ok" ]; then
			echo "trial $((_bt_k + 1)): $_bt_node not running again within 60 s"
			echo 999.000 >>"$6"
		else
			_bt_j=0
			while [ "$_bt_j" -lt "$3" ]; do
				tail -n 1 "$5/$_bt_node-$_bt_j.starts"
				_bt_j=$((_bt_j + 1))
			done | awk -v t="$_bt_t" '$1 > m { m = $1 } END { printf "%.3f\n", m - t }' >>"$6"
		fi
		_bt_k=$((_bt_k + 1))
		sleep 1
	done
}

bench_percentiles() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		p50 = v[int((NR + 1) * 0.5)]; i99 = int(NR * 0.99 + 0.999); if (i99 > NR) i99 = NR;
		printf "%d %.2f %.2f %.2f\n", NR, p50, v[i99], v[NR] }'
}

bench_traps() {
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

bench_client_env() {
	export NO_COLOR=1 TPUFORM_ACCESS_TOKEN=bench TPUFORM_GCP_POLL_MIN=0.2 TPUFORM_GCP_POLL_MAX=1
	unset SSH_AUTH_SOCK
}

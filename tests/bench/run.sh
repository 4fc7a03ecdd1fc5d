#!/bin/sh
# The benchmarks in tests/bench/, one after the other.
#
#   sh tests/bench/run.sh          make bench: quick sizes (about 10 minutes
#                                  on a quiet 2-core machine)
#   BENCH_FULL=1 sh tests/bench/run.sh
#                                  the sizes issue 13 asks: a 1,000-node watch
#                                  round, 256 SSH workers, 51 preemptions under
#                                  watch, issue 21's job waits on 256 workers,
#                                  1,024 and 4,096 workers on the many-worker
#                                  harness (scale_bench: 256 in make bench)
#                                  (refresh + plan is 10,000 nodes either way)
#   sh tests/bench/run.sh -smoke   make bench-smoke: each bench, soak.sh too,
#                                  at its smallest size (a few minutes)
#   BENCHES="gcp_bench soak" sh tests/bench/run.sh [-smoke]   only those
#
# Figures are never checked against their aims here (a figure line says
# "met" or "MISSED" itself). What is checked, at any size, is that a bench
# still works: it exits 0, prints each of its figure lines (the patterns in
# the list below), and leaves no process behind. Each bench runs with
# TMPDIR and TPF_BENCH_RUN set to a directory of its own, which every
# process it starts inherits in its environment or names in its command line
# (its emulator, sshd, watch, the workers' screen sessions and jobs); what
# still names that directory 10 s after the bench ended is left behind,
# listed, and ended. A bench that skips itself (it needs root, sshd and
# unshare) is a skip, except as root, where it fails. After each bench:
# "ok - bench NAME (N s)" or "not ok - bench NAME: why"; last
# "bench: N passed, N failed, N skipped"; exit 1 when one failed.
# BENCH_TIMEOUT=S ends a bench after S seconds (default 600 with -smoke,
# none otherwise) and fails it. Each bench runs alone too:
# sh tests/bench/NAME.sh [ARGS] (see its header).
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/bench/lib.sh
MODE=quick
[ "${BENCH_FULL:-}" = 1 ] && MODE=full
[ "${1:-}" = -smoke ] && MODE=smoke
TIMEOUT=${BENCH_TIMEOUT:-}
[ -n "$TIMEOUT" ] || { [ "$MODE" = smoke ] && TIMEOUT=600; }
# Short: a bench's TMPDIR is $S/N, and screen's sockets under it must fit
# in 107 bytes (unix(7)).
S=$(mktemp -d "${TMPDIR:-/tmp}/tpf-bs.XXXXXX") || exit 1
n=0
trap 'cd /; [ -n "${BENCH_KEEP:-}" ] || rm -rf "$S"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
passed=0
failed=0
skipped=0
failures=
listed=

# bench NAME QUICK FULL SMOKE FIGURE...
#   QUICK, FULL: the arguments for make bench and BENCH_FULL=1 ("" the
#   bench's defaults, "-" not run by make bench); SMOKE: make bench-smoke's,
#   the smallest size (VAR=VALUE words first: its environment); FIGURE:
#   extended regular expressions, one per figure line it must print.
bench() {
	name=$1
	listed="$listed $name"
	case $MODE in
	quick) a=$2 ;;
	full) a=$3 ;;
	smoke) a=$4 ;;
	esac
	shift 4
	[ "$a" = - ] && return 0
	case " ${BENCHES:-$name} " in *" $name "*) ;; *) return 0 ;; esac
	vars=
	args=
	for w in $a; do
		case $args:$w in
		:*=*) vars="$vars $w" ;;
		*) args="$args $w" ;;
		esac
	done
	n=$((n + 1))
	D=$S/$n
	mkdir -p "$D"
	echo "### tests/bench/$name.sh$args$vars"
	t0=$(date +%s)
	# shellcheck disable=SC2086 # the words, split
	{
		if [ -n "$TIMEOUT" ]; then
			env TMPDIR="$D" TPF_BENCH_RUN="$D/" $vars timeout --foreground -k 60 "$TIMEOUT" \
				sh "tests/bench/$name.sh" $args
		else
			env TMPDIR="$D" TPF_BENCH_RUN="$D/" $vars sh "tests/bench/$name.sh" $args
		fi
		echo $? >"$D/rc"
	} 2>&1 | tee "$S/$n.out"
	rc=$(cat "$D/rc")
	why=
	[ "$rc" -eq 0 ] || why="exit $rc"
	[ "$rc" -ne 124 ] || why="no end within ${TIMEOUT} s (exit 124)"
	for re in "$@"; do
		grep -qE -e "$re" "$S/$n.out" || why="${why:+$why; }no figure line /$re/"
	done
	skip=
	if [ "$rc" -eq 0 ] && [ -n "$why" ] && grep -q 'skipped' "$S/$n.out"; then
		skip=$(grep -m1 'skipped' "$S/$n.out")
		[ "$(id -u)" = 0 ] && { why="skipped as root: $skip"; skip=; }
	fi
	# What is still running 10 s on is left behind.
	i=0
	while [ -n "$(bench_procs "$D/")" ] && [ "$i" -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	left=$(bench_procs "$D/")
	if [ -n "$left" ]; then
		echo "# left behind by $name:"
		for p in $left; do
			echo "#   $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-150)"
		done
		bench_reap "$D/"
		why="${why:+$why; }left $(echo "$left" | wc -l) processes behind"
		skip=
	fi
	took=$(($(date +%s) - t0))
	if [ -n "$skip" ]; then
		echo "ok - bench $name # SKIP $skip"
		skipped=$((skipped + 1))
	elif [ -n "$why" ]; then
		echo "not ok - bench $name: $why ($took s)"
		failed=$((failed + 1))
		failures="$failures $name"
	else
		echo "ok - bench $name ($took s)"
		passed=$((passed + 1))
	fi
	echo
	rm -rf "$D"
}

# The list: every bench, its sizes and its figure lines.
M='(met|MISSED)' # the verdict on an aim (tests/bench/lib.sh bench_aim)
bench compute_bench "" "" "8 2" \
	"^refresh\+plan of [0-9]+ slices \([0-9]+ instances\) in [0-9]+ zones: [0-9.]+ s wall.*\[aim: < 0.7 s: $M, < 150 MB: $M\]" \
	"HTTP requests: [0-9]+ = .*\[aim: 0 other \(no per-node request\): $M\]"
bench elastic_bench "60 5" "" "10 2" \
	"^goodput without elastic, stockout of [0-9]+ s: [0-9]+% of the slice-time declared" \
	"^goodput with elastic \(min_slices 2\), stockout of [0-9]+ s: [0-9]+% of the slice-time declared"
bench failover_bench "" "" "1 3 1" \
	"^takeover \(kill -> standby holds the lease\): +min [0-9.]+ s" \
	"^heal .*: +min [0-9.]+ s, median [0-9.]+ s, max [0-9.]+ s +\[aim: max <= lease TTL \+ one interval = [0-9]+ s: $M\]"
bench gcp_bench "" "" "120 2 all 8" \
	"^refresh\+plan of [0-9]+ nodes in [0-9]+ zones: [0-9.]+ s wall, .*peak RSS [0-9]+ MB +\[aim: < 0.7 s: $M, < 150 MB: $M\]" \
	"HTTP requests: [0-9]+ .*\[aim: zones x pages = .*: $M\]" \
	"^apply of [0-9]+ creates at -parallelism=100: all created [0-9.]+ s .*\[aim: .*: $M\]" \
	"^apply of [0-9]+ creates at -parallelism=10: all created [0-9.]+ s"
bench input_bench "" "" "100" \
	"^validate -f /dev/zero +[0-9.]+ s .*\[aim: error within 2 s: $M" \
	"^validate, 100,000-deep .*\[aim: error within 2 s: $M" \
	"^validate, [0-9]+ groups +[0-9.]+ s .*\[aim: valid within 1 s: $M"
bench job_wait_bench "" "256 20 30" "4 1 1" \
	"^idle [0-9]+ s: watch CPU [0-9.]+% of one core +\[aim: < 2% .*: $M\]" \
	"^job exit -> both workers of its unit running again: [0-9]+ trials, p50 [0-9.]+ s, p99 [0-9.]+ s.*\[aim: p99 < [0-9]+ s .*: $M\]"
bench ledger_bench "200 40 7" "1000 60 30" "4 2 1 1" \
	"^ledger on: [0-9.]+ requests per plan" \
	"^ledger on, budget: +watch CPU per quiet round: [0-9]+ ms" \
	"^the ledger's CPU per quiet round: .*\[aim: <= \+5 %: $M"
bench report_bench "" "" "4 1" \
	"^report -json: [0-9.]+ s" \
	"^report -html: [0-9.]+ s, page [0-9]+ bytes +\[aim: under 5 MB: $M\]"
bench ssh_bench "64 64" "256 64" "BENCH_NO_INSTALL=1 4 4" \
	"^tpuform apply, -parallelism=[0-9]+: [0-9.]+ s wall, .*\[aim: <= 5 ms CPU per worker: $M\]"
bench watch_bench "100 120 6 5" "100 306 6 5" "2 6 6 1" \
	"^detection latency \(preemption -> DELETE\): p50 [0-9.]+ s, p99 [0-9.]+ s.*\[aim: p99 within .*: $M\]" \
	"^alive fraction \(mean over rounds\): +[0-9.]+% +\[aim: above 95%: $M\]"
bench watch_round_bench "200 30" "1000 60" "4 2 1" \
	"^watch CPU per quiet round: [0-9]+ ms" \
	"^API requests: [0-9]+ = [0-9]+ per minute \(.*, [0-9]+ per-node requests\) +\[aim: 0 per-node requests: $M\]" \
	"^per-node requests: [0-9]+ at watch start .*, [0-9]+ in [0-9]+ quiet rounds +\[aim: 0 and 0: $M\]"
bench scale_bench "" "1024" "16 2 5" \
	"^scale: [0-9]+ workers provisioned in [0-9.]+ s, tpuform CPU [0-9.]+ ms per worker$" \
	"^scale: attach [0-9.]+ s after watch started, per-node requests [0-9]+$" \
	"^scale: idle [0-9.]+ % of one core over [0-9]+ s, threads [0-9]+, open files [0-9]+, RSS [0-9]+ MiB$" \
	"^scale: job exit -> unit running again p50 [0-9.]+ s, p99 [0-9.]+ s over [0-9]+ trials$" \
	"^scale: watch pid [0-9]+$"
[ "$MODE" = full ] && bench scale_bench - "4096" - \
	"^scale: 4096 workers provisioned in [0-9.]+ s, tpuform CPU [0-9.]+ ms per worker$" \
	"^scale: attach [0-9.]+ s after watch started, per-node requests [0-9]+$" \
	"^scale: idle [0-9.]+ % of one core over [0-9]+ s, threads [0-9]+, open files [0-9]+, RSS [0-9]+ MiB$" \
	"^scale: job exit -> unit running again p50 [0-9.]+ s, p99 [0-9.]+ s over [0-9]+ trials$"
bench soak - - "SOAK_PREEMPT_EVERY=8 SOAK_SSHD_KILL_EVERY=8 SOAK_TPF_KILL_EVERY=8 SOAK_FILL_EVERY=10 20s 2 2" \
	"^==== soak summary" \
	"^leaked nodes \(must be 0\): +[0-9]+ at the end.*\[aim: 0: $M\]" \
	"^watch exits on its own \(must be 0\): +[0-9]+;.*\[aim: 0: $M\]"

# A bench missing from the list would never run: that fails too.
for f in tests/bench/*_bench.sh tests/bench/soak.sh; do
	n=$(basename "$f" .sh)
	case "$listed " in *" $n "*) ;; *)
		echo "not ok - bench $n: not in tests/bench/run.sh's list (no sizes, no figure lines)"
		failed=$((failed + 1))
		failures="$failures $n"
		;;
	esac
done
echo "bench: $passed passed, $failed failed, $skipped skipped${failures:+ (failed:$failures)}"
[ "$failed" -eq 0 ]

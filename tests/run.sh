#!/bin/sh
# Run every test: C unit tests (tests/unit/test_*), the fuzz inputs replayed
# (tests/fuzz/replay_*) and end-to-end scripts (tests/e2e/t*.sh). Each
# speaks TAP; this script counts the "ok" and "not ok" lines of all of
# them and ends with the line
#   N passed, N failed, N skipped
# Output of each test goes to tests/out/<name>.log.
#
#   sh tests/run.sh [-j N]
#
# Tests run N at a time (-j N, or JOBS=N; default twice the number of CPUs:
# most tests wait on processes, sockets and timers, not on the CPU). Each
# test's summary line is printed when it ends, so the order varies. An e2e
# script with a line "# serial" (optionally ": why") among its first 15
# lines runs alone, after all the others: timing-sensitive tests. The
# longest tests start first, by the durations of the last run
# (tests/out/.times). -j 1 runs one at a time, in that order.
#
# Skips are counted apart, never as passes: a TAP "ok N - ... # SKIP why",
# a "1..0 # SKIP why" plan, or a "# SKIP why" comment line is one skip each
# (TAP 13's directive, any case). The tests that skipped are listed with
# their reasons. A test that exits non-zero with no failed check (a crash,
# a sanitizer report, a broken harness) counts as one failure.
#
# TESTS="t100 test_state" limits the run to names containing those words.
# A word BIN:CASE runs the unit binary BIN with only CASE (its function
# name, or the part after "__"): TESTS=test_state:json_round_trip_every_field
# (the binary gets UNIT_CASES=CASE, tests/unit/unit.h).
set -u
cd "$(dirname "$0")/.." || exit 2
out=tests/out
# Known leaks of system libraries (see the file); ours are not suppressed.
LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export LSAN_OPTIONS

ncpu=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
jobs=${JOBS:-$((ncpu * 2))}
usage() {
	echo "usage: sh tests/run.sh [-j N]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	-j) [ $# -ge 2 ] || usage; jobs=$2; shift 2 ;;
	-j*) jobs=${1#-j}; shift ;;
	*) usage ;;
	esac
done
case $jobs in '' | *[!0-9]* | 0)
	echo "tests/run.sh: -j/JOBS wants a positive number, got '$jobs'" >&2
	exit 2
	;;
esac

mkdir -p "$out"
# The tests must leave the checkout as they found it: a file a test writes
# into the source tree (a ledger named after an unset path did) is a bug,
# and it dirties the repo that the demo and e2e tests deploy from. Only a
# full run checks (a partial one may be running beside a build).
tree_before=""
in_git=""
if [ -z "${TESTS:-}" ] && [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
	in_git=1
	tree_before=$(git status --porcelain --untracked-files=all 2>/dev/null)
fi
passed=0
failed=0
skipped=0
crashed=""
skipped_names=""
running=0
partial="" # tests run with some unit cases only
pids="" # name=pid of each running test's subshell
times_new="$out/.times.$$"
: >"$times_new"

# Prints the unit cases a selection asks of test $1: "" when the whole test
# runs. Returns 1 when the test is not selected.
selected() {
	[ -z "${TESTS:-}" ] && return 0
	_sel=1
	_cases=""
	_whole=""
	for w in $TESTS; do
		case "$1" in *"${w%%:*}"*) ;; *) continue ;; esac
		_sel=0
		case $w in *:*) _cases="$_cases ${w#*:}" ;; *) _whole=yes ;; esac
	done
	[ -z "$_whole" ] && printf '%s\n' "${_cases# }"
	return $_sel
}

# The queue: "name kind path" lines, kind unit, fuzz, e2e or serial.
list_tests() {
	for t in tests/unit/test_*; do
		case "$t" in *.c | *.o | *.d) continue ;; esac
		[ -x "$t" ] && echo "$(basename "$t") unit $t"
	done
	# Fuzz regressions and seeds, replayed through each harness built with the
	# normal compiler (tests/fuzz/README.md): one TAP line per input.
	for t in tests/fuzz/replay_*; do
		case "$t" in *.c | *.o | *.d) continue ;; esac
		[ -x "$t" ] && echo "fuzz_${t#tests/fuzz/replay_} fuzz $t"
	done
	for t in tests/e2e/t*.sh; do
		[ -f "$t" ] || continue
		if head -n 15 "$t" | grep -Eq '^# serial([: ]|$)'; then
			echo "$(basename "$t" .sh) serial $t"
		else
			echo "$(basename "$t" .sh) e2e $t"
		fi
	done
}

# Longest first (by the last run's durations; a test never timed counts as
# long), the serial ones last in name order.
order_tests() {
	[ -f "$out/.times" ] || : >"$out/.times"
	awk -v times="$out/.times" 'FILENAME == times { secs[$1] = $2; next }
	     { s = ($1 in secs) ? secs[$1] : 1000000
	       print ($2 == "serial" ? 1 : 0), ($2 == "serial" ? 0 : -s), $0 }' \
		"$out/.times" - | sort -k1,1n -k2,2n -k3,3 | cut -d' ' -f3-
}

# Runs in the background: test $1 of kind $2 at path $3, unit cases $4.
# Its end is one line on fd 3: "name rc start end".
start_test() {
	(
		log="$out/$1.log"
		s=$(date +%s)
		case $2 in
		unit) if [ -n "$4" ]; then UNIT_CASES=$4 "$3"; else "$3"; fi ;;
		fuzz) "$3" "tests/fuzz/regressions/${1#fuzz_}" "tests/fuzz/corpus/${1#fuzz_}" ;;
		*) sh "$3" ;;
		esac >"$log" 2>&1 3>&- </dev/null
		rc=$?
		echo "$1 $rc $s $(date +%s)" >&3
	) &
	running=$((running + 1))
	pids="$pids $1=$!"
}

# Waits for the next test to end and reports it.
collect() {
	if ! read -r name rc start end <&3; then
		echo "tests/run.sh: lost track of the running tests" >&2
		exit 2
	fi
	running=$((running - 1))
	_left=""
	for _p in $pids; do
		[ "${_p%=*}" = "$name" ] || _left="$_left $_p"
	done
	pids=$_left
	# a run of some cases only says nothing of the whole test's length
	case " $partial " in *" $name "*) ;; *) echo "$name $((end - start))" >>"$times_new" ;; esac
	report "$name" "$rc" $((end - start))
}

report() {
	name=$1
	rc=$2
	log="$out/$name.log"
	s=$(grep -c -i -e '^ok [^#]*# *skip\b' -e '^1\.\.0 *# *skip\b' -e '^# *skip\b' "$log")
	p=$(($(grep -c '^ok ' "$log") - $(grep -c -i '^ok [^#]*# *skip\b' "$log")))
	f=$(grep -c '^not ok ' "$log")
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	[ "$s" -gt 0 ] && skipped_names="$skipped_names $name"
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# A crash or a failed harness counts as a failure of its own.
		failed=$((failed + 1))
		crashed="$crashed $name"
		echo "not ok - $name exited with status $rc and no failed check (see $log)"
		tail -n 20 "$log" | sed 's/^/#   /'
	fi
	printf '# %-34s %4d passed, %d failed%s (%ss)\n' "$name" "$p" "$f" \
		"$([ "$s" -gt 0 ] && echo ", $s skipped")" "$3"
	if [ "$s" -gt 0 ]; then
		grep -i -e '^ok [^#]*# *skip\b' -e '^1\.\.0 *# *skip\b' -e '^# *skip\b' "$log" |
			sed 's/^/#   /' | head -n 10
	fi
	if [ "$f" -gt 0 ]; then
		grep -A6 '^not ok ' "$log" | sed 's/^/#   /' | head -n 60
	fi
}

# Ends of tests come back through a FIFO, held open read-write on fd 3 so
# that it never sees end-of-file while no test is writing.
fifo="$out/.ends.$$"
rm -f "$fifo"
mkfifo "$fifo" || exit 2
exec 3<>"$fifo"
rm -f "$fifo"
# Interrupted: stop the running tests (their subshells' children), whose
# own traps clean up.
stop_all() {
	for _p in $pids; do
		pkill -TERM -P "${_p#*=}" 2>/dev/null
	done
	rm -f "$times_new"
	exit 130
}
trap stop_all INT TERM

queue=$(list_tests | order_tests)
nl='
'
old_ifs=$IFS
IFS=$nl
for line in $queue; do
	IFS=$old_ifs
	# shellcheck disable=SC2086 # the three words of a queue line
	set -- $line
	cases=$(selected "$1") || continue
	if [ "$2" = serial ]; then
		while [ "$running" -gt 0 ]; do collect; done
	fi
	while [ "$running" -ge "$jobs" ]; do collect; done
	start_test "$1" "$2" "$3" "$cases"
	[ -z "$cases" ] || partial="$partial $1"
	[ "$2" = serial ] && collect
done
IFS=$old_ifs
while [ "$running" -gt 0 ]; do collect; done
wait
exec 3<&-
# The durations of this run, and of the last one for tests not run now.
awk '!seen[$1]++' "$times_new" "$out/.times" >"$times_new.all" 2>/dev/null
mv "$times_new.all" "$out/.times"
rm -f "$times_new"

if [ -n "$in_git" ]; then
	tree_after=$(git status --porcelain --untracked-files=all 2>/dev/null)
	if [ "$tree_before" = "$tree_after" ]; then
		echo "ok - the tests left the checkout as they found it"
		passed=$((passed + 1))
	else
		echo "not ok - the tests changed the checkout (git status before and after):"
		printf '%s\n' "$tree_before" >"$out/.tree.before"
		printf '%s\n' "$tree_after" | grep -vxF -f "$out/.tree.before" | sed 's/^/#   /' | head -20
		rm -f "$out/.tree.before"
		failed=$((failed + 1))
	fi
fi
[ -n "$crashed" ] && echo "# crashed or failed outside a check:$crashed"
[ -n "$skipped_names" ] && echo "# skipped (not run here, see above):$skipped_names"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

#!/bin/sh
# Run every test: C unit tests (tests/unit/test_*), the fuzz inputs replayed
# (tests/fuzz/replay_*) and end-to-end scripts (tests/e2e/t*.sh). Each
# speaks TAP; this script counts the "ok" and "not ok" lines of all of
# them and ends with the line
#   N passed, N failed, N skipped
# Output of each test goes to tests/out/<name>.log too.
# Skips are counted apart, never as passes: a TAP "ok N - ... # SKIP why",
# a "1..0 # SKIP why" plan, or a "# SKIP why" comment line is one skip each
# (TAP 13's directive, any case). The tests that skipped are listed with
# their reasons.
# TESTS="t100 test_state" limits the run to names containing those words.
set -u
cd "$(dirname "$0")/.." || exit 2
out=tests/out
# Known leaks of system libraries (see the file); ours are not suppressed.
LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export LSAN_OPTIONS
mkdir -p "$out"
passed=0
failed=0
skipped=0
crashed=""
skipped_names=""

selected() {
	[ -z "${TESTS:-}" ] && return 0
	for w in $TESTS; do
		case "$1" in *"$w"*) return 0 ;; esac
	done
	return 1
}

run_one() {
	name=$1
	shift
	selected "$name" || return 0
	log="$out/$name.log"
	start=$(date +%s)
	"$@" >"$log" 2>&1
	rc=$?
	end=$(date +%s)
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
		"$([ "$s" -gt 0 ] && echo ", $s skipped")" $((end - start))
	if [ "$s" -gt 0 ]; then
		grep -i -e '^ok [^#]*# *skip\b' -e '^1\.\.0 *# *skip\b' -e '^# *skip\b' "$log" |
			sed 's/^/#   /' | head -n 10
	fi
	if [ "$f" -gt 0 ]; then
		grep -A6 '^not ok ' "$log" | sed 's/^/#   /' | head -n 60
	fi
}

for t in tests/unit/test_*; do
	case "$t" in *.c | *.o | *.d) continue ;; esac
	[ -x "$t" ] || continue
	run_one "$(basename "$t")" "$t"
done
# Fuzz regressions and seeds, replayed through each harness built with the
# normal compiler (tests/fuzz/README.md): one TAP line per input.
for t in tests/fuzz/replay_*; do
	case "$t" in *.c | *.o | *.d) continue ;; esac
	[ -x "$t" ] || continue
	name=${t#tests/fuzz/replay_}
	run_one "fuzz_$name" "$t" "tests/fuzz/regressions/$name" "tests/fuzz/corpus/$name"
done
for t in tests/e2e/t*.sh; do
	[ -f "$t" ] || continue
	run_one "$(basename "$t" .sh)" sh "$t"
done

[ -n "$crashed" ] && echo "# crashed or failed outside a check:$crashed"
[ -n "$skipped_names" ] && echo "# skipped (not run here, see above):$skipped_names"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

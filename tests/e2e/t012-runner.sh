#!/bin/sh
# tests/run.sh itself, on a tree of fake tests (shell scripts speaking TAP):
# the counts and the last line, a crash counted as a failure, skips, the
# per-test logs and failure excerpts, tests running side by side under -j,
# a "# serial" script running alone after the others, one unit case alone
# (TESTS=BIN:CASE), and -j's checks.
. "$(dirname "$0")/lib.sh"
setup_dir t012
# The fake tree is run whole: a TESTS of the outer run must not filter it.
unset TESTS UNIT_CASES

T=$W/tree
mkdir -p "$T/tests/unit" "$T/tests/e2e" "$T/marks"
cp "$TOP/tests/run.sh" "$T/tests/run.sh"
: >"$T/tests/lsan.supp"

# $1 = path, then the script's lines
script() {
	f=$1
	shift
	printf '%s\n' '#!/bin/sh' "$@" >"$T/$f"
	chmod +x "$T/$f"
}
# A side-by-side test: marks itself running, waits (up to 10 s) until its
# partner $2 has started, so it passes only when both run at once.
pair() {
	script "tests/e2e/$1.sh" "touch marks/run.$1 marks/started.$1" \
		"i=0; while [ ! -e marks/started.$2 ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i + 1)); done" \
		"if [ -e marks/started.$2 ]; then echo 'ok 1 - $2 ran beside me'; else echo 'not ok 1 - $2 never started'; fi" \
		"rm -f marks/run.$1; echo 1..1"
}
# shellcheck disable=SC2016 # expanded by the fake test
script tests/unit/test_pass 'echo "ok 1 - one"' 'echo "ok 2 - two # SKIP not here"' \
	'echo "ok 3 - cases=${UNIT_CASES:-all}"' 'echo 1..3'
script tests/unit/test_fail 'echo "ok 1 - fine"' 'echo "not ok 2 - broken"' 'echo "#   at here:1"' \
	'echo 1..2' 'exit 1'
script tests/unit/test_crash 'echo "ok 1 - before the crash"' 'echo "last words"' 'exit 3'
pair t100-left t101-right
pair t101-right t100-left
script tests/e2e/t900-alone.sh '# serial: checks that it runs alone' \
	'if ls marks/run.* >/dev/null 2>&1; then echo "not ok 1 - alone"; else echo "ok 1 - alone"; fi' \
	'if [ -e marks/started.t100-left ] && [ -e marks/started.t101-right ]; then echo "ok 2 - after the others"; else echo "not ok 2 - after the others"; fi' \
	'echo "1..0 # SKIP and a skipped plan"'

fails "a run with a failure exits 1" 1 sh "$T/tests/run.sh" -j 4
out=$(cat last.out)
is "it ends with the totals: passes, failures (a crash is one), skips" \
	"$(tail -n 1 last.out)" "8 passed, 2 failed, 2 skipped"
like "the crash is reported with its status" "$out" "^not ok - test_crash exited with status 3 and no failed check"
like "with the end of its log" "$out" "^#   last words$"
like "and listed" "$out" "^# crashed or failed outside a check: test_crash$"
like "a failed check is shown with what follows it" "$out" "^#   #   at here:1$"
like "each test has a summary line" "$out" "^# t100-left +1 passed, 0 failed \([0-9]+s\)$"
like "skips are listed with their reasons" "$out" "^#   ok 2 - two # SKIP not here$"
like "the serial test ran alone, after the others" "$out" "^# t900-alone +2 passed, 0 failed, 1 skipped"
is "it is the last test to end" "$(grep -E '^# [a-z0-9_-]+ +[0-9]+ passed' last.out | tail -n 1 | cut -d' ' -f2)" t900-alone
ok "each test's log is in tests/out" grep -q "^not ok 2 - broken$" "$T/tests/out/test_fail.log"
ok "and the durations for the next run's order" grep -q "^t101-right [0-9]" "$T/tests/out/.times"

ok "TESTS=BIN:CASE gives the unit binary the case" env TESTS="test_pass:two" sh "$T/tests/run.sh"
like "in UNIT_CASES" "$(cat "$T/tests/out/test_pass.log")" "^ok 3 - cases=two$"
like "and runs no other test" "$(cat last.out)" "^2 passed, 0 failed, 1 skipped$"
ok "TESTS=BIN runs it whole" env TESTS="test_pass t100 t101" sh "$T/tests/run.sh" -j2
like "with no UNIT_CASES" "$(cat "$T/tests/out/test_pass.log")" "^ok 3 - cases=all$"
ok "JOBS=2 is -j 2" env JOBS=2 TESTS="t100 t101" sh "$T/tests/run.sh"
fails "-j 0 is refused" 2 sh "$T/tests/run.sh" -j 0
fails "so is JOBS=x" 2 env JOBS=x sh "$T/tests/run.sh"
fails "and an unknown argument" 2 sh "$T/tests/run.sh" --fast
fails "and -j with no number" 2 sh "$T/tests/run.sh" -j

# Tests run side by side, so no two may start sshd workers on the same
# loopback block (127.0.N.x): a restarted worker could find its address
# and port taken by another test's.
shared=$(cd "$TOP" && for f in tests/e2e/t*.sh tests/unit/test_*.c; do
	grep -E 'sshd_start|gcp_workers_start|worker-ip-base|define BASE_IP' "$f" |
		grep -oE '127\.0\.[0-9]+\.' | sort -u | sed "s|\$| $f|"
done | awk '{ n[$1]++; f[$1] = f[$1] " " $2 } END { for (b in n) if (n[b] > 1) print b "x:" f[b] }')
is "every test's sshd workers have a 127.0.N.x block of their own" "$shared" ""
finish

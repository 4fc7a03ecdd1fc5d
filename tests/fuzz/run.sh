#!/bin/sh
# Run libFuzzer harnesses (`make fuzz` builds them first).
#   sh tests/fuzz/run.sh SECONDS NAME...
# Each .fuzz-build/fuzz_NAME runs SECONDS with its dictionary and input
# size limit, starting from the committed seeds (tests/fuzz/corpus/NAME)
# and what earlier runs found (.fuzz-build/corpus/NAME, the only corpus
# written to). FUZZ_JOBS=N runs N at a time. Prints one TAP line per
# harness with executions and coverage; a crash, leak, timeout or
# sanitizer report fails it, its input is kept under
# .fuzz-build/crashes/NAME/ and its log under .fuzz-build/logs/NAME.log.
# Exits 1 when any harness failed.
set -u
cd "$(dirname "$0")/../.." || exit 2
secs=${1:-60}
shift
jobs=${FUZZ_JOBS:-1}
dir=.fuzz-build

# Dictionary and -max_len (bytes) per harness: a little above the largest
# real input of its kind that the seeds hold, so mutations stay relevant.
options() {
	case "$1" in
	fleet) echo "yaml.dict 8192" ;;
	state | planfile) echo "json.dict 16384" ;;
	bootstrap | sshkeys) echo "text.dict 4096" ;;
	*) echo "json.dict 8192" ;;
	esac
}

run_one() {
	name=$1
	opts=$(options "$name")
	dict=${opts% *}
	max_len=${opts#* }
	mkdir -p "$dir/corpus/$name" "$dir/crashes/$name" "$dir/logs"
	log="$dir/logs/$name.log"
	"$dir/fuzz_$name" -max_total_time="$secs" -max_len="$max_len" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -dict="tests/fuzz/$dict" \
		-artifact_prefix="$dir/crashes/$name/" \
		"$dir/corpus/$name" "tests/fuzz/corpus/$name" >"$log" 2>&1
	rc=$?
	done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	cov=$(echo "$done_line" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$done_line" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$done_line" | sed -n 's/.*corp: \([0-9]*\).*/\1/p')
	if [ "$rc" -eq 0 ] && [ -n "$done_line" ]; then
		echo "ok - fuzz $name: ${execs:-?} execs in ${secs}s (${rate:-?}/s), cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}"
	else
		echo "not ok - fuzz $name: exit status $rc (see $log)"
		grep -E 'ERROR: |SUMMARY: |runtime error|Test unit written' "$log" | head -n 8 | sed 's/^/#   /'
	fi
}

failed=0
status=$(mktemp -d)
n=0
for name in "$@"; do
	if [ ! -x "$dir/fuzz_$name" ]; then
		echo "not ok - fuzz $name: $dir/fuzz_$name is not built (make fuzz-build)"
		failed=1
		continue
	fi
	run_one "$name" >"$status/$name" &
	n=$((n + 1))
	if [ "$n" -ge "$jobs" ]; then
		wait
		n=0
	fi
done
wait
for name in "$@"; do
	[ -f "$status/$name" ] || continue
	cat "$status/$name"
	grep -q '^not ok' "$status/$name" && failed=1
done
rm -rf "$status"
exit "$failed"

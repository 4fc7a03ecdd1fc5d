#!/bin/sh
# `make bench`: every benchmark in tests/bench/*_bench.sh, one after the
# other. They print figures; none of them passes or fails on time.
# Quick by default (under 10 minutes on a 2-core machine); BENCH_FULL=1 runs
# the sizes issue 13 asks for: a 1,000-node watch round, 256 SSH workers,
# 51 preemptions under watch (refresh + plan is 10,000 nodes either way),
# and issue 21's job waits on 256 workers (64 by default).
# Each runs alone too: sh tests/bench/NAME_bench.sh [ARGS] (see its header).
cd "$(dirname "$0")/../.." || exit 1
args() { # bench -> its arguments
	case "${BENCH_FULL:-}:$1" in
	1:ssh_bench) echo "256 64" ;;
	*:ssh_bench) echo "64 64" ;;
	1:watch_bench) echo "100 306 6 5" ;;
	*:watch_bench) echo "100 120 6 5" ;;
	1:job_wait_bench) echo "256 20 30" ;;
	*:job_wait_bench) echo "64 20 30" ;;
	1:watch_round_bench) echo "1000 60" ;;
	1:ledger_bench) echo "1000 60 30" ;;
	*:ledger_bench) echo "200 40 7" ;;
	*:watch_round_bench) echo "200 30" ;;
	esac
}
for b in tests/bench/*_bench.sh; do
	name=$(basename "$b" .sh)
	a=$(args "$name")
	echo "### $b $a"
	# shellcheck disable=SC2086 # the arguments, split
	sh "$b" $a
	echo
done

#!/bin/sh
# `make bench`: every benchmark in tests/bench/*_bench.sh, one after the
# other. They print figures; none of them passes or fails on time.
cd "$(dirname "$0")/../.." || exit 1
for b in tests/bench/*_bench.sh; do
	echo "### $b"
	sh "$b"
	echo
done

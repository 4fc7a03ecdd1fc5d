#!/bin/sh
# Hostile and large inputs (issue 9): how long `validate` takes on each.
# Prints figures; never fails on time. Aims: /dev/zero and a 100,000-deep
# document end within 2 s with an error; 40,000 groups validate in < 1 s.
#
#   sh tests/bench/input_bench.sh [GROUPS]      default 40000
#   smallest (make bench-smoke): sh tests/bench/input_bench.sh 100
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
NGROUPS=${1:-40000}
T="$TOP/tpuform"
. "$TOP/tests/bench/lib.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/tpuform-bench.XXXXXX")
trap 'cd /; rm -rf "$W"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cd "$W" || exit 1
export NO_COLOR=1
now() { date +%s.%N; }
secs() { echo "$1 $2" | awk '{ printf "%.2f", $2 - $1 }'; }

# One validate run: prints "LABEL: S s, exit N, its first message  [aim]".
timed() { # label file want(error|valid) seconds
	t0=$(now)
	"$T" validate -f "$2" >out.txt 2>&1
	rc=$?
	t1=$(now)
	s=$(secs "$t0" "$t1")
	ok=$(bench_aim "$s" '<' "$4")
	case $3:$rc in
	error:0) ok="MISSED (accepted)" ;;
	valid:[!0]*) ok="MISSED (refused)" ;;
	esac
	printf '%-44s %6s s  exit %s  %s   [aim: %s within %s s: %s]\n' "$1" "$s" "$rc" \
		"$(grep -m1 -o 'Error: .*\|Success! .*' out.txt | cut -c1-60)" "$3" "$4" "$ok"
}

{
	echo "fleet: big"
	echo "provider: { local: {} }"
	echo "run: \"true\""
	echo "groups:"
	awk -v n="$NGROUPS" 'BEGIN { for (i = 0; i < n; i++)
		printf "  - {name: g%d, accelerator_type: v2-8, runtime_version: x, zones: [local-a], count: 1}\n", i }'
} >groups.yaml
awk 'BEGIN { printf "fleet: deep\nx: "; for (i = 0; i < 100000; i++) printf "["; for (i = 0; i < 100000; i++) printf "]"; print "" }' >deep.yaml

timed "validate -f /dev/zero" /dev/zero error 2
timed "validate, 100,000-deep [[[...]]]" deep.yaml error 2
timed "validate, $NGROUPS groups" groups.yaml valid 1

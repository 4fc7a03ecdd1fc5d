#!/bin/sh
# Hostile and large inputs (issue 9): how long `validate` takes on each.
# Prints figures; never fails on time. Aims: /dev/zero and a 100,000-deep
# document end within 2 s with an error; 40,000 groups validate in < 1 s.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
T="$TOP/tpuform"
W=$(mktemp -d "${TMPDIR:-/tmp}/tpuform-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
export NO_COLOR=1
now() { date +%s.%N; }
secs() { echo "$1 $2" | awk '{ printf "%.2f", $2 - $1 }'; }

# One validate run: prints "LABEL: S s, exit N".
timed() { # label file
	t0=$(now)
	"$T" validate -f "$2" >out.txt 2>&1
	rc=$?
	t1=$(now)
	printf '%-44s %6s s  exit %s  %s\n' "$1" "$(secs "$t0" "$t1")" "$rc" \
		"$(grep -m1 -o 'Error: .*\|Success! .*' out.txt | cut -c1-60)"
}

{
	echo "fleet: big"
	echo "provider: { local: {} }"
	echo "run: \"true\""
	echo "groups:"
	awk 'BEGIN { for (i = 0; i < 40000; i++)
		printf "  - {name: g%d, accelerator_type: v2-8, runtime_version: x, zones: [local-a], count: 1}\n", i }'
} >groups.yaml
awk 'BEGIN { printf "fleet: deep\nx: "; for (i = 0; i < 100000; i++) printf "["; for (i = 0; i < 100000; i++) printf "]"; print "" }' >deep.yaml

timed "validate -f /dev/zero" /dev/zero
timed "validate, 100,000-deep [[[...]]]" deep.yaml
timed "validate, 40,000 groups" groups.yaml

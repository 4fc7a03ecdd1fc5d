#!/bin/sh
# tests/lint/funclen.sh (make lint): a function of more than the limit is
# reported with its file, line and name and fails the check; one at the
# limit passes; signatures over several lines and tests/ are handled.
. "$(dirname "$0")/lib.sh"
setup_dir t011

# Write to $1 a function named $2 of exactly $3 lines, signature included.
# $4: "split" puts the signature over two lines.
function_of() {
	{
		if [ "${4:-}" = split ]; then
			printf 'static int %s(int a,\n\t\tint b)\n{\n' "$2"
			body=$(($3 - 4))
		else
			printf 'int %s(void)\n{\n' "$2"
			body=$(($3 - 3))
		fi
		i=0
		while [ "$i" -lt "$body" ]; do
			printf '\tx++;\n'
			i=$((i + 1))
		done
		printf '}\n\n'
	} >>"$1"
}

mkdir -p tree/plan tree/tests/unit
function_of tree/plan/a.c at_limit 120
function_of tree/plan/a.c over 121 split
function_of tree/plan/a.c small 5
function_of tree/tests/unit/test_x.c long_test 300
fails "a function of 121 lines fails the check" 1 sh "$TOP/tests/lint/funclen.sh" tree
out=$(cat last.out)
like "named with its file and first line" "$out" '^plan/a.c:122: over is 121 lines \(limit 120\)$'
unlike "one of exactly 120 lines passes" "$out" 'at_limit'
unlike "tests/ are not product code" "$out" 'long_test'
like "the summary counts every function" "$out" '^funclen: 3 functions, 1 over 120 lines$'
ok "-max raises the limit" sh "$TOP/tests/lint/funclen.sh" -max 121 tree
like "-all lists every function with its length" \
	"$(sh "$TOP/tests/lint/funclen.sh" -all -max 200 tree)" '^plan/a.c:1: at_limit is 120 lines$'
fails "a bad -max is a usage error" 2 sh "$TOP/tests/lint/funclen.sh" -max x tree
finish

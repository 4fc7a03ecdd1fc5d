#!/bin/sh
# Function length report: every C function in product code (the folders of
# the layer table) longer than the limit, in file order. The house rule is
# "functions under 120 lines" (docs/ARCHITECTURE.md, "House rules").
#
#   sh tests/lint/funclen.sh [-max N] [-all] [ROOT]
#
#   -max N   the limit in lines (default 120): a function of more than N
#            lines fails the check
#   -all     list every function with its length, not only those over
#
# A function is counted from the first line of its definition (return type
# and name) to its closing brace, as the code is written in this project:
# the opening and closing braces of a function body stand alone in column 0.
# Prints "FILE:LINE: NAME is N lines (limit MAX)" per long function and a
# summary line; exits 1 when any function is over the limit, 2 on bad usage.
set -u
max=120
all=0
while [ $# -gt 0 ]; do
	case $1 in
	-max) [ $# -ge 2 ] || { echo "funclen: -max needs a number" >&2; exit 2; }
		max=$2; shift 2 ;;
	-max=*) max=${1#-max=}; shift ;;
	-all) all=1; shift ;;
	-*) echo "funclen: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
case $max in '' | *[!0-9]*) echo "funclen: -max needs a number, got '$max'" >&2; exit 2 ;; esac
root=${1:-.}
cd "$root" || exit 2

# Product code: the folders of the layer table (docs/ARCHITECTURE.md), not
# tests/ and not what runs create elsewhere (a local worker's checkout of
# this repository under examples/.tpuform/), without generated files.
files=$(find util model google config state source templates providers plan engine cmd \
	\( -name '*.c' -o -name '*.h' \) -type f -print 2>/dev/null |
	grep -v '^templates/embedded\.c$' | sort)
[ -n "$files" ] || { echo "funclen: no C files under $root" >&2; exit 2; }

# shellcheck disable=SC2086 # file names of this repository: no spaces
awk -v max="$max" -v all="$all" '
# Remember the recent lines of the file: a signature ends on the line
# before its "{".
FNR == 1 { depth = 0; nsig = 0 }
depth == 0 && /^\{/ {
	# Walk back to the line that starts the definition: the first line
	# at column 0 that is not a brace, a comment or a preprocessor line.
	start = FNR - 1
	sig = prev[start % 16]
	for (k = 1; k < 8 && start - k >= 1; k++) {
		line = prev[start % 16]
		if (line ~ /^[A-Za-z_]/)
			break
		start--
		sig = prev[start % 16] " " sig
	}
	# A function signature ends with ")" (maybe with attributes after).
	if (sig ~ /\)[[:space:]]*(__attribute__.*)?$/ && match(sig, /[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(/)) {
		name = substr(sig, RSTART, RLENGTH)
		sub(/[[:space:]]*\($/, "", name)
		depth = 1
		fstart = start
		ffile = FILENAME
	}
}
depth == 1 && /^\}/ {
	len = FNR - fstart + 1
	note = (len > max) ? " (limit " max ")" : ""
	if (all || len > max)
		printf "%s:%d: %s is %d lines%s\n", ffile, fstart, name, len, note
	if (len > max)
		over++
	count++
	depth = 0
}
{ prev[FNR % 16] = $0 }
END {
	printf "funclen: %d functions, %d over %d lines\n", count, over, max
	exit over > 0
}' $files

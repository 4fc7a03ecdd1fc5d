#!/bin/sh
# cppcheck over product code (every .c outside tests/).
#
#   sh tests/lint/cppcheck.sh [FILE.c or DIR...]   (default: all product code)
#
# Checks: warning, style, performance, portability (not "information", not
# unusedFunction: public functions are called from other files and tests).
# System and library headers are not read (fast, and not ours to check);
# tests/lint/cppcheck.cfg tells cppcheck the library macros it must know to
# parse our code (jansson's json_object_foreach, json_array_foreach).
# Exits 1 on any finding. CPPCHECK (default cppcheck) names the program;
# LINT_JOBS (default 2) files run at once.
#
# A false positive gets an inline suppression on the line before, with the
# reason after the semicolon:
#     // cppcheck-suppress nullPointerRedundantCheck ; callers pass one of dn, sn, ln
# Suppressions without a reason are refused by this script.
set -u
cd "$(dirname "$0")/../.." || exit 2
CPPCHECK=${CPPCHECK:-cppcheck}
command -v "$CPPCHECK" >/dev/null 2>&1 || {
	echo "cppcheck: $CPPCHECK not found (Debian: apt-get install cppcheck; make deps installs it)" >&2
	exit 2
}
dirs="util model google config state source plan providers engine cmd templates"
if [ $# -eq 0 ]; then
	# shellcheck disable=SC2086 # a list of this repository's folders, split on purpose
	set -- $dirs
fi
# Every suppression says why: "cppcheck-suppress ID ; REASON".
# shellcheck disable=SC2086 # a list of this repository's folders, split on purpose
bare=$(grep -rnE 'cppcheck-suppress' --include='*.c' --include='*.h' $dirs |
	grep -vE 'cppcheck-suppress[[:space:]]+[A-Za-z0-9_]+[[:space:]]*;[[:space:]]*[^[:space:]]')
if [ -n "$bare" ]; then
	printf '%s\n' "$bare"
	echo "cppcheck: suppressions above carry no reason: write '// cppcheck-suppress ID ; why'"
	exit 1
fi
out=$(mktemp) || exit 2
trap 'rm -f "$out"' EXIT
# The build's defines (Makefile CFLAGS). templates/embedded.c is generated.
"$CPPCHECK" -j "${LINT_JOBS:-2}" --quiet --std=c11 --enable=warning,style,performance,portability \
	--library=tests/lint/cppcheck.cfg --inline-suppr --suppress=missingIncludeSystem \
	-i templates/embedded.c -I. -D_GNU_SOURCE -DTPF_VERSION='"lint"' \
	--template='{file}:{line}:{column}: {severity}: {message} [{id}]' \
	--error-exitcode=0 "$@" >"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -ne 0 ]; then
	echo "cppcheck: exited $rc"
	exit 1
fi
found=$(grep -cE ': (error|warning|style|performance|portability): ' "$out")
if [ "$found" -gt 0 ]; then
	echo "cppcheck: $found finding(s)"
	exit 1
fi
echo "cppcheck: $*: no findings"

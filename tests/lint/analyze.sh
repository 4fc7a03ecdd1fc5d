#!/bin/sh
# The clang static analyzer over product code (every .c outside tests/).
#
#   sh tests/lint/analyze.sh [FILE.c...]     (default: all product code)
#
# Each file is analysed on its own (clang --analyze, text output: the
# warning and the path that leads to it). Compiler warnings are left to the
# real build (-Werror); this reports only the analyzer's findings, and
# exits 1 when there is any. LINT_JOBS (default 2) files run at once;
# CLANG (default clang) names the compiler.
#
# False positives get the narrowest suppression that names the reason, in
# the code (e.g. util/diag.h tells the analyzer that tpf_error() always
# returns TPF_ERROR, which it cannot see across files).
set -u
cd "$(dirname "$0")/../.." || exit 2
CLANG=${CLANG:-clang}
command -v "$CLANG" >/dev/null 2>&1 || {
	echo "analyze: $CLANG not found (Debian: apt-get install clang; make deps installs it)" >&2
	exit 2
}
pkgs="libcurl yaml-0.1 jansson libgit2 libssh2 libcrypto"
# shellcheck disable=SC2086 # a list of module names, split on purpose
pkg_cflags=$(pkg-config --cflags $pkgs) || {
	echo "analyze: pkg-config does not know $pkgs (run make deps)" >&2
	exit 2
}
if [ $# -eq 0 ]; then
	# shellcheck disable=SC2046 # paths of this repository: no spaces
	set -- $(find util model google config state source plan providers engine cmd templates \
		-name '*.c' ! -name embedded.c | sort)
fi
out=$(mktemp) || exit 2
trap 'rm -f "$out"' EXIT
# The build's defines (Makefile CFLAGS), no warnings: the analyzer's only.
export CLANG ANALYZE_FLAGS="-std=gnu11 -D_GNU_SOURCE -DTPF_VERSION=\"lint\" -I. -pthread -w $pkg_cflags"
# shellcheck disable=SC2016 # expanded by the inner sh, from the environment
printf '%s\n' "$@" | xargs -P "${LINT_JOBS:-2}" -I{} \
	sh -c '$CLANG --analyze $ANALYZE_FLAGS -Xclang -analyzer-output=text -o /dev/null "$1" 2>&1' \
	analyze {} >"$out"
cat "$out"
# Analyzer findings end with their checker's name: "[core.NullDereference]".
found=$(grep -cE ': (warning|error): .*\[[a-z]+\.[A-Za-z.]+\]$|: error: ' "$out")
if [ "$found" -gt 0 ]; then
	echo "analyze: $found finding(s) in $# files"
	exit 1
fi
echo "analyze: $# files, no findings"

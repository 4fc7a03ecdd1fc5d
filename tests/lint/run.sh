#!/bin/sh
# make lint: the static checks, all of them even when one fails.
#
#   - funclen: no function in product code over 120 lines (tests/lint/funclen.sh)
#   - shellcheck: the shell scripts (tests/lint/shellcheck.sh)
#   - analyze: the clang static analyzer over product code (tests/lint/analyze.sh)
#   - cppcheck: cppcheck over product code (tests/lint/cppcheck.sh)
#   - layering: every #include points down (tests/layering.sh)
#   - calls: no call circle between the files of a product folder, every
#     folder found at any depth (tests/lint/calls.sh; reads the objects of
#     the last build; the folders with known circles are listed there and
#     not yet checked)
#   - basenames: no two product sources or headers share a basename
#     (tests/lint/basenames.sh)
#
# LINT="funclen layering" runs only those. Each check's output is printed
# as it comes; the last line is "lint: N passed, N failed (NAMES)" and the
# exit status is 1 when any check failed.
set -u
cd "$(dirname "$0")/../.." || exit 2
passed=0
failed=0
failures=""
for check in ${LINT:-funclen shellcheck analyze cppcheck layering calls basenames}; do
	case $check in
	funclen | shellcheck | analyze | cppcheck | calls | basenames) script=tests/lint/$check.sh ;;
	layering) script=tests/layering.sh ;;
	*) echo "lint: unknown check '$check' (funclen shellcheck analyze cppcheck layering calls basenames)" >&2; exit 2 ;;
	esac
	echo "# lint: $check ($script)"
	if sh "$script"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failures="$failures $check"
	fi
done
echo "lint: $passed passed, $failed failed${failures:+ (failed:$failures)}"
[ "$failed" -eq 0 ]

#!/bin/sh
# Runs shellcheck over the project's shell scripts: templates/*.sh
# (templates/bootstrap.sh runs with /bin/sh on workers, so it must stay
# POSIX), every tests/**/*.sh (not the tests' output, tests/out/) and
# examples/*.sh.
#
#   sh tests/lint/shellcheck.sh [FILE...]     (default: all of them)
#
# Sourced files are followed (-x), found beside the script that sources
# them. A finding that is intended gets a "# shellcheck disable=SCxxxx"
# with its reason on the line before, in the script itself. Exits 1 on any
# finding, 2 when shellcheck is missing (Debian: apt-get install shellcheck;
# make deps installs it).
set -u
cd "$(dirname "$0")/../.." || exit 2
command -v shellcheck >/dev/null 2>&1 || {
	echo "shellcheck: not installed (Debian: apt-get install shellcheck; make deps installs it)" >&2
	exit 2
}
if [ $# -eq 0 ]; then
	# shellcheck disable=SC2046 # paths of this repository: no spaces
	set -- templates/*.sh examples/*.sh \
		$(find tests -path tests/out -prune -o -name '*.sh' -print | sort)
fi
if shellcheck -x -P SCRIPTDIR -f gcc "$@"; then
	echo "shellcheck: $# files, no findings"
	exit 0
fi
echo "shellcheck: findings above (file:line:column: level: message [SCxxxx])"
exit 1

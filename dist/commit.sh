#!/bin/sh
# The commit this tree is built from, for `tpuform version`: the short hash
# of HEAD, with "-dirty" when tracked files differ from it (as
# `git describe --dirty` says), or the commit a release tarball recorded in
# its .tarball-version (`make dist`), or "unknown" with neither.
#
#   sh dist/commit.sh [DIR]     (DIR: the source tree, default: this one's)
set -u
cd "${1:-$(dirname "$0")/..}" || exit 1
if [ -f .tarball-version ]; then
	sed -n 's/^commit=//p' .tarball-version
	exit 0
fi
if [ -e .git ] && c=$(git rev-parse --short=12 HEAD 2>/dev/null); then
	# Refresh stat data first, so a touched but unchanged file is not dirty.
	git update-index -q --refresh >/dev/null 2>&1
	git diff-index --quiet HEAD -- 2>/dev/null || c="$c-dirty"
	echo "$c"
	exit 0
fi
echo unknown

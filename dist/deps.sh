#!/bin/sh
# make deps (and so make check, make demo, make lint): make sure what the
# build and the tests need is here.
#
#   DEB_PKGS="..." PKGS="..." sh dist/deps.sh
#
# With apt (Debian, Ubuntu): the Debian packages DEB_PKGS that are missing
# are installed when run as root; otherwise the command to run is printed,
# and the build goes on only if every pkg-config module PKGS is present.
# Without apt or dpkg (another distribution): nothing is installed; the
# missing pkg-config modules are named (install their -devel packages) and
# the build goes on when there are none.
set -u
missing_modules() {
	m=""
	for p in ${PKGS:-}; do
		pkg-config --exists "$p" 2>/dev/null || m="$m $p"
	done
	echo "$m"
}

if ! command -v pkg-config >/dev/null 2>&1 && ! command -v apt-get >/dev/null 2>&1; then
	echo "deps: pkg-config is not installed: install it (and the modules ${PKGS:-})" >&2
	exit 1
fi
if command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; then
	missing=""
	for p in ${DEB_PKGS:-}; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing="$missing $p"
	done
	if [ -z "$missing" ]; then
		echo "deps: all Debian packages present"
		exit 0
	fi
	if [ "$(id -u)" = 0 ]; then
		echo "deps: installing$missing"
		# shellcheck disable=SC2086 # a list of package names
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
		exit
	fi
	echo "deps: missing Debian packages; run:"
	echo "  sudo apt-get install -y$missing"
	mods=$(missing_modules)
	if [ -n "$mods" ] || ! command -v pkg-config >/dev/null 2>&1; then
		exit 1
	fi
	echo "deps: every pkg-config module is present: building anyway (some tests may skip or fail)"
	exit 0
fi
mods=$(missing_modules)
if [ -n "$mods" ]; then
	echo "deps: no apt here; missing pkg-config modules:$mods" >&2
	echo "deps: install their development packages (e.g. libcurl-devel on Fedora), then run make again" >&2
	exit 1
fi
echo "deps: no apt here; every pkg-config module is present (${PKGS:-})"
for prog in git screen ssh; do
	command -v "$prog" >/dev/null 2>&1 || echo "deps: note: '$prog' is not installed; tests that need it fail"
done
exit 0

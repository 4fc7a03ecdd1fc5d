#!/bin/sh
# Put tpuform on PATH for a CI job. Nothing to do when the runner image
# already has it (a self-hosted runner, or a cached build). Otherwise, in
# order of preference:
#   - TPUFORM_DEB: a tpuform_<version>_<arch>.deb (a path or an https URL;
#     `make deb` builds it, docs/install.md "Installing"), installed with apt, which
#     brings the library packages it depends on: no compiler, seconds;
#   - build it from TPUFORM_REPO at TPUFORM_REF with Debian/Ubuntu's
#     packages, as tpuform's README "Set-up on a fresh Debian machine" does.
#
#   TPUFORM_DEB    the package to install (optional)
#   TPUFORM_REPO   git URL of tpuform (a repository variable of yours)
#   TPUFORM_REF    tag or commit to build (pin it: the pipeline is code)
set -eu
sudo=sudo # hosted runners are not root; a root container may have no sudo
[ "$(id -u)" != 0 ] || sudo=
if command -v tpuform >/dev/null 2>&1; then
	echo "tpuform already installed: $(tpuform version | head -1)"
	exit 0
fi
if [ -n "${TPUFORM_DEB:-}" ]; then
	deb=$TPUFORM_DEB
	case $deb in
	https://*)
		deb=${RUNNER_TEMP:-/tmp}/tpuform.deb
		curl -fsSL -o "$deb" "$TPUFORM_DEB"
		;;
	*/*) ;;
	*) deb=./$deb ;; # apt takes a local package only as a path
	esac
	$sudo apt-get update -q
	$sudo apt-get install -y -q "$deb"
	tpuform version
	exit 0
fi
: "${TPUFORM_REPO:?set TPUFORM_REPO to the git URL of tpuform}"
: "${TPUFORM_REF:?set TPUFORM_REF to the tag or commit to build}"
$sudo apt-get update -q
$sudo apt-get install -y -q build-essential pkg-config libcurl4-openssl-dev libyaml-dev \
	libjansson-dev libgit2-dev libssh2-1-dev libssl-dev
src=${RUNNER_TEMP:-/tmp}/tpuform-src
git clone -q "$TPUFORM_REPO" "$src"
git -C "$src" checkout -q "$TPUFORM_REF"
make -C "$src" -j"$(nproc)" tpuform
$sudo install -m 0755 "$src/tpuform" /usr/local/bin/tpuform
tpuform version

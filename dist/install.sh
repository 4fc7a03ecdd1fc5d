#!/bin/sh
# make install / make uninstall (GNU directory variables, as the GNU Coding
# Standards' "Variables for Installation Directories" name them).
#
#   sh dist/install.sh install|uninstall
#
# Environment (the Makefile passes its variables):
#   DESTDIR        staging root, prepended to every path (default empty)
#   PREFIX         /usr/local
#   BINDIR         $PREFIX/bin
#   DATADIR        $PREFIX/share
#   MANDIR         $DATADIR/man
#   DOCDIR         $DATADIR/doc/tpuform (README, docs/, examples/)
#   BASHCOMPDIR    $DATADIR/bash-completion/completions
#   ZSHCOMPDIR     $DATADIR/zsh/vendor-completions
#   FISHCOMPDIR    $DATADIR/fish/vendor_completions.d
#   SYSTEMDUNITDIR $PREFIX/lib/systemd/system (PREFIX /usr: /lib/systemd/system)
#   STRIP          1: strip the installed binary (default: not stripped)
#   GEN            the generated man pages and completions (dist/gen.sh), default gen
#   TPUFORM        the binary, default ./tpuform
# uninstall removes exactly what install puts there, and the directories
# tpuform owns (the docs); shared directories are left.
set -u
cd "$(dirname "$0")/.." || exit 1
: "${DESTDIR:=}" "${PREFIX:=/usr/local}" "${STRIP:=}" "${GEN:=gen}" "${TPUFORM:=./tpuform}"
: "${BINDIR:=$PREFIX/bin}" "${DATADIR:=$PREFIX/share}"
: "${MANDIR:=$DATADIR/man}" "${DOCDIR:=$DATADIR/doc/tpuform}"
: "${BASHCOMPDIR:=$DATADIR/bash-completion/completions}"
: "${ZSHCOMPDIR:=$DATADIR/zsh/vendor-completions}"
: "${FISHCOMPDIR:=$DATADIR/fish/vendor_completions.d}"
if [ -z "${SYSTEMDUNITDIR:-}" ]; then
	if [ "$PREFIX" = /usr ]; then SYSTEMDUNITDIR=/lib/systemd/system; else SYSTEMDUNITDIR=$PREFIX/lib/systemd/system; fi
fi
D=$DESTDIR
unit=tpuform-watch@.service

# The files under examples/ that the project ships, one per line: what git
# tracks in a checkout, else the list `make dist` put in the tarball
# (.tarball-files). Fails with neither: a working tree's own files (a
# demo's logs) are never guessed at.
tracked_examples() {
	if [ -e .git ] && command -v git >/dev/null 2>&1 && git rev-parse --git-dir >/dev/null 2>&1; then
		git ls-files -- examples
	elif [ -f .tarball-files ]; then
		grep '^examples/' .tarball-files
	else
		return 1
	fi
}

do_install() {
	[ -x "$TPUFORM" ] || { echo "install: $TPUFORM is not built (run make)" >&2; exit 1; }
	[ -f "$GEN/man1/tpuform.1" ] || { echo "install: $GEN/ has no man pages (run make gen)" >&2; exit 1; }
	set -e
	install -d "$D$BINDIR" "$D$MANDIR/man1" "$D$BASHCOMPDIR" "$D$ZSHCOMPDIR" "$D$FISHCOMPDIR" \
		"$D$DOCDIR" "$D$SYSTEMDUNITDIR"
	install -m 0755 "$TPUFORM" "$D$BINDIR/tpuform"
	if [ "$STRIP" = 1 ]; then strip "$D$BINDIR/tpuform"; fi
	install -m 0644 "$GEN"/man1/tpuform*.1 "$D$MANDIR/man1/"
	install -m 0644 "$GEN/completion/tpuform.bash" "$D$BASHCOMPDIR/tpuform"
	install -m 0644 "$GEN/completion/_tpuform" "$D$ZSHCOMPDIR/_tpuform"
	install -m 0644 "$GEN/completion/tpuform.fish" "$D$FISHCOMPDIR/tpuform.fish"
	install -m 0644 README.md "$D$DOCDIR/README.md"
	# The reference pages README.md links to, at the same relative place.
	for f in docs/*.md; do
		install -D -m 0644 "$f" "$D$DOCDIR/$f"
	done
	# The examples: only the files the project ships, never what a run
	# left beside them (`make demo`'s state, its kept job logs under
	# demo.state.json.logs/, checkpoints, .tpuform/).
	if list=$(tracked_examples); then
		printf '%s\n' "$list" | while IFS= read -r f; do
			if [ -n "$f" ] && [ -f "$f" ]; then install -D -m 0644 "$f" "$D$DOCDIR/$f"; fi
		done
	else
		echo "install: the examples are not installed: this tree has neither git (.git) nor a" \
			"release tarball's list of files (.tarball-files, from make dist)" >&2
	fi
	sed "s|@BINDIR@|$BINDIR|g" contrib/systemd/$unit.in >"$D$SYSTEMDUNITDIR/$unit"
	chmod 0644 "$D$SYSTEMDUNITDIR/$unit"
	echo "installed tpuform into $D$PREFIX"
}

do_uninstall() {
	rm -f "$D$BINDIR/tpuform" "$D$MANDIR"/man1/tpuform.1 "$D$MANDIR"/man1/tpuform-*.1 \
		"$D$BASHCOMPDIR/tpuform" "$D$ZSHCOMPDIR/_tpuform" "$D$FISHCOMPDIR/tpuform.fish" \
		"$D$SYSTEMDUNITDIR/$unit"
	rm -rf "$D$DOCDIR"
	echo "removed tpuform from $D$PREFIX"
}

case ${1:-} in
install) do_install ;;
uninstall) do_uninstall ;;
*) echo "usage: sh dist/install.sh install|uninstall" >&2; exit 2 ;;
esac

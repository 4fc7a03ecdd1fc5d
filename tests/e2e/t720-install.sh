#!/bin/sh
# make install's script (dist/install.sh) with the GNU variables: the layout
# under DESTDIR and PREFIX, the binary stripped only with STRIP=1, the
# examples in the docs, uninstall removing all of it; the systemd unit
# passes `systemd-analyze verify` (when systemd-analyze is here).
# The tree's own build is not touched: the binary under test is installed
# with the pages and completions generated into this test's directory.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
setup_dir t720

# README: "`make` (build `./tpuform`)". An included makefile's rule came
# first once and plain `make` built only .build-info.
like "plain make's goal is all (the binary)" "$(make -pn -C "$TOP" 2>/dev/null | grep "^\.DEFAULT_GOAL")" "^\.DEFAULT_GOAL := all$"
ok "generate the man pages and completions" sh "$TOP/dist/gen.sh" "$TPUFORM" "$W/gen"
# shellcheck disable=SC2317 # called below
inst() {
	env GEN="$W/gen" TPUFORM="$TPUFORM" "$@" sh "$TOP/dist/install.sh" "$ACTION"
}
ACTION=install
ok "install DESTDIR=root PREFIX=/usr" inst DESTDIR="$W/root" PREFIX=/usr
r=$W/root
ok "bin/tpuform, executable" test -x "$r/usr/bin/tpuform"
ok "not stripped by default: the very binary" cmp "$TPUFORM" "$r/usr/bin/tpuform"
pages=$(tpuform help -commands | cut -f1 | grep -cv ' ')
is "man1: tpuform.1 and one page per command" \
	"$(find "$r/usr/share/man/man1" -name 'tpuform*.1' | wc -l | tr -d ' ')" $((pages + 1))
ok "man1/tpuform-apply.1" test -s "$r/usr/share/man/man1/tpuform-apply.1"
ok "bash completion" test -s "$r/usr/share/bash-completion/completions/tpuform"
ok "zsh completion" test -s "$r/usr/share/zsh/vendor-completions/_tpuform"
ok "fish completion" test -s "$r/usr/share/fish/vendor_completions.d/tpuform.fish"
ok "the examples under share/doc/tpuform" test -s "$r/usr/share/doc/tpuform/examples/local.yaml"
ok "the reference pages README.md links to, under share/doc/tpuform/docs" \
	test -s "$r/usr/share/doc/tpuform/docs/fleet-file.md"
ok "the systemd unit" test -s "$r/lib/systemd/system/tpuform-watch@.service"
like "which runs the installed binary" "$(cat "$r/lib/systemd/system/tpuform-watch@.service")" \
	"^ExecStart=/usr/bin/tpuform "
ok "the installed binary runs" "$r/usr/bin/tpuform" version
ACTION=uninstall
ok "uninstall with the same variables" inst DESTDIR="$W/root" PREFIX=/usr
is "leaves no file behind" "$(find "$r" -type f)" ""

ACTION=install
ok "BINDIR, MANDIR and STRIP=1" inst DESTDIR="$W/r2" PREFIX=/opt/t BINDIR=/opt/t/sbin \
	MANDIR=/opt/t/man STRIP=1
ok "the binary in BINDIR" test -x "$W/r2/opt/t/sbin/tpuform"
ok "the pages in MANDIR" test -s "$W/r2/opt/t/man/man1/tpuform.1"
if command -v readelf >/dev/null 2>&1; then
	is "STRIP=1: no symbol table" "$(readelf -S "$W/r2/opt/t/sbin/tpuform" | grep -c '\.symtab')" 0
fi
ok "the stripped binary runs" "$W/r2/opt/t/sbin/tpuform" version

if command -v systemd-analyze >/dev/null 2>&1; then
	# Installed for real under a prefix (no DESTDIR), so ExecStart's binary and
	# the Documentation= page exist where the unit says.
	ok "install PREFIX=pfx" inst PREFIX="$W/pfx"
	u=$W/pfx/lib/systemd/system
	ln -s tpuform-watch@.service "$u/tpuform-watch@srv-fleet.service"
	ok "systemd-analyze verify accepts an instance of tpuform-watch@.service" \
		env MANPATH="$W/pfx/share/man" systemd-analyze verify "$u/tpuform-watch@srv-fleet.service"
	like "  with the sandboxing options" "$(cat "$u/tpuform-watch@.service")" "^ProtectSystem=strict$"
else
	_n=$((_n + 1))
	echo "ok $_n # SKIP systemd-analyze is not installed"
fi
finish

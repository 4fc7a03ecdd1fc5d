#!/bin/sh
# Man pages say what is true (issue 26 item 10): a footer's examples are
# one per line (they were filled into one line), and each command's EXIT
# STATUS gives its own codes: exec's and ssh's the remote command's, plan's
# -detailed-exitcode 2 and 3 (and no other page's), 130/143 only for the
# commands that die of a signal. No nodes, no loopback block.
. "$(dirname "$0")/lib.sh"
setup_dir t678
# The text of section $2 of page $1 as rendered (groff), or its source.
section() {
	tpuform help -man "$1" >"$1.1"
	if command -v groff >/dev/null 2>&1; then
		MANWIDTH=200 groff -man -Tascii -rLL=200n "$1.1" 2>/dev/null | col -bx |
			awk -v s="$2" '/^[A-Z]/ { on = ($0 == s) ; next } on'
	else
		awk -v s=".SH $2" -v q=".SH \"$2\"" '/^\.SH/ { on = ($0 == s || $0 == q); next } on' "$1.1"
	fi
}
notes=$(section exec NOTES)
like "exec: the first example on a line of its own" "$notes" "^ *tpuform exec my-node -- 'cat > cfg.yaml' < cfg.yaml *$"
like "exec: the second on the next" "$notes" "^ *tpuform exec -all -- nvidia-smi *$"
for c in ssh ssh-config; do
	n=$(section "$c" NOTES | grep -c '^ *tpuform ')
	is "$c: every example on its own line" "$n" "$(tpuform help "$c" | grep -c '^  tpuform ')"
done
ex=$(section exec "EXIT STATUS" | tr -s ' \n' '  ')
like "exec's exit status: the workers' highest" "$ex" "1-255 The highest of the workers' exit statuses"
unlike "exec's: nothing of plan's -detailed-exitcode" "$ex" "detailed-exitcode"
unlike "exec's: no 143 (it forwards signals)" "$ex" "143"
like "exec's: a third interrupt exits 130" "$ex" "130 A third SIGINT"
pl=$(section plan "EXIT STATUS" | tr -s ' \n' '  ')
like "plan's: 2 with -detailed-exitcode" "$pl" "2 Only with -detailed-exitcode: success, with changes"
like "plan's: 130, 143 (read-only)" "$pl" "130, 143 Stopped by SIGINT or SIGTERM"
va=$(section validate "EXIT STATUS" | tr -s ' \n' '  ')
unlike "validate's: no 2 or 3" "$va" "detailed-exitcode"
ap=$(section apply "EXIT STATUS" | tr -s ' \n' '  ')
unlike "apply's: no 130/143 (an interrupted apply exits 1)" "$ap" "143"
like "apply's: an interrupt exits 1" "$ap" "Also after an interrupt"
finish

#!/bin/sh
# What the build generates from the command table through the binary
# (cmd/gen.h): the man pages and the shell completions.
#
#   sh dist/gen.sh TPUFORM DIR
#
# writes DIR/man1/tpuform.1 and DIR/man1/tpuform-COMMAND.1 (one per
# top-level command of `tpuform help -commands`), and DIR/completion/
# tpuform.bash, _tpuform (zsh) and tpuform.fish. Exits 1 if any fails.
set -u
bin=$1
dir=$2
mkdir -p "$dir/man1" "$dir/completion" || exit 1
rm -f "$dir"/man1/tpuform*.1
fail=0
"$bin" help -man >"$dir/man1/tpuform.1" || fail=1
cmds=$("$bin" help -commands | cut -f1 | grep -v ' ') || fail=1
for c in $cmds; do
	"$bin" help -man "$c" >"$dir/man1/tpuform-$c.1" || fail=1
done
"$bin" help -completion=bash >"$dir/completion/tpuform.bash" || fail=1
"$bin" help -completion=zsh >"$dir/completion/_tpuform" || fail=1
"$bin" help -completion=fish >"$dir/completion/tpuform.fish" || fail=1
[ "$fail" -eq 0 ] || echo "gen: generating the man pages or completions with $bin failed" >&2
exit "$fail"

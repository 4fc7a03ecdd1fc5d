#!/bin/sh
# make install ships only the examples the project ships (issue 26): after
# `make demo`, dist/install.sh installed
# examples/demo.state.json.logs/demo-eval-0/g0-w0.log (its filter tested
# file names, not the directories they are in). Now: what git tracks in a
# checkout, what the release tarball's .tarball-files lists (make dist
# writes it) without git, and no examples at all with neither.
# The tree is a copy in this test's directory (the tracked examples, the
# Makefile and dist/), so the real examples/ is never touched; what a run
# leaves is put beside the copies: a demo's state and kept logs, .tpuform/,
# a checkpoint.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
setup_dir t666
if ! git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
	echo "1..0 # SKIP the tree is not a git checkout: its tracked examples are unknown"
	exit 0
fi

# The source tree: the files install.sh and make dist read, the examples git tracks.
S=$W/src
mkdir -p "$S/tests/fuzz"
(cd "$TOP" && cp -R Makefile README.md dist docs contrib "$S/" && cp tests/fuzz/fuzz.mk "$S/tests/fuzz/")
(cd "$TOP" && git ls-files -- examples) >tracked
while IFS= read -r f; do
	mkdir -p "$S/$(dirname "$f")" && cp -p "$TOP/$f" "$S/$f"
done <tracked
(cd "$S" && git init -q . && git add -A . &&
	git -c user.email=t@example.invalid -c user.name=test commit -qm tree) >/dev/null
ok "the copy tracks the same examples" sh -c "cd '$S' && git ls-files -- examples | cmp - '$W/tracked'"

# What runs leave in examples/ (make demo: examples/demo.sh).
leave_runs() { # DIR: the examples directory
	mkdir -p "$1/demo.state.json.logs/demo-eval-0" "$1/.tpuform/local/bucket/demo" "$1/checkpoints/step-100"
	echo '{}' >"$1/demo.state.json"
	echo '{}' >"$1/demo.state.json.backup"
	echo "job log" >"$1/demo.state.json.logs/demo-eval-0/g0-w0.log"
	chmod 0600 "$1/demo.state.json.logs/demo-eval-0/g0-w0.log"
	echo ckpt >"$1/.tpuform/local/bucket/demo/ckpt-100"
	echo weights >"$1/checkpoints/step-100/model.bin"
}
leave_runs "$S/examples"

ok "generate the man pages and completions" sh "$TOP/dist/gen.sh" "$TPUFORM" "$W/gen"
# shellcheck disable=SC2317 # called through ok
inst() { # TREE ROOT
	env GEN="$W/gen" TPUFORM="$TPUFORM" DESTDIR="$2" PREFIX=/usr sh "$1/dist/install.sh" install
}
# installed ROOT: the installed examples, as paths under examples/, sorted.
installed() {
	if [ -d "$1/usr/share/doc/tpuform/examples" ]; then
		(cd "$1/usr/share/doc/tpuform" && find examples -type f | LC_ALL=C sort)
	fi
}
LC_ALL=C sort tracked >want

ok "install from the git checkout" inst "$S" "$W/root"
is "exactly the tracked examples are installed" "$(installed "$W/root")" "$(cat want)"
ok "  no kept log" test ! -e "$W/root/usr/share/doc/tpuform/examples/demo.state.json.logs"
ok "  no state, no checkpoint, no .tpuform" \
	sh -c "! find '$W/root' \( -name '*.state.json*' -o -name checkpoints -o -name .tpuform \) | grep -q ."
ok "  local.yaml is there" test -s "$W/root/usr/share/doc/tpuform/examples/local.yaml"

# The release tarball: no .git, its file list instead.
ok "make dist" make -s -C "$S" dist
tarball=$(ls "$S"/tpuform-*.tar.gz)
mkdir rel && tar -C rel -xzf "$tarball"
R=$(ls -d rel/tpuform-*)
ok "the tarball lists its files (.tarball-files)" grep -qx 'examples/local.yaml' "$R/.tarball-files"
ok "  and has no .git" test ! -e "$R/.git"
leave_runs "$R/examples"
ok "install from the release tarball" inst "$R" "$W/root2"
is "exactly the tracked examples are installed" "$(installed "$W/root2")" "$(cat want)"

rm "$R/.tarball-files"
ok "install from a tree with neither git nor .tarball-files" inst "$R" "$W/root3"
like "  says the examples are not installed" "$(cat last.out)" "the examples are not installed"
is "  and installs none" "$(installed "$W/root3")" ""
ok "  but the rest" test -x "$W/root3/usr/bin/tpuform"
finish

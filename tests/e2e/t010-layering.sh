#!/bin/sh
# The layering rule (docs/ARCHITECTURE.md): every #include in product code
# points down the layer table or stays in its own folder. Runs
# tests/layering.sh on this tree, and first on small trees that break each
# rule, so a checker that stopped seeing violations would fail here too.
. "$(dirname "$0")/lib.sh"
setup_dir t010

# A tree with one file per given path, each including the header given.
tree() {
	rm -rf tree
	while [ $# -ge 2 ]; do
		mkdir -p "tree/$(dirname "$1")"
		printf '#include "%s"\n' "$2" >"tree/$1"
		shift 2
	done
}

tree util/a.c util/a.h cmd/main.c engine/apply/apply.h engine/apply/apply.c plan/plan.h \
	plan/diff.c model/live.h providers/gcp/gcp.c providers/ssh/ssh.h
ok "a tree whose includes point down passes" sh "$TOP/tests/layering.sh" tree

tree util/a.c cmd/cmd.h
fails "util including cmd/ fails" 1 sh "$TOP/tests/layering.sh" tree
like "naming the file, the line and the rule" "$(cat last.out)" \
	'^util/a.c:1: includes "cmd/cmd.h": points up \(util is layer 0, cmd is layer 14\)$'

tree plan/diff.c providers/provider.h
fails "plan including providers/ fails" 1 sh "$TOP/tests/layering.sh" tree
like "because plan is pure" "$(cat last.out)" 'plan is pure: no providers'

tree providers/gcp/gcp.c providers/local/local.h
fails "gcp including local (peers) fails" 1 sh "$TOP/tests/layering.sh" tree
like "as a sideways include" "$(cat last.out)" 'sideways between peers'

tree providers/gcp/compute/c.c providers/gcp/tpu/gcp_api.h
fails "one gcp back-end including the other fails" 1 sh "$TOP/tests/layering.sh" tree
like "as sideways between back-ends" "$(cat last.out)" "sideways between the gcp provider's back-ends"

tree providers/gcp/tpu/t.c providers/gcp/gcp_client_internal.h providers/gcp/p.c providers/gcp/compute/compute_engine.h
ok "a back-end and its provider may include each other" sh "$TOP/tests/layering.sh" tree

tree cmd/cmd_watch.c plan/plan_internal.h
fails "a private header used from another folder fails" 1 sh "$TOP/tests/layering.sh" tree
like "as private" "$(cat last.out)" 'private header of plan'

tree tests/fakegcp/fg.c model/live.h
fails "the emulator including more than util/ fails" 1 sh "$TOP/tests/layering.sh" tree
like "as the emulator's rule" "$(cat last.out)" 'the emulator may include only util/'

ok "this tree: every include points down (sh tests/layering.sh)" sh "$TOP/tests/layering.sh" "$TOP"
finish

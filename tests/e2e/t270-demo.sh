#!/bin/sh
# `make demo` can be run again (issue 9): a demo fleet that is still up is
# resumed; otherwise old checkpoints are removed, so training starts at
# step 0. The closing text matches what the job does. Runs examples/demo.sh
# on a copy of examples/ inside a throwaway repository (the demo's source
# is the repository above examples/).
. "$(dirname "$0")/lib.sh"
setup_dir t270
mkdir -p demo/examples
cp "$TOP/examples/demo.sh" "$TOP/examples/local.yaml" "$TOP/examples/train.sh" demo/examples/
ln -s "$TPUFORM" demo/tpuform
(
	cd demo &&
	git init -q -b main . &&
	git config user.email t@example.invalid &&
	git config user.name test &&
	printf '.tpuform/\n*.state.json*\n.*.lock.info\n' >examples/.gitignore &&
	git add examples && git commit -qm demo
)
ckpt=demo/examples/.tpuform/local/bucket/demo/demo-train-0/w0/checkpoint
demo_tpuform() { (cd demo/examples && ../tpuform "$@"); }

ok "make demo's script runs" sh demo/examples/demo.sh
cp last.out first.out
like "a first run starts fresh" "$(cat first.out)" "A fresh demo: no checkpoints from earlier runs"
like "and applies the fleet" "$(cat first.out)" "Apply complete! Resources: 3 added"
steps=$(sed -n 's/^  STEPS: "\([0-9]*\)".*/\1/p' demo/examples/local.yaml)
like "the closing text gives the job's real length ($steps steps)" "$(cat first.out)" "$steps steps on demo-train-0"
ok "the job checkpoints" wait_for 20 test -s "$ckpt"

ok "a second run works" sh demo/examples/demo.sh
like "and resumes the fleet that is up" "$(cat last.out)" "still up: this run resumes it"
ok "keeping its checkpoints" test -s "$ckpt"

ok "destroy" demo_tpuform destroy -f local.yaml -auto-approve
ok "a third run, after destroy, works" sh demo/examples/demo.sh
like "and starts fresh again" "$(cat last.out)" "A fresh demo"
# The old checkpoint was removed before apply: the new job starts at 0.
ok "the new job starts at step 0" wait_for 20 sh -c "cd demo/examples && ../tpuform logs -f local.yaml demo-train-0 -n 0 | grep -q 'starting train'"
unlike "and does not resume an old run" "$(demo_tpuform logs -f local.yaml demo-train-0 -n 0)" "resuming from step"
ok "destroy at the end" demo_tpuform destroy -f local.yaml -auto-approve
finish

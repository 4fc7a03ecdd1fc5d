#!/bin/sh
# `make demo`: the main job on the embedded local provider, start to end.
# It can be run again: a demo fleet that is still up is resumed as it is;
# otherwise checkpoints of earlier demos are removed, so training starts at
# step 0 and the walk-through below shows a real resume.
set -eu
cd "$(dirname "$0")"
T=../tpuform
bucket=.tpuform/local/bucket/demo

if [ -s demo.state.json ] && [ -n "$($T state list -f local.yaml 2>/dev/null)" ]; then
	echo "==> A demo fleet from an earlier 'make demo' is still up: this run resumes it."
	echo "    To start over: (cd examples && ../tpuform destroy -f local.yaml -auto-approve)"
else
	rm -rf "$bucket"
	echo "==> A fresh demo: no checkpoints from earlier runs, so training starts at step 0."
fi
echo
echo "==> tpuform validate -f local.yaml"
$T validate -f local.yaml
echo
echo "==> tpuform plan -f local.yaml"
$T plan -f local.yaml
echo
echo "==> tpuform apply -f local.yaml -auto-approve"
$T apply -f local.yaml -auto-approve
sleep 3
echo
echo "==> tpuform show -f local.yaml"
$T show -f local.yaml
cat <<'MSG'

The demo fleet is up: 3 nodes, 4 workers. Every worker runs examples/train.sh
in a screen session. The job fits y = 3x + 2 by gradient descent, one step a
second, and saves a checkpoint after every step: 180 steps on demo-train-0
(about 3 minutes), 60 on the eval nodes. Then it exits 0 and prints "done".

Walk through a preemption, from examples/:
  ../tpuform logs -f local.yaml demo-train-0 -follow   # the steps; Ctrl-C stops following
  ../tpuform local preempt -f local.yaml demo-train-0  # what Cloud TPU does to a preemptible node
  ../tpuform plan -f local.yaml                        # -/+ demo-train-0 must be replaced
  ../tpuform apply -f local.yaml -auto-approve         # re-created with TPUFORM_RETRY=1
  ../tpuform logs -f local.yaml demo-train-0           # "resuming from step N (retry 1, ...)"
  ../tpuform ssh -f local.yaml demo-train-0            # a shell on worker 0; try: screen -ls
  ../tpuform destroy -f local.yaml -auto-approve       # delete the fleet when done
MSG

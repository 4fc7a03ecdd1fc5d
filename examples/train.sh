#!/bin/sh
# A small "training" job for the local demo: fits y = a*x + b to noisy data
# by gradient descent, one epoch per step, and checkpoints (a, b, step)
# after every step. Restarted (TPUFORM_RETRY > 0, e.g. after a preemption),
# it resumes from the last checkpoint instead of starting over.
#
# The checkpoint lives in $TPUFORM_BUCKET (the local provider's stand-in
# for a GCS bucket), keyed by node and worker, so it survives the node
# being deleted and re-created.
set -eu
steps=${STEPS:-20}
pause=${STEP_SECONDS:-1}
mode=${1:-train}
bucket=${TPUFORM_BUCKET:-${TMPDIR:-/tmp}/tpuform-bucket}
ckpt_dir="$bucket/${TPUFORM_FLEET:-demo}/${TPUFORM_NODE:-node}/w${TPUFORM_WORKER_ID:-0}"
ckpt="$ckpt_dir/checkpoint"
mkdir -p "$ckpt_dir"

a=0
b=0
step=0
if [ -f "$ckpt" ]; then
	read -r step a b <"$ckpt"
	echo "resuming from step $step (retry ${TPUFORM_RETRY:-0}, a=$a b=$b)"
else
	echo "starting $mode on ${TPUFORM_NODE:-?} worker ${TPUFORM_WORKER_ID:-0}/${TPUFORM_NUM_WORKERS:-1} (retry ${TPUFORM_RETRY:-0}, commit ${TPUFORM_COMMIT:-none})"
fi

while [ "$step" -lt "$steps" ]; do
	step=$((step + 1))
	# One epoch over 200 points of y = 3x + 2 + noise; each worker gets
	# its own shard of x via its worker id.
	out=$(awk -v a="$a" -v b="$b" -v w="${TPUFORM_WORKER_ID:-0}" -v s="$step" 'BEGIN {
		srand(1000 * w + 7); lr = 0.05; loss = 0
		for (i = 0; i < 200; i++) {
			x = (i + 200 * w) / 400.0; y = 3 * x + 2 + (rand() - 0.5) * 0.1
			e = a * x + b - y; loss += e * e
			a -= lr * e * x; b -= lr * e
		}
		printf "%.6f %.6f %.6f", a, b, loss / 200
	}')
	# shellcheck disable=SC2086 # three numbers, split on purpose
	set -- $out
	a=$1
	b=$2
	loss=$3
	echo "$step $a $b" >"$ckpt.tmp" && mv "$ckpt.tmp" "$ckpt"
	echo "step $step/$steps loss=$loss a=$a b=$b"
	sleep "$pause"
done
echo "done: $steps steps, a=$a b=$b (want a=3 b=2)"

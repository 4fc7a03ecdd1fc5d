#!/bin/sh
# `make demo`: the main job on the embedded local provider, start to end.
set -eu
cd "$(dirname "$0")"
T=../tpuform
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

The jobs keep running in screen sessions (one per worker). Try:
  cd examples
  ../tpuform logs -f local.yaml demo-train-0 -follow
  ../tpuform local preempt -f local.yaml demo-train-0 && ../tpuform apply -f local.yaml
  ../tpuform destroy -f local.yaml -auto-approve
MSG

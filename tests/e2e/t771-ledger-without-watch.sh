#!/bin/sh
# shellcheck disable=SC2317 # the helpers are called through ok and wait_for
# The ledger records what happened, whoever saw it (issue 29): with no
# watch running, a preemption that `apply` acts on is a `preempted` line
# (report counts it, the page marks it), and a job that failed and that
# `apply` restarts is a `job_failed` line, so its time is not goodput.
# One preemption makes one line: the next apply writes none.
. "$(dirname "$0")/lib.sh"
setup_dir t771
cat >fleet.yaml <<'YAML'
fleet: lww
provider:
  local: { root: nodes, create_delay: 0.3s }
restart_backoff: 0s
run: |
  mkdir -p "$TPUFORM_BUCKET"
  echo "$TPUFORM_WORKER_ID retry=$TPUFORM_RETRY" >>"$TPUFORM_BUCKET/starts"
  case "$TPUFORM_RETRY" in
  0) exec sleep 300 ;;
  1) echo "bad batch"; exit 3 ;;
  *) exec sleep 300 ;;
  esac
groups:
  - { name: a, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
L=tpuform.state.json.ledger.jsonl
ok "apply creates the node and starts its job" tpuform apply -f fleet.yaml -auto-approve
ok "the node is preempted while no watch runs" tpuform local preempt -f fleet.yaml lww-a-0
ok "apply replaces it" tpuform apply -f fleet.yaml -auto-approve
is "apply wrote one preempted line" "$(jq -r 'select(.event == "preempted") | .cmd' $L | tr '\n' ' ')" "apply "
like "it names the node and the reason" "$(jq -c 'select(.event == "preempted")' $L)" '"node":"lww-a-0".*"reason":"preempted"'
failed() { grep -q 'retry=1' nodes/bucket/starts 2>/dev/null && sleep 1; }
ok "the replacement's job (retry 1) ran and failed" wait_for 30 failed
ok "apply restarts the failed job" tpuform apply -f fleet.yaml -auto-approve
like "apply wrote the job's failure" "$(jq -c 'select(.event == "job_failed")' $L | head -1)" '"cmd":"apply".*"exit_code":3'
ok "an apply with nothing to do" tpuform apply -f fleet.yaml -auto-approve
is "still one preempted line" "$(grep -c '"event":"preempted"' $L)" 1
ok "report -json" tpuform report -f fleet.yaml -json
cp last.out report.json
is "report counts the preemption" "$(jq .totals.preemptions report.json)" 1
ok "the failed job's wait for its restart is badput, not goodput" \
	awk -v r="$(jq .totals.badput.restart report.json)" 'BEGIN { exit !(r > 0) }'
ok "report -html" tpuform report -f fleet.yaml -html page.html
is "the page marks the preemption" "$(grep -o '<path class="preemption"' page.html | wc -l | tr -d ' ')" 1
finish

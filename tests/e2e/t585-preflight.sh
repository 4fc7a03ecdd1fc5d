#!/bin/sh
# The preflight (issue 21): a stray process holding a worker's TPU device
# file (a fake ~/dev/accel0, TPUFORM_TPU_DEVICES of the local provider)
# fails the job's restart with that process's PID in `show`, the watch
# events and the webhook (preflight_failed); after preflight_failures (2)
# failures in a row the node is a bad host (bad_host) and `watch` replaces
# it instead of restarting its job.
. "$(dirname "$0")/lib.sh"
setup_dir t585
PY=$(command -v /usr/bin/python3 || command -v python3)
if [ -z "$PY" ]; then
	echo "ok 1 # SKIP python3 is not installed (the webhook listener is a python3 script)"
	echo "1..1"
	exit 0
fi
mkdir hook
"$PY" "$TOP/tests/e2e/webhook_listener.py" hook 0 &
lpid=$!
holder=
trap 'kill $lpid ${holder:-} 2>/dev/null' EXIT
wait_for 10 test -s hook/port
port=$(cat hook/port)
cat >fleet.yaml <<YAML
fleet: pf
provider:
  local: { root: nodes, create_delay: 0.2s }
notify:
  webhook: http://127.0.0.1:$port/hook
restart_backoff: 0s
preflight_failures: 2
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
home=$W/nodes/nodes/pf-a-0/workers/0
mkdir -p "$home/dev" && : >"$home/dev/accel0"
# A stray process that holds the TPU, as a job left behind by hand would.
sleep 300 3<"$home/dev/accel0" &
holder=$!
SCREENDIR=$home/.screen screen -ls | awk '/\t/ {print $1}' | while read -r s; do SCREENDIR=$home/.screen screen -S "$s" -X quit; done
gen0=$(jq '.nodes[0].generation' tpuform.state.json)
fails "apply: the restart fails its preflight" 1 tpuform apply -f fleet.yaml -auto-approve
like "apply names the holder and the fix" "$(cat "$W/last.out")" "at step 'preflight' \(exit status 1\): the TPU is in use: pid $holder \(sleep 300\) holds $home/dev/accel0; stop that process \(kill $holder\), or set tpu_busy: kill"
like "show: the worker's preflight failure with the PID" "$(tpuform show -detail -f fleet.yaml)" "preflight failed \(1 in a row\): the TPU is in use: pid $holder \(sleep 300\)"
ok "the job did not start" test ! -e "$home/tpuform/run/job.pid"

TPUFORM_NOTIFY_BACKOFF=0.2s "$TPUFORM" watch -f fleet.yaml -interval 0.3s -session-check 0.5s \
	-json >watch.out 2>&1 &
wpid=$!
wait_for 30 grep -q '"bad_host"' hook/events.jsonl
# shellcheck disable=SC2016 # jq's own variables
wait_for 30 sh -c '[ "$(jq ".nodes[0].generation" tpuform.state.json)" -gt '"$gen0"' ] && grep -q "\"job_started\"\|session_started" watch.out'
kill -TERM $wpid
wait $wpid
is "watch exits 0" "$?" 0
like "watch: preflight_failed with the holder's PID" "$(grep preflight_failed watch.out | head -n 1)" "pid $holder \(sleep 300\) holds $home/dev/accel0"
like "the message shows the fix" "$(grep preflight_failed watch.out | head -n 1)" "kill $holder\), or set tpu_busy: kill"
is "watch's preflight_failed webhook (the second failure)" "$(grep -c '"preflight_failed"' hook/events.jsonl)" 1
like "the webhook carries the PID" "$(grep '"preflight_failed"' hook/events.jsonl | head -n 1)" "pid $holder \(sleep 300\)"
is "one bad_host webhook" "$(grep -c '"bad_host"' hook/events.jsonl)" 1
like "bad_host says the zone and the failure" "$(jq -r .nodes[0].bad_host tpuform.state.json)" "^zone z1, id [^:]*: worker 0 failed preflight 2 times: the TPU is in use: pid $holder"
ok "the node was replaced (a new generation), not restarted" test "$(jq '.nodes[0].generation' tpuform.state.json)" -gt "$gen0"
is "its restarts were not spent" "$(jq '.nodes[0].workers[0].restarts' tpuform.state.json)" 0
like "the new node runs its job" "$(tpuform show -detail -f fleet.yaml)" "w0 +yes +alive"
# The run ledger keeps the host's faults apart from the job's.
like "report: the bad host and the failed preflights, by zone" "$(tpuform report -f fleet.yaml)" \
	"Bad hosts: 1 replaced; failed preflights: [2-9] \(zone z1: 1 bad, [2-9] failed\)"
is "report -json: one bad host, no restart of the job" \
	"$(tpuform report -f fleet.yaml -json | jq -c '[.totals.bad_hosts, .totals.restarts]')" "[1,0]"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

#!/bin/sh
# serial: watch rounds of a fraction of a second, timed detection
# Webhook notifications (docs/watch.md "Notifications"): tpuform watch posts one
# JSON document per event to a local listener (tests/e2e/webhook_listener.py)
# that answers 503 twice before it accepts anything. Checked: every event
# kind the local provider can produce arrives once, preempted before
# replaced, in the documented shape, the first document despite the 503s,
# and no posted document carries the secret's value.
. "$(dirname "$0")/lib.sh"
setup_dir t510
PY=$(command -v /usr/bin/python3 || command -v python3)
if [ -z "$PY" ]; then
	echo "ok 1 # SKIP python3 is not installed (the webhook listener is a python3 script)"
	echo "1..1"
	exit 0
fi
mkdir hook
"$PY" "$TOP/tests/e2e/webhook_listener.py" hook 2 &
lpid=$!
wait_for 10 test -s hook/port
port=$(cat hook/port)
secret=wn-Secret-4242
cat >fleet.yaml <<YAML
fleet: wn
provider:
  local: { root: nodes, create_delay: 0.2s }
quota:
  - { zone: z9, accelerator_type: v2-8, on_demand: 0 }
notify:
  webhook: http://127.0.0.1:$port/hook
secrets:
  API_TOKEN: "\${WN_TOKEN}"
max_restarts: 1
run: |
  echo "token is \$API_TOKEN"
  exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 2, preemptible: true }
  - name: b
    accelerator_type: v2-8
    runtime_version: rt
    zones: [z1]
    count: 1
    run: echo "failing with \$API_TOKEN"; exit 3
  - name: c
    accelerator_type: v2-8
    runtime_version: rt
    zones: [z1]
    count: 1
    run: echo done; exit 0
  - { name: d, accelerator_type: v2-8, runtime_version: rt, zones: [z9], count: 1 }
YAML
ok "the fleet with notify validates" tpuform validate -f fleet.yaml

WN_TOKEN=$secret TPUFORM_NOTIFY_BACKOFF=0.2s "$TPUFORM" watch -f fleet.yaml -interval 0.3s \
	-session-check 0.5s >watch.out 2>&1 &
wpid=$!
events() { cat hook/events.jsonl 2>/dev/null; }
wait_for 30 sh -c 'grep -q "\"restarts_exhausted\"" hook/events.jsonl && grep -q "\"completed\"" hook/events.jsonl'
"$TPUFORM" local preempt -f fleet.yaml wn-a-1 >/dev/null
wait_for 20 grep -q '"replaced"' hook/events.jsonl
kill -TERM $wpid
wait $wpid
is "watch exits 0 after delivering" "$?" 0
kill $lpid 2>/dev/null
wait $lpid 2>/dev/null

"$PY" "$TOP/tests/e2e/webhook_check.py" hook "$secret" >facts.txt
fact() { awk -F '\t' -v k="$1" '$1 == k { print $2 }' facts.txt; }
is "wn-a-1's events, in order: preempted, then replaced" "$(fact order)" "preempted replaced"
is "one preempted event" "$(fact count:preempted:wn-a-1)" 1
is "one replaced event" "$(fact count:replaced:wn-a-1)" 1
is "preempted names the reason" "$(fact field:preempted:reason)" preempted
is "the first document was posted three times (503, 503, 200)" "$(fact first_attempts)" 3
is "and delivered once" "$(fact first_delivered)" 1
is "job_failed for each try of the failing job (retry 0 and 1)" "$(fact count:job_failed:wn-b-0)" 2
is "job_failed carries the exit code" "$(fact field:job_failed:exit_code)" 3
is "and the worker" "$(fact field:job_failed:worker)" 0
like "and the last log line, the secret redacted" "$(fact field:job_failed:last_log)" '^failing with \*\*\*$'
is "restarts_exhausted once max_restarts is used up" "$(fact count:restarts_exhausted:wn-b-0)" 1
is "with the last exit code" "$(fact field:restarts_exhausted:exit_code)" 3
is "job_succeeded for the job that exited 0" "$(fact count:job_succeeded:wn-c-0)" 1
is "completed for its node" "$(fact count:completed:wn-c-0)" 1
is "quota_deferred once for the group with no quota" "$(fact count:quota_deferred:-)" 1
is "no job event for the jobs still running" "$(fact count:job_failed:wn-a-0)" ""
is "every payload has the documented fields, an RFC 3339 time and a text line" "$(fact fields)" ok
is "no posted document carries the secret's value" "$(fact secret)" 0
unlike "no delivery was given up" "$(cat watch.out)" "notify: gave up"
like "the text is one line for a chat" "$(events | head -n 1)" '"text":"tpuform wn: [^"]*"'

ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

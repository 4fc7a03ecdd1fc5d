#!/bin/sh
# shellcheck disable=SC2317 # the helpers are called through ok and wait_for
# One restart rule for the plan and for watch's notifications (issue 26,
# item 3): under `restart_on_exit_codes: [42]` and `max_restarts: 1`, a job
# whose first try exits 42 (restarted) and whose second try exits 3 was never
# to be restarted again: watch posts job_failed for it, and no
# restarts_exhausted (no webhook, no ledger line); the plan calls it
# not_restarted. A job that exits 42 twice is one the policy restarts, and
# once its restart is used up restarts_exhausted IS posted and written to the
# run ledger. The webhook receiver is tests/e2e/webhook_listener.py.
# Local provider only: no sshd, so no loopback block.
. "$(dirname "$0")/lib.sh"
setup_dir t655
PY=$(command -v /usr/bin/python3 || command -v python3)
if [ -z "$PY" ]; then
	echo "ok 1 # SKIP python3 is not installed (the webhook listener is a python3 script)"
	echo "1..1"
	exit 0
fi
mkdir hook
"$PY" "$TOP/tests/e2e/webhook_listener.py" hook 0 &
lpid=$!
wait_for 10 test -s hook/port
port=$(cat hook/port)
cat >fleet.yaml <<YAML
fleet: xc
provider:
  local: { root: nodes, create_delay: 0.2s }
notify:
  webhook: http://127.0.0.1:$port/hook
restart_on_exit_codes: [42]
max_restarts: 1
restart_backoff: 0s
groups:
  - name: codes
    accelerator_type: v2-8
    runtime_version: rt
    zones: [z1]
    count: 1
    run: if [ "\$TPUFORM_RETRY" = 0 ]; then exit 42; fi; exit 3
  - name: again
    accelerator_type: v2-8
    runtime_version: rt
    zones: [z1]
    count: 1
    run: exit 42
YAML
ok "the fleet validates" tpuform validate -f fleet.yaml

TPUFORM_NOTIFY_BACKOFF=0.2s "$TPUFORM" watch -f fleet.yaml -interval 0.3s -session-check 0.5s \
	>watch.out 2>&1 &
wpid=$!
# What arrived, as "event node exit_code" lines.
seen() {
	jq -r '[.event, .node, (.exit_code | tostring)] | join(" ")' hook/events.jsonl 2>/dev/null
}
both_ended() {
	seen | grep -qx 'job_failed xc-codes-0 3' && seen | grep -qx 'restarts_exhausted xc-again-0 42'
}
ok "both jobs ended their last try (webhooks within 90 s)" wait_for 90 both_ended
# The hooks post restarts_exhausted right after the job_failed of the same
# report: stopping watch delivers what is queued, so nothing is missed.
kill -TERM $wpid
wait $wpid
is "watch exits 0 after delivering" "$?" 0
kill $lpid 2>/dev/null
wait $lpid 2>/dev/null

count() { seen | grep -cx "$1"; }
is "job_failed for xc-codes-0's restarted exit 42" "$(count 'job_failed xc-codes-0 42')" 1
is "and for its exit 3" "$(count 'job_failed xc-codes-0 3')" 1
is "no restarts_exhausted webhook for exit 3, which the policy does not restart" \
	"$(seen | grep -c '^restarts_exhausted xc-codes-0 ')" 0
is "job_failed for each of xc-again-0's two exits 42" "$(count 'job_failed xc-again-0 42')" 2
is "one restarts_exhausted webhook once its restart is used up" \
	"$(count 'restarts_exhausted xc-again-0 42')" 1
like "which names max_restarts" \
	"$(jq -r 'select(.event == "restarts_exhausted") | .message' hook/events.jsonl)" \
	'max_restarts \(1\) is used up'
L=tpuform.state.json.ledger.jsonl
ledger() { jq -r "select(.event == \"restarts_exhausted\" and .node == \"$1\") | .node" $L | wc -l; }
is "no restarts_exhausted line in the run ledger for xc-codes-0" "$(ledger xc-codes-0)" 0
is "one for xc-again-0" "$(ledger xc-again-0)" 1
tpuform plan -f fleet.yaml -no-color >plan.out 2>&1
like "the plan calls xc-codes-0 not restarted" "$(cat plan.out)" \
	'xc-codes-0.*exit 3 is not in restart_on_exit_codes'
like "and xc-again-0's restarts used up" "$(cat plan.out)" \
	'xc-again-0.*restarts are used up \(max_restarts: 1\)'

ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

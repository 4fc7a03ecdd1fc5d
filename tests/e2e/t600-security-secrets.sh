#!/bin/sh
# Secrets stay secret (docs/security.md "Security"), on the local provider, whose
# workers are real processes on this machine. A distinctive secret value is
# in no process's argv at any moment of an apply and a watch (sampled from
# /proc/*/cmdline, which every local user can read), in no -json stream
# (plan, apply, watch), in no watch output, in no webhook payload, and in
# no file tpuform writes (state, backup, lock, saved plan, watch summary):
# only in each worker's secrets file and in what the job itself writes. All
# of it under umask 000: the files that carry secrets or the fleet's facts
# are still created 0600.
# shellcheck disable=SC2016 # $vars in the fleet file are for the workers' shell
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/argv_sampler.sh"
setup_dir t600
umask 000
SECRET="tpf-Sec-$$-Zq7x9Lw"
export T600_TOKEN="$SECRET"
PY=$(command -v /usr/bin/python3 || command -v python3)
hook=""
if [ -n "$PY" ]; then
	mkdir hook
	"$PY" "$TOP/tests/e2e/webhook_listener.py" hook 0 &
	lpid=$!
	trap 'kill $lpid 2>/dev/null' EXIT
	wait_for 10 test -s hook/port
	hook="notify: { webhook: \"http://127.0.0.1:$(cat hook/port)/hook\" }"
fi
cat >fleet.yaml <<YAML
fleet: sec
provider:
  local: { root: nodes, create_delay: 0.2s }
$hook
secrets:
  API_TOKEN: "\${T600_TOKEN}"
max_restarts: 1
run: printf '%s' "\$API_TOKEN" >"\$TPUFORM_BUCKET/seen-\$TPUFORM_NODE-\$TPUFORM_WORKER_ID"; echo "token is \$API_TOKEN"; exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1, preemptible: true }
  - name: b
    accelerator_type: v2-8
    runtime_version: rt
    zones: [z1]
    count: 1
    run: echo "failing with \$API_TOKEN"; exit 3
YAML
mkdir -p nodes/bucket
argv_sample_start "$W/argv.txt"
# A control: an argument that the sampler must see.
sh -c 'sleep 0.5' "t600-canary-$$"

ok "plan -json" sh -c "'$TPUFORM' plan -f fleet.yaml -json >plan.json"
ok "plan -out" sh -c "'$TPUFORM' plan -f fleet.yaml -out=saved.plan >plan.out"
is "the saved plan is 0600 under umask 000" "$(stat -c %a saved.plan)" 600
ok "apply -json of the saved plan" sh -c "'$TPUFORM' apply -f fleet.yaml -json saved.plan >apply.json"
wait_for 20 test -s nodes/bucket/seen-sec-a-0-1
is "the jobs got the secret, byte for byte" "$(cat nodes/bucket/seen-sec-a-0-0)/$(cat nodes/bucket/seen-sec-a-0-1)" "$SECRET/$SECRET"
is "the state is 0600 under umask 000" "$(stat -c %a tpuform.state.json)" 600
is "the lock file is 0600" "$(stat -c %a tpuform.state.json.lock)" 600
is "every worker's secrets file is 0600" "$(find nodes -name secrets.env -exec stat -c %a {} + | sort -u)" 600
is "each worker has its secrets file" "$(find nodes -name secrets.env | wc -l | tr -d ' ')" 3

# watch -json until the failing job has used up its restarts, then a
# preemption healed, with the webhook receiving every event.
"$TPUFORM" watch -f fleet.yaml -json -interval 0.3s -session-check 0.5s >watch.json 2>watch.err &
wpid=$!
wait_for 30 grep -q '"restarts_exhausted"' watch.json
lock_info=$(stat -c %a .tpuform.state.json.lock.info 2>/dev/null)
"$TPUFORM" local preempt -f fleet.yaml sec-a-0 >/dev/null
wait_for 30 grep -q '"replaced"' watch.json
kill -TERM $wpid
wait $wpid
is "watch -json exits 0" "$?" 0
like "watch -json reported the failed job" "$(cat watch.json)" '"restarts_exhausted"'
is "the lock info, while watch heals, was 0600 (or already gone)" "${lock_info:-600}" 600
is "watch's summary file is 0600" "$(stat -c %a tpuform.state.json.watch.json)" 600

# a human watch, one more preemption
"$TPUFORM" watch -f fleet.yaml -interval 0.3s -session-check 0.5s >watch.out 2>&1 &
wpid=$!
wait_for 20 grep -q 'alive' watch.out
"$TPUFORM" local preempt -f fleet.yaml sec-a-0 >/dev/null
wait_for 30 grep -q 'w1: session started' watch.out
kill -TERM $wpid
wait $wpid
like "the human watch healed the preemption" "$(cat watch.out)" 'sec-a-0: w1: session started'
ok "show -json" sh -c "'$TPUFORM' show -f fleet.yaml -json >show.json"
ok "show" sh -c "'$TPUFORM' show -f fleet.yaml >show.out"
like "show quotes the failed job's last log line, redacted" "$(cat show.out show.json)" 'failing with \*\*\*'
wait_for 20 test -s nodes/bucket/seen-sec-a-0-1
argv_sample_stop

like "the sampler took several samples of /proc ($ARGV_SAMPLES)" "$ARGV_SAMPLES" '^([5-9]|[1-9][0-9]+)$'
like "and saw the workers' processes" "$(grep -c 'bootstrap\.sh' argv.txt)" '^[1-9]'
like "the sampler sees other processes' arguments (a control)" "$(grep -c '^t600-canary-' argv.txt)" '^[1-9]'
is "no process ever had the secret in its argv" "$(grep -cF -- "$SECRET" argv.txt)" 0
for f in plan.json plan.out saved.plan apply.json watch.json watch.err watch.out show.json show.out \
	tpuform.state.json tpuform.state.json.backup tpuform.state.json.watch.json; do
	ok "$f exists and holds no secret" sh -c "test -s '$f' && ! grep -qF -- \"\$T600_TOKEN\" '$f'"
done
if [ -n "$PY" ]; then
	like "the webhook got the events" "$(cat hook/events.jsonl)" '"restarts_exhausted"'
	is "no webhook payload holds the secret" "$(grep -cF -- "$SECRET" hook/attempts.jsonl)" 0
	like "the job_failed payload quotes the log, redacted" "$(grep job_failed hook/events.jsonl)" 'failing with \*\*\*'
fi
# Everything else tpuform or its workers wrote: only the secrets files and
# what the jobs themselves wrote (their output and the bucket) hold it.
leaks=$(grep -rlF -- "$SECRET" . | grep -v '^\./argv\.txt$' |
	grep -vE '/secrets\.env$|^\./nodes/bucket/seen-|/tpuform/logs/run-[^/]*\.log$' || true)
is "no other file holds the secret" "$leaks" ""
# (the test's own redirections and the jobs' own files are not tpuform's)
ww=$(find nodes/nodes tpuform.state.json* .tpuform.state.json* saved.plan -type f -perm -o+w 2>/dev/null | head -n 5)
is "no file tpuform made is world-writable under umask 000" "$ww" ""
"$TPUFORM" destroy -f fleet.yaml -auto-approve >/dev/null 2>&1
finish

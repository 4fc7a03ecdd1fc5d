#!/bin/sh
# serial: restart latencies are measured.
# A job that fails in its first seconds is restarted at once (issue 26
# item 2), with `watch` at its defaults (-interval 10s, -session-check
# 60s, job waits on): worker 1 of a v4-16 node exits 1, and both workers
# must run again within seconds of that exit (aim 3 s, bound 5 s), measured
# from the job's own exit stamp to the later of the two restarted jobs'
# start stamps:
#   1. 8 s after the job's start, in watch's first window (before its
#      second round): the round the wait woke planned nothing, and the
#      restart came one 10 s window later (10.6 s);
#   2. 2 s after that restart (restart_backoff: 0s, so no backoff holds it);
#   3. a new watch, whose first rounds restart a job that failed while no
#      watch ran, and that job failing again 2 s after its start;
#   4. after the wait's connection broke and was made again (the local
#      transport's wait process killed).
# Each failure is one-shot: the job consumes next-fail.W (its delay) at
# its start.
. "$(dirname "$0")/lib.sh"
setup_dir t650
cat >fleet.yaml <<'YAML'
fleet: ee
provider:
  local: { root: nodes, create_delay: 0.2s }
restart_backoff: 0s
max_restarts: 100
run: |
  b=$TPUFORM_BUCKET
  mkdir -p "$b"
  echo "start w$TPUFORM_WORKER_ID retry=$TPUFORM_RETRY at=$(date +%s.%N)" >>"$b/starts"
  echo $$ >"$b/pid.$TPUFORM_WORKER_ID"
  f=$b/next-fail.$TPUFORM_WORKER_ID
  if d=$(cat "$f" 2>/dev/null) && rm -f "$f"; then
    sleep "$d"
    echo "exit w$TPUFORM_WORKER_ID retry=$TPUFORM_RETRY at=$(date +%s.%N)" >>"$b/exits"
    exit 1
  fi
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1 }
YAML
B=$W/nodes/bucket
mkdir -p "$B"
# shellcheck disable=SC2317 # called through wait_for
started() { [ "$(grep -c "retry=$1 " "$B/starts" 2>/dev/null)" -eq 2 ]; }
# shellcheck disable=SC2317 # called through wait_for
exited() { grep -q "retry=$1 " "$B/exits" 2>/dev/null; }
# The seconds from worker 1's exit at retry $1 to the later start of the
# two workers at retry $1 + 1.
latency() {
	e=$(sed -n "s/^exit w1 retry=$1 at=//p" "$B/exits" | tail -n 1)
	s=$(sed -n "s/^start w[01] retry=$(($1 + 1)) at=//p" "$B/starts" | sort -n | tail -n 1)
	awk -v e="$e" -v s="$s" 'BEGIN { if (e == "" || s == "") print "none"; else printf "%.2f", s - e }'
}
# The issue's aim is 3 s (about 1 s here on a quiet machine, most of it
# the restart itself); the bound is 5 s, so that a loaded CI machine under
# ASan passes, and still half the 10 s window the old code waited for.
# shellcheck disable=SC2317 # called through ok
quick() { echo "$1 s"; awk -v l="$1" 'BEGIN { exit !(l != "none" && l <= 5.0) }'; }
# Worker 1's job at retry $1 fails $2 s after its start, then both
# workers run again at retry $1 + 1 within 3 s of that exit.
check() {
	wait_for 60 exited "$1"
	wait_for 40 started "$(($1 + 1))"
	l=$(latency "$1")
	echo "# $3: restarted $l s after the exit"
	ok "$3: both workers restarted soon after worker 1's exit ($l s)" quick "$l"
}

echo 8 >"$B/next-fail.1"
ok "apply" tpuform apply -f fleet.yaml -auto-approve
"$TPUFORM" watch -f fleet.yaml >watch.out 2>&1 &
wpid=$!
trap 'kill $wpid 2>/dev/null' EXIT
wait_for 10 started 0
ok "the first job of worker 1 took its failure" test ! -e "$B/next-fail.1"
echo 2 >"$B/next-fail.1"
check 0 8 "a job failing 8 s after its start, in watch's first window"
check 1 2 "the restarted job failing 2 s after its start"
like "watch said why" "$(cat watch.out)" "restart all 2 workers of ee-a-0: worker 1 job failed \(exit 1\)"

# A new watch: worker 1's job ended while none ran; the new watch restarts
# it, and that job fails again 2 s after its start.
kill -TERM $wpid
wait $wpid
kill "$(cat "$B/pid.1")"
echo 2 >"$B/next-fail.1"
"$TPUFORM" watch -f fleet.yaml >watch2.out 2>&1 &
wpid=$!
wait_for 30 started 3
check 3 2 "a new watch: the job it restarted failing 2 s after its start"

# A wait whose connection broke (its process killed) is made again; the
# job's end right after that is acted on as quickly. The kill is the exit
# stamped.
w1=$W/nodes/nodes/ee-a-0/workers/1
waits() { for f in "$w1"/tpuform/run/wait.*; do [ -p "$f" ] && echo "${f##*.}"; done; }
# shellcheck disable=SC2317 # called through wait_for
waiting() { [ -n "$(waits)" ]; }
# shellcheck disable=SC2317 # called through wait_for
new_wait() { waits | grep -qvx "$1"; }
wait_for 15 waiting
old=$(waits | head -n 1)
kill "$old"
ok "worker 1's wait is made again" wait_for 15 new_wait "$old"
echo "exit w1 retry=4 at=$(date +%s.%N)" >>"$B/exits"
kill "$(cat "$B/pid.1")"
check 4 0 "after a reconnect"
kill -TERM $wpid
wait $wpid
is "watch exits 0" "$?" 0
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

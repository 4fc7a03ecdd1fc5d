#!/bin/sh
# serial: restart latencies are measured.
# t650's early failures on sshd workers of the Cloud TPU API emulator (issue
# 26 item 2), `watch` at its defaults: worker 1 of a v4-16 node exits 1
#   1. 8 s after its start, in watch's first window;
#   2. 2 s after the restart that answered it (restart_backoff: 0s);
#   3. right after the wait's SSH connection was cut (worker 1's sshd
#      connection processes killed) and made again: the job is killed.
# Each time both workers run again within 5 s (aim 3 s) of the exit, from
# the job's own exit stamp to the later restarted job's start stamp (the
# workers share this machine's clock). Loopback block 127.0.71.x.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t651
export TPUFORM_SSH_RETRY=2
gcp_workers_start 2 127.0.71.1 --op-seconds 0.1
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
cat >fleet.yaml <<YAML
fleet: es
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
restart_backoff: 0s
max_restarts: 100
run: |
  echo "start retry=\$TPUFORM_RETRY at=\$(date +%s.%N)" >>"\$HOME/starts"
  echo \$\$ >"\$HOME/job.pid"
  f=\$HOME/next-fail.\$TPUFORM_WORKER_ID
  if d=\$(cat "\$f" 2>/dev/null) && rm -f "\$f"; then
    sleep "\$d"
    echo "exit retry=\$TPUFORM_RETRY at=\$(date +%s.%N)" >>"\$HOME/exits"
    exit 1
  fi
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [us-central2-b], count: 1 }
YAML
addr_of() { jq -r --argjson w "$1" '.nodes[0].workers[$w].address' tpuform.state.json | sed 's/:.*//'; }
# Worker 1's first job fails 8 s after its start (its file in every
# worker's home: which one is worker 1 is known after apply).
echo 8 >"$(sshd_home 0)/next-fail.1"
echo 8 >"$(sshd_home 1)/next-fail.1"
ok "apply" tpuform apply -f fleet.yaml -auto-approve
"$TPUFORM" watch -f fleet.yaml >watch.out 2>&1 &
wpid=$!
GCP_WORKERS_CLEANUP="kill $wpid"
w0=$(sshd_index "$(addr_of 0)")
w1=$(sshd_index "$(addr_of 1)")
h0=$(sshd_home "$w0")
h1=$(sshd_home "$w1")
rm -f "$h0/next-fail.1"
# shellcheck disable=SC2317 # called through wait_for
started() { grep -q "retry=$1 " "$h0/starts" 2>/dev/null && grep -q "retry=$1 " "$h1/starts" 2>/dev/null; }
# shellcheck disable=SC2317 # called through wait_for
exited() { grep -q "retry=$1 " "$h1/exits" 2>/dev/null; }
latency() {
	e=$(sed -n "s/^exit retry=$1 at=//p" "$h1/exits" | tail -n 1)
	s=$(cat "$h0/starts" "$h1/starts" | sed -n "s/^start retry=$(($1 + 1)) at=//p" | sort -n | tail -n 1)
	awk -v e="$e" -v s="$s" 'BEGIN { if (e == "" || s == "") print "none"; else printf "%.2f", s - e }'
}
# shellcheck disable=SC2317 # called through ok
quick() { echo "$1 s"; awk -v l="$1" 'BEGIN { exit !(l != "none" && l <= 5.0) }'; }
check() {
	wait_for 60 exited "$1"
	wait_for 40 started "$(($1 + 1))"
	l=$(latency "$1")
	echo "# $2: restarted $l s after the exit"
	ok "$2: both workers restarted soon after worker 1's exit ($l s)" quick "$l"
}
wait_for 20 started 0
ok "worker 1's first job took its failure" test ! -e "$h1/next-fail.1"
echo 2 >"$h1/next-fail.1"
check 0 "a job failing 8 s after its start, in watch's first window"
check 1 "the restarted job failing 2 s after its start"

# Cut worker 1's connections (its sshd's per-connection processes): the
# wait connects again (1 s backoff), and the job's end right after that is
# acted on as quickly. The kill is the exit stamped.
wait_for 20 started 2
lp=$(_sshd_listener_pid "$w1")
# shellcheck disable=SC2317 # called through wait_for
conns() { pgrep -P "$lp" >/dev/null; }
wait_for 20 conns
accepted() { grep -c 'Accepted publickey' "$SSHD_DIR/w$w1/log.start"; }
before=$(accepted)
for p in $(pgrep -P "$lp"); do kill "$p"; done
# shellcheck disable=SC2317 # called through wait_for
again() { [ "$(accepted)" -gt "$before" ] && ls "$h1"/tpuform/run/wait.* >/dev/null 2>&1; }
ok "worker 1's wait connects again and waits" wait_for 20 again
echo "exit retry=2 at=$(date +%s.%N)" >>"$h1/exits"
# shellcheck disable=SC2016 # expanded inside the worker VM
sshd_in "$w1" sh -c 'kill "$(cat /root/job.pid)"'
check 2 "after a reconnect"
like "watch said why" "$(cat watch.out)" "restart all 2 workers of es-a-0: worker 1 job failed"
kill -TERM $wpid
wait $wpid
is "watch exits 0" "$?" 0
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

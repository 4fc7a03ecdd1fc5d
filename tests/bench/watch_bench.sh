#!/bin/sh
# Benchmark of `tpuform watch` (issue 5): a fleet of preemptible nodes on
# the Cloud TPU API emulator, with real sshd workers, while a driver
# preempts random READY nodes at a steady rate. Prints, never asserts:
#   detection latency   preemption -> the DELETE request for that node
#   back to running     preemption -> the replacement's session started
#   alive fraction      mean over watch rounds of alive / desired
#   API requests/min    every request the emulator saw while watch ran
#
#   sh tests/bench/watch_bench.sh [NODES] [SECONDS] [PREEMPT_EVERY_S] [INTERVAL]
#   defaults: 100 nodes, 180 s, one preemption every 6 s (10/min), -interval 5s
#   smallest (make bench-smoke): sh tests/bench/watch_bench.sh 2 12 6 2
# Skips itself (exit 0, "skipped") without root, sshd or unshare; exits 1
# with a message when a step fails.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
NODES=${1:-100}
DURATION=${2:-180}
EVERY=${3:-6}
INTERVAL=${4:-5}
PREEMPTS=$((DURATION / EVERY + 1))
WORKERS=$((NODES + PREEMPTS + 10))
BASE=127.0.60.1
T=$TOP/tpuform
TPF_ROOT=$TOP
. "$TOP/tests/e2e/sshd.sh"
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/bench/lib.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/tpuform-watch-bench.XXXXXX")
cd "$W" || exit 1
WATCH=
cleanup() {
	[ -n "$WATCH" ] && kill "$WATCH" 2>/dev/null && wait "$WATCH" 2>/dev/null
	fakegcp_stop >/dev/null 2>&1
	sshd_stop
	cd / || return
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() {
	echo "watch_bench: FAILED: $*" >&2
	exit 1
}
export NO_COLOR=1 TPUFORM_ACCESS_TOKEN=bench TPUFORM_GCP_POLL_MIN=0.2 TPUFORM_GCP_POLL_MAX=1
unset SSH_AUTH_SOCK

echo "== watch: $NODES preemptible nodes, one preemption every ${EVERY}s for ${DURATION}s, -interval ${INTERVAL}s"
t0=$(date +%s)
sshd_start "$W/workers" "$WORKERS" "$BASE"
rc=$?
if [ "$rc" -eq 2 ]; then
	echo "cannot start sshd workers here (needs root, sshd, unshare): benchmark skipped"
	exit 0
fi
[ "$rc" -eq 0 ] || fail "$WORKERS sshd workers did not start (status $rc)"
sshd_watch $$
echo "started $WORKERS sshd workers in $(($(date +%s) - t0)) s"
fakegcp_start --project bench-project --latency-ms 20 --op-seconds 2 --page-size 50 \
	--worker-ip-base "$BASE" --worker-port "$SSHD_PORT" --worker-dir "$SSHD_DIR" --log "$W/requests.jsonl" >/dev/null ||
	fail "the emulator did not start"
cat >fleet.yaml <<YAML
fleet: wb
provider:
  gcp: { project: bench-project }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT }
run: exec sleep 100000
restart: on-failure
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: $NODES, preemptible: true }
YAML
t0=$(date +%s)
"$T" apply -f fleet.yaml -auto-approve -parallelism=100 >apply.out 2>&1 || { tail -20 apply.out; fail "the initial apply failed"; }
echo "initial apply of $NODES nodes: $(($(date +%s) - t0)) s"

start=$(date +%s.%N)
"$T" watch -f fleet.yaml -interval "${INTERVAL}s" -parallelism=100 -json >watch.jsonl 2>watch.err &
WATCH=$!
: >preempts.txt
end=$(($(date +%s) + DURATION))
next=$(date +%s)
while [ "$(date +%s)" -lt "$end" ]; do
	# On schedule, however long the last pick took (a loaded machine).
	next=$((next + EVERY))
	wait_s=$((next - $(date +%s)))
	[ "$wait_s" -gt 0 ] && sleep "$wait_s"
	node=$(curl -s "$FAKEGCP_URL/__admin/nodes" |
		jq -r '[.[] | select(.state == "READY") | (.name | split("/"))[5]] | .[]' | shuf -n 1)
	[ -n "$node" ] || continue
	echo "$(date +%s.%N) $node" >>preempts.txt
	curl -s -o /dev/null -X POST "$FAKEGCP_URL/__admin/nodes/z1/$node:preempt"
done
# Let the last preemptions heal before stopping.
sleep $((INTERVAL * 2 + 10))
kill -TERM $WATCH
wait $WATCH
WATCH=
stop=$(date +%s.%N)

# Per preemption: the first DELETE of that node after it, and the first
# "session_started" event for it after it.
while read -r tp node; do
	td=$(jq -r --arg n "$node" --argjson tp "$tp" \
		'select(.method == "DELETE" and (.path | endswith("/nodes/" + $n)) and .t > $tp) | .t' \
		requests.jsonl | head -n 1)
	ts=$(jq -r --arg n "$node" 'select(.type == "watch_event" and .node == $n and .event == "session_started") | .["@timestamp"]' \
		watch.jsonl | while read -r s; do date -d "$s" +%s.%N; done |
		awk -v tp="$tp" '$1 > tp { print; exit }')
	echo "$node ${td:-none} ${ts:-none} $tp"
done <preempts.txt >latency.txt

stats() { # column -> "p50 p99 max n"
	awk -v c="$1" '$c != "none" { print $c - $4 }' latency.txt | sort -n |
		awk '{ v[NR] = $1 } END { if (!NR) { print "n/a"; exit }
			i50 = int(0.5 * NR + 0.5); i99 = int(0.99 * NR + 0.5); if (i50 < 1) i50 = 1; if (i99 < 1) i99 = 1
			printf "p50 %.2f s, p99 %.2f s, max %.2f s (n=%d)", v[i50], v[i99], v[NR], NR }'
}
n_pre=$(wc -l <preempts.txt)
missed=$(awk '$2 == "none"' latency.txt | wc -l)
echo "preemptions: $n_pre (not healed before stop: $missed)"
det=$(stats 2)
p99=$(echo "$det" | sed -n 's/.*p99 \([0-9.]*\) s.*/\1/p')
echo "detection latency (preemption -> DELETE): $det   [aim: p99 within interval + 1 s = $((INTERVAL + 1)) s: $(bench_aim "$p99" '<=' $((INTERVAL + 1)))]"
echo "back to a running session:                $(stats 3)"
alive=$(jq -r 'select(.type == "watch_summary") | "\(.summary.alive) \(.summary.desired)"' watch.jsonl |
	awk '{ a += $1; d += $2 } END { if (d) printf "%.1f", 100 * a / d; else print "n/a" }')
pct=$alive
[ "$alive" = n/a ] || pct="$alive%"
echo "alive fraction (mean over rounds):        $pct   [aim: above 95%: $(bench_aim "$alive" '>' 95)]"
reqs=$(jq -r --argjson a "$start" --argjson b "$stop" 'select(.t >= $a and .t <= $b) | .method' requests.jsonl | wc -l)
echo "API requests while watching:              $reqs in $(echo "$start $stop" | awk '{ printf "%.0f", $2 - $1 }') s = $(echo "$reqs $start $stop" | awk '{ printf "%.0f", 60 * $1 / ($3 - $2) }') per minute"
rounds=$(jq -r 'select(.type == "watch_summary")' watch.jsonl | grep -c '"round"' )
echo "watch rounds: $rounds"

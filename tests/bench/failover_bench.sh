#!/bin/sh
# Benchmark of watch failover (issue 11, docs/watch.md "Failover"): two watches
# of one fleet whose state is in Cloud Storage (the emulator, tests/fakegcp)
# and whose nodes come from the local provider. Each repetition SIGKILLs
# the leader and preempts a node at the same moment, then measures, from
# the kill:
#   takeover   the standby's "leader" event (it holds the lease)
#   heal       the standby starts healing the preempted node (its
#              "preempted: replacing" event: the replace begins)
#   ready      that node READY again (the delete and create included)
# Prints min / median / max of each and the goal (heal <= TTL + interval).
# Never asserts.
#
#   sh tests/bench/failover_bench.sh [REPETITIONS] [TTL_S] [INTERVAL_S]
#   defaults: 5 repetitions, -lease-ttl 10s, -interval 2s
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
REPS=${1:-5}
TTL=${2:-10}
INTERVAL=${3:-2}
T=$TOP/tpuform
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/tpuform-failover-bench.XXXXXX")
cd "$W" || exit 1
PIDS=
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	fakegcp_stop >/dev/null 2>&1
	find "$W" -type d -name .screen 2>/dev/null | while IFS= read -r sd; do
		SCREENDIR=$sd screen -ls 2>/dev/null | awk '/\t/ {print $1}' | while read -r s; do
			SCREENDIR=$sd screen -S "$s" -X quit >/dev/null 2>&1
		done
	done
	cd / && rm -rf "$W"
}
trap cleanup EXIT
export NO_COLOR=1 TPUFORM_ACCESS_TOKEN=bench

echo "== watch failover: $REPS SIGKILLs of the leader, -lease-ttl ${TTL}s, -interval ${INTERVAL}s"
fakegcp_start --project bench-project --bucket bench-state >/dev/null || { echo "the emulator did not start: benchmark skipped"; exit 0; }
for d in m0 m1; do
	mkdir -p "$d"
	cat >"$d/fleet.yaml" <<YAML
fleet: fb
provider:
  local: { root: $W/nodes, create_delay: 0.2s }
state:
  gcs: { bucket: bench-state, prefix: bench }
run: exec sleep 100000
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 2 }
YAML
done
now() { date +%s.%N; }
# Start a watch in directory $1 writing $1/watch.out; prints its pid.
start() {
	(cd "$1" && exec "$T" watch -f fleet.yaml -interval "${INTERVAL}s" -lease-ttl "${TTL}s" >watch.out 2>&1) &
	echo $!
}
# Wait (up to 120 s) until file $1 has a line matching $2 after line $3;
# prints the time it was seen.
seen() {
	end=$(($(date +%s) + 120))
	while ! tail -n "+$3" "$1" 2>/dev/null | grep -q -e "$2"; do
		[ "$(date +%s)" -ge "$end" ] && { echo timeout; return 1; }
		sleep 0.05
	done
	now
}
leader=$(start m0)
PIDS=$leader
seen m0/watch.out "alive 2/2" 1 >/dev/null || { echo "the first watch did not bring the fleet up"; exit 0; }
lead_dir=m0 stand_dir=m1
: >takeover.txt
: >heal.txt
: >ready.txt
i=0
while [ "$i" -lt "$REPS" ]; do
	i=$((i + 1))
	: >"$stand_dir/watch.out"
	standby=$(start "$stand_dir")
	PIDS="$leader $standby"
	seen "$stand_dir/watch.out" "standing by" 1 >/dev/null || { echo "no standby"; exit 0; }
	# Kill at a random point of the leader's renewal cycle.
	sleep "$(awk -v s="$i" -v t="$INTERVAL" 'BEGIN { srand(s); printf "%.2f", 1 + rand() * t }')"
	node=fb-a-$((i % 2))
	mark=$(($(wc -l <"$stand_dir/watch.out") + 1))
	killed=$(now)
	kill -9 "$leader"
	wait "$leader" 2>/dev/null
	(cd "$lead_dir" && "$T" local preempt -f fleet.yaml "$node" >/dev/null)
	t1=$(seen "$stand_dir/watch.out" "leading:" "$mark") || { echo "no takeover"; exit 0; }
	t2=$(seen "$stand_dir/watch.out" "$node: the node is preempted: replacing" "$mark") || { echo "no heal"; exit 0; }
	t3=$(seen "$stand_dir/watch.out" "$node: READY" "$mark") || { echo "not READY"; exit 0; }
	echo "$t1 - $killed" | bc >>takeover.txt
	echo "$t2 - $killed" | bc >>heal.txt
	echo "$t3 - $killed" | bc >>ready.txt
	printf 'run %d: takeover %.2f s, heal starts %.2f s, READY %.2f s after the SIGKILL\n' "$i" \
		"$(tail -1 takeover.txt)" "$(tail -1 heal.txt)" "$(tail -1 ready.txt)"
	leader=$standby
	tmp=$lead_dir lead_dir=$stand_dir stand_dir=$tmp
done
stats() { sort -n "$1" | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "min %.2f s, median %.2f s, max %.2f s", v[1], m, v[NR] }'; }
echo "takeover (kill -> standby holds the lease): $(stats takeover.txt)"
echo "heal     (kill -> the replace starts):      $(stats heal.txt)"
echo "ready    (kill -> replacement READY):         $(stats ready.txt)"
goal=$(echo "$TTL + $INTERVAL" | bc)
worst=$(sort -n heal.txt | tail -1)
echo "goal: heal <= lease TTL + one interval = ${goal} s: $(echo "$worst <= $goal" | bc | sed 's/1/met/;s/0/NOT met/')"

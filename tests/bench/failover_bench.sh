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
# Prints min / median / max of each and the aim (heal <= TTL + interval).
# Never fails on a time; exits 1 with a message when a step does not
# happen within 120 s (no standby, no takeover, no heal).
#
#   sh tests/bench/failover_bench.sh [REPETITIONS] [TTL_S] [INTERVAL_S]
#   defaults: 5 repetitions, -lease-ttl 10s, -interval 2s
#   smallest (make bench-smoke): sh tests/bench/failover_bench.sh 1 3 1
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
REPS=${1:-5}
TTL=${2:-10}
INTERVAL=${3:-2}
T=$TOP/tpuform
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/bench/lib.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/tpuform-failover-bench.XXXXXX")
cd "$W" || exit 1
PIDS=
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	fakegcp_stop >/dev/null 2>&1
	find "$W" -type d -name .screen 2>/dev/null | while IFS= read -r sd; do
		SCREENDIR=$sd screen -ls 2>/dev/null | awk '/\t/ {print $1}' | while read -r s; do
			SCREENDIR=$sd screen -S "$s" -X quit >/dev/null 2>&1
		done
	done
	# A bootstrap the killed leader or the standby had under way, and what
	# it started: the local provider's workers are processes here.
	bench_reap "$W"
	# The local provider's short SCREENDIR links (providers/local/local_home.c)
	# point into $W: a destroy would remove them, the SIGKILLs did not.
	for l in /tmp/tpuform-screen-*; do
		case $(readlink "$l" 2>/dev/null) in "$W"/*) rm -f "$l" ;; esac
	done
	cd / || return
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() {
	echo "failover_bench: FAILED: $*" >&2
	exit 1
}
export NO_COLOR=1 TPUFORM_ACCESS_TOKEN=bench

echo "== watch failover: $REPS SIGKILLs of the leader, -lease-ttl ${TTL}s, -interval ${INTERVAL}s"
fakegcp_start --project bench-project --bucket bench-state >/dev/null || fail "the emulator did not start"
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
seen m0/watch.out "alive 2/2" 1 >/dev/null || fail "the first watch did not bring the fleet up: $(tail -n 3 m0/watch.out)"
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
	seen "$stand_dir/watch.out" "standing by" 1 >/dev/null || fail "no standby: $(tail -n 3 "$stand_dir/watch.out")"
	# Kill at a random point of the leader's renewal cycle.
	sleep "$(awk -v s="$i" -v t="$INTERVAL" 'BEGIN { srand(s); printf "%.2f", 1 + rand() * t }')"
	node=fb-a-$((i % 2))
	mark=$(($(wc -l <"$stand_dir/watch.out") + 1))
	killed=$(now)
	kill -9 "$leader"
	wait "$leader" 2>/dev/null
	(cd "$lead_dir" && "$T" local preempt -f fleet.yaml "$node" >/dev/null)
	t1=$(seen "$stand_dir/watch.out" "leading:" "$mark") || fail "no takeover within 120 s"
	t2=$(seen "$stand_dir/watch.out" "$node: the node is preempted: replacing" "$mark") || fail "no heal of $node within 120 s"
	t3=$(seen "$stand_dir/watch.out" "$node: READY" "$mark") || fail "$node not READY within 120 s"
	echo "$killed $t1" | awk '{ print $2 - $1 }' >>takeover.txt
	echo "$killed $t2" | awk '{ print $2 - $1 }' >>heal.txt
	echo "$killed $t3" | awk '{ print $2 - $1 }' >>ready.txt
	printf 'run %d: takeover %.2f s, heal starts %.2f s, READY %.2f s after the SIGKILL\n' "$i" \
		"$(tail -1 takeover.txt)" "$(tail -1 heal.txt)" "$(tail -1 ready.txt)"
	leader=$standby
	tmp=$lead_dir lead_dir=$stand_dir stand_dir=$tmp
done
stats() { sort -n "$1" | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "min %.2f s, median %.2f s, max %.2f s", v[1], m, v[NR] }'; }
echo "takeover (kill -> standby holds the lease): $(stats takeover.txt)"
goal=$((TTL + INTERVAL))
worst=$(sort -n heal.txt | tail -1)
echo "heal     (kill -> the replace starts):      $(stats heal.txt)   [aim: max <= lease TTL + one interval = ${goal} s: $(bench_aim "$worst" '<=' "$goal")]"
echo "ready    (kill -> replacement READY):         $(stats ready.txt)"

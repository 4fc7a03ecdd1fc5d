#!/bin/sh
# Benchmark of one controller over many workers (issue 28 item 4): N
# workers served by ONE process over real SSH (tests/e2e/ssh_workers.py, the
# many-worker harness: each worker its own loopback address from 127.2.0.1
# and its own home, the bootstrap, screen sessions and jobs real processes),
# handed out by the Cloud TPU API emulator as the workers of v4-32 nodes (4
# workers each, one restart unit).
#
#   sh tests/bench/scale_bench.sh [N] [TRIALS] [IDLE_SECONDS]
#   defaults: 256 workers, 20 trials, 60 s idle
#   make bench: 256; BENCH_FULL=1: 1,024 and 4,096; smallest
#   (make bench-smoke): sh tests/bench/scale_bench.sh 16 2 5
#
# Steps and the lines it prints (a checker reads the names):
#   1. `apply` of N/4 nodes at -parallelism=$PARALLELISM (default 50),
#      under GNU time:
#      scale: N workers provisioned in S s, tpuform CPU C ms per worker
#   2. `watch` at its defaults (prints its pid at once, so that its /proc
#      can be read from outside):
#      scale: watch pid PID
#      attached: when every worker has had a job wait (the bootstrap's wait
#      FIFO in its run directory) at least once; per-node requests: GETs of
#      one node or instance in the emulator's request log, from watch's
#      start to the end of step 3 (the zone lists are not per node):
#      scale: attach A s after watch started, per-node requests R
#   3. 10 s to settle, then IDLE_SECONDS of nothing, watch's utime+stime
#      from /proc/PID/stat over that span; threads (tasks), open files (fds)
#      and RSS read from /proc/PID at its end:
#      scale: idle P % of one core over I s, threads T, open files F, RSS M MiB
#   4. TRIALS times: worker 1's job of a node picked in turn is killed (as
#      a job that fails or is preempted ends); the latency is from the kill
#      to the later of the 4 workers' new start lines (the jobs stamp them),
#      as tests/bench/job_wait_bench.sh measures it (one line lists them in
#      trial order; a unit not running again within 60 s counts 999 s):
#      scale: job exit -> unit running again p50 X s, p99 Y s over K trials
# BENCH_JUMP=1: the workers are reached through a bastion (ssh.proxy_jump):
# one more harness address, after the workers', serves as the bastion (the
# harness allows direct-tcpip), and a line after the idle one gives the
# TCP connections to it while watch waits on every worker:
#      scale: through a bastion: B bastion connections for N workers
# The first line gives the load average at the start; indented lines give
# it after apply and at attach, and a "meanwhile the machine" line after the
# idle one the processes started a second and the cores' busy share over
# the idle span (what the emulated workers cost: everything on the machine).
# Figures only: nothing is checked against the issue's aims. Skips itself
# (exit 0, "skipped") without python3-asyncssh; exits 1 with a message when
# a step fails. Leaves nothing running: watch, the emulator, the harness and
# every process a worker started end on any exit.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
N=${1:-256}
TRIALS=${2:-20}
IDLE=${3:-60}
NODES=$((N / 4))
# 127.2.0.0/16 and up: the loopback block of the many-worker harness
# (127.0.x.y belongs to the sshd.sh tests). BENCH_BASE moves it, so that two
# runs on one machine do not meet (e.g. BENCH_BASE=127.5.0.1; 4,096 workers
# take 16 /24s: 127.2.0.1 to 127.2.16.0); BENCH_TPUFORM runs another build
# of tpuform (a copy of the old one, side by side).
BASE=${BENCH_BASE:-127.2.0.1}
T=${BENCH_TPUFORM:-$TOP/tpuform}
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/e2e/ssh_workers.sh"
. "$TOP/tests/bench/lib.sh"
if [ "$N" -lt 4 ] || [ $((N % 4)) -ne 0 ]; then
	echo "scale_bench: N must be a multiple of 4 (v4-32 nodes)" >&2
	exit 1
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/tpf-scale.XXXXXX")
cd "$W" || exit 1
WATCH=
cleanup() {
	[ -n "$WATCH" ] && kill "$WATCH" 2>/dev/null && wait "$WATCH" 2>/dev/null
	ssh_workers_stop
	fakegcp_stop >/dev/null 2>&1
	bench_reap "$W"
	cd / || return
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$W"
}
bench_traps
bench_client_env
fail() {
	echo "scale_bench: FAILED: $*" >&2
	exit 1
}
now() { date +%s.%N; }
# screen's socket, w/wI/screen/PID.tpuform-sc-..., must fit in 107 bytes
# (unix(7)): otherwise no session ever appears.
sock="$W/w/w$N/screen/1234567.tpuform-sc-a-$NODES-3"
[ "${#sock}" -le 107 ] || fail "TMPDIR is too long for screen's sockets ($sock)"
# The kernel's limits the emulated workers meet first: a screen session
# holds a pseudo-terminal (kernel.pty.max, 4,096 by default: the 4,096th
# worker's session never appeared), and an idle worker about 6 processes
# (kernel.pid_max, 32,768 by default). Said up front, not as a failed apply
# minutes later.
limit() { cat "/proc/sys/kernel/$1" 2>/dev/null || echo 0; }
ptys=$(limit pty/max)
pids=$(limit pid_max)
[ "$ptys" -eq 0 ] || [ "$ptys" -ge $((N + 256)) ] ||
	fail "kernel.pty.max is $ptys, and $N workers need $((N + 256)) (a screen session each): sysctl -w kernel.pty.max=$((2 * N))"
[ "$pids" -eq 0 ] || [ "$pids" -ge $((8 * N + 4096)) ] ||
	fail "kernel.pid_max is $pids, and $N workers need about $((8 * N + 4096)): sysctl -w kernel.pid_max=$((8 * N + 4096))"
command -v /usr/bin/time >/dev/null 2>&1 || { echo "scale_bench: needs GNU time (/usr/bin/time): skipped"; exit 0; }
command -v jq >/dev/null 2>&1 || { echo "scale_bench: needs jq: skipped"; exit 0; }
mkdir -p ev
SSH_WORKERS_NO_KEYS=1
JUMP=${BENCH_JUMP:-0}
[ "$JUMP" = 1 ] || JUMP=0
ssh_workers_start "$W/w" "$((N + JUMP))" "$BASE"
case $? in
0) ;;
2) echo "scale_bench: needs python3 with asyncssh (python3-asyncssh): skipped"; exit 0 ;;
*) fail "the worker harness did not start" ;;
esac
fakegcp_start --project bench-project --latency-ms 20 --op-seconds 0.5 --page-size 100 \
	--worker-ip-base "$BASE" --worker-port "$SSH_WORKERS_PORT" --worker-dir "$W/w" \
	--log "$W/requests.jsonl" >/dev/null || fail "the emulator did not start"
bench_job_fleet sc "$SSH_WORKERS_KEY" "$SSH_WORKERS_PORT" v4-32 "$NODES" "$W/ev" >fleet.yaml
if [ "$JUMP" = 1 ]; then
	# the harness address after the last worker's
	BASTION=$(echo "$BASE $N" | awk '{ split($1, a, "."); v = ((a[1] * 256 + a[2]) * 256 + a[3]) * 256 + a[4] + $2
		printf "%d.%d.%d.%d", int(v / 16777216) % 256, int(v / 65536) % 256, int(v / 256) % 256, v % 256 }')
	sed "s|^ssh: { \(.*\) }\$|ssh: { \1, proxy_jump: \"root@$BASTION:$SSH_WORKERS_PORT\" }|" fleet.yaml >fleet.jump
	mv fleet.jump fleet.yaml
	# the bastion is no node's worker: no agent installs the key there
	cp "$SSH_WORKERS_KEY.pub" "$W/w/w$N/home/.ssh/authorized_keys"
	grep -q proxy_jump fleet.yaml || fail "no proxy_jump in the fleet file"
fi
echo "== scale: $N workers ($NODES v4-32 nodes) on one SSH harness, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# 1. Provisioning.
t0=$(now)
/usr/bin/time -q -f '%U %S' -o cpu.txt \
	"$T" apply -f fleet.yaml -auto-approve -parallelism="${PARALLELISM:-50}" >apply.out 2>&1 &
TIMEPID=$!
# apply's threads, sampled while it runs: they stay fixed as workers grow
# (engine/workers/provision_fanout.c), where they were -parallelism per node
peak=0
while kill -0 "$TIMEPID" 2>/dev/null; do
	for p in $(pgrep -P "$TIMEPID"); do
		th=$(awk '/^Threads:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
		[ -n "$th" ] && [ "$th" -gt "$peak" ] && peak=$th
	done
	sleep 0.1
done
wait "$TIMEPID"
rc=$?
t1=$(now)
changed=$(grep -c '^changed: ' apply.out)
if [ "$rc" -ne 0 ] || [ "$changed" -lt "$N" ]; then
	tail -n 15 apply.out >&2
	fail "apply exited $rc, $changed of $N workers provisioned"
fi
echo "scale: $N workers provisioned in $(echo "$t0 $t1" | awk '{ printf "%.1f", $2 - $1 }') s," \
	"tpuform CPU $(awk -v n="$N" '{ printf "%.1f", 1000 * ($1 + $2) / n }' cpu.txt) ms per worker"
echo "   (apply: at most $peak threads at -parallelism=${PARALLELISM:-50})"

# 2. watch at its defaults; attached when every worker had a wait.
echo "   (load $(cut -d' ' -f1-3 /proc/loadavg) after apply)"
tck=$(getconf CLK_TCK)
# the harness's own CPU, and its commands' (the reaped children's: the
# bootstrap's verbs and what they waited for)
hcpu() { awk '{ print $14 + $15, $16 + $17 }' "/proc/$SSH_WORKERS_PID/stat"; }
ha=$(hcpu)
w0=$(now)
"$T" watch -f fleet.yaml -json >watch.out 2>&1 &
WATCH=$!
echo "scale: watch pid $WATCH"
: >seen.txt
waited() {
	find w -path 'w/w*/home/tpuform/run/wait.*' 2>/dev/null | cut -d/ -f2 | sort -u - seen.txt >seen.new
	mv seen.new seen.txt
	wc -l <seen.txt
}
# Bounds are on the clock: under load a pass of these loops is slow.
end=$(($(date +%s) + 900))
until [ "$(waited)" -ge "$N" ]; do
	kill -0 "$WATCH" 2>/dev/null || { tail -n 5 watch.out >&2; fail "watch exited"; }
	sleep 0.2
	[ "$(date +%s)" -lt "$end" ] || fail "only $(wc -l <seen.txt) of $N workers waited on in 900 s"
done
attach=$(echo "$w0 $(now)" | awk '{ printf "%.1f", $2 - $1 }')
# Where the attach's time went: tpuform's CPU and the harness's SSH
# server's (a single Python thread serving every handshake).
echo "$(awk '{ print $14 + $15 }' "/proc/$WATCH/stat") $ha $(hcpu) $tck" | awk '{ t = $6
	printf "   (during attach: tpuform CPU %.1f s, the harness'"'"'s SSH server %.1f s)\n", $1 / t, ($4 - $2) / t }'

# 3. Idle.
echo "   (load $(cut -d' ' -f1-3 /proc/loadavg) at attach)"
sleep 10
# the whole machine: processes started (/proc/stat's counter) and its
# cores' busy ticks, for what the emulation (and anything else) costs
machine() { awk '/^processes / { p = $2 } /^cpu / { b = $2 + $3 + $4 + $7 + $8 } END { print p, b }' /proc/stat; }
m0=$(machine)
cpu() { awk '{ print $14 + $15 }' "/proc/$WATCH/stat"; }
h0=$(hcpu)
c0=$(cpu)
a=$(now)
sleep "$IDLE"
c1=$(cpu)
h1=$(hcpu)
m1=$(machine)
b=$(now)
fds=$(find "/proc/$WATCH/fd" -mindepth 1 -maxdepth 1 | wc -l)
threads=$(find "/proc/$WATCH/task" -mindepth 1 -maxdepth 1 | wc -l)
rss=$(awk '/^VmRSS:/ { printf "%.0f", $2 / 1024 }' "/proc/$WATCH/status")
idle=$(echo "$c0 $c1 $tck $a $b" | awk '{ printf "%.2f", 100 * ($2 - $1) / $3 / ($5 - $4) }')
pernode=$(jq -r --argjson a "$w0" --argjson b "$b" \
	'select(.t >= $a and .t <= $b and .method == "GET") | .path' requests.jsonl |
	grep -cE '/(nodes|instances)/[^/:]+$')
echo "scale: attach $attach s after watch started, per-node requests $pernode"
echo "scale: idle $idle % of one core over $IDLE s, threads $threads, open files $fds, RSS $rss MiB"
if [ "$JUMP" = 1 ]; then
	echo "scale: through a bastion: $(ss -Htn state established "dst $BASTION:$SSH_WORKERS_PORT" | wc -l | tr -d ' ') bastion connections for $N workers"
fi
echo "$h0 $h1 $tck $a $b" | awk '{ t = $5 * ($7 - $6); printf "meanwhile the harness: its SSH server %.1f %% of one core, the workers'"'"' commands %.1f %%\n", 100 * ($3 - $1) / t, 100 * ($4 - $2) / t }'
echo "$m0 $m1 $tck $a $b $(nproc)" | awk -v load="$(cut -d' ' -f1-3 /proc/loadavg)" '{ t = $7 - $6
	printf "meanwhile the machine: %.0f processes started a second, %.0f %% of its %d cores busy, load %s\n",
		($3 - $1) / t, 100 * ($4 - $2) / $5 / t / $8, $8, load }'

# 4. Job exit -> the unit (the node's 4 workers) running again.
: >lat.txt
bench_unit_trials sc-a "$NODES" 4 "$TRIALS" ev lat.txt
echo "latencies, in trial order (s): $(tr '\n' ' ' <lat.txt)"
bench_percentiles lat.txt >stats.txt
read -r k p50 p99 _ <stats.txt
echo "scale: job exit -> unit running again p50 $p50 s, p99 $p99 s over $k trials"
kill -TERM "$WATCH"
wait "$WATCH"
WATCH=

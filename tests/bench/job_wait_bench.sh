#!/bin/sh
# Benchmark of job waits (issue 21 part 4): how soon `watch`, at its default
# settings (-interval 10s, -session-check 60s, job waits on), has every
# worker of a unit running again after one worker's job exits, on WORKERS
# sshd workers (v4-16 nodes: units of 2 workers) of the Cloud TPU API
# emulator; its CPU while nothing happens; its open files.
#
#   sh tests/bench/job_wait_bench.sh [WORKERS] [TRIALS] [IDLE_SECONDS]
#   defaults: 64 workers, 20 trials, 30 s idle
#   smallest (make bench-smoke): sh tests/bench/job_wait_bench.sh 4 1 1
# Skips itself (exit 0, "skipped") without root or sshd; exits 1 with a
# message when a step fails. Ends its workers' sessions and jobs on exit.
#
# A trial kills worker 1's job on a node picked in turn (each job writes its
# shell's pid, then execs sleep) and waits until both workers of that node
# wrote a new start line; the latency is from the kill to the later of the
# two starts, as the jobs' own clocks stamp them. The workers: ONE sshd on
# every loopback address with a ForceCommand that gives each address a home
# of its own (tests/bench/watch_round_bench.sh), so 256 workers cost one
# daemon plus one sshd child per connection.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
WORKERS=${1:-64}
TRIALS=${2:-20}
IDLE=${3:-30}
NODES=$((WORKERS / 2))
BASE=127.0.90.1
T=$TOP/tpuform
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/bench/lib.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/tpuform-wait-bench.XXXXXX")
cd "$W" || exit 1
SSHD=
WATCH=
# On any exit (an error, ^C, a kill): stop watch and sshd, then whatever
# the workers' logins left under $W (their screen sessions, jobs and job
# waits: one sshd serves every address, so no VM ends with it).
cleanup() {
	[ -n "$WATCH" ] && kill "$WATCH" 2>/dev/null && wait "$WATCH" 2>/dev/null
	[ -n "$SSHD" ] && kill "$SSHD" 2>/dev/null && wait "$SSHD" 2>/dev/null
	bench_reap "$W"
	fakegcp_stop >/dev/null 2>&1
	cd / || return
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$W"
}
bench_traps
bench_client_env

if [ "$(id -u)" != 0 ] || [ ! -x /usr/sbin/sshd ]; then
	echo "job_wait_bench: needs root and /usr/sbin/sshd: skipped"
	exit 0
fi
# screen's socket, $W/homes/ADDR/screen/PID.tpuform-wb, must fit in 107
# bytes (unix(7)): otherwise no session ever appears.
sock="$W/homes/127.255.255.255/screen/1234567.tpuform-wb"
[ "${#sock}" -le 107 ] || { echo "job_wait_bench: FAILED: TMPDIR is too long for screen's sockets ($sock)" >&2; exit 1; }
mkdir -p /run/sshd homes ev
chmod 700 homes
ssh-keygen -q -t ed25519 -N '' -f key && ssh-keygen -q -t ed25519 -N '' -f hostkey || exit 1
# shellcheck disable=SC2016 # expanded by the wrapper's own sh, per login
printf '%s\n' '#!/bin/sh' \
	'd='"$W"'/homes/$(echo "$SSH_CONNECTION" | cut -d" " -f3)' \
	'mkdir -p "$d/screen" && chmod 700 "$d" "$d/screen" || exit 1' \
	'export HOME="$d" SCREENDIR="$d/screen" TPUFORM_LIBTPU_LOCKFILE="$d/libtpu_lockfile" TPUFORM_METADATA_URL=http://127.0.0.1:9/none' \
	'cd "$d" || exit 1' \
	'case $SSH_ORIGINAL_COMMAND in' \
	'*sftp-server* | sftp | internal-sftp) exec /usr/lib/openssh/sftp-server -d "$d" ;;' \
	'esac' \
	'exec sh -c "$SSH_ORIGINAL_COMMAND"' >wrap.sh
chmod 755 wrap.sh
mkdir -p roothome && cp key.pub authorized_keys && chmod 600 authorized_keys
PORT=
for try in 1 2 3 4 5; do
	PORT=$((30000 + ($$ * 7 + try * 997) % 20000))
	cat >sshd_config <<EOF
ListenAddress 0.0.0.0:$PORT
HostKey $W/hostkey
PidFile none
AuthorizedKeysFile $W/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
MaxStartups 600:30:1200
MaxSessions 50
LogLevel ERROR
ForceCommand $W/wrap.sh
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
	# shellcheck disable=SC2016 # $1 is for the inner sh
	unshare --mount --propagation private sh -c 'mount --bind "$1/roothome" /root &&
		exec /usr/sbin/sshd -D -f "$1/sshd_config" -E "$1/sshd.log"' sh "$W" &
	SSHD=$!
	sleep 0.5
	kill -0 "$SSHD" 2>/dev/null && break
	SSHD=
done
[ -n "$SSHD" ] || { echo "job_wait_bench: sshd did not start: $(tail -n 2 sshd.log)"; exit 1; }
i=0
while [ "$i" -lt "$((WORKERS + 16))" ]; do
	mkdir -p "agent/w$i" && cp hostkey.pub "agent/w$i/hostkey.pub" || exit 1
	i=$((i + 1))
done
fakegcp_start --project bench-project --latency-ms 20 --op-seconds 0.5 --page-size 50 \
	--worker-ip-base "$BASE" --worker-port "$PORT" --worker-dir "$W/agent" \
	--log "$W/requests.jsonl" >/dev/null || exit 1
bench_job_fleet wb "$W/key" "$PORT" v4-16 "$NODES" "$W/ev" >fleet.yaml
echo "== job waits: $WORKERS workers ($NODES v4-16 nodes), watch at its defaults, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s)
"$T" apply -f fleet.yaml -auto-approve -parallelism="${PARALLELISM:-50}" >apply.out 2>&1
changed=$(grep -c '^changed: ' apply.out)
echo "setup: $changed workers provisioned in $(($(date +%s) - t0)) s"
[ "$changed" -ge "$WORKERS" ] || { tail -n 15 apply.out; echo "job_wait_bench: FAILED: $changed of $WORKERS workers provisioned" >&2; exit 1; }
"$T" watch -f fleet.yaml -parallelism="${PARALLELISM:-50}" -json >watch.out 2>&1 &
WATCH=$!
# Attached: a wait FIFO in the run directory of (nearly) every worker; a
# wait between two windows has none for a moment.
attached() { find homes -path '*/tpuform/run/wait.*' 2>/dev/null | wc -l; }
i=0
until [ "$(attached)" -ge "$((WORKERS * 9 / 10))" ]; do
	sleep 0.5
	i=$((i + 1))
	[ "$i" -lt 600 ] || { tail -n 5 watch.out; echo "job_wait_bench: FAILED: only $(attached) of $WORKERS workers attached in 300 s" >&2; exit 1; }
done
echo "attached: $(attached) of $WORKERS workers waited on, $(awk "BEGIN { printf \"%.1f\", $i / 2 }") s after watch started"
sleep 10

# Idle: nothing happens for IDLE seconds.
tck=$(getconf CLK_TCK)
cpu() { awk '{ print $14 + $15 }' "/proc/$WATCH/stat"; }
c0=$(cpu)
a=$(date +%s.%N)
sleep "$IDLE"
c1=$(cpu)
b=$(date +%s.%N)
fds=$(find "/proc/$WATCH/fd" -mindepth 1 -maxdepth 1 | wc -l)
threads=$(awk '/^Threads:/ { print $2 }' "/proc/$WATCH/status")
rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$WATCH/status")
idle=$(echo "$c0 $c1 $tck $a $b" | awk '{ printf "%.2f", 100 * ($2 - $1) / $3 / ($5 - $4) }')
echo "idle ${IDLE} s: watch CPU ${idle}% of one core   [aim: < 2% (at 256 workers): $(bench_aim "$idle" '<' 2)]"
echo "open files: $fds (limit $(awk '/Max open files/ { print $4 }' "/proc/$WATCH/limits")), threads: $threads, RSS: $((rss / 1024)) MiB"

# Trials: kill worker 1's job of node k, wait for both workers' new starts.
: >lat.txt
bench_unit_trials wb-a "$NODES" 2 "$TRIALS" ev lat.txt
echo "latencies, in trial order (s): $(tr '\n' ' ' <lat.txt)"
# The aim (issue 21): p99 under 3 s at 64 workers, under 5 s at 256.
aim=5
[ "$WORKERS" -le 64 ] && aim=3
bench_percentiles lat.txt >stats.txt
read -r n p50 p99 max <stats.txt
echo "job exit -> both workers of its unit running again: $n trials, p50 $p50 s, p99 $p99 s, max $max s   [aim: p99 < $aim s (3 s up to 64 workers, 5 s at 256): $(bench_aim "$p99" '<' "$aim")]"
kill -TERM "$WATCH"
wait "$WATCH"
WATCH=

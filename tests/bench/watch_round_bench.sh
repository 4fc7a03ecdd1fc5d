#!/bin/sh
# Benchmark of a quiet `tpuform watch` round at scale (issue 13, point 3):
# NODES nodes (default 1,000, v2-8: one worker each) on the Cloud TPU API
# emulator, every worker provisioned, nothing to heal. Prints the watch
# process's CPU per round and the API requests per minute, and checks
# that a quiet round sends no per-node request (only the zone lists).
#
#   sh tests/bench/watch_round_bench.sh [NODES] [SECONDS] [INTERVAL]
#   defaults: 1,000 nodes, 60 s of watching, -interval 5s
#   smallest (make bench-smoke): sh tests/bench/watch_round_bench.sh 4 2 1
# The requests lines say whether the aim (0 per-node requests, at watch
# start and in quiet rounds) is met.
# Skips itself (exit 0, "skipped") without root or sshd; exits 1 when a
# step fails. Ends its workers' sessions and jobs on exit.
#
# The workers: ONE sshd listening on every loopback address (0.0.0.0), with
# a ForceCommand that gives each worker address a home of its own (HOME,
# SCREENDIR, the libtpu lock file, the sftp start directory), so a thousand
# workers cost one daemon. The job is `true` with restart: never, so no
# thousand jobs run; -session-check is an hour, so the measured rounds do
# not probe sessions (the first round, which does, is left out).
#
# For tests/bench/ledger_bench.sh: BENCH_FLEET_EXTRA is added to the fleet
# file's top level (a budget:), BENCH_LEDGER_SEED is copied in as the run
# ledger before the apply (a ledger of some history).
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
NODES=${1:-1000}
SECONDS_=${2:-60}
INTERVAL=${3:-5}
BASE=127.0.80.1
T=${BENCH_TPUFORM:-$TOP/tpuform}
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/bench/lib.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/tpuform-round-bench.XXXXXX")
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
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export NO_COLOR=1 TPUFORM_ACCESS_TOKEN=bench TPUFORM_GCP_POLL_MIN=0.2 TPUFORM_GCP_POLL_MAX=1
unset SSH_AUTH_SOCK

if [ "$(id -u)" != 0 ] || [ ! -x /usr/sbin/sshd ]; then
	echo "watch_round_bench: needs root and /usr/sbin/sshd: skipped"
	exit 0
fi
# screen's socket, $W/homes/ADDR/screen/PID.tpuform-rb, must fit in 107
# bytes (unix(7)): otherwise no session ever appears.
sock="$W/homes/127.255.255.255/screen/1234567.tpuform-rb"
[ "${#sock}" -le 107 ] || { echo "watch_round_bench: FAILED: TMPDIR is too long for screen's sockets ($sock)" >&2; exit 1; }
mkdir -p /run/sshd homes
chmod 700 homes
ssh-keygen -q -t ed25519 -N '' -f key && ssh-keygen -q -t ed25519 -N '' -f hostkey || exit 1
# shellcheck disable=SC2016 # expanded by the wrapper's own sh, per login
printf '%s\n' '#!/bin/sh' \
	'd='"$W"'/homes/$(echo "$SSH_CONNECTION" | cut -d" " -f3)' \
	'mkdir -p "$d/screen" && chmod 700 "$d" "$d/screen" || exit 1' \
	'export HOME="$d" SCREENDIR="$d/screen" TPUFORM_LIBTPU_LOCKFILE="$d/libtpu_lockfile"' \
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
MaxStartups 400:30:800
MaxSessions 50
LogLevel ERROR
ForceCommand $W/wrap.sh
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
	# In a mount namespace of its own with an empty /root: the login
	# shell (bash) must not source this machine's ~/.bashrc.
	# shellcheck disable=SC2016 # $1 is for the inner sh
	unshare --mount --propagation private sh -c 'mount --bind "$1/roothome" /root &&
		exec /usr/sbin/sshd -D -f "$1/sshd_config" -E "$1/sshd.log"' sh "$W" &
	SSHD=$!
	sleep 0.5
	kill -0 "$SSHD" 2>/dev/null && break
	SSHD=
done
[ -n "$SSHD" ] || { echo "watch_round_bench: sshd did not start: $(tail -n 2 sshd.log)"; exit 1; }

# The emulator is the workers' guest agent (--worker-dir): it publishes
# worker i's host key from agent/w<i>/hostkey.pub, as a VM publishes its
# own. One sshd with one host key answers at every address here.
i=0
while [ "$i" -lt "$((NODES + 16))" ]; do
	mkdir -p "agent/w$i" && cp hostkey.pub "agent/w$i/hostkey.pub" || exit 1
	i=$((i + 1))
done
fakegcp_start --project bench-project --latency-ms 20 --op-seconds 0.5 --page-size 50 \
	--worker-ip-base "$BASE" --worker-port "$PORT" --worker-dir "$W/agent" \
	--log "$W/requests.jsonl" >/dev/null || exit 1
cat >fleet.yaml <<YAML
fleet: rb
provider:
  gcp: { project: bench-project }
ssh: { user: root, private_key: "$W/key", port: $PORT }
run: sleep 20
restart: never
${BENCH_FLEET_EXTRA:-}
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [z1, z2, z3, z4], count: $NODES }
YAML
[ -n "${BENCH_LEDGER_SEED:-}" ] && cp "$BENCH_LEDGER_SEED" tpuform.state.json.ledger.jsonl
echo "== watch round: $NODES nodes in 4 zones, every worker provisioned, -interval ${INTERVAL}s, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s)
"$T" apply -f fleet.yaml -auto-approve -parallelism="${PARALLELISM:-50}" >apply.out 2>&1
rc=$?
changed=$(grep -c '^changed: ' apply.out)
echo "setup: apply of $NODES nodes, $changed workers provisioned in $(($(date +%s) - t0)) s (exit $rc)"
[ "$changed" -ge "$NODES" ] || { tail -n 15 apply.out; exit 1; }

ws=$(date +%s.%N)
"$T" watch -f fleet.yaml -interval "${INTERVAL}s" -session-check 1h -json >watch.jsonl 2>watch.err &
WATCH=$!
# Wait for the first round (it probes every session) to end.
i=0
until grep -q '"watch_summary"' watch.jsonl 2>/dev/null; do
	sleep 0.2
	i=$((i + 1))
	[ "$i" -lt 1500 ] || { echo "no first round in 300 s"; tail -n 5 watch.err; exit 1; }
done
cpu() { awk '{ print $14 + $15 }' "/proc/$WATCH/stat"; }
r0=$(grep -c '"watch_summary"' watch.jsonl)
c0=$(cpu)
a=$(date +%s.%N)
sleep "$SECONDS_"
c1=$(cpu)
b=$(date +%s.%N)
r1=$(grep -c '"watch_summary"' watch.jsonl)
kill -TERM "$WATCH"
wait "$WATCH"
WATCH=
tck=$(getconf CLK_TCK)
rounds=$((r1 - r0))
# A per-node request names one node, instance or queued resource
# (nodes.get, instances.get, getGuestAttributes, ...); the lists and the
# project's metadata do not.
pernode() { grep -cE '/(nodes|instances|queuedResources)/' "$1"; }
jq -r --argjson a "$ws" --argjson b "$a" 'select(.t >= $a and .t < $b) | "\(.method) \(.path)"' requests.jsonl >start.txt
start=$(pernode start.txt)
jq -r --argjson a "$a" --argjson b "$b" 'select(.t >= $a and .t <= $b) | "\(.method) \(.path)"' requests.jsonl >reqs.txt
nreq=$(wc -l <reqs.txt)
lists=$(grep -c '/nodes$' reqs.txt)
qrs=$(grep -c '/queuedResources$' reqs.txt)
other=$(pernode reqs.txt)
echo "$rounds quiet rounds in $(echo "$a $b" | awk '{ printf "%.0f", $2 - $1 }') s"
echo "watch CPU per quiet round: $(echo "$c0 $c1 $tck $rounds" | awk '{ if ($4) printf "%.0f ms", 1000 * ($2 - $1) / $3 / $4; else print "n/a" }')" \
	"($(echo "$c0 $c1 $tck $a $b" | awk '{ printf "%.1f%%", 100 * ($2 - $1) / $3 / ($5 - $4) }') of one core)"
echo "API requests: $nreq = $(echo "$nreq $a $b" | awk '{ printf "%.0f", 60 * $1 / ($3 - $2) }') per minute ($lists node list pages, $qrs queued-resource lists, $other per-node requests)   [aim: 0 per-node requests: $(bench_aim "$other" = 0)]"
echo "per-node requests: $start at watch start (until its first round ended), $other in $rounds quiet rounds   [aim: 0 and 0: $(bench_aim "$((start + other))" = 0)]"

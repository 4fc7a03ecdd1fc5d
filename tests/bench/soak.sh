#!/bin/sh
# Fault soak of `tpuform watch` (issue 13, point 2): a benchmark, not a
# test. It prints figures and never fails on them; the figures that must be
# 0 say so in the summary.
#
#   sh tests/bench/soak.sh [MINUTES] [NODES] [INTERVAL]
#   make soak SOAK_MINUTES=N
#   defaults: 10 minutes, 16 preemptible v2-8 nodes, -interval 5s
#   MINUTES may be seconds instead, as Ns; smallest (make bench-smoke):
#   sh tests/bench/soak.sh 20s 2 2
#
# `watch` keeps the fleet on the Cloud TPU API emulator (tests/fakegcp) with
# real sshd workers (tests/e2e/sshd.sh), while this script, every round
# (one -interval), injects faults at random:
#   - 10 % of API requests fail: 500, 502, 503, 504, a dropped connection or a
#     2 s answer (the emulator's --fault-rate/--fault-kinds, set through
#     POST /__admin/faults once the first apply is done);
#   - a READY node is preempted (mean one every PREEMPT_EVERY s; each fault
#     comes at a random time, its period drawn uniformly in [T/2, 3T/2]);
#   - a worker's sshd is stopped, and started again 5-20 s later (its VM and
#     job live on);
#   - tpuform itself is SIGKILLed and started again 1-5 s later, at random
#     points of the first half of the run (the second half is one process,
#     so its RSS and fd slopes are measured over a long stretch);
#   - the state directory is a 4 MiB tmpfs, filled up with a file for three
#     rounds now and then (only as root; skipped with a note otherwise).
# Checked every round: the state file parses (jq, and `tpuform state list`),
# its serial never goes backwards, and nodes in the emulator that the state
# does not know and that are not being created (leaked once unaccounted for
# more than LEAK_GRACE s while watch runs); the watch process's VmRSS and
# open fds are sampled. At the end faults stop, watch settles and gets
# SIGTERM, and the emulator's nodes are compared with the final state; the
# request log gives duplicate creates. The final block starts with
# "==== soak summary"; each figure that must be 0 ends with
# "[aim: 0: met]" or "[aim: 0: MISSED]". Skips itself (exit 0, "skipped")
# without root, sshd or unshare; exits 1 when a step of its own fails.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
MINUTES=${1:-${SOAK_MINUTES:-10}}
case $MINUTES in
*s) DURATION=${MINUTES%s} ;;
*) DURATION=$((MINUTES * 60)) ;;
esac
LENGTH="$MINUTES min"
case $MINUTES in *s) LENGTH="$DURATION s" ;; esac
NODES=${2:-16}
INTERVAL=${3:-5}
PREEMPT_EVERY=${SOAK_PREEMPT_EVERY:-30}
SSHD_KILL_EVERY=${SOAK_SSHD_KILL_EVERY:-40}
TPF_KILL_EVERY=${SOAK_TPF_KILL_EVERY:-150}
FILL_EVERY=${SOAK_FILL_EVERY:-200}
FAULT_RATE=${SOAK_FAULT_RATE:-0.1}
LEAK_GRACE=60
# Every accepted create takes fresh worker addresses: enough sshd workers for
# the nodes, every re-creation the preemptions cause, and a margin.
WORKERS=$((NODES + DURATION * 5 / (PREEMPT_EVERY * 4) + 30))
BASE=127.0.70.1
T=$TOP/tpuform
TPF_ROOT=$TOP
. "$TOP/tests/e2e/sshd.sh"
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/bench/lib.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/tpuform-soak.XXXXXX")
SD=$W/statedir
SF=$SD/tpuform.state.json
mkdir -p "$SD"
cd "$W" || exit 1
WATCH=
MOUNTED=
cleanup() {
	[ -n "$WATCH" ] && kill -9 "$WATCH" 2>/dev/null
	fakegcp_stop >/dev/null 2>&1
	sshd_stop
	cd /
	[ -n "$MOUNTED" ] && umount "$SD" 2>/dev/null
	[ -n "${SOAK_KEEP:-}" ] && { echo "soak: kept $W"; return; }
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export NO_COLOR=1 TPUFORM_ACCESS_TOKEN=soak TPUFORM_GCP_POLL_MIN=0.2 TPUFORM_GCP_POLL_MAX=1
unset SSH_AUTH_SOCK GOOGLE_APPLICATION_CREDENTIALS

now() { date +%s.%N; }
rnd() { shuf -i "$1-$2" -n 1; }         # a random integer in [$1, $2]
# When a fault of mean period $1 s next comes: uniform in [$1/2, 3$1/2] from
# now (rounds take longer than -interval here, so no per-round coin).
next_at() { echo $(($(date +%s) + $(rnd $(($1 / 2)) $(($1 * 3 / 2))))); }

echo "== soak: $LENGTH, $NODES preemptible nodes, -interval ${INTERVAL}s, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   faults: API ${FAULT_RATE} (500,502,503,504,drop,slow); preemption every ~${PREEMPT_EVERY}s;" \
	"sshd kill every ~${SSHD_KILL_EVERY}s; tpuform SIGKILL every ~${TPF_KILL_EVERY}s (first half);" \
	"state disk full every ~${FILL_EVERY}s"
t0=$(date +%s)
sshd_start "$W/workers" "$WORKERS" "$BASE"
rc=$?
if [ "$rc" -eq 2 ]; then
	echo "cannot start sshd workers here (needs root, sshd, unshare): soak skipped"
	exit 0
fi
[ "$rc" -eq 0 ] || { echo "soak: FAILED: $WORKERS sshd workers did not start (status $rc)" >&2; exit 1; }
sshd_watch $$
echo "started $WORKERS sshd workers in $(($(date +%s) - t0)) s"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=4m,mode=0700 tmpfs "$SD" 2>/dev/null; then
	MOUNTED=yes
else
	echo "note: not root or no tmpfs: the 'state disk full' fault is skipped"
fi
fakegcp_start --project soak-project --latency-ms 10 --op-seconds 2 --page-size 50 \
	--worker-ip-base "$BASE" --worker-port "$SSHD_PORT" --worker-dir "$SSHD_DIR" --log "$W/requests.jsonl" >/dev/null || exit 1
cat >fleet.yaml <<YAML
fleet: soak
provider:
  gcp: { project: soak-project }
state: { path: $SF }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT }
run: exec sleep 100000
restart: on-failure
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [z1, z2], count: $NODES, preemptible: true }
YAML
"$T" apply -f fleet.yaml -auto-approve >apply.out 2>&1 || { tail -20 apply.out; exit 1; }
curl -s -o /dev/null -X POST "$FAKEGCP_URL/__admin/faults?rate=$FAULT_RATE&kinds=500,502,503,504,drop,slow&seed=$$"

# ---- watch, started again after each SIGKILL --------------------------------
NSTART=0
start_watch() {
	NSTART=$((NSTART + 1))
	"$T" watch -f fleet.yaml -interval "${INTERVAL}s" -json >"watch-$NSTART.jsonl" 2>"watch-$NSTART.err" &
	WATCH=$!
	echo "$(now) start $WATCH" >>events.txt
}

# ---- per-round checks -------------------------------------------------------
UNPARSABLE=0
LOST_SERIALS=0
LAST_SERIAL=0
CRASHES=0
: >samples.txt
: >leaks.txt
: >unaccounted.txt
check_state() {
	[ -f "$SF" ] || return 0
	if ! s=$(jq -e '.serial' "$SF" 2>/dev/null) ||
		! "$T" state list -f fleet.yaml >/dev/null 2>state-list.err; then
		UNPARSABLE=$((UNPARSABLE + 1))
		cp "$SF" "unparsable-$UNPARSABLE.json" 2>/dev/null
		return 0
	fi
	if [ "$s" -lt "$LAST_SERIAL" ]; then
		LOST_SERIALS=$((LOST_SERIALS + 1))
		echo "$(now) serial $LAST_SERIAL -> $s" >>events.txt
	fi
	LAST_SERIAL=$s
}

sample() {
	[ -n "$WATCH" ] && [ -r "/proc/$WATCH/status" ] || return 0
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$WATCH/status")
	fds=$(find "/proc/$WATCH/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	[ -n "$rss" ] && echo "$(now) $WATCH $rss $fds" >>samples.txt
}

# Nodes in the emulator that the state does not hold (same name and id) and
# that are not CREATING. One unaccounted for longer than LEAK_GRACE s while
# watch runs (adoption takes one round) is leaked.
check_leaks() {
	curl -s "$FAKEGCP_URL/__admin/nodes" >nodes.json || return 0
	jq -r '[.nodes[]? | select(.status != "pending") | "\(.name) \(.id // "")"] | .[]' "$SF" \
		>known.txt 2>/dev/null || return 0
	jq -r '.[] | select(.state != "CREATING") | "\(.name | split("/")[5]) \(.id)"' nodes.json |
		grep -vxF -f known.txt >unaccounted.now
	t=$(date +%s)
	awk -v t="$t" 'NR == FNR { seen[$1 " " $2] = $3; next } { print $1, $2, ($0 in seen) ? seen[$0] : t }' \
		unaccounted.txt unaccounted.now >unaccounted.new
	mv unaccounted.new unaccounted.txt
	awk -v t="$t" -v g="$LEAK_GRACE" 't - $3 > g { print $1, $2 }' unaccounted.txt >>leaks.txt
}

# ---- faults -----------------------------------------------------------------
: >preempts.txt
: >sshd_down.txt
preempt_one() {
	node=$(jq -r '[.[] | select(.state == "READY") | (.name | split("/")) | "\(.[3]) \(.[5])"] | .[]' \
		nodes.json 2>/dev/null | shuf -n 1)
	[ -n "$node" ] || return 0
	# shellcheck disable=SC2086 # "ZONE NODE": split on purpose
	set -- $node
	echo "$(now) $2" >>preempts.txt
	curl -s -o /dev/null -X POST "$FAKEGCP_URL/__admin/nodes/$1/$2:preempt"
}

kill_sshd() {
	addr=$(jq -r '[.[] | select(.state == "READY") | .networkEndpoints[]?.ipAddress] | .[]' \
		nodes.json 2>/dev/null | shuf -n 1)
	[ -n "$addr" ] || return 0
	i=$(sshd_index "$addr")
	grep -q " $i\$" sshd_down.txt && return 0
	sshd_stop_one "$i"
	echo "$(($(date +%s) + $(rnd 5 20))) $i" >>sshd_down.txt
	KILLED_SSHD=$((KILLED_SSHD + 1))
}

restart_sshds() { # all, or only those due
	t=$(date +%s)
	while read -r due i; do
		if [ "${1:-}" = all ] || [ "$due" -le "$t" ]; then
			sshd_restart_one "$i" >/dev/null 2>&1
		else
			echo "$due $i"
		fi
	done <sshd_down.txt >sshd_down.new
	mv sshd_down.new sshd_down.txt
}

kill_tpuform() {
	kill -9 "$WATCH" 2>/dev/null
	wait "$WATCH" 2>/dev/null
	echo "$(now) sigkill $WATCH" >>events.txt
	KILLED_TPF=$((KILLED_TPF + 1))
	sleep "$(rnd 1 5)"
	start_watch
}

FULL_UNTIL=0
fill_disk() {
	dd if=/dev/zero of="$SD/fill" bs=64k >/dev/null 2>&1
	FULL_UNTIL=$(($(date +%s) + 3 * INTERVAL))
	FILLS=$((FILLS + 1))
	echo "$(now) disk full ($(df -k "$SD" | awk 'NR == 2 { print $4 }') KiB left)" >>events.txt
}

KILLED_SSHD=0
KILLED_TPF=0
FILLS=0
start_watch
START=$(date +%s)
END=$((START + DURATION))
HALF=$((START + DURATION / 2))
ROUNDS=0
NEXT_PREEMPT=$(next_at "$PREEMPT_EVERY")
NEXT_SSHD=$(next_at "$SSHD_KILL_EVERY")
NEXT_FILL=$(next_at "$FILL_EVERY")
NEXT_KILL=$(next_at "$TPF_KILL_EVERY")
while [ "$(date +%s)" -lt "$END" ]; do
	sleep "$INTERVAL"
	ROUNDS=$((ROUNDS + 1))
	if ! kill -0 "$WATCH" 2>/dev/null; then
		wait "$WATCH"
		echo "$(now) watch $WATCH exited by itself (status $?); stderr: $(tail -n 3 "watch-$NSTART.err" | tr '\n' ' ')" >>events.txt
		CRASHES=$((CRASHES + 1))
		start_watch
	fi
	sample
	check_state
	check_leaks
	restart_sshds
	if [ "$FULL_UNTIL" -gt 0 ] && [ "$(date +%s)" -ge "$FULL_UNTIL" ]; then
		rm -f "$SD/fill"
		FULL_UNTIL=0
		echo "$(now) disk freed" >>events.txt
	fi
	t=$(date +%s)
	if [ "$t" -ge "$NEXT_PREEMPT" ]; then
		preempt_one
		NEXT_PREEMPT=$(next_at "$PREEMPT_EVERY")
	fi
	if [ "$t" -ge "$NEXT_SSHD" ]; then
		kill_sshd
		NEXT_SSHD=$(next_at "$SSHD_KILL_EVERY")
	fi
	if [ -n "$MOUNTED" ] && [ "$FULL_UNTIL" -eq 0 ] && [ "$t" -ge "$NEXT_FILL" ]; then
		fill_disk
		NEXT_FILL=$(next_at "$FILL_EVERY")
	fi
	if [ "$t" -lt "$HALF" ] && [ "$t" -ge "$NEXT_KILL" ]; then
		kill_tpuform
		NEXT_KILL=$(next_at "$TPF_KILL_EVERY")
	fi
done

# ---- settle, stop, final figures ---------------------------------------------
curl -s -o /dev/null -X POST "$FAKEGCP_URL/__admin/faults?rate=0"
rm -f "$SD/fill"
restart_sshds all
sleep $((INTERVAL * 4 + 20))
sample
kill -TERM "$WATCH"
wait "$WATCH"
WATCH_RC=$?
WATCH=
check_state
curl -s "$FAKEGCP_URL/__admin/nodes" >nodes.json
jq -r '[.nodes[]? | "\(.name) \(.id // "")"] | .[]' "$SF" >known.txt
jq -r '.[] | "\(.name | split("/")[5]) \(.id)"' nodes.json | grep -vxF -f known.txt >final_leaks.txt
sort -u leaks.txt >leaks.u
# Duplicate creates: an accepted create of a name whose previous accepted
# create was not followed by an accepted delete, or a 409 ALREADY_EXISTS.
jq -r 'select(.path | test("/nodes$")) | select(.method == "POST") |
	"\(.t) C \(.query | capture("nodeId=(?<n>[^&]*)").n) \(.status)"' requests.jsonl >creates.txt
jq -r 'select(.method == "DELETE" and (.path | test("/nodes/"))) |
	"\(.t) D \(.path | split("/")[7]) \(.status)"' requests.jsonl >deletes.txt
DUPS=$(sort -n creates.txt deletes.txt | awk '
	$4 == 409 && $2 == "C" { d++ }
	$4 == 200 && $2 == "C" { if (live[$3]) d++; live[$3] = 1 }
	$4 == 200 && $2 == "D" { live[$3] = 0 }
	END { print d + 0 }')
CONFLICTS=$(awk '$2 == "C" && $4 == 409' creates.txt | wc -l)

pct() { # p column-of-numbers -> value
	sort -n | awk -v p="$1" '{ v[NR] = $1 } END { if (!NR) { print "n/a"; exit }
		i = int(p * NR + 0.5); if (i < 1) i = 1; if (i > NR) i = NR; printf "%.2f s", v[i] }'
}
while read -r tp node; do
	d=$(jq -r --arg n "$node" --argjson tp "$tp" \
		'select(.method == "DELETE" and (.path | endswith("/nodes/" + $n)) and .t > $tp) | .t - $tp' \
		requests.jsonl | head -n 1)
	echo "$tp ${d:-none}"
done <preempts.txt >detect_all.txt
awk '$2 != "none" { print $2 }' detect_all.txt >detect.txt
# Windows in which watch cannot act by design: the state disk full (it
# records every step before taking it) and tpuform down after a SIGKILL.
{ echo "0 0"; awk -v i="$INTERVAL" '$2 == "disk" && $3 == "full" { f = $1 }
	$2 == "disk" && $3 == "freed" { printf "%.3f %.3f\n", f, $1 + i }
	$2 == "sigkill" { k = $1 } $2 == "start" && k { printf "%.3f %.3f\n", k, $1 + i; k = 0 }' \
	events.txt; } >windows.txt
awk 'NR == FNR { ws[NR] = $1; we[NR] = $2; nw = NR; next } $2 != "none" {
	for (j = 1; j <= nw; j++) if (ws[j] <= $1 + $2 && we[j] >= $1) next; print $2 }' \
	windows.txt detect_all.txt >detect_clear.txt
NPRE=$(wc -l <preempts.txt)
NDET=$(wc -l <detect.txt)
ALIVE=$(cat watch-*.jsonl | jq -r 'select(.type == "watch_summary") | "\(.summary.alive) \(.summary.desired)"' 2>/dev/null |
	awk '{ a += $1; d += $2; n++ } END { if (d) printf "%.1f%% over %d rounds", 100 * a / d, n; else print "n/a" }')
REQS=$(wc -l <requests.jsonl)
FAULTED=$(jq -r 'select(.fault != null) | .fault' requests.jsonl | wc -l)

# Least-squares slope per hour of column $1 (3 RSS KiB, 4 fds) over the
# samples of the process that ran longest, after its first minute.
LONGEST=$(awk '{ if (!($2 in a)) a[$2] = $1; b[$2] = $1 } END { for (p in a) print b[p] - a[p], p }' samples.txt |
	sort -n | tail -n 1 | cut -d' ' -f2)
slope() {
	awk -v p="$LONGEST" -v c="$1" -v k="$2" '$2 == p { if (!t0) t0 = $1; if ($1 - t0 < 60) next
		x = ($1 - t0) / 3600; y = $c / k; n++; sx += x; sy += y; sxx += x * x; sxy += x * y
		if (!first) first = y; last = y; if (y > max) max = y }
		END { if (n < 3 || n * sxx == sx * sx) { print "n/a"; exit }
		printf "%+.2f per hour (first %.1f, last %.1f, max %.1f, %d samples over %.0f min)",
			(n * sxy - sx * sy) / (n * sxx - sx * sx), first, last, max, n, (x) * 60 }' samples.txt
}
ALLRSS=$(awk '{ print $3 }' samples.txt | sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%.1f-%.1f MB", v[1] / 1024, v[NR] / 1024 }')
ALLFDS=$(awk '{ print $4 }' samples.txt | sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%d-%d", v[1], v[NR] }')

echo
echo "==== soak summary ($LENGTH, $NODES nodes, -interval ${INTERVAL}s, $(nproc) cores, load at end $(cut -d' ' -f1-3 /proc/loadavg))"
echo "command: make soak SOAK_MINUTES=$MINUTES   (sh tests/bench/soak.sh $MINUTES $NODES $INTERVAL)"
echo "faults injected: $FAULTED of $REQS API requests faulted; $NPRE preemptions; $KILLED_SSHD sshd kills;" \
	"$KILLED_TPF tpuform SIGKILLs; $FILLS state-disk fills$([ -z "$MOUNTED" ] && echo ' (skipped: not root)')"
zero() { echo "[aim: 0: $(bench_aim "$1" = 0)]"; }
NLEAK=$(($(wc -l <final_leaks.txt) + $(wc -l <leaks.u)))
echo "leaked nodes (must be 0):            $(wc -l <final_leaks.txt) at the end; $(wc -l <leaks.u) unaccounted > ${LEAK_GRACE}s during the run   $(zero "$NLEAK")"
echo "duplicate creates (must be 0):       $DUPS ($CONFLICTS answered 409 ALREADY_EXISTS)   $(zero "$DUPS")"
echo "unparsable states (must be 0):       $UNPARSABLE in $ROUNDS rounds   $(zero "$UNPARSABLE")"
echo "lost serials (must be 0):            $LOST_SERIALS (last serial $LAST_SERIAL)   $(zero "$LOST_SERIALS")"
echo "watch exits on its own (must be 0):  $CRASHES; final SIGTERM exit status $WATCH_RC   $(zero "$CRASHES")"
echo "alive fraction:                      $ALIVE"
echo "detection (preemption -> DELETE):    p50 $(pct 0.5 <detect.txt), p99 $(pct 0.99 <detect.txt) ($NDET of $NPRE preemptions; includes any time tpuform was down)"
echo "detection outside those windows:     p50 $(pct 0.5 <detect_clear.txt), p99 $(pct 0.99 <detect_clear.txt) ($(wc -l <detect_clear.txt) preemptions not overlapping a full disk or a restart)"
echo "watch RSS (MB), longest process:     $(slope 3 1024)"
echo "watch open fds, longest process:     $(slope 4 1)"
echo "RSS over all processes: $ALLRSS; fds: $ALLFDS; $NSTART watch processes"
if [ -s final_leaks.txt ] || [ -s leaks.u ]; then
	echo "leaked:"
	cat final_leaks.txt leaks.u | sed 's/^/  /'
fi
[ "$CRASHES" -gt 0 ] && grep 'exited by itself' events.txt | sed 's/^/  /'
echo "==== end of soak summary"

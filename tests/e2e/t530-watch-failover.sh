#!/bin/sh
# serial: watch rounds of a fraction of a second, timed detection
# shellcheck disable=SC2317 # the helpers are called through ok, is, wait_for and the EXIT trap
# watch fails over between machines (docs/watch.md "Failover"): two watches of
# one fleet whose state is in the emulated bucket, in two directories, elect
# one leader through the lease object <prefix>/<fleet>.tfleader. Only the
# leader heals; after a SIGKILL of the leader the standby takes over within
# the TTL and an interval and heals a preempted node; the lease's history is
# one chain of generations (no two leaders), the state serial never goes
# back, nothing is created twice. A leader whose lease is taken by someone
# else steps down at its next renewal and heals nothing until it leads
# again. Nodes come from the local provider (a directory both share); the
# emulator (tests/fakegcp) serves Cloud Storage.
. "$(dirname "$0")/lib.sh"
setup_dir t530
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
if ! fakegcp_start --project test-project --bucket tpf-state; then
	echo "1..0 # SKIP the emulator did not start"
	exit 0
fi
A=
B=
cleanup() {
	[ -n "$A" ] && kill -9 "$A" 2>/dev/null
	[ -n "$B" ] && kill -9 "$B" 2>/dev/null
	fakegcp_stop >/dev/null 2>&1
}
trap cleanup EXIT
export TPUFORM_STORAGE_ENDPOINT="$FAKEGCP_URL" TPUFORM_ACCESS_TOKEN=test-token
export TPUFORM_GCP_RETRY_BASE=0.05 TPUFORM_GCP_RETRY_CAP=0.1 TPUFORM_GCP_TRIES=4
TTL=3
INTERVAL=0.5
LEASE=fleets/fo/fo.tfleader

mkdir -p m1 m2
for d in m1 m2; do
	cat >"$d/fleet.yaml" <<YAML
fleet: fo
provider:
  local: { root: $W/nodes, create_delay: 3s }
state:
  gcs: { bucket: tpf-state, prefix: fleets/fo }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 2 }
YAML
done
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
lease_gen() { curl -s "$FAKEGCP_URL/__admin/storage" | jq -r --arg n "$LEASE" '.buckets[0].objects[] | select(.name == $n) | .generation'; }
# Successful lease writes, in order: "PRECONDITION TIME HOLDER_ID"
# (PRECONDITION "-" for a write without one).
lease_writes() {
	requests | jq -r '.[] | select(.method == "POST" and (.query // "" | contains("fo.tfleader")) and .status == 200)
		| "\((.query | capture("ifGenerationMatch=(?<g>[0-9]+)") | .g) // "-") \(.t) \(.body.holder.id)"'
}
serials() {
	requests | jq -r '.[] | select(.method == "POST" and (.query // "" | contains("fo.tfstate&")) and .status == 200) | .body.serial'
}
start() { # DIR OUT [flags]
	dir=$1 out=$2
	shift 2
	(cd "$dir" && exec "$TPUFORM" watch -f fleet.yaml -interval "$INTERVAL" -session-check 1s -lease-ttl "${TTL}s" "$@" >"$out" 2>&1) &
}
# Creates of node $1 in both watches' output (text and -json lines).
creates_of() { cat "$W"/a.out "$W"/b.out 2>/dev/null | grep -c -e "$1: creating" -e "\"node\":\"$1\",\"event\":\"creating\""; }
# READY events of node $1 in both watches' output.
readies_of() { cat "$W"/a.out "$W"/b.out 2>/dev/null | grep -c -e "$1: READY" -e "\"node\":\"$1\",\"event\":\"ready\""; }
readies_are() { [ "$(readies_of "$1")" -eq "$2" ]; }
# b.out from line $1 on.
b_since() { tail -n "+$1" b.out; }

# ---- one leader, one standby ------------------------------------------------
start m1 "$W/a.out"
A=$!
wait_for 20 grep -q "alive 2/2" a.out
ok "the first watch leads" grep -q "leading: this watch holds the leader lease gs://tpf-state/$LEASE" a.out
ok "and heals the fleet up" grep -q "alive 2/2" a.out
start m2 "$W/b.out" -json
B=$!
wait_for 10 grep -q '"event":"standby"' b.out
ok "the second stands by (watch_event standby in -json)" grep -q '"event":"standby"' b.out
like "naming the leader's pid" "$(grep '"event":"standby"' b.out | head -1)" "pid $A "
ok "the lease object names the leader" sh -c "curl -s '$FAKEGCP_URL/storage/v1/b/tpf-state/o/fleets%2Ffo%2Ffo.tfleader?alt=media' -H 'Authorization: Bearer t' | jq -e '.holder.pid == $A and .ttl_seconds == $TTL'"
g1=$(lease_gen)
sleep 1.5
g2=$(lease_gen)
ok "the leader renews it (generation $g1 -> $g2)" test "$g2" -gt "$g1"

(cd m1 && "$TPUFORM" local preempt -f fleet.yaml fo-a-0 >/dev/null)
wait_for 20 readies_are fo-a-0 2
is "the leader heals a preemption" "$(grep -c "fo-a-0: READY" a.out)" 2
is "the standby healed nothing" "$(grep -c '"event":"creating"' b.out)" 0

# ---- SIGKILL the leader in the middle of a heal -------------------------------
# Creates take 3 s, so the leader is killed in the replacement's create,
# holding the state lock: its successor removes that lock (the lease names
# it) and heals. (Not in the delete: a local node whose deleter died stays
# DELETING, where Cloud TPU would finish the operation.)
(cd m1 && "$TPUFORM" local preempt -f fleet.yaml fo-a-1 >/dev/null)
# The second create of fo-a-1 in a.out: the replacement (after its delete).
replacing() { [ "$(grep -c "fo-a-1: creating" a.out)" -ge 2 ]; }
wait_for 20 replacing
kill -9 "$A"
ok "the leader was killed creating fo-a-1's replacement" replacing
ok "holding the state lock" sh -c "curl -s '$FAKEGCP_URL/__admin/storage' | grep -q fo.tflock"
wait "$A" 2>/dev/null
A=
killed=$(date +%s.%N)
wait_for 20 grep -q '"event":"leader"' b.out
took=$(date +%s.%N)
ok "the standby takes over" grep -q '"event":"leader"' b.out
# The bound is the design's (a standby looks twice per TTL); the slack
# covers an ASan build on a loaded 2-core machine (this test failed once
# under such load; which check was not recorded, and this is its only
# timed one). A takeover that waited for a lock timeout or a session
# check (60 s) would still fail it.
ok "within TTL + interval (+3 s slack): $(echo "$took - $killed" | bc) s" sh -c "[ \$(echo '$took - $killed <= $TTL + $INTERVAL + 3' | bc) = 1 ]"
like "saying whom it took over from" "$(grep '"event":"leader"' b.out | head -1)" "taken over from"
wait_for 5 grep -q "removed the state lock" b.out
ok "it removes the state lock the dead leader held" grep -q "removed the state lock" b.out
b_fo1() { grep '"node":"fo-a-1"' b.out; }
wait_for 20 sh -c "grep '\"node\":\"fo-a-1\"' b.out | grep -q session_started"
ok "and heals the preempted node: its worker's session started" sh -c "grep '\"node\":\"fo-a-1\"' b.out | grep -q session_started"
# The dead leader's create either reached the provider (the successor
# waits for that node, or finds it READY, and provisions it) or did not (its
# pending record says so, and the successor creates it): never both.
created=$(b_fo1 | grep -c '"event":"creating"')
ok "the successor created fo-a-1 $created time(s): only if the dead leader's create never landed" \
	sh -c "[ $created -eq 0 ] || { [ $created -eq 1 ] && grep -q 'fo-a-1: an earlier create did not complete' b.out; }"
is "one node fo-a-1, READY" "$(jq -r .state nodes/nodes/fo-a-1/node.json)" READY
is "fo-a-0 twice: at first and after its preemption, both by the first leader" "$(creates_of fo-a-0)" 2

# ---- a stolen lease ----------------------------------------------------------
# Someone else writes the lease (no precondition): B's next renewal meets a
# 412 and B steps down; nobody renews the intruder's lease, so B takes it
# back after the TTL.
mark=$(($(wc -l <b.out) + 1))
printf '{"holder":{"id":"intruder-0000","host":"elsewhere","pid":1},"ttl_seconds":%s}' "$TTL" >intruder.json
curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Authorization: Bearer t' \
	--data-binary @intruder.json "$FAKEGCP_URL/upload/storage/v1/b/tpf-state/o?uploadType=media&name=fleets%2Ffo%2Ffo.tfleader"
stolen=$(date +%s.%N)
wait_for 10 sh -c "tail -n +$mark b.out | grep -q '\"event\":\"lease_lost\"'"
ok "the leader sees its lease taken and steps down" sh -c "tail -n +$mark b.out | grep -q '\"event\":\"lease_lost\"'"
like "naming the new holder" "$(b_since "$mark" | grep '"event":"lease_lost"')" "elsewhere pid 1"
(cd m1 && "$TPUFORM" local preempt -f fleet.yaml fo-a-0 >/dev/null)
sleep 1
is "while it stands by it heals nothing" "$(b_since "$mark" | grep -c '"event":"creating"')" 0
wait_for 15 sh -c "tail -n +$mark b.out | grep -q '\"event\":\"leader\"'"
back=$(date +%s.%N)
ok "it takes the lease back once the intruder's expires" sh -c "tail -n +$mark b.out | grep -q '\"event\":\"leader\"'"
ok "not before the TTL" sh -c "[ \$(echo '$back - $stolen >= $TTL' | bc) = 1 ]"
wait_for 20 readies_are fo-a-0 3
is "then heals" "$(b_since "$mark" | grep -c '"node":"fo-a-0","event":"ready"')" 1
is "fo-a-0 created once more, by one watch" "$(creates_of fo-a-0)" 3

# ---- the record: one chain of lease generations, serials never back ----------
lease_writes >writes.txt
serials >serials.txt
# Every conditioned lease write names a later generation than the one
# before (generations only grow): one history, no two leaders writing from
# the same lease.
chain() { awk '$1 != "-" { if (NR > 1 && $1 + 0 <= prev + 0) { print "write " NR ": ifGenerationMatch=" $1 " after " prev; bad = 1 } prev = $1 } END { exit bad }' writes.txt; }
ok "the lease's writes form one chain ($(wc -l <writes.txt | tr -d ' ') writes)" chain
is "holders in turn: the first watch, the second, the intruder, the second" \
	"$(awk '{print $3}' writes.txt | uniq | wc -l | tr -d ' ')" 4
increasing() { prev=0; while read -r s; do [ "$s" -ge "$prev" ] || return 1; prev=$s; done <serials.txt; [ "$prev" -gt 0 ]; }
ok "state serials never went backwards ($(tr '\n' ' ' <serials.txt))" increasing

# ---- a clean exit hands over at once -------------------------------------------
kill -TERM "$B"
wait "$B"
is "SIGTERM: the leader exits 0" "$?" 0
B=
is "and deletes its lease" "$(lease_gen)" ""
finish

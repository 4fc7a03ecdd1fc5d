#!/bin/sh
# shellcheck disable=SC2317 # the helpers are called through ok, is, wait_for and the EXIT trap
# The run ledger with the state in the emulated bucket (docs/ledger.md):
# two watches of one fleet in two directories, the first leading, the
# second standing by. The leader creates the node, its job starts, a
# preemption is healed; the leader is stopped (SIGTERM) and the standby
# takes over, heals a second preemption, restarts the job after a failure
# and deletes the node on completion (on_success: delete). Each watch
# writes objects of its own under <prefix>/<fleet>.ledger/; together they
# hold every event once (each writer's seq runs 1, 2, ... with no gap or
# repeat), and `report -json` reads them from the bucket: chip-hours match
# the ledger's timestamps within 1 %, 2 preemptions, 1 restart.
. "$(dirname "$0")/lib.sh"
setup_dir t562
export TPF_ROOT="$TOP"
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
mkdir -p m1 m2
for d in m1 m2; do
	cat >"$d/fleet.yaml" <<YAML
fleet: lf
provider:
  local: { root: $W/nodes, create_delay: 0.3s }
state:
  gcs: { bucket: tpf-state, prefix: fleets/lf }
on_success: delete
max_restarts: 2
restart_backoff: 0s
run: |
  mkdir -p "\$TPUFORM_BUCKET"
  echo "\$TPUFORM_WORKER_ID retry=\$TPUFORM_RETRY" >>"\$TPUFORM_BUCKET/starts"
  case "\$TPUFORM_RETRY" in
  0|1) exec sleep 300 ;;
  2) sleep 2; exit 3 ;;
  *) sleep 3 ;;
  esac
groups:
  - { name: g, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1 }
YAML
done
start() { # DIR OUT [flags]
	dir=$1 out=$2
	shift 2
	(cd "$dir" && exec "$TPUFORM" watch -f fleet.yaml -interval 0.5s -session-check 0.5s -lease-ttl 3s "$@" >"$out" 2>&1) &
}
runs() { [ "$(grep -c "retry=$1" nodes/bucket/starts 2>/dev/null)" -ge 2 ]; }

start m1 "$W/a.out"
A=$!
ok "the first watch creates the node and starts its job" wait_for 30 runs 0
start m2 "$W/b.out" -exit-when-done
B=$!
ok "the second stands by" wait_for 10 grep -q "standing by\|standby" b.out
(cd m1 && "$TPUFORM" local preempt -f fleet.yaml lf-g-0 >/dev/null)
ok "the leader heals a preemption" wait_for 30 runs 1
kill -TERM "$A"
wait "$A"
is "the leader stops (SIGTERM), exit 0" "$?" 0
A=
ok "the standby takes over" wait_for 20 grep -q "leading" b.out
(cd m1 && "$TPUFORM" local preempt -f fleet.yaml lf-g-0 >/dev/null)
ok "and heals a second preemption" wait_for 30 runs 2
ok "restarts the job after its failure" wait_for 30 runs 3
wait "$B"
is "and runs it to completion (-exit-when-done: exit 0)" "$?" 0
B=
ok "deleting the node once it completed" grep -q "done: 1 node completed, 0 failed" b.out

# ---- the ledger's objects ----------------------------------------------------
curl -s "$FAKEGCP_URL/__admin/storage" | jq -r '.buckets[0].objects[].name' | grep '^fleets/lf/lf\.ledger/' >objects.txt
is "one ledger object per watch" "$(wc -l <objects.txt | tr -d ' ')" 2
i=0
while read -r obj; do
	i=$((i + 1))
	enc=$(printf '%s' "$obj" | jq -sRr @uri)
	curl -s -H 'Authorization: Bearer t' "$FAKEGCP_URL/storage/v1/b/tpf-state/o/$enc?alt=media" >"seg$i.jsonl"
done <objects.txt
is "every line parses" "$(cat seg*.jsonl | jq -c . | wc -l | tr -d ' ')" "$(cat seg*.jsonl | wc -l | tr -d ' ')"
is "two writers" "$(cat seg*.jsonl | jq -r .writer | sort -u | wc -l | tr -d ' ')" 2
gaps=$(cat seg*.jsonl | jq -s 'group_by(.writer) | map([.[].seq] | sort | . == [range(1; length + 1)]) | all')
is "each writer's lines run 1, 2, ... with no gap and no repeat" "$gaps" true
is "each object holds one writer" "$(for f in seg*.jsonl; do jq -r .writer "$f" | sort -u | wc -l; done | sort -u | tr -d ' ')" 1
is "the lifecycle across both writers, in order" \
	"$(cat seg*.jsonl | jq -s -r 'sort_by(.ts, .writer, .seq) | .[] | select(.event | test("^(creating|ready|preempted|restarted|completed|deleted)$")) | .event' | tr '\n' ' ')" \
	"creating ready preempted deleted creating ready preempted deleted creating ready restarted completed deleted "
ok "the standby wrote no line while it stood by" \
	sh -c "[ \$(grep -l '\"cmd\":\"watch\"' seg*.jsonl | wc -l) -eq 2 ]"

# ---- the report, from the bucket ---------------------------------------------
ok "report -json reads the ledger from the bucket" sh -c "cd m2 && \"$TPUFORM\" report -f fleet.yaml -json >../report.json"
is "two preemptions" "$(jq .totals.preemptions report.json)" 2
is "one restart" "$(jq .totals.restarts report.json)" 1
billed=$(jq .totals.billed_chip_hours report.json)
expect=$(python3 "$TOP/tests/e2e/ledger_hours.py" seg*.jsonl)
ok "chip-hours ($billed) match the ledger's timestamps ($expect) within 1 %" \
	awk -v a="$billed" -v b="$expect" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= b / 100) }'
ok "goodput is strictly between 0 and 1" \
	awk -v g="$(jq .totals.goodput report.json)" 'BEGIN { exit !(g > 0 && g < 1) }'
ok "no ledger on local disk" sh -c "! ls m1 m2 | grep -q ledger"
finish

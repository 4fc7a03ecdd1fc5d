#!/bin/sh
# State in Cloud Storage (docs/state.md "Cloud Storage state"): a fleet taken
# through apply, change, apply and destroy with its state only in the
# emulated bucket; the lock object (held, waited for, force-unlocked after
# a SIGKILL); a writer that skipped the lock detected by the generation
# check (412); state pull and push with their lineage and serial checks,
# and moving state between a file and the bucket; 503s retried; a write
# that keeps failing leaving errored.tfstate. Nodes come from the local
# provider; the emulator (tests/fakegcp) serves Cloud Storage.
. "$(dirname "$0")/lib.sh"
setup_dir t380
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
if ! fakegcp_start --project test-project --bucket tpf-state; then
	echo "not ok 1 - the emulator starts"
	echo "1..1"
	exit 1
fi
trap 'fakegcp_stop >/dev/null 2>&1' EXIT
export TPUFORM_STORAGE_ENDPOINT="$FAKEGCP_URL" TPUFORM_ACCESS_TOKEN=test-token
export TPUFORM_GCP_RETRY_BASE=0.05 TPUFORM_GCP_RETRY_CAP=0.1 TPUFORM_GCP_TRIES=4
OBJ=fleets/team/gs.tfstate

fleet() { # COUNT CREATE_DELAY
	cat >fleet.yaml <<YAML
fleet: gs
provider:
  local: { root: nodes, create_delay: $2 }
state:
  gcs: { bucket: tpf-state, prefix: fleets/team }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: $1 }
YAML
}
# The state's objects; the run ledger's (docs/ledger.md) and the kept logs
# (docs/commands.md "logs") are counted apart.
objects() { curl -s "$FAKEGCP_URL/__admin/storage" | jq -r '.buckets[0].objects[].name' | grep -v '\.ledger/' | grep -v '\.logs/' | sort | tr '\n' ' '; }
ledger_objects() { curl -s "$FAKEGCP_URL/__admin/storage" | jq -r '.buckets[0].objects[].name' | grep -c '\.ledger/'; }
requests() { curl -s "$FAKEGCP_URL/__admin/requests"; }
clear_requests() { curl -s -o /dev/null -X POST "$FAKEGCP_URL/__admin/requests:clear"; }
# Fail the next N uploads of the state object (not its backup) with 503.
fail_state_writes() { curl -s -o /dev/null -X POST "$FAKEGCP_URL/__admin/storage:fail?code=503&count=$1&method=POST&match=gs.tfstate%26"; }
faults_left() { curl -s "$FAKEGCP_URL/__admin/storage" | jq '.faults | length'; }
serial() { tpuform state pull -f fleet.yaml | jq .serial; }
# shellcheck disable=SC2317 # called through ok and wait_for
no_local_state() {
	[ -z "$(find . -path ./nodes -prune -o \( -name '*.tfstate*' -o -name 'tpuform.state.json*' -o -name '*.lock.info' -o -name '*.lock' \) -print)" ]
}
# shellcheck disable=SC2317 # called through wait_for
lock_held() { curl -s "$FAKEGCP_URL/__admin/storage" | grep -q gs.tflock; }

# ---- lifecycle with the state only in the bucket ---------------------------
fleet 1 0.2s
ok "apply" tpuform apply -f fleet.yaml -auto-approve
is "the state and nothing else is in the bucket" "$(objects)" "$OBJ "
is "beside it, the apply's run ledger: one object for its one writer" "$(ledger_objects)" 1
ok "no state file on local disk" no_local_state
like "state pull reads it" "$(serial)" "^[1-9][0-9]*$"
fleet 2 0.2s
ok "apply a change (count 2)" tpuform apply -f fleet.yaml -auto-approve
is "the previous state is kept as the backup object" "$(objects)" "$OBJ $OBJ.backup "
ok "plan: no changes" tpuform plan -f fleet.yaml -detailed-exitcode
is "state list" "$(tpuform state list -f fleet.yaml | tr '\n' ' ')" "gs-a-0 gs-a-1 "
# A preemption, healed with the state still only in the bucket.
id_before=$(tpuform state pull -f fleet.yaml | jq -r '.nodes[] | select(.name == "gs-a-1") | .id')
ok "preempt gs-a-1" tpuform local preempt -f fleet.yaml gs-a-1
fails "plan sees it (exit 2)" 2 tpuform plan -f fleet.yaml -detailed-exitcode
ok "apply replaces it" tpuform apply -f fleet.yaml -auto-approve
like "one replaced" "$(cat last.out)" "Resources: 1 added, 0 changed, 1 destroyed"
ok "report reads the run ledger from the bucket" tpuform report -f fleet.yaml -json
is "every node's creates and the replacement's delete are in it" \
	"$(jq -r '.events > 0 and .totals.billed_chip_hours > 0 and .rows[0].zone == "z1"' last.out)" true
ok "and no ledger file was written on local disk" no_local_state
ok "the state in the bucket has its new id" test \
	"$(tpuform state pull -f fleet.yaml | jq -r '.nodes[] | select(.name == "gs-a-1") | .id')" != "$id_before"
ok "still no state file on local disk" no_local_state
writes=$(requests | jq '[.[] | select(.method == "POST" and (.query // "" | test("gs.tfstate&")))] | length')
cas=$(requests | jq '[.[] | select(.method == "POST" and (.query // "" | test("gs.tfstate&ifGenerationMatch=[0-9]+$")))] | length')
is "every state write carried ifGenerationMatch" "$cas" "$writes"

# ---- 503s are retried -------------------------------------------------------
fail_state_writes 2
clear_requests
fleet 1 0.2s
ok "apply through two 503s on the state write" tpuform apply -f fleet.yaml -auto-approve
is "the two 503s, then the write" \
	"$(requests | jq -c '[.[] | select(.method == "POST" and (.query // "" | test("gs.tfstate&"))) | .status][:3]')" "[503,503,200]"

# ---- a held lock --------------------------------------------------------------
fleet 2 3s
tpuform apply -f fleet.yaml -auto-approve >holder.out 2>&1 &
holder=$!
wait_for 10 lock_held
fails "a second apply is refused" 1 tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "with Terraform's error" "$out" "Error acquiring the state lock"
like "the 412 on the lock object" "$out" "gs.tflock\" failed: HTTP 412"
like "and the holder's Lock Info" "$out" "Operation: +OperationTypeApply"
like "its ID" "$out" "ID: +[0-9a-f-]{36}"
like "and where the state is" "$out" "Path: +gs://tpf-state/fleets/team/gs.tfstate"
ok "-lock-timeout waits for it" tpuform apply -f fleet.yaml -auto-approve -lock-timeout=30s
wait $holder
is "the holder finished" "$?" 0
is "the lock object is gone" "$(objects)" "$OBJ $OBJ.backup "

# ---- a writer without the lock: the generation check -------------------------
fleet 3 3s
tpuform apply -f fleet.yaml -auto-approve >cas.out 2>&1 &
holder=$!
wait_for 10 sh -c "'$TPUFORM' state list -f fleet.yaml | grep -q gs-a-2"
clear_requests
ok "state rm -lock=false writes behind the holder's back" tpuform state rm -f fleet.yaml -lock=false gs-a-0
wait $holder
is "the holder's next write is refused: exit 1" "$?" 1
out=$(cat cas.out)
like "it names what happened" "$out" "changed by another writer since tpuform read it"
like "and where its state went" "$out" "errored.tfstate"
is "the emulator answered 412 to the holder's state write" \
	"$(requests | jq '[.[] | select(.status == 412 and (.query // "" | test("gs.tfstate&ifGenerationMatch=[1-9]")))] | length > 0')" true
is "the other writer's state was not overwritten" "$(tpuform state list -f fleet.yaml | grep -c gs-a-0)" 0
ok "errored.tfstate was left" test -s errored.tfstate
is "it holds the holder's view" "$(jq '[.nodes[].name] | index("gs-a-0") != null' errored.tfstate)" true
ok "push takes it back (same lineage, serial not older)" tpuform state push -f fleet.yaml errored.tfstate
is "gs-a-0 is back" "$(tpuform state list -f fleet.yaml | grep -c gs-a-0)" 1
rm -f errored.tfstate

# ---- pull and push -------------------------------------------------------------
tpuform state pull -f fleet.yaml >pulled.json
s=$(jq .serial pulled.json)
ok "push of the pulled state is accepted" tpuform state push -f fleet.yaml pulled.json
jq '.lineage = "00000000-0000-4000-8000-000000000000"' pulled.json >other.json
fails "push of another lineage is refused" 1 tpuform state push -f fleet.yaml other.json
like "naming both lineages" "$(cat last.out)" "cannot import state with lineage \"00000000-0000-4000-8000-000000000000\" over unrelated state"
jq ".serial = $((s - 1)) | .nodes = []" pulled.json >older.json
fails "push of an older serial is refused" 1 tpuform state push -f fleet.yaml older.json
like "with Terraform's words" "$(cat last.out)" "cannot import state with serial $((s - 1)) over newer state with serial $s"
is "the serial never went backwards" "$(serial)" "$s"
ok "push -force overrides" tpuform state push -f fleet.yaml -force other.json
is "the lineage is the pushed one" "$(tpuform state pull -f fleet.yaml | jq -r .lineage)" "00000000-0000-4000-8000-000000000000"
is "and the serial went on" "$(serial)" "$((s + 1))"
# The nodes carry the first state's lineage label, so a state of another
# lineage does not own them (plan/ownership.h): put the first one back.
fails "the state of another lineage refuses the nodes" 1 tpuform plan -f fleet.yaml
like "as another state's" "$(cat last.out)" "gs-a-0' in zone 'z1' belongs to another state"
ok "push -force of the first lineage back" tpuform state push -f fleet.yaml -force pulled.json
ok "which owns them again" tpuform plan -f fleet.yaml
rm -f pulled.json other.json older.json

# ---- a stale lock: SIGKILL, then force-unlock --------------------------------
fleet 4 3s
"$TPUFORM" apply -f fleet.yaml -auto-approve >killed.out 2>&1 &
victim=$!
wait_for 10 lock_held
kill -KILL $victim
wait $victim 2>/dev/null
fails "the lock outlives its holder: apply is refused" 1 tpuform apply -f fleet.yaml -auto-approve
like "with a hint at force-unlock" "$(cat last.out)" "force-unlock LOCK_ID"
id=$(sed -n 's/^[│ ]*ID: *\([0-9a-f-]*\)$/\1/p' last.out | head -n 1)
like "the Lock Info gives the ID" "$id" "^[0-9a-f-]{36}$"
fails "force-unlock asks, and stdin is not a terminal" 1 tpuform force-unlock -f fleet.yaml "$id" </dev/null
fails "force-unlock of another ID is refused" 1 tpuform force-unlock -f fleet.yaml -force 11111111-2222-4333-8444-555555555555
like "naming the ID held" "$(cat last.out)" "does not match existing lock ID \"$id\""
ok "force-unlock -force ID" tpuform force-unlock -f fleet.yaml -force "$id"
like "in Terraform's words" "$(cat last.out)" "state has been successfully unlocked"
fails "a second force-unlock: not locked" 1 tpuform force-unlock -f fleet.yaml -force "$id"
ok "apply runs again" tpuform apply -f fleet.yaml -auto-approve

# ---- a write that keeps failing leaves errored.tfstate --------------------------
fleet 3 0.2s
fail_state_writes 200
fails "apply whose state writes fail" 1 tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "says the state could not be persisted" "$out" "Failed to persist state to 'gs://tpf-state/fleets/team/gs.tfstate'"
like "after retries of the 503" "$out" "HTTP 503"
like "and where the copy is" "$out" "written to the file \"errored.tfstate\""
ok "errored.tfstate exists" test -s errored.tfstate
is "it knows the node the apply deleted is gone" "$(jq '[.nodes[].name] | index("gs-a-3")' errored.tfstate)" null
# Use up the queued faults (each matching upload takes one; these are refused anyway).
i=0
while [ "$(faults_left)" != 0 ] && [ $i -lt 250 ]; do
	curl -s -o /dev/null -X POST -H 'Authorization: Bearer t' -d x \
		"$FAKEGCP_URL/upload/storage/v1/b/tpf-state/o?uploadType=media&name=fleets%2Fteam%2Fgs.tfstate&ifGenerationMatch=1"
	i=$((i + 1))
done
ok "push errored.tfstate to the bucket" tpuform state push -f fleet.yaml errored.tfstate
ok "then plan agrees with the nodes" tpuform plan -f fleet.yaml -detailed-exitcode
rm -f errored.tfstate

# ---- moving state: bucket -> file -> bucket ------------------------------------
s=$(serial)
cat >fleet.yaml <<'YAML'
fleet: gs
provider:
  local: { root: nodes, create_delay: 0.2s }
state:
  path: moved.json
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 3 }
YAML
ok "bucket to file: state push gs://tpf-state/fleets/team" tpuform state push -f fleet.yaml gs://tpf-state/fleets/team
is "the file has the bucket's serial" "$(jq .serial moved.json)" "$s"
ok "plan from the file: no changes" tpuform plan -f fleet.yaml -detailed-exitcode
fleet 3 0.2s
sed -i 's|prefix: fleets/team|prefix: fleets/other|' fleet.yaml
ok "file to bucket (a new prefix): state push moved.json" tpuform state push -f fleet.yaml moved.json
is "the new object has the same serial" "$(serial)" "$s"
ok "plan from the new place: no changes" tpuform plan -f fleet.yaml -detailed-exitcode
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
is "nothing left in state" "$(tpuform state list -f fleet.yaml)" ""
finish

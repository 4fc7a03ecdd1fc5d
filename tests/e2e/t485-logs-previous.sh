#!/bin/sh
# Logs that outlive nodes (issue 19 item 8; docs/commands.md "logs"):
# before tpuform deletes a node (on_success: delete, a replacement,
# destroy) it keeps the tail of each worker's job log beside the state,
# and `tpuform logs NODE -previous` shows it; a node that cannot be read
# now says where they are; each node keeps at most 5 generations.
. "$(dirname "$0")/lib.sh"
setup_dir t485
cat >fleet.yaml <<'YAML'
fleet: lp
provider:
  local: { root: nodes, create_delay: 0.1s }
on_success: delete
run: |
  echo "job of $TPUFORM_NODE/$TPUFORM_WORKER_ID retry=$TPUFORM_RETRY"
  echo "final loss 0.125"
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1 }
YAML
ok "watch runs the job to its completion" \
	timeout 120 "$TPUFORM" watch -f fleet.yaml -interval 0.3s -session-check 0.3s -exit-when-done
is "the node is gone" "$(dir_names nodes/nodes | wc -l | tr -d ' ')" 0
ok "its workers' logs were kept beside the state" test -f tpuform.state.json.logs/lp-a-0/g0-w0.log
ok "(both workers)" test -f tpuform.state.json.logs/lp-a-0/g0-w1.log
is "mode 0600" "$(stat -c %a tpuform.state.json.logs/lp-a-0/g0-w0.log)" 600
prev=$(tpuform logs -f fleet.yaml lp-a-0 -previous 2>&1)
like "logs -previous names the generation" "$prev" "^==> lp-a-0 generation 0 \(kept before its delete\) <==$"
like "and shows the job's output, prefixed as logs does" "$prev" "^lp-a-0/w1 \| job of lp-a-0/1 retry=0$"
like "every worker" "$prev" "^lp-a-0/w0 \| final loss 0.125$"
is "-worker 1 -n 1" "$(tpuform logs -f fleet.yaml lp-a-0 -previous -worker 1 -n 1 2>&1 | grep '|')" \
	"lp-a-0/w1 | final loss 0.125"
fails "the node itself cannot be read now" 1 tpuform logs -f fleet.yaml lp-a-0
like "the message says where the kept logs are and names -previous" "$(cat last.out)" \
	"tpuform.state.json.logs/lp-a-0/: 'tpuform logs lp-a-0 -previous' shows them"
fails "-previous of a generation that was not kept" 1 tpuform logs -f fleet.yaml lp-a-0 -previous -generation 7
like "says so and where" "$(cat last.out)" "no logs of node 'lp-a-0' \(for that -worker or -generation\) were kept in .*tpuform.state.json.logs/lp-a-0/"
fails "-previous with -follow is refused" 1 tpuform logs -f fleet.yaml lp-a-0 -previous -follow

# Replacement and destroy keep logs too; older generations are dropped
# past five.
cat >keep.yaml <<'YAML'
fleet: lk
provider:
  local: { root: knodes, create_delay: 0.1s }
state: { path: k.state.json }
run: |
  echo "run of retry=$TPUFORM_RETRY"
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
ok "apply" tpuform apply -f keep.yaml -auto-approve
wait_for 20 sh -c "\"$TPUFORM\" logs -f keep.yaml lk-a-0 | grep -q 'run of retry=0'"
i=1
while [ $i -le 6 ]; do
	tpuform apply -f keep.yaml -auto-approve -replace lk-a-0 >/dev/null 2>&1
	wait_for 20 sh -c "\"$TPUFORM\" logs -f keep.yaml lk-a-0 2>/dev/null | grep -q 'run of retry=$i'"
	i=$((i + 1))
done
ok "destroy" tpuform destroy -f keep.yaml -auto-approve
prev=$(tpuform logs -f keep.yaml lk-a-0 -previous 2>&1)
like "a replaced node's log was kept" "$prev" "^lk-a-0/w0 \| run of retry=2$"
like "destroy keeps the last one" "$prev" "^==> lk-a-0 generation 6 .*"
like "its output" "$prev" "^lk-a-0/w0 \| run of retry=6$"
is "the newest generation comes first" "$(printf '%s\n' "$prev" | grep -m1 '^==>')" \
	"==> lk-a-0 generation 6 (kept before its delete) <=="
is "five generations are kept" "$(dir_names k.state.json.logs/lk-a-0 | tr '\n' ' ')" \
	"g2-w0.log g3-w0.log g4-w0.log g5-w0.log g6-w0.log "
unlike "the oldest ones are gone" "$prev" "retry=[01]$"
like "-generation picks one" "$(tpuform logs -f keep.yaml lk-a-0 -previous -generation 3 2>&1)" "^lk-a-0/w0 \| run of retry=3$"
# State in Cloud Storage (the emulator, tests/fakegcp): the logs are kept
# as objects beside the state, with the state's credentials.
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
if fakegcp_start --project test-project --bucket tpf-state; then
	trap 'fakegcp_stop >/dev/null 2>&1' EXIT
	export TPUFORM_STORAGE_ENDPOINT="$FAKEGCP_URL" TPUFORM_ACCESS_TOKEN=test-token
	mkdir -p gcs && cd gcs || exit 1
	sed 's/^fleet: lp/fleet: lg/; s/root: nodes/root: gnodes/' ../fleet.yaml >fleet.yaml
	printf 'state:\n  gcs: { bucket: tpf-state, prefix: fleets/team/ }\n' >>fleet.yaml
	ok "gcs: watch runs the job to its completion" \
		timeout 120 "$TPUFORM" watch -f fleet.yaml -interval 0.3s -session-check 0.3s -exit-when-done
	is "gcs: the logs are objects beside the state" \
		"$(curl -s "$FAKEGCP_URL/__admin/storage" | jq -r '.buckets[0].objects[].name' | grep '\.logs/' | sort | tr '\n' ' ')" \
		"fleets/team/lg.logs/lg-a-0/g0-w0.log fleets/team/lg.logs/lg-a-0/g0-w1.log "
	ok "gcs: nothing kept on local disk" test ! -e tpuform.state.json.logs
	like "gcs: logs -previous reads them" "$(tpuform logs -f fleet.yaml lg-a-0 -previous 2>&1)" \
		"^lg-a-0/w1 \| job of lg-a-0/1 retry=0$"
	fails "gcs: the node itself cannot be read now" 1 tpuform logs -f fleet.yaml lg-a-0
	like "gcs: the message names the objects' place" "$(cat "$W/last.out")" \
		"gs://tpf-state/fleets/team/lg.logs/lg-a-0/: 'tpuform logs lg-a-0 -previous' shows them"
	cd .. || exit 1
else
	ok "the emulator starts" false
fi
finish

#!/bin/sh
# A worker that accepts TCP and never sends the SSH greeting must not hold
# back the other workers' job waits (issue 28 item 1: watch makes its
# connections in its poll loop, non-blocking, many at once). Two v4-32 nodes
# (8 sshd workers); after apply, the 4 workers of one node have their sshd
# replaced by a listener that completes the TCP handshake and says nothing.
# With -parallelism 2 and a 30 s connect timeout:
#   - the other node's 4 workers are waited on within 25 s of watch's start
#     (the code before dialled on -parallelism threads, one worker at a
#     time each: both threads sat on silent workers for 30 s, twice, before
#     reaching a good one);
#   - once the silent workers' sshd is back, they are waited on too (the
#     failed dials are made again, with the backoff).
# Loopback block: 127.0.100.x (issue 28's dial helper).
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t840
SILENT=
# shellcheck disable=SC2016,SC2034 # expanded by gcp_workers.sh's trap, at exit
GCP_WORKERS_CLEANUP='[ -n "$SILENT" ] && kill "$SILENT" 2>/dev/null; [ -n "${WPID:-}" ] && kill "$WPID" 2>/dev/null'
WPID=
gcp_workers_start 8 127.0.100.1 --op-seconds 0.1
cat >fleet.yaml <<YAML
fleet: t840
provider:
  gcp: { project: test-project, endpoint: "http://127.0.0.1:$FAKEGCP_PORT" }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT }
run: exec sleep 600
groups:
  - { name: a, accelerator_type: v4-32, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 2 }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
# The node watch lists first (by name) is the one made silent: the code
# before took its workers first.
ips=$(jq -r '.nodes | sort_by(.name) | .[0].workers[].address' tpuform.state.json)
is "the first node has 4 workers with addresses" "$(echo "$ips" | grep -c '^127\.0\.100\.')" 4
silent=''
good=''
for i in 0 1 2 3 4 5 6 7; do
	case " $(echo "$ips" | tr '\n' ' ')" in
	*" $(sshd_addr "$i") "*) silent="$silent $i" ;;
	*) good="$good $i" ;;
	esac
done
for i in $silent; do
	sshd_stop_one "$i"
done
# shellcheck disable=SC2046 # one address each
python3 -c '
import socket, sys, time
socks = []
for a in sys.argv[3:]:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((a, int(sys.argv[2])))
    s.listen(64)  # the kernel completes the handshakes; nothing is read or sent
    socks.append(s)
open(sys.argv[1], "w").write("ready\n")
time.sleep(3600)
' silent.ready "$SSHD_PORT" $(for i in $silent; do sshd_addr "$i"; done) &
SILENT=$!
ok "the silent listeners are up" wait_for 10 test -s silent.ready

# A wait's FIFO lives while it waits (not between a new connection's first
# answer and the long wait): a worker seen waiting once is marked.
# shellcheck disable=SC2317 # called through wait_for
waited() {
	for i in "$@"; do
		find "$(sshd_home "$i")/tpuform/run" -name 'wait.*' 2>/dev/null | grep -q . &&
			touch "waited.$i"
	done
	for i in "$@"; do
		[ -e "waited.$i" ] || return 1
	done
}
TPUFORM_SSH_CONNECT_TIMEOUT=30 "$TPUFORM" watch -f fleet.yaml -parallelism 2 >watch.out 2>&1 &
WPID=$!
# shellcheck disable=SC2086 # worker indexes
wait_for 25 waited $good
# shellcheck disable=SC2086
ok "the reachable workers are waited on within 25 s, the silent ones notwithstanding" waited $good
# shellcheck disable=SC2086
fails "the silent workers are not" 1 waited $silent

kill "$SILENT"
wait "$SILENT" 2>/dev/null
SILENT=
for i in $silent; do
	sshd_restart_one "$i"
done
# The dial under way times out (30 s), then the backoff (at most 30 s).
# shellcheck disable=SC2086
wait_for 120 waited $silent
# shellcheck disable=SC2086
ok "once their sshd is back, the silent workers are waited on too" waited $silent
ok "watch still runs" kill -0 "$WPID"
kill -TERM "$WPID"
wait "$WPID"
is "watch exits 0" "$?" 0
WPID=
finish

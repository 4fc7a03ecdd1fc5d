#!/bin/sh
# Private workers through a bastion (ssh.proxy_jump), end to end. The
# workers' sshd (tests/e2e/sshd.sh) run in a network namespace of their own,
# the "VPC", on its loopback addresses: nothing on this machine's network
# reaches them. A bastion sshd runs in the same namespace, reachable from
# here only over a veth pair (198.18.45.1 <-> 198.18.45.2, a benchmarking
# range, RFC 2544). So every worker connection that succeeds went through
# the bastion. Shown: apply, exec, logs, ssh and watch's job waits over the jump; the
# bastion's key pinned on first use (with a warning) in the state; a bastion
# that comes back with another key is refused before anything reaches a
# worker (the bastion never sees a forwarding request); the new key is
# accepted by naming it in ssh.proxy_jump_host_key; a worker behind the
# bastion whose key changed is refused as it would be directly.
# Needs root, sshd, unshare and ip netns; prints a TAP skip otherwise.
# shellcheck disable=SC2016 # $vars in single quotes are for the workers' shell
. "$(dirname "$0")/lib.sh"
setup_dir t450
export TPUFORM_SSH_RETRY=2

NS=tpf450-$$
HV=t450h$(($$ % 100000))
NV=t450n$(($$ % 100000))
BASTION=198.18.45.2
BPORT=2222
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null 2>&1 || ! command -v nsenter >/dev/null 2>&1 ||
	! [ -x /usr/sbin/sshd ] || ! ip netns add "$NS" 2>/dev/null; then
	echo "# SKIP: needs root, sshd, nsenter and network namespaces (ip netns)"
	echo "1..0"
	exit 0
fi
# shellcheck disable=SC2317 # run by the trap gcp_workers_start sets
vpc_down() {
	[ -f "$W/bastion/pid" ] && kill "$(cat "$W/bastion/pid")" 2>/dev/null
	ip link del "$HV" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
}
GCP_WORKERS_CLEANUP=vpc_down
trap vpc_down EXIT
if ! ip link add "$HV" type veth peer name "$NV" ||
	! ip link set "$NV" netns "$NS" ||
	! ip addr add 198.18.45.1/30 dev "$HV" || ! ip link set "$HV" up ||
	! ip netns exec "$NS" ip addr add "$BASTION/30" dev "$NV" ||
	! ip netns exec "$NS" ip link set "$NV" up || ! ip netns exec "$NS" ip link set lo up; then
	echo "# SKIP: cannot wire a veth pair into a network namespace here"
	echo "1..0"
	exit 0
fi

# The worker VMs boot inside the VPC: sshd.sh starts each with unshare,
# which this wrapper runs in the namespace.
mkdir -p "$W/bin"
cat >"$W/bin/unshare" <<EOF
#!/bin/sh
exec nsenter --net=/run/netns/$NS /usr/bin/unshare "\$@"
EOF
chmod +x "$W/bin/unshare"
PATH=$W/bin:$PATH
. "$TOP/tests/e2e/gcp_workers.sh"
gcp_workers_start 4 127.0.45.1 --op-seconds 0.1

# The bastion: forwarding only, the test's key, its own host key.
# shellcheck disable=SC2317 # called through ok
bastion_start() {
	mkdir -p "$W/bastion"
	[ -f "$W/bastion/hostkey" ] || ssh-keygen -q -t ed25519 -N '' -C bastion -f "$W/bastion/hostkey"
	cp "$SSHD_KEY.pub" "$W/bastion/authorized_keys"
	cat >"$W/bastion/sshd_config" <<EOF
ListenAddress $BASTION:$BPORT
HostKey $W/bastion/hostkey
PidFile none
AuthorizedKeysFile $W/bastion/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowTcpForwarding yes
ForceCommand /bin/false
LogLevel DEBUG1
EOF
	: >"$W/bastion/log"
	ip netns exec "$NS" /usr/sbin/sshd -D -f "$W/bastion/sshd_config" -E "$W/bastion/log" </dev/null &
	echo $! >"$W/bastion/pid"
	wait_for 10 grep -q 'Server listening' "$W/bastion/log"
}
# shellcheck disable=SC2317 # shellcheck loses track after the here-document above
bastion_stop() {
	kill "$(cat "$W/bastion/pid")" 2>/dev/null
	wait "$(cat "$W/bastion/pid")" 2>/dev/null
	rm -f "$W/bastion/pid"
}
bastion_fp() { ssh-keygen -l -E sha256 -f "$W/bastion/hostkey.pub" | awk '{print $2}'; }
ok "the bastion starts" bastion_start

cat >fleet.yaml <<YAML
fleet: pj
provider:
  gcp: { project: test-project, endpoint: "http://127.0.0.1:$FAKEGCP_PORT" }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT, proxy_jump: "root@$BASTION:$BPORT" }
run: |
  echo "\$TPUFORM_NODE \$TPUFORM_WORKER_ID" >> ~/starts
  echo "hello from \$TPUFORM_NODE/\$TPUFORM_WORKER_ID"
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 2 }
YAML
st() { jq -r "$1" tpuform.state.json; }
widx() { sshd_index "$(st ".nodes[] | select(.name == \"$1\") | .workers[$2].address")"; }
pin() { st ".nodes[] | select(.name == \"$1\") | .workers[$2].host_key"; }
re() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'; }
starts() { cat "$W"/workers/w*/home/starts 2>/dev/null | wc -l | tr -d ' '; }

# ---- apply over the jump ----------------------------------------------------
ok "apply through the bastion" tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "apply completes" "$out" "Apply complete! Resources: 2 added"
# The job writes ~/starts just after its session starts: give it a moment.
wait_for 15 test "$(starts)" -ge 4
is "all four workers started" "$(starts)" 4
like "the bastion's key is trusted on first use, with a warning" "$out" "trusting the host key $(re "$(bastion_fp)") of the bastion $BASTION:$BPORT on first use"
is "and pinned in the state" "$(st .proxy_jump_host_key)" "$(bastion_fp)"
is "with the bastion it belongs to" "$(st .proxy_jump_host)" "$BASTION:$BPORT"
i=$(widx pj-a-1 1)
is "workers' keys are still pinned from their guest attributes" "$(pin pj-a-1 1)" "$(sshd_fingerprint "$i")"
like "the worker was reached at its internal address" "$(st '.nodes[0].workers[0].address')" "^127\.0\.45\."
like "through forwarding requests to the bastion" "$(cat "$W/bastion/log")" "direct-tcpip"

# The same fleet without the bastion cannot reach them: the jump is real.
sed '/^ssh:/s/, proxy_jump: [^}]*//' fleet.yaml >direct.yaml
cp tpuform.state.json direct.state.json
sed -i "s|^fleet: pj|fleet: pj\nstate: { path: direct.state.json }|" direct.yaml
fails "without proxy_jump the workers are unreachable" 1 env TPUFORM_SSH_RETRY=0 "$TPUFORM" exec -f direct.yaml pj-a-0 -worker 0 -- true
like "(connection refused from here)" "$(cat last.out)" "cannot connect to worker 'pj-a-0/w0' at 127\.0\.45\.[0-9]+ port $SSHD_PORT"

ok "a second apply changes nothing" tpuform apply -f fleet.yaml -auto-approve
unlike "and does not warn again: the pin came from the state" "$(cat last.out)" "trusting the host key"
accepted() { grep -c 'Accepted publickey' "$W/bastion/log"; }
before=$(accepted)
ok "exec -all over the jump" tpuform exec -f fleet.yaml -all -- 'echo "up $(cat ~/starts | wc -l)"'
# The four workers' tunnels share one bastion connection (ssh_jump.c).
is "exec -all authenticated to the bastion once for four workers" "$(($(accepted) - before))" 1
is "every worker answered" "$(grep -c 'up 1' last.out)" 4
# Bulk bytes both ways through four tunnels of one bastion connection at
# once: the relay's full windows and half-sent packets (ssh_jump_hub.c).
head -c 6000000 /dev/urandom >big.bin
ok "cp 6 MB to every worker over the jump" tpuform cp -f fleet.yaml big.bin -all :~/big.bin
ok "and back from every worker" tpuform cp -f fleet.yaml -all :~/big.bin back
want_sum=$(sha256sum <big.bin | cut -d' ' -f1)
same=0
for f in back/*/w*/big.bin; do
	[ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$want_sum" ] && same=$((same + 1))
done
is "the four copies came back unchanged" "$same" 4
ok "logs over the jump" tpuform logs -f fleet.yaml pj-a-0 -worker 1
like "the job's output" "$(cat last.out)" "hello from pj-a-0/1"
sh_out=$(echo 'cat ~/starts' | tpuform ssh -f fleet.yaml pj-a-1 -worker 1 2>&1)
like "ssh: a shell on the worker through the bastion" "$sh_out" "pj-a-1 1"
unlike "ssh: with both pinned keys, no prompt or warning" "$sh_out" "Permanently added|authenticity|WARNING"

# watch's job waits through the bastion: there a helper thread makes each
# connection, blocking, as connect does (docs/watch.md), not the poll loop.
# A wait's FIFO lives while it waits: a worker seen waiting once is marked.
# shellcheck disable=SC2317 # called through wait_for
waited_all() {
	for k in 0 1 2 3; do
		find "$(sshd_home "$k")/tpuform/run" -name 'wait.*' 2>/dev/null | grep -q . &&
			touch "waited.$k"
	done
	for k in 0 1 2 3; do
		[ -e "waited.$k" ] || return 1
	done
}
"$TPUFORM" watch -f fleet.yaml >watch.out 2>&1 &
wpid=$!
wait_for 60 waited_all
ok "watch waits on every worker through the bastion" waited_all
# Four job waits, one connection to the bastion, and no relay thread per
# worker: watch's threads are those it has without a bastion, plus one.
bastion_conns=$(ss -Htn state established "dst $BASTION:$BPORT" | wc -l | tr -d ' ')
is "the four job waits go through one bastion connection" "$bastion_conns" 1
t0=$(date +%s)
kill -TERM "$wpid"
wait "$wpid"
is "watch exits 0" "$?" 0
# Its waits' loop is woken when the last wait ends (it slept up to 30 s).
ok "watch exits within 10 s of TERM" test $(($(date +%s) - t0)) -le 10

# ---- the bastion comes back with another key -------------------------------
old_bfp=$(bastion_fp)
bastion_stop
rm -f "$W/bastion/hostkey" "$W/bastion/hostkey.pub"
ok "the bastion restarts with a new host key" bastion_start
new_bfp=$(bastion_fp)
is "the key really changed" "$(test "$old_bfp" != "$new_bfp" && echo yes)" yes
wlogs_before=$(cat "$W"/workers/w*/log.start | wc -c)
sed -i 's/exec sleep 300/exec sleep 301/' fleet.yaml
fails "apply refuses the changed bastion" 1 tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "naming the bastion and both fingerprints" "$out" "host key of the bastion $BASTION:$BPORT \(ssh.proxy_jump\) has changed: pinned $(re "$old_bfp"), the bastion presents $(re "$new_bfp")"
like "and the way out" "$out" "ssh.proxy_jump_host_key"
is "nothing was provisioned" "$(starts)" 4
unlike "the bastion was never asked to forward" "$(grep -n . "$W/bastion/log")" "direct-tcpip|Accepted publickey"
is "no worker's sshd heard from anyone" "$(cat "$W"/workers/w*/log.start | wc -c)" "$wlogs_before"
is "the pin is kept" "$(st .proxy_jump_host_key)" "$old_bfp"
fails "exec refuses it too" 1 tpuform exec -f fleet.yaml pj-a-0 -worker 0 -- 'touch ~/exec-ran'
like "with the same message" "$(cat last.out)" "has changed: pinned $(re "$old_bfp")"
ok "and ran nothing" test ! -e "$(sshd_home 0)/exec-ran"

# Rebuilt on purpose: name the new key in the fleet file.
key=$(cut -d' ' -f1,2 "$W/bastion/hostkey.pub")
sed -i "/^ssh:/s|}\$|, proxy_jump_host_key: \"$key\" }|" fleet.yaml
ok "apply accepts the key the fleet file names" tpuform apply -f fleet.yaml -auto-approve
wait_for 15 test "$(starts)" -ge 8
is "all four workers restarted" "$(starts)" 8
is "the state pins the new key" "$(st .proxy_jump_host_key)" "$new_bfp"

# ---- a worker behind the bastion comes back with another key ----------------
old=$(pin pj-a-1 1)
ok "worker restarts with a new host key" sshd_restart_one "$i" newkey
new=$(sshd_fingerprint "$i")
sed -i 's/exec sleep 301/exec sleep 302/' fleet.yaml
fails "apply refuses the changed worker" 1 tpuform apply -f fleet.yaml -auto-approve
out=$(cat last.out)
like "naming the worker, at its internal address" "$out" "host key of worker 'pj-a-1/w1' at $(sshd_addr "$i") port $SSHD_PORT has changed"
like "with both fingerprints" "$out" "pinned $(re "$old"), the worker presents $(re "$new"); refusing to connect"
like "the other workers went on" "$(grep -c '^changed: \[pj-a-' last.out)" "^3$"
is "nothing ran on the refused worker" "$(wc -l <"$W/workers/w$i/home/starts" | tr -d ' ')" 2

ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
is "no node is left" "$(curl -s "$FAKEGCP_URL/__admin/nodes" | jq 'length')" 0
finish

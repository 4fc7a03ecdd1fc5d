#!/bin/sh
# The everyday chores on a gcp 2-worker node whose workers are sshd VMs
# (tests/e2e/gcp_workers.sh; 8: the node, its replacements by apply -replace
# (twice) and by watch), over libssh2: cp up and back over SFTP, exec
# with stdin, streaming and Ctrl-C (setsid and a kill over a second
# channel), ssh -L over direct-tcpip channels, ssh -- CMD, and ssh-config
# for a plain ssh(1) (tests/e2e/chores_check.sh); ssh-config -install
# kept current by apply and watch when the node is replaced (docs/commands.md,
# "ssh-config").
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
. "$TOP/tests/e2e/chores_check.sh"
setup_dir t475
export TPUFORM_SSH_RETRY=3
gcp_workers_start 8 127.0.47.1 --op-seconds 0.1
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
cat >fleet.yaml <<YAML
fleet: cg
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
run: exec sleep 3000
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1 }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
WWW_PORT=18475 # t470 serves on 18470, maybe at the same time
chores_checks cg-a-0

# ---- ssh-config ----------------------------------------------------------
ok "ssh-config -out FILE" tpuform ssh-config -f fleet.yaml -out "$W/sc"
cfg=$(cat "$W/sc")
like "a Host entry per worker" "$cfg" "^Host cg-a-0-w1$"
like "strict host key checking" "$cfg" "StrictHostKeyChecking yes"
like "with tpuform's own known_hosts" "$cfg" "UserKnownHostsFile \"$W/sc.known_hosts\""
is "the pinned keys, one per worker" "$(cut -d' ' -f1 "$W/sc.known_hosts" | sort | tr '\n' ' ')" "cg-a-0-w0 cg-a-0-w1 "
for w in 0 1; do
	fp=$(jq -r --argjson w "$w" '.nodes[0].workers[$w].host_key' tpuform.state.json)
	is "w$w's known key is its pinned one" "$(grep "^cg-a-0-w$w " "$W/sc.known_hosts" | cut -d' ' -f2- | ssh-keygen -lf - | cut -d' ' -f2)" "$fp"
done
ok "ssh -F <generated config> NODE-w1 true" ssh -F "$W/sc" -o BatchMode=yes cg-a-0-w1 true
is "and it runs there" "$(ssh -F "$W/sc" -o BatchMode=yes cg-a-0-w1 'echo $HOME' 2>&1)" /root
# a wrong key in the file: refused, as StrictHostKeyChecking yes says
sed 's/^cg-a-0-w1 .*/cg-a-0-w1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb7ZzU5Lf3vVxGqEfhcXHh8bKeGQ4oNwP2K0kLPXWmN/' "$W/sc.known_hosts" >"$W/bad.kh"
sed "s|$W/sc.known_hosts|$W/bad.kh|" "$W/sc" >"$W/sc.bad"
fails "a key that is not the pin is refused" 255 ssh -F "$W/sc.bad" -o BatchMode=yes cg-a-0-w1 true
export HOME="$W/home"
mkdir -p "$HOME/.ssh"
printf 'Host other\n  User me\n' >"$HOME/.ssh/config"
ok "ssh-config -install" tpuform ssh-config -f fleet.yaml -install
ok "twice" tpuform ssh-config -f fleet.yaml -install
is "the user config includes it once, at the top" \
	"$(grep -c '^Include' "$HOME/.ssh/config") $(grep -n '^Include' "$HOME/.ssh/config" | cut -d: -f1)" "1 2"
like "and keeps what was there" "$(cat "$HOME/.ssh/config")" "^Host other$"
# ssh(1) reads the passwd entry's ~/.ssh/config, not $HOME's: name it
ok "ssh with ~/.ssh/config finds the entry" ssh -F "$HOME/.ssh/config" -o BatchMode=yes cg-a-0-w0 true
# What one worker's entry says: its HostName and Port, and its known_hosts key.
entry() {
	awk -v h="Host $1" '$0 == h {on = 1; next} /^Host / {on = 0} on && /HostName|Port/ {printf "%s ", $2}' \
		"$HOME/.ssh/tpuform/cg.config"
	grep "^$1 " "$HOME/.ssh/tpuform/cg.known_hosts" | cut -d' ' -f2-
}
before=$(entry cg-a-0-w1)
like "the installed entry names w1's address and port" "$before" "^127\.0\.47\.2 $SSHD_PORT ssh-"
rm "$HOME/.ssh/tpuform/cg.known_hosts"
printf '# stale\n' >"$HOME/.ssh/tpuform/cg.config"
ok "apply -replace" tpuform apply -f fleet.yaml -auto-approve -replace cg-a-0
like "apply rewrote the installed config" "$(cat "$HOME/.ssh/tpuform/cg.config")" "^Host cg-a-0-w1$"
after=$(entry cg-a-0-w1)
like "w1's entry now names the new worker's address" "$after" "^127\.0\.47\.4 $SSHD_PORT ssh-"
# shellcheck disable=SC2317 # called through ok
isnt_key() { [ "$(printf '%s' "$1" | cut -d' ' -f3-)" != "$(printf '%s' "$2" | cut -d' ' -f3-)" ]; }
ok "and its known_hosts key is the new worker's" isnt_key "$before" "$after"
ok "ssh (StrictHostKeyChecking yes) reaches the new node with it" \
	ssh -F "$HOME/.ssh/config" -o BatchMode=yes -o StrictHostKeyChecking=yes cg-a-0-w1 true
is "the files stay private" "$(stat -c %a "$HOME/.ssh/tpuform/cg.config" "$HOME/.ssh/tpuform/cg.known_hosts" | tr '\n' ' ')" "600 600 "

# ---- watch keeps it current when it replaces a preempted node --------------
curl -s -o /dev/null -X POST "$FAKEGCP_URL/__admin/nodes/z1/cg-a-0:preempt"
"$TPUFORM" watch -f fleet.yaml -interval 1s -session-check 1s >watch.out 2>&1 &
wpid=$!
# shellcheck disable=SC2317 # called through wait_for
moved() { entry cg-a-0-w1 | grep -q '^127\.0\.47\.6 '; }
ok "watch replaces the node and rewrites the installed config" wait_for 120 moved
kill "$wpid" 2>/dev/null
wait "$wpid"
like "watch said so" "$(cat watch.out)" "ssh config rewritten"
ok "ssh reaches the watch's replacement with it" \
	ssh -F "$HOME/.ssh/config" -o BatchMode=yes -o StrictHostKeyChecking=yes cg-a-0-w1 true
unlike "no ssh config warning" "$(cat watch.out)" "could not be rewritten"

# ---- no installed config: apply and watch create none ----------------------
rm -r "$HOME/.ssh/tpuform"
ok "apply -replace without an installed config" tpuform apply -f fleet.yaml -auto-approve -replace cg-a-0
ok "creates no ssh config" test ! -e "$HOME/.ssh/tpuform/cg.config"
finish

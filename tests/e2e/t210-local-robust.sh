#!/bin/sh
# The local provider when something around it goes wrong: one corrupt
# node.json blocks only its own node; a node directory removed behind
# tpuform's back (as that error's hint says) leaves no job and no
# /tmp/tpuform-screen-* link behind, and its job never runs next to its
# replacement's; an interrupted create ends at once and leaves the node
# pending; create_delay is bounded; a home too long for screen is said so.
. "$(dirname "$0")/lib.sh"
setup_dir t210

fleet() { # $1 = file, $2 = fleet name, $3 = count, $4 = create_delay, $5 = root
	cat >"$1" <<YAML
fleet: $2
provider:
  local: { root: $5, create_delay: $4 }
state: { path: $2.state.json }
run: echo \$\$ > "\$TPUFORM_BUCKET/\$TPUFORM_NODE.pid"; exec sleep 300
groups:
  - name: a
    accelerator_type: v2-8
    runtime_version: tpu-ubuntu2204-base
    zones: [z1]
    count: $3
YAML
}

# The pid a node's job recorded (waits for it), or nothing.
job_pid() {
	wait_for 10 test -s "nodes/bucket/$1.pid" && cat "nodes/bucket/$1.pid"
}
# Running, a zombie not counting (PID 1 here may not reap).
alive() {
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
# shellcheck disable=SC2317 # called through wait_for
dead() { ! alive "$1"; }
# The short SCREENDIR link of worker 0 of node $1, if there is one.
link_of() {
	want="$W/nodes/nodes/$1/workers/0/.screen"
	for l in /tmp/tpuform-screen-*; do
		[ -L "$l" ] && [ "$(readlink "$l")" = "$want" ] && echo "$l"
	done
	return 0
}

fleet fleet.yaml rb 3 0.2s nodes
ok "apply creates three nodes" tpuform apply -f fleet.yaml -auto-approve
p0=$(job_pid rb-a-0)
p1=$(job_pid rb-a-1)
p2=$(job_pid rb-a-2)
ok "the three jobs run" alive "$p0"
ok "all three" sh -c "[ -d /proc/$p1 ] && [ -d /proc/$p2 ]"

# ---- one corrupt node.json
printf '{"id": ' >nodes/nodes/rb-a-1/node.json
out=$(tpuform plan -f fleet.yaml 2>&1)
like "plan names the corrupt file" "$out" "nodes/rb-a-1/node.json' is not a valid local node file"
like "and says how to get out of it" "$out" "delete the directory '.*nodes/rb-a-1'"
like "but still plans the fleet" "$out" "Plan: "
unlike "the healthy nodes are left alone" "$out" "rb-a-[02].*(must be replaced|will be destroyed)"
out=$(tpuform show -f fleet.yaml 2>&1)
like "show lists the healthy nodes" "$out" "rb-a-2 +READY"

fails "destroy ends in an error for the node it cannot read" 1 tpuform destroy -f fleet.yaml -auto-approve
out=$(cat last.out)
like "but destroys the healthy ones" "$out" "rb-a-0: Destruction complete"
like "both of them" "$out" "rb-a-2: Destruction complete"
ok "their jobs are gone" dead "$p0"
ok "both" dead "$p2"
ok "the unreadable node was not touched" alive "$p1"

# ---- following the hint: delete the node's directory
link=$(link_of rb-a-1)
ok "its worker has a short SCREENDIR link" test -n "$link"
rm -rf nodes/nodes/rb-a-1
ok "deleting the directory alone leaves the job running" alive "$p1"
out=$(tpuform plan -f fleet.yaml 2>&1)
like "the next listing stops it, and says so" "$out" "node 'rb-a-1' has no directory any more"
ok "its job is gone" wait_for 5 dead "$p1"
ok "and so is its /tmp link" test ! -e "$link" -a ! -L "$link"
rm -f nodes/bucket/*.pid
ok "apply after all that" tpuform apply -f fleet.yaml -auto-approve

# ---- a directory removed behind tpuform's back, then re-created by apply
old=$(job_pid rb-a-2)
ok "rb-a-2's job runs" alive "$old"
rm -f nodes/bucket/rb-a-2.pid
rm -rf nodes/nodes/rb-a-2
ok "apply re-creates the missing node" tpuform apply -f fleet.yaml -auto-approve
new=$(job_pid rb-a-2)
ok "a new job runs" alive "$new"
is "in a new process" "$([ "$new" != "$old" ] && echo new)" new
ok "and the old one is not left next to it" dead "$old"
is "one job of rb-a-2, not two" "$(pgrep -f -x 'sleep 300' | while read -r p; do
	tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "TPUFORM_NODE=rb-a-2" && echo "$p"
done | wc -l | tr -d ' ')" 1
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve

# ---- an interrupted create (the first Ctrl-C: stop waiting, save the state)
fleet slow.yaml rs 1 1h slow
"$TPUFORM" apply -f slow.yaml -auto-approve >slow.out 2>&1 &
apid=$!
ok "the create starts" wait_for 10 grep -q "rs-a-0: Creating" slow.out
sleep 0.3
kill -INT "$apid"
t0=$(date +%s)
while alive "$apid" && [ $(($(date +%s) - t0)) -lt 5 ]; do
	sleep 0.1
done
ok "apply ends within a few seconds of SIGINT (not after create_delay 1h)" dead "$apid"
kill -9 "$apid" 2>/dev/null
wait "$apid" 2>/dev/null
out=$(tpuform state pull -f slow.yaml)
like "the node is recorded as pending" "$out" '"status": "pending"'
out=$(tpuform plan -f slow.yaml 2>&1)
unlike "the next plan does not create a second node" "$out" "Plan: 1 to add"
ok "destroy the slow fleet" tpuform destroy -f slow.yaml -auto-approve

# ---- bounds and messages
fleet typo.yaml rt 1 1000h typo
fails "create_delay beyond an hour is refused" 1 tpuform validate -f typo.yaml
like "with the range" "$(cat last.out)" "'create_delay' must be from 0s to 1h, got '1000h'"

deep=$(printf 'd%.0s' $(seq 1 200))
root=deep
for _ in 1 2 3 4 5 6 7 8 9 10 11; do root="$root/$deep"; done
fleet deep.yaml rd 1 0.1s "$root"
fails "apply in a root too deep for screen fails" 1 tpuform apply -f deep.yaml -auto-approve
like "saying why, not 'session did not appear'" "$(cat last.out)" "too long for screen"
ok "nothing is left of it" sh -c "! tpuform state pull -f deep.yaml | grep -q '\"status\": \"created\"'"

finish

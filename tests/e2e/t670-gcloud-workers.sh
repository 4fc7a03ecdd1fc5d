#!/bin/sh
# gcloud's habits on the local provider's 4-worker node (issue 26 item 9):
# `cp f.txt NODE:` (gcloud's own first scp example) puts the file in the
# job's checkout, as NODE:.; -worker takes gcloud's --worker forms (N,
# A-B, A,B, 0,2-3, all) for cp, exec, ssh -- CMD and logs; bad forms and a
# worker beyond the node's count fail with a message that says why; an
# interactive ssh to several workers is refused, as gcloud refuses it
# without --command. No sshd workers: no loopback block is used.
# shellcheck disable=SC2016 # $vars in single quotes are for the workers' shell
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
setup_dir t670
cat >fleet.yaml <<'YAML'
fleet: gw670
provider:
  local: { root: nodes, create_delay: 0.1s }
run: echo "job on $TPUFORM_WORKER_ID"; exec sleep 3000
groups:
  - { name: a, accelerator_type: v4-32, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1 }
YAML
N=gw670-a-0
ok "apply a 4-worker node" tpuform apply -f fleet.yaml -auto-approve

# The workers whose lines an output has ("0 2 3"), from NODE/wN prefixes.
workers_in() {
	printf '%s\n' "$1" | sed -n "s|^$N/w\([0-9]*\) [|:].*|\1|p" | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# ---- cp SRC NODE: --------------------------------------------------------
printf 'gcloud habit\n' >f.txt
ok "cp f.txt NODE: (an empty remote path)" tpuform cp -f fleet.yaml f.txt "$N:"
is "  to every worker" "$(workers_in "$(cat last.out)")" "0 1 2 3"
ok "  the file is in the job's checkout, as NODE:. puts it" \
	tpuform exec -f fleet.yaml "$N" -- 'test "$(cat tpuform/src/f.txt)" = "gcloud habit"'
printf 'second\n' >g.txt
ok "cp g.txt NODE:." tpuform cp -f fleet.yaml g.txt "$N:."
ok "  lands beside it" tpuform exec -f fleet.yaml "$N" -- 'test -f tpuform/src/g.txt'

# ---- -worker for cp ------------------------------------------------------
printf 'some\n' >some.txt
ok "cp -worker=0-1" tpuform cp -f fleet.yaml -worker=0-1 some.txt "$N:"
is "  reaches workers 0 and 1" "$(workers_in "$(cat last.out)")" "0 1"
ex=$(tpuform exec -f fleet.yaml "$N" -- 'test -f tpuform/src/some.txt && echo has || echo none' </dev/null)
like "  0 and 1 have it" "$ex" "^$N/w1 \| has$"
like "  2 has not" "$ex" "^$N/w2 \| none$"
ok "cp -worker 0,2-3 (a list with a range)" tpuform cp -f fleet.yaml -worker 0,2-3 some.txt "$N:l.txt"
is "  reaches workers 0, 2 and 3" "$(workers_in "$(cat last.out)")" "0 2 3"
ok "cp -worker=all" tpuform cp -f fleet.yaml -worker=all some.txt "$N:all.txt"
is "  reaches every worker" "$(workers_in "$(cat last.out)")" "0 1 2 3"

# ---- exec, ssh -- CMD, logs -------------------------------------------------
ok "exec -worker=0,1" tpuform exec -f fleet.yaml "$N" -worker=0,1 -- 'echo "id=$TPUFORM_WORKER_ID"'
is "  runs on workers 0 and 1" "$(workers_in "$(cat last.out)")" "0 1"
like "  each says its own id" "$(cat last.out)" "^$N/w1 \| id=1$"
ok "exec -worker=1-3" tpuform exec -f fleet.yaml "$N" -worker=1-3 -- true
is "  runs on workers 1 to 3" "$(workers_in "$(cat last.out)")" "1 2 3"
ok "ssh -worker=all -- CMD" tpuform ssh -f fleet.yaml "$N" -worker=all -- 'echo "id=$TPUFORM_WORKER_ID"'
is "  runs on every worker, as exec does" "$(workers_in "$(cat last.out)")" "0 1 2 3"
like "  with each worker's status" "$(cat last.out)" "^$N/w3 : exit=0$"
fails "ssh -worker=0-1 -- CMD exits with the worst status" 3 \
	tpuform ssh -f fleet.yaml "$N" -worker=0-1 -- 'exit $((TPUFORM_WORKER_ID + 2))'
out=$(tpuform ssh -f fleet.yaml "$N" -worker 2 -- 'echo "id=$TPUFORM_WORKER_ID"' </dev/null 2>&1)
is "ssh -worker 2 -- CMD: one worker, output as it is" "$out" "id=2"
wait_for 20 sh -c "\"$TPUFORM\" logs -f fleet.yaml $N | grep -q 'w3 | job on 3'"
ok "logs -worker=1,3" tpuform logs -f fleet.yaml "$N" -worker=1,3
is "  prints workers 1 and 3" "$(workers_in "$(cat last.out)")" "1 3"
like "  worker 3's own log" "$(cat last.out)" "^$N/w3 \| job on 3$"
ok "logs -worker=all" tpuform logs -f fleet.yaml "$N" -worker=all
is "  prints every worker" "$(workers_in "$(cat last.out)")" "0 1 2 3"

# ---- what is refused ----------------------------------------------------------
fails "an interactive ssh to several workers is refused" 1 tpuform ssh -f fleet.yaml "$N" -worker=0-1 </dev/null
like "  saying a shell goes to one worker" "$(cat last.out)" \
	"an interactive shell goes to one worker, but -worker names 2 workers of node '$N'"
like "  and what to do" "$(cat last.out)" "give a command to run on them all"
fails "ssh -L to several workers is refused" 1 tpuform ssh -f fleet.yaml "$N" -worker=all -L 0:localhost:1 -- true
like "  saying -L goes to one worker" "$(cat last.out)" "-L goes to one worker, but -worker names 4 workers"
fails "a range that runs backwards" 1 tpuform exec -f fleet.yaml "$N" -worker=3-1 -- true
like "  says how to write it" "$(cat last.out)" "invalid value '3-1' for -worker: range '3-1' runs backwards: write 1-3"
fails "a word" 1 tpuform logs -f fleet.yaml "$N" -worker=w1
like "  names the forms" "$(cat last.out)" "'w1' is not a worker number \(workers are N, A-B, A,B or all\)"
fails "a half range" 1 tpuform cp -f fleet.yaml -worker=1- f.txt "$N:"
like "  says it is not a range" "$(cat last.out)" "'1-' is not a range of workers"
fails "all with a number" 1 tpuform ssh -f fleet.yaml "$N" -worker=all,1 -- true
like "  says all stands alone" "$(cat last.out)" "'all' stands alone"
fails "a worker beyond the node's (cp)" 1 tpuform cp -f fleet.yaml -worker=2-5 f.txt "$N:"
like "  names the node's worker count" "$(cat last.out)" "node '$N' has no worker 5: it has 4 workers \(0 to 3\)"
fails "a worker beyond the node's (logs)" 1 tpuform logs -f fleet.yaml "$N" -worker=1,4
like "  names the node's worker count" "$(cat last.out)" "node '$N' has no worker 4: it has 4 workers \(0 to 3\)"
fails "an empty local source is still refused" 1 tpuform cp -f fleet.yaml '' "$N:"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

# shellcheck shell=sh
# The checks of the everyday chores (issue 19), shared by the local provider
# (t470) and the gcp provider with sshd workers (t475). Source after lib.sh,
# with a READY 2-worker node whose job is `exec sleep 3000`, then call
#   chores_checks NODE
# FLEET: the fleet file (default fleet.yaml). WWW_PORT: the port of the
# HTTP server on worker 1 (default 18470); tests that may run side by side
# give different ones.
# shellcheck disable=SC2016 # $vars in single quotes are for the workers' shell

# The job's pid on every worker, one "wN PID alive" line each.
_ch_jobs() {
	tpuform exec -f "${FLEET:-fleet.yaml}" "$1" -- \
		'p=$(cat tpuform/run/job.pid); kill -0 "$p" && echo "$TPUFORM_WORKER_ID $p alive"' </dev/null |
		grep ' | ' | sed 's/.* | //' | sort
}

chores_checks() {
	_n1=$1
	_f=${FLEET:-fleet.yaml}
	jobs_before=$(_ch_jobs "$_n1")
	like "the job runs on both workers" "$jobs_before" "^0 [0-9]+ alive
1 [0-9]+ alive$"

	# ---- cp ------------------------------------------------------------
	rm -rf up back
	mkdir -p up/sub up/empty
	printf 'hello\n' >up/a.txt
	head -c 300000 /dev/urandom >up/sub/blob.bin
	printf '#!/bin/sh\n' >up/sub/tool.sh
	chmod 750 up/sub/tool.sh
	ok "cp -r a directory to every worker" tpuform cp -f "$_f" -r up "$_n1:data"
	like "a result line per worker" "$(cat last.out)" "^$_n1/w0 : sent 3 files, 29[0-9.]+ KiB
$_n1/w1 : sent 3 files"
	ok "cp -r it back" tpuform cp -f "$_f" -r "$_n1:data" back
	for w in 0 1; do
		ok "w$w: up and back byte-identical" diff -r up "back/$_n1/w$w/data"
		is "w$w: the mode is kept" "$(stat -c %a "back/$_n1/w$w/data/sub/tool.sh")" 750
	done
	ok "it went into the job's checkout" tpuform exec -f "$_f" "$_n1" -worker 1 -- 'cmp tpuform/src/data/a.txt - <<X
hello
X'
	ok "cp of one file to ~/ and back" tpuform cp -f "$_f" up/a.txt "$_n1:~/a-home.txt"
	ok "the file is in the home" tpuform exec -f "$_f" "$_n1" -- 'test "$(cat a-home.txt)" = hello'
	fails "a directory without -r is refused" 1 tpuform cp -f "$_f" up "$_n1:x"
	like "it says why" "$(cat last.out)" "Error: 'up' is a directory"
	like "with the fix" "$(cat last.out)" "add -r to copy directories"
	fails "a missing remote file fails on every worker" 1 tpuform cp -f "$_f" "$_n1:nope" back
	like "and says so per worker" "$(cat last.out)" "$_n1/w1 : failed"
	fails "local to local is refused" 1 tpuform cp -f "$_f" up/a.txt other
	is "the job kept its PID on every worker" "$(_ch_jobs "$_n1")" "$jobs_before"

	# ---- exec: stdin, streaming, Ctrl-C ------------------------------------
	head -c 200000 /dev/urandom >stdin.bin
	want=$(sha256sum <stdin.bin | cut -c1-64)
	ok "exec with stdin" tpuform exec -f "$_f" "$_n1" -- 'cat > stdin.out' <stdin.bin
	ex=$(tpuform exec -f "$_f" "$_n1" -- 'sha256sum < stdin.out | cut -c1-64' </dev/null)
	like "w0 got the same bytes" "$ex" "^$_n1/w0 \| $want$"
	like "w1 got the same bytes" "$ex" "^$_n1/w1 \| $want$"
	ex=$(tpuform exec -f "$_f" "$_n1" -- 'echo "$TPUFORM_NODE/$TPUFORM_WORKER_ID of $TPUFORM_NUM_WORKERS"' </dev/null)
	like "exec sees the job's TPUFORM_* variables" "$ex" "^$_n1/w1 \| $_n1/1 of 2$"
	fails "the exit status is the worst worker's" 7 tpuform exec -f "$_f" "$_n1" -- \
		'exit $((TPUFORM_WORKER_ID * 7))'

	# "$TPUFORM" itself, not the function: $! must be tpuform's pid
	"$TPUFORM" exec -f "$_f" "$_n1" -- 'echo first; sleep 8; echo last' </dev/null >stream.out 2>&1 &
	sp=$!
	# Both workers' first lines (waiting for w1's alone raced w0's).
	wait_for 6 sh -c "[ \"\$(grep -c '| first' stream.out)\" -ge 2 ]"
	is "the first line shows before the command ends" \
		"$(grep -c '| first' stream.out) $(kill -0 "$sp" 2>/dev/null && echo running)" "2 running"
	wait "$sp"

	# A sleep of this run's own length: a test beside it may run one too.
	_sl=$((4000 + $$ % 5000))
	"$TPUFORM" exec -f "$_f" "$_n1" -- "sleep $_sl; echo never" </dev/null >int.out 2>&1 &
	ip=$!
	wait_for 10 sh -c "[ \"\$(pgrep -fc '^sleep $_sl\$')\" -ge 2 ]"
	is "the command runs on both workers" "$(pgrep -fc "^sleep $_sl\$")" 2
	kill -INT "$ip"
	wait "$ip"
	is "Ctrl-C ends exec" "$?" 130
	wait_for 5 sh -c "! pgrep -f '^sleep $_sl\$'"
	is "and leaves no process behind" "$(pgrep -fc "^sleep $_sl\$")" 0
	unlike "the command never went on" "$(cat int.out)" "never"
	is "the job kept its PID through all of it" "$(_ch_jobs "$_n1")" "$jobs_before"

	# ---- ssh -- CMD, ssh -L ------------------------------------------------
	fails "ssh -- CMD returns the command's exit status" 5 tpuform ssh -f "$_f" "$_n1" -worker 1 -- \
		'echo "on $TPUFORM_WORKER_ID"; exit 5'
	like "and prints its output" "$(cat last.out)" "^on 1$"
	is "ssh -- CMD takes stdin" "$(echo piped | tpuform ssh -f "$_f" "$_n1" -- 'cat')" piped
	ok "an HTTP server on worker 1" tpuform exec -f "$_f" "$_n1" -worker 1 -- \
		'mkdir -p www && echo "served by $TPUFORM_WORKER_ID" >www/index.html && cd www &&
		 { setsid python3 -m http.server '"${WWW_PORT:-18470}"' --bind 127.0.0.1 </dev/null >/dev/null 2>&1 & echo $! >../www.pid; } &&
		 for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.3; python3 -c "import urllib.request as u; u.urlopen(\"http://127.0.0.1:'"${WWW_PORT:-18470}"'/\")" 2>/dev/null && exit 0; done; exit 1' </dev/null
	lp=$(( 20000 + $$ % 20000 ))
	got=$(tpuform ssh -f "$_f" "$_n1" -worker 1 -L "$lp:127.0.0.1:${WWW_PORT:-18470}" -- \
		"python3 -c 'import urllib.request as u; print(u.urlopen(\"http://127.0.0.1:$lp/index.html\").read().decode().strip())'" </dev/null 2>&1)
	is "ssh -L forwards an HTTP request to worker 1 (while the command runs)" "$got" \
		"Forwarding localhost:$lp -> 127.0.0.1:${WWW_PORT:-18470} on $_n1/w1
served by 1"
	"$TPUFORM" ssh -f "$_f" "$_n1" -worker 1 -L "$((lp + 1)):localhost:${WWW_PORT:-18470}" </dev/null >fwd.out 2>&1 &
	fp=$!
	wait_for 10 grep -q "Ctrl-C" fwd.out
	is "ssh -L alone forwards until Ctrl-C" "$(curl -s "http://127.0.0.1:$((lp + 1))/index.html")" "served by 1"
	kill -INT "$fp"
	wait "$fp"
	is "and stops on it" "$?" 0
	fails "a bad -L says the syntax" 1 tpuform ssh -f "$_f" "$_n1" -L 8080:nope -- true
	like "as ssh -L does" "$(cat last.out)" "bad port forward '8080:nope'"
	ok "the server stops" tpuform exec -f "$_f" "$_n1" -worker 1 -- 'kill "$(cat www.pid)"'
}

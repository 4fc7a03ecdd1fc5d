#!/bin/sh
# The command line as a whole, driven by its own command table
# (`tpuform help -commands`): every command and subcommand has help, rejects
# a stray argument by name, and reports a bad flag as JSON under -json.
# Then: no command takes the fleet file as an argument (destroy other.yaml
# must not destroy ./tpuform.yaml's fleet); applies end honestly; the first
# interrupt stops an apply gracefully and a second one at once, leaving a
# consistent state; global flags before the command; messages that say
# why; docs/commands.md's defaults match the code; `logs -setup`.
. "$(dirname "$0")/lib.sh"
setup_dir t200
make_repo

# Exit status of "$@" with output in $W/last.out.
status() {
	"$@" >"$W/last.out" 2>&1
	echo $?
}

skip() {
	_n=$((_n + 1))
	echo "ok $_n # SKIP $1"
}

# --- Every command and subcommand of the table ---------------------------
table=$(tpuform help -commands)
like "the table lists commands and subcommands" "$table" "^state rm	1	-1	command$"
printf '%s\n' "$table" >table.txt
while IFS='	' read -r path min max kind; do
	# shellcheck disable=SC2086 # path is "state rm": two words
	for h in -help -h --help; do
		out=$(tpuform $path $h 2>&1)
		is "'tpuform $path $h' exits 0" "$?" 0
		like "'tpuform $path $h' prints its usage" "$out" "^Usage: tpuform $path "
	done
	# shellcheck disable=SC2086
	out=$(tpuform help $path 2>/dev/null)
	is "'tpuform help $path' exits 0" "$?" 0
	if [ "$kind" = group ]; then
		like "'tpuform help $path' lists its subcommands" "$out" "^Subcommands:"
	else
		like "'tpuform help $path' lists its options" "$out" "^  -h, -help  "
	fi
	# A stray positional argument, after as many as the command takes.
	if [ "$max" -ge 0 ]; then
		args=""
		i=0
		while [ "$i" -lt "$max" ]; do
			i=$((i + 1))
			args="$args a$i"
		done
		# shellcheck disable=SC2086
		fails "'tpuform $path$args STRAY-ARG' exits 1" 1 tpuform $path $args STRAY-ARG
		like "and names the stray argument" "$(cat last.out)" "'STRAY-ARG'"
	else
		skip "'tpuform $path' takes any number of arguments (min $min)"
	fi
	# shellcheck disable=SC2086
	tpuform $path -json -no-such-flag >json.out 2>json.err
	is "'tpuform $path -json -no-such-flag' exits 1" "$?" 1
	if [ "$kind" = group ]; then
		want='select(.type == "diagnostic") | .diagnostic.summary | test("needs a subcommand")'
	else
		# the first unknown flag: -json itself where the command has no -json
		want='select(.type == "diagnostic") | .diagnostic.summary | test("unknown flag .-(no-such-flag|json).")'
	fi
	ok "and prints the error as a JSON diagnostic" jq -e "$want" json.out
done <table.txt

# Help says "JSON Lines" exactly where -json prints JSON Lines.
for c in plan apply destroy watch; do
	like "'$c -help' says its -json is JSON Lines" "$(tpuform $c -help)" "-json +machine-readable output: JSON Lines"
done
for c in show validate; do
	unlike "'$c -help' does not say JSON Lines" "$(tpuform $c -help)" "JSON Lines"
done

# --- A fleet in ./tpuform.yaml, and another file beside it ------------------
cat >tpuform.yaml <<YAML
fleet: cli
provider:
  local: { root: nodes, create_delay: 0.2s }
source: { repo: $W/repo, ref: main }
setup: echo "setup-output-marker for \$TPUFORM_NODE"
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
sed 's/fleet: cli/fleet: other/' tpuform.yaml >other.yaml
ok "apply ./tpuform.yaml" tpuform apply -auto-approve
is "cli-a-0 exists" "$(ls nodes/nodes)" "cli-a-0"

is "'destroy other.yaml -auto-approve' exits 1" "$(status tpuform destroy other.yaml -auto-approve)" 1
like "with Terraform's 'Too many command line arguments'" "$(cat last.out)" "Too many command line arguments"
like "naming the argument and the way to name a fleet file" "$(cat last.out)" "'other.yaml'.*|-f FILE"
is "and the fleet of ./tpuform.yaml was not destroyed" "$(ls nodes/nodes)" "cli-a-0"
for c in plan show watch; do
	fails "'$c other.yaml' exits 1" 1 tpuform $c other.yaml
done
fails "'validate other.yaml' exits 1 (the file is named with -f)" 1 tpuform validate other.yaml
like "with a hint to use -f" "$(cat last.out)" "use -f FILE: tpuform validate -f other.yaml"
ok "'validate -f other.yaml' works" tpuform validate -f other.yaml

# --- Global flags before the command, and messages --------------------------
ok "'tpuform -no-color plan' takes -no-color before the command" tpuform -no-color plan
ok "'tpuform -chdir=DIR -no-color show'" tpuform -chdir="$W" -no-color show
fails "'tpuform -bogus plan' exits 1" 1 tpuform -bogus plan
like "naming the global option" "$(cat last.out)" "unknown global option '-bogus'"
like "'tpuform help apply' prints apply's options" "$(tpuform help apply)" "-auto-approve +skip the approval prompt"
fails "-parallelism=0 is refused" 1 tpuform plan -parallelism=0
like "stating the range" "$(cat last.out)" "-parallelism must be from 1 to 256"
fails "-parallelism=257 is refused" 1 tpuform apply -parallelism=257
fails "'exec -worker 5' on a 1-worker node exits 1" 1 tpuform exec cli-a-0 -worker 5 -- true
like "saying how many workers it has" "$(cat last.out)" "node 'cli-a-0' has no worker 5: it has 1 worker \(0\)"
fails "'exec NODE COMMAND' without -- exits 1" 1 tpuform exec cli-a-0 true
like "with a hint to put the command after --" "$(cat last.out)" 'Put the command after "--": tpuform exec cli-a-0 -- true'
ok "'exec NODE -- COMMAND' runs" tpuform exec cli-a-0 -- echo hi
like "on the worker" "$(cat last.out)" "cli-a-0/w0 \| hi"

# --- docs/commands.md's command table shows the code's defaults -------------
readme="$TOP/docs/commands.md"
while IFS='	' read -r path min max kind; do
	[ "$kind" = group ] && continue
	# shellcheck disable=SC2086
	tpuform help $path | sed -n 's/^  \(-[a-z], \)\{0,1\}-\([a-z-]*\)=[A-Z]* .*default \([^);]*\)).*/\2 \3/p' >defaults.txt
	row=$(grep -E "^\| \`tpuform ${path%% *}[ \`]" "$readme" || true)
	while read -r flag def; do
		case "$row" in
		*"-$flag="*) like "docs/commands.md: $path -$flag defaults to $def" "$row" "-$flag=$def\`" ;;
		esac
	done <defaults.txt
done <table.txt

# --- logs -setup: the setup script's output ------------------------------------
wait_for 10 sh -c "\"$TPUFORM\" logs -setup cli-a-0 | grep -q setup-output-marker"
like "'logs -setup NODE' prints the setup output" "$(tpuform logs -setup cli-a-0)" "^cli-a-0/w0 \| setup-output-marker for cli-a-0$"
unlike "and not the job log" "$(tpuform logs -setup cli-a-0)" "sleep"
ok "'logs NODE' still prints the job log" tpuform logs cli-a-0
ok "destroy" tpuform destroy -auto-approve
like "Destroy complete! after a clean destroy" "$(cat last.out)" "Destroy complete! Resources: 1 destroyed\."

# --- Honest endings ------------------------------------------------------------
cat >fail.yaml <<'YAML'
fleet: fl
state: { path: fl.state.json }
provider:
  local: { root: fnodes, create_delay: 0.2s }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 2 }
YAML
TPUFORM_LOCAL_FAIL_CREATE=fl-a-1 "$TPUFORM" apply -f fail.yaml -auto-approve >fail.out 2>&1
is "an apply with a failed create exits 1" "$?" 1
unlike "and does not say 'Apply complete!'" "$(cat fail.out)" "Apply complete!"
like "it says what was and was not done" "$(cat fail.out)" "^Apply failed: 1 added, 0 changed, 0 destroyed; 1 action failed\.$"
like "after the error box" "$(tr '\n' ' ' <fail.out)" "Error: .*fl-a-1.*Apply failed:"
"$TPUFORM" apply -f fail.yaml -auto-approve -json >fail.json 2>&1
ok "under -json a clean apply's change_summary is info" \
	jq -e 'select(.type == "change_summary") | select(.["@level"] == "info")' fail.json
ok "destroy fl" tpuform destroy -f fail.yaml -auto-approve

# --- Interrupts ------------------------------------------------------------------
# Start an apply in the background, its output in $1; wait for $2 in it.
start_apply() {
	"$TPUFORM" apply -f "$3" -auto-approve -parallelism=1 >"$1" 2>&1 &
	pid=$!
	wait_for 20 grep -q "$2" "$1"
}

cat >slow.yaml <<'YAML'
fleet: sl
state: { path: sl.state.json }
provider:
  local: { root: snodes, create_delay: 1s }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 3 }
YAML
start_apply int1.out "sl-a-0: Creating" slow.yaml
kill -INT "$pid"
wait "$pid"
is "an interrupted apply exits 1" "$?" 1
like "saying Terraform's words" "$(cat int1.out)" "Interrupt received.*|Gracefully shutting down"
unlike "not 'Apply complete!'" "$(cat int1.out)" "Apply complete!"
like "but what was not done" "$(cat int1.out)" "^Apply interrupted: .*2 not started\. The state records everything"
ok "the state is valid JSON" sh -c "\"$TPUFORM\" state pull -f slow.yaml | jq -e .serial"
is "the next plan works" "$(status tpuform plan -f slow.yaml -detailed-exitcode)" 2
like "and creates the two not started" "$(cat last.out)" "sl-a-[12] will be created"

# A second interrupt: setup keeps the apply busy after the first one (an
# in-flight step is finished, not abandoned), so only the second ends it.
cat >busy.yaml <<'YAML'
fleet: bz
state: { path: bz.state.json }
provider:
  local: { root: bnodes, create_delay: 0.2s }
setup: sleep 6.173
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
start_apply int2.out "bz-a-0: Creation complete" busy.yaml
sleep 0.5
kill -INT "$pid"
sleep 1
if kill -0 "$pid" 2>/dev/null; then
	t0=$(date +%s)
	kill -INT "$pid"
	wait "$pid"
	rc=$?
	is "a second interrupt exits 1" "$rc" 1
	ok "at once" test $(($(date +%s) - t0)) -le 2
	like "with Terraform's words" "$(cat int2.out)" "Two interrupts received. Exiting immediately. Note that data loss may have occurred."
else
	wait "$pid"
	skip "the apply ended after the first interrupt: no second one to send"
fi
ok "the state is valid JSON" sh -c "\"$TPUFORM\" state pull -f busy.yaml | jq -e .serial"
# shellcheck disable=SC2317 # called through ok
fails_or_changes() {
	"$TPUFORM" plan -f busy.yaml -detailed-exitcode >"$W/last.out" 2>&1
	[ $? -ne 1 ]
}
ok "the next plan works from a consistent state" fails_or_changes
like "and still knows bz-a-0" "$(cat last.out)" "bz-a-0"
# The orphaned setup finishes on its own; then clean up.
wait_for 15 sh -c '! pgrep -f "sleep 6[.]173" >/dev/null'
ok "destroy bz" tpuform destroy -f busy.yaml -auto-approve
ok "destroy sl" tpuform destroy -f slow.yaml -auto-approve

# Read-only commands just stop: no "data loss" talk, the signal's status.
ok "apply for logs -follow" tpuform apply -f slow.yaml -auto-approve
"$TPUFORM" logs -f slow.yaml sl-a-0 -follow >follow.out 2>&1 &
pid=$!
sleep 1
kill -INT "$pid"
wait "$pid"
is "'logs -follow' ends on the first interrupt with status 130" "$?" 130
unlike "without the data-loss warning" "$(cat follow.out)" "data loss"
ok "destroy sl" tpuform destroy -f slow.yaml -auto-approve
finish

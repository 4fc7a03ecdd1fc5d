#!/bin/sh
# What a Terraform user expects at the terminal: the approval prompt, the
# refusal without a terminal, heartbeats, colour rules, help for every
# command, and a corrupt state refused without being touched.
. "$(dirname "$0")/lib.sh"
setup_dir t180
cat >fleet.yaml <<'YAML'
fleet: ux
provider:
  local: { root: nodes, create_delay: 1.5s }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
for c in validate plan apply destroy show logs exec ssh state local; do
	ok "'tpuform $c -help' exits 0" tpuform $c -help
done
fails "an unknown command exits 1" 1 tpuform frobnicate
fails "an unknown flag exits 1" 1 tpuform plan -frobnicate
like "naming the flag" "$(cat last.out)" "unknown flag '-frobnicate'"

fails "apply without a terminal and without -auto-approve is refused" 1 tpuform apply -f fleet.yaml </dev/null
like "saying why and what to do" "$(cat last.out)" "standard input is not a terminal.*|-auto-approve"
ok "and nothing was created" test ! -e nodes/nodes

if command -v script >/dev/null; then
	printf 'no\n' | script -qec "\"$TPUFORM\" apply -f fleet.yaml" /dev/null >prompt.out 2>&1
	is "answering 'no' at the prompt exits 1" "$?" 1
	like "the prompt is Terraform's" "$(cat prompt.out)" "Only 'yes' will be accepted to approve."
	like "it asks for a value" "$(cat prompt.out)" "Enter a value:"
	like "and cancels" "$(cat prompt.out)" "Apply cancelled."
	ok "nothing was created after 'no'" test ! -e nodes/nodes/ux-a-0
	printf 'yes\n' | TPUFORM_HEARTBEAT=0.5 script -qec "env -u NO_COLOR \"$TPUFORM\" apply -f fleet.yaml" /dev/null >yes.out 2>&1
	is "answering 'yes' applies" "$?" 0
	like "with heartbeats while the node is CREATING" "$(cat yes.out)" "ux-a-0.*: Still creating... \[00m0[0-9]s elapsed\]"
	like "colour is on at a terminal" "$(cat yes.out)" "$(printf '\033')\[1m"
	NO_COLOR=1 script -qec "\"$TPUFORM\" plan -f fleet.yaml" /dev/null >nocolor.out 2>&1
	unlike "NO_COLOR turns colour off even at a terminal" "$(cat nocolor.out)" "$(printf '\033')\["
else
	tpuform apply -f fleet.yaml -auto-approve >/dev/null 2>&1
fi
unset NO_COLOR
tpuform plan -f fleet.yaml >piped.out 2>&1
unlike "colour is off in a pipe" "$(cat piped.out)" "$(printf '\033')\["
export NO_COLOR=1

cp tpuform.state.json good.json
printf '{"version": 1, "serial": 3, "lineage": ' >tpuform.state.json
cp tpuform.state.json corrupt.json
fails "a corrupt state is refused by plan" 1 tpuform plan -f fleet.yaml
like "with a clear message" "$(cat last.out)" "is not valid JSON"
like "its hint names no backup when none exists" "$(cat last.out)" "there is no '.*tpuform.state.json.backup' to restore"
fails "and by apply" 1 tpuform apply -f fleet.yaml -auto-approve
ok "the corrupt file was not overwritten" cmp -s tpuform.state.json corrupt.json
sed 's/"version": [0-9]*/"version": 99/' good.json >tpuform.state.json
fails "a state from a newer tpuform is refused" 1 tpuform apply -f fleet.yaml -auto-approve
like "saying so" "$(cat last.out)" "has version 99, newer than this tpuform supports"
sed 's/"version": [0-9]*/"version": 99/; s/"tpuform_version": "[^"]*"/"tpuform_version": "0.0.1"/' good.json >tpuform.state.json
fails "a newer format stamped with an older version is refused too" 1 tpuform plan -f fleet.yaml
unlike "without asking to upgrade to an older tpuform" "$(cat last.out)" "Upgrade tpuform to at least 0.0.1"
like "saying the file claims it" "$(cat last.out)" "the file claims tpuform 0.0.1"
cp good.json tpuform.state.json
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve

# A local source repo with uncommitted changes: workers get the commit, and
# plan says the changes are not deployed (issue 9).
make_repo
printf 'edited\n' >>"$W/repo/job.sh"
sed "s|^run: .*|run: sh job.sh|" fleet.yaml >src.yaml
printf 'source: { repo: %s }\n' "$W/repo" >>src.yaml
ok "plan with a dirty source repo" tpuform plan -f src.yaml
like "warns that its changes are not deployed" "$(cat last.out)" "has uncommitted changes to 1 tracked file \\(first: job.sh\\); they are not deployed"
# The usual slips, each with its fix (issue 19).
fails "apply with the fleet file where a saved plan goes" 1 tpuform apply fleet.yaml
like "says it is a fleet file" "$(cat last.out)" "'fleet.yaml' looks like a fleet file, not a PLANFILE"
like "and shows -f" "$(cat last.out)" "tpuform apply -f fleet.yaml"
fails "logs NODE -f, as tail -f" 1 tpuform logs some-node -f
like "points at -follow" "$(cat last.out)" "to follow the output, use -follow"
fails "-no-color: a diagnostic" 1 tpuform plan -no-color -f missing.yaml
is "is Terraform's plain form: a blank line, then Error:" "$(head -2 last.out | tr '\n' '|')" "|Error: fleet file 'missing.yaml' does not exist|"
unlike "without the box" "$(cat last.out)" "│|╷|╵"
mkdir -p keys
: >keys/id_ed25519
chmod 600 keys/id_ed25519
cp fleet.yaml keyed.yaml
printf 'ssh: { private_key: keys/id_ed2519 }\n' >>keyed.yaml
fails "validate: a private key that does not exist" 1 tpuform validate -f keyed.yaml
like "names the setting and the path" "$(cat last.out)" "ssh.private_key: the file '.*keys/id_ed2519' does not exist"
like "with the near miss in its folder" "$(cat last.out)" "Did you mean '.*keys/id_ed25519'\\?"
sed -i 's|keys/id_ed2519|keys/id_ed25519|' keyed.yaml
ok "validate: the right one passes" tpuform validate -f keyed.yaml
finish

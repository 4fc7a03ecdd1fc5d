#!/bin/sh
# README.md's quick starts, run as written (issue 19 item 11):
#  - the local one: the fenced block after <!-- quickstart-local --> runs in
#    a temp dir, with the built binary as `tpuform` on PATH; every command
#    must succeed, and each line of the block after
#    <!-- quickstart-local-output --> must appear in what it printed;
#  - the real-project one: the fleet file after <!-- quickstart-gcp-fleet -->
#    and the commands after <!-- quickstart-gcp --> run against the Cloud TPU
#    API emulator with one sshd worker (tests/e2e/gcp_workers.sh; block
#    127.0.27.x), with only what must change there changed: the SSH user,
#    key and port (the worker's), setup and run (no pip or jax on the
#    worker: run prints what the README says the job prints) and
#    -auto-approve (no terminal). Not run: the gcloud and ssh-keygen
#    commands of the set-up steps (a real project, a user's terminal);
#  - every relative link of README.md and docs/*.md names an existing file,
#    and heading, when it has a #fragment (tests/e2e/md_links.py).
. "$(dirname "$0")/lib.sh"
setup_dir t275
README=$TOP/README.md

# The fenced block after the line "<!-- $1 -->" of README.md.
block() {
	awk -v m="<!-- $1 -->" '
		$0 == m { want = 1; next }
		want == 1 && /^```/ { want = 2; next }
		want == 2 && /^```/ { exit }
		want == 2 { print }' "$README"
}

# ---- links -------------------------------------------------------------------
# shellcheck disable=SC2016 # $1 is the inner shell's
ok "every relative link in README.md and docs/*.md resolves" \
	sh -c 'cd "$1" && python3 tests/e2e/md_links.py README.md docs/*.md' _ "$TOP"
like "and they were checked" "$(cat last.out)" "^[1-9][0-9]* relative links checked, 0 broken"
# The checker itself: a missing file and a missing heading are caught.
mkdir links
# shellcheck disable=SC2016 # backquotes of Markdown
printf '# Top\n## A heading: `code`, too\n[ok](#a-heading-code-too) [file](b.md#top)\n' >links/a.md
printf '# Top\n[bad file](nope.md) [bad anchor](a.md#nowhere) [fine](a.md#top)\n' >links/b.md
fails "a broken link fails the check" 1 python3 "$TOP/tests/e2e/md_links.py" links/a.md links/b.md
like "naming the file" "$(cat last.out)" "links/b.md:2: nope.md: no such file"
like "and the anchor" "$(cat last.out)" "links/b.md:2: a.md#nowhere: no heading with the anchor #nowhere"
unlike "GitHub's anchors of headings with punctuation resolve" "$(cat last.out)" "^links/a.md:"

# ---- the local quick start ---------------------------------------------------
block quickstart-local >local.sh
block quickstart-local-output >local.expect
like "README has the local quick start" "$(cat local.sh)" "^tpuform apply"
like "and what it prints" "$(cat local.expect)" "^Apply complete!"
mkdir bin local
ln -s "$TPUFORM" bin/tpuform
# shellcheck disable=SC2016 # $1 is the inner shell's
ok "the local quick start runs, every command succeeding" \
	sh -c 'cd local && PATH="$1:$PATH" sh -ex ../local.sh' _ "$W/bin"
cp last.out local.out
is "every tpuform command of it ran" "$(grep -c '^+ tpuform ' local.out)" "$(grep -c '^tpuform ' local.sh)"
while IFS= read -r line; do
	ok "it prints: $line" grep -qF -- "$line" local.out
done <local.expect
ok "destroy left no node" test -z "$(dir_names local/first-fleet/.tpuform/local/nodes)"

# ---- the real-project quick start, against the emulator ----------------------
. "$TOP/tests/e2e/gcp_workers.sh"
gcp_workers_start 1 127.0.27.1 --project my-project --op-seconds 0.1
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
mkdir gcp
block quickstart-gcp-fleet >gcp/readme.yaml
# shellcheck disable=SC2016 # $TPUFORM_* are the worker's, not this shell's
sed -e "s|^ssh: { user: tpuform, private_key: ~/.ssh/tpuform }\$|ssh: { user: root, private_key: \"$W/key\", port: $SSHD_PORT }|" \
	-e 's|^setup: .*|setup: "true"|' \
	-e 's|^run: .*|run: echo "8 TPU cores"; exec sleep 300|' gcp/readme.yaml >gcp/tpuform.yaml
is "only the ssh, setup and run lines differ from README's fleet file" \
	"$(diff gcp/readme.yaml gcp/tpuform.yaml | grep -c '^>')" 3
block quickstart-gcp | sed 's/[[:space:]]*#.*//' | grep . >gcp.cmds
like "README's commands validate, plan, apply, show, logs and destroy" "$(tr '\n' ' ' <gcp.cmds)" \
	"^tpuform validate.* tpuform plan tpuform apply tpuform show tpuform logs .* tpuform destroy $"
while IFS= read -r cmd; do
	case $cmd in
	"tpuform apply" | "tpuform destroy") cmd="$cmd -auto-approve" ;;
	esac
	# shellcheck disable=SC2016 # $1 is the inner shell's
	ok "README: $cmd" sh -c 'cd gcp && PATH="$1:$PATH" '"$cmd" _ "$W/bin"
	cp last.out "gcp.$(echo "$cmd" | cut -d' ' -f2).out"
done <gcp.cmds
like "validate -remote asked the zone" "$(cat gcp.validate.out)" "Success!"
like "apply created the node" "$(cat gcp.apply.out)" "Apply complete! Resources: 1 added, 0 changed, 0 destroyed\."
like "show lists it" "$(cat gcp.show.out)" "^first-a-0 +READY +v2-8 +us-central1-f"
like "logs shows what README says the job prints" "$(cat gcp.logs.out)" "first-a-0/w0 \| 8 TPU cores"
like "destroy deleted it" "$(cat gcp.destroy.out)" "Destroy complete! Resources: 1 destroyed\."
is "no node is left in the emulator" \
	"$(curl -s "$FAKEGCP_URL/v2/projects/my-project/locations/us-central1-f/nodes" | jq '.nodes // [] | length')" 0
finish

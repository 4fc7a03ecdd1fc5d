#!/bin/sh
# More habits a new user brings (issue 26 item 9): a mistyped command gets
# Terraform's "Did you mean" (`terraform aply`: 'Terraform has no command
# named "aply". Did you mean "apply"?') and exits 1; `tpuform cp <TAB>`
# offers the state's nodes as NODE: beside local files (bash completion,
# driven as t710 drives it). Local provider, no sshd: no loopback block.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
setup_dir t671
PATH="$TOP:$PATH" # the completion script calls `tpuform` as the user typed it
export PATH

# ---- did you mean ------------------------------------------------------------
fails "tpuform aply exits 1" 1 tpuform aply
like "  and suggests apply" "$(cat last.out)" "unknown command 'aply'. Did you mean 'apply'\?"
fails "tpuform destory exits 1" 1 tpuform destory -auto-approve
like "  and suggests destroy" "$(cat last.out)" "Did you mean 'destroy'\?"
fails "tpuform state lst exits 1" 1 tpuform state lst
like "  and suggests list" "$(cat last.out)" "unknown state subcommand 'lst'. Did you mean 'list'\?"
fails "a word like no command exits 1" 1 tpuform frobnicate
unlike "  with no suggestion" "$(cat last.out)" "Did you mean"
like "  but the list of commands" "$(cat last.out)" "The commands are: validate, plan, apply"
fails "tpuform ls exits 1" 1 tpuform ls
unlike "  not taken for cp or logs (two edits are too many for short names)" "$(cat last.out)" "Did you mean"

# ---- cp <TAB> ------------------------------------------------------------------
if ! command -v bash >/dev/null 2>&1; then
	echo "ok $((_n + 1)) # SKIP bash is not installed"
	_n=$((_n + 1))
	finish
fi
ok "the bash completion script" sh -c "'$TPUFORM' help -completion=bash >tpuform.bash"
cat >complete.bash <<'SH'
. ./tpuform.bash
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
fn=$(complete -p tpuform | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
"$fn" tpuform "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}" | sort
SH
tab() {
	bash complete.bash "$@" 2>/dev/null
}
cat >fleet.yaml <<'YAML'
fleet: gh671
provider:
  local: { root: nodes, create_delay: 0.1s }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 2 }
YAML
: >data.txt
ok "apply" tpuform apply -f fleet.yaml -auto-approve
is "tpuform cp -f fleet.yaml gh<TAB>: the nodes as NODE:" "$(tab tpuform cp -f fleet.yaml gh | tr '\n' ' ')" \
	"gh671-a-0: gh671-a-1: "
is "tpuform cp -f fleet.yaml data.txt gh671-a-1<TAB>" "$(tab tpuform cp -f fleet.yaml data.txt gh671-a-1)" \
	"gh671-a-1:"
like "tpuform cp -f fleet.yaml <TAB>: local files too" "$(tab tpuform cp -f fleet.yaml '')" "^data.txt$"
like "  and the nodes" "$(tab tpuform cp -f fleet.yaml '')" "^gh671-a-0:$"
unlike "  not the groups" "$(tab tpuform cp -f fleet.yaml '')" "^a:?$"
is "after NODE: (bash splits at the colon) nothing is offered" \
	"$(tab tpuform cp -f fleet.yaml data.txt gh671-a-0 : '')" ""
is "ssh <TAB> still offers the nodes alone" "$(tab tpuform ssh -f fleet.yaml gh | tr '\n' ' ')" \
	"gh671-a-0 gh671-a-1 "
ok "the fish script offers NODE: for cp" sh -c "'$TPUFORM' help -completion=fish | grep -q 'from cp.* -F -a .(__tpuform_names | string replace'"
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

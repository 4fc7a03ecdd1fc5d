#!/bin/sh
# Shell completion generated from the command table (cmd/completion.c),
# driven in a real bash as a user's TAB would: the script is loaded,
# `complete -p tpuform` names its function, then COMP_WORDS and COMP_CWORD
# are set and the function called; COMPREPLY is compared with what the
# table and the fleet say (commands from `help -commands`, flags from
# `-help`, node names from the state after an apply). Also: -f completes
# YAML files, names come without network and quickly, the zsh script
# parses, an unknown shell is refused.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
setup_dir t710
PATH="$TOP:$PATH" # the completion script calls `tpuform` as the user typed it
export PATH

if ! command -v bash >/dev/null 2>&1; then
	echo "1..0 # SKIP bash is not installed"
	exit 0
fi
ok "tpuform help -completion=bash writes the script" sh -c "'$TPUFORM' help -completion=bash >tpuform.bash"
fails "an unknown shell is refused" 1 tpuform help -completion=tcsh
like "naming the shells there are" "$(cat last.out)" "bash, zsh and fish"

# complete WORDS...: the candidates bash offers for the last word, sorted,
# one a line (the last word may be empty: "tpuform ssh ''").
cat >complete.bash <<'SH'
. ./tpuform.bash
complete -p tpuform || exit 3
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
fn=$(complete -p tpuform | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
"$fn" tpuform "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}" | sort
SH
tab() {
	bash complete.bash "$@" 2>/dev/null | sed -n '/^complete -F/!p'
}

out=$(bash complete.bash tpuform ap 2>&1)
like "complete -p tpuform names a function" "$out" "^complete -F _tpuform tpuform$"
is "tpuform ap<TAB>: apply" "$(tab tpuform ap)" "apply"
want=$(tpuform help -commands | cut -f1 | grep -v ' ' | sort)
is "tpuform <TAB>: every visible command of the table" "$(tab tpuform '')" "$want"
want=$(tpuform apply -help | sed -n 's/^  \(-[a-z], \)\{0,1\}\(-re[a-z-]*\).*/\2/p' | sort)
is "tpuform apply -re<TAB>: the -re flags of 'apply -help'" "$(tab tpuform apply -re)" "$want"
like "  which are -refresh, -refresh-only and -replace" "$(tab tpuform apply -re | tr '\n' ' ')" \
	"^-refresh -refresh-only -replace $"
is "tpuform state <TAB>: its subcommands" "$(tab tpuform state '' | tr '\n' ' ')" \
	"$(tpuform help -commands | sed -n 's/^state \([a-z]*\)\t.*/\1/p' | sort | tr '\n' ' ')"
is "tpuform state rm -lo<TAB>: the subcommand's flags" "$(tab tpuform state rm -lo | tr '\n' ' ')" \
	"-lock -lock-timeout "
is "tpuform plan -refresh=<TAB>: true, false" "$(tab tpuform plan -refresh = '' | tr '\n' ' ')" \
	"false true "
is "tpuform help <TAB>: command names" "$(tab tpuform help pl)" "plan"

# -f: YAML files and directories, nothing else.
mkdir -p sub
: >other.yml
: >notes.txt
cat >fleet.yaml <<'YAML'
fleet: cpl
provider:
  local: { root: nodes, create_delay: 0.1s }
run: exec sleep 300
groups:
  - { name: alpha, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 2 }
  - { name: beta, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 0 }
YAML
is "tpuform plan -f <TAB>: YAML files and directories" "$(tab tpuform plan -f '' | tr '\n' ' ')" \
	"fleet.yaml other.yml sub "

# Node names come from the state.
is "before any apply, ssh <TAB> offers no node" "$(tab tpuform ssh -f fleet.yaml '')" ""
ok "apply the fleet" tpuform apply -f fleet.yaml -auto-approve
nodes=$(tpuform state list -f fleet.yaml | sort)
is "the state has two nodes" "$(printf '%s\n' "$nodes" | wc -l | tr -d ' ')" 2
is "tpuform ssh -f fleet.yaml <TAB>: the state's nodes" "$(tab tpuform ssh -f fleet.yaml '')" "$nodes"
is "tpuform logs -f=fleet.yaml cpl-alpha-1<TAB>" "$(tab tpuform logs -f = fleet.yaml cpl-alpha-1)" \
	"cpl-alpha-1"
is "tpuform plan -f fleet.yaml -target <TAB>: nodes and groups" \
	"$(tab tpuform plan -f fleet.yaml -target '' | tr '\n' ' ')" \
	"$(printf '%s\nalpha\nbeta\n' "$nodes" | sort | tr '\n' ' ')"
cp fleet.yaml tpuform.yaml
is "without -f: tpuform.yaml's nodes" "$(tab tpuform ssh '')" "$nodes"

# No network, and fast: a fleet whose provider and state are Cloud Storage
# and Cloud TPU at an address that drops packets still answers at once.
cat >gcs.yaml <<'YAML'
fleet: far
provider:
  gcp: { project: p, endpoint: "http://127.0.0.1:9" }
state:
  gcs: { bucket: far-bucket, endpoint: "http://127.0.0.1:9" }
run: exec sleep 300
groups:
  - { name: far-g, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
start=$(date +%s%N)
names=$(tpuform help -complete-names=gcs.yaml)
end=$(date +%s%N)
is "state in Cloud Storage: only the groups, no network" "$names" "$(printf 'far-g\tgroup')"
ms=$(((end - start) / 1000000))
echo "# complete-names took $ms ms"
# Not a speed test (the figure above is printed for the record; it is
# about 10 ms unloaded): a completion that asked the endpoint would spend
# the client's retries on it, seconds, so a bound of 1 s tells the two apart
# without failing on a loaded machine.
ok "and asks no endpoint ($ms ms, under 1 s)" test "$ms" -lt 1000
is "a missing fleet file: no names, no error" "$(tpuform help -complete-names=nothing.yaml 2>&1)" ""

if command -v zsh >/dev/null 2>&1; then
	tpuform help -completion=zsh >_tpuform
	ok "the zsh script parses" zsh -n _tpuform
else
	_n=$((_n + 1))
	echo "ok $_n # SKIP zsh is not installed"
fi

tpuform destroy -f fleet.yaml -auto-approve >/dev/null 2>&1
finish

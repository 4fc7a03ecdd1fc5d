#!/bin/sh
# Ten malformed fleet files: each gives one precise FILE:LINE:COL error on
# the real binary and exits 1, for validate and for plan alike.
. "$(dirname "$0")/lib.sh"
setup_dir t130
HEAD='fleet: bad
provider:
  local: { root: nodes }
run: echo hi'

check() { # $1 title, $2 expected message (fixed string), stdin: the file
	cat >bad.yaml
	fails "validate: $1" 1 tpuform validate -f bad.yaml
	_n=$((_n + 1))
	if grep -qF -- "$2" last.out; then echo "ok $_n - message: $1"; else
		echo "not ok $_n - message: $1"; echo "#   want: $2"; sed 's/^/#   | /' last.out; _fail=$((_fail + 1)); fi
	fails "plan refuses it too: $1" 1 tpuform plan -f bad.yaml
	ok "nothing was created: $1" test ! -e nodes -a ! -e tpuform.state.json
}

printf '%s\ngroups:\n  - name: a\n    acelerator_type: v2-8\n' "$HEAD" | check "misspelt key with a hint" \
	"bad.yaml:7:5: unknown key 'acelerator_type' in group 'a'; did you mean 'accelerator_type'?"
printf '%s\ngroups:\n  - { name: a, accelerator_type: v9-8, runtime_version: r, zones: [z], count: 1 }\n' "$HEAD" | check "unknown accelerator family" \
	"bad.yaml:6:34: 'accelerator_type' must be <family>-<size> with family v2, v3, v4, v5p, v5litepod or v6e, such as 'v4-16', got 'v9-8'"
printf '%s\ngroups:\n  - { name: a, accelerator_type: v4-12, runtime_version: r, zones: [z], count: 1 }\n' "$HEAD" | check "accelerator size the family lacks" \
	"bad.yaml:6:34: 'accelerator_type' must be v4-N with N a power of two from 8 to 4096, got 'v4-12'"
printf '%s\ngroups:\n  - { name: a, accelerator_type: v2-8, runtime_version: r, zones: [z], count: many }\n' "$HEAD" | check "count not a number" \
	"'count' must be a whole number >= 0, got 'many'"
printf '%s\ngroups:\n  - { name: a, accelerator_type: v2-8, zones: [z], count: 1 }\n' "$HEAD" | check "missing runtime_version" \
	"bad.yaml:6:5: group 'a' is missing required key 'runtime_version'"
printf '%s\ngroups:\n  - { name: a, accelerator_type: v2-8, runtime_version: r, zones: [z], count: 1, preemptible: true, spot: true }\n' "$HEAD" | check "preemptible and spot together" \
	"bad.yaml:6:107: group 'a' sets both 'preemptible' and 'spot'; choose one"
printf 'fleet: bad\nprovider:\n  local: { root: nodes }\nrun: echo hi\ngroups:\n  - name: a\n\taccelerator_type: v2-8\n' | check "tab indentation" \
	"bad.yaml:7:1: invalid YAML"
printf '%s\ngroups:\n  - { name: a, accelerator_type: v2-8, runtime_version: r, zones: [z], count: 1, labels: { tpuform-fleet: x } }\n' "$HEAD" | check "reserved label" \
	"tpuform-fleet"
printf 'fleet: Bad_Name\nprovider:\n  local: { root: nodes }\nrun: echo hi\ngroups:\n  - { name: a, accelerator_type: v2-8, runtime_version: r, zones: [z], count: 1 }\n' | check "fleet name" \
	"bad.yaml:1:8: 'fleet' must be a name of at most 40 lowercase letters, digits and '-', starting with a letter, got 'Bad_Name'"
printf '%s\nrestart: sometimes\ngroups:\n  - { name: a, accelerator_type: v2-8, runtime_version: r, zones: [z], count: 1 }\n' "$HEAD" | check "restart policy" \
	"bad.yaml:5:10: 'restart' must be one of always, on-failure or never, got 'sometimes'"
printf '%s\ngroups:\n  - { name: a, accelerator_type: v2-8, runtime_version: r, zones: [z], count: 1 }\n  - { name: a, accelerator_type: v2-8, runtime_version: r, zones: [z], count: 1 }\n' "$HEAD" | check "duplicate group" \
	"bad.yaml:7"
printf 'fleet: bad\nprovider: [\n' | check "broken YAML syntax" \
	"bad.yaml:3:1: invalid YAML"
fails "a missing fleet file is an error" 1 tpuform plan -f nope.yaml
like "that says so" "$(cat last.out)" "fleet file 'nope.yaml' does not exist"

# Hostile and oversized input (issue 9): refused at once, never read whole.
# `timeout` only guards against a hang; the figures are in make bench.
fails "an endless fleet file (/dev/zero) is refused" 1 timeout 20 "$TPUFORM" validate -f /dev/zero
like "with the size limit" "$(cat last.out)" "fleet file '/dev/zero' is larger than 16 MiB"
awk 'BEGIN { printf "fleet: deep\nx: "; for (i = 0; i < 100000; i++) printf "["; for (i = 0; i < 100000; i++) printf "]"; print "" }' >deep.yaml
fails "a 100,000-deep document is refused" 1 timeout 20 "$TPUFORM" validate -f deep.yaml
like "at the first level too deep" "$(cat last.out)" "deep.yaml:2:67: nesting deeper than 64 levels"
big=$(awk 'BEGIN { for (i = 0; i < 200000; i++) printf "x" }')
printf '%s\nenv: { BIG: %s }\ngroups:\n  - { name: a, accelerator_type: v2-8, runtime_version: r, zones: [z], count: 1 }\n' "$HEAD" "$big" | check "a 200 KB env value no worker's execve takes" \
	"env 'BIG' (NAME=value) is 200005 bytes; a worker accepts at most 131072"
printf '%s\nzones: [z]\ngroups:\n  - { name: a, accelerator_type: v2-8, runtime_version: r, zones: [z], count: 1 }\n' "$HEAD" | check "a group's key at top level" \
	"bad.yaml:5:8: 'zones' belongs in a group, not at top level"
finish

#!/bin/sh
# Output that cannot be written is an error, as git's: a failed write or
# close of stdout (here /dev/full: ENOSPC) ends with exit 1 and a message on
# stderr, whatever the command would have returned. A pipe whose reader
# left early is not an error (as git), nor is a file that takes it all.
. "$(dirname "$0")/lib.sh"
setup_dir t205

if ! [ -w /dev/full ] || printf x 2>/dev/null >/dev/full; then
	echo "1..0 # SKIP no /dev/full (a device whose writes fail with ENOSPC) here"
	exit 0
fi

cat >fleet.yaml <<YAML
fleet: oe
provider:
  local: { root: nodes, create_delay: 0s }
run: exec sleep 300
groups:
  - name: a
    accelerator_type: v2-8
    runtime_version: tpu-ubuntu2204-base
    zones: [z1]
    count: 1
YAML

# $1 = title, then the command: it must exit 1 with the message on stderr.
full() {
	title=$1
	shift
	"$@" >/dev/full 2>"$W/err.out"
	is "$title > /dev/full exits 1" "$?" 1
	# git's words: the reason when the last flush failed, "unknown" when an
	# earlier write did (stdio keeps no errno)
	is "$title: stderr says why, once" "$(grep -cE \
		'^Error: (write failure on standard output: No space left on device|unknown write failure on standard output)$' \
		"$W/err.out")" 1
}

full "version" tpuform version
full "-version" tpuform -version
full "help" tpuform help
full "help plan" tpuform help plan
full "plan" tpuform plan -f fleet.yaml
full "plan -detailed-exitcode (2 when written)" tpuform plan -f fleet.yaml -detailed-exitcode
full "plan -json" tpuform plan -f fleet.yaml -json
full "validate -json" tpuform validate -f fleet.yaml -json

# The same commands, written: no change.
ok "version to a file exits 0" tpuform version
like "and prints the version" "$(cat last.out)" "^tpuform v[0-9]"
fails "plan -detailed-exitcode to a file still exits 2" 2 tpuform plan -f fleet.yaml -detailed-exitcode
ok "nothing was applied by the plans" test ! -d nodes/nodes
# A reader that left before the write: EPIPE (SIGPIPE is ignored) is not an
# error, as git.
{
	sleep 0.3
	tpuform help 2>"$W/pipe.err"
	echo $? >"$W/pipe.rc"
} | true
is "help into a pipe whose reader left exits 0" "$(cat "$W/pipe.rc")" 0
ok "with nothing on stderr" test ! -s "$W/pipe.err"
finish

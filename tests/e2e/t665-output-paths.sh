#!/bin/sh
# Output paths (issue 26): `report -html /dev/full` said "Wrote the
# report's page" and renamed a regular file over /dev/full; `ssh-config
# -out /nonexistent/x` created /nonexistent. util/outfile.h's rule: a
# device, a FIFO or a link to one is written in place, never replaced; a
# write error fails the command; a missing parent directory is an error,
# never created. For report -html, plan -out, ssh-config -out and cp's
# downloads.
# The devices are reached through links in this test's directory: a
# broken binary replaces the link, never /dev/null; /dev/full itself is
# named only once the links showed the binary keeps them.
# Local provider only: no sshd, no loopback block.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
setup_dir t665
cat >fleet.yaml <<'YAML'
fleet: opath
provider:
  local: { root: nodes, create_delay: 0.1s }
run: exec sleep 3000
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1 }
YAML
# is_dev_link LINK: LINK is still a symbolic link, to a character device.
is_dev_link() { [ -L "$1" ] && [ -c "$1" ]; }

ln -s /dev/null to-null
ok "report -html through a link to /dev/null" tpuform report -f fleet.yaml -html to-null
ok "  the link is still a link to a character device" is_dev_link to-null
ok "  /dev/null is still a character device" test -c /dev/null

ln -s /dev/full to-full
fails "report -html through a link to /dev/full fails" 1 tpuform report -f fleet.yaml -html to-full
like "  with the write's error and the path" "$(cat last.out)" "cannot write 'to-full': No space left on device"
unlike "  and does not say it wrote the page" "$(cat last.out)" "Wrote the report's page"
ok "  the link is still a link to a character device" is_dev_link to-full
if is_dev_link to-full && is_dev_link to-null; then
	fails "report -html /dev/full fails" 1 tpuform report -f fleet.yaml -html /dev/full
	like "  No space left on device" "$(cat last.out)" "cannot write '/dev/full': No space left on device"
	ok "  /dev/full is still a character device" test -c /dev/full
else
	fails "report -html /dev/full is not tried: the links were replaced" 0 false
fi

# A FIFO: written in place, read by its reader, still a FIFO after.
mkfifo pipe
cat pipe >from-pipe &
reader=$!
ok "report -html into a FIFO" tpuform report -f fleet.yaml -html pipe
ok "  its reader got the page" wait_for 30 grep -q '</html>' from-pipe
kill "$reader" 2>/dev/null
ok "  it is still a FIFO" test -p pipe

fails "report -html into a missing directory fails" 1 tpuform report -f fleet.yaml -html nodir/page.html
like "  says the directory does not exist" "$(cat last.out)" "the directory 'nodir' does not exist"
ok "  and does not create it" test ! -e nodir
fails "plan -out into a missing directory fails" 1 tpuform plan -f fleet.yaml -out=nodir/x.plan
ok "  and does not create it" test ! -e nodir

ok "apply" tpuform apply -f fleet.yaml -auto-approve
fails "ssh-config -out into a missing directory fails" 1 tpuform ssh-config -f fleet.yaml -out nodir/cfg
ok "  and does not create it" test ! -e nodir
ok "cp up a file" tpuform cp -f fleet.yaml fleet.yaml opath-a-0:cfg.yaml
fails "cp down into a directory whose parent is missing fails" 1 \
	tpuform cp -f fleet.yaml opath-a-0:cfg.yaml nodir/down/
like "  says so" "$(cat last.out)" "the directory 'nodir' does not exist"
ok "  and creates nothing" test ! -e nodir
mkdir -p down/opath-a-0/w0
ln -s /dev/null down/opath-a-0/w0/cfg.yaml
ok "cp down where worker 0's file is a link to /dev/null" tpuform cp -f fleet.yaml opath-a-0:cfg.yaml down
ok "  the link is kept" is_dev_link down/opath-a-0/w0/cfg.yaml
ok "  worker 1's copy is a file" cmp fleet.yaml down/opath-a-0/w1/cfg.yaml
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

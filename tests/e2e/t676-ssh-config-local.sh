#!/bin/sh
# ssh-config on a fleet with no SSH host (issue 26 item 10): the local
# provider's workers are directories, so ssh-config says so once, for the
# fleet (not a warning per worker), exits 1 and writes no file.
# Local provider only: no loopback block.
. "$(dirname "$0")/lib.sh"
setup_dir t676
cat >fleet.yaml <<'YAML'
fleet: t676
provider:
  local: { root: nodes, create_delay: 0.1s }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 2 }
YAML
mkdir home
export HOME="$W/home"
ok "apply: two nodes of two workers" tpuform apply -f fleet.yaml -auto-approve
fails "ssh-config on the local provider's workers fails" 1 tpuform ssh-config -f fleet.yaml
like "saying why, for the fleet" "$(cat last.out)" "Error: fleet 't676' uses the local provider, whose 4 workers are directories on this machine, not SSH hosts"
is "once: one diagnostic, not one per worker" "$(grep -c '│ \(Error\|Warning\):' last.out)" 1
unlike "and prints no config" "$(cat last.out)" "^# Generated"
fails "-out FILE fails the same way" 1 tpuform ssh-config -f fleet.yaml -out x.cfg
ok "and writes no file" test ! -e x.cfg -a ! -e x.cfg.known_hosts
fails "-install too" 1 tpuform ssh-config -f fleet.yaml -install
ok "installs nothing" test ! -e home/.ssh/config -a ! -e home/.ssh/tpuform/t676.config
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

#!/bin/sh
# The everyday chores on a gcp 2-worker node whose workers are sshd VMs
# (tests/e2e/gcp_workers.sh), over libssh2: cp up and back over SFTP, exec
# with stdin, streaming and Ctrl-C (setsid and a kill over a second
# channel), ssh -L over direct-tcpip channels, ssh -- CMD, and ssh-config
# for a plain ssh(1) (tests/e2e/chores_check.sh).
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
. "$TOP/tests/e2e/chores_check.sh"
setup_dir t475
export TPUFORM_SSH_RETRY=3
gcp_workers_start 2 127.0.47.1 --op-seconds 0.1
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
cat >fleet.yaml <<YAML
fleet: cg
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
run: exec sleep 3000
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1 }
YAML
ok "apply" tpuform apply -f fleet.yaml -auto-approve
chores_checks cg-a-0
finish

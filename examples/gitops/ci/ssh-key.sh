#!/bin/sh
# Write the deploy key that fleet.yaml's ssh.private_key names
# (~/.ssh/tpuform) from the CI secret TPUFORM_SSH_KEY (an OpenSSH private
# key, e.g. `ssh-keygen -t ed25519 -N '' -f tpuform`). tpuform sends its
# public half to the nodes (metadata ssh-keys or OS Login) and reaches the
# workers with it; the same key on every runner keeps the nodes' metadata
# unchanged from run to run.
#
#   sh ci/ssh-key.sh
set -eu
: "${TPUFORM_SSH_KEY:?set the secret TPUFORM_SSH_KEY to the deploy key (a private key)}"
umask 077
mkdir -p "$HOME/.ssh"
printf '%s\n' "$TPUFORM_SSH_KEY" >"$HOME/.ssh/tpuform"
echo "ssh-key: wrote $HOME/.ssh/tpuform"

#!/bin/sh
# Secrets stay secret over SSH (docs/security.md "Security"): the gcp provider
# against the Cloud TPU emulator, whose workers are real sshd "VMs" on this
# machine (tests/e2e/gcp_workers.sh). During plan -out and apply, under
# umask 000, a distinctive secret is in no process's argv, here or on the
# workers (sampled from /proc/*/cmdline: the workers' processes are ours to
# see), in no request sent to the Cloud TPU API (the emulator's request log:
# metadata, labels), in no -json stream, state or saved plan; each worker's
# secrets file is 0600 and the job reads the value intact.
# shellcheck disable=SC2016 # $vars in single quotes are for the workers' shell
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
. "$TOP/tests/e2e/argv_sampler.sh"
setup_dir t630
umask 000
export TPUFORM_SSH_RETRY=2
gcp_workers_start 2 127.0.63.1 --op-seconds 0.1 --log "$W/requests.jsonl"
SECRET="tpf-SshSec-$$-Kx4Rw"
export T620_TOKEN="$SECRET"
cat >fleet.yaml <<YAML
fleet: ss
provider:
  gcp: { project: test-project, endpoint: "http://127.0.0.1:$FAKEGCP_PORT" }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT }
secrets: { TOKEN: "\${T620_TOKEN}" }
run: |
  printf '%s' "\$TOKEN" > ~/secret.out
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1 }
YAML
argv_sample_start "$W/argv.txt"
# A control: an argument that the sampler must see.
sh -c 'sleep 0.5' "t630-canary-$$"
ok "plan -out" sh -c "'$TPUFORM' plan -f fleet.yaml -out=saved.plan >plan.out 2>&1"
is "the saved plan is 0600 under umask 000" "$(stat -c %a saved.plan)" 600
ok "apply -json of the saved plan" sh -c "'$TPUFORM' apply -f fleet.yaml -json saved.plan >apply.json 2>&1"
wait_for 20 sh -c "test -s '$(sshd_home 0)/secret.out' && test -s '$(sshd_home 1)/secret.out'"
argv_sample_stop
for i in 0 1; do
	is "worker $i: the job read the secret intact" "$(cat "$(sshd_home "$i")/secret.out")" "$SECRET"
	is "worker $i: secrets.env is 0600" "$(stat -c %a "$(sshd_home "$i")/tpuform/secrets.env")" 600
done
is "the state is 0600 under umask 000" "$(stat -c %a tpuform.state.json)" 600
is "the lock file is 0600" "$(stat -c %a tpuform.state.json.lock)" 600
like "the sampler took several samples of /proc ($ARGV_SAMPLES)" "$ARGV_SAMPLES" '^([3-9]|[1-9][0-9]+)$'
like "and saw the workers' processes" "$(grep -c 'bootstrap\.sh' argv.txt)" '^[1-9]'
like "the sampler sees other processes' arguments (a control)" "$(grep -c '^t630-canary-' argv.txt)" '^[1-9]'
is "no process, here or on a worker, had the secret in its argv" "$(grep -cF -- "$SECRET" argv.txt)" 0
like "the emulator logged the API requests" "$(grep -c . requests.jsonl)" '^[1-9]'
is "no request to the Cloud TPU API carried the secret" "$(grep -cF -- "$SECRET" requests.jsonl)" 0
for f in plan.out saved.plan apply.json tpuform.state.json; do
	ok "$f holds no secret" sh -c "test -s '$f' && ! grep -qF -- \"\$T620_TOKEN\" '$f'"
done
leaks=$(grep -rlF -- "$SECRET" . | grep -vE '^\./argv\.txt$|/home/secret\.out$|/home/tpuform/secrets\.env$' || true)
is "no other file holds the secret" "$leaks" ""
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish

#!/bin/sh
# Secrets reach the job through a 0600 env file and appear nowhere else:
# not in output, not in state, not in the rendered script, not in plans.
. "$(dirname "$0")/lib.sh"
setup_dir t120
# shellcheck disable=SC2016,SC2089 # $(...) and quotes are part of the value: nothing may run them
SECRET='s3cr3t-$(touch pwned)-`id`-'"'"'quoted'"'"'-value'
export MY_TOKEN="$SECRET"
cat >fleet.yaml <<'YAML'
fleet: sec
provider:
  local: { root: nodes, create_delay: 0.2s }
secrets:
  API_TOKEN: "${MY_TOKEN}"
run: printf '%s\n' "token=$API_TOKEN" >"$TPUFORM_BUCKET/seen"; exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
mkdir -p nodes/bucket
tpuform plan -f fleet.yaml >plan.out 2>&1
like "plan shows the secret as sensitive" "$(cat plan.out)" "secrets += \(sensitive value\)"
ok "apply" tpuform apply -f fleet.yaml -auto-approve
cp last.out apply.out
wait_for 10 test -s nodes/bucket/seen
is "the job sees the secret byte for byte" "$(cat nodes/bucket/seen)" "token=$SECRET"
ok "nothing in the secret was executed" test ! -e pwned -a ! -e nodes/nodes/sec-a-0/workers/0/pwned -a ! -e nodes/nodes/sec-a-0/workers/0/tpuform/src/pwned
tpuform plan -f fleet.yaml -out=saved.plan >/dev/null 2>&1
tpuform show -f fleet.yaml -json >show.json 2>&1
tpuform plan -f fleet.yaml -json >plan.json 2>&1
tpuform logs -f fleet.yaml sec-a-0 >logs.out 2>&1
for f in plan.out apply.out saved.plan show.json plan.json logs.out tpuform.state.json nodes/nodes/sec-a-0/workers/0/tpuform/bootstrap.sh; do
	ok "the secret is not in $f" sh -c "test -s '$f' && ! grep -qF -- 's3cr3t' '$f'"
done
ok "the state keeps a hash of the secrets" grep -q '"secrets_hash": "sha256:' tpuform.state.json
perm=$(stat -c %a nodes/nodes/sec-a-0/workers/0/tpuform/secrets.env)
is "the secrets file on the worker is mode 0600" "$perm" 600
is "the state file is mode 0600" "$(stat -c %a tpuform.state.json)" 600
# shellcheck disable=SC2090 # MY_TOKEN held $SECRET, quotes included, on purpose
export MY_TOKEN="rotated-value"
out=$(tpuform plan -f fleet.yaml)
like "a changed secret re-provisions (shown as sensitive)" "$out" "~ secrets += \(sensitive value\)"
unlike "without showing it" "$out" "rotated-value"
unset MY_TOKEN
fails "an unset secret variable is an error" 1 tpuform plan -f fleet.yaml
like "naming the variable" "$(cat last.out)" "fleet.yaml:5:14: secret 'API_TOKEN' needs environment variable 'MY_TOKEN', which is not set"
# Only commands that render scripts need the secrets' variables (issue 9).
ok "show works without the secret's variable" tpuform show -f fleet.yaml
ok "logs works without it" tpuform logs -f fleet.yaml sec-a-0
ok "state list works without it" tpuform state list -f fleet.yaml
ok "exec works without it" tpuform exec -f fleet.yaml sec-a-0 -- true
export MY_TOKEN=""
fails "an empty variable counts as unset" 1 tpuform plan -f fleet.yaml
like "and says it is empty" "$(cat last.out)" "needs environment variable 'MY_TOKEN', which is empty"
unset MY_TOKEN
ok "destroy needs no secrets" tpuform destroy -f fleet.yaml -auto-approve
like "and destroyed the node" "$(cat last.out)" "Destroy complete! Resources: 1 destroyed"
# shellcheck disable=SC2016 # the literal text ${MY_TOKEN} is what sed rewrites
sed 's/"${MY_TOKEN}"/"$MY_TOKEN"/' fleet.yaml >braces.yaml
fails "\$VAR without braces is an error" 1 tpuform validate -f braces.yaml
like "with a hint" "$(cat last.out)" "refers to \\\$MY_TOKEN without braces"
finish

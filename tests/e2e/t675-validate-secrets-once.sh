#!/bin/sh
# Messages that say what is true, once (issue 26 item 10), against the
# emulator (no workers, so no loopback block):
#   - validate warns of a secret whose environment variable is not set
#     (plan refuses the file then); validate -remote refuses it (exit 1, no
#     "Success!"), as plan does;
#   - a diagnostic met by every zone's list (no credentials, three zones)
#     is printed once by plan and by validate -remote (util/diag.c keeps
#     equal diagnostics once);
#   - validate -json carries the warning.
# shellcheck disable=SC2016 # ${T675_*} in the fleet file is tpuform's to expand
. "$(dirname "$0")/lib.sh"
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
setup_dir t675
fakegcp_start --project test-project || exit 1
trap 'fakegcp_stop >/dev/null 2>&1' EXIT
export TPUFORM_ACCESS_TOKEN=test-token
unset T675_TOKEN
cat >fleet.yaml <<'YAML'
fleet: t675
provider:
  gcp: { project: test-project }
secrets:
  API_TOKEN: "${T675_TOKEN}"
run: exec sleep 300
groups:
  - name: a
    accelerator_type: v2-8
    runtime_version: tpu-ubuntu2204-base
    zones: [z1, z2, z3]
    count: 1
YAML
MISSING="fleet.yaml:5:14: secret 'API_TOKEN' needs environment variable 'T675_TOKEN', which is not set"

# ---- a secret's variable: what plan refuses, validate says ---------------------
fails "plan refuses the missing secret's variable" 1 tpuform plan -f fleet.yaml
like "naming it" "$(cat last.out)" "Error: $MISSING"
is "once" "$(grep -c 'secret .API_TOKEN. needs' last.out)" 1
ok "validate: the file is valid (Terraform's validate reads no variable's value)" tpuform validate -f fleet.yaml
like "but it warns that plan refuses it" "$(cat last.out)" "Warning: $MISSING"
like "saying so" "$(cat last.out)" "plan and apply refuse the file until it is set"
fails "validate -remote refuses it, as plan would" 1 tpuform validate -remote -f fleet.yaml
like "as an error" "$(cat last.out)" "Error: $MISSING"
unlike "with no Success!" "$(cat last.out)" "Success!"
is "printed once" "$(grep -c 'secret .API_TOKEN. needs' last.out)" 1
tpuform validate -json -f fleet.yaml >v.json 2>&1
is "validate -json: valid, with the warning" \
	"$(jq -r '"\(.valid) \(.warning_count) \(.diagnostics[0].severity)"' v.json)" "true 1 warning"
export T675_TOKEN=set
ok "validate -remote passes once it is set" tpuform validate -remote -f fleet.yaml
unlike "without the warning" "$(cat last.out)" "Warning"

# ---- no credentials: one error, not one per zone --------------------------------
mkdir home
# shellcheck disable=SC2317 # called through fails
nocreds() {
	env -u TPUFORM_ACCESS_TOKEN -u GOOGLE_APPLICATION_CREDENTIALS -u CLOUDSDK_CONFIG \
		HOME="$W/home" GCE_METADATA_HOST=127.0.0.1:9 TPUFORM_GCP_TRIES=1 "$TPUFORM" "$@"
}
fails "plan without credentials" 1 nocreds plan -f fleet.yaml
like "says why" "$(cat last.out)" "Error: .*access token from the metadata server"
is "once, not once per zone" "$(grep -c 'Error:' last.out)" 1
# libcurl's "after N ms" differed between the zones' requests under load,
# so the same failure read as several errors
unlike "without the connect's elapsed time" "$(cat last.out)" "after [0-9]+ ms"
fails "validate -remote without credentials" 1 nocreds validate -remote -f fleet.yaml
is "once too" "$(grep -c 'Error:' last.out)" 1
finish

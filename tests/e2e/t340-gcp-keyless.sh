#!/bin/sh
# Keyless credentials against the emulator's Security Token Service and IAM
# Credentials endpoints (tests/fakegcp fg_sts.c, fg_iam.c), with --auth token
# so that only tokens the emulator issued work:
#  - an external_account file (subject token from a file) with service
#    account impersonation drives a full apply on sshd workers; the
#    emulator accepts only an STS token as the impersonation caller, and
#    only API calls carrying x-goog-user-project (the file's quota project);
#  - the GitHub Actions form (subject token from a URL with an Authorization
#    header, JSON field "value");
#  - a watch through several token lifetimes shows no authentication error
#    and gets no 401 at all: tokens are refreshed before they expire. By
#    default 6 s tokens for 18 s (three lifetimes); T340_TOKEN_TTL=60
#    T340_WATCH_SECONDS=180 runs the issue's 3 minutes on 60 s tokens;
#  - refusals: a wrong subject token, a missing quota project, credential
#    URLs outside Google's hosts (nothing is sent anywhere);
#  - impersonation from every other source (service account key, metadata
#    server, TPUFORM_ACCESS_TOKEN), and TPUFORM_ACCESS_TOKEN saying that it
#    cannot be refreshed once its token is revoked.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t340
TTL=${T340_TOKEN_TTL:-6}
WATCH=${T340_WATCH_SECONDS:-18}
AUD=//iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/ci/providers/github
SA=deployer@test-project.iam.gserviceaccount.com
OIDC=eyJhbGciOiJSUzI1NiJ9.OIDC-SUBJECT-TOKEN-t340.c2lnbmF0dXJl
REQ=GITHUB-REQUEST-TOKEN-t340
gcp_workers_start 6 127.0.34.1 --project test-project --op-seconds 0.2 --auth token \
	--token-ttl "$TTL" --wif-audience "$AUD" --wif-subject-token "$OIDC" \
	--oidc-request-token "$REQ" --impersonate-sa "$SA" --impersonate-caller sts \
	--require-user-project billing-proj
unset TPUFORM_ACCESS_TOKEN
EMU="--project test-project --op-seconds 0.2 --worker-ip-base 127.0.34.1 --worker-port $SSHD_PORT --worker-dir $SSHD_DIR"
reqs() { curl -s "$FAKEGCP_URL/__admin/requests"; }
# count METHOD PATH-REGEX STATUS: requests seen by the emulator
count() { reqs | jq --arg m "$1" --arg p "$2" --argjson s "$3" \
	'[.[] | select(.method == $m and (.path | test($p)) and .status == $s)] | length'; }
summary() { curl -s "$FAKEGCP_URL/__admin/nodes" | jq -r '.[] | (.name | split("/")) as $p | "\($p[5]):\(.state)"' | sort | tr '\n' ' '; }
IMP="/v1/projects/-/serviceAccounts/$SA:generateAccessToken"

printf '%s\n' "$OIDC" >oidc.token
jq -n --arg aud "$AUD" --arg url "$FAKEGCP_URL" --arg sa "$SA" --arg tok "$W/oidc.token" \
	'{type: "external_account", audience: $aud,
	  subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
	  token_url: ($url + "/v1/token"),
	  service_account_impersonation_url: ($url + "/v1/projects/-/serviceAccounts/" + $sa + ":generateAccessToken"),
	  credential_source: {file: $tok}, quota_project_id: "billing-proj"}' >wif.json
cat >fleet.yaml <<YAML
fleet: kl
provider:
  gcp: { project: test-project, credentials: wif.json }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 2 }
YAML

ok "apply with an external_account file and impersonation" "$TPUFORM" apply -f fleet.yaml -auto-approve
cp last.out apply.out
like "it completes" "$(cat apply.out)" "Apply complete! Resources: 2 added, 0 changed, 0 destroyed\."
is "both nodes are READY" "$(summary)" "kl-a-0:READY kl-a-1:READY "
ok "the subject token was exchanged at STS" test "$(count POST '^/v1/token$' 200)" -ge 1
ok "and the STS token impersonated the service account" test "$(count POST "^$IMP\$" 200)" -ge 1
is "no API call was refused (401 or 403)" \
	"$(reqs | jq '[.[] | select((.path | startswith("/v2/")) and (.status == 401 or .status == 403))] | length')" 0
for f in apply.out tpuform.state.json; do
	ok "no subject token or access token in $f" \
		sh -c "! grep -q -e 'OIDC-SUBJECT-TOKEN' -e 'ya29\.' -e '$REQ' '$f'"
done

# GitHub Actions' credentials file: URL source with a header, JSON field "value"
jq --arg url "$FAKEGCP_URL/oidc/idtoken?api-version=2.0&audience=https%3A%2F%2Fiam.googleapis.com" \
	--arg req "Bearer $REQ" \
	'.credential_source = {url: $url, headers: {Authorization: $req},
	  format: {type: "json", subject_token_field_name: "value"}}' wif.json >gh.json
sed 's|credentials: wif.json|credentials: gh.json|' fleet.yaml >gh.yaml
curl -s -X POST -o /dev/null "$FAKEGCP_URL/__admin/requests:clear"
ok "plan with the GitHub Actions form (URL source)" "$TPUFORM" plan -f gh.yaml
like "nothing to change" "$(cat last.out)" "No changes"
is "the ID token was fetched once with the request token" "$(count GET '^/oidc/idtoken$' 200)" 1
jq '.credential_source.headers.Authorization = "Bearer wrong"' gh.json >gh-bad.json
sed 's|credentials: wif.json|credentials: gh-bad.json|' fleet.yaml >gh-bad.yaml
fails "a refused ID-token request fails the plan" 1 "$TPUFORM" plan -f gh-bad.yaml
like "naming the source URL, not its query or header" "$(cat last.out)" \
	"get the subject token from '$FAKEGCP_URL/oidc/idtoken' \(credential_source.url in '.*gh-bad.json'\): HTTP 401"
unlike "the request token is not printed" "$(cat last.out)" "$REQ|Bearer wrong"

# watch through several token lifetimes: refreshed in time, never a 401
curl -s -X POST -o /dev/null "$FAKEGCP_URL/__admin/requests:clear"
INTERVAL=$(awk -v t="$TTL" 'BEGIN { printf "%g", t / 6 }')
ROUNDS=$(awk -v w="$WATCH" -v i="$INTERVAL" 'BEGIN { printf "%d", w / i }')
start=$(date +%s)
"$TPUFORM" watch -f fleet.yaml -rounds "$ROUNDS" -interval "${INTERVAL}s" -session-check "${INTERVAL}s" >watch.out 2>&1
rc=$?
took=$(($(date +%s) - start))
is "watch ($ROUNDS rounds of ${INTERVAL}s on ${TTL}s tokens, ${took}s) exits 0" "$rc" 0
ok "it ran through at least $((WATCH * 9 / 10))s, several token lifetimes" test "$took" -ge $((WATCH * 9 / 10))
unlike "watch shows no authentication error" "$(cat watch.out)" "401|UNAUTHENTICATED|PERMISSION_DENIED|access token|Error"
is "the emulator answered no API call with 401" "$(count GET '^/v2/' 401)" 0
EXCH=$(count POST '^/v1/token$' 200)
ok "tokens were exchanged again as they aged ($EXCH exchanges in $ROUNDS rounds)" \
	test "$EXCH" -ge $((WATCH / TTL))
ok "and impersonated again" test "$(count POST "^$IMP\$" 200)" -ge $((WATCH / TTL))
ok "but reused between rounds until their refresh time" test "$EXCH" -lt "$ROUNDS"
ok "every round listed the nodes" test "$(count GET '^/v2/projects/test-project/locations/z1/nodes$' 200)" -ge "$ROUNDS"

# a subject token the provider does not accept
printf 'not-the-token\n' >bad.token
sed "s|$W/oidc.token|$W/bad.token|" wif.json >badsub.json
sed 's|credentials: wif.json|credentials: badsub.json|' fleet.yaml >badsub.yaml
fails "a refused subject token fails the plan" 1 "$TPUFORM" plan -f badsub.yaml
like "with STS's error and a hint" "$(cat last.out)" \
	"exchange the subject token at '$FAKEGCP_URL/v1/token' for .*badsub.json: HTTP 400 invalid_grant"
like "the hint names the provider's checks" "$(cat last.out)" "attribute condition"

# the quota project: the API wants it; the fleet file can set it
jq 'del(.quota_project_id)' wif.json >noquota.json
sed 's|credentials: wif.json|credentials: noquota.json|' fleet.yaml >noquota.yaml
fails "without a quota project the API refuses" 1 "$TPUFORM" plan -f noquota.yaml
like "with the API's words" "$(cat last.out)" "HTTP 403 PERMISSION_DENIED: .*requires a quota project"
sed 's|credentials: noquota.json|credentials: noquota.json, quota_project: billing-proj|' noquota.yaml >fleetquota.yaml
ok "provider.gcp.quota_project supplies it" "$TPUFORM" plan -f fleetquota.yaml
ok "so does GOOGLE_CLOUD_QUOTA_PROJECT" env GOOGLE_CLOUD_QUOTA_PROJECT=billing-proj "$TPUFORM" plan -f noquota.yaml

# a credentials file cannot send tokens anywhere else: refused before any request
curl -s -X POST -o /dev/null "$FAKEGCP_URL/__admin/requests:clear"
jq '.token_url = "https://sts.googleapis.com.attacker.example/v1/token"' wif.json >evil1.json
jq --arg sa "$SA" '.service_account_impersonation_url = ("https://attacker.example/v1/projects/-/serviceAccounts/" + $sa + ":generateAccessToken")' wif.json >evil2.json
jq '.token_url = "http://10.1.2.3/v1/token"' wif.json >evil3.json
for e in evil1 evil2 evil3; do
	sed "s|credentials: wif.json|credentials: $e.json|" fleet.yaml >$e.yaml
	fails "$e.json is refused" 1 "$TPUFORM" plan -f $e.yaml
	cp last.out $e.out
done
like "token_url outside Google's STS hosts" "$(cat evil1.out)" \
	"token_url in '.*evil1.json' 'https://sts.googleapis.com.attacker.example/v1/token' points at host 'sts.googleapis.com.attacker.example', which is not a Google Security Token Service host"
like "impersonation URL outside Google's IAM hosts" "$(cat evil2.out)" "which is not a Google IAM Credentials host"
like "plain http to a non-loopback host" "$(cat evil3.out)" "uses scheme 'http' with host '10.1.2.3'"
is "nothing was sent, not even the subject token" "$(reqs | jq 'length')" 0

ok "destroy with the external account" "$TPUFORM" destroy -f fleet.yaml -auto-approve
is "nothing left" "$(summary)" ""

# impersonation from every other source: a new emulator that lets any
# token it issued impersonate, and needs no quota project
fakegcp_stop
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.pem 2>/dev/null
openssl pkey -in sa.pem -pubout -out sa.pub 2>/dev/null
# shellcheck disable=SC2086
if ! fakegcp_start $EMU --auth token --sa-public-key sa.pub --impersonate-sa "$SA"; then
	echo "not ok - the emulator starts again"
	finish
fi
jq -n --rawfile k sa.pem --arg uri "$FAKEGCP_URL/token" \
	'{type:"service_account", private_key_id:"k1", private_key:$k,
	  client_email:"ci@test-project.iam.gserviceaccount.com", token_uri:$uri}' >key.json
export TPUFORM_IAMCREDENTIALS_ENDPOINT="$FAKEGCP_URL"
cat >imp.yaml <<YAML
fleet: kl
provider:
  gcp: { project: test-project, credentials: key.json, impersonate_service_account: $SA }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1 }
YAML
ok "apply: a service account key impersonating another account" "$TPUFORM" apply -f imp.yaml -auto-approve
like "it completes" "$(cat last.out)" "Apply complete! Resources: 1 added"
is "the key's token was the caller" "$(count POST '^/token$' 200)" 1
ok "impersonation gave the API's token" test "$(count POST "^$IMP\$" 200)" -ge 1
sed 's|credentials: key.json, ||' imp.yaml >md.yaml
ok "the metadata server's token as the caller" env GCE_METADATA_HOST="127.0.0.1:$FAKEGCP_PORT" \
	"$TPUFORM" plan -f md.yaml
is "it asked the metadata server" \
	"$(count GET '^/computeMetadata/v1/instance/service-accounts/default/token$' 200)" 1
MDTOK=$(curl -s -H 'Metadata-Flavor: Google' "$FAKEGCP_URL/computeMetadata/v1/instance/service-accounts/default/token" | jq -r .access_token)
sed 's|, credentials: key.json, impersonate_service_account: [^ ]*||' imp.yaml >plain.yaml
ok "TPUFORM_ACCESS_TOKEN with TPUFORM_IMPERSONATE_SERVICE_ACCOUNT" \
	env TPUFORM_ACCESS_TOKEN="$MDTOK" TPUFORM_IMPERSONATE_SERVICE_ACCOUNT="$SA" "$TPUFORM" plan -f plain.yaml
curl -s -X POST -o /dev/null "$FAKEGCP_URL/__admin/tokens:revoke"
fails "once its token is revoked, impersonation fails" 1 \
	env TPUFORM_ACCESS_TOKEN="$MDTOK" TPUFORM_IMPERSONATE_SERVICE_ACCOUNT="$SA" "$TPUFORM" plan -f plain.yaml
like "IAM's 401 is reported" "$(cat last.out)" "get an access token for service account $SA from .*: HTTP 401 UNAUTHENTICATED"
like "naming TPUFORM_ACCESS_TOKEN and the fix" "$(cat last.out)" \
	"TPUFORM_ACCESS_TOKEN cannot be refreshed.*gcloud auth print-access-token"
fails "without impersonation, the API's 401" 1 env TPUFORM_ACCESS_TOKEN="$MDTOK" "$TPUFORM" plan -f plain.yaml
like "the API's 401 is reported" "$(cat last.out)" "HTTP 401 UNAUTHENTICATED"
like "saying the variable cannot be refreshed, and the fix" "$(cat last.out)" \
	"TPUFORM_ACCESS_TOKEN cannot be refreshed.*gcloud auth print-access-token"
unlike "the token is not printed" "$(cat last.out)" "$MDTOK"
ok "destroy" "$TPUFORM" destroy -f imp.yaml -auto-approve
finish

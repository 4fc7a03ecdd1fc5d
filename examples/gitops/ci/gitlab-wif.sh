#!/bin/sh
# Keyless Google credentials for a GitLab CI job: write an external_account
# credential file (workload identity federation) that reads the job's OIDC
# ID token from a file, and point Application Default Credentials at it.
# The same file `gcloud iam workload-identity-pools create-cred-config
# --credential-source-file` writes; Google's documentation of the format:
# https://cloud.google.com/iam/docs/workload-identity-federation-with-deployment-pipelines
#
#   . ci/gitlab-wif.sh      (sourced: it exports GOOGLE_APPLICATION_CREDENTIALS)
#
#   GCP_ID_TOKEN   the job's ID token (.gitlab-ci.yml id_tokens, aud = the provider)
#   WIF_PROVIDER   projects/NUMBER/locations/global/workloadIdentityPools/POOL/providers/ID
#   DEPLOY_SA      the service account to impersonate
#   STS_TOKEN_URL, IAM_CREDENTIALS_URL   only to reach private or test endpoints
#                  (tpuform accepts https://*.googleapis.com and loopback http only)
#
# Sourced into the job's shell, so no `set -eu` here (it would stay on for
# the job's script); a missing variable stops the job all the same.
: "${GCP_ID_TOKEN:?declare id_tokens: GCP_ID_TOKEN in .gitlab-ci.yml}"
: "${WIF_PROVIDER:?set the CI/CD variable WIF_PROVIDER}"
: "${DEPLOY_SA:?set the CI/CD variable DEPLOY_SA}"
wif_dir=${CI_BUILDS_DIR:-/tmp}/.tpuform-wif-${CI_JOB_ID:-local}
mkdir -p "$wif_dir"
chmod 700 "$wif_dir"
umask 077
printf '%s' "$GCP_ID_TOKEN" >"$wif_dir/id-token"
jq -n --arg aud "//iam.googleapis.com/$WIF_PROVIDER" \
	--arg sts "${STS_TOKEN_URL:-https://sts.googleapis.com/v1/token}" \
	--arg imp "${IAM_CREDENTIALS_URL:-https://iamcredentials.googleapis.com}/v1/projects/-/serviceAccounts/$DEPLOY_SA:generateAccessToken" \
	--arg tok "$wif_dir/id-token" \
	'{type: "external_account", audience: $aud,
	  subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
	  token_url: $sts, service_account_impersonation_url: $imp,
	  credential_source: {file: $tok}}' >"$wif_dir/credentials.json"
GOOGLE_APPLICATION_CREDENTIALS=$wif_dir/credentials.json
export GOOGLE_APPLICATION_CREDENTIALS

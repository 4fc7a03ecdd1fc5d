/*
 * Service account impersonation: IAM Credentials
 * projects.serviceAccounts.generateAccessToken
 * (https://cloud.google.com/iam/docs/reference/credentials/rest/v1/projects.serviceAccounts/generateAccessToken;
 * google-auth-library-python impersonated_credentials.py):
 *
 *   POST https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/EMAIL:generateAccessToken
 *   Authorization: Bearer <the caller's token>
 *   {"scope": ["https://www.googleapis.com/auth/cloud-platform"], "lifetime": "3600s"}
 *   -> {"accessToken": "...", "expireTime": "2025-01-02T03:04:05Z"}
 *
 * The caller needs roles/iam.serviceAccountTokenCreator on the account (a
 * workload identity pool's principal: roles/iam.workloadIdentityUser).
 */
#include "google/gcp_auth_internal.h"
#include "google/gcp_endpoint.h"
#include "google/gcp_jwt.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <math.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GENERATE ":generateAccessToken"
#define DEFAULT_LIFETIME 3600 /* impersonated_credentials.py _DEFAULT_TOKEN_LIFETIME_SECS */

void tpf_gcp_impersonation_free(struct tpf_gcp_impersonation *imp)
{
	if (!imp)
		return;
	free(imp->email);
	free(imp->url);
	free(imp->from);
	free(imp);
}

/* NAME@DOMAIN with nothing a URL path would read differently. */
static int email_ok(const char *e)
{
	const char *at = strchr(e, '@');
	if (!at || at == e || !at[1] || strchr(at + 1, '@'))
		return 0;
	for (const char *p = e; *p; p++)
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p) || strchr("/?#%:\\", *p))
			return 0;
	return 1;
}

/* generateAccessToken URL for email on TPUFORM_IAMCREDENTIALS_ENDPOINT. */
static char *url_for_email(const char *email, struct tpf_diags *d)
{
	const char *root = getenv("TPUFORM_IAMCREDENTIALS_ENDPOINT");
	const char *what = "TPUFORM_IAMCREDENTIALS_ENDPOINT";
	if (!root || !*root) {
		root = TPF_GCP_DEFAULT_IAMCREDENTIALS;
		what = "the IAM Credentials endpoint";
	}
	size_t n = strlen(root);
	while (n && root[n - 1] == '/')
		n--;
	char *url = xasprintf("%.*s/v1/projects/-/serviceAccounts/%s" GENERATE, (int)n, root, email);
	if (tpf_gcp_credential_url_check(url, TPF_GCP_URL_IAMCREDENTIALS, what, d) < 0) {
		free(url);
		return NULL;
	}
	return url;
}

struct tpf_gcp_impersonation *tpf_gcp_impersonation_new(const char *email_or_url, int is_url,
							 const char *from, struct tpf_diags *d)
{
	struct tpf_gcp_impersonation *imp = xcalloc(1, sizeof(*imp));
	imp->lifetime = DEFAULT_LIFETIME;
	imp->from = xstrdup(from);
	if (is_url) {
		/* the email sits between the last '/' and ":generateAccessToken"
		 * (external_account.py service_account_email) */
		const char *slash = strrchr(email_or_url, '/');
		const char *end = strstr(email_or_url, GENERATE);
		if (!slash || !end || end < slash) {
			tpf_error(d, "%s '%s' does not end in /serviceAccounts/EMAIL%s", from,
				  email_or_url, GENERATE);
			goto fail;
		}
		imp->email = xstrndup(slash + 1, (size_t)(end - slash - 1));
		if (tpf_gcp_credential_url_check(email_or_url, TPF_GCP_URL_IAMCREDENTIALS, from, d) < 0)
			goto fail;
		imp->url = xstrdup(email_or_url);
	} else {
		imp->email = xstrdup(email_or_url);
	}
	if (!email_ok(imp->email)) {
		tpf_errorx(d, NULL, "write the service account's email, such as "
			   "'deployer@my-project.iam.gserviceaccount.com'",
			   "%s names service account '%s', which is not an email address", from,
			   imp->email);
		goto fail;
	}
	if (!imp->url && !(imp->url = url_for_email(imp->email, d)))
		goto fail;
	return imp;
fail:
	tpf_gcp_impersonation_free(imp);
	return NULL;
}


static const char *impersonate_hint(const struct tpf_gcp_auth *a,
				    const struct tpf_gcp_impersonation *imp,
				    const struct tpf_gcp_error *e, char **own)
{
	if (e->http == 401 && a->kind == CRED_STATIC && imp == a->imp)
		return "TPUFORM_ACCESS_TOKEN cannot be refreshed, and the token it holds has "
		       "expired or been revoked: set a fresh one, e.g. "
		       "TPUFORM_ACCESS_TOKEN=$(gcloud auth print-access-token), or unset it so that "
		       "tpuform uses credentials it can refresh";
	if (e->http == 403)
		return *own = xasprintf("the caller (%s) needs roles/iam.serviceAccountTokenCreator "
					"on %s (a workload identity pool's principal: "
					"roles/iam.workloadIdentityUser), and the IAM Service Account "
					"Credentials API must be enabled",
					imp == a->imp ? a->base_source : "the workload identity pool",
					imp->email);
	if (e->http == 404)
		return *own = xasprintf("check that service account %s exists (%s)", imp->email,
					imp->from);
	return NULL;
}

int tpf_gcp_impersonate_parse(const struct tpf_gcp_token_request *t,
			      const struct tpf_gcp_response *rs,
			      const struct tpf_gcp_impersonation *imp, double asked_at, char **token,
			      double *lifetime, struct tpf_diags *d)
{
	json_t *root = json_loadb(rs->body.buf, rs->body.len, 0, NULL);
	json_t *at = json_object_get(root, "accessToken");
	double exp = tpf_parse_rfc3339(json_string_value(json_object_get(root, "expireTime")));
	int rc = 0;
	if (!json_string_value(at) || !*json_string_value(at) || exp < 0) {
		rc = tpf_error(d, "%s: the answer lacks 'accessToken' or an RFC 3339 'expireTime' "
			       "(HTTP %ld)", t->what.buf, rs->status);
	} else {
		*token = xstrdup(json_string_value(at));
		/* a clock behind the server's must not stretch the token's life */
		*lifetime = exp - asked_at;
		if (*lifetime > imp->lifetime)
			*lifetime = (double)imp->lifetime;
		if (*lifetime < 0)
			*lifetime = 0;
	}
	if (json_is_string(at))
		OPENSSL_cleanse((char *)json_string_value(at), json_string_length(at));
	json_decref(root);
	return rc;
}

int tpf_gcp_impersonate(struct tpf_gcp_auth *a, const struct tpf_gcp_impersonation *imp,
			const char *caller, char **token, double *lifetime, int *caller_rejected,
			struct tpf_diags *d)
{
	struct tpf_gcp_token_request t = { .what = TPF_BUF_INIT };
	struct tpf_gcp_response rs = TPF_GCP_RESPONSE_INIT;
	struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
	char life[32];
	snprintf(life, sizeof(life), "%lds", imp->lifetime);
	json_t *body = json_pack("{s:[s], s:s}", "scope", TPF_GCP_SCOPE, "lifetime", life);
	t.body = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	t.rq.method = "POST";
	t.rq.url = imp->url;
	t.rq.body = t.body;
	t.rq.body_len = strlen(t.body);
	t.rq.bearer = tpf_gcp_token_request_keep(&t, xstrdup(caller));
	tpf_buf_addf(&t.what, "get an access token for service account %s from '%s'", imp->email,
		     imp->url);
	double asked_at = tpf_now_wall();
	*caller_rejected = 0;
	int rc = tpf_gcp_token_send(a, &t, &rs, &e, d);
	if (rc < 0 && e.http) {
		char *own = NULL;
		*caller_rejected = e.http == 401;
		tpf_gcp_token_refused(&t, &e, impersonate_hint(a, imp, &e, &own), rc, d);
		free(own);
	}
	if (rc == 0)
		rc = tpf_gcp_impersonate_parse(&t, &rs, imp, asked_at, token, lifetime, d);
	tpf_gcp_error_release(&e);
	tpf_gcp_response_wipe(&rs);
	tpf_gcp_token_request_release(&t);
	return rc;
}

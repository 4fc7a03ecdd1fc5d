#include "providers/gcp/gcp_oslogin.h"
#include "providers/gcp/gcp_client_internal.h"
#include "google/gcp_endpoint.h"
#include "providers/gcp/gcp_sshkeys.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

int tpf_gcp_service_endpoint(const char *env, const char *fallback, const char *what, char **out,
			     struct tpf_diags *d)
{
	const char *v = getenv(env);
	char *name = xasprintf("%s (%s)", what, v && *v ? env : "default");
	int rc = tpf_gcp_endpoint_check(v && *v ? v : fallback, name, out, d);
	free(name);
	return rc;
}

int tpf_gcp_project_metadata(struct tpf_gcp_client *c, json_t **out, struct tpf_diags *d)
{
	char *base = NULL;
	*out = NULL;
	if (tpf_gcp_service_endpoint("TPUFORM_COMPUTE_ENDPOINT", TPF_GCP_DEFAULT_COMPUTE_ENDPOINT,
				     "Compute Engine endpoint", &base, d) < 0)
		return TPF_ERROR;
	char *p = tpf_gcp_escape(tpf_gcp_client_project(c));
	char *url = xasprintf("%s/compute/v1/projects/%s", base, p);
	char *what = xasprintf("read the metadata of project '%s'", tpf_gcp_client_project(c));
	json_t *proj = NULL;
	/* Optional (a warning when unread): an endpoint that does not
	 * resolve costs one try, not every exec the retry budget. */
	int rc = tpf_gcp_call(c, "GET", url, NULL, what, NULL, TPF_GCP_CONNECT_ONCE, &proj, NULL, d);
	if (rc == 0)
		*out = tpf_gcp_compute_metadata(json_object_get(proj, "commonInstanceMetadata"));
	json_decref(proj);
	free(what);
	free(url);
	free(p);
	free(base);
	return rc;
}

/* POST the token to tokeninfo as a form (never in a URL, which servers
 * log); *email from the answer. */
static int tokeninfo_email(struct tpf_gcp_client *c, char **email, struct tpf_diags *d)
{
	char *url = NULL, *tok = NULL;
	int rc = tpf_gcp_service_endpoint("TPUFORM_TOKENINFO_ENDPOINT", TPF_GCP_DEFAULT_TOKENINFO,
					  "tokeninfo endpoint", &url, d);
	if (rc < 0)
		return rc;
	if ((rc = tpf_gcp_auth_token(tpf_gcp_client_auth(c), &tok, d)) < 0) {
		free(url);
		return rc;
	}
	char *esc = tpf_gcp_escape(tok);
	char *form = xasprintf("access_token=%s", esc);
	tpf_gcp_auth_token_free(esc);
	/* A read sent as POST, with the token in the form rather than a header. */
	struct tpf_gapi_call k = TPF_GAPI_CALL_INIT;
	k.rq.method = "POST";
	k.rq.url = url;
	k.rq.body = form;
	k.rq.body_len = strlen(form);
	k.rq.content_type = "application/x-www-form-urlencoded";
	k.flags = TPF_GAPI_NO_AUTH | TPF_GAPI_IDEMPOTENT;
	k.quiet = TPF_GAPI_QUIET_ALL;
	int h = tpf_gapi_send(tpf_gcp_client_api(c), &k, d);
	h = h < 0 && k.api_error ? 0 : h; /* an HTTP answer: judged by its body below */
	struct tpf_gcp_response rs = k.rs;
	json_t *info = h == 0 && rs.status == 200 ? json_loadb(rs.body.buf, rs.body.len, 0, NULL) : NULL;
	const char *e = json_string_value(json_object_get(info, "email"));
	const char *src = tpf_gcp_auth_source(tpf_gcp_client_auth(c));
	if (e && *e) {
		*email = xstrdup(e);
		rc = 0;
	} else if (h < 0) {
		rc = tpf_errorx(d, NULL, "check the network path to it", "cannot reach the tokeninfo "
				"endpoint '%s' to learn the account's email for OS Login: %s", url,
				rs.error);
	} else {
		char *hint = xasprintf(
			"OS Login names users by email; the credentials (%s) do not say theirs (the "
			"token needs the userinfo.email scope, as 'gcloud auth application-default "
			"login' grants). Use a service account key, or turn OS Login off for these "
			"nodes", src ? src : "?");
		rc = tpf_errorx(d, NULL, hint, "cannot tell which account to import the SSH key for "
				"with OS Login: the tokeninfo endpoint '%s' answered HTTP %ld without "
				"an email", url, rs.status);
		free(hint);
	}
	json_decref(info);
	tpf_gapi_call_release(&k);
	tpf_gcp_auth_token_free(form);
	tpf_gcp_auth_token_free(tok);
	free(url);
	return rc;
}

int tpf_gcp_login_email(struct tpf_gcp_client *c, char **out, struct tpf_diags *d)
{
	const char *e = tpf_gcp_auth_email(tpf_gcp_client_auth(c));
	*out = NULL;
	if (e && *e) {
		*out = xstrdup(e);
		return 0;
	}
	return tokeninfo_email(c, out, d);
}

const char *tpf_gcp_oslogin_username(json_t *resp)
{
	json_t *accts = json_object_get(json_object_get(resp, "loginProfile"), "posixAccounts");
	size_t i;
	json_t *a;
	const char *first = NULL;
	json_array_foreach(accts, i, a) {
		const char *u = json_string_value(json_object_get(a, "username"));
		if (!u || !*u)
			continue;
		if (json_is_true(json_object_get(a, "primary")))
			return u;
		if (!first)
			first = u;
	}
	return first;
}

int tpf_gcp_oslogin_import(struct tpf_gcp_client *c, const char *email, const char *public_key,
			   double ttl, char **user, struct tpf_diags *d)
{
	char *base = NULL;
	*user = NULL;
	if (tpf_gcp_service_endpoint("TPUFORM_OSLOGIN_ENDPOINT", TPF_GCP_DEFAULT_OSLOGIN_ENDPOINT,
				     "OS Login endpoint", &base, d) < 0)
		return TPF_ERROR;
	char *who = tpf_gcp_escape(email), *proj = tpf_gcp_escape(tpf_gcp_client_project(c));
	char *url = xasprintf("%s/v1/users/%s:importSshPublicKey?projectId=%s", base, who, proj);
	char *what = xasprintf("import the SSH key for '%s' with OS Login", email);
	/* int64 fields are JSON strings (proto3 JSON mapping). */
	char usec[32];
	snprintf(usec, sizeof(usec), "%.0f", (tpf_now_wall() + ttl) * 1e6);
	json_t *body = json_pack("{s:s, s:s}", "key", public_key, "expirationTimeUsec", usec);
	json_t *resp = NULL;
	/* keyed by the key's fingerprint: importing it again changes nothing */
	int rc = tpf_gcp_call(c, "POST", url, body, what, NULL, TPF_GCP_IDEMPOTENT, &resp, NULL, d);
	if (rc == 0) {
		const char *u = tpf_gcp_oslogin_username(resp);
		if (u)
			*user = xstrdup(u);
		else
			rc = tpf_errorx(d, NULL, "the account needs an OS Login profile with a POSIX account in this project",
					"%s: the answer names no POSIX account to log in as", what);
	}
	json_decref(resp);
	json_decref(body);
	free(what);
	free(url);
	free(proj);
	free(who);
	free(base);
	return rc;
}

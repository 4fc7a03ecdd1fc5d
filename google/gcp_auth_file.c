/*
 * Credentials files, by their "type" (google-auth _default.py
 * load_credentials_from_file): service_account, authorized_user and
 * external_account. The file's text is wiped once parsed; a parse error
 * gives the position only, since the text could hold a key.
 */
#include "google/gcp_auth_internal.h"
#include "google/gcp_endpoint.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/xalloc.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

static int load_service_account(struct tpf_gcp_auth *a, json_t *root, const char *path,
				struct tpf_diags *d)
{
	a->kind = CRED_SERVICE_ACCOUNT;
	a->client_email = tpf_gcp_jstr(root, "client_email");
	a->private_key = tpf_gcp_jstr(root, "private_key");
	a->private_key_id = tpf_gcp_jstr(root, "private_key_id");
	if (!a->client_email || !a->private_key)
		return tpf_error(d, "credentials file '%s' is a service_account key without '%s': "
				 "expected client_email and private_key", path,
				 a->client_email ? "private_key" : "client_email");
	a->base_source = xasprintf("service account key '%s' (%s)", path, a->client_email);
	return 0;
}

static int load_authorized_user(struct tpf_gcp_auth *a, json_t *root, const char *path,
				struct tpf_diags *d)
{
	a->kind = CRED_AUTHORIZED_USER;
	a->client_id = tpf_gcp_jstr(root, "client_id");
	a->client_secret = tpf_gcp_jstr(root, "client_secret");
	a->refresh_token = tpf_gcp_jstr(root, "refresh_token");
	if (!a->client_id || !a->client_secret || !a->refresh_token)
		return tpf_errorx(d, NULL, "run 'gcloud auth application-default login' again",
				  "credentials file '%s' is an authorized_user file without "
				  "client_id, client_secret or refresh_token", path);
	a->base_source = xasprintf("authorized user credentials '%s'", path);
	return 0;
}

/* The fields of `root` by its type. */
static int load_by_type(struct tpf_gcp_auth *a, json_t *root, const char *path,
			const char *what, struct tpf_diags *d)
{
	const char *type = json_string_value(json_object_get(root, "type"));
	int rc;
	a->token_uri = tpf_gcp_jstr(root, "token_uri");
	a->file_quota_project = tpf_gcp_jstr(root, "quota_project_id");
	if (type && !strcmp(type, "service_account"))
		rc = load_service_account(a, root, path, d);
	else if (type && !strcmp(type, "authorized_user"))
		rc = load_authorized_user(a, root, path, d);
	else if (type && !strcmp(type, "external_account"))
		return tpf_gcp_external_load(a, root, path, d);
	else
		return tpf_errorx(d, NULL,
				  "use a service-account JSON key, 'gcloud auth application-default "
				  "login', or a workload identity federation configuration "
				  "('gcloud iam workload-identity-pools create-cred-config')",
				  "credentials file '%s' (from %s) has type '%s': expected "
				  "'service_account', 'authorized_user' or 'external_account'", path,
				  what, type ? type : "(none)");
	if (rc < 0)
		return rc;
	if (!a->token_uri)
		a->token_uri = xstrdup(TPF_GCP_DEFAULT_TOKEN_URI);
	return tpf_gcp_endpoint_check(a->token_uri, "token_uri", NULL, d);
}

int tpf_gcp_auth_load_file(struct tpf_gcp_auth *a, const char *path, const char *what,
			   struct tpf_diags *d)
{
	int rc = TPF_ERROR;
	struct tpf_buf text = TPF_BUF_INIT;
	json_t *root = NULL;
	json_error_t jerr;
	struct tpf_diags tmp = TPF_DIAGS_INIT;
	int r = tpf_read_file(path, &text, &tmp);
	if (r == TPF_ENOTFOUND) {
		tpf_errorx(d, NULL,
			   "download a service-account key or run 'gcloud auth application-default login'",
			   "credentials file '%s' (from %s) does not exist", path, what);
		goto done;
	}
	if (r < 0) {
		tpf_diags_move(d, &tmp);
		goto done;
	}
	root = json_loadb(text.buf, text.len, 0, &jerr);
	if (!json_is_object(root)) {
		/* jerr.text could quote file content (a key): give the position only */
		tpf_error(d, "credentials file '%s' (from %s) is not a JSON object (error at line %d, column %d)",
			  path, what, jerr.line, jerr.column);
		goto done;
	}
	tpf_warn_if_readable_by_others(path, what, d);
	a->path = xstrdup(path);
	tpf_sha256_hex(text.buf, text.len, a->file_sha);
	rc = load_by_type(a, root, path, what, d);
done:
	tpf_diags_release(&tmp);
	json_decref(root);
	if (text.alloc)
		OPENSSL_cleanse(text.buf, text.len);
	tpf_buf_release(&text);
	return rc;
}

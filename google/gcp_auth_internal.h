/*
 * Private to google/gcp_auth*.c: the credentials object and the
 * pieces the files share. Nothing else includes this header, except their
 * unit test (tests/unit/test_gcp_external.c) and fuzz harness
 * (tests/fuzz/fuzz_gcp_auth.c).
 *
 *   gcp_auth.c              choosing the source (ADC order), the token cache
 *   gcp_auth_file.c         reading credentials files (every "type")
 *   gcp_auth_oauth.c        token requests: send with retries, OAuth2 grants
 *   gcp_auth_external.c     external_account: subject token, STS exchange
 *   gcp_auth_impersonate.c  IAM Credentials generateAccessToken
 *   gcp_auth_cache.c        the process-wide token cache
 *   gcp_auth_strings.c      wiping secrets, copying JSON strings (the
 *                           lowest file: every other one may call it)
 *
 * Locking: everything below `mu` is guarded by it; fetching (every field
 * a fetch reads or writes, base_token included) happens under refresh_mu
 * only, one refresh at a time.
 */
#ifndef TPF_GCP_AUTH_INTERNAL_H
#define TPF_GCP_AUTH_INTERNAL_H

#include "google/gcp_auth.h"
#include "google/gcp_errors.h"
#include "util/buf.h"

#include <jansson.h>
#include <pthread.h>

enum cred_kind {
	CRED_STATIC,          /* TPUFORM_ACCESS_TOKEN */
	CRED_SERVICE_ACCOUNT, /* "service_account" key */
	CRED_AUTHORIZED_USER, /* "authorized_user" (gcloud auth application-default login) */
	CRED_METADATA,        /* the GCE metadata server */
	CRED_EXTERNAL,        /* "external_account": workload identity federation */
};

/* Service account impersonation through IAM Credentials generateAccessToken. */
struct tpf_gcp_impersonation {
	char *email;    /* the target service account */
	char *url;      /* its generateAccessToken URL, checked */
	long lifetime;  /* seconds asked for ("3600s" by default) */
	char *from;     /* where it was configured, for messages */
};

/* An "external_account" file (AIP-4117; google-auth external_account.py,
 * identity_pool.py). */
struct tpf_gcp_external {
	char *audience, *subject_token_type, *token_url;
	char *source_file;  /* credential_source.file, or NULL */
	char *source_url;   /* credential_source.url, or NULL */
	char **headers;     /* credential_source.headers as "Name: value", NULL-terminated */
	char *json_field;   /* format json: subject_token_field_name; NULL: text */
	struct tpf_gcp_impersonation *imp; /* service_account_impersonation_url, or NULL */
};

struct tpf_gcp_auth {
	struct tpf_gcp_http *http;
	struct tpf_gapi *api; /* token requests go through it (no credentials of its own) */
	const struct tpf_gcp_settings *s;
	enum cred_kind kind;
	char *base_source;  /* the credentials, for messages */
	char *source;       /* base_source plus the impersonation, for messages */
	char *path;         /* credentials file, for messages */
	char file_sha[65];  /* SHA-256 of its text (cache key), "" if none */
	char cache_key[65]; /* gcp_auth_cache.c key; "" when tokens are not fetched */
	char *hint;         /* what to do when the API rejects our token */
	char *static_token; /* TPUFORM_ACCESS_TOKEN */
	/* service_account */
	char *client_email, *private_key, *private_key_id;
	/* authorized_user */
	char *client_id, *client_secret, *refresh_token;
	char *token_uri;
	/* metadata server */
	char *metadata_host;
	int metadata_explicit; /* GCE_METADATA_HOST was set */
	struct tpf_gcp_external *ext;
	char *file_quota_project;   /* quota_project_id in the file */
	char *quota_header;         /* "x-goog-user-project: P", or NULL */
	struct tpf_gcp_impersonation *imp; /* provider.gcp / env impersonation, or NULL */

	/* under refresh_mu: the source credentials' token when imp is set */
	char *base_token;
	double base_refresh_at;

	pthread_mutex_t mu;         /* guards token, refresh_at, fetches */
	pthread_mutex_t refresh_mu; /* one refresh at a time */
	char *token;
	double refresh_at; /* monotonic */
	long fetches;
};

/* ---- gcp_auth_strings.c ---- */
/* OPENSSL_cleanse, then free. NULL ok. */
void tpf_gcp_wipe_free(char *s);
/* The string value of o[k] if non-empty, copied; else NULL. */
char *tpf_gcp_jstr(json_t *o, const char *k);

/* ---- gcp_auth_cache.c ---- */
/* The cached token of `key` (a copy) and its refresh time (monotonic);
 * 1 if there is one, else 0. Stale entries are returned too: callers
 * check freshness. Thread-safe. */
int tpf_gcp_token_cache_get(const char *key, char **token, double *refresh_at);
/* Remember the newest token of `key` (copied), replacing its old one. */
void tpf_gcp_token_cache_put(const char *key, const char *token, double refresh_at);
/* Forget `key`'s token if it is `token` (NULL: whatever it is). */
void tpf_gcp_token_cache_drop(const char *key, const char *token);

/* ---- gcp_auth_file.c ---- */
/* Read a credentials file into a (kind, fields, ext). `what` says where
 * its name came from. TPF_ERROR with a diagnostic. */
int tpf_gcp_auth_load_file(struct tpf_gcp_auth *a, const char *path, const char *what,
			   struct tpf_diags *d);

/* ---- gcp_auth_oauth.c ---- */
/* A token request being built and sent; strings owned, wiped on release. */
struct tpf_gcp_token_request {
	struct tpf_gcp_request rq;
	char *body, *url;
	char *secret[4];     /* values to wipe and to scrub from quoted messages */
	struct tpf_buf what; /* "get an access token from ...", for messages */
};
void tpf_gcp_token_request_release(struct tpf_gcp_token_request *t);
/* Remember a secret of t (owned by t from now on) and return it. */
char *tpf_gcp_token_request_keep(struct tpf_gcp_token_request *t, char *secret);

/*
 * Send t->rq through the Google REST client (gapi.h: its retries; token
 * requests only mint tokens, so they are sent as idempotent). 0 when a 2xx
 * answer is in rs. A transfer failure adds a
 * diagnostic and returns TPF_ETRANSIENT or TPF_ERROR with e->http == 0.
 * An HTTP error answer is parsed into e (message scrubbed of the request's
 * and the credentials' secrets) and returned as TPF_ETRANSIENT or
 * TPF_ERROR with no diagnostic: the caller knows what to suggest.
 */
int tpf_gcp_token_send(struct tpf_gcp_auth *a, struct tpf_gcp_token_request *t,
		       struct tpf_gcp_response *rs, struct tpf_gcp_error *e, struct tpf_diags *d);
/* "<what>: HTTP 400 invalid_grant: <message>" with the hint; returns rc. */
int tpf_gcp_token_refused(const struct tpf_gcp_token_request *t, const struct tpf_gcp_error *e,
			  const char *hint, int rc, struct tpf_diags *d);
/*
 * An OAuth2 token answer (RFC 6749 section 5.1): access_token (wiped from
 * the parsed copy) and expires_in (3600 if absent; a JSON string is
 * accepted, as google-auth external_account.py does).
 */
int tpf_gcp_token_parse(const struct tpf_gcp_token_request *t, const struct tpf_gcp_response *rs,
			char **token, double *lifetime, struct tpf_diags *d);
/* Wipe a response body that held a token, then release rs. */
void tpf_gcp_response_wipe(struct tpf_gcp_response *rs);
/* The end of a token exchange: when rc is 0, the token parsed from rs
 * (tpf_gcp_token_parse); then e, rs (wiped) and t released. Returns rc or
 * the parse's error. */
int tpf_gcp_token_finish(int rc, struct tpf_gcp_token_request *t, struct tpf_gcp_response *rs,
			 struct tpf_gcp_error *e, char **token, double *lifetime,
			 struct tpf_diags *d);
/* A token for a service account key, an authorized user or the metadata
 * server: one grant with retries. */
int tpf_gcp_oauth_fetch(struct tpf_gcp_auth *a, char **token, double *lifetime,
			struct tpf_diags *d);

/* ---- gcp_auth_external.c ---- */
/* Parse the external_account object `root` of file `path` into a->ext
 * (URLs checked). */
int tpf_gcp_external_load(struct tpf_gcp_auth *a, json_t *root, const char *path,
			  struct tpf_diags *d);
void tpf_gcp_external_free(struct tpf_gcp_external *x);
/* Subject token, STS exchange, and the file's impersonation if any. */
int tpf_gcp_external_fetch(struct tpf_gcp_auth *a, char **token, double *lifetime,
			   struct tpf_diags *d);
/*
 * The subject token in `text` (len bytes): with json_field NULL the text
 * with surrounding white space trimmed (Go externalaccount file.go trims;
 * a token file written by echo ends in a newline), else the string field
 * json_field of the JSON object. `where` names the source in messages.
 * *out: caller wipes and frees. TPF_ERROR with a diagnostic that never
 * quotes the text.
 */
int tpf_gcp_subject_token_parse(const char *text, size_t len, const char *json_field,
				const char *where, char **out, struct tpf_diags *d);

/* ---- gcp_auth_impersonate.c ---- */
/*
 * Impersonation of `email_or_url`: an email (provider.gcp /
 * TPUFORM_IMPERSONATE_SERVICE_ACCOUNT, URL built on
 * TPUFORM_IAMCREDENTIALS_ENDPOINT or TPF_GCP_DEFAULT_IAMCREDENTIALS) when
 * is_url is 0, else a service_account_impersonation_url (email taken from
 * it as google-auth external_account.py service_account_email does).
 * `from` names the setting. NULL with a diagnostic if malformed or refused
 * by tpf_gcp_credential_url_check.
 */
struct tpf_gcp_impersonation *tpf_gcp_impersonation_new(const char *email_or_url, int is_url,
							 const char *from, struct tpf_diags *d);
void tpf_gcp_impersonation_free(struct tpf_gcp_impersonation *imp);
/*
 * generateAccessToken for imp with `caller` as the bearer. On success
 * *token and *lifetime (seconds, from expireTime). *caller_rejected is set
 * when IAM answered 401 (the caller's token expired or was revoked).
 */
int tpf_gcp_impersonate(struct tpf_gcp_auth *a, const struct tpf_gcp_impersonation *imp,
			const char *caller, char **token, double *lifetime, int *caller_rejected,
			struct tpf_diags *d);
/* accessToken and the lifetime left by expireTime (seconds from asked_at,
 * at most imp->lifetime, at least 0) from a 2xx generateAccessToken answer
 * in rs; *token: caller wipes and frees. TPF_ERROR with a diagnostic that
 * never quotes the body. Exposed for tests/fuzz/fuzz_gcp_auth.c. */
int tpf_gcp_impersonate_parse(const struct tpf_gcp_token_request *t,
			      const struct tpf_gcp_response *rs,
			      const struct tpf_gcp_impersonation *imp, double asked_at, char **token,
			      double *lifetime, struct tpf_diags *d);

#endif

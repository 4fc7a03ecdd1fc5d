/*
 * A REST client with an HTTP engine and credentials of its own
 * (google/gclient.h).
 */
#include "google/gclient.h"
#include "google/gcp_endpoint.h"
#include "google/gcp_http.h"

#include <stdlib.h>
#include <string.h>

int tpf_gclient_endpoint(const char *var, const char *def, const char *what_default, char **out,
			 struct tpf_diags *d)
{
	const char *url = getenv(var);
	if (url && *url)
		return tpf_gcp_endpoint_check(url, var, out, d);
	return tpf_gcp_endpoint_check(def, what_default, out, d);
}

/* With creds 0: no credentials are opened and no token is sent. */
static int open_client(struct tpf_gclient *c, const char *endpoint,
		       const struct tpf_gcp_auth_config *auth, int creds, tpf_gapi_hint_fn hint,
		       struct tpf_diags *d)
{
	memset(c, 0, sizeof(*c));
	if (tpf_gcp_settings_load(&c->s, d) < 0)
		return TPF_ERROR;
	struct tpf_gcp_http_opts o = {
		.connect_timeout = c->s.connect_timeout,
		.stall_timeout = c->s.stall_timeout,
		.request_timeout = c->s.request_timeout,
		.max_body = c->s.max_body,
	};
	struct tpf_gapi_config gc = { .endpoint = endpoint, .settings = &c->s };
	if (tpf_gcp_http_new(&c->http, &o, d) < 0 ||
	    (creds && tpf_gcp_auth_open(&c->auth, c->http, &c->s, auth, d) < 0))
		goto fail;
	gc.http = c->http;
	if (tpf_gapi_open(&c->api, &gc, d) < 0)
		goto fail;
	if (creds) {
		struct tpf_gapi_creds k;
		tpf_gcp_auth_creds(c->auth, &k);
		tpf_gapi_set_creds(c->api, &k);
	}
	if (hint)
		tpf_gapi_set_hint(c->api, hint, NULL);
	return 0;
fail:
	tpf_gclient_close(c);
	return TPF_ERROR;
}

int tpf_gclient_open(struct tpf_gclient *c, const char *endpoint,
		     const struct tpf_gcp_auth_config *auth, tpf_gapi_hint_fn hint,
		     struct tpf_diags *d)
{
	return open_client(c, endpoint, auth, 1, hint, d);
}

int tpf_gclient_open_anonymous(struct tpf_gclient *c, const char *endpoint,
			       tpf_gapi_hint_fn hint, struct tpf_diags *d)
{
	return open_client(c, endpoint, NULL, 0, hint, d);
}

void tpf_gclient_close(struct tpf_gclient *c)
{
	tpf_gapi_free(c->api);
	tpf_gcp_auth_free(c->auth);
	tpf_gcp_http_free(c->http);
	memset(c, 0, sizeof(*c));
}

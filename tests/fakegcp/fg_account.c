/*
 * What SSH access needs next to the TPU API:
 *   GET  /compute/v1/projects/{project}   Compute projects.get: the
 *        project's commonInstanceMetadata {items: [{key, value}]}
 *        (--project-metadata KEY=VALUE, repeatable);
 *   POST /tokeninfo                       form access_token=...: {"email"}
 *        (--token-email, default tester@example.com) for a token the API
 *        would accept, else 400 {"error":"invalid_token"};
 *   POST /v1/users/{email}:importSshPublicKey?projectId=P   OS Login:
 *        body SshPublicKey {key, expirationTimeUsec}; answers
 *        ImportSshPublicKeyResponse {loginProfile {name, posixAccounts
 *        [{primary, username, uid, gid, homeDirectory, ...}], sshPublicKeys
 *        {FINGERPRINT: {key, expirationTimeUsec, fingerprint}}}};
 *   GET  /v1/users/{email}/loginProfile?projectId=P   the same profile.
 * The POSIX user name is --oslogin-username, else the email with every
 * character other than [A-Za-z0-9_] replaced by '_' (as Google names user
 * accounts: tester@example.com -> tester_example_com). Imported keys
 * reach the workers of nodes under OS Login through the guest agent
 * (fg_agent.c), until they expire. POST /__admin/oslogin?required=true
 * turns OS Login on for every node whatever the metadata says, as the
 * organization policy constraints/compute.requireOsLogin does.
 * Field names: the OS Login v1 REST reference (users.importSshPublicKey,
 * LoginProfile, PosixAccount, SshPublicKey); Compute v1 Project.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include <openssl/evp.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

struct imported {
	char *email, *key, *fingerprint;
	long long expires_usec; /* 0: never */
};

static json_t *project_md; /* object of strings */
static json_t *imported_json(void);
static struct imported *keys;
static size_t n_keys, a_keys;

int fg_project_metadata_add(const char *spec)
{
	const char *eq = strchr(spec, '=');
	if (!eq || eq == spec)
		return -1;
	if (!project_md)
		project_md = json_object();
	char *k = xstrndup(spec, (size_t)(eq - spec));
	json_object_set_new(project_md, k, json_string(eq + 1));
	free(k);
	return 0;
}

json_t *fg_project_metadata(void)
{
	return project_md;
}

static char *posix_name(const char *email)
{
	if (fg_opt.oslogin_username)
		return xstrdup(fg_opt.oslogin_username);
	char *u = xstrdup(email);
	for (char *p = u; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			*p = '_';
	return u;
}

static long long now_usec(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (long long)tv.tv_sec * 1000000 + tv.tv_usec;
}

void fg_oslogin_keys(const char *username, struct tpf_buf *out)
{
	long long now = now_usec();
	for (size_t i = 0; i < n_keys; i++) {
		char *u = posix_name(keys[i].email);
		if (!strcmp(u, username) && (!keys[i].expires_usec || keys[i].expires_usec > now))
			tpf_buf_addf(out, "%s\n", keys[i].key);
		free(u);
	}
}

/* SHA-256 hex of the key text: OS Login keys its map by a fingerprint. */
static char *fingerprint(const char *key)
{
	unsigned char d[32];
	unsigned int n = 0;
	char *hex = xmalloc(65);
	EVP_Digest(key, strlen(key), d, &n, EVP_sha256(), NULL);
	for (unsigned i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return hex;
}

static json_t *login_profile(const char *email)
{
	char *user = posix_name(email);
	json_t *pk = json_object();
	long long now = now_usec();
	for (size_t i = 0; i < n_keys; i++) {
		if (strcmp(keys[i].email, email) ||
		    (keys[i].expires_usec && keys[i].expires_usec <= now))
			continue;
		json_t *k = json_pack("{s:s, s:s}", "key", keys[i].key, "fingerprint",
				      keys[i].fingerprint);
		if (keys[i].expires_usec) {
			char us[32];
			snprintf(us, sizeof(us), "%lld", keys[i].expires_usec);
			json_object_set_new(k, "expirationTimeUsec", json_string(us));
		}
		json_object_set_new(pk, keys[i].fingerprint, k);
	}
	char *home = xasprintf("/home/%s", user);
	json_t *acct = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "primary", 1,
				 "username", user, "uid", "1001", "gid", "1001", "homeDirectory",
				 home, "shell", "/bin/bash", "systemId", fg_opt.project,
				 "operatingSystemType", "LINUX");
	json_t *out = json_pack("{s:s+, s:[o]}", "name", "users/", email, "posixAccounts", acct);
	if (json_object_size(pk))
		json_object_set_new(out, "sshPublicKeys", pk);
	else
		json_decref(pk);
	free(home);
	free(user);
	return out;
}

/* The SshPublicKey body: only "key" (required) and "expirationTimeUsec"
 * (int64 as a string, or a number). -1 after answering 400. */
static int check_key_body(struct fg_req *r, json_t *b, long long *expires)
{
	const char *k;
	json_t *v;
	*expires = 0;
	if (!json_is_object(b)) {
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "Invalid JSON payload received. "
			       "Expected an object.");
		return -1;
	}
	json_object_foreach(b, k, v) {
		if (strcmp(k, "key") && strcmp(k, "expirationTimeUsec") && strcmp(k, "expiration_time_usec")) {
			fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "Invalid JSON payload received. "
				       "Unknown name \"%s\": Cannot find field.", k);
			return -1;
		}
	}
	const char *key = json_string_value(json_object_get(b, "key"));
	if (!key || !strchr(key, ' ')) {
		fg_bad_request(r, "key", "The SSH public key is missing or not in OpenSSH format.");
		return -1;
	}
	json_t *e = json_object_get(b, "expirationTimeUsec");
	if (!e)
		e = json_object_get(b, "expiration_time_usec");
	char *end = NULL;
	if (json_is_string(e))
		*expires = strtoll(json_string_value(e), &end, 10);
	else if (json_is_integer(e))
		*expires = (long long)json_integer_value(e);
	if (e && ((json_is_string(e) && (!*json_string_value(e) || *end)) ||
		  (!json_is_string(e) && !json_is_integer(e)) || *expires < 0)) {
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "Invalid value at "
			       "'ssh_public_key.expiration_time_usec' (TYPE_INT64)");
		return -1;
	}
	return 0;
}

static int project_ok(struct fg_req *r)
{
	const char *p = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "projectId");
	if (!p || !strcmp(p, fg_opt.project) || !strcmp(p, fg_opt.project_number))
		return 1;
	fg_reply_error(r, 403, "PERMISSION_DENIED", NULL, "Permission denied on resource project %s.", p);
	return 0;
}

static void oslogin(struct fg_req *r, const char *rest)
{
	const char *colon = strrchr(rest, ':');
	const char *slash = strchr(rest, '/');
	if (!strcmp(r->method, "POST") && colon && !slash &&
	    !strcmp(colon, ":importSshPublicKey")) {
		char *email = xstrndup(rest, (size_t)(colon - rest));
		json_t *b = r->body.len ? json_loadb(r->body.buf, r->body.len, 0, NULL) : NULL;
		long long expires;
		if (project_ok(r) && check_key_body(r, b, &expires) == 0) {
			fg_lock();
			const char *key = json_string_value(json_object_get(b, "key"));
			char *fp = fingerprint(key);
			size_t i;
			for (i = 0; i < n_keys && (strcmp(keys[i].email, email) || strcmp(keys[i].fingerprint, fp)); i++)
				;
			if (i == n_keys) {
				XGROW(keys, n_keys + 1, a_keys);
				keys[n_keys++] = (struct imported){ xstrdup(email), xstrdup(key), fp, 0 };
			} else {
				free(fp);
			}
			keys[i].expires_usec = expires;
			fg_agent_sync_all();
			fg_reply_json(r, 200, json_pack("{s:o}", "loginProfile", login_profile(email)));
			fg_unlock();
		}
		json_decref(b);
		free(email);
		return;
	}
	if (!strcmp(r->method, "GET") && slash && !strcmp(slash, "/loginProfile")) {
		char *email = xstrndup(rest, (size_t)(slash - rest));
		if (project_ok(r)) {
			fg_lock();
			fg_reply_json(r, 200, login_profile(email));
			fg_unlock();
		}
		free(email);
		return;
	}
	fg_reply_error(r, 404, "NOT_FOUND", NULL, "%s %s: not served by fakegcp.", r->method, r->path);
}

static void tokeninfo(struct fg_req *r)
{
	const char *tok = NULL;
	char *body = r->body.len ? xstrndup(r->body.buf, r->body.len) : NULL;
	char *save = NULL;
	for (char *f = body ? strtok_r(body, "&", &save) : NULL; f; f = strtok_r(NULL, "&", &save))
		if (!strncmp(f, "access_token=", 13))
			tok = f + 13;
	if (!tok)
		tok = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "access_token");
	r->log_body = json_pack("{s:s}", "access_token", "(redacted)");
	int valid = 0;
	if (tok && *tok) {
		fg_lock();
		valid = !fg_opt.auth_token || fg_token_valid(tok);
		fg_unlock();
	}
	if (valid)
		fg_reply_json(r, 200, json_pack("{s:s, s:s, s:s, s:s}", "email", fg_opt.token_email,
						"email_verified", "true", "scope",
						"https://www.googleapis.com/auth/cloud-platform "
						"https://www.googleapis.com/auth/userinfo.email",
						"expires_in", "3599"));
	else
		fg_reply_json(r, 400, json_pack("{s:s, s:s}", "error", "invalid_token",
						"error_description", "Invalid Value"));
	free(body);
}

static void compute_project(struct fg_req *r, const char *project)
{
	if (strcmp(r->method, "GET")) {
		fg_reply_error(r, 405, "METHOD_NOT_ALLOWED", NULL, "Method not allowed.");
		return;
	}
	if (strcmp(project, fg_opt.project) && strcmp(project, fg_opt.project_number)) {
		fg_reply_error(r, 403, "PERMISSION_DENIED", NULL, "Permission denied on resource project %s.",
			       project);
		return;
	}
	json_t *items = json_array();
	const char *k;
	json_t *v;
	fg_lock();
	json_object_foreach(project_md, k, v)
		json_array_append_new(items, json_pack("{s:s, s:O}", "key", k, "value", v));
	fg_unlock();
	json_t *cim = json_pack("{s:s, s:s}", "kind", "compute#metadata", "fingerprint", "fakegcp=");
	if (json_array_size(items))
		json_object_set_new(cim, "items", items);
	else
		json_decref(items);
	/* defaultServiceAccount: gcloud reads it for instances create's
	 * default scopes (capture inst-v6e-std, docs/compute-engine.md). */
	char *sa = xasprintf("%s-compute@developer.gserviceaccount.com", fg_opt.project_number);
	fg_reply_json(r, 200, json_pack("{s:s, s:s, s:s, s:o, s:s}", "kind", "compute#project", "name",
					fg_opt.project, "id", fg_opt.project_number,
					"commonInstanceMetadata", cim, "defaultServiceAccount", sa));
	free(sa);
}

int fg_account_serve(struct fg_req *r)
{
	const char *p = r->path;
	if (!strcmp(p, "/tokeninfo")) {
		tokeninfo(r);
		return 1;
	}
	if (strncmp(p, "/compute/v1/projects/", 21) && strncmp(p, "/v1/users/", 10))
		return 0;
	if (fg_auth_check(r) < 0)
		return 1;
	if (!strncmp(p, "/v1/users/", 10))
		oslogin(r, p + 10);
	else if (strchr(p + 21, '/'))
		fg_reply_error(r, 404, "NOT_FOUND", NULL, "%s %s: not served by fakegcp.", r->method, p);
	else
		compute_project(r, p + 21);
	return 1;
}

static int required;

int fg_oslogin_required(void)
{
	return required;
}

void fg_oslogin_admin(struct fg_req *r)
{
	const char *v = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "required");
	if (!strcmp(r->method, "POST")) {
		if (!v || (strcmp(v, "true") && strcmp(v, "false"))) {
			fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "expected ?required=true|false");
			return;
		}
		fg_lock();
		required = !strcmp(v, "true");
		fg_agent_sync_all();
		fg_unlock();
	}
	fg_lock();
	json_t *out = json_pack("{s:b, s:o}", "required", required, "keys", imported_json());
	fg_unlock();
	fg_reply_json(r, 200, out);
}

static json_t *imported_json(void)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n_keys; i++) {
		char *u = posix_name(keys[i].email);
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:I}", "email", keys[i].email,
						     "username", u, "key", keys[i].key,
						     "expirationTimeUsec",
						     (json_int_t)keys[i].expires_usec));
		free(u);
	}
	return arr;
}

void fg_account_free(void)
{
	for (size_t i = 0; i < n_keys; i++) {
		free(keys[i].email);
		free(keys[i].key);
		free(keys[i].fingerprint);
	}
	free(keys);
	keys = NULL;
	n_keys = a_keys = 0;
	json_decref(project_md);
	project_md = NULL;
}

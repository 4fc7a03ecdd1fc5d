/*
 * SSH access to Cloud TPU workers (gcp_access.h): per node, once, the key
 * in the node's metadata or imported with OS Login, and the host keys of
 * its guest attributes; then the SSH transport does the rest.
 */
#include "providers/gcp/gcp_access.h"
#include "providers/gcp/gcp_backend.h"
#include "providers/gcp/tpu/gcp_multislice.h"
#include "providers/gcp/gcp_oslogin.h"
#include "providers/gcp/gcp_sshkeys.h"
#include "providers/ssh/ssh.h"
#include "util/env.h"
#include "util/strindex.h"
#include "util/timeutil.h"
#include "util/str.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* What is known of one node. The fields up to `mu` are guarded by the
 * access's mutex (the client's node observer writes them from any
 * thread); the rest by `mu`, held while the node is prepared. */
struct node_entry {
	char *name;
	char *zone;         /* NULL until a Node object of it was seen */
	char *id;           /* Node.id seen last */
	json_t *metadata;   /* Node.metadata seen last (object), NULL: none */
	int multislice;     /* Node.multisliceNode: a slice of a unit (gcp_multislice.h) */
	int nendpoints;     /* its networkEndpoints seen last */
	enum tpf_gcp_shape shape; /* INSTANCE, SLICE: on Compute Engine (a slice's
				   * members got the key from the template's metadata) */
	json_t *members;    /* slice: its members' instance names in worker order */

	pthread_mutex_t mu;
	char *keyed_id;     /* the node id whose metadata has the key */
	double patched_at;  /* monotonic time tpuform added it, 0: never */
	char *guest_id;     /* the node id whose guest attributes were read */
	json_t *guest;      /* GetGuestAttributesResponse, NULL if the read failed */
	char *guest_error;  /* why it failed, for the warning */
};

struct tpf_gcp_access {
	struct tpf_transport tr; /* the wrapping transport; impl = this */
	/* Its ops: the SSH transport's (the connections are its), but for
	 * connect and interactive, which prepare the node first. */
	struct tpf_transport_ops ops;
	struct tpf_gcp_client *c;
	struct tpf_gcp_ctx *g;   /* the back-ends' context; NULL until set */
	/* The back-ends that reach nodes, in the order a node never seen is
	 * looked for (tpf_gcp_access_set_backends). */
	const struct tpf_gcp_backend *reach[2];
	size_t nreach;
	struct tpf_transport *ssh;
	const struct tpf_fleet *f;

	pthread_mutex_t mu; /* nodes and the entries' first fields */
	struct node_entry **nodes;
	size_t n, alloc;
	struct tpf_strindex by_name; /* entry name -> index in nodes (never removed) */

	pthread_mutex_t once_mu; /* the per-process facts below */
	char *public_key;        /* "TYPE BASE64", NULL until read */
	int project_read;
	json_t *project_md;      /* NULL when it could not be read */
	char *project_error;
	char *os_user;           /* OS Login POSIX user, NULL until imported */
	double imported_at;      /* monotonic */
};

/* ---- the node table -------------------------------------------------------- */

/* Call with a->mu held. */
static struct node_entry *find_locked(struct tpf_gcp_access *a, const char *name, int create)
{
	size_t i;
	if (tpf_strindex_get(&a->by_name, name, &i))
		return a->nodes[i];
	if (!create)
		return NULL;
	struct node_entry *e = xcalloc(1, sizeof(*e));
	e->name = xstrdup(name);
	pthread_mutex_init(&e->mu, NULL);
	XGROW(a->nodes, a->n + 1, a->alloc);
	tpf_strindex_put(&a->by_name, e->name, a->n);
	a->nodes[a->n++] = e;
	return e;
}

/* dst's facts (the fields up to `mu`, but the name) := src's (copies);
 * the caller holds the mutex of dst's access. */
static void facts_copy(struct node_entry *dst, const struct node_entry *src)
{
	xstrset(&dst->zone, src->zone);
	xstrset(&dst->id, src->id);
	json_decref(dst->metadata);
	dst->metadata = src->metadata ? json_deep_copy(src->metadata) : NULL;
	dst->multislice = src->multislice;
	dst->nendpoints = src->nendpoints;
	dst->shape = src->shape;
	json_decref(dst->members);
	dst->members = src->members ? json_deep_copy(src->members) : NULL;
}

/* tpf_gcp_node_seen_fn: remember the node's zone, id and metadata. */
static void node_seen(void *ctx, const char *zone, const struct tpf_gcp_seen *n)
{
	struct tpf_gcp_access *a = ctx;
	if (!n->name || !*n->name || !zone)
		return;
	struct node_entry seen = {
		.zone = (char *)zone, .id = (char *)n->id, .metadata = n->metadata,
		.multislice = n->multislice, .nendpoints = n->nendpoints, .shape = n->shape,
	};
	if (n->members) {
		seen.members = json_array();
		for (size_t i = 0; i < n->nmembers; i++)
			json_array_append_new(seen.members, json_string(n->members[i]));
	}
	pthread_mutex_lock(&a->mu);
	facts_copy(find_locked(a, n->name, 1), &seen);
	pthread_mutex_unlock(&a->mu);
	json_decref(seen.members);
}

void tpf_gcp_access_learn_from(struct tpf_gcp_access *a, struct tpf_gcp_access *from)
{
	if (!a || !from || a == from)
		return;
	/* Copied out first: never both mutexes at once. */
	pthread_mutex_lock(&from->mu);
	size_t n = from->n;
	struct node_entry *tmp = xcalloc(n ? n : 1, sizeof(*tmp));
	for (size_t i = 0; i < n; i++) {
		tmp[i].name = xstrdup(from->nodes[i]->name);
		facts_copy(&tmp[i], from->nodes[i]);
	}
	pthread_mutex_unlock(&from->mu);
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < n; i++)
		if (tmp[i].zone)
			facts_copy(find_locked(a, tmp[i].name, 1), &tmp[i]);
	pthread_mutex_unlock(&a->mu);
	for (size_t i = 0; i < n; i++) {
		free(tmp[i].name);
		free(tmp[i].zone);
		free(tmp[i].id);
		json_decref(tmp[i].metadata);
		json_decref(tmp[i].members);
	}
	free(tmp);
}

/* A copy of what is known of e (zone, id; metadata as a new reference). */
static void snapshot(struct tpf_gcp_access *a, struct node_entry *e, char **zone, char **id,
		     json_t **md)
{
	pthread_mutex_lock(&a->mu);
	*zone = xstrdup(e->zone);
	*id = xstrdup(e->id);
	*md = e->metadata ? json_deep_copy(e->metadata) : NULL;
	pthread_mutex_unlock(&a->mu);
}

/* e->shape, read under a->mu (node_seen writes it from any thread), and
 * the back-end that reaches it: its shape's when that one reaches nodes,
 * else the first. */
static enum tpf_gcp_shape entry_shape(struct tpf_gcp_access *a, struct node_entry *e,
				      const struct tpf_gcp_backend **be)
{
	pthread_mutex_lock(&a->mu);
	enum tpf_gcp_shape s = e->shape;
	pthread_mutex_unlock(&a->mu);
	*be = tpf_gcp_backend_of_shape(s);
	for (size_t i = 0; i < a->nreach; i++)
		if (a->reach[i] == *be)
			return s;
	*be = a->reach[0];
	return TPF_GCP_SHAPE_NODE;
}

/*
 * Make sure e's facts are about the node the worker ref names: read it
 * again when its id is not the one seen last, or look for it in each of
 * the fleet's zones when it was never seen. 1 if the node is known now, 0
 * if it is nowhere, negative on API errors.
 */
static int locate(struct tpf_gcp_access *a, struct node_entry *e, const struct tpf_worker_ref *w,
		  struct tpf_diags *d)
{
	char *zone, *id;
	json_t *md;
	snapshot(a, e, &zone, &id, &md);
	json_decref(md);
	int rc = 1;
	if (zone && (!w->node_id || tpf_streq(id, w->node_id)))
		goto done;
	size_t nz = 0;
	const char **zones = zone ? NULL : tpf_fleet_zones(a->f, &nz);
	rc = 0;
	for (size_t i = 0; i < (zone ? 1 : nz) && rc == 0; i++) {
		int g = TPF_ENOTFOUND; /* the observer records what is found */
		for (size_t b = 0; b < a->nreach && g == TPF_ENOTFOUND; b++)
			g = a->reach[b]->find(a->g, zone ? zone : zones[i], w->node, d);
		rc = g == 0 ? 1 : g == TPF_ENOTFOUND ? 0 : g;
	}
	free(zones);
done:
	free(zone);
	free(id);
	return rc;
}

/* ---- per-process facts: the key, the project, OS Login ---------------------- */

static int public_key(struct tpf_gcp_access *a, char **out, struct tpf_diags *d)
{
	pthread_mutex_lock(&a->once_mu);
	int rc = 0;
	if (!a->public_key)
		rc = tpf_ssh_public_key(a->ssh, &a->public_key, d);
	*out = xstrdup(a->public_key);
	pthread_mutex_unlock(&a->once_mu);
	return rc;
}

/* The project's metadata (new reference), or NULL when it cannot be read:
 * then a warning, once. */
static json_t *project_metadata(struct tpf_gcp_access *a, const char *address,
				struct tpf_diags *d)
{
	pthread_mutex_lock(&a->once_mu);
	int warn = 0;
	if (!a->project_read) {
		struct tpf_diags why = TPF_DIAGS_INIT;
		if (tpf_gcp_project_metadata(a->c, &a->project_md, &why) < 0) {
			a->project_error = xstrdup(why.n ? why.items[0].summary : "unknown error");
			warn = 1;
		}
		tpf_diags_release(&why);
		a->project_read = 1;
	}
	json_t *md = json_incref(a->project_md);
	if (warn)
		tpf_warn(d, address, "%s; going on as if the project's metadata set neither "
			 "enable-oslogin nor ssh-keys (set ssh.os_login: true if the project uses "
			 "OS Login)", a->project_error);
	pthread_mutex_unlock(&a->once_mu);
	return md;
}

/* OS Login: import the key (again after half its lifetime); *user: the
 * POSIX user name to log in as (caller frees). */
static int oslogin_user(struct tpf_gcp_access *a, const char *key, char **user,
			struct tpf_diags *d)
{
	double ttl = TPF_GCP_OSLOGIN_TTL;
	int rc = tpf_env_seconds("TPUFORM_OSLOGIN_TTL", &ttl, d);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&a->once_mu);
	if (!a->os_user || tpf_now_mono() - a->imported_at > ttl / 2) {
		char *email = NULL, *u = NULL;
		rc = tpf_gcp_login_email(a->c, &email, d);
		if (rc == 0)
			rc = tpf_gcp_oslogin_import(a->c, email, key, ttl, &u, d);
		if (rc == 0) {
			free(a->os_user);
			a->os_user = u;
			a->imported_at = tpf_now_mono();
		}
		free(email);
	}
	*user = rc == 0 ? xstrdup(a->os_user) : NULL;
	pthread_mutex_unlock(&a->once_mu);
	return rc;
}

/* ---- preparing a node ----------------------------------------------------- */

/* Metadata keys: add the entry to the node's ssh-keys unless some metadata
 * gives the user the key already. Call with e->mu held. */
static int ensure_key(struct tpf_gcp_access *a, struct node_entry *e, const char *zone,
		      const char *id, json_t *node_md, json_t *project_md, const char *key,
		      struct tpf_diags *d)
{
	const char *user = tpf_ssh_user(a->ssh);
	if (id && tpf_streq(e->keyed_id, id))
		return 0;
	int rc = 0, patched = 0;
	const struct tpf_gcp_backend *be;
	enum tpf_gcp_shape shape = entry_shape(a, e, &be);
	if (!tpf_gcp_key_in_metadata(node_md, project_md, user, key)) {
		char *entry = tpf_gcp_ssh_key_entry(user, key);
		struct tpf_gcp_key k = { project_md, user, key, entry };
		if (!entry)
			rc = tpf_errorx(d, e->name, "set ssh.user to a plain user name",
					"cannot give user '%s' SSH access through metadata: the name "
					"must not contain ':' or spaces", user);
		else
			rc = be->add_key(a->g, zone, e->name, shape, &k, &patched, d);
		if (patched)
			e->patched_at = tpf_now_mono();
		free(entry);
	}
	if (rc == 0)
		xstrset(&e->keyed_id, id);
	return rc;
}

/* The keys worker w publishes, read once per node id; a warning when it
 * publishes none. Call with e->mu held. */
static void host_keys(struct tpf_gcp_access *a, struct node_entry *e, const char *zone,
		      const char *id, const struct tpf_worker_ref *w, char ***keys, size_t *n,
		      struct tpf_diags *d)
{
	if (!id || !tpf_streq(e->guest_id, id)) {
		struct tpf_diags why = TPF_DIAGS_INIT;
		json_decref(e->guest);
		e->guest = NULL;
		xstrset(&e->guest_error, NULL);
		const struct tpf_gcp_backend *be;
		enum tpf_gcp_shape shape = entry_shape(a, e, &be);
		pthread_mutex_lock(&a->mu);
		json_t *members = json_deep_copy(e->members);
		pthread_mutex_unlock(&a->mu);
		int rc = be->guest_attributes(a->g, zone, e->name, shape, members, &e->guest, &why);
		json_decref(members);
		if (rc < 0)
			e->guest_error = xstrdup(why.n ? why.items[0].summary : "node not found");
		tpf_diags_release(&why);
		xstrset(&e->guest_id, id);
	}
	tpf_gcp_guest_host_keys(e->guest, w->worker, keys, n);
	if (*n)
		return;
	tpf_warn(d, w->node,
		 "worker '%s/w%d' publishes no SSH host key in its node's guest attributes "
		 "(hostkeys/)%s%s: trusting the key it presents on first use",
		 w->node, w->worker, e->guest_error ? ": " : "",
		 e->guest_error ? e->guest_error : "");
}

/* How long after tpuform installed a key (metadata patch, OS Login
 * import) a refused key is taken for the guest agent not having caught up
 * yet, and retried, even on a worker reached before. Seconds. */
#define FRESH_KEY 120.0

/* Who to log in as and which host keys to expect, for worker w. */
struct plan {
	char *user;
	char **keys;
	size_t nkeys;
	int fresh_key;
};

static void plan_release(struct plan *p)
{
	free(p->user);
	for (size_t i = 0; i < p->nkeys; i++)
		free(p->keys[i]);
	free(p->keys);
}

/*
 * Multislice (gcp_multislice.h): worker W of unit NODE is a worker of one
 * of the slice nodes NODE-0, NODE-1, ... seen last, which hold the
 * metadata and guest attributes. 1 with *out that slice's ref (node: the
 * fresh *name, worker: the index within the slice), 0 when NODE is not
 * known as a multislice unit.
 */
static int slice_ref(struct tpf_gcp_access *a, const struct tpf_worker_ref *w,
		     struct tpf_worker_ref *out, char **name)
{
	int base = 0, found = 0;
	pthread_mutex_lock(&a->mu);
	struct node_entry *unit = find_locked(a, w->node, 0);
	for (int k = 0; !found && !(unit && unit->zone); k++) {
		char *n = tpf_gcp_slice_name(w->node, k);
		struct node_entry *e = find_locked(a, n, 0);
		if (!e || !e->multislice || e->nendpoints <= 0) {
			free(n);
			break;
		}
		if (w->worker < base + e->nendpoints) {
			*out = *w;
			out->node = *name = n;
			out->node_id = NULL; /* the unit's id is slice 0's */
			out->worker = w->worker - base;
			found = 1;
		} else {
			base += e->nendpoints;
			free(n);
		}
	}
	pthread_mutex_unlock(&a->mu);
	return found;
}

static int prepare_node(struct tpf_gcp_access *a, const struct tpf_worker_ref *w, struct plan *p,
			struct tpf_diags *d);

static int prepare(struct tpf_gcp_access *a, const struct tpf_worker_ref *w, struct plan *p,
		   struct tpf_diags *d)
{
	struct tpf_worker_ref slice;
	char *name = NULL;
	memset(p, 0, sizeof(*p));
	if (!w->node)
		return 0;
	if (!slice_ref(a, w, &slice, &name))
		return prepare_node(a, w, p, d);
	int rc = prepare_node(a, &slice, p, d);
	free(name);
	return rc;
}

static int prepare_node(struct tpf_gcp_access *a, const struct tpf_worker_ref *w, struct plan *p,
			struct tpf_diags *d)
{
	pthread_mutex_lock(&a->mu);
	struct node_entry *e = find_locked(a, w->node, 1);
	pthread_mutex_unlock(&a->mu);

	pthread_mutex_lock(&e->mu);
	char *zone = NULL, *id = NULL, *key = NULL;
	json_t *md = NULL, *project = NULL;
	int rc = locate(a, e, w, d);
	if (rc <= 0)
		goto done; /* nowhere to be found: reach it as plain SSH would */
	snapshot(a, e, &zone, &id, &md);
	if ((rc = public_key(a, &key, d)) < 0)
		goto done;
	project = project_metadata(a, w->node, d);
	if (tpf_gcp_oslogin_enabled(md, project, a->f && a->f->ssh.os_login)) {
		rc = oslogin_user(a, key, &p->user, d);
		pthread_mutex_lock(&a->once_mu);
		p->fresh_key = tpf_now_mono() - a->imported_at < FRESH_KEY;
		pthread_mutex_unlock(&a->once_mu);
	} else if (!w->read_only) {
		rc = ensure_key(a, e, zone, id, md, project, key, d);
		p->fresh_key = e->patched_at > 0 && tpf_now_mono() - e->patched_at < FRESH_KEY;
	}
	if (rc == 0 && !w->host_key)
		host_keys(a, e, zone, id, w, &p->keys, &p->nkeys, d);
done:
	pthread_mutex_unlock(&e->mu);
	json_decref(project);
	json_decref(md);
	free(key);
	free(zone);
	free(id);
	return rc < 0 ? rc : 0;
}

/* ---- the wrapping transport ------------------------------------------------ */

static void access_of(const struct plan *p, struct tpf_ssh_access *x)
{
	x->user = p->user;
	x->host_keys = (const char *const *)p->keys;
	x->nhost_keys = p->nkeys;
	x->host_keys_from = "the node's guest attributes (hostkeys/)";
	x->fresh_key = p->fresh_key;
}

/* How a wrapping op reaches the worker once its access is known: connect,
 * start a dial, or run ssh(1); the op's outputs. */
enum reach { REACH_CONNECT, REACH_DIAL, REACH_INTERACTIVE };
struct reach_out {
	struct tpf_conn **conn;
	char **host_key;
	struct tpf_dial **dial;
};

static int reach(struct tpf_transport *t, const struct tpf_worker_ref *w, enum reach how,
		 const struct reach_out *o, struct tpf_diags *d)
{
	struct tpf_gcp_access *a = t->impl;
	struct plan p;
	struct tpf_ssh_access x;
	int rc = prepare(a, w, &p, d);
	if (rc == 0) {
		access_of(&p, &x);
		rc = how == REACH_CONNECT ? tpf_ssh_connect_as(a->ssh, w, &x, o->conn, o->host_key, d)
		     : how == REACH_DIAL  ? tpf_ssh_dial_start_as(a->ssh, w, &x, o->dial, d)
					  : tpf_ssh_interactive_as(a->ssh, w, &x, d);
	}
	plan_release(&p);
	return rc;
}

static int access_connect(struct tpf_transport *t, const struct tpf_worker_ref *w,
			  struct tpf_conn **out, char **host_key_out, struct tpf_diags *d)
{
	*out = NULL;
	if (host_key_out)
		*host_key_out = NULL;
	struct reach_out o = { .conn = out, .host_key = host_key_out };
	return reach(t, w, REACH_CONNECT, &o, d);
}

static int access_dial_start(struct tpf_transport *t, const struct tpf_worker_ref *w,
			     struct tpf_dial **out, struct tpf_diags *d)
{
	*out = NULL;
	struct reach_out o = { .dial = out };
	return reach(t, w, REACH_DIAL, &o, d);
}

static int access_interactive(struct tpf_transport *t, const struct tpf_worker_ref *w,
			      struct tpf_diags *d)
{
	struct reach_out o = { 0 };
	return reach(t, w, REACH_INTERACTIVE, &o, d);
}

struct tpf_gcp_access *tpf_gcp_access_new(struct tpf_gcp_client *c, struct tpf_transport *ssh,
					  const struct tpf_fleet *f)
{
	struct tpf_gcp_access *a = xcalloc(1, sizeof(*a));
	a->ops = *ssh->ops;
	a->ops.connect = access_connect;
	a->ops.dial_start = a->ops.dial_start ? access_dial_start : NULL;
	a->ops.interactive = access_interactive;
	a->tr.ops = &a->ops;
	a->tr.impl = a;
	a->c = c;
	a->ssh = ssh;
	a->f = f;
	pthread_mutex_init(&a->mu, NULL);
	pthread_mutex_init(&a->once_mu, NULL);
	tpf_gcp_client_on_node(c, node_seen, a);
	return a;
}

void tpf_gcp_access_free(struct tpf_gcp_access *a)
{
	if (!a)
		return;
	tpf_gcp_client_on_node(a->c, NULL, NULL);
	for (size_t i = 0; i < a->n; i++) {
		struct node_entry *e = a->nodes[i];
		free(e->name);
		free(e->zone);
		free(e->id);
		json_decref(e->metadata);
		json_decref(e->members);
		pthread_mutex_destroy(&e->mu);
		free(e->keyed_id);
		free(e->guest_id);
		json_decref(e->guest);
		free(e->guest_error);
		free(e);
	}
	free(a->nodes);
	tpf_strindex_release(&a->by_name);
	free(a->public_key);
	json_decref(a->project_md);
	free(a->project_error);
	free(a->os_user);
	pthread_mutex_destroy(&a->mu);
	pthread_mutex_destroy(&a->once_mu);
	free(a);
}

void tpf_gcp_access_set_backends(struct tpf_gcp_access *a, struct tpf_gcp_ctx *g,
				 const struct tpf_gcp_backend *const *reach, size_t n)
{
	a->g = g;
	a->nreach = n < 2 ? n : 2;
	for (size_t i = 0; i < a->nreach; i++)
		a->reach[i] = reach[i];
}

struct tpf_transport *tpf_gcp_access_transport(struct tpf_gcp_access *a)
{
	return &a->tr;
}

int tpf_gcp_access_create_metadata(struct tpf_gcp_access *a, json_t *declared, json_t **out,
				   struct tpf_diags *d)
{
	char *key = NULL;
	*out = NULL;
	if (public_key(a, &key, d) < 0)
		return TPF_ERROR;
	const char *user = tpf_ssh_user(a->ssh);
	char *entry = tpf_gcp_ssh_key_entry(user, key);
	int rc = 0;
	if (!entry)
		rc = tpf_errorx(d, NULL, "set ssh.user to a plain user name",
				"cannot give user '%s' SSH access through metadata: the name must "
				"not contain ':' or spaces", user);
	else
		*out = tpf_gcp_metadata_for_create(declared, user, key, entry);
	free(entry);
	free(key);
	return rc;
}

/*
 * The gcp provider's two API back-ends behind one table of operations, as
 * curl picks a protocol through its Curl_handler: Cloud TPU
 * (providers/gcp/tpu/: nodes, queued resources, multislice queued
 * resources) and Compute Engine (providers/gcp/compute/: instances, MIG
 * slices, multislice). gcp_provider.c picks a node's back-end in one place
 * (what the last refresh or create saw, else the state's record, else its
 * group's `api`) and calls through the table; nothing outside the two
 * back-end folders asks which API a node is on.
 */
#ifndef TPF_GCP_BACKEND_H
#define TPF_GCP_BACKEND_H

#include <jansson.h>
#include <pthread.h>
#include "model/live.h"
#include "model/recipe.h"
#include "config/config.h"
#include "providers/provider.h"
#include "util/diag.h"
#include "util/strindex.h"

struct tpf_gcp_client;
struct tpf_compute_client;
struct tpf_gcp_access;

/* What a node is, as its back-end made or saw it. */
enum tpf_gcp_shape {
	TPF_GCP_SHAPE_NODE,       /* Cloud TPU: a node of nodes.create */
	TPF_GCP_SHAPE_QUEUED,     /* Cloud TPU: a node of a queued resource (qr) */
	TPF_GCP_SHAPE_INSTANCE,   /* Compute Engine: one instance */
	TPF_GCP_SHAPE_SLICE,      /* Compute Engine: a multi-host slice (template, policy, MIG) */
	TPF_GCP_SHAPE_MULTISLICE, /* Compute Engine: nslices slices (compute_multislice.c) */
};

/* What a refresh or a create learnt of one node (gcp_facts.c). After a
 * delete a Compute Engine node's fact says SHAPE_NODE with no qr: nothing
 * of it is left on Compute Engine. */
struct tpf_gcp_fact {
	char *zone, *node;
	enum tpf_gcp_shape shape;
	char *qr;    /* QUEUED: its queued resource's id; else NULL */
	int nslices; /* MULTISLICE: its slices; else 0 */
};

/* The facts of one provider, thread-safe. qr_zones: the zones whose
 * queued resources were listed (a node of them with no QUEUED fact has
 * none). */
struct tpf_gcp_facts {
	pthread_mutex_t mu;
	struct tpf_gcp_fact *v;
	size_t n, alloc;
	struct tpf_strindex by_node; /* node name -> its first fact */
	char **qr_zones;
	size_t nqr_zones, aqr_zones;
};

void tpf_gcp_facts_init(struct tpf_gcp_facts *f);
void tpf_gcp_facts_release(struct tpf_gcp_facts *f);
/* Record node `node` of `zone`: its shape, qr (QUEUED; copied) and slices. */
void tpf_gcp_facts_set(struct tpf_gcp_facts *f, const char *zone, const char *node,
		       enum tpf_gcp_shape shape, const char *qr, int nslices);
/* Record that node `node` of `zone` has queued resource `qr` (NULL: none),
 * keeping its shape (SHAPE_NODE/QUEUED by qr when it had no fact). */
void tpf_gcp_facts_set_qr(struct tpf_gcp_facts *f, const char *zone, const char *node,
			  const char *qr);
/* A copy of node's fact into *out (caller frees zone, node, qr with
 * tpf_gcp_fact_release): 1, or 0 when none is known. */
int tpf_gcp_facts_get(struct tpf_gcp_facts *f, const char *zone, const char *node,
		      struct tpf_gcp_fact *out);
void tpf_gcp_fact_release(struct tpf_gcp_fact *fact);
/* The zones (fresh strings, caller frees each and the array) other than
 * `zone` where node `node` is known as a MULTISLICE; *n: how many. */
char **tpf_gcp_facts_multislice_zones(struct tpf_gcp_facts *f, const char *node,
				      const char *zone, size_t *n);
/* Remember that `zone`'s queued resources were listed; 1 if they were. */
void tpf_gcp_facts_qr_zone_add(struct tpf_gcp_facts *f, const char *zone);
int tpf_gcp_facts_qr_zone_listed(struct tpf_gcp_facts *f, const char *zone);

/* What the back-ends share: the provider's clients, access layer and facts
 * (borrowed, owned by gcp_provider.c). */
struct tpf_gcp_ctx {
	const struct tpf_fleet *fleet;
	struct tpf_gcp_client *client;
	struct tpf_compute_client *compute; /* Compute Engine, over the same client */
	struct tpf_gcp_access *access;
	struct tpf_gcp_facts facts;
};

/* One zone of a refresh, for one back-end: filled on the zone's thread. */
struct tpf_gcp_zone {
	const char *zone, *fleet;
	int queued;               /* the fleet has queued groups: list queued resources */
	struct tpf_live_set set;  /* the back-end's nodes of the zone */
	void *priv;               /* the back-end's, freed by its learn */
	struct tpf_diags diags;
	int rc;
};

/* tpuform's SSH key for a node's metadata (gcp_sshkeys.h): entry is the
 * ssh-keys line for user and key; project_md the project's metadata
 * (NULL: none), which may give the user the key already. */
struct tpf_gcp_key {
	json_t *project_md;
	const char *user, *key, *entry;
};

/*
 * A back-end. Every function returns 0 or a negative TPF_E* code with a
 * diagnostic, as the provider operation of the same name does
 * (providers/provider.h); md is the metadata to create with (ssh-keys
 * merged, gcp_access.h; borrowed). guard may be NULL.
 */
struct tpf_gcp_backend {
	const char *name; /* "tpu", "compute": for messages */
	/* Refresh, on the zone's thread: the zone's nodes into z->set. */
	int (*list_zone)(struct tpf_gcp_ctx *g, struct tpf_gcp_zone *z);
	/* Optional (NULL: none): fleet-wide lists, on a thread of their own
	 * beside the zones' (*all: the back-end's; preempted ids into ids);
	 * then each listed zone completed with them; then *all freed. */
	int (*list_fleet)(struct tpf_gcp_ctx *g, void **all, struct tpf_live_set *ids,
			  struct tpf_diags *d);
	void (*finish_zone)(struct tpf_gcp_ctx *g, void *all, struct tpf_gcp_zone *z);
	void (*free_fleet)(void *all);
	/* After the refresh: record the zone's facts (even when z->rc < 0),
	 * free z->priv. */
	void (*learn)(struct tpf_gcp_ctx *g, struct tpf_gcp_zone *z);
	int (*create)(struct tpf_gcp_ctx *g, const char *name, const struct tpf_recipe *r,
		      json_t *md, struct tpf_live_node *out, struct tpf_diags *d);
	/* fact: what is known of the node (NULL: nothing); guard->recorded may
	 * say more. */
	int (*remove)(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		      const struct tpf_gcp_fact *fact, const struct tpf_delete_guard *guard,
		      struct tpf_diags *d);
	int (*set_labels)(struct tpf_gcp_ctx *g, const char *zone, const char *name,
			  const struct tpf_gcp_fact *fact, const struct tpf_kvlist *labels,
			  struct tpf_diags *d);
	int (*patch)(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		     const struct tpf_recipe *r, unsigned fields, struct tpf_diags *d);
	int (*get)(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		   struct tpf_live_node *out, struct tpf_diags *d);

	/* The SSH access (gcp_access.c) to a node of this back-end: */
	/* Read node `name` in `zone` so that the client's observer records
	 * it: 0, TPF_ENOTFOUND without a diagnostic, or an error. */
	int (*find)(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		    struct tpf_diags *d);
	/* k->entry into the ssh-keys of the node's metadata as it is now,
	 * unless some metadata gives k->user the key; *patched: 1 when
	 * written. s: the node's shape as last seen. */
	int (*add_key)(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		       enum tpf_gcp_shape s, const struct tpf_gcp_key *k, int *patched,
		       struct tpf_diags *d);
	/* The host keys its workers publish, as the Cloud TPU API's
	 * GetGuestAttributesResponse (*out, new reference: guestAttributes[i]
	 * for worker i); members: a SLICE's member names in worker order (a
	 * JSON array, borrowed). Errors into why. */
	int (*guest_attributes)(struct tpf_gcp_ctx *g, const char *zone, const char *name,
				enum tpf_gcp_shape s, json_t *members, json_t **out,
				struct tpf_diags *why);
};

extern const struct tpf_gcp_backend tpf_gcp_tpu_backend;     /* tpu/tpu_backend.c */
extern const struct tpf_gcp_backend tpf_gcp_compute_backend; /* compute/compute_backend.c */

/* The group of node `name` in the fleet file (names are
 * FLEET-GROUP-INDEX; borrowed), or NULL. */
const struct tpf_group *tpf_gcp_group_of(const struct tpf_fleet *f, const char *name);

/* The back-end of a recorded shape. */
const struct tpf_gcp_backend *tpf_gcp_backend_of_shape(enum tpf_gcp_shape s);
/* The back-end of an API as a group or recipe names it (model/compute.h). */
const struct tpf_gcp_backend *tpf_gcp_backend_of_api(enum tpf_api api);

#endif

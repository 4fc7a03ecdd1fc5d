/*
 * fakegcp's Compute Engine v1 subset (fg_compute*.c), private to those
 * files. What it serves and where each behaviour comes from:
 * tests/fakegcp/README.md ("Compute Engine") and docs/compute-engine.md.
 *
 * Resources are kept as the JSON served, in maps under one struct (ce);
 * the emulator's own bookkeeping sits in the same objects under keys that
 * start with "__" and is stripped before anything is answered. Every
 * function here needs fg_lock() held unless it says otherwise. Time moves
 * on in ce_tick(), called before any request reads or changes the world
 * (no background thread, like the TPU side).
 */
#ifndef FG_COMPUTE_H
#define FG_COMPUTE_H

#include "tests/fakegcp/fakegcp.h"

#define CE_PATH "/compute/v1/projects/"

/* A TPU machine type (docs/compute-engine.md, section 1). */
struct ce_mtype {
	const char *name;
	const char *accel;    /* guestAcceleratorType: ct5p, ct6e, tpu7x */
	int chips;
	int cpus;
	int memory_gb;
	const char *topology; /* of one VM */
	const char *regions;  /* space-separated regions that offer it */
};

struct ce_world {
	json_t *inst;     /* "ZONE" -> name -> Instance */
	json_t *migs;     /* "ZONE" -> name -> InstanceGroupManager */
	json_t *tmpl;     /* "global" | "regions/R" -> name -> InstanceTemplate */
	json_t *rp;       /* "REGION" -> name -> ResourcePolicy */
	json_t *ops;      /* "zones/Z" | "regions/R" | "global" -> name -> Operation */
	json_t *req_ids;  /* requestId -> {"scope", "name"} of its operation */
	json_t *stockout; /* "ZONE" or "ZONE/MACHINE_TYPE" -> "on" | "details" */
	json_t *quota;    /* "REGION" -> {"limit": chips, "mode": "sync"|"operation"} */
	json_t *flex_ok;  /* "ZONE" -> true: flex-start capacity granted */
	json_t *unreach;  /* "ZONE" -> true: the zone's backend cannot be reached */
	json_t *active;   /* "ZONE" -> name -> true: instances with a timer (__next,
			   * __gone, __stop, __wait): the only ones a tick visits */
	char *base;       /* "http://HOST/compute/v1/", from the last request */
	double stage_s;   /* --compute-stage-seconds */
	double delete_s;  /* --delete-seconds: an instance's or MIG's delete */
	double wait_s;    /* --compute-wait-seconds */
	uint64_t gen;     /* bumped by every change a MIG could see (ce_changed) */
};
extern struct ce_world ce;

/* One parsed API request. */
struct ce_req {
	struct fg_req *r;
	char *seg[12];   /* path segments after /compute/v1/projects/ */
	int nseg;
	json_t *body;    /* parsed body or NULL */
};

/* ---- fg_compute.c: routing, errors, names, operations ---- */
/* Google's Compute error body: {"error": {"code", "message", "errors":
 * [{"message", "domain": "global", "reason"}]}}. */
void ce_error(struct fg_req *r, unsigned http, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* 404 notFound "The resource 'projects/P/PATH' was not found". */
void ce_not_found(struct fg_req *r, const char *path);
/* 400 resourceNotReady "The resource 'projects/P/zones/ZONE/COLLECTION/NAME'
 * is not ready": a delete of a resource whose delete already runs (the
 * real wording and reason, as quoted in opstrace/opstrace issue 1218). */
void ce_not_ready(struct fg_req *r, const char *collection, const char *zone, const char *name);
/* "Invalid value for field 'FIELD': 'VALUE'. WHY" (400 invalid). */
void ce_invalid(struct fg_req *r, const char *field, const char *value, const char *why);
/* For partial responses (fg_fields.c, fg_compute_schema.c): the type an
 * answer of Compute `kind` has ("compute#instanceList" -> "List:Instance";
 * fresh, NULL when not a Compute kind), and the type of field `name` of
 * such a type (fg_field_type_fn). */
char *ce_kind_type(const char *kind);
char *ce_field_type(const char *type, const char *name, int *ok);
/* A query parameter or NULL. */
const char *ce_arg(struct fg_req *r, const char *key);
/* Unknown query parameters (besides the standard ones): 400, -1. */
int ce_check_query(struct fg_req *r, const char *const *allowed);
/* base + "projects/P/" + rel (fresh). */
char *ce_url(const char *rel);
/* The last path segment of a full or partial URL, or the string itself. */
const char *ce_basename(const char *url);
/* "us-central1" of "us-central1-c" (fresh). */
char *ce_region_of(const char *zone);
/* 1 if the zone is one the emulator serves. */
int ce_zone_ok(const char *zone);
/* The machine type called name, or NULL. */
const struct ce_mtype *ce_mtype(const char *name);
/* 1 if the type is offered in zone's region. */
int ce_mtype_in_zone(const struct ce_mtype *t, const char *zone);
/* 1 if url (full or partial) names a boot image the emulator knows. */
int ce_image_ok(const char *url);
/* The i-th zone served, NULL past the end. */
const char *ce_zone_at(size_t i);
/* Sort an array of objects by "__key", else "name". */
void ce_sort(json_t *arr);
/* A new 19-digit id (fresh string). */
char *ce_new_id(void);
/* A new fingerprint: base64 of 8 random bytes (fresh). */
char *ce_fingerprint(void);
/* RFC 3339 with milliseconds and -07:00 style offset, as Compute prints. */
void ce_timestamp(char out[40]);
/* A light list entry for res (borrowed, referenced): {"__ref", "__zone",
 * "__key": key (stolen, NULL: the name)}; ce_public unwraps it. */
json_t *ce_wrap(json_t *res, const char *zone, char *key);
/* The resource (or a ce_wrap entry's) without its "__" keys: a new object whose
 * values are the resource's own (referenced), to serialize under the lock. */
json_t *ce_public(json_t *res);
/* obj[k1][k2] (borrowed), creating obj[k1] when create is set. */
json_t *ce_map2(json_t *obj, const char *k1, const char *k2);
json_t *ce_scope(json_t *obj, const char *k1, int create);
/*
 * A new RUNNING operation in scope ("zones/Z", "regions/R" or "global") on
 * the resource at target (relative "projects/P/..."), done after `after`
 * seconds (< 0: only when ce_op_finish says so). Borrowed.
 */
json_t *ce_op_new(const char *scope, const char *type, const char *target, const char *target_id,
		  double after);
/* Make op end now (error: stolen {"errors": [...]} or NULL; http: its status). */
void ce_op_finish(json_t *op, json_t *error, int http);
/* An operation error entry {"code", "message"} (fresh). */
json_t *ce_op_errors(const char *code, const char *message);
/* The operation remembered for the request's requestId, or NULL; -1 after
 * answering 400 for a malformed one. */
int ce_request_id(struct fg_req *r, json_t **op);
/* Remember op for the request's requestId (if it has one). */
void ce_request_id_keep(struct fg_req *r, json_t *op);
/* Answer an operation (a public copy). */
void ce_reply_op(struct fg_req *r, json_t *op);
/* Something a MIG could see changed (an instance, capacity, a MIG): the
 * next tick looks at every MIG again; otherwise quiet MIGs are skipped. */
void ce_changed(void);
/* Time moves on: instances, MIGs, operations. */
void ce_tick(void);
/* Page through items (an array sorted by ce_sort's key, stolen):
 * maxResults/pageToken of r. Sets *page (fresh) and *next (fresh or NULL);
 * -1 after answering 400. */
int ce_page(struct fg_req *r, json_t *items, json_t **page, char **next);
/* Resources to list without copying them: added, then sorted and paged. */
struct ce_item {
	char *key;        /* owned */
	json_t *res;      /* borrowed */
	const char *zone; /* borrowed */
};
struct ce_items {
	struct ce_item *v;
	size_t n, a;
};
/* key: fresh, or NULL for the resource's name. */
void ce_items_add(struct ce_items *it, json_t *res, const char *zone, char *key);
void ce_items_free(struct ce_items *it);
/* Sort by key and cut the page of the request's maxResults/pageToken:
 * *page an array of ce_wrap entries (fresh), *next fresh or NULL; -1
 * after answering 400. */
int ce_items_page(struct fg_req *r, struct ce_items *it, json_t **page, char **next);
/* A list answer {kind, id, items?, nextPageToken?, selfLink}. */
json_t *ce_list_json(const char *kind, const char *rel, json_t *items, char *next);

/* ---- fg_compute_filter.c: the `filter` of list calls ---- */
/* 0 and *f (opaque, freed with ce_filter_free; NULL filter: match all)
 * when filter is understood, else -1 after answering 400. */
struct ce_filter;
int ce_filter_parse(struct fg_req *r, const char *filter, struct ce_filter **f);
int ce_filter_match(const struct ce_filter *f, json_t *res);
void ce_filter_free(struct ce_filter *f);

/* ---- fg_compute_schema.c: request bodies ---- */
/* Load tests/fakegcp/compute.v1.schema.json (or next to the program). */
int ce_schema_load(const char *path, char *err, size_t errlen);
void ce_schema_free(void);
/* Check body as message `msg` ("Instance"...), named `at` ("resource") in
 * messages; -1 after answering 400. */
int ce_validate(struct fg_req *r, const char *msg, json_t *body, const char *at);

/* ---- fg_compute_inst.c: instances ---- */
void ce_instances(struct ce_req *q);
void ce_instances_aggregated(struct ce_req *q);
/*
 * Check an instance body (Instance, or InstanceProperties under
 * `at`="resource.properties" with template=1: bare machine type, no name,
 * no zone); *mt the machine type. -1 after answering 400.
 */
int ce_instance_check(struct fg_req *r, json_t *b, const char *zone, const char *at, int template,
		      const struct ce_mtype **mt);
/* A new instance in zone from checked properties (copied), added and
 * PENDING; flex: it waits for capacity. Borrowed. */
json_t *ce_instance_create(const char *zone, const char *name, json_t *props, const char *mig);
/* Let the next ticks visit inst (it has a timer now). */
void ce_activate(json_t *inst, const char *zone);
/* Start deleting it (STOPPING, gone after --op-seconds). */
void ce_instance_delete(json_t *inst);
/* Preempt (admin): -1 with *why if it cannot be. */
int ce_instance_preempt(const char *zone, const char *name, const char **why);
/* The error ({"errors":[...]}) that creating `count` VMs of type mt in
 * zone now meets (quota, else stockout unless flex: flex-start waits
 * instead), or NULL; *http its status, *sync 1 when the quota hook wants a
 * synchronous 403 rather than a failed operation. */
/* The stockout ("on", "details") holding machine type mtype in zone: the
 * zone's own, else the one of that machine type there; NULL when none
 * (fg_compute_admin.c; each lasts until the admin clears it). */
const char *ce_stockout_of(const char *zone, const char *mtype);
json_t *ce_capacity_error(const char *zone, const struct ce_mtype *mt, int count, int flex,
			  int *http, int *sync);
/* 1 if s is a valid resource name ([a-z]([-a-z0-9]{0,61}[a-z0-9])?). */
int ce_name_ok(const char *s);
/* Label rules; -1 after answering 400 (field at.labels). */
int ce_check_labels(struct fg_req *r, json_t *labels, const char *at);
/* Metadata items (keys, duplicates, sizes); -1 after answering 400. */
int ce_check_metadata(struct fg_req *r, json_t *md, const char *at);
/* An aggregated list's items: every zone, with the page's resources (each
 * with "__zone") under key, or a NO_RESULTS_ON_PAGE warning, or (an
 * unreachable zone) an UNREACHABLE warning. page stolen. */
json_t *ce_aggregate(json_t *page, const char *key);
/* The aggregated list answer {kind, id, items, unreachables?,
 * nextPageToken?, selfLink}: unreachable zones are listed in unreachables
 * when returnPartialSuccess is true. rel: "aggregated/instances". */
json_t *ce_aggregated_json(struct fg_req *r, const char *kind, const char *rel, json_t *items,
			   char *next);
/* 1 (after answering 503) if zone is unreachable (admin). */
int ce_unreachable(struct fg_req *r, const char *zone);
/* The instance's metadata items as an object of strings (fresh). */
json_t *ce_md_obj(json_t *inst);
void ce_instances_tick(double now);
int ce_is_flex(json_t *props);

/* ---- fg_compute_mig.c: templates, resource policies, MIGs ---- */
void ce_templates(struct ce_req *q, const char *scope);
void ce_policies(struct ce_req *q, const char *region);
void ce_migs(struct ce_req *q);
void ce_migs_aggregated(struct ce_req *q);
void ce_instance_groups(struct ce_req *q);
void ce_migs_tick(double now);
/* Admin: many RUNNING MIGs (migs) or instances at once (fg_compute_mig.c). */
void ce_seed(struct fg_req *r, int migs);
/* VMs of a slice of type mt with topology t; 0 if they do not fit. */
int ce_topology_vms(const struct ce_mtype *mt, const char *t);

#endif

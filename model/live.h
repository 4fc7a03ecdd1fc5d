/*
 * Nodes as a provider reports them: the live side of every diff.
 *
 * Shared by providers (which fill them), plan (which diffs them against the
 * desired nodes and the state) and engine (which acts on them), so they live
 * in the model layer, below all three.
 *
 * Contract mirrored: Cloud TPU v2 Node (docs/cloud-tpu-api.md): states are
 * the API's Node.state strings ("CREATING", "READY", "PREEMPTED", ...),
 * health is Node.health, endpoints are Node.networkEndpoints.
 *
 * Memory: every char * in these structs is owned by the struct and freed by
 * the _release functions.
 */
#ifndef TPF_LIVE_H
#define TPF_LIVE_H

#include <stddef.h>
#include "model/recipe.h"

/* One worker's address: Node.networkEndpoints[i]. */
struct tpf_endpoint {
	char *ip;          /* internal ipAddress, may be NULL */
	char *external_ip; /* accessConfig.externalIp, may be NULL */
	int port;          /* ssh port to use (local: 0) */
};

/* A node as the provider reports it. */
struct tpf_live_node {
	char *name;        /* short node id ("llm-sweep-a-0"), not the full resource name */
	char *id;          /* Node.id */
	char *state;       /* Node.state */
	char *health;      /* Node.health, may be NULL */
	char *create_time; /* RFC 3339, may be NULL */
	/* accelerator_type, runtime_version, zone, scheduling and labels as
	 * live; workers = number of endpoints (or the table's if none yet). */
	struct tpf_recipe recipe;
	struct tpf_endpoint *endpoints;
	size_t nendpoints;
	/*
	 * Queued resources (docs/cloud-tpu-api.md section 5): the state of the queued
	 * resource that requested this node (QueuedResource.state.state, e.g.
	 * "WAITING_FOR_RESOURCES"), NULL when none is known. recipe.queued is
	 * then 1. When the queued resource speaks for the node -- no node
	 * exists yet, or the queued resource FAILED or is SUSPENDED -- `state`
	 * is the same string as this one and `id` is the node's or NULL.
	 */
	char *queued_state;
	/*
	 * What the provider says about the node's condition, for people (shown
	 * by `show` and as notes by `plan`, never acted on; NULL when none):
	 * Node.healthDescription; Node.symptoms as "TYPE (worker W): details"
	 * joined by "; "; Node.upcomingMaintenance as "TYPE maintenance STATUS,
	 * window START to END" (docs/cloud-tpu-api.md section 4).
	 */
	char *health_description;
	char *symptoms;
	char *maintenance;
	/* The upcoming maintenance window's start as the API gives it (RFC
	 * 3339: UpcomingMaintenance.windowStartTime of the Cloud TPU Node, or
	 * of a Compute Engine instance's resourceStatus), NULL when none is
	 * scheduled or it has no start. watch passes it to the node's jobs
	 * as their disruption's deadline (docs/recovery.md). */
	char *maintenance_start;
	/*
	 * 1: a flex-start node waiting for capacity (docs/compute-engine.md
	 * "Flex-start"): a Compute Engine FLEX_START instance still PENDING,
	 * or a flex-start slice whose MIG has made no member yet. state is
	 * then CREATING; the wait began at create_time. The plan shows it
	 * waiting and gives it up after the group's flex_start.wait.
	 */
	int capacity_wait;
	/*
	 * A multislice node whose slices are separate resources (Compute
	 * Engine: one MIG each): the indexes of the slices that are lost
	 * (dead, or gone), comma-separated ("1", "0,2"), when some are and
	 * state is then the lost slice's (PREEMPTED, TERMINATED); NULL when
	 * none is. The plan recreates only these.
	 */
	char *lost_slices;
};

struct tpf_live_set {
	struct tpf_live_node *nodes;
	size_t n, alloc;
	/* Zones the provider could not list because the project cannot use
	 * them (gcp: "Location Z is not found or access is unauthorized").
	 * They are read as holding none of the fleet's nodes, so creates move
	 * on; but a node the state records there may still exist, and
	 * engine/pipeline/refresh.c refuses to go on rather than create a second one. */
	char **unlisted_zones;
	size_t nunlisted, unlisted_alloc;
	/* Ids of instances the provider knows were preempted (Compute
	 * Engine: the targetIds of compute.instances.preempted operations,
	 * docs/compute-engine.md "Preemption"), so that the plan can say a
	 * node that is gone was preempted (a spot VM whose termination action
	 * is DELETE), not deleted outside tpuform. */
	char **preempted_ids;
	size_t npreempted, preempted_alloc;
};

void tpf_live_node_release(struct tpf_live_node *n);
void tpf_live_node_copy(struct tpf_live_node *dst, const struct tpf_live_node *src);
void tpf_live_set_release(struct tpf_live_set *s);
/* The group and index ln's tpuform-group and tpuform-index labels give
 * (group borrowed from ln): 0, or -1 when either is missing or the index is
 * not a number from 0 to 1000000. */
int tpf_live_node_slot(const struct tpf_live_node *ln, const char **group, int *index);
/* Borrowed pointer or NULL. */
struct tpf_live_node *tpf_live_set_find(const struct tpf_live_set *s, const char *name);
/* Record that zone could not be listed (copied; once per zone). */
void tpf_live_set_add_unlisted(struct tpf_live_set *s, const char *zone);
/* 1 when zone was recorded by tpf_live_set_add_unlisted. */
int tpf_live_set_zone_unlisted(const struct tpf_live_set *s, const char *zone);
/* Record that the instance of id `id` was preempted (copied). */
void tpf_live_set_add_preempted(struct tpf_live_set *s, const char *id);
/* 1 when id was recorded by tpf_live_set_add_preempted. */
int tpf_live_set_was_preempted(const struct tpf_live_set *s, const char *id);
/* Append a zeroed node and return it. */
struct tpf_live_node *tpf_live_set_add(struct tpf_live_set *s);

#endif

/*
 * Helpers shared by the files of plan/ (not for cmd/).
 */
#ifndef TPF_PLAN_INTERNAL_H
#define TPF_PLAN_INTERNAL_H

#include "plan/plan.h"

/* Deep copy (dst must be zeroed or a valid node: it is released first). */
void tpf_desired_node_copy(struct tpf_desired_node *dst, const struct tpf_desired_node *src);
/* Release and free a heap node (NULL is fine). */
void tpf_desired_node_free(struct tpf_desired_node *n);

/* Append a zeroed action of the given kind for node; returns it. */
struct tpf_action *tpf_plan_add(struct tpf_plan *p, enum tpf_action_kind kind, const char *node);
/* Free what an action owns (not the action itself, which lives in an array). */
void tpf_action_release(struct tpf_action *a);
/* Append an attribute change; before/after may be NULL. */
void tpf_action_change(struct tpf_action *a, const char *field, const char *before,
		       const char *after, int forces, int sensitive);

#endif

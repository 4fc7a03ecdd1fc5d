/*
 * Helpers shared by the files of plan/ only (tests/layering.sh refuses
 * this header anywhere else; what other layers need is in plan/plan.h).
 */
#ifndef TPF_PLAN_INTERNAL_H
#define TPF_PLAN_INTERNAL_H

#include "plan/plan.h"

/* Release and free a heap node (NULL is fine). */
void tpf_desired_node_free(struct tpf_desired_node *n);

/* Append an attribute change; before/after may be NULL. */
void tpf_action_change(struct tpf_action *a, const char *field, const char *before,
		       const char *after, int forces, int sensitive);

#endif

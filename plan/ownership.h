/*
 * What a state owns (docs/state.md "What a fleet owns", docs/design.md section 4).
 *
 * A fleet name is not unique in a project: two researchers may both pick
 * `fleet: llm`. So a node belongs to this state only when it carries this
 * state's lineage label (tpuform-lineage, model/recipe.h), or -- for nodes
 * made by tpuform before that label existed -- when it has no lineage label
 * and this state lists it by name (such a node gets the label in place, as
 * a labels update in the next apply). Anything else that carries the
 * fleet's label belongs to someone else, and is never planned on.
 *
 * Pure: no I/O.
 */
#ifndef TPF_OWNERSHIP_H
#define TPF_OWNERSHIP_H

#include "model/live.h"
#include "state/state.h"
#include "util/diag.h"

enum tpf_owner {
	TPF_OWNER_THIS,    /* carries this state's lineage label */
	TPF_OWNER_LEGACY,  /* no lineage label, listed by this state (pending or created) */
	TPF_OWNER_OTHER,   /* carries another state's lineage label */
	TPF_OWNER_UNKNOWN, /* no lineage label, and this state does not list it */
};

/* Who owns ln, as seen from st (see above). A state with no lineage owns
 * only what it lists and what carries no lineage label. */
enum tpf_owner tpf_owner_of(const struct tpf_live_node *ln, const struct tpf_state *st);

/*
 * Remove from *live every node st does not own (TPF_OWNER_OTHER and
 * TPF_OWNER_UNKNOWN), so that no plan can act on it, with one error per
 * node naming the node, the other lineage and the fix (rename `fleet`, use
 * the other state, or `tpuform import` an unlabelled node that is this
 * fleet's). Returns 0 when every node is owned, else TPF_EFOREIGN: the
 * caller stops, as for a failed refresh.
 */
int tpf_ownership_filter(struct tpf_live_set *live, const struct tpf_state *st,
			 struct tpf_diags *d);

#endif

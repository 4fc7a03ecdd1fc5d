/*
 * What a state owns (plan/ownership.h).
 */
#include "plan/ownership.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

enum tpf_owner tpf_owner_of(const struct tpf_live_node *ln, const struct tpf_state *st)
{
	const char *label = tpf_kvlist_get(&ln->recipe.labels, TPF_LABEL_LINEAGE);
	if (label) {
		char mine[TPF_LINEAGE_LABEL_LEN + 1];
		return tpf_lineage_label(st->lineage, mine) && !strcmp(label, mine)
			       ? TPF_OWNER_THIS
			       : TPF_OWNER_OTHER;
	}
	return tpf_state_find((struct tpf_state *)st, ln->name) ? TPF_OWNER_LEGACY
								: TPF_OWNER_UNKNOWN;
}

static void foreign_error(const struct tpf_live_node *ln, const struct tpf_state *st,
			  enum tpf_owner who, struct tpf_diags *d)
{
	const char *fleet = tpf_kvlist_get(&ln->recipe.labels, TPF_LABEL_FLEET);
	const char *zone = ln->recipe.zone ? ln->recipe.zone : "ZONE";
	if (!fleet)
		fleet = "";
	if (who == TPF_OWNER_OTHER) {
		char mine[TPF_LINEAGE_LABEL_LEN + 1];
		tpf_errorx(d, ln->name,
			   "Another state manages a fleet of the same name in this project, and "
			   "tpuform never touches its nodes. Rename 'fleet' in this fleet file, or "
			   "run tpuform with the state that owns the node (its lineage begins with "
			   "the label's value; 'tpuform state pull' prints a state's lineage).",
			   "node '%s' in zone '%s' belongs to another state: it carries %s=%s, and "
			   "this state's lineage is %s (%s=%s)",
			   ln->name, zone, TPF_LABEL_LINEAGE,
			   tpf_kvlist_get(&ln->recipe.labels, TPF_LABEL_LINEAGE),
			   st->lineage ? st->lineage : "unset", TPF_LABEL_LINEAGE,
			   tpf_lineage_label(st->lineage, mine) ? mine : "none");
		return;
	}
	char *hint = xasprintf("An earlier tpuform created it for fleet '%s' without a lineage "
			       "label, and this state does not list it, so it may be another "
			       "state's. If it is this fleet's, adopt it with 'tpuform import %s "
			       "%s/%s'; otherwise rename 'fleet' in this fleet file, or run "
			       "tpuform with the state that lists it.",
			       fleet, ln->name, zone, ln->name);
	tpf_errorx(d, ln->name, hint,
		   "node '%s' in zone '%s' carries %s=%s but no %s label, and this state (lineage "
		   "%s) does not list it",
		   ln->name, zone, TPF_LABEL_FLEET, fleet, TPF_LABEL_LINEAGE,
		   st->lineage ? st->lineage : "unset");
	free(hint);
}

int tpf_ownership_filter(struct tpf_live_set *live, const struct tpf_state *st,
			 struct tpf_diags *d)
{
	size_t kept = 0;
	int rc = 0;
	for (size_t i = 0; i < live->n; i++) {
		struct tpf_live_node *ln = &live->nodes[i];
		enum tpf_owner who = tpf_owner_of(ln, st);
		if (who == TPF_OWNER_OTHER || who == TPF_OWNER_UNKNOWN) {
			foreign_error(ln, st, who, d);
			tpf_live_node_release(ln);
			rc = TPF_EFOREIGN;
			continue;
		}
		if (kept != i)
			live->nodes[kept] = *ln;
		kept++;
	}
	live->n = kept;
	return rc;
}

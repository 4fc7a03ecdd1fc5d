/*
 * Ownership at delete time (providers/provider.h tpf_delete_check;
 * docs/design.md section 4). The refresh's ownership filter
 * (plan/ownership.c) judged the node as it was then; between that refresh
 * and the delete (a long apply, a watch round, a saved plan applied
 * later) the name may have been deleted and made again by another state.
 * So every provider reads what it is about to delete and asks this one
 * rule, which the refresh rule mirrors with one difference: a node without
 * a lineage label is ours only when its id is the one this state recorded,
 * not merely when this state lists its name.
 */
#include "providers/provider.h"
#include "model/recipe.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static const char *or_none(const char *s)
{
	return s && *s ? s : "none";
}

int tpf_delete_check(const struct tpf_delete_guard *g, const char *kind, const char *name,
		     const char *zone, const char *found_lineage, const char *found_id,
		     struct tpf_diags *d)
{
	if (!g)
		return 0;
	const char *mine = g->lineage && *g->lineage ? g->lineage : NULL;
	char *where = zone ? xasprintf(" in zone '%s'", zone) : xstrdup("");
	int rc = 0;
	if (found_lineage && *found_lineage) {
		if (mine && !strcmp(found_lineage, mine))
			goto done;
		rc = tpf_errorx(d, name,
				"Another state made it since this state's refresh (the name was "
				"deleted and made again), so this state's own is gone already. Run "
				"'tpuform plan' again to see the state as it is now, and manage this "
				"one with the state whose lineage begins with that value ('tpuform "
				"state pull' prints a state's lineage).",
				"refusing to delete %s '%s'%s: it belongs to another state: it "
				"carries %s=%s, and this state's is %s",
				kind, name, where, TPF_LABEL_LINEAGE, found_lineage, or_none(mine));
		goto done;
	}
	if (g->id && *g->id && found_id && !strcmp(g->id, found_id))
		goto done; /* made before the label existed, and the very one recorded */
	rc = tpf_errorx(d, name,
			"A name alone never proves that a node is this state's. If it is this "
			"fleet's, adopt it with 'tpuform import' (which labels it), then delete it; "
			"otherwise delete it by hand, or leave it to whoever made it.",
			"refusing to delete %s '%s'%s: it carries no %s label, and its id (%s) is "
			"not the id this state records for it (%s)",
			kind, name, where, TPF_LABEL_LINEAGE, or_none(found_id), or_none(g->id));
done:
	free(where);
	if (!rc && g->sending)
		g->sending(g->ctx);
	return rc ? TPF_EFOREIGN : 0;
}

int tpf_delete_check_live(const struct tpf_delete_guard *g, const char *kind, const char *name,
			  const char *zone, const struct tpf_live_node *ln, struct tpf_diags *d)
{
	return tpf_delete_check(g, kind, name, zone,
				tpf_kvlist_get(&ln->recipe.labels, TPF_LABEL_LINEAGE), ln->id, d);
}

/*
 * Checkpoints recorded from job facts (engine/checkpoints.h).
 */
#include "engine/checkpoints.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <string.h>

const char *tpf_checkpoint_of(const struct tpf_job_facts *facts, const char *node)
{
	const struct tpf_job_fact *best = NULL;
	for (size_t i = 0; facts && i < facts->n; i++) {
		const struct tpf_job_fact *sf = &facts->items[i];
		if (!sf->checkpoint || !*sf->checkpoint || strcmp(sf->node, node))
			continue;
		if (!best || sf->worker < best->worker)
			best = sf;
	}
	return best ? best->checkpoint : NULL;
}

size_t tpf_checkpoints_news(const struct tpf_state *st, const struct tpf_job_facts *facts)
{
	size_t n = 0;
	for (size_t i = 0; i < st->nnodes; i++)
		n += (size_t)tpf_state_checkpoint_differs(&st->nodes[i],
							   tpf_checkpoint_of(facts, st->nodes[i].name));
	return n;
}

size_t tpf_checkpoints_record(struct tpf_state *st, const struct tpf_job_facts *facts,
			      const char *at,
			      void (*on_change)(const struct tpf_state_node *sn, void *ctx),
			      void *ctx)
{
	size_t n = 0;
	for (size_t i = 0; i < st->nnodes; i++) {
		struct tpf_state_node *sn = &st->nodes[i];
		if (!tpf_state_record_checkpoint(st, sn->name, tpf_checkpoint_of(facts, sn->name),
						 at))
			continue;
		n++;
		/* st->nodes[i] again: recording does not add or remove nodes. */
		if (on_change)
			on_change(&st->nodes[i], ctx);
	}
	return n;
}

char *tpf_checkpoint_words(const struct tpf_state_node *sn, double now)
{
	if (!sn || !sn->last_checkpoint)
		return xstrdup("no checkpoint reported");
	double at = sn->checkpoint_at ? tpf_parse_rfc3339(sn->checkpoint_at) : -1;
	if (at <= 0)
		return xasprintf("last checkpoint %s", sn->last_checkpoint);
	double age = now > at ? now - at : 0;
	char ago[32];
	if (age < 60)
		snprintf(ago, sizeof(ago), "%ds", (int)age);
	else if (age < 3600)
		snprintf(ago, sizeof(ago), "%dm", (int)(age / 60));
	else if (age < 86400)
		snprintf(ago, sizeof(ago), "%.1fh", age / 3600);
	else
		snprintf(ago, sizeof(ago), "%.1fd", age / 86400);
	return xasprintf("last checkpoint %s, %s ago", sn->last_checkpoint, ago);
}

/*
 * Elastic slices: the running set and the renumbering (plan/elastic.h).
 */
#include "plan/elastic.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

int tpf_elastic_running(const char *list, int nslices, unsigned char *on)
{
	size_t size = (size_t)(nslices > 0 ? nslices : 0);
	int count = 0, last = -1;
	memset(on, 0, size);
	for (const char *s = list; s;) {
		char *end;
		if (*s < '0' || *s > '9')
			break;
		long k = strtol(s, &end, 10);
		if (k <= last || k >= nslices)
			break;
		on[k] = 1;
		last = (int)k;
		count++;
		if (!*end)
			return count;
		if (*end != ',')
			break;
		s = end + 1;
	}
	memset(on, 1, size);
	return list ? -1 : nslices;
}

char *tpf_elastic_list(const unsigned char *on, int nslices)
{
	struct tpf_buf b = TPF_BUF_INIT;
	int n = 0;
	for (int k = 0; k < nslices; k++)
		if (on[k])
			tpf_buf_addf(&b, "%s%d", n++ ? "," : "", k);
	char *out = tpf_buf_detach(&b, NULL);
	return out ? out : xstrdup("");
}

void tpf_elastic_view(const struct tpf_state_node *n, int worker, struct tpf_elastic_view *v)
{
	int nslices = tpf_recipe_slices(&n->recipe);
	int per = tpf_recipe_slice_workers(&n->recipe);
	int own = worker / per;
	v->running = 1;
	v->slice = own;
	v->nslices = nslices;
	v->first = 0;
	if (!n->elastic_slices || nslices < 2)
		return;
	unsigned char *on = xcalloc((size_t)nslices, 1);
	if (tpf_elastic_running(n->elastic_slices, nslices, on) < 1) {
		free(on);
		return;
	}
	int rank = 0, first = -1, count = 0;
	for (int k = 0; k < nslices; k++) {
		if (!on[k])
			continue;
		if (first < 0)
			first = k;
		if (k < own)
			rank++;
		count++;
	}
	v->running = own < nslices && on[own];
	v->slice = rank;
	v->nslices = count;
	v->first = first * per;
	free(on);
}

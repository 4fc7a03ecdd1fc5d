/*
 * Quota and capacity, the two ways a create fails for want of TPUs
 * (docs/cloud-tpu-api.md section 6): quota is refused at once
 * with HTTP 429; a stockout is a successful POST whose operation ends with
 * error code 8.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

struct quota {
	char *zone;
	char *type; /* "*" for any */
	enum fg_sched sched;
	long limit;
};

struct capacity {
	char *zone;
	long limit;
};

static struct quota *quotas;
static size_t n_quotas, a_quotas;
static struct capacity *caps;
static size_t n_caps, a_caps;

const char *fg_sched_name(enum fg_sched s)
{
	return s == FG_SPOT ? "spot" : s == FG_PREEMPTIBLE ? "preemptible" : "on-demand";
}

static int parse_sched(const char *s, enum fg_sched *out)
{
	if (!strcmp(s, "spot"))
		*out = FG_SPOT;
	else if (!strcmp(s, "preemptible"))
		*out = FG_PREEMPTIBLE;
	else if (!strcmp(s, "on-demand") || !strcmp(s, "on_demand") || !strcmp(s, "ondemand"))
		*out = FG_ON_DEMAND;
	else
		return -1;
	return 0;
}

static int parse_long(const char *s, long *out)
{
	char *end;

	if (!*s)
		return -1;
	*out = strtol(s, &end, 10);
	return *end ? -1 : 0;
}

int fg_quota_set(const char *zone, const char *type, const char *sched, long value)
{
	enum fg_sched s;

	if (!*zone || !*type || parse_sched(sched, &s) < 0)
		return -1;
	for (size_t i = 0; i < n_quotas; i++) {
		struct quota *q = &quotas[i];
		if (strcmp(q->zone, zone) || strcmp(q->type, type) || q->sched != s)
			continue;
		if (value >= 0) {
			q->limit = value;
		} else {
			free(q->zone);
			free(q->type);
			memmove(q, q + 1, (n_quotas - i - 1) * sizeof(*q));
			n_quotas--;
		}
		return 0;
	}
	if (value < 0)
		return 0;
	XGROW(quotas, n_quotas + 1, a_quotas);
	quotas[n_quotas++] = (struct quota){ xstrdup(zone), xstrdup(type), s, value };
	return 0;
}

int fg_quota_parse(const char *spec)
{
	const char *eq = strrchr(spec, '=');
	long value;
	int rc = -1;

	if (!eq || parse_long(eq + 1, &value) < 0 || value < 0)
		return -1;
	char *left = xstrndup(spec, (size_t)(eq - spec));
	char *c1 = strchr(left, ':');
	char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (c1 && c2 && !strchr(c2 + 1, ':')) {
		*c1 = *c2 = '\0';
		rc = fg_quota_set(left, c1 + 1, c2 + 1, value);
	}
	free(left);
	return rc;
}

void fg_capacity_set(const char *zone, long value)
{
	for (size_t i = 0; i < n_caps; i++) {
		if (strcmp(caps[i].zone, zone))
			continue;
		if (value >= 0) {
			caps[i].limit = value;
		} else {
			free(caps[i].zone);
			memmove(caps + i, caps + i + 1, (n_caps - i - 1) * sizeof(*caps));
			n_caps--;
		}
		return;
	}
	if (value < 0)
		return;
	XGROW(caps, n_caps + 1, a_caps);
	caps[n_caps++] = (struct capacity){ xstrdup(zone), value };
}

int fg_capacity_parse(const char *spec)
{
	const char *eq = strrchr(spec, '=');
	long value;

	if (!eq || eq == spec || parse_long(eq + 1, &value) < 0 || value < 0)
		return -1;
	char *zone = xstrndup(spec, (size_t)(eq - spec));
	fg_capacity_set(zone, value);
	free(zone);
	return 0;
}

/* The quota's name in Google's style, e.g. TPUV4PreemptiblePodPerProjectPerZoneForTPUAPI. */
static char *quota_name(const char *type, enum fg_sched s, int workers)
{
	static const char *const fam[][2] = {
		{ "v2-", "V2" }, { "v3-", "V3" }, { "v4-", "V4" }, { "v5p-", "V5P" },
		{ "v5litepod-", "V5Lite" }, { "v6e-", "V6E" },
	};
	const char *f = "";

	for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++)
		if (!strncmp(type, fam[i][0], strlen(fam[i][0])))
			f = fam[i][1];
	return xasprintf("TPU%s%s%sPerProjectPerZoneForTPUAPI", f,
			 s == FG_ON_DEMAND ? "" : "Preemptible", workers > 1 ? "Pod" : "");
}

char *fg_quota_exceeded(const char *zone, const char *type, enum fg_sched s, int workers)
{
	size_t count;
	struct fg_node **v = fg_nodes_in(zone, &count);
	char *msg = NULL;

	for (size_t i = 0; i < n_quotas && !msg; i++) {
		const struct quota *q = &quotas[i];
		long used = 0;

		if (strcmp(q->zone, zone) || q->sched != s ||
		    (strcmp(q->type, "*") && strcmp(q->type, type)))
			continue;
		for (size_t k = 0; k < count; k++)
			if (v[k]->sched == s && (!strcmp(q->type, "*") || !strcmp(v[k]->type, type)))
				used++;
		if (used + 1 > q->limit) {
			char *name = quota_name(type, s, workers);
			msg = xasprintf("Quota '%s' exhausted. Limit %ld in zone %s", name, q->limit,
					zone);
			free(name);
		}
	}
	free(v);
	return msg;
}

int fg_capacity_full(const char *zone)
{
	for (size_t i = 0; i < n_caps; i++) {
		if (strcmp(caps[i].zone, zone))
			continue;
		size_t count;
		long live = 0;
		struct fg_node **v = fg_nodes_in(zone, &count);
		for (size_t k = 0; k < count; k++)
			live += !v[k]->doomed;
		free(v);
		return live >= caps[i].limit;
	}
	return 0;
}

json_t *fg_limits_json(void)
{
	json_t *q = json_array(), *c = json_array();

	for (size_t i = 0; i < n_quotas; i++)
		json_array_append_new(q, json_pack("{s:s, s:s, s:s, s:I}", "zone", quotas[i].zone,
						   "type", quotas[i].type, "sched",
						   fg_sched_name(quotas[i].sched), "limit",
						   (json_int_t)quotas[i].limit));
	for (size_t i = 0; i < n_caps; i++)
		json_array_append_new(c, json_pack("{s:s, s:I}", "zone", caps[i].zone, "limit",
						   (json_int_t)caps[i].limit));
	return json_pack("{s:o, s:o}", "quotas", q, "capacity", c);
}

void fg_limits_free(void)
{
	for (size_t i = 0; i < n_quotas; i++) {
		free(quotas[i].zone);
		free(quotas[i].type);
	}
	for (size_t i = 0; i < n_caps; i++)
		free(caps[i].zone);
	free(quotas);
	free(caps);
	quotas = NULL;
	caps = NULL;
	n_quotas = a_quotas = n_caps = a_caps = 0;
}

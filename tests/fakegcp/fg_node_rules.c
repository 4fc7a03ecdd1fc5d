/*
 * What the API checks in, and adds to, a node it is asked to create: GCE
 * label and name rules, the scheduling class, full network paths, the
 * default service account, and the id.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define CLOUD_PLATFORM "https://www.googleapis.com/auth/cloud-platform"

/* GCE label rules: key [a-z][a-z0-9_-]{0,62}, value [a-z0-9_-]{0,63}, <= 64 labels. */
static int label_ok(const char *s, int is_key)
{
	size_t n = strlen(s);

	if (n > 63 || (is_key && (!n || !islower((unsigned char)s[0]))))
		return 0;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_' &&
		    *s != '-')
			return 0;
	return 1;
}

/* Our wording: the real API's text for bad labels is not on record. */
int fg_check_labels(struct fg_req *r, json_t *labels)
{
	const char *k;
	json_t *v;
	char *msg = NULL;

	if (json_object_size(labels) > 64)
		msg = xstrdup("Cloud TPU received a bad request. A node can have at most 64 labels.");
	json_object_foreach(labels, k, v) {
		if (msg)
			break;
		if (!label_ok(k, 1))
			msg = xasprintf("Cloud TPU received a bad request. Invalid label key \"%s\": a "
					"key must start with a lowercase letter and use only lowercase "
					"letters, digits, '_' and '-' (at most 63 characters).", k);
		else if (!label_ok(json_string_value(v), 0))
			msg = xasprintf("Cloud TPU received a bad request. Invalid value \"%s\" for label "
					"\"%s\": use only lowercase letters, digits, '_' and '-' (at "
					"most 63 characters).", json_string_value(v), k);
	}
	if (!msg)
		return 0;
	fg_bad_request(r, "node.labels", msg);
	free(msg);
	return -1;
}

int fg_node_id_ok(const char *id)
{
	size_t n = strlen(id);

	if (!n || n > 63 || !islower((unsigned char)id[0]) || id[n - 1] == '-')
		return 0;
	for (const char *p = id; *p; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-')
			return 0;
	return 1;
}

enum fg_sched fg_sched_of(json_t *body)
{
	json_t *sc = json_object_get(body, "schedulingConfig");

	if (json_is_true(json_object_get(sc, "spot")))
		return FG_SPOT;
	if (json_is_true(json_object_get(sc, "preemptible")))
		return FG_PREEMPTIBLE;
	return FG_ON_DEMAND;
}

/* Short network names are returned as full resource paths, as GCE does. */
void fg_expand_network(json_t *res, const char *zone)
{
	json_t *nc = json_object_get(res, "networkConfig");
	const char *net, *sub;
	char *region = xstrdup(zone);
	char *dash = strrchr(region, '-');

	if (dash)
		*dash = '\0';
	if (!nc && !json_object_get(res, "networkConfigs")) {
		nc = json_object();
		json_object_set_new(res, "networkConfig", nc);
	}
	if (nc) {
		/* a copy: setting "network" below frees the string it points into */
		const char *given = json_string_value(json_object_get(nc, "network"));
		char *net_copy = xstrdup(given ? given : "");
		net = *net_copy ? net_copy : NULL;
		sub = json_string_value(json_object_get(nc, "subnetwork"));
		if (!net || !strchr(net, '/'))
			json_object_set_new(nc, "network",
					    json_pack("s+++", "projects/", fg_opt.project,
						      "/global/networks/", net ? net : "default"));
		if (!sub || !strchr(sub, '/')) {
			char *s = xasprintf("projects/%s/regions/%s/subnetworks/%s", fg_opt.project,
					    region, sub ? sub : (net && !strchr(net, '/') ? net : "default"));
			json_object_set_new(nc, "subnetwork", json_string(s));
			free(s);
		}
		free(net_copy);
	}
	free(region);
}

void fg_default_service_account(json_t *res)
{
	json_t *sa = json_object_get(res, "serviceAccount");

	if (!sa) {
		sa = json_object();
		json_object_set_new(res, "serviceAccount", sa);
	}
	if (!json_string_value(json_object_get(sa, "email"))) {
		char *email = xasprintf("%s-compute@developer.gserviceaccount.com",
					fg_opt.project_number);
		json_object_set_new(sa, "email", json_string(email));
		free(email);
	}
	if (!json_array_size(json_object_get(sa, "scope")))
		json_object_set_new(sa, "scope", json_pack("[s]", CLOUD_PLATFORM));
}

char *fg_new_node_id(void)
{
	/* 19 decimal digits, like real node ids (int64 as a JSON string), and
	 * within int64: gcloud sends the id back in a patch body, where a
	 * larger one is "Invalid value at 'node.id' (TYPE_INT64)". */
	uint64_t v = 1000000000000000000ULL +
		     fg_rand_id() % ((uint64_t)INT64_MAX - 1000000000000000000ULL + 1);

	return xasprintf("%llu", (unsigned long long)v);
}

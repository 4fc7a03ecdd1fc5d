/*
 * The job policy keys, fleet-wide and per group (config/config.h struct
 * tpf_job_policy): restart_scope, restart_backoff, stall_timeout and
 * on_success. What they do is docs/design.md section 5 ("Restart units",
 * "Stalled jobs", "Completion") and README.md's fleet-file table.
 */
#include "config/config_walk.h"

#include <string.h>

static const char *const scope_words[] = { "node", "worker", NULL };
static const char *const on_success_words[] = { "keep", "delete", NULL };

void cfg_job_policy_defaults(struct tpf_job_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->scope = TPF_SCOPE_AUTO;
	p->restart_backoff = TPF_RESTART_BACKOFF_DEFAULT;
	p->stall_timeout = 0;
	p->on_success = TPF_ON_SUCCESS_KEEP;
}

void cfg_read_job_policy(struct cfg *c, const struct cfg_map *m, struct tpf_job_policy *p)
{
	yaml_node_t *x;
	int e;
	if ((x = cfg_map_get(m, "restart_scope")) &&
	    cfg_want_enum(c, x, "restart_scope", scope_words, "node or worker", &e) == 0)
		p->scope = e == 0 ? TPF_SCOPE_NODE : TPF_SCOPE_WORKER;
	if ((x = cfg_map_get(m, "restart_backoff")))
		cfg_want_duration(c, x, "restart_backoff", &p->restart_backoff);
	if ((x = cfg_map_get(m, "stall_timeout")))
		cfg_want_duration(c, x, "stall_timeout", &p->stall_timeout);
	if ((x = cfg_map_get(m, "on_success")) &&
	    cfg_want_enum(c, x, "on_success", on_success_words, "keep or delete", &e) == 0)
		p->on_success = e == 0 ? TPF_ON_SUCCESS_KEEP : TPF_ON_SUCCESS_DELETE;
}

void cfg_check_job_policy(struct cfg *c, const struct tpf_fleet *f, yaml_node_t *restart_at)
{
	if (f->restart != TPF_RESTART_ALWAYS || !restart_at)
		return;
	int fleet_delete = f->policy.on_success == TPF_ON_SUCCESS_DELETE;
	for (size_t i = 0; i < f->ngroups && !fleet_delete; i++)
		fleet_delete = f->groups[i].policy.on_success == TPF_ON_SUCCESS_DELETE;
	if (fleet_delete)
		cfg_error(c, restart_at,
			  "restart: always starts a job again when it exits 0, so its node never "
			  "completes; use restart: on-failure with on_success: delete",
			  "'on_success: delete' cannot apply with 'restart: always'");
}

enum tpf_restart_scope tpf_group_restart_scope(const struct tpf_group *g)
{
	if (!g)
		return TPF_SCOPE_WORKER;
	if (g->policy.scope != TPF_SCOPE_AUTO)
		return g->policy.scope;
	return g->workers > 1 ? TPF_SCOPE_NODE : TPF_SCOPE_WORKER;
}

const struct tpf_job_policy *tpf_fleet_job_policy(const struct tpf_fleet *f, const char *group)
{
	const struct tpf_group *g = group ? tpf_fleet_group(f, group) : NULL;
	return g ? &g->policy : &f->policy;
}

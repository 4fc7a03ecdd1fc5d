/*
 * The fleet file's `monitoring` key (config/config_notify.h
 * cfg_read_monitoring; docs/watch.md "Cloud Monitoring").
 */
#include "config/config_notify.h"
#include "config/config_walk.h"
#include "util/xalloc.h"

#include <string.h>

static const char *const monitoring_keys[] = { "project", NULL };

static const char *const project_expect =
	"a Google Cloud project ID such as 'my-project' (lowercase letters, digits and '-')";

void cfg_read_monitoring(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v)
{
	struct cfg_map m;
	yaml_node_t *x;
	if (!v || cfg_map_open(&m, c, v, "'monitoring'",
			       "a mapping such as { project: my-project }", monitoring_keys,
			       "in monitoring", "monitoring") < 0)
		return;
	if (!(x = cfg_map_require(&m, "project",
				  "the Google Cloud project the time series are written to")))
		return;
	const char *s = cfg_want_text(c, x, "project", project_expect, 0);
	if (!s)
		return;
	if (strlen(s) > TPF_MONITORING_PROJECT_MAX) {
		cfg_error(c, x, NULL, "'project' must be %s, got %zu characters (at most %d)",
			  project_expect, strlen(s), TPF_MONITORING_PROJECT_MAX);
		return;
	}
	if (!cfg_all_of(s, "-.:")) { /* "example.com:proj" too */
		cfg_type_error(c, x, "project", project_expect, NULL);
		return;
	}
	f->monitoring.project = xstrdup(s);
}

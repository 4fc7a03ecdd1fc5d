/*
 * Groups on Compute Engine (issue 18; docs/fleet-file.md "Compute Engine";
 * docs/compute-engine.md): the API choice (`api`, fleet-wide under
 * provider.gcp), machine_type and topology checked against the one table of
 * model/compute.h, the boot image, provisioning (spot with
 * termination_action, flex_start, reservation, max_run_duration) and the
 * boot disk. Every error is positioned (FILE:LINE:COL) and hints at the fix.
 */
#include "config/config_walk.h"
#include "model/compute.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static const char *const api_words[] = { "tpu", "compute", NULL };
static const char *const action_words[] = { "DELETE", "STOP", "delete", "stop", NULL };
static const char *const flex_keys[] = { "max_run_duration", "wait", NULL };
static const char *const disk_keys[] = { "size_gb", "type", NULL };

/* A bound on maxRunDuration outside FLEX_START: the API checks its own;
 * more than a year is a typo. */
#define RUN_MAX (365L * 86400L)
#define RUN_MIN 30L

void cfg_read_gcp_api(struct cfg *c, struct tpf_fleet *f, const struct cfg_map *gm)
{
	yaml_node_t *x = cfg_map_get(gm, "api");
	int w = 0;
	if (x && cfg_want_enum(c, x, "api", api_words, "'compute' or 'tpu'", &w) == 0) {
		f->gcp.api = w == 1 ? TPF_API_COMPUTE : TPF_API_TPU;
		f->gcp.api_given = 1;
	}
}

void cfg_group_api(struct cfg *c, const struct cfg_map *m, const struct tpf_fleet *f,
		   struct tpf_group *g)
{
	yaml_node_t *x = cfg_map_get(m, "api");
	int w = 0;
	if (x && cfg_want_enum(c, x, "api", api_words, "'compute' or 'tpu'", &w) == 0)
		g->compute.api = w == 1 ? TPF_API_COMPUTE : TPF_API_TPU;
	else if (f->gcp.api_given)
		g->compute.api = f->gcp.api;
	else /* the sensible default: machine types are Compute Engine's words */
		g->compute.api = cfg_map_get(m, "machine_type") ? TPF_API_COMPUTE : TPF_API_TPU;
	if (g->compute.api == TPF_API_COMPUTE && f->provider == TPF_PROVIDER_LOCAL)
		cfg_error(c, x ? x : cfg_map_get(m, "machine_type"),
			  "use provider: { gcp: ... } (or the emulator) for Compute Engine groups",
			  "the local provider simulates Cloud TPU API nodes only; a group on "
			  "Compute Engine needs the gcp provider");
}

/* A key of the Cloud TPU API given in a compute group: what to write instead. */
static void reject(struct cfg *c, const struct cfg_map *m, const char *key, const char *hint,
		   const char *label)
{
	yaml_node_t *x = cfg_map_get(m, key);
	if (x)
		cfg_error(c, x, hint, "'%s' in group %s is a Cloud TPU API key; the group is on "
			  "Compute Engine (api: compute)", key, label);
}

static void reject_tpu_keys(struct cfg *c, const struct cfg_map *m, const char *label)
{
	reject(c, m, "accelerator_type",
	       "give machine_type (tpu7x-standard-4t, ct6e-standard-4t, ct5p-hightpu-4t, ...) "
	       "and topology, or set api: tpu", label);
	reject(c, m, "runtime_version",
	       "the boot image defaults per generation; set 'image' to override it", label);
	reject(c, m, "preemptible", "Compute Engine's preemptible VMs are spot VMs: spot: true",
	       label);
	reject(c, m, "queued", "flex-start VMs take the queued resource's role: "
	       "flex_start: { max_run_duration: 24h, wait: 6h }", label);
	reject(c, m, "valid_until", "use flex_start: { wait: 6h }", label);
	reject(c, m, "reserved", "name the reservation: reservation: NAME", label);
}

/* Multislice on Compute Engine (docs/compute-engine.md "Multislice"):
 * slices: N > 1 is N slices of the group's topology, one MIG each, one
 * restart unit; no queued resource (there is none on Compute Engine). */
#define SLICES_MAX 1024

static void read_compute_slices(struct cfg *c, const struct cfg_map *m, struct tpf_group *g,
				const char *label)
{
	yaml_node_t *x = cfg_map_get(m, "slices");
	if (!x || cfg_want_uint(c, x, "slices", "a whole number >= 1", 1, SLICES_MAX,
				&g->slices) < 0 || g->slices < 2)
		return;
	if (g->compute.flex_start)
		cfg_error(c, x, "remove 'slices', or 'flex_start'",
			  "group %s: multislice is not offered with flex_start yet: each slice "
			  "would wait for its own capacity", label);
}

void cfg_reject_compute_keys(struct cfg *c, const struct cfg_map *m, const struct tpf_group *g,
			     const char *label)
{
	static const char *const keys[] = { "machine_type", "image", "termination_action",
					    "flex_start", "max_run_duration", "boot_disk", NULL };
	for (size_t i = 0; keys[i]; i++) {
		yaml_node_t *x = cfg_map_get(m, keys[i]);
		const char *t = !strcmp(keys[i], "machine_type") ? cfg_text(x) : NULL;
		if (!x)
			continue;
		if (t && !strncmp(t, "tpu7x", 5))
			cfg_error(c, x, "TPU7x is served only through Compute Engine: set api: compute",
				  "group %s: machine type '%s' needs api: compute, and the group is on "
				  "the Cloud TPU API", label, t);
		else
			cfg_error(c, x, "set api: compute in the group (or under provider.gcp)",
				  "'%s' in group %s applies to Compute Engine groups only; the group "
				  "is on the Cloud TPU API", keys[i], label);
	}
	(void)g;
}

/* The boot image: absent, the generation's family; a bare name, a family
 * of ubuntu-os-accelerator-images; "projects/P/global/images/..." as is. */
static void read_image(struct cfg *c, const struct cfg_map *m, struct tpf_group *g,
		       const struct tpf_machine_type *mt)
{
	yaml_node_t *x = cfg_map_get(m, "image");
	const char *s = x ? cfg_want_text(c, x, "image", "an image family or path", 0) : NULL;
	if (x && !s)
		return;
	if (s && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-/") != strlen(s)) {
		cfg_error(c, x, "e.g. image: ubuntu-accel-2404-amd64-tpu-tpu7x, or "
			  "projects/P/global/images/family/F",
			  "'image' must be an image family or a projects/P/global/images/... path, "
			  "got '%s'", s);
		return;
	}
	if (s && !strncmp(s, "projects/", 9)) {
		if (!strstr(s, "/global/images/"))
			cfg_error(c, x, "e.g. projects/my-project/global/images/family/my-family",
				  "'image' must be projects/P/global/images/NAME or "
				  "projects/P/global/images/family/F, got '%s'", s);
		else
			g->compute.image = xstrdup(s);
		return;
	}
	if (s && strchr(s, '/')) {
		cfg_error(c, x, "a family name alone means ubuntu-os-accelerator-images",
			  "'image' must be a family name or a projects/... path, got '%s'", s);
		return;
	}
	g->compute.image = xasprintf("projects/%s/global/images/family/%s",
				     TPF_COMPUTE_IMAGE_PROJECT, s ? s : mt->image_family);
}

/* A duration in whole seconds within [min, max]; 0 or -1. */
static int read_seconds(struct cfg *c, yaml_node_t *x, const char *name, long min, long max,
			const char *hint, long *out)
{
	double secs = 0;
	if (cfg_want_duration(c, x, name, &secs) < 0)
		return -1;
	if (!(secs >= (double)min && secs <= (double)max)) { /* NaN too */
		cfg_error(c, x, hint, "'%s' must be from %lds to %lds, got '%s'", name, min, max,
			  cfg_text(x));
		return -1;
	}
	*out = (long)secs + ((double)(long)secs < secs); /* whole seconds, rounded up */
	return 0;
}

/* flex_start: { max_run_duration (required, 10m..7d), wait }. */
static void read_flex(struct cfg *c, const struct cfg_map *m, struct tpf_group *g,
		      const char *label)
{
	yaml_node_t *x = cfg_map_get(m, "flex_start"), *y;
	struct cfg_map fm;
	if (!x || cfg_map_open(&fm, c, x, "'flex_start'",
			       "a mapping such as { max_run_duration: 24h, wait: 6h }", flex_keys,
			       "in flex_start", "flex_start") < 0)
		return;
	g->compute.flex_start = 1;
	if ((y = cfg_map_require(&fm, "max_run_duration",
				 "a flex-start VM runs for at most 7 days, e.g. 24h")))
		read_seconds(c, y, "max_run_duration", TPF_COMPUTE_FLEX_RUN_MIN,
			     TPF_COMPUTE_FLEX_RUN_MAX, "flex-start VMs run from 10m to 7 days",
			     &g->compute.max_run_duration);
	if ((y = cfg_map_get(&fm, "wait")))
		read_seconds(c, y, "wait", 60, TPF_COMPUTE_FLEX_RUN_MAX,
			     "how long a flex-start VM may wait for capacity, e.g. 6h",
			     &g->compute.flex_wait);
	if ((y = cfg_map_get(m, "max_run_duration")))
		cfg_error(c, y, "give it once, inside flex_start",
			  "group %s sets max_run_duration both in the group and in flex_start",
			  label);
	if (g->spot)
		cfg_error(c, x, "flex-start and spot are two provisioning models: choose one",
			  "group %s sets both 'spot' and 'flex_start'", label);
	if (g->node.reservation)
		cfg_error(c, x, "flex-start VMs never consume reservations (NO_RESERVATION)",
			  "group %s sets both 'reservation' and 'flex_start'", label);
}

/* spot, termination_action, max_run_duration (outside flex_start). */
static void read_provisioning(struct cfg *c, const struct cfg_map *m, struct tpf_group *g,
			      const char *label)
{
	yaml_node_t *x;
	int w = 0;
	if ((x = cfg_map_get(m, "spot")))
		cfg_want_bool(c, x, "spot", &g->spot);
	if ((x = cfg_map_get(m, "termination_action")) &&
	    cfg_want_enum(c, x, "termination_action", action_words, "'DELETE' or 'STOP'", &w) == 0) {
		if (g->spot)
			g->compute.termination_action = xstrdup(w % 2 ? "STOP" : "DELETE");
		else
			cfg_error(c, x, "add 'spot: true', or remove 'termination_action'",
				  "'termination_action' in group %s applies to spot VMs only", label);
	}
	if (g->spot && !g->compute.termination_action)
		g->compute.termination_action = xstrdup("DELETE");
	if (g->spot && g->node.reservation)
		cfg_error(c, cfg_map_get(m, "spot"), "reserved capacity is its own tier; choose one",
			  "group %s asks for a reservation and for spot VMs", label);
	read_flex(c, m, g, label);
	if (!g->compute.flex_start && (x = cfg_map_get(m, "max_run_duration")))
		read_seconds(c, x, "max_run_duration", RUN_MIN, RUN_MAX,
			     "Compute Engine stops or deletes the VM after this long, e.g. 24h",
			     &g->compute.max_run_duration);
}

static void read_disk(struct cfg *c, const struct cfg_map *m, struct tpf_group *g)
{
	yaml_node_t *x = cfg_map_get(m, "boot_disk"), *y;
	struct cfg_map dm;
	g->compute.disk_size_gb = TPF_COMPUTE_DISK_GB_DEFAULT;
	g->compute.disk_type = xstrdup(TPF_COMPUTE_DISK_TYPE_DEFAULT);
	if (!x || cfg_map_open(&dm, c, x, "'boot_disk'", "a mapping such as { size_gb: 200, "
			       "type: hyperdisk-balanced }", disk_keys, "in boot_disk",
			       "boot_disk") < 0)
		return;
	if ((y = cfg_map_get(&dm, "size_gb")))
		cfg_want_uint(c, y, "size_gb", "a size in GB from 10 to 65536", 10, 65536,
			      &g->compute.disk_size_gb);
	if ((y = cfg_map_get(&dm, "type"))) {
		const char *s = cfg_want_name(c, y, "type", 63);
		if (s)
			xstrset(&g->compute.disk_type, s);
	}
}

void cfg_read_compute(struct cfg *c, struct cfg_map *m, struct tpf_group *g,
		      const char *label)
{
	yaml_node_t *x;
	const struct tpf_machine_type *mt = NULL;
	const char *why = NULL;
	reject_tpu_keys(c, m, label);
	if ((x = cfg_map_require(m, "machine_type",
				 "e.g. machine_type: ct6e-standard-4t (or tpu7x-standard-4t, "
				 "ct5p-hightpu-4t)"))) {
		const char *s = cfg_text(x);
		if (!(mt = tpf_machine_type_lookup(s, &why)))
			cfg_type_error(c, x, "machine_type", why, NULL);
		else
			g->compute.machine_type = xstrdup(s);
	}
	g->workers = 1;
	if (mt) {
		const char *topo = NULL;
		yaml_node_t *t;
		if ((t = cfg_map_get(m, "topology")) &&
		    !(topo = cfg_want_text(c, t, "topology", "a chip topology such as 2x2x2", 0)))
			t = NULL;
		if (topo && tpf_machine_topology(mt, topo, &g->workers, &why) < 0) {
			cfg_error(c, t, "VMs in a slice = chips in the topology / chips per VM",
				  "'topology' for %s must be %s, got '%s'", mt->name, why, topo);
			g->workers = 1;
		} else {
			xstrset(&g->node.topology, topo ? topo : mt->own);
		}
		read_image(c, m, g, mt);
	}
	read_provisioning(c, m, g, label);
	read_disk(c, m, g);
	read_compute_slices(c, m, g, label);
}

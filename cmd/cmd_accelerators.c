/*
 * tpuform accelerators [-zone Z] [-json]: which accelerator types and
 * runtime versions (Cloud TPU API) and which TPU machine types (Compute
 * Engine) each zone offers, from the APIs (providers/gcp/gcp.h
 * tpf_gcp_offerings), as `gcloud compute tpus accelerator-types list` and
 * `sky show-gpus` answer. Flags and printing only.
 */
#include "cmd/cmd.h"
#include "providers/gcp/gcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
	char *zone;
} accel_o;

static const struct tpf_flag accel_flags[] = {
	TPF_STR("zone", "ZONE", &accel_o.zone, "only this zone (default: every zone the fleet names)"),
	TPF_FLAGS_END,
};

/* "  LABEL a, b, c" over lines of at most 100 columns; "(none)" if empty. */
static void print_list(const char *label, json_t *a, const char *field)
{
	size_t col = printf("    %-19s", label), i;
	json_t *v;
	if (!json_array_size(a))
		printf("(none)");
	json_array_foreach(a, i, v) {
		const char *s = field ? json_string_value(json_object_get(v, field))
				      : json_string_value(v);
		if (col > 24 && col + strlen(s ? s : "") + 2 > 100) {
			printf(",\n%23s", "");
			col = 23;
		} else if (i) {
			col += printf(", ");
		}
		col += printf("%s", s ? s : "");
	}
	printf("\n");
}

/* One API's part of a zone: its error, or its lists. */
static void print_api(const char *title, json_t *o, const char *const *labels,
		      const char *const *keys, const char *field)
{
	printf("  %s\n", title);
	const char *err = json_string_value(json_object_get(o, "error"));
	if (err) {
		printf("    not listed: %s\n", err);
		return;
	}
	for (int i = 0; labels[i]; i++)
		print_list(labels[i], json_object_get(o, keys[i]), i == 0 ? field : NULL);
}

static void print_human(json_t *doc)
{
	size_t i;
	json_t *z;
	static const char *const tpu_labels[] = { "accelerator types", "runtime versions", NULL };
	static const char *const tpu_keys[] = { "accelerator_types", "runtime_versions", NULL };
	static const char *const ce_labels[] = { "TPU machine types", NULL };
	static const char *const ce_keys[] = { "machine_types", NULL };
	json_array_foreach(json_object_get(doc, "zones"), i, z) {
		printf("%sZone %s\n", i ? "\n" : "", json_string_value(json_object_get(z, "zone")));
		print_api("Cloud TPU API (api: tpu)", json_object_get(z, "tpu"), tpu_labels, tpu_keys,
			  NULL);
		print_api("Compute Engine (api: compute)", json_object_get(z, "compute"), ce_labels,
			  ce_keys, "name");
	}
}

static int run_accelerators(struct tpf_cmd_ctx *ctx)
{
	const struct tpf_fleet *f = &ctx->s.fleet;
	if (f->provider != TPF_PROVIDER_GCP) {
		tpf_errorx(ctx->d, NULL,
			   "The local provider takes any accelerator type tpuform knows; set "
			   "provider.gcp to ask Google Cloud.",
			   "fleet '%s' does not use the gcp provider: nothing to list", f->name);
		return TPF_EXIT_ERROR;
	}
	json_t *doc = NULL;
	if (tpf_gcp_offerings(f, accel_o.zone, &doc, ctx->d) < 0)
		return TPF_EXIT_ERROR;
	if (ctx->o.json) {
		char *text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
		printf("%s\n", text);
		free(text);
	} else {
		print_human(doc);
	}
	json_decref(doc);
	return TPF_EXIT_OK;
}

const struct tpf_cmd tpf_cmd_accelerators = {
	.name = "accelerators",
	.summary = "List the accelerator types and TPU machine types each zone offers",
	.description =
		"  Ask Google Cloud what each zone of the fleet (or -zone ZONE) offers: the\n"
		"  Cloud TPU API's accelerator types and runtime versions, and Compute\n"
		"  Engine's TPU machine types (with their chips, topology and default boot\n"
		"  image family). An API the project cannot list in a zone says why.\n",
	.flags = accel_flags,
	.needs = TPF_CMD_FLEET | TPF_CMD_JSON,
	.max_args = 0,
	.signals = TPF_SIG_STOP,
	.run = run_accelerators,
};

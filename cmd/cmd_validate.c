/*
 * tpuform validate: parse and check the fleet file; touches nothing.
 *
 * It reads the file itself rather than through the dispatcher's session:
 * a file that does not parse is its subject, reported in its own output
 * (with -json, one document like Terraform's `validate -json`).
 */
#include "cmd/cmd.h"
#include "providers/gcp/gcp.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static struct {
	int remote;
} validate_o;

static const struct tpf_flag validate_flags[] = {
	TPF_BOOL("remote", &validate_o.remote,
		 "gcp: also check that each zone offers the accelerator type and runtime version"),
	TPF_FLAGS_END,
};

/* Terraform's `validate -json` document; the diagnostics move into it. */
static void print_document(struct tpf_diags *d, int valid)
{
	int errors = (int)tpf_diags_errors(d);
	json_t *diags = json_array();
	for (size_t i = 0; i < d->n; i++) {
		const struct tpf_diag *g = &d->items[i];
		json_t *j = json_pack("{s:s,s:s}", "severity",
				      g->severity == TPF_SEV_ERROR ? "error" : "warning", "summary",
				      g->summary);
		if (g->detail)
			json_object_set_new(j, "detail", json_string(g->detail));
		json_array_append_new(diags, j);
	}
	json_t *doc = json_pack("{s:b,s:i,s:i,s:o}", "valid", valid, "error_count", errors,
				"warning_count", (int)d->n - errors, "diagnostics", diags);
	char *text = json_dumps(doc, JSON_INDENT(2));
	printf("%s\n", text);
	free(text);
	json_decref(doc);
	tpf_diags_release(d);
}

static void say_valid(const struct tpf_fleet *f)
{
	size_t nodes = 0;
	for (size_t g = 0; g < f->ngroups; g++)
		nodes += (size_t)f->groups[g].count;
	printf("%sSuccess!%s The configuration is valid: fleet '%s', %zu group%s, %zu node%s.\n",
	       tpf_ui.color ? "\033[32;1m" : "", tpf_ui.color ? "\033[0m" : "", f->name, f->ngroups,
	       f->ngroups == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s");
}

/*
 * What plan would refuse without the network: each secret's environment
 * variable (and the sizes the values give, config/config.h). Terraform's
 * validate reads no variable's value, so a file is valid whatever this
 * shell's environment holds (a CI job validates without the secrets): a
 * warning. -remote asks whether plan would work from here: an error, as a
 * zone that does not offer the accelerator type is (docs/commands.md).
 */
static void check_secrets(struct tpf_fleet *f, int as_errors, struct tpf_diags *d)
{
	struct tpf_diags mine = TPF_DIAGS_INIT;
	if (tpf_fleet_resolve_secrets(f, &mine) == 0) {
		tpf_fleet_forget_secrets(f);
		return;
	}
	for (size_t i = 0; i < mine.n; i++) {
		const struct tpf_diag *g = &mine.items[i];
		char *detail = as_errors ? NULL
				 : xasprintf("%s%splan and apply refuse the file until it is set; "
					     "validate -remote counts it as an error",
					     g->detail ? g->detail : "", g->detail ? "\n" : "");
		tpf_diags_add(d, as_errors ? g->severity : TPF_SEV_WARNING, g->address, g->summary,
			      as_errors ? g->detail : detail);
		free(detail);
	}
	tpf_diags_release(&mine);
}

static int run_validate(struct tpf_cmd_ctx *ctx)
{
	struct tpf_fleet f;
	memset(&f, 0, sizeof(f));
	int rc = tpf_fleet_load(&f, ctx->o.file, ctx->d);
	if (rc == 0)
		rc = tpf_fleet_check_files(&f, ctx->d);
	if (rc == 0)
		check_secrets(&f, validate_o.remote, ctx->d);
	if (rc == 0 && validate_o.remote) {
		if (f.provider == TPF_PROVIDER_GCP)
			tpf_gcp_validate_remote(&f, ctx->d);
		else
			tpf_warn(ctx->d, NULL, "-remote checks the gcp provider's zones; fleet '%s' uses "
					       "the local provider, which offers every type", f.name);
	}
	int valid = rc == 0 && !tpf_diags_errors(ctx->d);
	if (ctx->o.json) {
		print_document(ctx->d, valid);
	} else {
		tpf_cmd_print_diags(ctx); /* warnings before "Success!" */
		if (valid)
			say_valid(&f);
	}
	if (rc == 0)
		tpf_fleet_release(&f);
	return valid ? TPF_EXIT_OK : TPF_EXIT_ERROR;
}

const struct tpf_cmd tpf_cmd_validate = {
	.name = "validate",
	.summary = "Check the fleet file without touching anything",
	.description = "  Check a fleet file: syntax, keys, types, names, accelerator types, sizes\n"
		       "  and the form of secrets; warns of a secret whose environment variable is\n"
		       "  not set (plan refuses it). Reads nothing else, unless -remote asks the\n"
		       "  Cloud TPU API what each zone offers; with -remote a missing secret's\n"
		       "  variable is an error. Name another file with -f FILE.\n",
	.flags = validate_flags,
	.needs = TPF_CMD_FILE | TPF_CMD_JSON,
	.signals = TPF_SIG_STOP,
	.run = run_validate,
};

/*
 * tpuform validate: parse and check the fleet file; touches nothing.
 */
#include "cmd/cmd.h"
#include "providers/gcp/gcp.h"

#include <stdlib.h>
#include <string.h>

int cmd_validate(int argc, char **argv)
{
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	int show_help = 0, remote = 0;
	struct tpf_flag flags[] = {
		TPF_COMMON_FLAGS(o),
		{ "remote", NULL, TPF_FLAG_BOOL, &remote,
		  "gcp: also check that each zone offers the accelerator type and runtime version" },
		{ "help", "h", TPF_FLAG_BOOL, &show_help, "show this help" },
		{ 0 },
	};
	char **pos;
	int npos;
	if (tpf_parse_flags("validate", argc, argv, flags, &pos, &npos))
		return TPF_EXIT_ERROR;
	if (npos > 0)
		o.file = pos[0];
	free(pos);
	if (show_help) {
		printf("Usage: tpuform validate [options] [FILE]\n\n"
		       "  Check a fleet file: syntax, keys, types, names, accelerator types,\n"
		       "  secrets' environment variables. Reads nothing else, unless -remote asks\n"
		       "  the Cloud TPU API what each zone offers.\n\nOptions:\n");
		tpf_print_flags(stdout, flags);
		return TPF_EXIT_OK;
	}
	tpf_ui_init(o.no_color, o.json);
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	memset(&f, 0, sizeof(f));
	int rc = tpf_fleet_load(&f, o.file, &d);
	if (rc == 0 && remote) {
		if (f.provider == TPF_PROVIDER_GCP)
			tpf_gcp_validate_remote(&f, &d);
		else
			tpf_warn(&d, NULL, "-remote checks the gcp provider's zones; fleet '%s' uses the "
					   "local provider, which offers every type", f.name);
	}
	int errors = (int)tpf_diags_errors(&d);
	if (o.json) {
		json_t *diags = json_array();
		for (size_t i = 0; i < d.n; i++)
			json_array_append_new(diags, json_pack("{s:s,s:s}", "severity",
						d.items[i].severity == TPF_SEV_ERROR ? "error" : "warning",
						"summary", d.items[i].summary));
		json_t *o2 = json_pack("{s:b,s:i,s:i,s:o}", "valid", rc == 0 && !errors, "error_count",
				       errors, "warning_count", (int)d.n - errors, "diagnostics", diags);
		char *s = json_dumps(o2, JSON_INDENT(2));
		printf("%s\n", s);
		free(s);
		json_decref(o2);
	} else {
		tpf_ui_diags(&d);
		if (rc == 0 && !errors) {
			size_t nodes = 0;
			for (size_t g = 0; g < f.ngroups; g++)
				nodes += (size_t)f.groups[g].count;
			printf("%sSuccess!%s The configuration is valid: fleet '%s', %zu group%s, %zu node%s.\n",
			       tpf_ui.color ? "\033[32;1m" : "", tpf_ui.color ? "\033[0m" : "", f.name,
			       f.ngroups, f.ngroups == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s");
		}
	}
	if (rc == 0)
		tpf_fleet_release(&f);
	tpf_diags_release(&d);
	return rc == 0 && !errors ? TPF_EXIT_OK : TPF_EXIT_ERROR;
}

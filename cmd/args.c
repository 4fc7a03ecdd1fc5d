/*
 * Terraform-style flag parsing: single dash, "=value" or a separate value;
 * "--flag" is accepted too because people type it.
 */
#include "cmd/cmd.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct tpf_flag *find_flag(const struct tpf_flag *flags, const char *name, size_t len)
{
	for (const struct tpf_flag *f = flags; f->name; f++) {
		if (strlen(f->name) == len && !strncmp(f->name, name, len))
			return f;
		if (f->alias && strlen(f->alias) == len && !strncmp(f->alias, name, len))
			return f;
	}
	return NULL;
}

static int set_value(const char *cmd, const struct tpf_flag *f, const char *v)
{
	switch (f->type) {
	case TPF_FLAG_BOOL:
		if (!v || !strcmp(v, "true") || !strcmp(v, "1")) {
			*(int *)f->target = 1;
		} else if (!strcmp(v, "false") || !strcmp(v, "0")) {
			*(int *)f->target = 0;
		} else {
			fprintf(stderr, "Error: invalid value '%s' for -%s: expected true or false\n", v,
				f->name);
			return -1;
		}
		return 0;
	case TPF_FLAG_STRING:
		*(const char **)f->target = v;
		return 0;
	case TPF_FLAG_INT: {
		char *end;
		errno = 0;
		long n = strtol(v, &end, 10);
		if (errno || *end || end == v || n < 0 || n > 100000) {
			fprintf(stderr, "Error: invalid value '%s' for -%s: expected a whole number\n", v,
				f->name);
			return -1;
		}
		*(int *)f->target = (int)n;
		return 0;
	}
	case TPF_FLAG_DURATION:
		if (tpf_parse_duration(v, (double *)f->target) < 0) {
			fprintf(stderr,
				"Error: invalid value '%s' for -%s: expected a duration such as 30s, "
				"5m or 1h\n",
				v, f->name);
			return -1;
		}
		return 0;
	}
	(void)cmd;
	return -1;
}

int tpf_parse_flags(const char *cmd, int argc, char **argv, const struct tpf_flag *flags,
		    char ***pos, int *npos)
{
	*pos = xcalloc((size_t)argc + 1, sizeof(char *));
	*npos = 0;
	for (int i = 0; i < argc; i++) {
		char *a = argv[i];
		if (!strcmp(a, "--")) {
			for (i++; i < argc; i++)
				(*pos)[(*npos)++] = argv[i];
			break;
		}
		if (a[0] != '-' || a[1] == '\0') {
			(*pos)[(*npos)++] = a;
			continue;
		}
		const char *name = a + 1 + (a[1] == '-');
		const char *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		const struct tpf_flag *f = find_flag(flags, name, len);
		if (!f) {
			fprintf(stderr, "Error: unknown flag '%.*s' for 'tpuform %s'\n\n"
					"Run 'tpuform %s -help' for the flags it takes.\n",
				(int)len + (int)(name - a), a, cmd, cmd);
			free(*pos);
			*pos = NULL;
			return -1;
		}
		const char *v = eq ? eq + 1 : NULL;
		if (!v && f->type != TPF_FLAG_BOOL) {
			if (i + 1 >= argc) {
				fprintf(stderr, "Error: flag -%s needs a value\n", f->name);
				free(*pos);
				*pos = NULL;
				return -1;
			}
			v = argv[++i];
		}
		if (set_value(cmd, f, v) < 0) {
			free(*pos);
			*pos = NULL;
			return -1;
		}
	}
	return 0;
}

void tpf_print_flags(FILE *out, const struct tpf_flag *flags)
{
	for (const struct tpf_flag *f = flags; f->name; f++) {
		const char *arg = f->type == TPF_FLAG_BOOL ? ""
				  : f->type == TPF_FLAG_INT ? "=N"
				  : f->type == TPF_FLAG_DURATION ? "=DURATION" : "=VALUE";
		char buf[64];
		snprintf(buf, sizeof(buf), "-%s%s", f->name, arg);
		fprintf(out, "  %-26s %s%s%s\n", buf, f->help, f->alias ? "; also -" : "",
			f->alias ? f->alias : "");
	}
}

/*
 * Terraform-style flag parsing: single dash, "=value" or a separate value;
 * "--flag" is accepted too because people type it. Every problem is a
 * diagnostic, so it is printed like any other error (and as JSON under
 * -json).
 */
#include "cmd/cmd.h"
#include "util/number.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

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

/* The value's name in help and messages: "FILE", "N", "DURATION". */
static const char *value_name(const struct tpf_flag *f)
{
	return f->value ? f->value
	       : f->type == TPF_FLAG_BOOL ? NULL
	       : f->type == TPF_FLAG_INT ? "N"
	       : f->type == TPF_FLAG_DURATION ? "DURATION" : "VALUE";
}

static int bad_value(const char *cmd, const struct tpf_flag *f, const char *v, const char *want,
		     struct tpf_diags *d)
{
	char *hint = xasprintf("Run 'tpuform %s -help' for the options it takes.", cmd);
	int rc = tpf_errorx(d, NULL, hint, "invalid value '%s' for -%s: %s", v, f->name, want);
	free(hint);
	return rc;
}

static int set_int(const char *cmd, const struct tpf_flag *f, const char *v, struct tpf_diags *d)
{
	long n = 0;
	int rc = tpf_parse_whole(v, f->min, f->max, &n); /* util/number.h: 1e2 is 100 */
	if (rc == -1)
		return bad_value(cmd, f, v, "expected a whole number", d);
	if (rc == -2)
		return tpf_errorx(d, NULL, NULL, "invalid value '%s' for -%s: -%s must be from %d to %d",
				  v, f->name, f->name, f->min, f->max);
	*(int *)f->target = (int)n;
	return 0;
}

static int set_value(const char *cmd, const struct tpf_flag *f, const char *v, struct tpf_diags *d)
{
	switch (f->type) {
	case TPF_FLAG_BOOL:
		if (!v || !strcmp(v, "true") || !strcmp(v, "1"))
			*(int *)f->target = 1;
		else if (!strcmp(v, "false") || !strcmp(v, "0"))
			*(int *)f->target = 0;
		else
			return bad_value(cmd, f, v, "expected true or false", d);
		return 0;
	case TPF_FLAG_STRING:
		*(const char **)f->target = v;
		return 0;
	case TPF_FLAG_INT:
		return set_int(cmd, f, v, d);
	case TPF_FLAG_DURATION:
		if (tpf_parse_duration(v, (double *)f->target) < 0)
			return bad_value(cmd, f, v, "expected " TPF_DURATION_EXAMPLES, d);
		return 0;
	case TPF_FLAG_WORKERS: {
		char why[160];
		if (tpf_worker_set_parse(v, f->target, why, sizeof(why)))
			return bad_value(cmd, f, v, why, d);
		return 0;
	}
	case TPF_FLAG_LIST: {
		if (!*v)
			return bad_value(cmd, f, v, "expected a name", d);
		struct tpf_flag_list *l = f->target;
		l->items = xrealloc(l->items, (l->n + 1) * sizeof(*l->items));
		l->items[l->n++] = v;
		return 0;
	}
	}
	return TPF_ERROR;
}

/* One flag argument a (argv[*i]); may consume the next argument as value. */
static int parse_one(const char *cmd, int argc, char **argv, int *i,
		     const struct tpf_flag *flags, struct tpf_diags *d)
{
	const char *a = argv[*i];
	const char *name = a + 1 + (a[1] == '-');
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct tpf_flag *f = find_flag(flags, name, len);
	if (!f) {
		char *hint = xasprintf("Run 'tpuform %s -help' for the options it takes.", cmd);
		int rc = tpf_errorx(d, NULL, hint, "unknown flag '%.*s' for 'tpuform %s'",
				    (int)len + (int)(name - a), a, cmd);
		free(hint);
		return rc;
	}
	const char *v = eq ? eq + 1 : NULL;
	if (!v && f->type != TPF_FLAG_BOOL) {
		if (*i + 1 >= argc) {
			/* `logs NODE -f`: tail's -f is this command's -follow. */
			const char *hint = strcmp(f->name, "file") || len != 1 ||
							   !find_flag(flags, "follow", 6)
						   ? NULL
						   : "-f is -file here; to follow the output, use -follow.";
			return tpf_errorx(d, NULL, hint, "flag -%s needs a value: -%s=%s", f->name,
					  f->name, value_name(f));
		}
		v = argv[++*i];
	}
	return set_value(cmd, f, v, d);
}

int tpf_parse_flags(const char *cmd, int argc, char **argv, const struct tpf_flag *flags,
		    struct tpf_parsed *out, struct tpf_diags *d)
{
	memset(out, 0, sizeof(*out));
	out->args = xcalloc((size_t)argc + 1, sizeof(char *));
	out->rest = xcalloc((size_t)argc + 1, sizeof(char *));
	for (int i = 0; i < argc; i++) {
		char *a = argv[i];
		if (!strcmp(a, "--")) {
			out->dashdash = 1;
			for (i++; i < argc; i++)
				out->rest[out->nrest++] = argv[i];
			break;
		}
		if (a[0] != '-' || a[1] == '\0') {
			out->args[out->nargs++] = a;
			continue;
		}
		if (parse_one(cmd, argc, argv, &i, flags, d)) {
			tpf_parsed_release(out);
			return TPF_ERROR;
		}
	}
	return 0;
}

void tpf_flag_list_release(struct tpf_flag_list *l)
{
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

char *tpf_cmd_rest_command(const struct tpf_cmd_ctx *ctx)
{
	struct tpf_buf command = TPF_BUF_INIT;
	for (int i = 0; i < ctx->nrest; i++)
		tpf_buf_addf(&command, "%s%s", i ? " " : "", ctx->rest[i]);
	return tpf_buf_detach(&command, NULL);
}

void tpf_parsed_release(struct tpf_parsed *p)
{
	free(p->args);
	free(p->rest);
	memset(p, 0, sizeof(*p));
}

/* "(1 to 256; default 10)", from the target's value now. */
static void describe_default(const struct tpf_flag *f, char *buf, size_t len)
{
	char def[64] = "";
	switch (f->type) {
	case TPF_FLAG_BOOL:
		if (*(const int *)f->target)
			snprintf(def, sizeof(def), "default true");
		break;
	case TPF_FLAG_STRING:
		if (*(const char *const *)f->target)
			snprintf(def, sizeof(def), "default %s", *(const char *const *)f->target);
		break;
	case TPF_FLAG_INT: {
		int v = *(const int *)f->target;
		if (v >= f->min && v <= f->max)
			snprintf(def, sizeof(def), "default %d", v);
		snprintf(buf, len, " (%d to %d%s%s)", f->min, f->max, *def ? "; " : "", def);
		return;
	}
	case TPF_FLAG_LIST:
		snprintf(def, sizeof(def), "repeatable");
		break;
	case TPF_FLAG_WORKERS: /* the help line says what leaving it out does */
		break;
	case TPF_FLAG_DURATION: {
		double s = *(const double *)f->target;
		long whole = (long)s;
		if (s >= 3600 && s == (double)whole && whole % 3600 == 0)
			snprintf(def, sizeof(def), "default %ldh", whole / 3600);
		else if (s >= 600 && s == (double)whole && whole % 60 == 0)
			snprintf(def, sizeof(def), "default %ldm", whole / 60);
		else
			snprintf(def, sizeof(def), "default %gs", s);
		break;
	}
	}
	snprintf(buf, len, "%s%s%s", *def ? " (" : "", def, *def ? ")" : "");
}

void tpf_flag_describe(const struct tpf_flag *f, char *name, size_t nlen, char *def, size_t dlen)
{
	const char *arg = value_name(f);
	snprintf(name, nlen, "%s%s%s-%s%s%s", f->alias ? "-" : "", f->alias ? f->alias : "",
		 f->alias ? ", " : "", f->name, arg ? "=" : "", arg ? arg : "");
	describe_default(f, def, dlen);
}

void tpf_print_flags(FILE *out, const struct tpf_flag *flags)
{
	for (const struct tpf_flag *f = flags; f->name; f++) {
		if (!f->help)
			continue;
		char name[64], def[96];
		tpf_flag_describe(f, name, sizeof(name), def, sizeof(def));
		fprintf(out, "  %-26s %s%s\n", name, f->help, def);
	}
}

/*
 * Reading values of the fleet file: scalars with their type errors, and the
 * free-form maps (env, labels, secrets) with their naming rules.
 */
#include "config/config_walk.h"
#include "config/config_limits.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/number.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char name_rule[] = "lowercase letters, digits and '-', starting with a letter";

/* ---- character classes (ASCII only: locale must not change a contract) */

static int is_lower(int ch)
{
	return ch >= 'a' && ch <= 'z';
}

static int is_digit(int ch)
{
	return ch >= '0' && ch <= '9';
}

int cfg_is_name(const char *s)
{
	if (!is_lower(*s))
		return 0;
	for (s++; *s; s++)
		if (!is_lower(*s) && !is_digit(*s) && *s != '-')
			return 0;
	return 1;
}

int cfg_is_env_name(const char *s)
{
	if (!(is_lower(*s) || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return 0;
	for (s++; *s; s++)
		if (!(is_lower(*s) || (*s >= 'A' && *s <= 'Z') || is_digit(*s) || *s == '_'))
			return 0;
	return 1;
}

/* GCP labels: key [a-z][a-z0-9_-]{0,62}, value [a-z0-9_-]{0,63}. */
static int is_label_chars(const char *s)
{
	for (; *s; s++)
		if (!is_lower(*s) && !is_digit(*s) && *s != '_' && *s != '-')
			return 0;
	return 1;
}

int cfg_all_of(const char *s, const char *extra)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!is_lower(*s) && !is_digit(*s) && !strchr(extra, *s))
			return 0;
	return 1;
}

/* git's rule for "not a local path": a scheme, or scp-like user@host:path
 * (the colon before any slash). */
int cfg_looks_like_url(const char *s)
{
	if (strstr(s, "://"))
		return 1;
	const char *colon = strchr(s, ':'), *at = strchr(s, '@'), *slash = strchr(s, '/');
	return colon && at && at < colon && (!slash || colon < slash);
}

/* ---- scalar readers: each records its own error and returns failure */

void cfg_type_error(struct cfg *c, const yaml_node_t *v, const char *name, const char *expect,
		       const char *detail)
{
	struct tpf_buf got = TPF_BUF_INIT;
	cfg_describe(&got, v, 0);
	cfg_error(c, v, detail, "'%s' must be %s, got %s", name, expect, got.buf);
	tpf_buf_release(&got);
}

/* Text of a scalar, or NULL after an error. Empty text is refused unless
 * allow_empty (then a YAML null reads as ""). */
const char *cfg_want_text(struct cfg *c, yaml_node_t *v, const char *name, const char *expect,
			     int allow_empty)
{
	if (allow_empty && cfg_is_null(v))
		return "";
	if (v->type == YAML_SCALAR_NODE && !cfg_is_null(v) && (allow_empty || *cfg_text(v)))
		return cfg_text(v);
	cfg_type_error(c, v, name, expect, NULL);
	return NULL;
}

int cfg_want_uint(struct cfg *c, yaml_node_t *v, const char *name, const char *expect,
		     long min, long max, int *out)
{
	const char *s = cfg_text(v);
	long n = 0;
	/* util/number.h's grammar: 1e3 is 1000; above max, a range error. */
	int rc = cfg_is_null(v) ? -1 : tpf_parse_whole(s, 0, LONG_MAX, &n);
	if (rc == -1 || (rc == 0 && n < min)) {
		cfg_type_error(c, v, name, expect, NULL);
		return -1;
	}
	if (rc == -2 || n > max) {
		cfg_error(c, v, NULL, "'%s' must be at most %ld, got '%s'", name, max, s);
		return -1;
	}
	*out = (int)n;
	return 0;
}

int cfg_want_bool(struct cfg *c, yaml_node_t *v, const char *name, int *out)
{
	const char *s = cfg_text(v);
	if (s && !strcmp(s, "true")) {
		*out = 1;
		return 0;
	}
	if (s && !strcmp(s, "false")) {
		*out = 0;
		return 0;
	}
	cfg_type_error(c, v, name, "true or false",
		   "only the words true and false are accepted, not yes/no/on/off (which YAML 1.1 "
		   "reads as booleans and other tools do not)");
	return -1;
}

int cfg_want_enum(struct cfg *c, yaml_node_t *v, const char *name, const char *const *words,
		     const char *expect, int *out)
{
	const char *s = cfg_text(v);
	for (int i = 0; s && words[i]; i++) {
		if (!strcmp(s, words[i])) {
			*out = i;
			return 0;
		}
	}
	struct tpf_buf got = TPF_BUF_INIT;
	cfg_describe(&got, v, 0);
	const char *hint = s ? cfg_suggest(s, words) : NULL;
	if (hint)
		cfg_error(c, v, NULL, "'%s' must be %s, got %s; did you mean '%s'?", name, expect,
			  got.buf, hint);
	else
		cfg_error(c, v, NULL, "'%s' must be %s, got %s", name, expect, got.buf);
	tpf_buf_release(&got);
	return -1;
}

int cfg_want_duration(struct cfg *c, yaml_node_t *v, const char *name, double *out)
{
	const char *s = cfg_text(v);
	double secs;
	if (!s || tpf_parse_duration(s, &secs) < 0) {
		cfg_type_error(c, v, name, TPF_DURATION_EXAMPLES, NULL);
		return -1;
	}
	if (out)
		*out = secs;
	return 0;
}

/* A path relative to the fleet file's directory ("~/" is $HOME). */
char *cfg_want_path(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v, const char *name)
{
	const char *s = cfg_want_text(c, v, name, "a file path", 0);
	return s ? tpf_path_join(f->dir, s) : NULL;
}

const char *cfg_want_name(struct cfg *c, yaml_node_t *v, const char *name, size_t max)
{
	const char *s = cfg_text(v);
	char expect[160];
	if (s && cfg_is_name(s) && strlen(s) <= max)
		return s;
	if (max < SIZE_MAX)
		snprintf(expect, sizeof(expect), "a name of at most %zu %s", max, name_rule);
	else
		snprintf(expect, sizeof(expect), "a name of %s", name_rule);
	cfg_type_error(c, v, name, expect, NULL);
	return NULL;
}

/* ---- free-form maps: env, secrets, labels */

void cfg_each_pair(struct cfg *c, const struct cfg_map *m, cfg_pair_fn fn, void *arg)
{
	if (!m->node)
		return;
	yaml_node_pair_t *pairs = m->node->data.mapping.pairs.start;
	size_t n = (size_t)(m->node->data.mapping.pairs.top - pairs);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *k = cfg_node(c, pairs[i].key);
		if (!cfg_text(k))
			continue; /* reported by cfg_map_open */
		/* Duplicates were reported too; the first one counts. */
		int dup = 0;
		for (size_t j = 0; j < i && !dup; j++) {
			const char *pk = cfg_text(cfg_node(c, pairs[j].key));
			dup = pk && !strcmp(pk, cfg_text(k));
		}
		if (!dup)
			fn(c, k, cfg_node(c, pairs[i].value), arg);
	}
}

static int check_env_name(struct cfg *c, yaml_node_t *k, const char *what)
{
	const char *name = cfg_text(k);
	if (!cfg_is_env_name(name)) {
		cfg_error(c, k, NULL,
			  "%s name '%s' must be letters, digits and '_', not starting with a digit",
			  what, name);
		return -1;
	}
	if (!strncmp(name, "TPUFORM_", 8)) {
		cfg_error(c, k, "pick another name; tpuform sets TPUFORM_FLEET, TPUFORM_NODE and the "
				"other TPUFORM_* variables on every worker",
			  "%s name '%s' is reserved: names starting with 'TPUFORM_' belong to tpuform",
			  what, name);
		return -1;
	}
	return 0;
}

void cfg_env_pair(struct cfg *c, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	if (check_env_name(c, k, "env") < 0)
		return;
	if (v->type != YAML_SCALAR_NODE) {
		struct tpf_buf got = TPF_BUF_INIT;
		cfg_describe(&got, v, 0);
		cfg_error(c, v, NULL, "env '%s' must be text, got %s", cfg_text(k), got.buf);
		tpf_buf_release(&got);
		return;
	}
	/* YAML scalars stay text: "1" and 1 both give "1". */
	tpf_kvlist_set(arg, cfg_text(k), cfg_is_null(v) ? "" : cfg_text(v));
}

void cfg_read_env(struct cfg *c, yaml_node_t *v, const char *where, struct tpf_kvlist *out)
{
	struct cfg_map m;
	if (!v)
		return;
	if (cfg_map_open(&m, c, v, "'env'", "a mapping of variable names to values", NULL, where,
			 "env") < 0)
		return;
	cfg_each_pair(c, &m, cfg_env_pair, out);
}

void cfg_label_pair(struct cfg *c, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct cfg_label_ctx *lc = arg;
	const char *key = cfg_text(k);
	if (!is_lower(*key) || !is_label_chars(key) || strlen(key) > 63) {
		cfg_error(c, k, "GCP label keys are 1 to 63 characters: a lowercase letter, then "
				"lowercase letters, digits, '_' or '-'",
			  "label key '%s' in group %s must match [a-z][a-z0-9_-]{0,62}", key, lc->group);
		return;
	}
	if (!strncmp(key, "tpuform-", 8)) {
		cfg_error(c, k, "tpuform sets tpuform-fleet, -group, -index and -lineage itself to "
				"find its nodes; pick another key",
			  "label key '%s' in group %s is reserved: keys starting with 'tpuform-' "
			  "belong to tpuform", key, lc->group);
		return;
	}
	if (v->type != YAML_SCALAR_NODE) {
		struct tpf_buf got = TPF_BUF_INIT;
		cfg_describe(&got, v, 0);
		cfg_error(c, v, NULL, "label '%s' in group %s must be text, got %s", key, lc->group,
			  got.buf);
		tpf_buf_release(&got);
		return;
	}
	const char *val = cfg_is_null(v) ? "" : cfg_text(v);
	if (!is_label_chars(val) || strlen(val) > 63) {
		cfg_error(c, v, "GCP label values are at most 63 lowercase letters, digits, '_' or '-'",
			  "label '%s' in group %s must have a value matching [a-z0-9_-]{0,63}, got '%s'",
			  key, lc->group, val);
		return;
	}
	tpf_kvlist_set(lc->out, key, val);
}

/* ---- secrets */

/*
 * Expand s: each ${NAME} becomes getenv(NAME), "$$" a literal '$'. With
 * out == NULL only the form is checked (nothing is looked up). Returns 0;
 * 1 with *missing (caller frees) naming the first unset or empty variable
 * (an empty value is never a usable secret); 2 for a '${' that does not
 * form a reference; 3 with *missing naming NAME for "$NAME" without braces,
 * which is almost always a forgotten brace, not a literal (write "$$NAME"
 * for the literal). Any other '$' is kept.
 */
static int expand_refs(const char *s, struct tpf_buf *out, char **missing)
{
	while (*s) {
		if (s[0] == '$' && s[1] == '$') {
			if (out)
				tpf_buf_addch(out, '$');
			s += 2;
			continue;
		}
		if (s[0] == '$' && (s[1] == '_' || isalpha((unsigned char)s[1]))) {
			size_t n = 1;
			while (s[1 + n] == '_' || isalnum((unsigned char)s[1 + n]))
				n++;
			*missing = xstrndup(s + 1, n);
			return 3;
		}
		if (s[0] != '$' || s[1] != '{') {
			if (out)
				tpf_buf_addch(out, *s);
			s++;
			continue;
		}
		const char *name = s + 2, *end = strchr(name, '}');
		if (!end || end == name)
			return 2;
		char *var = xstrndup(name, (size_t)(end - name));
		if (!cfg_is_env_name(var)) {
			free(var);
			return 2;
		}
		if (out) {
			const char *val = getenv(var);
			if (!val || !*val) {
				*missing = var;
				return 1;
			}
			tpf_buf_adds(out, val);
		}
		free(var);
		s = end + 1;
	}
	return 0;
}

void cfg_secret_pair(struct cfg *c, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct tpf_fleet *f = arg;
	const char *name = cfg_text(k);
	char *missing = NULL;

	if (check_env_name(c, k, "secret") < 0)
		return;
	/* Secrets and env land in the same environment on the worker. */
	int clash = tpf_kvlist_get(&f->env, name) != NULL;
	for (size_t i = 0; i < f->ngroups && !clash; i++)
		clash = tpf_kvlist_get(&f->groups[i].env, name) != NULL;
	if (clash) {
		cfg_error(c, k, "keep it in secrets only if it is secret, else in env only",
			  "secret '%s' has the same name as an env entry; a variable is either in env or "
			  "in secrets", name);
		return;
	}
	if (v->type != YAML_SCALAR_NODE || cfg_is_null(v)) {
		struct tpf_buf got = TPF_BUF_INIT;
		cfg_describe(&got, v, 1);
		cfg_error(c, v, NULL, "secret '%s' must be text such as \"${%s}\", got %s", name, name,
			  got.buf);
		tpf_buf_release(&got);
		return;
	}
	switch (expand_refs(cfg_text(v), NULL, &missing)) {
	case 0: {
		struct tpf_secret_ref r = {
			.name = xstrdup(name),
			.text = xstrdup(cfg_text(v)),
			.line = (int)v->start_mark.line + 1,
			.column = (int)v->start_mark.column + 1,
		};
		f->secret_refs = xrealloc(f->secret_refs, (f->nsecret_refs + 1) * sizeof(r));
		f->secret_refs[f->nsecret_refs++] = r;
		break;
	}
	case 3: {
		char *detail = xasprintf("write \"${%s}\" to take it from the environment, or \"$$%s\" "
					 "for a literal '$'",
					 missing, missing);
		cfg_error(c, v, detail, "secret '%s' refers to $%s without braces", name, missing);
		free(detail);
		break;
	}
	default:
		cfg_error(c, v, NULL,
			  "secret '%s' has a malformed '${' reference; expected ${NAME} with NAME made "
			  "of letters, digits and '_'", name);
		break;
	}
	free(missing);
}

void tpf_fleet_forget_secrets(struct tpf_fleet *f)
{
	for (size_t i = 0; i < f->secrets.n; i++)
		explicit_bzero(f->secrets.items[i].value, strlen(f->secrets.items[i].value));
	tpf_kvlist_release(&f->secrets);
	f->secrets_resolved = 0;
}

int tpf_fleet_resolve_secrets(struct tpf_fleet *f, struct tpf_diags *d)
{
	int err = 0;
	tpf_fleet_forget_secrets(f);
	for (size_t i = 0; i < f->nsecret_refs; i++) {
		const struct tpf_secret_ref *r = &f->secret_refs[i];
		struct tpf_buf val = TPF_BUF_INIT;
		char *missing = NULL;
		if (expand_refs(r->text, &val, &missing) == 0) {
			tpf_kvlist_set(&f->secrets, r->name, val.buf);
		} else {
			char *detail = xasprintf("set it in tpuform's environment first: export %s=...",
						 missing ? missing : "NAME");
			err = tpf_errorx(d, NULL, detail,
					 "%s:%d:%d: secret '%s' needs environment variable '%s', which is %s",
					 f->path, r->line, r->column, r->name, missing ? missing : "",
					 missing && getenv(missing) ? "empty" : "not set");
			free(detail);
		}
		/* The expanded value must not linger in freed heap memory. */
		if (val.alloc)
			explicit_bzero(val.buf, val.alloc);
		tpf_buf_release(&val);
		free(missing);
	}
	if (!err)
		err = tpf_fleet_check_worker_limits(f, d);
	if (err) {
		tpf_fleet_forget_secrets(f);
		return TPF_ERROR;
	}
	f->secrets_resolved = 1;
	return 0;
}

/*
 * How the plan shows values (as Terraform does: strings JSON-quoted, maps
 * as { "k" = "v" }), and the change lines of a new node and of a changed job.
 */
#include "plan/plan_internal.h"
#include "util/buf.h"
#include "util/str.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/*
 * The last encodings made on this thread, by a hash of the text: a plan of
 * many nodes shows the same few values again and again (accelerator type,
 * zone, run, label keys and values), and jansson's encoding was most of
 * the plan of 10,000 adopted nodes (tests/bench/gcp_bench.sh). Fixed size,
 * no heap; a text of MEMO_TEXT bytes or more, or whose encoding does not
 * fit in json, is not kept. An entry's json is empty when it is unused.
 */
#define MEMO_SLOTS 64
#define MEMO_TEXT 64
struct memo {
	char text[MEMO_TEXT];
	char json[3 * MEMO_TEXT];
};
static _Thread_local struct memo memo[MEMO_SLOTS];

static struct memo *memo_slot(const char *s, size_t len)
{
	unsigned h = 2166136261u; /* FNV-1a, to pick a slot */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return &memo[h % MEMO_SLOTS];
}

/* s JSON-quoted by jansson (utf-8 it refuses: ""). Caller frees. */
static char *encode(const char *s)
{
	json_t *j = json_string(s);
	/* Most values are short: encode into the stack, not a heap string. */
	char small[256];
	size_t n = j ? json_dumpb(j, small, sizeof(small), JSON_ENCODE_ANY) : 0;
	char *r;
	if (n && n < sizeof(small)) {
		r = xstrndup(small, n);
	} else {
		char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
		r = xstrdup(out ? out : "\"\"");
		free(out);
	}
	json_decref(j);
	return r;
}

/* A string as Terraform shows it: JSON-quoted (jansson does the escaping). */
char *tpf_diff_value_str(const char *s)
{
	if (!s)
		return xstrdup("null");
	size_t len = strlen(s);
	if (len >= MEMO_TEXT)
		return encode(s);
	struct memo *m = memo_slot(s, len);
	if (m->json[0] && !strcmp(m->text, s))
		return xstrdup(m->json);
	char *r = encode(s);
	size_t n = strlen(r);
	if (n < sizeof(m->json)) {
		memcpy(m->text, s, len + 1);
		memcpy(m->json, r, n + 1);
	}
	return r;
}

char *tpf_diff_value_map(const struct tpf_kvlist *l)
{
	if (!l->n)
		return xstrdup("{}");
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_adds(&b, "{ ");
	for (size_t i = 0; i < l->n; i++) {
		char *k = tpf_diff_value_str(l->items[i].key);
		char *v = tpf_diff_value_str(l->items[i].value);
		if (i)
			tpf_buf_adds(&b, ", ");
		tpf_buf_adds(&b, k);
		tpf_buf_adds(&b, " = ");
		tpf_buf_adds(&b, v);
		free(k);
		free(v);
	}
	tpf_buf_adds(&b, " }");
	return tpf_buf_detach(&b, NULL);
}

char *tpf_diff_value_long(long v)
{
	return xasprintf("%ld", v);
}

/* Add a change line for a string attribute when before != after. */
void tpf_diff_change_str(struct tpf_action *a, const char *field, const char *before,
			 const char *after, int forces)
{
	if (tpf_streq(before, after))
		return;
	char *was = before ? tpf_diff_value_str(before) : NULL;
	char *now = after ? tpf_diff_value_str(after) : NULL;
	tpf_action_change_take(a, field, was, now, forces);
}

/* Every attribute of a new node, all "+". */
void tpf_diff_describe_new(struct tpf_action *a, const struct tpf_desired_node *dn)
{
	char *v;
	int tpu = dn->recipe.compute.api != TPF_API_COMPUTE; /* compute: machine_type, image */
	if (tpu) {
		v = tpf_diff_value_str(dn->recipe.accelerator_type);
		tpf_action_change_take(a, "accelerator_type", NULL, v, 0);
	}
	if (dn->job.commit) {
		v = tpf_diff_value_str(dn->job.commit);
		tpf_action_change_take(a, "commit", NULL, v, 0);
	}
	if (dn->job.env.n) {
		v = tpf_diff_value_map(&dn->job.env);
		tpf_action_change_take(a, "env", NULL, v, 0);
	}
	tpf_action_change(a, "id", NULL, "(known after apply)", 0, 0);
	v = tpf_diff_value_map(&dn->recipe.labels);
	tpf_action_change_take(a, "labels", NULL, v, 0);
	if (dn->recipe.queued)
		tpf_action_change(a, "queued", NULL, "true", 0, 0);
	v = tpf_diff_value_str(dn->job.run);
	tpf_action_change_take(a, "run", NULL, v, 0);
	if (tpu) {
		v = tpf_diff_value_str(dn->recipe.runtime_version);
		tpf_action_change_take(a, "runtime_version", NULL, v, 0);
	}
	v = tpf_diff_value_str(tpf_recipe_scheduling(&dn->recipe));
	tpf_action_change_take(a, "scheduling", NULL, v, 0);
	if (dn->job.secrets_hash)
		tpf_action_change(a, "secrets", NULL, NULL, 0, 1);
	if (dn->job.setup) {
		v = tpf_diff_value_str(dn->job.setup);
		tpf_action_change_take(a, "setup", NULL, v, 0);
	}
	if (dn->recipe.slices > 1) {
		v = tpf_diff_value_long(dn->recipe.slices);
		tpf_action_change_take(a, "slices", NULL, v, 0);
	}
	if (dn->recipe.queued && dn->recipe.valid_until) {
		v = tpf_diff_value_str(dn->recipe.valid_until);
		tpf_action_change_take(a, "valid_until", NULL, v, 0);
	}
	v = tpf_diff_value_long(dn->recipe.workers);
	tpf_action_change_take(a, "workers", NULL, v, 0);
	v = tpf_diff_value_str(dn->recipe.zone);
	tpf_action_change_take(a, "zone", NULL, v, 0);
	tpf_diff_node_new(a, &dn->recipe);
	tpf_diff_compute_new(a, &dn->recipe);
}

/* Job attribute changes (commit, setup, run, env, secrets): re-provision. */
int tpf_diff_describe_job(struct tpf_action *a, const struct tpf_job *before,
			  const struct tpf_job *after)
{
	size_t n0 = a->nchanges;
	tpf_diff_change_str(a, "commit", before->commit, after->commit, 0);
	if (!tpf_kvlist_equal(&before->env, &after->env)) {
		char *b = tpf_diff_value_map(&before->env), *v = tpf_diff_value_map(&after->env);
		tpf_action_change_take(a, "env", b, v, 0);
	}
	tpf_diff_change_str(a, "run", before->run, after->run, 0);
	if (!tpf_streq(before->secrets_hash, after->secrets_hash))
		tpf_action_change(a, "secrets", NULL, NULL, 0, 1);
	tpf_diff_change_str(a, "setup", before->setup, after->setup, 0);
	return a->nchanges > n0;
}

/*
 * State file: JSON mapping, serial and lineage rules, backup, refusals of
 * damaged or foreign files, atomic replacement under SIGKILL.
 */
#include "model/recipe.h"
#include "state/state.h"
#include "state/state_priv.h"
#include "tests/unit/unit.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/version.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TPF_VERSION
#define TPF_VERSION "dev"
#endif

static char *tmp;

/* ---- helpers ---------------------------------------------------------- */

static char *in_tmp(const char *name)
{
	return xasprintf("%s/%s", tmp, name);
}

/* Whole file, or NULL if it does not exist. */
static char *slurp(const char *path)
{
	struct tpf_buf b = TPF_BUF_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	int err = tpf_read_file(path, &b, &d);
	tpf_diags_release(&d);
	if (err) {
		tpf_buf_release(&b);
		return NULL;
	}
	return tpf_buf_detach(&b, NULL);
}

static void spew(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		abort();
	}
	fputs(s, f);
	fclose(f);
}

/* s with every "PATH" replaced by path. */
static char *subst_path(const char *s, const char *path)
{
	struct tpf_buf b = TPF_BUF_INIT;
	for (const char *p = s; *p;) {
		if (!strncmp(p, "PATH", 4)) {
			tpf_buf_adds(&b, path);
			p += 4;
		} else {
			tpf_buf_addch(&b, *p++);
		}
	}
	return tpf_buf_detach(&b, NULL);
}

/* Names in dir (sorted, space separated) for "no leftovers" checks. */
static char *dir_listing(const char *dir)
{
	struct dirent **ents;
	struct tpf_buf b = TPF_BUF_INIT;
	int n = scandir(dir, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		if (strcmp(ents[i]->d_name, ".") && strcmp(ents[i]->d_name, "..")) {
			if (b.len)
				tpf_buf_addch(&b, ' ');
			tpf_buf_adds(&b, ents[i]->d_name);
		}
		free(ents[i]);
	}
	if (n >= 0)
		free(ents);
	return tpf_buf_detach(&b, NULL);
}

static char *fresh_dir(const char *name)
{
	char *dir = in_tmp(name);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		perror(dir);
		abort();
	}
	return dir;
}

/* Every field set, values derived from tag so that two nodes differ. */
static void fill_node(struct tpf_state_node *n, const char *tag, int nworkers)
{
	char *s;
	xstrset(&n->group, tag);
	n->index = 7;
	s = xasprintf("id-%s", tag);
	xstrset(&n->id, s);
	free(s);
	n->status = TPF_NODE_CREATED;
	n->generation = 3;
	xstrset(&n->created_at, "2026-11-21T13:45:00Z");
	xstrset(&n->recipe.accelerator_type, "v4-16");
	xstrset(&n->recipe.runtime_version, "tpu-ubuntu2204-base");
	xstrset(&n->recipe.zone, "local-a");
	n->recipe.preemptible = 1;
	n->recipe.spot = 0;
	n->recipe.workers = nworkers;
	tpf_kvlist_set(&n->recipe.labels, "tpuform-group", tag);
	tpf_kvlist_set(&n->recipe.labels, "tpuform-fleet", "demo");
	xstrset(&n->job.commit, "0123456789abcdef0123456789abcdef01234567");
	xstrset(&n->job.repo, "https://example.invalid/model.git");
	xstrset(&n->job.setup, "pip install -r requirements.txt");
	s = xasprintf("python train.py --tag '%s' \"$X\" \xc3\xa9\n", tag);
	xstrset(&n->job.run, s);
	free(s);
	tpf_kvlist_set(&n->job.env, "WANDB_PROJECT", "llm");
	tpf_kvlist_set(&n->job.env, "A", "1");
	xstrset(&n->job.secrets_hash, "sha256:abcd");
	tpf_state_node_set_workers(n, (size_t)nworkers);
	for (int i = 0; i < nworkers; i++) {
		struct tpf_state_worker *w = &n->workers[i];
		s = xasprintf("sha256:%s-%d", tag, i);
		xstrset(&w->script_hash, s);
		free(s);
		xstrset(&w->session, "tpuform-demo");
		w->job_state = TPF_JOB_STATE_ALIVE;
		w->exit_code = 100 + i;
		w->restarts = 2 + i;
		s = xasprintf("127.0.0.%d", 1 + i);
		xstrset(&w->address, s);
		free(s);
		xstrset(&w->host_key, "SHA256:hostkey");
		xstrset(&w->provisioned_at, "2026-11-21T13:46:00Z");
	}
}

static void fill_state(struct tpf_state *st)
{
	tpf_state_init(st);
	xstrset(&st->fleet, "demo");
	fill_node(tpf_state_add(st, "demo-b-0"), "b", 2);
	fill_node(tpf_state_add(st, "demo-a-0"), "a", 1);
	/* b: a 2-slice Compute Engine node (issue 18): its api, machine type,
	 * flex-start and disk must survive a load, or the provider stops
	 * listing Compute Engine for a group moved back to the Cloud TPU API */
	struct tpf_state_node *b = tpf_state_find(st, "demo-b-0");
	b->recipe.slices = 2;
	b->recipe.compute.api = TPF_API_COMPUTE;
	xstrset(&b->recipe.compute.machine_type, "tpu7x-standard-4t");
	xstrset(&b->recipe.compute.image, "projects/p/global/images/family/f");
	b->recipe.compute.flex_start = 1;
	b->recipe.compute.max_run_duration = 86400;
	b->recipe.compute.flex_wait = 3600;
	b->recipe.compute.disk_size_gb = 100;
	xstrset(&b->recipe.compute.disk_type, "hyperdisk-balanced");
	/* one sparse node: NULLs must survive as NULLs */
	tpf_state_add(st, "demo-c-0");
}

static int same_kv(const struct tpf_kvlist *a, const struct tpf_kvlist *b)
{
	return tpf_kvlist_equal(a, b);
}

/* Field by field, so a field dropped by either direction is caught. */
static void check_same_state(const struct tpf_state *a, const struct tpf_state *b)
{
	CHECK_INT(b->version, a->version);
	CHECK_STR(b->lineage, a->lineage);
	CHECK_STR(b->fleet, a->fleet);
	CHECK_INT(b->nnodes, a->nnodes);
	if (a->nnodes != b->nnodes)
		return;
	for (size_t i = 0; i < a->nnodes; i++) {
		const struct tpf_state_node *x = &a->nodes[i], *y = &b->nodes[i];
		CHECK_STR(y->name, x->name);
		CHECK_STR(y->group, x->group);
		CHECK_INT(y->index, x->index);
		CHECK_STR(y->id, x->id);
		CHECK_INT(y->status, x->status);
		CHECK_INT(y->generation, x->generation);
		CHECK_STR(y->created_at, x->created_at);
		CHECK_STR(y->recipe.accelerator_type, x->recipe.accelerator_type);
		CHECK_STR(y->recipe.runtime_version, x->recipe.runtime_version);
		CHECK_STR(y->recipe.zone, x->recipe.zone);
		CHECK_INT(y->recipe.preemptible, x->recipe.preemptible);
		CHECK_INT(y->recipe.spot, x->recipe.spot);
		CHECK_INT(y->recipe.workers, x->recipe.workers);
		CHECK(same_kv(&y->recipe.labels, &x->recipe.labels));
		CHECK_INT(y->recipe.slices, x->recipe.slices);
		CHECK_INT(y->recipe.compute.api, x->recipe.compute.api);
		/* every other recipe field, through the recipe's own JSON */
		json_t *rx = tpf_recipe_to_json(&x->recipe), *ry = tpf_recipe_to_json(&y->recipe);
		CHECK(json_equal(rx, ry));
		json_decref(rx);
		json_decref(ry);
		CHECK_STR(y->job.commit, x->job.commit);
		CHECK_STR(y->job.repo, x->job.repo);
		CHECK_STR(y->job.setup, x->job.setup);
		CHECK_STR(y->job.run, x->job.run);
		CHECK(same_kv(&y->job.env, &x->job.env));
		CHECK_STR(y->job.secrets_hash, x->job.secrets_hash);
		CHECK_INT(y->nworkers, x->nworkers);
		for (size_t j = 0; j < x->nworkers && j < y->nworkers; j++) {
			const struct tpf_state_worker *v = &x->workers[j], *w = &y->workers[j];
			CHECK_INT(w->index, v->index);
			CHECK_STR(w->script_hash, v->script_hash);
			CHECK_STR(w->session, v->session);
			CHECK_INT(w->job_state, v->job_state);
			CHECK_INT(w->exit_code, v->exit_code);
			CHECK_INT(w->restarts, v->restarts);
			CHECK_STR(w->address, v->address);
			CHECK_STR(w->host_key, v->host_key);
			CHECK_STR(w->provisioned_at, v->provisioned_at);
		}
	}
}

static int is_uuid4(const char *s)
{
	if (!s || strlen(s) != 36)
		return 0;
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!strchr("0123456789abcdef", s[i])) {
			return 0;
		}
	}
	return s[14] == '4';
}

static int same_stat(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_size == b->st_size;
}

/* ---- in memory -------------------------------------------------------- */

static void test_state__init_is_blank_with_fresh_lineage(void)
{
	struct tpf_state a, b;
	tpf_state_init(&a);
	tpf_state_init(&b);
	CHECK_INT(a.version, TPF_STATE_VERSION);
	CHECK_INT(a.serial, 0);
	CHECK(is_uuid4(a.lineage));
	CHECK(strcmp(a.lineage, b.lineage) != 0);
	CHECK_STR(a.tpuform_version, TPF_VERSION);
	CHECK(a.fleet == NULL);
	CHECK_INT(a.nnodes, 0);
	CHECK(a.last_json == NULL);
	tpf_state_release(&a);
	tpf_state_release(&b);
}

static void test_state__add_find_remove_keep_order(void)
{
	struct tpf_state st;
	tpf_state_init(&st);
	const char *names[] = { "n-m", "n-c", "n-z", "n-a", "n-q", "n-b" };
	for (size_t i = 0; i < 6; i++)
		tpf_state_add(&st, names[i])->index = (int)i;
	CHECK_INT(st.nnodes, 6);
	int sorted = 1;
	for (size_t i = 1; i < st.nnodes; i++)
		sorted &= strcmp(st.nodes[i - 1].name, st.nodes[i].name) < 0;
	CHECK(sorted);

	struct tpf_state_node *n = tpf_state_add(&st, "n-q");
	CHECK_INT(st.nnodes, 6); /* existing node, not a duplicate */
	CHECK_INT(n->index, 4);
	CHECK(tpf_state_find(&st, "n-q") == n);
	CHECK(tpf_state_find(&st, "n-zz") == NULL);
	CHECK(tpf_state_find(&st, "") == NULL);

	n = tpf_state_add(&st, "n-new");
	CHECK_INT(n->status, TPF_NODE_PENDING);
	CHECK_INT(n->generation, 0);
	CHECK_INT(n->nworkers, 0);
	CHECK(n->id == NULL);

	CHECK_INT(tpf_state_remove(&st, "n-c"), 1);
	CHECK_INT(tpf_state_remove(&st, "n-c"), 0);
	CHECK(tpf_state_find(&st, "n-c") == NULL);
	CHECK(tpf_state_find(&st, "n-z") != NULL);
	CHECK_INT(tpf_state_find(&st, "n-a")->index, 3);
	CHECK_INT(st.nnodes, 6);
	tpf_state_release(&st);
}

static void test_state__set_workers_keeps_facts(void)
{
	struct tpf_state_node n = { 0 };
	tpf_state_node_set_workers(&n, 3);
	CHECK_INT(n.nworkers, 3);
	for (int i = 0; i < 3; i++) {
		CHECK_INT(n.workers[i].index, i);
		CHECK_INT(n.workers[i].exit_code, -1);
		CHECK(n.workers[i].script_hash == NULL);
	}
	xstrset(&n.workers[1].script_hash, "sha256:one");
	n.workers[1].exit_code = 0;
	xstrset(&n.workers[2].address, "10.0.0.3");
	tpf_state_node_set_workers(&n, 2);
	CHECK_INT(n.nworkers, 2);
	CHECK_STR(n.workers[1].script_hash, "sha256:one");
	CHECK_INT(n.workers[1].exit_code, 0);
	tpf_state_node_set_workers(&n, 4);
	CHECK_STR(n.workers[1].script_hash, "sha256:one");
	CHECK(n.workers[2].address == NULL); /* worker 2 was dropped, this is a new one */
	CHECK_INT(n.workers[3].index, 3);
	CHECK_INT(n.workers[3].exit_code, -1);
	tpf_state_node_set_workers(&n, 0);
	CHECK_INT(n.nworkers, 0);
	CHECK(n.workers == NULL);
	tpf_state_node_release(&n);
}

/* ---- JSON mapping ----------------------------------------------------- */

static void test_state__json_round_trip_every_field(void)
{
	struct tpf_state a, b;
	struct tpf_diags d = TPF_DIAGS_INIT;
	fill_state(&a);
	a.serial = 41;
	a.nodes[0].delete_sent_at = xstrdup("2026-11-28T10:00:00Z");
	json_t *j = tpf_state_to_json(&a);
	CHECK_INT(tpf_state_from_json(&b, j, "mem", &d), 0);
	CHECK_INT(d.n, 0);
	CHECK_INT(b.serial, 41);
	/* The record of a delete tpuform sent (plan/diff_going.c) survives. */
	CHECK_STR(b.nodes[0].delete_sent_at, "2026-11-28T10:00:00Z");
	CHECK_STR(b.tpuform_version, TPF_VERSION);
	check_same_state(&a, &b);
	/* and back again to the same document */
	json_t *j2 = tpf_state_to_json(&b);
	CHECK(json_equal(j, j2));
	json_decref(j);
	json_decref(j2);
	tpf_state_release(&a);
	tpf_state_release(&b);
	tpf_diags_release(&d);
}

static void test_state__json_shape_nulls_omitted_nodes_sorted(void)
{
	struct tpf_state st;
	fill_state(&st);
	st.nodes[0].workers[0].address = (free(st.nodes[0].workers[0].address), NULL);
	json_t *j = tpf_state_to_json(&st);
	CHECK_INT(json_integer_value(json_object_get(j, "version")), TPF_STATE_VERSION);
	CHECK_STR(json_string_value(json_object_get(j, "lineage")), st.lineage);
	CHECK_STR(json_string_value(json_object_get(j, "fleet")), "demo");
	json_t *nodes = json_object_get(j, "nodes");
	CHECK_INT(json_array_size(nodes), 3);
	CHECK_STR(json_string_value(json_object_get(json_array_get(nodes, 0), "name")), "demo-a-0");
	CHECK_STR(json_string_value(json_object_get(json_array_get(nodes, 1), "name")), "demo-b-0");
	CHECK_STR(json_string_value(json_object_get(json_array_get(nodes, 2), "name")), "demo-c-0");

	json_t *a = json_array_get(nodes, 0);
	json_t *recipe = json_object_get(a, "recipe");
	CHECK(json_is_true(json_object_get(recipe, "preemptible")));
	CHECK(json_is_false(json_object_get(recipe, "spot")));
	CHECK_INT(json_integer_value(json_object_get(recipe, "workers")), 1);
	CHECK_STR(json_string_value(json_object_get(json_object_get(recipe, "labels"), "tpuform-fleet")),
		  "demo");
	json_t *job = json_object_get(a, "job");
	CHECK_STR(json_string_value(json_object_get(json_object_get(job, "env"), "A")), "1");
	CHECK_STR(json_string_value(json_object_get(job, "secrets_hash")), "sha256:abcd");
	json_t *w0 = json_array_get(json_object_get(a, "workers"), 0);
	CHECK_INT(json_integer_value(json_object_get(w0, "index")), 0);
	CHECK_INT(json_integer_value(json_object_get(w0, "exit_code")), 100);
	CHECK(json_object_get(w0, "address") == NULL);
	CHECK_STR(json_string_value(json_object_get(w0, "host_key")), "SHA256:hostkey");

	json_t *c = json_array_get(nodes, 2);
	CHECK(json_object_get(c, "id") == NULL);
	CHECK(json_object_get(c, "group") == NULL);
	CHECK(json_object_get(c, "created_at") == NULL);
	CHECK(json_object_get(json_object_get(c, "job"), "commit") == NULL);
	CHECK(json_object_get(json_object_get(c, "recipe"), "zone") == NULL);
	CHECK_STR(json_string_value(json_object_get(c, "status")), "pending");
	json_decref(j);

	/* A document with unsorted nodes reads back sorted (find relies on it). */
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state r;
	json_t *doc = json_loads("{\"version\":1,\"serial\":2,\"lineage\":\"L\",\"nodes\":["
				 "{\"name\":\"z\"},{\"name\":\"a\"},{\"name\":\"m\"}]}",
				 0, NULL);
	CHECK_INT(tpf_state_from_json(&r, doc, "doc", &d), 0);
	CHECK_INT(r.nnodes, 3);
	if (r.nnodes == 3) {
		CHECK_STR(r.nodes[0].name, "a");
		CHECK_STR(r.nodes[2].name, "z");
	}
	CHECK(tpf_state_find(&r, "m") != NULL);
	json_decref(doc);
	tpf_state_release(&r);
	tpf_state_release(&st);
	tpf_diags_release(&d);
}

/* ---- save and load ---------------------------------------------------- */

static void test_state__save_load_round_trip_and_format(void)
{
	char *dir = fresh_dir("rt");
	char *path = xasprintf("%s/tpuform.state.json", dir);
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state a, b;
	struct stat sb;
	fill_state(&a);
	CHECK_INT(tpf_state_save_file(&a, path, &d), 0);
	CHECK_INT(a.serial, 1);

	CHECK_INT(stat(path, &sb), 0);
	CHECK_INT(sb.st_mode & 07777, 0600);
	char *text = slurp(path);
	CHECK(text && text[strlen(text) - 1] == '\n');
	CHECK(text && strstr(text, "{\n  \"fleet\": \"demo\",\n  \"lineage\": ") == text);
	CHECK(text && strstr(text, "\n  \"serial\": 1,\n"));
	free(text);

	CHECK_INT(tpf_state_load(&b, path, &d), 0);
	CHECK_INT(d.n, 0);
	CHECK_INT(b.serial, 1);
	CHECK_STR(b.tpuform_version, TPF_VERSION);
	check_same_state(&a, &b);
	char *listing = dir_listing(dir);
	CHECK_STR(listing, "tpuform.state.json"); /* no tmp file, no backup of nothing */
	free(listing);
	tpf_state_release(&a);
	tpf_state_release(&b);
	tpf_diags_release(&d);
	free(path);
	free(dir);
}

/* Loading the same bytes again takes the canonical text from the memo
 * (state_canon_memo.c): the same text a fresh parse makes, a save that
 * writes the same file, and an unchanged state still writes nothing;
 * other bytes get their own. */
static void test_state__canonical_memo(void)
{
	char *dir = fresh_dir("memo");
	char *path = xasprintf("%s/tpuform.state.json", dir);
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state a, b, c;
	fill_state(&a);
	CHECK_INT(tpf_state_save_file(&a, path, &d), 0);
	CHECK_INT(tpf_state_load(&b, path, &d), 0); /* the memo's first text */
	CHECK_INT(tpf_state_load(&c, path, &d), 0); /* a hit */
	char *fresh = tpf_state_canonical(&c);
	CHECK_STR(c.last_json, fresh);
	CHECK_STR(b.last_json, c.last_json);
	free(fresh);
	char *orig = xstrdup(c.last_json);
	/* Unchanged: the save writes nothing (the serial stays). */
	long serial = c.serial;
	CHECK_INT(tpf_state_save_file(&c, path, &d), 0);
	CHECK_INT(c.serial, serial);
	/* Changed after a hit: written, as after a fresh load. */
	xstrset(&c.nodes[0].recipe.zone, "europe-west4-a");
	xstrset(&b.nodes[0].recipe.zone, "europe-west4-a");
	char *pb = xasprintf("%s/b.json", dir);
	CHECK_INT(tpf_state_save_file(&c, path, &d), 0);
	CHECK_INT(c.serial, serial + 1);
	CHECK_INT(tpf_state_save_file(&b, pb, &d), 0);
	char *tc = slurp(path), *tb = slurp(pb);
	CHECK_STR(tc, tb);
	free(tc);
	free(tb);
	/* Other bytes: their own canonical text. */
	struct tpf_state e;
	CHECK_INT(tpf_state_load(&e, path, &d), 0);
	CHECK(strstr(e.last_json, "europe-west4-a") != NULL);
	CHECK(e.last_json && strcmp(e.last_json, orig) != 0);
	CHECK_STR(e.last_json, c.last_json);
	free(orig);
	CHECK_INT(d.n, 0);
	tpf_state_release(&a);
	tpf_state_release(&b);
	tpf_state_release(&c);
	tpf_state_release(&e);
	tpf_diags_release(&d);
	free(pb);
	free(path);
	free(dir);
}

static void test_state__missing_file_is_blank(void)
{
	char *path = in_tmp("does-not-exist.json");
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st;
	CHECK_INT(tpf_state_load(&st, path, &d), 0);
	CHECK_INT(d.n, 0);
	CHECK_INT(st.serial, 0);
	CHECK_INT(st.nnodes, 0);
	CHECK(is_uuid4(st.lineage));
	CHECK(access(path, F_OK) < 0); /* loading creates nothing */
	/* the first save writes the file even though nothing was added */
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	CHECK_INT(st.serial, 1);
	CHECK(access(path, F_OK) == 0);
	tpf_state_release(&st);
	tpf_diags_release(&d);
	free(path);
}

static void test_state__serial_and_lineage_rules(void)
{
	char *dir = fresh_dir("serial");
	char *path = xasprintf("%s/s.json", dir);
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st, again;
	struct stat s1, s2;

	tpf_state_init(&st);
	char *lineage = xstrdup(st.lineage);
	xstrset(&st.fleet, "demo");
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	CHECK_INT(st.serial, 1);

	/* unchanged: no write at all */
	CHECK_INT(stat(path, &s1), 0);
	usleep(20000);
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	CHECK_INT(st.serial, 1);
	CHECK_INT(stat(path, &s2), 0);
	CHECK(same_stat(&s1, &s2));

	/* a change bumps by exactly one */
	tpf_state_add(&st, "demo-a-0");
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	CHECK_INT(st.serial, 2);
	CHECK_INT(stat(path, &s1), 0);
	CHECK(!same_stat(&s1, &s2));

	/* a fresh load of an unchanged state does not rewrite either */
	CHECK_INT(tpf_state_load(&again, path, &d), 0);
	CHECK_INT(again.serial, 2);
	CHECK_STR(again.lineage, lineage);
	CHECK_INT(tpf_state_save_file(&again, path, &d), 0);
	CHECK_INT(again.serial, 2);
	CHECK_INT(stat(path, &s2), 0);
	CHECK(same_stat(&s1, &s2));

	/* a change in a worker deep inside bumps it */
	tpf_state_node_set_workers(tpf_state_find(&again, "demo-a-0"), 1);
	CHECK_INT(tpf_state_save_file(&again, path, &d), 0);
	CHECK_INT(again.serial, 3);
	tpf_state_find(&again, "demo-a-0")->workers[0].restarts = 1;
	CHECK_INT(tpf_state_save_file(&again, path, &d), 0);
	CHECK_INT(again.serial, 4);
	CHECK_STR(again.lineage, lineage);
	tpf_state_release(&again);

	CHECK_INT(tpf_state_load(&again, path, &d), 0);
	CHECK_INT(again.serial, 4);
	CHECK_STR(again.lineage, lineage);
	CHECK_INT(again.nodes[0].workers[0].restarts, 1);
	CHECK_INT(d.n, 0);

	tpf_state_release(&again);
	tpf_state_release(&st);
	tpf_diags_release(&d);
	free(lineage);
	free(path);
	free(dir);
}

static void test_state__backup_holds_previous_content_once(void)
{
	char *dir = fresh_dir("backup");
	char *path = xasprintf("%s/s.json", dir);
	char *bpath = xasprintf("%s.backup", path);
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state first, st;
	struct stat b1, b2;

	/* A run that starts without a file has nothing to back up. */
	tpf_state_init(&first);
	CHECK_INT(tpf_state_save_file(&first, path, &d), 0);
	tpf_state_add(&first, "n-1");
	CHECK_INT(tpf_state_save_file(&first, path, &d), 0);
	CHECK(access(bpath, F_OK) < 0);
	char *v2 = slurp(path);

	/* The next run: the backup is the file it started from... */
	CHECK_INT(tpf_state_load(&st, path, &d), 0);
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0); /* no change: no backup either */
	CHECK(access(bpath, F_OK) < 0);
	tpf_state_add(&st, "n-2");
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	char *backup = slurp(bpath);
	CHECK_STR(backup, v2);
	free(backup);
	CHECK_INT(stat(bpath, &b1), 0);
	CHECK_INT(b1.st_mode & 07777, 0600);

	/* ...and stays that file for the rest of the run. */
	tpf_state_add(&st, "n-3");
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	CHECK_INT(st.serial, 4);
	backup = slurp(bpath);
	CHECK_STR(backup, v2);
	free(backup);
	CHECK_INT(stat(bpath, &b2), 0);
	CHECK(same_stat(&b1, &b2));

	char *listing = dir_listing(dir);
	CHECK_STR(listing, "s.json s.json.backup");
	free(listing);

	/* A blank state saved over an existing file backs that file up. */
	char *v4 = slurp(path);
	struct tpf_state blank;
	tpf_state_init(&blank);
	CHECK_INT(tpf_state_save_file(&blank, path, &d), 0);
	backup = slurp(bpath);
	CHECK_STR(backup, v4);
	free(backup);
	CHECK_INT(d.n, 0);

	tpf_state_release(&blank);
	tpf_state_release(&first);
	tpf_state_release(&st);
	tpf_diags_release(&d);
	free(v2);
	free(v4);
	free(bpath);
	free(path);
	free(dir);
}

/*
 * A state written by the tpuform before completed nodes (version 1, no
 * completed_at, exit_code or restarted_at) still loads, unchanged in
 * meaning; the first save that changes it writes the current version.
 */
static void test_state__version_1_loads(void)
{
	char *path = in_tmp("v1.json");
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st;
	const char *doc = "{\"version\":1,\"serial\":4,\"lineage\":\"lin\",\"fleet\":\"f\","
			  "\"nodes\":[{\"name\":\"f-a-0\",\"group\":\"a\",\"status\":\"created\","
			  "\"id\":\"1\",\"generation\":2,\"recipe\":{\"zone\":\"z1\",\"workers\":2},"
			  "\"workers\":[{\"index\":0,\"restarts\":1,\"exit_code\":-1},"
			  "{\"index\":1,\"restarts\":3,\"exit_code\":1}]}]}\n";
	spew(path, doc);
	CHECK_INT(tpf_state_load(&st, path, &d), 0);
	CHECK_INT(d.n, 0);
	CHECK_INT(st.nnodes, 1);
	if (st.nnodes == 1) {
		const struct tpf_state_node *n = &st.nodes[0];
		CHECK_INT(n->status, TPF_NODE_CREATED);
		CHECK_INT(n->exit_code, -1);
		CHECK(n->completed_at == NULL);
		CHECK_INT(n->generation, 2);
		CHECK_INT(n->workers[1].restarts, 3);
		CHECK(n->workers[1].restarted_at == NULL);
	}
	/* nothing changed: no write */
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	char *after = slurp(path);
	CHECK_STR(after, doc);
	free(after);
	/* a change writes version 2 */
	st.nodes[0].workers[0].restarts = 2;
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	tpf_state_release(&st);
	CHECK_INT(tpf_state_load(&st, path, &d), 0);
	CHECK_INT(st.version, TPF_STATE_VERSION);
	CHECK_INT(st.serial, 5);
	tpf_state_release(&st);
	tpf_diags_release(&d);
	free(path);
}

/* Node statuses are parsed once, from the names state/node_status.c keeps:
 * every name the file may hold loads and is written back as it was, and a
 * name tpuform never writes is refused with the field's path. */
static void test_state__node_status_names(void)
{
	static const char *const names[] = { "pending", "created", "tainted", "bad_host",
					      "completed" };
	char *path = in_tmp("status.json");
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *doc = xasprintf("{\"version\":2,\"serial\":1,\"lineage\":\"lin\","
				      "\"fleet\":\"f\",\"nodes\":[{\"name\":\"f-a-0\","
				      "\"status\":\"%s\",\"generation\":0}]}\n",
				      names[i]);
		spew(path, doc);
		CHECK_INT(tpf_state_load(&st, path, &d), 0);
		CHECK_INT(st.nnodes, 1);
		if (st.nnodes == 1) {
			CHECK_INT(tpf_node_status_from_name(names[i]), (int)st.nodes[0].status);
			CHECK_STR(tpf_node_status_name(st.nodes[0].status), names[i]);
			json_t *j = tpf_state_to_json(&st);
			json_t *n = json_array_get(json_object_get(j, "nodes"), 0);
			CHECK_STR(json_string_value(json_object_get(n, "status")), names[i]);
			json_decref(j);
		}
		tpf_state_release(&st);
		free(doc);
	}
	CHECK_INT(tpf_node_status_from_name(NULL), TPF_NODE_STATUS_NONE);
	CHECK(tpf_node_status_name(TPF_NODE_STATUS_NONE) == NULL);
	spew(path, "{\"version\":2,\"serial\":1,\"lineage\":\"lin\",\"fleet\":\"f\","
		   "\"nodes\":[{\"name\":\"f-a-0\",\"status\":\"READY\"}]}\n");
	CHECK(tpf_state_load(&st, path, &d) < 0);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "nodes[0].status") &&
	      strstr(d.items[0].summary, "one of pending, created"));
	tpf_state_release(&st); /* a refused file leaves a blank state */
	tpf_diags_release(&d);
	free(path);
}

/* A completed node keeps its exit status and time; a restart its time. */
static void test_state__completed_round_trip(void)
{
	char *path = in_tmp("completed.json");
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st;
	tpf_state_init(&st);
	struct tpf_state_node *n = tpf_state_add(&st, "f-a-0");
	CHECK_INT(n->exit_code, -1);
	n->status = TPF_NODE_COMPLETED;
	xstrset(&n->completed_at, "2027-01-15T08:00:00Z");
	n->exit_code = 0;
	tpf_state_node_set_workers(n, 2);
	n->workers[1].restarts = 2;
	xstrset(&n->workers[1].restarted_at, "2027-01-15T07:00:00Z");
	tpf_state_add(&st, "f-a-1"); /* not completed: no exit_code key */
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	tpf_state_release(&st);
	char *text = slurp(path);
	CHECK(text && strstr(text, "\"completed_at\": \"2027-01-15T08:00:00Z\""));
	CHECK(text && strstr(text, "\"restarted_at\": \"2027-01-15T07:00:00Z\""));
	CHECK(text && strstr(text, "\"version\": 2"));
	free(text);
	CHECK_INT(tpf_state_load(&st, path, &d), 0);
	n = tpf_state_find(&st, "f-a-0");
	CHECK(n != NULL);
	if (n) {
		CHECK_INT(n->status, TPF_NODE_COMPLETED);
		CHECK_INT(n->exit_code, 0);
		CHECK_STR(n->completed_at, "2027-01-15T08:00:00Z");
		CHECK_STR(n->workers[1].restarted_at, "2027-01-15T07:00:00Z");
		CHECK(n->workers[0].restarted_at == NULL);
	}
	n = tpf_state_find(&st, "f-a-1");
	CHECK(n && n->exit_code == -1);
	json_t *j = tpf_state_to_json(&st);
	json_t *n1 = json_array_get(json_object_get(j, "nodes"), 1);
	CHECK(json_object_get(n1, "exit_code") == NULL);
	json_decref(j);
	tpf_state_release(&st);
	tpf_diags_release(&d);
	free(path);
}

static void test_state__unknown_keys_are_ignored(void)
{
	char *path = in_tmp("future.json");
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st;
	struct stat s1, s2;
	const char *doc = "{\"version\":1,\"serial\":9,\"lineage\":\"lin\",\"later\":{\"x\":[1]},"
			  "\"nodes\":[{\"name\":\"n\",\"shiny\":true,\"recipe\":{\"zone\":\"z\","
			  "\"tier\":3},\"workers\":[{\"index\":0,\"gpu\":null}]}]}\n";
	spew(path, doc);
	CHECK_INT(tpf_state_load(&st, path, &d), 0);
	CHECK_INT(d.n, 0);
	CHECK_INT(st.serial, 9);
	CHECK_STR(st.lineage, "lin");
	CHECK_INT(st.nnodes, 1);
	CHECK_STR(st.nodes[0].recipe.zone, "z");
	CHECK_INT(st.nodes[0].nworkers, 1);
	CHECK_INT(st.nodes[0].workers[0].exit_code, -1); /* absent: unknown */
	/* ignored keys are not a change: the file is not rewritten */
	CHECK_INT(stat(path, &s1), 0);
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	CHECK_INT(stat(path, &s2), 0);
	CHECK(same_stat(&s1, &s2));
	CHECK_INT(st.serial, 9);
	tpf_state_release(&st);
	tpf_diags_release(&d);
	free(path);
}

/* ---- refusals --------------------------------------------------------- */

/*
 * Load content from a file; it must be refused with exactly want_summary
 * ("PATH" stands for the path), leave the file's bytes as they were and
 * give a blank state. Returns the detail (caller frees) for more checks.
 */
static char *refused(const char *name, const char *content, const char *want_summary)
{
	char *path = in_tmp(name);
	char *want = subst_path(want_summary, path);
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st;
	char *detail = NULL;
	spew(path, content);
	CHECK_INT(tpf_state_load(&st, path, &d), TPF_ERROR);
	CHECK_INT(d.n, 1);
	if (d.n) {
		CHECK_STR(d.items[0].summary, want);
		detail = xstrdup(d.items[0].detail);
	}
	char *after = slurp(path);
	CHECK_STR(after, content);
	free(after);
	CHECK_INT(st.nnodes, 0);
	CHECK_INT(st.serial, 0);
	CHECK(is_uuid4(st.lineage));
	tpf_state_release(&st);
	tpf_diags_release(&d);
	free(want);
	free(path);
	return detail;
}

static void test_state__refuses_corrupt_and_truncated_json(void)
{
	const char *bad = "{\"version\": 1,\n  \"serial\": 2,\n  \"lineage\": oops }\n";
	json_error_t je;
	json_t *none = json_loads(bad, JSON_REJECT_DUPLICATES, &je);
	CHECK(none == NULL);
	char *want = xasprintf("state file 'PATH' is not valid JSON (line %d, column %d: %s); "
			       "it was left untouched", je.line, je.column, je.text);
	CHECK_INT(je.line, 3);
	char *detail = refused("corrupt.json", bad, want);
	/* No backup exists: the hint must not send the user to one. */
	CHECKF(detail && strstr(detail, "there is no '") && !strstr(detail, "copying"), "got: %s",
	       detail ? detail : "");
	free(detail);
	/* With a backup beside it, the hint names it. */
	char *bk = in_tmp("corrupt2.json.backup");
	spew(bk, "{}");
	detail = refused("corrupt2.json", bad, want);
	CHECKF(detail && strstr(detail, "copying '") && strstr(detail, "corrupt2.json.backup' over"),
	       "got: %s", detail ? detail : "");
	free(detail);
	free(bk);
	free(want);

	/* A real state file cut in half, as a non-atomic writer would leave it. */
	struct tpf_state st;
	fill_state(&st);
	json_t *j = tpf_state_to_json(&st);
	char *full = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
	full[strlen(full) / 2] = '\0';
	none = json_loads(full, JSON_REJECT_DUPLICATES, &je);
	CHECK(none == NULL);
	want = xasprintf("state file 'PATH' is not valid JSON (line %d, column %d: %s); "
			 "it was left untouched", je.line, je.column, je.text);
	free(refused("truncated.json", full, want));
	free(want);
	free(full);
	json_decref(j);
	tpf_state_release(&st);

	/* An empty file is refused too: with atomic writes it is nobody's state. */
	none = json_loads("", 0, &je);
	CHECK(none == NULL);
	want = xasprintf("state file 'PATH' is not valid JSON (line %d, column %d: %s); "
			 "it was left untouched", je.line, je.column, je.text);
	free(refused("empty.json", "", want));
	free(want);

	/* A key given twice: which value wins would be jansson's choice. */
	const char *dup = "{\"version\":1,\"serial\":1,\"lineage\":\"a\",\"lineage\":\"b\"}";
	none = json_loads(dup, JSON_REJECT_DUPLICATES, &je);
	CHECK(none == NULL);
	want = xasprintf("state file 'PATH' is not valid JSON (line %d, column %d: %s); "
			 "it was left untouched", je.line, je.column, je.text);
	free(refused("dupkey.json", dup, want));
	free(want);
}

static void test_state__refuses_newer_version(void)
{
	char *detail = refused("newer.json",
			       "{\"version\": 3, \"serial\": 5, \"lineage\": \"x\", "
			       "\"tpuform_version\": \"9.9.9\", \"nodes\": {\"new\": \"shape\"}}",
			       "state file 'PATH' has version 3, newer than this tpuform supports "
			       "(2); it was left untouched");
	CHECK(detail && strstr(detail, "tpuform 9.9.9"));
	CHECK(detail && strstr(detail, "Upgrade tpuform to at least 9.9.9"));
	free(detail);
	/* A stamp that is not newer than this tpuform: no upgrade to suggest. */
	detail = refused("edited.json",
			 "{\"version\": 3, \"serial\": 5, \"lineage\": \"x\", "
			 "\"tpuform_version\": \"0.0.1\"}",
			 "state file 'PATH' has version 3, newer than this tpuform supports "
			 "(2); it was left untouched");
	CHECKF(detail && !strstr(detail, "Upgrade") && strstr(detail, "claims tpuform 0.0.1"),
	       "got: %s", detail ? detail : "");
	free(detail);
	free(refused("older.json", "{\"version\": 0, \"serial\": 5, \"lineage\": \"x\"}",
		     "state file 'PATH' has version 0, older than any tpuform state format (the "
		     "first is 1); it was left untouched"));
}

static void test_state__version_compare(void)
{
	CHECK(tpf_version_cmp("0.10.0", "0.9.9") > 0);
	CHECK(tpf_version_cmp("0.1.0", "0.1.0") == 0);
	CHECK(tpf_version_cmp("0.1", "0.1.0") == 0);
	CHECK(tpf_version_cmp("1.0.0", "1.0.1") < 0);
	CHECK(tpf_version_cmp("dev", "0.0.1") < 0);
	CHECK(tpf_version_cmp("2", "10") < 0);
}

static void test_state__refuses_missing_lineage_and_bad_types(void)
{
	char *detail = refused("nolineage.json", "{\"version\": 1, \"serial\": 5, \"nodes\": []}",
			       "state file 'PATH' is missing the field 'lineage' (expected a "
			       "non-empty string); it was left untouched");
	CHECK(detail && strstr(detail, "nolineage.json.backup"));
	free(detail);
	free(refused("emptylineage.json", "{\"version\": 1, \"serial\": 5, \"lineage\": \"\"}",
		     "state file 'PATH' has an invalid field 'lineage': expected a non-empty "
		     "string, found an empty string; it was left untouched"));
	free(refused("numlineage.json", "{\"version\": 1, \"serial\": 5, \"lineage\": 7}",
		     "state file 'PATH' has an invalid field 'lineage': expected a non-empty "
		     "string, found an integer; it was left untouched"));
	free(refused("noserial.json", "{\"version\": 1, \"lineage\": \"l\"}",
		     "state file 'PATH' is missing the field 'serial' (expected a non-negative "
		     "integer); it was left untouched"));
	free(refused("strversion.json", "{\"version\": \"1\", \"serial\": 1, \"lineage\": \"l\"}",
		     "state file 'PATH' has an invalid field 'version': expected an integer, "
		     "found a string; it was left untouched"));
	free(refused("array.json", "[1, 2]",
		     "state file 'PATH' is not a tpuform state: expected a JSON object at the "
		     "top level, found an array; it was left untouched"));
	free(refused("nodesobj.json", "{\"version\":1,\"serial\":1,\"lineage\":\"l\",\"nodes\":{}}",
		     "state file 'PATH' has an invalid field 'nodes': expected an array, found "
		     "an object; it was left untouched"));
	free(refused("index.json",
		     "{\"version\":1,\"serial\":1,\"lineage\":\"l\",\"nodes\":[{\"name\":\"a\"},"
		     "{\"name\":\"b\",\"index\":\"3\"}]}",
		     "state file 'PATH' has an invalid field 'nodes[1].index': expected a "
		     "non-negative integer, found a string; it was left untouched"));
	free(refused("noname.json",
		     "{\"version\":1,\"serial\":1,\"lineage\":\"l\",\"nodes\":[{\"index\":1}]}",
		     "state file 'PATH' is missing the field 'nodes[0].name' (expected a "
		     "non-empty string); it was left untouched"));
	free(refused("preempt.json",
		     "{\"version\":1,\"serial\":1,\"lineage\":\"l\",\"nodes\":[{\"name\":\"a\","
		     "\"recipe\":{\"preemptible\":\"yes\"}}]}",
		     "state file 'PATH' has an invalid field 'nodes[0].recipe.preemptible': "
		     "expected true or false, found a string; it was left untouched"));
	free(refused("label.json",
		     "{\"version\":1,\"serial\":1,\"lineage\":\"l\",\"nodes\":[{\"name\":\"a\","
		     "\"recipe\":{\"labels\":{\"team\":5}}}]}",
		     "state file 'PATH' has an invalid field 'nodes[0].recipe.labels.team': "
		     "expected a string, found an integer; it was left untouched"));
	free(refused("env.json",
		     "{\"version\":1,\"serial\":1,\"lineage\":\"l\",\"nodes\":[{\"name\":\"a\","
		     "\"job\":{\"env\":[\"A=1\"]}}]}",
		     "state file 'PATH' has an invalid field 'nodes[0].job.env': expected an "
		     "object of strings, found an array; it was left untouched"));
	free(refused("exit.json",
		     "{\"version\":1,\"serial\":1,\"lineage\":\"l\",\"nodes\":[{\"name\":\"a\","
		     "\"workers\":[{\"index\":0,\"exit_code\":1.5}]}]}",
		     "state file 'PATH' has an invalid field 'nodes[0].workers[0].exit_code': "
		     "expected an integer, found a number with a fraction; it was left untouched"));
	free(refused("windex.json",
		     "{\"version\":1,\"serial\":1,\"lineage\":\"l\",\"nodes\":[{\"name\":\"a\","
		     "\"workers\":[{\"index\":1}]}]}",
		     "state file 'PATH' has an invalid field 'nodes[0].workers[0].index': "
		     "expected 0 (workers are listed by index from 0), found an integer; it was "
		     "left untouched"));
	free(refused("wtype.json",
		     "{\"version\":1,\"serial\":1,\"lineage\":\"l\",\"nodes\":[{\"name\":\"a\","
		     "\"workers\":[7]}]}",
		     "state file 'PATH' has an invalid field 'nodes[0].workers[0]': expected an "
		     "object, found an integer; it was left untouched"));
	free(refused("bigint.json",
		     "{\"version\":1,\"serial\":1,\"lineage\":\"l\",\"nodes\":[{\"name\":\"a\","
		     "\"generation\":99999999999}]}",
		     "state file 'PATH' has an invalid field 'nodes[0].generation': expected a "
		     "non-negative integer, found an integer; it was left untouched"));
	free(refused("dupnode.json",
		     "{\"version\":1,\"serial\":1,\"lineage\":\"l\",\"nodes\":[{\"name\":\"a\"},"
		     "{\"name\":\"b\"},{\"name\":\"a\"}]}",
		     "state file 'PATH' lists node 'a' twice; it was left untouched"));
}

/* A worker's "status" is read as a job state (model/job_state.h) and
 * written back with the same word: every word tpuform writes survives a
 * load and a save unchanged, and an absent one stays absent. */
static void test_state__worker_status_words_round_trip(void)
{
	static const struct {
		const char *word;
		enum tpf_job_state want;
	} words[] = {
		{ "running", TPF_JOB_STATE_ALIVE },   { "exited", TPF_JOB_STATE_EXITED },
		{ "dead", TPF_JOB_STATE_DEAD },       { "unreachable", TPF_JOB_STATE_UNREACHABLE },
		{ "failed", TPF_JOB_STATE_FAILED },   { NULL, TPF_JOB_STATE_UNKNOWN },
	};
	char *path = in_tmp("wstatus.json");
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		struct tpf_diags d = TPF_DIAGS_INIT;
		struct tpf_state st;
		char *status = words[i].word ? xasprintf(",\"status\":\"%s\"", words[i].word)
					     : xstrdup("");
		char *doc = xasprintf("{\"version\":2,\"serial\":1,\"lineage\":\"l\",\"nodes\":"
				      "[{\"name\":\"a\",\"workers\":[{\"index\":0,"
				      "\"exit_code\":3%s}]}]}\n",
				      status);
		spew(path, doc);
		CHECK_INT(tpf_state_load(&st, path, &d), 0);
		CHECK_INT(d.n, 0);
		CHECK_INT(st.nnodes, 1);
		if (st.nnodes == 1 && st.nodes[0].nworkers == 1) {
			CHECKF(st.nodes[0].workers[0].job_state == words[i].want, "status %s: got %d",
			       words[i].word ? words[i].word : "(absent)",
			       (int)st.nodes[0].workers[0].job_state);
			json_t *nj = tpf_state_to_json(&st);
			json_t *n0 = json_array_get(json_object_get(nj, "nodes"), 0);
			json_t *got = json_object_get(
				json_array_get(json_object_get(n0, "workers"), 0), "status");
			if (words[i].word)
				CHECK_STR(json_string_value(got), words[i].word);
			else
				CHECK(got == NULL);
			json_decref(nj);
		}
		tpf_state_release(&st);
		tpf_diags_release(&d);
		free(doc);
		free(status);
	}
	free(path);
	/* A word tpuform never writes is a damaged file, not a guess. */
	free(refused("wstatus_bad.json",
		     "{\"version\":2,\"serial\":1,\"lineage\":\"l\",\"nodes\":[{\"name\":\"a\","
		     "\"workers\":[{\"index\":0,\"status\":\"alive\"}]}]}",
		     "state file 'PATH' has an invalid field 'nodes[0].workers[0].status': expected "
		     "running, exited, dead, unreachable or failed, found 'alive'; it was left "
		     "untouched"));
}

/* ---- failures while saving -------------------------------------------- */

/*
 * Make dir unwritable for this process. Root ignores directory modes, so
 * as root the effective uid is switched to nobody (the saved uid stays 0
 * so that it can come back).
 */
static void make_unwritable(const char *dir)
{
	chmod(tmp, 0755);
	chmod(dir, 0555);
	if (geteuid() == 0 && seteuid(65534) < 0)
		perror("seteuid");
}

static void make_writable(const char *dir)
{
	if (getuid() == 0 && seteuid(0) < 0)
		perror("seteuid");
	chmod(dir, 0755);
	chmod(tmp, 0700);
}

static void test_state__save_into_readonly_dir_keeps_old_file(void)
{
	char *dir = fresh_dir("ro");
	char *path = xasprintf("%s/s.json", dir);
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st;

	tpf_state_init(&st);
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	tpf_state_add(&st, "n-1");
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	CHECK_INT(st.serial, 2);
	char *before = slurp(path);

	tpf_state_add(&st, "n-2");
	make_unwritable(dir);
	int err = tpf_state_save_file(&st, path, &d);
	make_writable(dir);
	CHECK_INT(err, TPF_ERROR);
	CHECK_INT(st.serial, 2);
	CHECK_INT(d.n, 1);
	if (d.n) {
		char *prefix = xasprintf("cannot write state file '%s': cannot create '%s.tmp.", path,
					 path);
		CHECKF(strncmp(d.items[0].summary, prefix, strlen(prefix)) == 0, "summary: %s",
		       d.items[0].summary);
		CHECK(strstr(d.items[0].summary, "Permission denied") != NULL);
		CHECK(d.items[0].detail && strstr(d.items[0].detail, "(serial 2)"));
		free(prefix);
	}
	char *after = slurp(path);
	CHECK_STR(after, before);
	free(after);
	char *listing = dir_listing(dir);
	CHECK_STR(listing, "s.json");
	free(listing);

	/* The retry writes the serial the failed attempt would have. */
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	CHECK_INT(st.serial, 3);
	struct tpf_state back;
	CHECK_INT(tpf_state_load(&back, path, &d), 0);
	CHECK_INT(back.serial, 3);
	CHECK_INT(back.nnodes, 2);
	tpf_state_release(&back);
	tpf_state_release(&st);
	tpf_diags_release(&d);

	/* When the backup cannot be written the file is not replaced either,
	 * and the backup is still due at the next attempt. */
	char *v3 = slurp(path);
	char *bpath = xasprintf("%s.backup", path);
	CHECK_INT(tpf_state_load(&st, path, &d), 0);
	tpf_state_add(&st, "n-3");
	make_unwritable(dir);
	err = tpf_state_save_file(&st, path, &d);
	make_writable(dir);
	CHECK_INT(err, TPF_ERROR);
	CHECK_INT(st.serial, 3);
	CHECK_INT(d.n, 1);
	if (d.n) {
		/* as nobody the read of the old file fails, as a user the
		 * backup's tmp file: either way before anything is replaced */
		char *prefix = xasprintf("cannot write state file '%s': ", path);
		CHECK(!strncmp(d.items[0].summary, prefix, strlen(prefix)));
		free(prefix);
	}
	CHECK(access(bpath, F_OK) < 0);
	after = slurp(path);
	CHECK_STR(after, v3);
	free(after);
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	CHECK_INT(st.serial, 4);
	after = slurp(bpath);
	CHECK_STR(after, v3);
	free(after);
	free(bpath);

	tpf_state_release(&st);
	tpf_diags_release(&d);
	free(v3);
	free(before);
	free(path);
	free(dir);
}

static void test_state__save_refuses_non_utf8(void)
{
	char *path = in_tmp("utf8.json");
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st;
	tpf_state_init(&st);
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	char *before = slurp(path);
	xstrset(&tpf_state_add(&st, "n")->job.run, "echo \xff\xfe");
	CHECK_INT(tpf_state_save_file(&st, path, &d), TPF_ERROR);
	CHECK_INT(st.serial, 1);
	if (d.n) {
		char *want = xasprintf("cannot write state file '%s': a value is not valid UTF-8",
				       path);
		CHECK_STR(d.items[0].summary, want);
		free(want);
	}
	char *after = slurp(path);
	CHECK_STR(after, before);
	free(after);
	free(before);
	tpf_state_release(&st);
	tpf_diags_release(&d);
	free(path);
}

/* The file must be json_dumps of the whole state, whatever its nodes'
 * dumps kept from earlier saves (state/state_doc.c). */
static void check_file_is_whole_dump(const char *path, struct tpf_state *st, long serial)
{
	CHECK_INT(st->serial, serial);
	json_t *root = tpf_state_to_json(st);
	char *want = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(root);
	char *got = slurp(path);
	CHECKF(got && want && strlen(got) == strlen(want) + 1 && !strncmp(got, want, strlen(want)),
	       "serial %ld: the saved file is not the whole state's dump", serial);
	free(got);
	free(want);
}

static void test_state__saves_reuse_dumps_only_of_unchanged_nodes(void)
{
	char *path = in_tmp("incremental.json");
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st;
	tpf_state_init(&st);
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0); /* no nodes: "nodes": [] */
	check_file_is_whole_dump(path, &st, 1);
	tpf_state_release(&st);
	fill_state(&st);
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	check_file_is_whole_dump(path, &st, 1); /* fill_state started afresh */
	/* one worker fact of the middle node */
	tpf_state_find(&st, "demo-b-0")->workers[1].job_state = TPF_JOB_STATE_EXITED;
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	check_file_is_whole_dump(path, &st, 2);
	char *text = slurp(path);
	CHECK(text && strstr(text, "\"exited\""));
	free(text);
	/* nothing changed: nothing written */
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	check_file_is_whole_dump(path, &st, 2);
	/* a node in between, the first removed, the top level changed */
	fill_node(tpf_state_add(&st, "demo-a-1"), "a1", 3);
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	check_file_is_whole_dump(path, &st, 3);
	CHECK_INT(tpf_state_remove(&st, "demo-a-0"), 1);
	xstrset(&st.fleet, "demo2");
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	check_file_is_whole_dump(path, &st, 4);
	/* a name edited in place: the file still lists nodes by name */
	xstrset(&st.nodes[0].name, "demo-z-0");
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	check_file_is_whole_dump(path, &st, 5);
	/* a value that cannot be saved, then fixed: the next save is whole */
	xstrset(&st.nodes[1].job.run, "echo \xff");
	CHECK_INT(tpf_state_save_file(&st, path, &d), TPF_ERROR);
	xstrset(&st.nodes[1].job.run, "echo fixed");
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	check_file_is_whole_dump(path, &st, 6);
	xstrset(&st.nodes[0].name, "demo-a-1"); /* sorted again, for remove */
	while (st.nnodes && tpf_state_remove(&st, st.nodes[0].name))
		;
	CHECK_INT(st.nnodes, 0);
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	check_file_is_whole_dump(path, &st, 7);
	tpf_state_release(&st);
	tpf_diags_release(&d);
	free(path);
}

/* ---- crash safety ----------------------------------------------------- */

/* The content a crash child writes at serial s: derived from s, so that a
 * file that loads but mixes two writes is caught too. */
static size_t crash_nodes(long s)
{
	return (size_t)(s % 16) + 1;
}

static char *crash_run(long s)
{
	size_t pad = (size_t)(s % 64) * 97;
	char *r = xmalloc(pad + 32);
	int n = snprintf(r, 32, "serial=%ld;", s);
	memset(r + n, 'x', pad);
	r[n + pad] = '\0';
	return r;
}

/* Saves forever; writes one byte to ready_fd after the first save, so
 * that every round's kill lands among saves, not during start-up. */
static void crash_child(const char *path, int ready_fd)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st;
	if (tpf_state_load(&st, path, &d) < 0)
		_exit(2);
	for (long saves = 0;; saves++) {
		if (saves == 1 && write(ready_fd, "r", 1) != 1)
			_exit(4);
		long next = st.serial + 1;
		size_t want = crash_nodes(next);
		char *run = crash_run(next);
		while (st.nnodes > want)
			tpf_state_remove(&st, st.nodes[st.nnodes - 1].name);
		for (size_t i = 0; i < want; i++) {
			char name[32];
			snprintf(name, sizeof(name), "crash-%02zu", i);
			xstrset(&tpf_state_add(&st, name)->job.run, run);
		}
		free(run);
		if (tpf_state_save_file(&st, path, &d) < 0)
			_exit(3);
	}
}

/* 0 if path holds a consistent state, else a reason. */
static const char *crash_check(const char *path, long *serial)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st;
	const char *why = NULL;
	if (tpf_state_load(&st, path, &d) < 0) {
		why = "state file does not load";
		goto done;
	}
	*serial = st.serial;
	if (st.serial == 0)
		goto done; /* not written yet */
	char *run = crash_run(st.serial);
	if (st.nnodes != crash_nodes(st.serial))
		why = "node count does not match the serial";
	for (size_t i = 0; !why && i < st.nnodes; i++)
		if (!st.nodes[i].job.run || strcmp(st.nodes[i].job.run, run))
			why = "node content does not match the serial";
	free(run);
done:
	tpf_state_release(&st);
	tpf_diags_release(&d);
	return why;
}

static void test_state__sigkill_during_saves_never_leaves_partial_file(void)
{
	char *dir = fresh_dir("crash");
	char *path = xasprintf("%s/s.json", dir);
	char *bpath = xasprintf("%s.backup", path);
	unsigned seed = 20261121;
	int rounds = 200, bad = 0, child_failed = 0;
	long serial = 0, last = 0, backup_serial = 0;
	const char *why = NULL;

	for (int r = 0; r < rounds; r++) {
		int ready[2];
		char c;
		if (pipe(ready) < 0)
			abort();
		pid_t pid = fork();
		if (pid == 0) {
			close(ready[0]);
			crash_child(path, ready[1]);
		}
		close(ready[1]);
		if (read(ready[0], &c, 1) != 1)
			child_failed++;
		close(ready[0]);
		/* a save takes a few ms (two fsyncs): kill somewhere in the next few */
		usleep((useconds_t)(rand_r(&seed) % 8000));
		kill(pid, SIGKILL);
		int status = 0;
		waitpid(pid, &status, 0);
		if (!WIFSIGNALED(status))
			child_failed++;
		const char *w = crash_check(path, &serial);
		if (!w && access(bpath, F_OK) == 0)
			w = crash_check(bpath, &backup_serial);
		if (!w && serial < last)
			w = "serial went backwards";
		if (w) {
			bad++;
			why = w;
		}
		last = serial;
	}
	CHECKF(bad == 0, "%d of %d rounds: %s", bad, rounds, why ? why : "");
	CHECK_INT(child_failed, 0);
	/* every child saved at least once before its kill */
	CHECKF(last >= rounds, "final serial %ld", last);
	printf("# crash test: %d kills, final serial %ld\n", rounds, last);

	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_remove_tree(dir, &d);
	tpf_diags_release(&d);
	free(bpath);
	free(path);
	free(dir);
}

int main(void)
{
	tmp = unit_tmpdir();
	RUN(test_state__init_is_blank_with_fresh_lineage);
	RUN(test_state__add_find_remove_keep_order);
	RUN(test_state__set_workers_keeps_facts);
	RUN(test_state__json_round_trip_every_field);
	RUN(test_state__json_shape_nulls_omitted_nodes_sorted);
	RUN(test_state__save_load_round_trip_and_format);
	RUN(test_state__missing_file_is_blank);
	RUN(test_state__canonical_memo);
	RUN(test_state__serial_and_lineage_rules);
	RUN(test_state__backup_holds_previous_content_once);
	RUN(test_state__unknown_keys_are_ignored);
	RUN(test_state__version_1_loads);
	RUN(test_state__node_status_names);
	RUN(test_state__completed_round_trip);
	RUN(test_state__refuses_corrupt_and_truncated_json);
	RUN(test_state__refuses_newer_version);
	RUN(test_state__version_compare);
	RUN(test_state__refuses_missing_lineage_and_bad_types);
	RUN(test_state__worker_status_words_round_trip);
	RUN(test_state__save_into_readonly_dir_keeps_old_file);
	RUN(test_state__save_refuses_non_utf8);
	RUN(test_state__saves_reuse_dumps_only_of_unchanged_nodes);
	RUN(test_state__sigkill_during_saves_never_leaves_partial_file);

	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_remove_tree(tmp, &d);
	tpf_diags_release(&d);
	free(tmp);
	return unit_done();
}

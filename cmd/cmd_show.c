/*
 * tpuform show: the fleet at a glance, one line per node (engine/show/show.h
 * computes each row), or with NODE (or -detail) per worker: reachable,
 * session, exit status, restarts and last log line, from the state plus a
 * live refresh. Human text, or with -json one JSON document
 * (docs/commands.md "show").
 */
#include "cmd/cmd.h"
#include "cmd/cmd_show.h"
#include "engine/saved_plan.h"
#include "engine/show/show.h"
#include "plan/plan_json.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
	int detail;
} show_o;

static const struct tpf_flag show_flags[] = {
	TPF_BOOL("detail", &show_o.detail,
		 "per-worker detail for every node (what 'show NODE' prints for one)"),
	TPF_FLAGS_END,
};

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

/* ---- the table ------------------------------------------------------------- */

enum { C_NODE, C_STATE, C_TYPE, C_ZONE, C_CLASS, C_AGE, C_WORKERS, C_RESTARTS, C_PREEMPT, C_JOB,
       C_LOG, NCOLS };
static const char *const headers[NCOLS] = { "NODE",	"STATE",    "TYPE",	   "ZONE",
					    "CLASS",	"AGE",	    "WORKERS",	   "RESTARTS",
					    "PREEMPTED", "JOB",	    "LAST LOG LINE" };

struct table {
	char *(*rows)[NCOLS];
	size_t n, alloc;
};

static void table_add(struct table *t, const char *const cells[NCOLS])
{
	XGROW(t->rows, t->n + 1, t->alloc);
	for (int c = 0; c < NCOLS; c++)
		t->rows[t->n][c] = xstrdup(cells[c] ? cells[c] : "-");
	t->n++;
}

/* Room for the last log line: what the terminal leaves after the other
 * columns (at least 20), or 40 characters when stdout is not one. */
static size_t log_room(size_t used)
{
	struct winsize ws;
	if (!isatty(STDOUT_FILENO) || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) || !ws.ws_col)
		return 40;
	return ws.ws_col > used + 20 ? ws.ws_col - used : 20;
}

/* text cut to at most max bytes, ending "..." when cut, never inside a
 * UTF-8 sequence. New string. */
static char *cut(const char *text, size_t max)
{
	size_t n = strlen(text);
	if (n <= max || max < 4)
		return xstrdup(text);
	size_t keep = max - 3;
	while (keep && ((unsigned char)text[keep] & 0xC0) == 0x80)
		keep--;
	return xasprintf("%.*s...", (int)keep, text);
}

static void table_print(struct table *t)
{
	size_t width[NCOLS];
	for (int c = 0; c < NCOLS; c++) {
		width[c] = strlen(headers[c]);
		for (size_t r = 0; r < t->n; r++)
			if (c != C_LOG && strlen(t->rows[r][c]) > width[c])
				width[c] = strlen(t->rows[r][c]);
	}
	size_t used = 0;
	for (int c = 0; c < C_LOG; c++)
		used += width[c] + 2;
	size_t room = log_room(used);
	for (int c = 0; c < C_LOG; c++)
		printf("%-*s  ", (int)width[c], headers[c]);
	printf("%s\n", headers[C_LOG]);
	for (size_t r = 0; r < t->n; r++) {
		for (int c = 0; c < C_LOG; c++)
			printf("%-*s  ", (int)width[c], t->rows[r][c]);
		char *log = cut(t->rows[r][C_LOG], room);
		printf("%s\n", log);
		free(log);
		for (int c = 0; c < NCOLS; c++)
			free(t->rows[r][c]);
	}
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

/* A node of the state as one row (engine/show/show.h decides every cell). */
static void table_node(struct table *t, const struct tpf_pipeline *s, const struct tpf_state_node *sn)
{
	struct tpf_show_row r;
	tpf_show_row(s, sn, tpf_now_wall(), &r);
	char age[32], workers[32], restarts[16], preempt[16];
	tpf_show_fmt_age(r.age, age, sizeof(age));
	snprintf(workers, sizeof(workers), "%d/%d", r.up, r.total);
	snprintf(restarts, sizeof(restarts), "%d", r.restarts);
	snprintf(preempt, sizeof(preempt), "%d", r.preemptions);
	/* A node with no VM: why, in full (the log column is cut). */
	const char *cells[NCOLS] = { sn->name, r.state,	 r.type,	      r.zone,
				     r.class,  age,	 workers,	      restarts,
				     preempt,  *r.why ? r.why : r.job, r.last_log };
	table_add(t, cells);
}

/* ---- nodes that are not in the state ---------------------------------------- */

/* Nodes that carry the fleet's labels but are not in state. */
static void show_unmanaged(struct tpf_pipeline *s, json_t *jnodes, int json, struct table *t)
{
	for (size_t i = 0; i < s->live.n; i++) {
		const struct tpf_live_node *ln = &s->live.nodes[i];
		if (tpf_state_find(&s->state, ln->name))
			continue;
		if (t) {
			const char *cells[NCOLS] = { ln->name, ln->state, NULL, NULL, NULL, NULL,
						     NULL,     NULL,	  NULL, "not in state",
						     "'tpuform plan' shows what happens to it" };
			table_add(t, cells);
		} else if (!json)
			printf("%s  %s  (not in state: labelled for this fleet; 'tpuform plan' shows "
			       "what will happen to it)\n\n",
			       ln->name, or_dash(ln->state));
		json_array_append_new(jnodes, json_pack("{s:s,s:s*,s:b}", "name", ln->name, "state",
							ln->state, "in_state", 0));
	}
}

/* Declared nodes that are in no state and not live: waiting for quota,
 * or not created (never, or forgotten after every zone refused them: the
 * state keeps only nodes with history). Printed (or added to jnodes);
 * returns how many. */
static size_t show_not_created(struct tpf_pipeline *s, int json, json_t *jnodes, struct table *t)
{
	struct tpf_diags quiet = TPF_DIAGS_INIT; /* the plan warns; show only lists */
	tpf_desired_compute(&s->desired, &s->fleet, NULL, &s->state, &quiet);
	tpf_diags_release(&quiet);
	size_t listed = 0;
	for (size_t i = 0; i < s->desired.n; i++) {
		const struct tpf_desired_node *dn = &s->desired.nodes[i];
		if (dn->completed || tpf_live_set_find(&s->live, dn->name) ||
		    tpf_state_find(&s->state, dn->name))
			continue;
		listed++;
		char why[256];
		tpf_show_not_created(NULL, why, sizeof(why));
		int quota = dn->deferred;
		const char *reason = quota ? dn->waiting : why;
		if (t) {
			const char *cells[NCOLS] = { dn->name, "NOT CREATED", NULL, NULL, NULL,
						     NULL,     NULL,	      NULL, NULL,
						     quota ? "waiting" : reason,
						     quota ? reason : NULL };
			table_add(t, cells);
		} else if (!json)
			printf("%s  NOT CREATED  [%s]\n\n", dn->name, reason);
		json_array_append_new(jnodes, json_pack("{s:s,s:b,s:s,s:s}", "name", dn->name,
							"in_state", 0, "not_as_declared",
							quota ? "quota" : "not_created", "reason",
							reason));
	}
	return listed;
}

/* ---- the watch line and the document ---------------------------------------- */

/* The last round of a `tpuform watch`, if one ran (engine/show/show.h): who
 * ran it and how long ago, so a watch that stopped shows. */
static json_t *load_watch(const struct tpf_pipeline *s, int json)
{
	double age;
	json_t *watch = tpf_show_watch_load(s, tpf_now_wall(), &age);
	if (watch && age >= 0)
		json_object_set_new(watch, "age_seconds", json_integer((json_int_t)age));
	if (!watch || json)
		return watch;
	const char *leader = json_string_value(json_object_get(watch, "leader"));
	char ago[32] = "?";
	if (age >= 0)
		tpf_fmt_duration(age, ago, sizeof(ago));
	printf("Watch: %s%s%slast round %s ago (round %lld: %s)\n", leader ? "leader " : "",
	       leader ? leader : "", leader ? ", " : "", ago,
	       (long long)json_integer_value(json_object_get(watch, "round")),
	       or_dash(json_string_value(json_object_get(watch, "summary"))));
	return watch;
}

static void print_document(const struct tpf_pipeline *s, json_t *jnodes, json_t *watch)
{
	json_t *root = json_pack("{s:s,s:I,s:s,s:O}", "fleet", s->fleet.name, "serial",
				 (json_int_t)s->state.serial, "lineage", s->state.lineage, "nodes",
				 jnodes);
	if (watch)
		json_object_set(root, "watch", watch);
	char *text = json_dumps(root, JSON_INDENT(2));
	printf("%s\n", text);
	free(text);
	json_decref(root);
}

/* show PLANFILE: a saved plan, as it was planned (Terraform's `show
 * PLANFILE`); with -json, as Terraform's plan JSON (plan/plan_json.h). */
static int show_plan(struct tpf_cmd_ctx *ctx, const char *path)
{
	struct tpf_plan p;
	int code = TPF_EXIT_ERROR;
	if (tpf_saved_plan_read(&p, path, ctx->d)) {
		size_t n = strlen(path);
		struct tpf_diag *last = ctx->d->n ? &ctx->d->items[ctx->d->n - 1] : NULL;
		if (last && !last->detail && ((n > 5 && !strcmp(path + n - 5, ".yaml")) ||
					      (n > 4 && !strcmp(path + n - 4, ".yml"))))
			last->detail = xasprintf("'tpuform show' takes a saved plan (from 'tpuform plan "
						 "-out=FILE'). To name the fleet file, use -f FILE: "
						 "tpuform show -f %s",
						 path);
		goto done;
	}
	if (ctx->o.json) {
		json_t *doc = tpf_plan_show_json(&p);
		char *text = json_dumps(doc, JSON_INDENT(2));
		printf("%s\n", text);
		free(text);
		json_decref(doc);
	} else {
		struct tpf_buf b = TPF_BUF_INIT;
		tpf_plan_render_human(&p, tpf_ui.color, &b);
		printf("%s", b.buf);
		tpf_buf_release(&b);
		for (size_t i = 0; i < p.ntargets; i++)
			printf("%s%s", i ? ", " : "\nPlanned with -target: ", p.targets[i]);
		printf("%s", p.ntargets ? "\n" : "");
	}
	code = TPF_EXIT_OK;
done:
	tpf_plan_release(&p);
	return code;
}

/* show NODE with a NODE that is not in the state: did you mean, and
 * what else the argument could have been. */
static int unknown_node(struct tpf_cmd_ctx *ctx, const char *name)
{
	struct tpf_pipeline *s = &ctx->s;
	const char *near = tpf_show_suggest_node(s, name);
	char *detail = xasprintf("'tpuform show' lists the fleet's nodes. To show a saved plan, "
				 "name its file: there is no file '%s'.",
				 name);
	if (near)
		tpf_errorx(ctx->d, NULL, detail,
			   "node '%s' is not in the state of fleet '%s'; did you mean '%s'?", name,
			   s->fleet.name, near);
	else
		tpf_errorx(ctx->d, NULL, detail, "node '%s' is not in the state of fleet '%s'", name,
			   s->fleet.name);
	free(detail);
	return TPF_EXIT_ERROR;
}

/* The argument is a node's name (in the state), a saved plan (a file), or
 * a node that does not exist (no file, and a name with no '.' or '/', or
 * one close to a node's): *only gets the node. 1: show the plan. */
static int plan_or_node(struct tpf_cmd_ctx *ctx, const char *arg,
			const struct tpf_state_node **only)
{
	struct stat st;
	*only = tpf_state_find(&ctx->s.state, arg);
	if (*only)
		return 0;
	if (!stat(arg, &st) ||
	    ((strchr(arg, '.') || strchr(arg, '/')) && !tpf_show_suggest_node(&ctx->s, arg)))
		return 1;
	return -1;
}

/* The fleet file's order: by group, then index (f-a-2 before f-a-10),
 * not the state's sort by name. */
static int by_group_index(const void *pa, const void *pb)
{
	const struct tpf_state_node *a = *(const struct tpf_state_node *const *)pa;
	const struct tpf_state_node *b = *(const struct tpf_state_node *const *)pb;
	int g = strcmp(a->group ? a->group : "", b->group ? b->group : "");
	if (g)
		return g;
	return a->index != b->index ? (a->index < b->index ? -1 : 1) : strcmp(a->name, b->name);
}

static void show_nodes(struct tpf_pipeline *s, const struct tpf_state_node *only, int json,
		       json_t *jnodes)
{
	struct table t = { 0 };
	int glance = !json && !only && !show_o.detail;
	if (glance && s->state.nnodes)
		printf("Fleet %s: %zu node%s in state (serial %ld, lineage %s)\n", s->fleet.name,
		       s->state.nnodes, s->state.nnodes == 1 ? "" : "s", s->state.serial,
		       s->state.lineage);
	else if (!json && !only)
		printf("Fleet %s: %zu node%s in state (serial %ld, lineage %s)\n\n", s->fleet.name,
		       s->state.nnodes, s->state.nnodes == 1 ? "" : "s", s->state.serial,
		       s->state.lineage);
	const struct tpf_state_node **order = xcalloc(s->state.nnodes + 1, sizeof(*order));
	for (size_t i = 0; i < s->state.nnodes; i++)
		order[i] = &s->state.nodes[i];
	qsort(order, s->state.nnodes, sizeof(*order), by_group_index);
	for (size_t i = 0; i < s->state.nnodes; i++) {
		const struct tpf_state_node *sn = order[i];
		if (only && sn != only)
			continue;
		if (glance)
			table_node(&t, s, sn);
		json_array_append_new(jnodes, tpf_show_node(s, sn, !json && !glance));
	}
	free(order);
	size_t waiting = 0;
	if (!only) {
		show_unmanaged(s, jnodes, json, glance ? &t : NULL);
		waiting = show_not_created(s, json, jnodes, glance ? &t : NULL);
	}
	if (t.n)
		table_print(&t);
	if (!json && !only && !s->state.nnodes && !waiting)
		printf("No nodes. Run 'tpuform apply' to create them.\n");
}

static int run_show(struct tpf_cmd_ctx *ctx)
{
	struct tpf_pipeline *s = &ctx->s;
	int json = ctx->o.json;
	const struct tpf_state_node *only = NULL;
	if (ctx->nargs) {
		int what = plan_or_node(ctx, ctx->args[0], &only);
		if (what > 0)
			return show_plan(ctx, ctx->args[0]);
		if (what < 0)
			return unknown_node(ctx, ctx->args[0]);
	}
	/* Not by the dispatcher: showing a saved plan needs no provider. */
	if (tpf_show_refresh(s, ctx->o.refresh, ctx->o.parallelism))
		return TPF_EXIT_ERROR;
	json_t *jnodes = json_array();
	show_nodes(s, only, json, jnodes);
	/* The watch line ends the table: what keeps these nodes as they are. */
	json_t *watch = only ? NULL : load_watch(s, json);
	if (json)
		print_document(s, jnodes, watch);
	json_decref(jnodes);
	json_decref(watch);
	return TPF_EXIT_OK;
}

const struct tpf_cmd tpf_cmd_show = {
	.name = "show",
	.summary = "Show the fleet at a glance, a node's workers, or a saved plan",
	.description = "  List the fleet's nodes, one line each: state, type, zone, class, age,\n"
		       "  workers up, restarts, preemptions, the job's state and its last log\n"
		       "  line; then the last round of 'tpuform watch' and how old it is. With\n"
		       "  NODE, per worker: whether it is reachable, its session, its job's exit\n"
		       "  status, restarts and last log line (-detail: that for every node).\n"
		       "  With PLANFILE (from 'tpuform plan -out=FILE'), show that saved plan\n"
		       "  instead; with -json as Terraform's 'show -json' prints a plan\n"
		       "  (format_version, resource_changes with their actions).\n",
	.flags = show_flags,
	.max_args = 1,
	.args_name = "[NODE | PLANFILE]",
	.args = TPF_ARGS_NODE,
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_JSON | TPF_CMD_REFRESH |
		 TPF_CMD_PARALLELISM,
	.signals = TPF_SIG_STOP,
	.run = run_show,
};

/*
 * Worker-facing commands: logs, exec, ssh. Each prefixes output with
 * "NODE/wN | " so the lines of many workers can be told apart, as
 * `gcloud ... ssh --worker=all` users do by hand.
 */
#include "cmd/cmd.h"
#include "engine/provision.h"
#include "engine/refresh.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static void print_prefixed(const char *node, int worker, const char *text)
{
	const char *p = text;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		tpf_ui_say("%s/w%d | %.*s\n", node, worker, (int)len, p);
		p += len + (nl ? 1 : 0);
	}
}

int cmd_logs(int argc, char **argv)
{
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	int worker = -1, lines = 20, follow = 0, show_help = 0;
	struct tpf_flag flags[] = {
		TPF_COMMON_FLAGS(o),
		{ "worker", NULL, TPF_FLAG_INT, &worker, "only this worker (default: all)" },
		{ "n", NULL, TPF_FLAG_INT, &lines, "last N lines (0: all; default 20)" },
		{ "follow", NULL, TPF_FLAG_BOOL, &follow, "keep printing new lines" },
		{ "help", "h", TPF_FLAG_BOOL, &show_help, "show this help" },
		{ 0 },
	};
	char **pos;
	int npos;
	if (tpf_parse_flags("logs", argc, argv, flags, &pos, &npos))
		return TPF_EXIT_ERROR;
	const char *node = npos ? pos[0] : NULL;
	free(pos);
	if (show_help || !node) {
		printf("Usage: tpuform logs [options] NODE\n\n"
		       "  Print the job log of the node's workers, each line prefixed NODE/wN |.\n\n"
		       "Options:\n");
		tpf_print_flags(stdout, flags);
		return show_help ? TPF_EXIT_OK : TPF_EXIT_ERROR;
	}
	tpf_ui_init(o.no_color, 0);
	tpf_install_signal_handlers();
	struct tpf_session s;
	struct tpf_state_node *sn;
	const struct tpf_live_node *ln;
	struct tpf_transport *t;
	int code = TPF_EXIT_ERROR;
	if (tpf_cmd_session_open(&s, &o, NULL) ||
	    tpf_refresh(s.prov, &s.fleet, &s.state, &s.live, &s.d) ||
	    tpf_session_target(&s, node, &sn, &ln, &t))
		goto done;
	if (worker >= (int)sn->nworkers) {
		tpf_error(&s.d, "node '%s' has %zu workers (0 to %zu)", node, sn->nworkers,
			  sn->nworkers - 1);
		goto done;
	}
	/* Follow by re-reading: how many lines each worker has shown so far. */
	size_t *seen = xcalloc(sn->nworkers, sizeof(size_t));
	code = TPF_EXIT_OK;
	for (int round = 0;; round++) {
		for (size_t w = 0; w < sn->nworkers; w++) {
			if (worker >= 0 && (int)w != worker)
				continue;
			struct tpf_buf out = TPF_BUF_INIT;
			int all = follow && round > 0;
			if (tpf_provision_logs(t, sn, ln, (int)w, all ? 0 : lines, &out, &s.d)) {
				code = TPF_EXIT_ERROR;
				tpf_buf_release(&out);
				continue;
			}
			/* Count lines, print those not yet shown. */
			size_t n = 0;
			const char *p = out.buf, *start = out.buf;
			for (; *p; p++)
				if (*p == '\n')
					n++;
			if (out.len && out.buf[out.len - 1] != '\n')
				n++;
			if (round == 0) {
				print_prefixed(node, (int)w, out.buf);
				seen[w] = follow ? 0 : n;
				if (follow) {
					/* After the first round we read whole files: count them. */
					struct tpf_buf full = TPF_BUF_INIT;
					if (!tpf_provision_logs(t, sn, ln, (int)w, 0, &full, &s.d)) {
						for (const char *q = full.buf; *q; q++)
							seen[w] += *q == '\n';
					}
					tpf_buf_release(&full);
				}
			} else if (n > seen[w]) {
				size_t skip = seen[w];
				for (start = out.buf; skip && *start; start++)
					if (*start == '\n')
						skip--;
				print_prefixed(node, (int)w, start);
				seen[w] = n;
			}
			tpf_buf_release(&out);
		}
		if (!follow || tpf_interrupted)
			break;
		tpf_sleep(1);
	}
	free(seen);
done:
	tpf_ui_diags(&s.d);
	if (tpf_diags_errors(&s.d))
		code = TPF_EXIT_ERROR;
	tpf_session_close(&s);
	return code;
}

struct exec_task {
	struct tpf_transport *t;
	const struct tpf_state_node *sn;
	const struct tpf_live_node *ln;
	int worker;
	const char *command;
	struct tpf_buf out;
	int status, rc;
	struct tpf_diags d;
};

static void *exec_thread(void *arg)
{
	struct exec_task *e = arg;
	struct tpf_worker_ref ref = {
		.node = e->sn->name, .node_id = e->sn->id, .worker = e->worker,
		.nworkers = (int)e->sn->nworkers,
		.endpoint = (size_t)e->worker < e->ln->nendpoints ? &e->ln->endpoints[e->worker] : NULL,
		.host_key = e->sn->workers[e->worker].host_key,
	};
	struct tpf_conn *c = NULL;
	e->rc = e->t->ops->connect(e->t, &ref, &c, NULL, &e->d);
	if (!e->rc) {
		e->rc = e->t->ops->exec(c, e->command, &e->out, &e->status, 0, &e->d);
		e->t->ops->close(c);
	}
	return NULL;
}

int cmd_exec(int argc, char **argv)
{
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	int all = 0, worker = -1, show_help = 0;
	struct tpf_flag flags[] = {
		TPF_COMMON_FLAGS(o),
		{ "all", NULL, TPF_FLAG_BOOL, &all, "every node of the fleet" },
		{ "worker", NULL, TPF_FLAG_INT, &worker, "only this worker (default: all)" },
		{ "help", "h", TPF_FLAG_BOOL, &show_help, "show this help" },
		{ 0 },
	};
	char **pos;
	int npos;
	if (tpf_parse_flags("exec", argc, argv, flags, &pos, &npos))
		return TPF_EXIT_ERROR;
	const char *node = (!all && npos) ? pos[0] : NULL;
	int cmd_at = all ? 0 : 1;
	struct tpf_buf command = TPF_BUF_INIT;
	for (int i = cmd_at; i < npos; i++)
		tpf_buf_addf(&command, "%s%s", i > cmd_at ? " " : "", pos[i]);
	free(pos);
	if (show_help || (!node && !all) || !command.len) {
		printf("Usage: tpuform exec [options] NODE|-all -- COMMAND...\n\n"
		       "  Run COMMAND with /bin/sh on every worker at once; output lines are\n"
		       "  prefixed NODE/wN |, then each worker's exit status is listed.\n\nOptions:\n");
		tpf_print_flags(stdout, flags);
		tpf_buf_release(&command);
		return show_help ? TPF_EXIT_OK : TPF_EXIT_ERROR;
	}
	tpf_ui_init(o.no_color, 0);
	struct tpf_session s;
	int code = TPF_EXIT_ERROR;
	struct exec_task *tasks = NULL;
	size_t ntasks = 0;
	if (tpf_cmd_session_open(&s, &o, NULL) || tpf_refresh(s.prov, &s.fleet, &s.state, &s.live, &s.d))
		goto done;
	if (!all && !tpf_state_find(&s.state, node)) {
		tpf_errorx(&s.d, NULL, "'tpuform state list' shows the nodes in state.",
			   "node '%s' is not in the state of fleet '%s'", node, s.fleet.name);
		goto done;
	}
	size_t cap = 0;
	for (size_t i = 0; i < s.state.nnodes; i++)
		cap += s.state.nodes[i].nworkers;
	tasks = xcalloc(cap ? cap : 1, sizeof(*tasks));
	for (size_t i = 0; i < s.state.nnodes; i++) {
		struct tpf_state_node *sn = &s.state.nodes[i];
		if (!all && strcmp(sn->name, node))
			continue;
		const struct tpf_live_node *ln;
		struct tpf_transport *t;
		if (tpf_session_target(&s, sn->name, &sn, &ln, &t))
			continue;
		for (size_t w = 0; w < sn->nworkers; w++) {
			if (worker >= 0 && (int)w != worker)
				continue;
			struct exec_task *e = &tasks[ntasks++];
			e->t = t;
			e->sn = sn;
			e->ln = ln;
			e->worker = (int)w;
			e->command = command.buf;
			tpf_buf_init(&e->out);
			tpf_diags_init(&e->d);
		}
	}
	pthread_t *th = xcalloc(ntasks ? ntasks : 1, sizeof(*th));
	for (size_t i = 0; i < ntasks; i++)
		pthread_create(&th[i], NULL, exec_thread, &tasks[i]);
	for (size_t i = 0; i < ntasks; i++)
		pthread_join(th[i], NULL);
	free(th);
	code = ntasks ? TPF_EXIT_OK : TPF_EXIT_ERROR;
	for (size_t i = 0; i < ntasks; i++) {
		struct exec_task *e = &tasks[i];
		tpf_buf_rtrim(&e->out);
		print_prefixed(e->sn->name, e->worker, e->out.buf);
	}
	tpf_ui_say("\n");
	for (size_t i = 0; i < ntasks; i++) {
		struct exec_task *e = &tasks[i];
		if (e->rc) {
			tpf_ui_say("%s/w%d : %s\n", e->sn->name, e->worker,
				   e->rc == TPF_EUNREACHABLE ? "unreachable"
				   : e->rc == TPF_EHOSTKEY ? "refused: host key changed (see below)"
							   : "failed (see below)");
			code = TPF_EXIT_ERROR;
		} else {
			tpf_ui_say("%s/w%d : exit=%d\n", e->sn->name, e->worker, e->status);
			if (e->status)
				code = TPF_EXIT_ERROR;
		}
		tpf_diags_move(&s.d, &e->d);
	}
done:
	for (size_t i = 0; i < ntasks; i++) {
		tpf_buf_release(&tasks[i].out);
		tpf_diags_release(&tasks[i].d);
	}
	free(tasks);
	tpf_buf_release(&command);
	tpf_ui_diags(&s.d);
	if (tpf_diags_errors(&s.d))
		code = TPF_EXIT_ERROR;
	tpf_session_close(&s);
	return code;
}

int cmd_ssh(int argc, char **argv)
{
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	int worker = 0, show_help = 0;
	struct tpf_flag flags[] = {
		TPF_COMMON_FLAGS(o),
		{ "worker", NULL, TPF_FLAG_INT, &worker, "worker index (default 0)" },
		{ "help", "h", TPF_FLAG_BOOL, &show_help, "show this help" },
		{ 0 },
	};
	char **pos;
	int npos;
	if (tpf_parse_flags("ssh", argc, argv, flags, &pos, &npos))
		return TPF_EXIT_ERROR;
	const char *node = npos ? pos[0] : NULL;
	free(pos);
	if (show_help || !node) {
		printf("Usage: tpuform ssh [options] NODE\n\n  Open a shell on a worker.\n\nOptions:\n");
		tpf_print_flags(stdout, flags);
		return show_help ? TPF_EXIT_OK : TPF_EXIT_ERROR;
	}
	tpf_ui_init(o.no_color, 0);
	struct tpf_session s;
	struct tpf_state_node *sn;
	const struct tpf_live_node *ln;
	struct tpf_transport *t;
	if (!tpf_cmd_session_open(&s, &o, NULL) &&
	    !tpf_refresh(s.prov, &s.fleet, &s.state, &s.live, &s.d) &&
	    !tpf_session_target(&s, node, &sn, &ln, &t)) {
		if (worker < 0 || (size_t)worker >= sn->nworkers) {
			tpf_error(&s.d, "node '%s' has no worker %d", node, worker);
		} else {
			struct tpf_worker_ref ref = {
				.node = sn->name, .node_id = sn->id, .worker = worker,
				.nworkers = (int)sn->nworkers,
				.endpoint = (size_t)worker < ln->nendpoints ? &ln->endpoints[worker] : NULL,
				.host_key = sn->workers[worker].host_key,
			};
			t->ops->interactive(t, &ref, &s.d); /* returns only on failure */
		}
	}
	tpf_ui_diags(&s.d);
	tpf_session_close(&s);
	return TPF_EXIT_ERROR;
}

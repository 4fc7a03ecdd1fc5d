/*
 * What the bootstrap script prints on a worker (templates/bootstrap.sh):
 * "TPUFORM key=value" lines among whatever else setup and the job wrote,
 * read by engine/workers/provision.c for `start` (provisioning), `status` (the
 * session probe of refresh and watch) and `stop`. A worker is outside
 * input: its output could be anything. An in-harness transport answers
 * every command with the fuzz input, at exit status 0 and then 3, so the
 * real tpf_provision_* entry points run their parser, the failure paths
 * (message line, redacted output tail) and the report cleaning.
 */
#include "tests/fuzz/fuzz.h"
#include "config/config.h"
#include "engine/workers/provision.h"
#include "providers/transport.h"
#include "state/state.h"
#include "util/kv.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct answer {
	const uint8_t *data;
	size_t size;
	int status;
};

struct tpf_conn {
	struct answer *a;
};

static int fake_connect(struct tpf_transport *t, const struct tpf_worker_ref *w,
			struct tpf_conn **out, char **host_key_out, struct tpf_diags *d)
{
	*out = xcalloc(1, sizeof(**out));
	(*out)->a = t->impl;
	if (host_key_out)
		*host_key_out = xstrdup("SHA256:fuzz");
	return 0;
}

static int fake_put(struct tpf_conn *c, const char *path, const void *data, size_t len,
		    mode_t mode, struct tpf_diags *d)
{
	return 0;
}

static int fake_exec(struct tpf_conn *c, const char *command, struct tpf_buf *out, int *status,
		     double timeout, struct tpf_diags *d)
{
	if (out)
		tpf_buf_add(out, c->a->data, c->a->size);
	*status = c->a->status;
	return 0;
}

static void fake_close(struct tpf_conn *c)
{
	free(c);
}

static const struct tpf_transport_ops fake_ops = {
	.connect = fake_connect, .put = fake_put, .exec = fake_exec, .close = fake_close,
};

static void one_status(struct answer *a, struct tpf_fleet *f, struct tpf_state_node *n)
{
	struct tpf_transport t = { &fake_ops, a };
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_worker_report r;
	int changed;
	tpf_provision_probe(&t, n, NULL, 0, 0, &r, &d);
	tpf_worker_report_release(&r);
	tpf_provision_stop(&t, n, NULL, 0, NULL, &d);
	tpf_provision_worker(&t, f, n, NULL, 0, a->status != 0, &changed, &d);
	tpf_diags_release(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct answer a = { data, size, 0 };
	struct tpf_fleet f;
	struct tpf_state_node *n;
	struct tpf_state st;
	memset(&f, 0, sizeof(f));
	f.name = "fz";
	f.provider = TPF_PROVIDER_LOCAL;
	/* redaction of a secret the output may quote */
	tpf_kvlist_set(&f.secrets, "TOKEN", "fuzz-secret");
	tpf_state_init(&st);
	n = tpf_state_add(&st, "fz-a-0");
	n->recipe.workers = 1;
	n->job.run = xstrdup("python train.py");
	tpf_state_node_set_workers(n, 1);
	one_status(&a, &f, n);
	a.status = 3;
	one_status(&a, &f, n);
	tpf_kvlist_release(&f.secrets);
	tpf_state_release(&st);
	return 0;
}

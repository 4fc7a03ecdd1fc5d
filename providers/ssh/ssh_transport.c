/*
 * The SSH transport's ops table and options. See providers/ssh/ssh.h.
 * Connecting (with bounded retries) is ssh_connect.c.
 */
#include "providers/ssh/ssh_internal.h"
#include "util/env.h"
#include "util/xalloc.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CONNECT_TIMEOUT 15.0
#define DEFAULT_RETRY_FIRST 60.0
#define DEFAULT_RETRY_PINNED 10.0
#define DEFAULT_IO_TIMEOUT 60.0
#define DEFAULT_KEEPALIVE 15.0

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;

static void init_libssh2(void)
{
	init_rc = libssh2_init(0);
}

int tpf_ssh_options_default(struct tpf_ssh_options *o, const struct tpf_fleet *f,
			    struct tpf_diags *d)
{
	memset(o, 0, sizeof(*o));
	if (f) {
		o->user = f->ssh.user;
		o->private_key = f->ssh.private_key;
		o->port = f->ssh.port;
		o->address = f->ssh.address;
		o->jump_user = f->ssh.jump.user;
		o->jump_host = f->ssh.jump.host;
		o->jump_port = f->ssh.jump.port;
		o->jump_host_key = f->ssh.jump_host_key;
	}
	o->connect_timeout = DEFAULT_CONNECT_TIMEOUT;
	o->retry_first = DEFAULT_RETRY_FIRST;
	o->retry_pinned = DEFAULT_RETRY_PINNED;
	o->io_timeout = DEFAULT_IO_TIMEOUT;
	o->keepalive = DEFAULT_KEEPALIVE;
	int rc = 0;
	rc |= tpf_env_seconds("TPUFORM_SSH_CONNECT_TIMEOUT", &o->connect_timeout, d);
	double retry = -1;
	rc |= tpf_env_seconds("TPUFORM_SSH_RETRY", &retry, d);
	if (retry >= 0)
		o->retry_first = o->retry_pinned = retry;
	rc |= tpf_env_seconds("TPUFORM_SSH_IO_TIMEOUT", &o->io_timeout, d);
	rc |= tpf_env_seconds("TPUFORM_SSH_KEEPALIVE", &o->keepalive, d);
	const char *prog = getenv("TPUFORM_SSH_PROGRAM");
	if (prog && *prog)
		o->ssh_program = prog;
	return rc ? TPF_ERROR : 0;
}

int tpf_ssh_connect_as(struct tpf_transport *tr, const struct tpf_worker_ref *w,
		       const struct tpf_ssh_access *a, struct tpf_conn **out, char **host_key_out,
		       struct tpf_diags *d)
{
	struct tpf_ssh *t = tr->impl;
	struct tpf_conn *c = NULL;
	if (host_key_out)
		*host_key_out = NULL;
	if (init_rc)
		return tpf_errorx(d, NULL, NULL, "cannot initialise libssh2 (error %d)", init_rc);
	int err = tpf_ssh_connect_retry(t, w, a, 1, &c, d);
	if (err)
		return err;
	if (host_key_out)
		*host_key_out = xstrdup(c->host_key);
	*out = c;
	return 0;
}

int tpf_ssh_dial_start_as(struct tpf_transport *tr, const struct tpf_worker_ref *w,
			  const struct tpf_ssh_access *a, struct tpf_dial **out, struct tpf_diags *d)
{
	*out = NULL;
	if (init_rc)
		return tpf_errorx(d, NULL, NULL, "cannot initialise libssh2 (error %d)", init_rc);
	return tpf_ssh_dial_new(tr->impl, w, a, out, d);
}

static int ssh_dial_start(struct tpf_transport *tr, const struct tpf_worker_ref *w,
			  struct tpf_dial **out, struct tpf_diags *d)
{
	return tpf_ssh_dial_start_as(tr, w, NULL, out, d);
}

static int ssh_connect(struct tpf_transport *tr, const struct tpf_worker_ref *w,
		       struct tpf_conn **out, char **host_key_out, struct tpf_diags *d)
{
	return tpf_ssh_connect_as(tr, w, NULL, out, host_key_out, d);
}

static void ssh_close(struct tpf_conn *c)
{
	tpf_ssh_conn_free(c);
}

/* The bastion's pin is process-wide (ssh_jump.c): the state carries it. */
static void ssh_sync_state(struct tpf_transport *t, struct tpf_state *st)
{
	(void)t;
	tpf_ssh_jump_pin_sync(&st->proxy_jump_host, &st->proxy_jump_host_key);
}

static const struct tpf_transport_ops ssh_ops = {
	.connect = ssh_connect,
	.put = tpf_ssh_put,
	.exec = tpf_ssh_exec,
	.put_source = NULL, /* the bootstrap script fetches the source (clone, bundle) */
	.close = ssh_close,
	.interactive = tpf_ssh_interactive,
	.sync_state = ssh_sync_state,
	.file_stat = tpf_ssh_file_stat,
	.file_list = tpf_ssh_file_list,
	.file_mkdir = tpf_ssh_file_mkdir,
	.file_send = tpf_ssh_file_send,
	.file_recv = tpf_ssh_file_recv,
	.exec_stream = tpf_ssh_exec_stream,
	.watch_open = tpf_ssh_watch_open,
	.watch_step = tpf_ssh_watch_step,
	.watch_close = tpf_ssh_watch_close,
	.dial_start = ssh_dial_start,
	.dial_step = tpf_ssh_dial_step,
	.dial_finish = tpf_ssh_dial_finish,
	.dial_free = tpf_ssh_dial_free,
	.forward = tpf_ssh_forward,
	.ssh_info = tpf_ssh_info,
};

struct tpf_transport *tpf_ssh_transport_new_opts(const struct tpf_ssh_options *o)
{
	pthread_once(&init_once, init_libssh2);
	struct tpf_ssh *t = xcalloc(1, sizeof(*t));
	t->o = *o;
	t->o.user = xstrdup(o->user);
	t->o.private_key = xstrdup(o->private_key);
	t->o.ssh_program = xstrdup(o->ssh_program);
	t->o.jump_user = xstrdup(o->jump_user);
	t->o.jump_host = xstrdup(o->jump_host);
	t->o.jump_host_key = xstrdup(o->jump_host_key);
	const char *user = o->user && *o->user ? o->user : getenv("USER");
	t->user = xstrdup(user && *user ? user : "root");
	pthread_mutex_init(&t->key_mu, NULL);
	pthread_mutex_init(&t->hub_mu, NULL);
	tpf_buf_init(&t->key);
	struct tpf_transport *tr = xcalloc(1, sizeof(*tr));
	tr->ops = &ssh_ops;
	tr->impl = t;
	return tr;
}

struct tpf_transport *tpf_ssh_transport_new(const struct tpf_fleet *f, struct tpf_diags *d)
{
	struct tpf_ssh_options o;
	if (tpf_ssh_options_default(&o, f, d) < 0)
		return NULL;
	return tpf_ssh_transport_new_opts(&o);
}

void tpf_ssh_transport_free(struct tpf_transport *tr)
{
	if (!tr)
		return;
	struct tpf_ssh *t = tr->impl;
	tpf_ssh_hub_free(t->hub);
	pthread_mutex_destroy(&t->hub_mu);
	if (t->key.alloc)
		OPENSSL_cleanse(t->key.buf, t->key.alloc);
	tpf_buf_release(&t->key);
	free(t->key_error);
	free(t->key_pub);
	free((char *)t->o.user);
	free((char *)t->o.private_key);
	free((char *)t->o.ssh_program);
	free((char *)t->o.jump_user);
	free((char *)t->o.jump_host);
	free((char *)t->o.jump_host_key);
	free(t->user);
	pthread_mutex_destroy(&t->key_mu);
	free(t);
	free(tr);
	/* libssh2_exit is not called: other transports of this process
	 * may still be in use, and the library's global state is small. */
}

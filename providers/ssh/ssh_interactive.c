/*
 * `tpuform ssh`: replace tpuform with ssh(1) on the worker, with host key
 * checking on and the pinned key as the only known key.
 *
 * The state keeps only a fingerprint, and known_hosts needs the key
 * itself. So: reach the worker with libssh2 first (handshake only), check
 * the key it presents against the pin (or take it, for a worker never
 * pinned: trust on first use, as apply would), then give ssh(1) exactly
 * that key through KnownHostsCommand (OpenSSH 8.5+) with
 * StrictHostKeyChecking=yes and no known_hosts files. ssh(1) verifies its
 * own connection against it, so a key swapped between the two
 * connections is refused. Nothing is written to disk.
 *
 * Behind ssh.proxy_jump the libssh2 connection went through the bastion and
 * checked its key too; ssh(1) then goes the same way with a ProxyCommand
 * running `ssh -W %h:%p` to the bastion with the same rules (that key only,
 * strict checking), rather than -J, whose jump host would read the user's
 * own known_hosts and ssh_config instead (ssh(1): options on the command
 * line apply to the destination, not to jump hosts).
 */
#include "providers/ssh/ssh_internal.h"
#include "util/shquote.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ARGS 40

static void add_word(struct tpf_buf *b, const char *w)
{
	if (b->len)
		tpf_buf_addf(b, " ");
	tpf_shquote_buf(b, w);
}

/* "ProxyCommand=ssh ... -W %h:%p BASTION": through the bastion whose key
 * the libssh2 connection just checked, and only with that key. Caller
 * frees. */
static char *proxy_command(struct tpf_ssh *t, const char *prog, const struct tpf_conn *c)
{
	struct tpf_buf b = TPF_BUF_INIT;
	char *known = xasprintf("KnownHostsCommand=/bin/echo tpuform-bastion %s",
				tpf_ssh_jump_known_line(c->jump));
	char port[16];
	snprintf(port, sizeof(port), "%d", t->o.jump_port > 0 ? t->o.jump_port : 22);
	const char *words[] = {
		prog, "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=/dev/null", "-o",
		"GlobalKnownHostsFile=/dev/null", "-o", known, "-o", "HostKeyAlias=tpuform-bastion",
		"-o", "CheckHostIP=no", "-o", "ServerAliveInterval=15", "-p", port, "-l",
		t->o.jump_user ? t->o.jump_user : c->user,
	};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		add_word(&b, words[i]);
	if (t->o.private_key) {
		add_word(&b, "-i");
		add_word(&b, t->o.private_key);
		add_word(&b, "-o");
		add_word(&b, "IdentitiesOnly=yes");
	}
	/* %h and %p: ssh(1) puts the worker's address and port there. */
	tpf_buf_addf(&b, " -W %%h:%%p");
	add_word(&b, t->o.jump_host);
	free(known);
	char *opt = xasprintf("ProxyCommand=%s", b.buf);
	tpf_buf_release(&b);
	return opt;
}

int tpf_ssh_interactive(struct tpf_transport *tr, const struct tpf_worker_ref *w,
			struct tpf_diags *d)
{
	return tpf_ssh_interactive_as(tr, w, NULL, d);
}

int tpf_ssh_interactive_as(struct tpf_transport *tr, const struct tpf_worker_ref *w,
			   const struct tpf_ssh_access *a, struct tpf_diags *d)
{
	struct tpf_ssh *t = tr->impl;
	struct tpf_conn *c = NULL;
	int err = tpf_ssh_connect_retry(t, w, a, 0, &c, d);
	if (err)
		return err;

	const char *prog = t->o.ssh_program ? t->o.ssh_program : "ssh";
	/* The alias keys the known host entry; ssh(1) matches it instead
	 * of the address, so the port needs no [host]:port form. */
	char *alias = xasprintf("tpuform-%s-w%d", w->node ? w->node : "worker", w->worker);
	char *known = xasprintf("KnownHostsCommand=/bin/echo %s %s", alias, c->known_line);
	char *alias_opt = xasprintf("HostKeyAlias=%s", alias);
	char *port = xasprintf("%d", c->port);
	char *host = xstrdup(c->host);
	char *user = xstrdup(c->user);
	char *proxy = c->jump ? proxy_command(t, prog, c) : NULL;
	const char *argv[MAX_ARGS];
	int n = 0;
	argv[n++] = prog;
	argv[n++] = "-o";
	argv[n++] = "StrictHostKeyChecking=yes";
	argv[n++] = "-o";
	argv[n++] = "UserKnownHostsFile=/dev/null";
	argv[n++] = "-o";
	argv[n++] = "GlobalKnownHostsFile=/dev/null";
	argv[n++] = "-o";
	argv[n++] = known;
	argv[n++] = "-o";
	argv[n++] = alias_opt;
	argv[n++] = "-o";
	argv[n++] = "CheckHostIP=no";
	argv[n++] = "-o";
	argv[n++] = "ServerAliveInterval=15";
	argv[n++] = "-p";
	argv[n++] = port;
	argv[n++] = "-l";
	argv[n++] = user;
	if (t->o.private_key) {
		argv[n++] = "-i";
		argv[n++] = t->o.private_key;
		argv[n++] = "-o";
		argv[n++] = "IdentitiesOnly=yes";
	}
	if (proxy) {
		argv[n++] = "-o";
		argv[n++] = proxy;
	}
	argv[n++] = host;
	argv[n] = NULL;
	tpf_ssh_conn_free(c);

	execvp(prog, (char *const *)argv);
	int e = errno;
	tpf_errorx(d, w->node, "install the OpenSSH client (apt-get install openssh-client), or set TPUFORM_SSH_PROGRAM",
		   "cannot run '%s' to open a shell on worker '%s/w%d': %s", prog,
		   w->node ? w->node : "?", w->worker, strerror(e));
	free(alias);
	free(known);
	free(alias_opt);
	free(port);
	free(host);
	free(user);
	free(proxy);
	return TPF_ERROR;
}

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
 */
#include "providers/ssh/ssh_internal.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ARGS 40

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
	return TPF_ERROR;
}

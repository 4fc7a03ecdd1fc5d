/*
 * Connecting to a worker: pick its address, reach it straight or through
 * the bastion (ssh.proxy_jump, ssh_jump.c), do the handshake and check its
 * host key (ssh_session.c, ssh_hostkey.c), and retry within a bounded
 * budget what time may fix. Below the transport's ops (ssh_transport.c)
 * and `tpuform ssh` (ssh_interactive.c), which both connect through here.
 */
#include "providers/ssh/ssh_internal.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <netdb.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#define BACKOFF_FIRST 0.25
#define BACKOFF_MAX 5.0
/* Attempts are also bounded by count, whatever the budget says. */
#define MAX_ATTEMPTS 30

const char *tpf_ssh_pick_address(const struct tpf_endpoint *e, enum tpf_ssh_address policy)
{
	if (!e)
		return NULL;
	const char *ext = e->external_ip && *e->external_ip ? e->external_ip : NULL;
	const char *in = e->ip && *e->ip ? e->ip : NULL;
	switch (policy) {
	case TPF_SSH_ADDRESS_EXTERNAL:
		return ext;
	case TPF_SSH_ADDRESS_INTERNAL:
		return in;
	case TPF_SSH_ADDRESS_AUTO:
		break;
	}
	return ext ? ext : in;
}

int tpf_ssh_tcp_fail(struct tpf_conn *c, int syserr, int gai, struct tpf_diags *d)
{
	if (syserr == -1) {
		tpf_errorx(d, c->where, NULL, "cannot resolve the address '%s' of worker '%s': %s",
			   c->host, c->where, gai_strerror(gai));
		return TPF_EUNREACHABLE;
	}
	char *hint = xasprintf("is the worker's VM up, and sshd listening on port %d there? "
			       "(ssh.port in the fleet file; a new TPU VM needs a minute "
			       "before it accepts connections)", c->port);
	tpf_errorx(d, c->where, hint, "cannot connect to worker '%s' at %s port %d: %s",
		   c->where, c->host, c->port, strerror(syserr));
	free(hint);
	return TPF_EUNREACHABLE;
}

/* TCP straight to the worker (no ssh.proxy_jump): c->fd. */
static int direct_connect(struct tpf_conn *c, double deadline, struct tpf_diags *d)
{
	int syserr = 0, gai = 0;
	c->fd = tpf_ssh_tcp_connect(c->host, c->port, deadline, c->t->o.keepalive, &syserr, &gai);
	return c->fd < 0 ? tpf_ssh_tcp_fail(c, syserr, gai, d) : 0;
}

int tpf_ssh_conn_new(struct tpf_ssh *t, const struct tpf_worker_ref *w,
		     const struct tpf_ssh_access *a, struct tpf_conn **out, struct tpf_diags *d)
{
	struct tpf_conn *c = xcalloc(1, sizeof(*c));
	int err = 0;

	*out = NULL;
	c->t = t;
	c->user = xstrdup(a && a->user && *a->user ? a->user : t->user);
	c->fd = -1;
	c->where = tpf_ssh_where(w);
	/* Behind a bastion, workers are reached at their internal address. */
	enum tpf_ssh_address policy = t->o.address == TPF_SSH_ADDRESS_AUTO && t->o.jump_host
					      ? TPF_SSH_ADDRESS_INTERNAL
					      : t->o.address;
	const char *host = w->endpoint ? tpf_ssh_pick_address(w->endpoint, policy) : NULL;
	if (!w->endpoint) {
		err = tpf_errorx(d, c->where, "a node reports its workers' addresses once it is READY; 'tpuform plan' shows its state",
				 "cannot reach worker '%s': its node reports no network endpoint for it",
				 c->where);
	} else if (!host) {
		int want_ext = policy == TPF_SSH_ADDRESS_EXTERNAL;
		err = tpf_errorx(d, c->where,
				 want_ext ? "set ssh.address: internal (or auto) to use the internal address, or give the node an external IP"
					  : "set ssh.address: external (or auto) to use the external address",
				 "cannot reach worker '%s': it has no %s IP address", c->where,
				 want_ext ? "external" : "internal");
	} else if (host[0] == '-' || strpbrk(host, " \t\n/")) {
		err = tpf_errorx(d, c->where, NULL,
				 "cannot reach worker '%s': its address '%s' is not a host name or IP",
				 c->where, host);
	}
	if (err) {
		c->broken = 1;
		tpf_ssh_conn_free(c);
		return err;
	}
	c->host = xstrdup(host);
	c->port = w->endpoint->port > 0 ? w->endpoint->port : t->o.port > 0 ? t->o.port : 22;
	*out = c;
	return 0;
}

int tpf_ssh_open(struct tpf_ssh *t, const struct tpf_worker_ref *w, const struct tpf_ssh_access *a,
		 struct tpf_conn **out, double deadline, struct tpf_diags *d)
{
	struct tpf_conn *c = NULL;
	*out = NULL;
	int err = tpf_ssh_conn_new(t, w, a, &c, d);
	if (err)
		return err;
	err = t->o.jump_host ? tpf_ssh_jump_open(c, deadline, d) : direct_connect(c, deadline, d);
	if (err)
		goto done;
	/* Known keys (no pin yet): ask for exactly their types, so the key
	 * presented is one that can be compared. */
	char known_pref[256];
	tpf_ssh_hostkey_pref(w->host_key ? NULL : a, known_pref, sizeof(known_pref));
	err = tpf_ssh_handshake(c, known_pref, deadline, d);
	if (err)
		goto done;
	err = tpf_ssh_check_host_key(c, w, a, d);
done:
	if (err) {
		c->broken = 1;
		tpf_ssh_conn_free(c);
		return err;
	}
	*out = c;
	return 0;
}

void tpf_ssh_conn_free(struct tpf_conn *c)
{
	struct tpf_ssh_jump *j = c ? c->jump : NULL;
	tpf_ssh_conn_close(c);
	/* After the inner session is closed: the hub sees its end. */
	tpf_ssh_jump_free(j);
}

double tpf_ssh_backoff(int attempt, double jitter)
{
	double d = BACKOFF_FIRST;
	for (int i = 1; i < attempt && d < BACKOFF_MAX; i++)
		d *= 2;
	if (d > BACKOFF_MAX)
		d = BACKOFF_MAX;
	if (jitter < 0.75)
		jitter = 0.75;
	if (jitter > 1.25)
		jitter = 1.25;
	return d * jitter;
}

static double random_jitter(void)
{
	unsigned int r = 0;
	if (RAND_bytes((unsigned char *)&r, sizeof(r)) != 1)
		return 1.0;
	return 0.75 + 0.5 * ((double)r / 4294967295.0);
}

double tpf_ssh_retry_delay(int attempt)
{
	return attempt >= MAX_ATTEMPTS ? -1 : tpf_ssh_backoff(attempt, random_jitter());
}

int tpf_ssh_connect_retry(struct tpf_ssh *t, const struct tpf_worker_ref *w,
			  const struct tpf_ssh_access *a, int authenticate, struct tpf_conn **out,
			  struct tpf_diags *d)
{
	double start = tpf_now_mono();
	/* Before the first contact, or right after a key was installed, a
	 * refused key may be one the guest agent has not installed yet. */
	int key_pending = !w->host_key || (a && a->fresh_key);
	double budget = key_pending ? t->o.retry_first : w->once ? 0 : t->o.retry_pinned;
	struct tpf_diags last = TPF_DIAGS_INIT;
	int err = TPF_ERROR, attempt;

	*out = NULL;
	for (attempt = 1;; attempt++) {
		struct tpf_conn *c = NULL;
		tpf_diags_release(&last);
		double deadline = tpf_now_mono() + t->o.connect_timeout;
		err = tpf_ssh_open(t, w, a, &c, deadline, &last);
		if (!err && authenticate) {
			err = tpf_ssh_auth(c, deadline, &last);
			if (err) {
				c->broken = err == TPF_EUNREACHABLE;
				tpf_ssh_conn_free(c);
				c = NULL;
			}
		}
		if (!err) {
			*out = c;
			break;
		}
		/* Retry what time may fix: a daemon not up yet (network
		 * errors) and, before the first contact, keys the guest
		 * agent has not installed yet. Never a changed host key. */
		int retryable = err == TPF_EUNREACHABLE || (err == TPF_SSH_EREFUSED && key_pending);
		double delay = tpf_ssh_retry_delay(attempt);
		if (!retryable || delay < 0 || tpf_now_mono() + delay - start > budget)
			break;
		tpf_sleep(delay);
	}
	if (err && attempt > 1) {
		/* Only the last attempt's reason, and how long we tried. */
		for (size_t i = 0; i < last.n; i++) {
			if (last.items[i].severity != TPF_SEV_ERROR)
				continue;
			char *s = xasprintf("%s (after %d attempts over %.0f s)",
					    last.items[i].summary, attempt, tpf_now_mono() - start);
			free(last.items[i].summary);
			last.items[i].summary = s;
		}
	}
	tpf_diags_move(d, &last);
	tpf_diags_release(&last);
	return err == TPF_SSH_EREFUSED ? TPF_ERROR : err;
}

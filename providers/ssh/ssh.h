/*
 * The SSH transport (providers/transport.h) over libssh2: how tpuform
 * reaches the worker VMs of Cloud TPU nodes.
 *
 * Concurrency model: one blocking-style connection per worker in flight,
 * driven by the caller's thread; the executor (engine/apply/apply.c) bounds the
 * threads with -parallelism, so no thread per worker is needed. Inside a
 * connection every libssh2 call runs non-blocking and waits in poll(2) with
 * a deadline, which gives exact connect, I/O and command timeouts and lets
 * keepalives go out while a long command runs. Measured on loopback
 * (tests/bench/ssh_bench.sh, 64 workers): tpuform used 0.3 s of CPU while
 * the workers' sshd, shells and screen used about 5 s, and -parallelism 8
 * and 64 took the same time; an event loop over many sessions would save
 * threads, not time.
 *
 * Reaching a worker (connect):
 *   - address: the endpoint's external IP when it has one, else the
 *     internal one; ssh.address: external|internal forces one
 *     (Node.networkEndpoints[].accessConfig.externalIp / ipAddress);
 *     with ssh.proxy_jump, auto means internal: the connection is a
 *     direct-tcpip channel through the bastion (ssh_jump.c);
 *   - port: the endpoint's port, else ssh.port, else 22;
 *   - refused, reset or timed-out connections (a fresh TPU VM's sshd comes
 *     up late) and, before any key is pinned or right after the provider
 *     installed the key (tpf_ssh_access.fresh_key), refused authentication
 *     (the guest agent installs metadata ssh-keys after boot, and after a
 *     change) are retried with exponential backoff and jitter (0.25 s
 *     doubling to 5 s) within a budget: 60 s for a worker never reached
 *     (no pin) or with a fresh key, 10 s for one reached before (so probing
 *     a dead worker does not stall a plan);
 *   - host key: SHA-256 fingerprint as OpenSSH prints it ("SHA256:" and
 *     unpadded base64 of the key blob). No pin: the key must be one the
 *     provider says the worker publishes (struct tpf_ssh_access), else,
 *     when it knows none, trust on first use; either way the fingerprint
 *     goes back for the state. A pin, or published keys, that differ:
 *     TPF_EHOSTKEY, before any credential is offered. Checking is never
 *     switched off;
 *   - authentication: public key from ssh.private_key (OpenSSH or PEM
 *     format, unencrypted: use ssh-agent for a key with a passphrase), or
 *     every identity of ssh-agent ($SSH_AUTH_SOCK) when no key is set;
 *   - keepalives: an SSH keepalive every 15 s while waiting, and
 *     TCP_USER_TIMEOUT so a peer that stops acknowledging is dropped.
 *
 * Environment overrides (seconds, or durations like "500ms", "2m", read
 * with util/env.h, so a bad value is an error; for tests and unusual
 * networks): TPUFORM_SSH_CONNECT_TIMEOUT (one attempt:
 * TCP connect, handshake and authentication; default 15),
 * TPUFORM_SSH_RETRY (the retry budget, both cases), TPUFORM_SSH_IO_TIMEOUT
 * (longest wait without progress during an upload; default 60),
 * TPUFORM_SSH_KEEPALIVE (default 15), TPUFORM_SSH_PROGRAM (the ssh(1) that
 * `tpuform ssh` runs; default "ssh").
 */
#ifndef TPF_SSH_H
#define TPF_SSH_H

#include <stddef.h>
#include "config/config.h"
#include "providers/provider.h"
#include "providers/transport.h"
#include "util/diag.h"

struct tpf_ssh_options {
	const char *user;        /* login user; NULL: $USER, else "root" */
	const char *private_key; /* key file path; NULL: ssh-agent */
	int port;                /* when the endpoint has none; 0: 22 */
	enum tpf_ssh_address address;
	double connect_timeout;  /* seconds per attempt */
	double retry_first;      /* retry budget, seconds, no host key pinned yet */
	double retry_pinned;     /* retry budget, seconds, host key pinned */
	double io_timeout;       /* seconds without progress during put */
	double keepalive;        /* seconds between keepalives; 0: none */
	const char *ssh_program; /* for interactive; NULL: "ssh" */
	size_t output_max;       /* bytes of one command's output kept;
				  * 0: TPF_TRANSPORT_OUTPUT_MAX (tests set less) */
	/* ssh.proxy_jump: the bastion; jump_host NULL: workers directly.
	 * jump_user NULL: user; jump_port 0: 22. jump_host_key: its known
	 * key "TYPE BASE64", NULL: pinned on first use (see below). */
	const char *jump_user, *jump_host, *jump_host_key;
	int jump_port;
};

/* Defaults as documented above, then the environment overrides (f may be
 * NULL). Strings are borrowed from f and the environment. A TPUFORM_SSH_*
 * duration that is set but not valid (util/env.h) keeps its default, adds
 * an error diagnostic naming it, and makes the result TPF_ERROR. */
int tpf_ssh_options_default(struct tpf_ssh_options *o, const struct tpf_fleet *f,
			    struct tpf_diags *d);

/*
 * A transport for the fleet's ssh settings (user, private_key, port,
 * address). Fails (NULL, with diagnostics) only for a bad TPUFORM_SSH_*
 * value; a missing key file is reported by connect, which names the
 * worker. Calls libssh2_init once per process (pthread_once). Free with
 * tpf_ssh_transport_free; the fleet must outlive it.
 */
struct tpf_transport *tpf_ssh_transport_new(const struct tpf_fleet *f, struct tpf_diags *d);
/* The same with explicit options (tests); strings in o are copied. */
struct tpf_transport *tpf_ssh_transport_new_opts(const struct tpf_ssh_options *o);
void tpf_ssh_transport_free(struct tpf_transport *t);

/*
 * What a provider knows, beyond the fleet's settings, about how to reach one
 * worker (the gcp provider: providers/gcp/gcp_access.h). Borrowed for the
 * call.
 *   user:      the login user (OS Login's POSIX user name); NULL: the
 *              transport's (ssh.user).
 *   host_keys: the host keys the worker publishes, each "TYPE BASE64" as in
 *              known_hosts (Cloud TPU: guest attributes hostkeys/). Used
 *              only while the worker has no pin: the worker must then
 *              present one of them, else TPF_EHOSTKEY before any
 *              credential is offered; the algorithms offered are limited to
 *              their types. None: trust on first use.
 *   host_keys_from: where they were read, for messages ("the node's guest
 *              attributes (hostkeys/)").
 *   fresh_key: the key was installed moments ago (a metadata patch, an OS
 *              Login import), which the VM applies after a while: a refused
 *              key is retried within the first-contact budget even when the
 *              worker has a pin.
 */
struct tpf_ssh_access {
	const char *user;
	const char *const *host_keys;
	size_t nhost_keys;
	const char *host_keys_from;
	int fresh_key;
};

/* The transport's connect and interactive ops (transport.h) with an access
 * (may be NULL: the ops themselves). Same results. */
int tpf_ssh_connect_as(struct tpf_transport *t, const struct tpf_worker_ref *w,
		       const struct tpf_ssh_access *a, struct tpf_conn **out, char **host_key_out,
		       struct tpf_diags *d);
int tpf_ssh_interactive_as(struct tpf_transport *t, const struct tpf_worker_ref *w,
			   const struct tpf_ssh_access *a, struct tpf_diags *d);
/* The transport's dial_start op (transport.h) with an access (may be
 * NULL), copied into the dial. Same results. */
int tpf_ssh_dial_start_as(struct tpf_transport *t, const struct tpf_worker_ref *w,
			  const struct tpf_ssh_access *a, struct tpf_dial **out,
			  struct tpf_diags *d);

/* The login user of transport t (ssh.user, else $USER, else root); borrowed. */
const char *tpf_ssh_user(struct tpf_transport *t);

/*
 * The public key tpuform logs in with, "TYPE BASE64" (no comment; caller
 * frees): ssh.private_key's ".pub" file; else derived from the private key
 * (OpenSSH format, or unencrypted PEM RSA/ECDSA/Ed25519 through libcrypto);
 * without ssh.private_key, the first key of ssh-agent. Errors: TPF_ERROR
 * with a diagnostic naming the file or the agent and how to fix it.
 */
int tpf_ssh_public_key(struct tpf_transport *t, char **out, struct tpf_diags *d);

/* The same from a private key's text (path names it in messages). */
int tpf_ssh_public_key_of_private(const void *key, size_t len, const char *path, char **out,
				  struct tpf_diags *d);

/* "TYPE BASE64" of an SSH public key blob (RFC 4253 section 6.6: its first
 * field is the type name); NULL when the blob does not start with one.
 * Caller frees. */
char *tpf_ssh_public_key_of_blob(const unsigned char *blob, size_t len);

/* The OpenSSH fingerprint ("SHA256:...") of a key "TYPE BASE64 [comment]";
 * NULL when it is not one. Caller frees. */
char *tpf_ssh_key_fingerprint(const char *key);

/*
 * The bastion's pin (ssh.proxy_jump; docs/providers.md "Private workers through a
 * bastion"). Workers behind it are each reached over a bastion connection
 * of their own, so one process holds one pin for all of them: this
 * process-wide pair ("host:port", "SHA256:..."), guarded by a mutex. The
 * first connection takes ssh.proxy_jump_host_key when set, else the pin,
 * else the key presented (trust on first use, with a warning); every later
 * connection must present the same key (TPF_EHOSTKEY otherwise, before
 * anything is sent to the worker).
 * Sync with the state's top-level fields (state/state.h proxy_jump_host,
 * proxy_jump_host_key): when this process has no pin yet and *host and
 * *key are set, they become it; else, when it has one, *host and *key are
 * replaced with copies (caller owns them). Call after loading a state and
 * before each save. Thread-safe.
 */
void tpf_ssh_jump_pin_sync(char **host, char **key);

/*
 * The address to use for endpoint e under the policy (see above);
 * borrowed from e, NULL when the endpoint has no such address.
 */
const char *tpf_ssh_pick_address(const struct tpf_endpoint *e, enum tpf_ssh_address policy);

/*
 * OpenSSH-style fingerprint of a raw SHA-256 digest (32 bytes):
 * "SHA256:" + base64 without '=' padding (ssh-keygen -l). Caller frees.
 */
char *tpf_ssh_fingerprint(const unsigned char digest[32]);

/*
 * The retry delay before attempt `attempt` (1 = the first retry): 0.25 s
 * doubling, at most 5 s, scaled by `jitter` in [0.75, 1.25]. Seconds.
 */
double tpf_ssh_backoff(int attempt, double jitter);

#endif

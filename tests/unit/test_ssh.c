/*
 * The SSH transport (providers/ssh) against real OpenSSH sshd workers
 * started by tests/e2e/sshd.sh: host key pinning, SFTP uploads, exec,
 * timeouts, retries, authentication by key file and by ssh-agent, and
 * many connections at once. Skipped (no checks) where the harness cannot
 * run: not root, or no sshd or unshare.
 */
#include "tests/unit/unit.h"
#include "providers/ssh/ssh.h"
#include "providers/transport.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NWORKERS 3
#define BASE_IP "127.0.31.1"

static char *top;     /* the repository */
static char *dir;     /* harness directory */
static char *keyfile; /* client private key */
static int port;
static char addr[NWORKERS][32];
static char fp[NWORKERS][128]; /* fingerprints as ssh-keygen prints them */

/* The sshd harness (tests/e2e/sshd.sh), shared with the other SSH tests. */
#define harness unit_sshd_harness
#define harness_do unit_sshd_harness_do

static void read_fingerprints(void)
{
	for (int i = 0; i < NWORKERS; i++) {
		char *s = xasprintf("sshd_fingerprint %d", i);
		char *f = harness(s, NULL);
		snprintf(fp[i], sizeof(fp[i]), "%s", f);
		free(f);
		free(s);
	}
}

static int start_workers(void)
{
	/* The repository: $TPF_TOP, else two levels above this binary. */
	if (getenv("TPF_TOP")) {
		top = xstrdup(getenv("TPF_TOP"));
	} else {
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return -1;
		exe[n] = '\0';
		char *unitdir = tpf_dirname(exe);
		top = xasprintf("%s/../..", unitdir);
		free(unitdir);
		setenv("TPF_TOP", top, 1);
	}
	dir = unit_tmpdir();
	/* sshd_watch: the workers go when this process does, even if it
	 * crashes. */
	char *s = xasprintf("sshd_start %s %d %s >&2 && sshd_watch %d && echo $SSHD_PORT", dir,
			    NWORKERS, BASE_IP, (int)getpid());
	int rc = 0;
	char *p = harness(s, &rc);
	free(s);
	if (rc != 0) {
		free(p);
		return rc;
	}
	port = atoi(p);
	free(p);
	/* Later harness calls need the same settings in their environment. */
	keyfile = unit_sshd_export(dir, 3, BASE_IP, port);
	for (int i = 0; i < NWORKERS; i++)
		snprintf(addr[i], sizeof(addr[i]), "127.0.31.%d", i + 1);
	read_fingerprints();
	return 0;
}

static struct tpf_ssh_options opts(void)
{
	struct tpf_ssh_options o;
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_ssh_options_default(&o, NULL, &d);
	tpf_diags_release(&d);
	o.user = "root";
	o.private_key = keyfile;
	o.connect_timeout = 5;
	o.retry_first = o.retry_pinned = 0.5;
	o.io_timeout = 10;
	return o;
}

struct worker {
	struct tpf_endpoint e;
	struct tpf_worker_ref ref;
};

static void worker_init(struct worker *w, int i, const char *pin)
{
	memset(w, 0, sizeof(*w));
	w->e.ip = addr[i];
	w->e.port = port;
	w->ref.node = "ut-a-0";
	w->ref.node_id = "id-1";
	w->ref.worker = i;
	w->ref.nworkers = NWORKERS;
	w->ref.endpoint = &w->e;
	w->ref.host_key = pin;
}

static int has_diag(const struct tpf_diags *d, const char *needle)
{
	for (size_t i = 0; i < d->n; i++)
		if (strstr(d->items[i].summary, needle) ||
		    (d->items[i].detail && strstr(d->items[i].detail, needle)))
			return 1;
	return 0;
}

static void print_diags(const struct tpf_diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		printf("#   diag: %s%s%s\n", d->items[i].summary, d->items[i].detail ? " | " : "",
		       d->items[i].detail ? d->items[i].detail : "");
}

/* Connect to worker i; NULL on failure (diagnostics printed). */
static struct tpf_conn *open_worker(struct tpf_transport *t, int i, const char *pin, char **hk)
{
	struct worker w;
	struct tpf_conn *c = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	worker_init(&w, i, pin);
	int rc = t->ops->connect(t, &w.ref, &c, hk, &d);
	if (rc)
		print_diags(&d);
	tpf_diags_release(&d);
	return rc ? NULL : c;
}

static char *home_file(int worker, const char *rel)
{
	return xasprintf("%s/w%d/home/%s", dir, worker, rel);
}

/* ---- pure functions ------------------------------------------------------ */

static void test_ssh__fingerprint_format(void)
{
	unsigned char digest[32];
	for (int i = 0; i < 32; i++)
		digest[i] = (unsigned char)(i * 7 + 1);
	char *f = tpf_ssh_fingerprint(digest);
	/* base64 of 01 08 0f ... without the trailing '=' */
	CHECK_STR(f, "SHA256:AQgPFh0kKzI5QEdOVVxjanF4f4aNlJuiqbC3vsXM09o");
	free(f);
}

static void test_ssh__address_policy(void)
{
	struct tpf_endpoint both = { .ip = "10.0.0.2", .external_ip = "34.1.2.3", .port = 22 };
	struct tpf_endpoint in_only = { .ip = "10.0.0.2", .external_ip = NULL };
	struct tpf_endpoint empty_ext = { .ip = "10.0.0.2", .external_ip = "" };
	CHECK_STR(tpf_ssh_pick_address(&both, TPF_SSH_ADDRESS_AUTO), "34.1.2.3");
	CHECK_STR(tpf_ssh_pick_address(&both, TPF_SSH_ADDRESS_INTERNAL), "10.0.0.2");
	CHECK_STR(tpf_ssh_pick_address(&both, TPF_SSH_ADDRESS_EXTERNAL), "34.1.2.3");
	CHECK_STR(tpf_ssh_pick_address(&in_only, TPF_SSH_ADDRESS_AUTO), "10.0.0.2");
	CHECK(tpf_ssh_pick_address(&in_only, TPF_SSH_ADDRESS_EXTERNAL) == NULL);
	CHECK_STR(tpf_ssh_pick_address(&empty_ext, TPF_SSH_ADDRESS_AUTO), "10.0.0.2");
	CHECK(tpf_ssh_pick_address(NULL, TPF_SSH_ADDRESS_AUTO) == NULL);
}

static void test_ssh__backoff(void)
{
	CHECK(tpf_ssh_backoff(1, 1.0) == 0.25);
	CHECK(tpf_ssh_backoff(2, 1.0) == 0.5);
	CHECK(tpf_ssh_backoff(3, 1.0) == 1.0);
	CHECK(tpf_ssh_backoff(6, 1.0) == 5.0);  /* 8 capped */
	CHECK(tpf_ssh_backoff(20, 1.0) == 5.0);
	CHECK(tpf_ssh_backoff(2, 9.0) == 0.625); /* jitter clamped to 1.25 */
	CHECK(tpf_ssh_backoff(2, 0.0) == 0.375); /* and to 0.75 */
}

static void test_ssh__options_from_env(void)
{
	struct tpf_fleet f;
	memset(&f, 0, sizeof(f));
	f.ssh.user = "tpu";
	f.ssh.private_key = "/k";
	f.ssh.port = 2222;
	f.ssh.address = TPF_SSH_ADDRESS_INTERNAL;
	setenv("TPUFORM_SSH_RETRY", "1500ms", 1);
	setenv("TPUFORM_SSH_IO_TIMEOUT", "2.5", 1);
	struct tpf_ssh_options o;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_ssh_options_default(&o, &f, &d), 0);
	CHECK_STR(o.user, "tpu");
	CHECK_STR(o.private_key, "/k");
	CHECK_INT(o.port, 2222);
	CHECK_INT(o.address, TPF_SSH_ADDRESS_INTERNAL);
	CHECK(o.retry_first == 1.5 && o.retry_pinned == 1.5);
	CHECK(o.io_timeout == 2.5);
	CHECK_INT((int)d.n, 0);

	/* A bad value is an error naming the variable, and keeps the default. */
	setenv("TPUFORM_SSH_CONNECT_TIMEOUT", "bogus", 1);
	setenv("TPUFORM_SSH_KEEPALIVE", "-1", 1);
	CHECK_INT(tpf_ssh_options_default(&o, &f, &d), TPF_ERROR);
	CHECK(o.connect_timeout == 15 && o.keepalive == 15);
	CHECK_INT((int)d.n, 2);
	CHECK(has_diag(&d, "'TPUFORM_SSH_CONNECT_TIMEOUT' is 'bogus'"));
	CHECK(has_diag(&d, "'TPUFORM_SSH_KEEPALIVE' is '-1'"));
	tpf_diags_release(&d);
	/* ... and so is making a transport with it. */
	CHECK(tpf_ssh_transport_new(&f, &d) == NULL);
	CHECK(has_diag(&d, "TPUFORM_SSH_CONNECT_TIMEOUT"));
	tpf_diags_release(&d);

	unsetenv("TPUFORM_SSH_RETRY");
	unsetenv("TPUFORM_SSH_IO_TIMEOUT");
	unsetenv("TPUFORM_SSH_CONNECT_TIMEOUT");
	unsetenv("TPUFORM_SSH_KEEPALIVE");
	CHECK_INT(tpf_ssh_options_default(&o, &f, &d), 0);
	CHECK(o.retry_first == 60 && o.retry_pinned == 10);
	CHECK(o.connect_timeout == 15 && o.io_timeout == 60);
	struct tpf_transport *t = tpf_ssh_transport_new(&f, &d);
	CHECK(t != NULL);
	tpf_ssh_transport_free(t);
	tpf_diags_release(&d);
}

/* "TYPE BASE64" of a public key file's first line. Caller frees. */
static char *pub_of(const char *path)
{
	struct tpf_buf b = TPF_BUF_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *out = NULL;
	if (tpf_read_file(path, &b, &d) == 0) {
		char *sp = strchr(b.buf, ' ');
		size_t n = sp ? (size_t)(sp - b.buf) + 1 + strcspn(sp + 1, " \n") : 0;
		out = n ? xstrndup(b.buf, n) : NULL;
	}
	tpf_buf_release(&b);
	tpf_diags_release(&d);
	return out;
}

/* The public key a transport with private key `key` (NULL: agent) gives. */
static int pubkey_of_transport(const char *key, char **out, struct tpf_diags *d)
{
	struct tpf_ssh_options o;
	tpf_ssh_options_default(&o, NULL, d);
	o.private_key = key;
	struct tpf_transport *t = tpf_ssh_transport_new_opts(&o);
	int rc = tpf_ssh_public_key(t, out, d);
	tpf_ssh_transport_free(t);
	return rc;
}

static int sh_ok(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/*
 * The key given to the workers: the .pub next to the private key, else
 * derived from it (OpenSSH format, also encrypted; PEM PKCS#1, PKCS#8),
 * else refused; ssh-agent's first key. Checked against what ssh-keygen
 * writes.
 */
static void test_ssh__public_key(void)
{
	if (!sh_ok("command -v ssh-keygen >/dev/null 2>&1")) {
		printf("# SKIP no ssh-keygen\n");
		return;
	}
	char *tmp = unit_tmpdir();
	static const struct {
		const char *name, *args;
	} kinds[] = {
		{ "ed", "-t ed25519" },			  /* OpenSSH format */
		{ "ed-enc", "-t ed25519 -N secret" },	  /* encrypted: public part in clear */
		{ "rsa-pem", "-t rsa -b 2048 -m PEM" },	  /* PKCS#1 */
		{ "ec-pkcs8", "-t ecdsa -b 384 -m PKCS8" }, /* PKCS#8 */
		{ "rsa-ossh", "-t rsa -b 2048" },
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		char *key = xasprintf("%s/%s", tmp, kinds[i].name);
		char *cmd = xasprintf("ssh-keygen -q %s%s -C c -f %s </dev/null", kinds[i].args,
				      strstr(kinds[i].args, "-N") ? "" : " -N ''", key);
		CHECKF(sh_ok(cmd), "%s", cmd);
		char *pubfile = xasprintf("%s.pub", key);
		char *want = pub_of(pubfile);
		struct tpf_diags d = TPF_DIAGS_INIT;
		char *got = NULL;
		/* from the .pub */
		CHECK_INT(pubkey_of_transport(key, &got, &d), 0);
		CHECK_STR(got, want);
		free(got);
		got = NULL;
		/* without it: derived from the private key */
		unlink(pubfile);
		int rc = pubkey_of_transport(key, &got, &d);
		CHECKF(rc == 0, "%s: %s", kinds[i].name, d.n ? d.items[0].summary : "");
		CHECK_STR(got, want);
		free(got);
		tpf_diags_release(&d);
		free(want);
		free(pubfile);
		free(cmd);
		free(key);
	}
	/* An encrypted PEM key cannot be read without its passphrase: an
	 * error that says what to do (and no prompt on the terminal). */
	char *enc = xasprintf("%s/rsa-pem-enc", tmp);
	char *cmd = xasprintf("ssh-keygen -q -t rsa -b 2048 -m PEM -N secret -f %s && rm %s.pub",
			      enc, enc);
	CHECK(sh_ok(cmd));
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *got = NULL;
	CHECK_INT(pubkey_of_transport(enc, &got, &d), TPF_ERROR);
	CHECK(got == NULL);
	CHECK(has_diag(&d, "cannot tell the public key of SSH private key"));
	CHECK(has_diag(&d, ".pub"));
	tpf_diags_release(&d);
	/* A .pub that is not a key line, and a missing key. */
	char *bad = xasprintf("%s/ed.pub", tmp);
	tpf_write_file_atomic(bad, "hello\n", 6, 0644, &d);
	char *edkey = xasprintf("%s/ed", tmp);
	CHECK_INT(pubkey_of_transport(edkey, &got, &d), TPF_ERROR);
	CHECK(has_diag(&d, "is not one OpenSSH public key line"));
	tpf_diags_release(&d);
	char *none = xasprintf("%s/none", tmp);
	CHECK_INT(pubkey_of_transport(none, &got, &d), TPF_ERROR);
	CHECK(has_diag(&d, "does not exist"));
	tpf_diags_release(&d);

	/* ssh-agent: its first key; none without SSH_AUTH_SOCK. */
	char *old_sock = xstrdup(getenv("SSH_AUTH_SOCK"));
	unsetenv("SSH_AUTH_SOCK");
	CHECK_INT(pubkey_of_transport(NULL, &got, &d), TPF_ERROR);
	CHECK(has_diag(&d, "SSH_AUTH_SOCK is not set"));
	tpf_diags_release(&d);
	char *sock = xasprintf("%s/agent.sock", tmp);
	char *s = xasprintf("sh -c 'eval \"$(ssh-agent -s -a %s)\" >/dev/null && echo $SSH_AGENT_PID "
			    "&& SSH_AUTH_SOCK=%s ssh-add -q %s/rsa-ossh %s/ed 2>/dev/null'",
			    sock, sock, tmp, tmp);
	FILE *pp = popen(s, "r");
	char pidline[32] = "";
	if (pp && !fgets(pidline, sizeof(pidline), pp))
		pidline[0] = '\0';
	int added = pp && pclose(pp) == 0;
	pid_t agent = (pid_t)atoi(pidline);
	if (added && agent > 0) {
		setenv("SSH_AUTH_SOCK", sock, 1);
		char *first = xasprintf("ssh-keygen -y -f %s/rsa-ossh > %s/first.pub", tmp, tmp);
		CHECK(sh_ok(first));
		char *firstpub = xasprintf("%s/first.pub", tmp);
		char *want = pub_of(firstpub);
		CHECK_INT(pubkey_of_transport(NULL, &got, &d), 0);
		CHECK_STR(got, want);
		free(got);
		free(want);
		free(firstpub);
		free(first);
		tpf_diags_release(&d);
	} else {
		printf("# SKIP the ssh-agent case: ssh-agent or ssh-add did not work\n");
	}
	if (agent > 0)
		kill(agent, SIGTERM); /* the agent this test started */
	if (old_sock)
		setenv("SSH_AUTH_SOCK", old_sock, 1);
	else
		unsetenv("SSH_AUTH_SOCK");
	free(old_sock);
	free(s);
	free(sock);
	free(none);
	free(edkey);
	free(bad);
	free(cmd);
	free(enc);
	tpf_remove_tree(tmp, &d);
	tpf_diags_release(&d);
	free(tmp);
}

static void test_ssh__key_fingerprint(void)
{
	/* ssh-keygen -l -E sha256 of this key prints this fingerprint */
	char *f = tpf_ssh_key_fingerprint(
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGnVhWh0HUkf2CYnw8WyWHNHhK4Ifl3VnTKTimH1YbpD c");
	CHECK_STR(f, "SHA256:FianHW9kwtKkCspIjB5SVEYC8Hi1xrdl9NbSL+zENI4");
	free(f);
	CHECK(tpf_ssh_key_fingerprint("ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIGnVhWh0HUkf2CYnw8WyWHNHhK4Ifl3VnTKTimH1YbpD") == NULL);
	CHECK(tpf_ssh_key_fingerprint("ssh-ed25519 !!!!") == NULL);
	CHECK(tpf_ssh_key_fingerprint("nospace") == NULL);
	CHECK(tpf_ssh_public_key_of_blob((const unsigned char *)"\0\0\0\020" "ab", 6) == NULL);
}

/* ---- against sshd ------------------------------------------------------------ */

static void test_ssh__tofu_and_pin(void)
{
	struct tpf_ssh_options o = opts();
	struct tpf_transport *t = tpf_ssh_transport_new_opts(&o);
	char *hk = NULL;
	struct tpf_conn *c = open_worker(t, 1, NULL, &hk);
	CHECK(c != NULL);
	CHECK_STR(hk, fp[1]); /* what ssh-keygen -l says of the worker's key */
	if (c)
		t->ops->close(c);
	/* The pinned key connects. */
	char *hk2 = NULL;
	c = open_worker(t, 1, fp[1], &hk2);
	CHECK(c != NULL);
	CHECK_STR(hk2, fp[1]);
	if (c)
		t->ops->close(c);
	/* Another worker's key is not this worker's. */
	struct worker w;
	worker_init(&w, 1, fp[0]);
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *hk3 = NULL;
	c = NULL;
	double t0 = tpf_now_mono();
	int rc = t->ops->connect(t, &w.ref, &c, &hk3, &d);
	CHECK_INT(rc, TPF_EHOSTKEY);
	CHECK(c == NULL && hk3 == NULL);
	CHECK(has_diag(&d, "ut-a-0/w1"));
	CHECK(has_diag(&d, fp[0]) && has_diag(&d, fp[1]));
	CHECK(has_diag(&d, "has changed"));
	CHECK(has_diag(&d, "tpuform state rm ut-a-0"));
	CHECK(d.n == 1); /* one diagnostic: no retries of a changed key */
	CHECK(tpf_now_mono() - t0 < 0.5 + 5); /* not retried over the budget */
	tpf_diags_release(&d);
	free(hk);
	free(hk2);
	tpf_ssh_transport_free(t);
}

static void test_ssh__put(void)
{
	struct tpf_ssh_options o = opts();
	struct tpf_transport *t = tpf_ssh_transport_new_opts(&o);
	struct tpf_conn *c = open_worker(t, 0, fp[0], NULL);
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct stat st;
	struct tpf_buf got = TPF_BUF_INIT;
	if (!c) {
		CHECK(c != NULL);
		tpf_ssh_transport_free(t);
		return;
	}
	const char secret[] = "export TOKEN='s3cr\"t $(x)'\n";
	CHECK_INT(t->ops->put(c, "tpuform/secrets.env", secret, strlen(secret), 0600, &d), 0);
	char *p = home_file(0, "tpuform/secrets.env");
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0600);
	CHECK(tpf_read_file(p, &got, &d) == 0 && !strcmp(got.buf, secret));
	char *dirp = home_file(0, "tpuform");
	CHECK(stat(dirp, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	free(dirp);

	/* Replacing an existing file, with another mode and binary content. */
	char bin[70000];
	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (char)(i * 31 % 251);
	CHECK_INT(t->ops->put(c, "tpuform/secrets.env", bin, sizeof(bin), 0700, &d), 0);
	tpf_buf_reset(&got);
	CHECK(tpf_read_file(p, &got, &d) == 0 && got.len == sizeof(bin) &&
	      !memcmp(got.buf, bin, sizeof(bin)));
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0700);
	free(p);

	/* Deep parents, an empty file, and a large one (several SFTP writes). */
	CHECK_INT(t->ops->put(c, "a/b/c/empty", "", 0, 0644, &d), 0);
	p = home_file(0, "a/b/c/empty");
	CHECK(stat(p, &st) == 0 && st.st_size == 0 && (st.st_mode & 0777) == 0644);
	free(p);
	size_t big = 3u << 20;
	char *large = xmalloc(big);
	for (size_t i = 0; i < big; i++)
		large[i] = (char)(i % 253);
	CHECK_INT(t->ops->put(c, "tpuform/source.bundle", large, big, 0600, &d), 0);
	p = home_file(0, "tpuform/source.bundle");
	tpf_buf_reset(&got);
	CHECK(tpf_read_file(p, &got, &d) == 0 && got.len == big && !memcmp(got.buf, large, big));
	free(p);
	free(large);

	/* No temporary files left behind. */
	struct tpf_buf ls = TPF_BUF_INIT;
	int status = -1;
	CHECK_INT(t->ops->exec(c, "ls -a tpuform a/b/c", &ls, &status, 10, &d), 0);
	CHECK(!strstr(ls.buf, ".tmp-"));
	tpf_buf_release(&ls);
	CHECK_INT((int)d.n, 0);
	print_diags(&d);

	/* Paths that would leave the home are refused before any I/O. */
	char longp[TPF_REMOTE_PATH_MAX + 2];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	const char *bad[] = { "../x", "/etc/x", "a/../../x", "a/./b", "", "a//b", "dir/", "a\nb",
			      longp };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tpf_diags bd = TPF_DIAGS_INIT;
		CHECKF(t->ops->put(c, bad[i], "x", 1, 0600, &bd) == TPF_ERROR, "path '%s'", bad[i]);
		CHECK(has_diag(&bd, "is not valid"));
		tpf_diags_release(&bd);
	}
	/* A file where a directory is needed. */
	struct tpf_diags fd = TPF_DIAGS_INIT;
	CHECK(t->ops->put(c, "a/b/c/empty/x", "x", 1, 0600, &fd) == TPF_ERROR);
	CHECK(fd.n == 1);
	tpf_diags_release(&fd);

	/* Workers do not see each other's files. */
	p = home_file(1, "tpuform/secrets.env");
	CHECK(access(p, F_OK) != 0);
	free(p);
	t->ops->close(c);
	tpf_buf_release(&got);
	tpf_diags_release(&d);
	tpf_ssh_transport_free(t);
}

static void test_ssh__exec(void)
{
	struct tpf_ssh_options o = opts();
	struct tpf_transport *t = tpf_ssh_transport_new_opts(&o);
	struct tpf_conn *c = open_worker(t, 2, NULL, NULL);
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_buf out = TPF_BUF_INIT;
	int status = -1;
	if (!c) {
		CHECK(c != NULL);
		tpf_ssh_transport_free(t);
		return;
	}
	CHECK_INT(t->ops->exec(c, "pwd; echo out; echo err >&2; exit 3", &out, &status, 10, &d), 0);
	CHECK_INT(status, 3);
	CHECK(strstr(out.buf, "/root\n") && strstr(out.buf, "out\n") && strstr(out.buf, "err\n"));

	/* A hostile command line arrives byte for byte. */
	const char *hostile = "a'b \"c\" $(touch pwned) `touch pwned2` \\n ; | & * ~ é\ttab";
	struct tpf_buf cmd = TPF_BUF_INIT;
	tpf_buf_adds(&cmd, "printf '%s' ");
	char *q = NULL;
	{
		/* single-quote it for sh, as provision does */
		struct tpf_buf b = TPF_BUF_INIT;
		tpf_buf_addch(&b, '\'');
		for (const char *s = hostile; *s; s++) {
			if (*s == '\'')
				tpf_buf_adds(&b, "'\\''");
			else
				tpf_buf_addch(&b, *s);
		}
		tpf_buf_addch(&b, '\'');
		q = tpf_buf_detach(&b, NULL);
	}
	tpf_buf_adds(&cmd, q);
	free(q);
	tpf_buf_reset(&out);
	CHECK_INT(t->ops->exec(c, cmd.buf, &out, &status, 10, &d), 0);
	CHECK_INT(status, 0);
	CHECK_STR(out.buf, hostile);
	tpf_buf_release(&cmd);
	char *pw = home_file(2, "pwned");
	CHECK(access(pw, F_OK) != 0);
	free(pw);

	/* /bin/sh runs it (not the login shell), stdin is at end of file. */
	tpf_buf_reset(&out);
	CHECK_INT(t->ops->exec(c, "readlink /proc/$$/exe; cat; echo done", &out, &status, 10, &d), 0);
	CHECK(strstr(out.buf, "sh\n") && strstr(out.buf, "done\n") && !strstr(out.buf, "bash"));

	/* A signal is reported as a shell would (128 + n). */
	CHECK_INT(t->ops->exec(c, "kill -9 $$", NULL, &status, 10, &d), 0);
	CHECK_INT(status, 137);
	/* A missing program: 127. status may be NULL. */
	CHECK_INT(t->ops->exec(c, "no-such-program-xyz", NULL, &status, 10, &d), 0);
	CHECK_INT(status, 127);
	CHECK_INT(t->ops->exec(c, "true", NULL, NULL, 10, &d), 0);

	/* Output larger than a channel window. */
	tpf_buf_reset(&out);
	CHECK_INT(t->ops->exec(c, "head -c 3000000 /dev/zero | tr '\\0' x", &out, &status, 30, &d), 0);
	CHECK_INT((long long)out.len, 3000000);
	CHECK_INT((int)d.n, 0);
	print_diags(&d);

	/* Output past the cap (here 100 KiB; TPF_TRANSPORT_OUTPUT_MAX by
	 * default): an error naming the worker and the limit, out untouched,
	 * and the connection is not used again. Output that fits passes. */
	struct tpf_ssh_options co = opts();
	co.output_max = 100 << 10;
	struct tpf_transport *ct = tpf_ssh_transport_new_opts(&co);
	struct tpf_conn *cc = open_worker(ct, 2, NULL, NULL);
	CHECK(cc != NULL);
	if (cc) {
		struct tpf_diags cd = TPF_DIAGS_INIT;
		tpf_buf_reset(&out);
		tpf_buf_adds(&out, "before|");
		CHECK_INT(ct->ops->exec(cc, "head -c 102400 /dev/zero", &out, &status, 10, &cd), 0);
		CHECK_INT((long long)out.len, 7 + 102400);
		tpf_buf_reset(&out);
		tpf_buf_adds(&out, "before|");
		CHECK_INT(ct->ops->exec(cc, "head -c 102401 /dev/zero", &out, &status, 10, &cd),
			  TPF_ERROR);
		CHECK_STR(out.buf, "before|");
		CHECK(has_diag(&cd, "command on worker 'ut-a-0/w2' printed more than 100 KiB"));
		CHECK(cd.n == 1 && cd.items[0].detail && strstr(cd.items[0].detail, "logs -n"));
		CHECK(ct->ops->exec(cc, "true", NULL, &status, 5, &cd) < 0);
		/* Output nobody keeps is not capped. */
		ct->ops->close(cc);
		tpf_diags_release(&cd);
		cc = open_worker(ct, 2, NULL, NULL);
		CHECK(cc != NULL);
		if (cc)
			CHECK_INT(ct->ops->exec(cc, "head -c 300000 /dev/zero", NULL, &status, 10, &cd),
				  0);
		CHECKF(cd.n == 0, "%s", cd.n ? cd.items[0].summary : "");
		tpf_diags_release(&cd);
	}
	if (cc)
		ct->ops->close(cc);
	tpf_ssh_transport_free(ct);

	/* Keepalives go out while a quiet command runs; it still ends well. */
	struct tpf_ssh_options ko = opts();
	ko.keepalive = 0.2;
	struct tpf_transport *kt = tpf_ssh_transport_new_opts(&ko);
	struct tpf_conn *kc = open_worker(kt, 2, NULL, NULL);
	CHECK(kc != NULL);
	if (kc) {
		tpf_buf_reset(&out);
		CHECK_INT(kt->ops->exec(kc, "sleep 1; echo awake", &out, &status, 10, &d), 0);
		CHECK_STR(out.buf, "awake\n");
		kt->ops->close(kc);
	}
	tpf_ssh_transport_free(kt);

	/* A command past its timeout: an error, soon, and the connection
	 * is not used again. */
	double t0 = tpf_now_mono();
	struct tpf_diags td = TPF_DIAGS_INIT;
	CHECK_INT(t->ops->exec(c, "sleep 30", NULL, &status, 0.5, &td), TPF_ERROR);
	CHECK(tpf_now_mono() - t0 < 10);
	CHECK(has_diag(&td, "did not finish within"));
	CHECK(t->ops->exec(c, "true", NULL, &status, 5, &td) < 0);
	CHECK(t->ops->put(c, "x", "x", 1, 0600, &td) < 0);
	tpf_diags_release(&td);
	t->ops->close(c);
	tpf_buf_release(&out);
	tpf_diags_release(&d);
	tpf_ssh_transport_free(t);
}

static void test_ssh__endpoint_problems(void)
{
	struct tpf_ssh_options o = opts();
	struct tpf_transport *t = tpf_ssh_transport_new_opts(&o);
	struct worker w;
	struct tpf_conn *c = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;

	worker_init(&w, 0, NULL);
	w.ref.endpoint = NULL;
	CHECK_INT(t->ops->connect(t, &w.ref, &c, NULL, &d), TPF_ERROR);
	CHECK(has_diag(&d, "no network endpoint"));
	tpf_diags_release(&d);

	struct tpf_ssh_options eo = opts();
	eo.address = TPF_SSH_ADDRESS_EXTERNAL;
	struct tpf_transport *et = tpf_ssh_transport_new_opts(&eo);
	worker_init(&w, 0, NULL);
	CHECK_INT(et->ops->connect(et, &w.ref, &c, NULL, &d), TPF_ERROR);
	CHECK(has_diag(&d, "no external IP") && has_diag(&d, "ssh.address: internal"));
	tpf_diags_release(&d);
	/* With an external IP, external is used even though the internal
	 * one is unreachable. */
	worker_init(&w, 0, fp[0]);
	w.e.ip = "127.0.31.250";
	w.e.external_ip = addr[0];
	c = NULL;
	CHECK_INT(t->ops->connect(t, &w.ref, &c, NULL, &d), 0);
	if (c)
		t->ops->close(c);
	tpf_ssh_transport_free(et);

	/* The endpoint's port wins; the fleet's port is for endpoints without one. */
	struct tpf_ssh_options po = opts();
	po.port = port;
	struct tpf_transport *pt = tpf_ssh_transport_new_opts(&po);
	worker_init(&w, 0, fp[0]);
	w.e.port = 0;
	c = NULL;
	CHECK_INT(pt->ops->connect(pt, &w.ref, &c, NULL, &d), 0);
	if (c)
		pt->ops->close(c);
	tpf_ssh_transport_free(pt);
	CHECK_INT((int)d.n, 0);
	tpf_diags_release(&d);

	/* Nobody listening: unreachable after a few quick retries. */
	worker_init(&w, 0, NULL);
	w.e.ip = "127.0.31.251";
	double t0 = tpf_now_mono();
	CHECK_INT(t->ops->connect(t, &w.ref, &c, NULL, &d), TPF_EUNREACHABLE);
	double el = tpf_now_mono() - t0;
	CHECK(el < 5);
	CHECK(has_diag(&d, "ut-a-0/w0") && has_diag(&d, "Connection refused"));
	CHECK(has_diag(&d, "attempts over"));
	CHECK(d.n == 1);
	tpf_diags_release(&d);

	/* A pinned worker that is down is retried for retry_pinned; with
	 * `once` (watch's status probes) it is tried exactly once. */
	worker_init(&w, 0, fp[0]);
	w.e.ip = "127.0.31.251";
	CHECK_INT(t->ops->connect(t, &w.ref, &c, NULL, &d), TPF_EUNREACHABLE);
	CHECK(has_diag(&d, "attempts over"));
	tpf_diags_release(&d);
	w.ref.once = 1;
	CHECK_INT(t->ops->connect(t, &w.ref, &c, NULL, &d), TPF_EUNREACHABLE);
	CHECK(has_diag(&d, "Connection refused"));
	CHECK(!has_diag(&d, "attempts"));
	tpf_diags_release(&d);
	tpf_ssh_transport_free(t);
}

static void test_ssh__auth(void)
{
	/* A key the workers do not know. */
	char *other = xasprintf("%s/other_key", dir);
	char *cmd = xasprintf("ssh-keygen -q -t ed25519 -N \"\" -f %s", other);
	harness_do(cmd);
	free(cmd);
	struct tpf_ssh_options o = opts();
	o.private_key = other;
	o.retry_first = o.retry_pinned = 0.3;
	struct tpf_transport *t = tpf_ssh_transport_new_opts(&o);
	struct worker w;
	struct tpf_conn *c = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	worker_init(&w, 0, fp[0]);
	CHECK_INT(t->ops->connect(t, &w.ref, &c, NULL, &d), TPF_ERROR);
	CHECK(has_diag(&d, "refused key") && has_diag(&d, other) && has_diag(&d, "as 'root'"));
	CHECK(!has_diag(&d, "attempts")); /* pinned: not retried */
	tpf_diags_release(&d);
	tpf_ssh_transport_free(t);

	/* A key file that is missing, or not a key. */
	o.private_key = "/nonexistent/key";
	t = tpf_ssh_transport_new_opts(&o);
	CHECK_INT(t->ops->connect(t, &w.ref, &c, NULL, &d), TPF_ERROR);
	CHECK(has_diag(&d, "cannot read the SSH private key '/nonexistent/key'"));
	tpf_diags_release(&d);
	tpf_ssh_transport_free(t);
	char *junk = xasprintf("%s/junk_key", dir);
	CHECK(tpf_write_file_atomic(junk, "not a key\n", 10, 0600, &d) == 0);
	o.private_key = junk;
	t = tpf_ssh_transport_new_opts(&o);
	CHECK_INT(t->ops->connect(t, &w.ref, &c, NULL, &d), TPF_ERROR);
	CHECK(has_diag(&d, "cannot use SSH private key"));
	tpf_diags_release(&d);
	tpf_ssh_transport_free(t);
	free(junk);

	/* ssh-agent: no socket, an empty agent, then one with the key. */
	char *saved = getenv("SSH_AUTH_SOCK") ? xstrdup(getenv("SSH_AUTH_SOCK")) : NULL;
	unsetenv("SSH_AUTH_SOCK");
	o.private_key = NULL;
	t = tpf_ssh_transport_new_opts(&o);
	CHECK_INT(t->ops->connect(t, &w.ref, &c, NULL, &d), TPF_ERROR);
	CHECK(has_diag(&d, "SSH_AUTH_SOCK is not set"));
	tpf_diags_release(&d);
	char *sock = xasprintf("%s/agent.sock", dir);
	char *s = xasprintf("eval \"$(ssh-agent -s -a %s)\" >/dev/null && echo $SSH_AGENT_PID", sock);
	char *agent_pid = harness(s, NULL);
	CHECK(atoi(agent_pid) > 0);
	free(s);
	setenv("SSH_AUTH_SOCK", sock, 1);
	CHECK_INT(t->ops->connect(t, &w.ref, &c, NULL, &d), TPF_ERROR);
	CHECK(has_diag(&d, "ssh-agent holds no keys"));
	tpf_diags_release(&d);
	s = xasprintf("ssh-add -q %s %s 2>&1", other, keyfile);
	harness_do(s);
	free(s);
	c = NULL;
	CHECK_INT(t->ops->connect(t, &w.ref, &c, NULL, &d), 0); /* the second identity works */
	print_diags(&d);
	if (c) {
		int status = -1;
		CHECK_INT(t->ops->exec(c, "exit 0", NULL, &status, 5, &d), 0);
		t->ops->close(c);
	}
	tpf_diags_release(&d);
	tpf_ssh_transport_free(t);
	if (atoi(agent_pid) > 0)
		kill(atoi(agent_pid), SIGTERM);
	free(agent_pid);
	if (saved)
		setenv("SSH_AUTH_SOCK", saved, 1);
	else
		unsetenv("SSH_AUTH_SOCK");
	free(saved);
	free(sock);
	free(other);
}

/* A VM whose sshd comes up late: connect keeps trying within its budget. */
static void test_ssh__retry_until_up(void)
{
	harness_do("sshd_stop_one 2");
	struct tpf_ssh_options o = opts();
	o.retry_first = 15;
	struct tpf_transport *t = tpf_ssh_transport_new_opts(&o);
	/* Bring it back in a second, from the background. */
	harness_do("(sleep 1; sshd_restart_one 2) >/dev/null 2>&1 &");
	double t0 = tpf_now_mono();
	char *hk = NULL;
	struct tpf_conn *c = open_worker(t, 2, NULL, &hk);
	double el = tpf_now_mono() - t0;
	CHECK(c != NULL);
	CHECK(el >= 0.9); /* it really waited for the daemon */
	CHECK_STR(hk, fp[2]);
	if (c)
		t->ops->close(c);
	free(hk);
	tpf_ssh_transport_free(t);
	/* the background restart has finished by now; wait for its pid file */
	for (int i = 0; i < 100; i++) {
		char *p = xasprintf("%s/w2/pid", dir);
		int there = access(p, F_OK) == 0;
		free(p);
		if (there)
			break;
		tpf_sleep(0.05);
	}
}

/* A worker rebuilt with a new host key: refused against the old pin,
 * and a new first contact gets the new key. */
static void test_ssh__changed_host_key(void)
{
	char old[128];
	snprintf(old, sizeof(old), "%s", fp[1]);
	harness_do("sshd_restart_one 1 newkey");
	read_fingerprints();
	CHECK(strcmp(old, fp[1]) != 0);
	struct tpf_ssh_options o = opts();
	struct tpf_transport *t = tpf_ssh_transport_new_opts(&o);
	struct worker w;
	struct tpf_conn *c = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	worker_init(&w, 1, old);
	CHECK_INT(t->ops->connect(t, &w.ref, &c, NULL, &d), TPF_EHOSTKEY);
	CHECK(has_diag(&d, old) && has_diag(&d, fp[1]));
	tpf_diags_release(&d);
	char *hk = NULL;
	c = open_worker(t, 1, NULL, &hk);
	CHECK_STR(hk, fp[1]);
	if (c)
		t->ops->close(c);
	free(hk);
	tpf_ssh_transport_free(t);
}

/* Lines of worker i's sshd log so far where a client named a user or
 * offered a key (sshd.sh: log, then log.start of the running sshd). */
static int auth_lines(int i)
{
	char *s = xasprintf("cat %s/w%d/log %s/w%d/log.start 2>/dev/null | "
			    "grep -cE \"publickey|authenticating user|user root\" || true", dir, i, dir, i);
	char *n = harness(s, NULL);
	int v = atoi(n);
	free(n);
	free(s);
	return v;
}

/* sshd logs a login from its own process, a moment after the client is
 * in: the count of worker i's login lines once it is above `above` (or 5 s
 * passed) and has stayed the same for 0.3 s, so a later count does not
 * catch this login's late lines (flaky under load otherwise). */
static int auth_lines_settled(int i, int above)
{
	int last = -1, same = 0;
	for (int tries = 0; tries < 50; tries++) {
		int v = auth_lines(i);
		same = v == last ? same + 1 : 0;
		last = v;
		if (v > above && same >= 3)
			break;
		usleep(100000);
	}
	return last;
}

/*
 * Keys a provider says the worker publishes (Cloud TPU guest attributes):
 * the right one connects and is pinned; another is refused before any
 * credential reaches the worker; a pin outranks them; the access's user
 * is the one that logs in.
 */
static void test_ssh__published_host_keys(void)
{
	struct tpf_ssh_options o = opts();
	struct tpf_transport *t = tpf_ssh_transport_new_opts(&o);
	char *p0 = xasprintf("%s/w0/hostkey.pub", dir), *p2 = xasprintf("%s/w2/hostkey.pub", dir);
	char *k0 = pub_of(p0), *k2 = pub_of(p2);
	const char *right[] = { "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7", k2 };
	const char *wrong[] = { k0 };
	struct tpf_ssh_access a = { .host_keys = right, .nhost_keys = 2,
				    .host_keys_from = "the node's guest attributes (hostkeys/)" };
	struct worker w;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_conn *c = NULL;
	char *hk = NULL;
	worker_init(&w, 2, NULL);
	int start = auth_lines(2);
	CHECK_INT(tpf_ssh_connect_as(t, &w.ref, &a, &c, &hk, &d), 0);
	CHECK_STR(hk, fp[2]);
	CHECK(auth_lines_settled(2, start) > start); /* the log shows a login */
	if (c)
		t->ops->close(c);
	free(hk);
	hk = NULL;
	c = NULL;

	int before = auth_lines(2);
	a.host_keys = wrong;
	a.nhost_keys = 1;
	CHECK_INT(tpf_ssh_connect_as(t, &w.ref, &a, &c, &hk, &d), TPF_EHOSTKEY);
	CHECK(c == NULL && hk == NULL);
	CHECK(has_diag(&d, "is not the one the node's guest attributes (hostkeys/) names"));
	CHECK(has_diag(&d, fp[0]) && has_diag(&d, fp[2]));
	CHECK(has_diag(&d, "Nothing was sent to it"));
	CHECK_INT(auth_lines_settled(2, before - 1), before); /* no key was offered */
	tpf_diags_release(&d);

	/* The pin decides once there is one. */
	worker_init(&w, 2, fp[2]);
	CHECK_INT(tpf_ssh_connect_as(t, &w.ref, &a, &c, NULL, &d), 0);
	if (c)
		t->ops->close(c);
	c = NULL;

	/* The access's user logs in, not the transport's. */
	struct tpf_ssh_access as_other = { .user = "nobody-here" };
	CHECK_INT(tpf_ssh_connect_as(t, &w.ref, &as_other, &c, NULL, &d), TPF_ERROR);
	CHECK(has_diag(&d, "as 'nobody-here'"));
	tpf_diags_release(&d);
	free(k0);
	free(k2);
	free(p0);
	free(p2);
	tpf_ssh_transport_free(t);
}

/*
 * A key installed moments ago (fresh_key) may not be in authorized_keys
 * yet: a refused key is then retried, even on a pinned worker; without it
 * a pinned worker's refusal is final at once.
 */
static void test_ssh__fresh_key(void)
{
	struct tpf_ssh_options o = opts();
	o.retry_first = 10;
	o.retry_pinned = 10;
	struct tpf_transport *t = tpf_ssh_transport_new_opts(&o);
	char *ak = home_file(0, ".ssh/authorized_keys");
	char *hide = xasprintf("mv %s %s.away", ak, ak);
	harness_do(hide);
	struct worker w;
	struct tpf_conn *c = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	worker_init(&w, 0, fp[0]);
	double t0 = tpf_now_mono();
	CHECK_INT(t->ops->connect(t, &w.ref, &c, NULL, &d), TPF_ERROR);
	CHECKF(tpf_now_mono() - t0 < 5, "a pinned worker's refusal is final: %.1f s",
	       tpf_now_mono() - t0);
	tpf_diags_release(&d);
	char *back = xasprintf("(sleep 1; mv %s.away %s) >/dev/null 2>&1 &", ak, ak);
	harness_do(back);
	struct tpf_ssh_access a = { .fresh_key = 1 };
	t0 = tpf_now_mono();
	CHECK_INT(tpf_ssh_connect_as(t, &w.ref, &a, &c, NULL, &d), 0);
	CHECK(tpf_now_mono() - t0 >= 0.9);
	print_diags(&d);
	tpf_diags_release(&d);
	if (c)
		t->ops->close(c);
	free(back);
	free(hide);
	free(ak);
	tpf_ssh_transport_free(t);
}

/* Many connections at once from many threads over one transport. */
struct par {
	struct tpf_transport *t;
	int worker, ok;
};

static void *par_thread(void *arg)
{
	struct par *p = arg;
	struct tpf_conn *c = open_worker(p->t, p->worker, fp[p->worker], NULL);
	if (!c)
		return NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_buf out = TPF_BUF_INIT;
	int status = -1;
	char data[64];
	snprintf(data, sizeof(data), "thread %p\n", (void *)p);
	char *path = xasprintf("par/%p", (void *)p);
	char *cmd = xasprintf("cat %s", path);
	if (!p->t->ops->put(c, path, data, strlen(data), 0600, &d) &&
	    !p->t->ops->exec(c, cmd, &out, &status, 20, &d) && status == 0 && !strcmp(out.buf, data))
		p->ok = 1;
	print_diags(&d);
	p->t->ops->close(c);
	free(path);
	free(cmd);
	tpf_buf_release(&out);
	tpf_diags_release(&d);
	return NULL;
}

static void test_ssh__parallel(void)
{
	struct tpf_ssh_options o = opts();
	o.retry_first = o.retry_pinned = 5;
	struct tpf_transport *t = tpf_ssh_transport_new_opts(&o);
	enum { N = 18 };
	struct par ps[N];
	pthread_t th[N];
	for (int i = 0; i < N; i++) {
		ps[i].t = t;
		ps[i].worker = i % NWORKERS;
		ps[i].ok = 0;
		pthread_create(&th[i], NULL, par_thread, &ps[i]);
	}
	int ok = 0;
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		ok += ps[i].ok;
	}
	CHECK_INT(ok, N);
	tpf_ssh_transport_free(t);
}

int main(void)
{
	RUN(test_ssh__fingerprint_format);
	RUN(test_ssh__address_policy);
	RUN(test_ssh__backoff);
	RUN(test_ssh__options_from_env);
	RUN(test_ssh__public_key);
	RUN(test_ssh__key_fingerprint);
	int rc = start_workers();
	if (rc != 0) {
		printf("# SKIP the sshd tests: tests/e2e/sshd.sh could not start workers (%d)\n", rc);
	} else {
		RUN(test_ssh__tofu_and_pin);
		RUN(test_ssh__put);
		RUN(test_ssh__exec);
		RUN(test_ssh__endpoint_problems);
		RUN(test_ssh__auth);
		RUN(test_ssh__retry_until_up);
		RUN(test_ssh__changed_host_key);
		RUN(test_ssh__published_host_keys);
		RUN(test_ssh__fresh_key);
		RUN(test_ssh__parallel);
		harness_do("sshd_stop");
		struct tpf_diags d = TPF_DIAGS_INIT;
		tpf_remove_tree(dir, &d);
		tpf_diags_release(&d);
	}
	free(dir);
	free(top);
	free(keyfile);
	return unit_done();
}

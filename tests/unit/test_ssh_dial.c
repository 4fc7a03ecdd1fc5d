/*
 * The SSH transport's dial ops (providers/ssh/ssh_dial.c) and their
 * retries: a dial with w->once 0 tries again, within the retry budget,
 * what time may fix, as connect does, and reports only the last attempt;
 * with w->once 1 it makes one attempt. Against a loopback port where
 * nothing listens (no sshd needed), and against one OpenSSH worker of
 * tests/e2e/sshd.sh whose sshd comes up late (skipped where that harness
 * cannot run: not root, or no sshd or unshare).
 */
#include "tests/unit/unit.h"
#include "providers/ssh/ssh.h"
#include "providers/transport.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define BASE_IP "127.0.37.1"
#define SILENT_IP "127.0.37.250" /* nothing listens there */

static char *dir;     /* harness directory */
static char *keyfile; /* client private key */
static int port;      /* the worker's sshd */
static char fp0[128]; /* its host key fingerprint */
static char base_ip[] = BASE_IP, silent_ip[] = SILENT_IP;

/* The sshd harness (tests/e2e/sshd.sh), shared with the other SSH tests. */
#define harness unit_sshd_harness
#define harness_do unit_sshd_harness_do

/* One worker (0) at BASE_IP: 0, or the harness's exit status. */
static int start_worker(void)
{
	if (!getenv("TPF_TOP")) {
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return -1;
		exe[n] = '\0';
		char *unitdir = tpf_dirname(exe);
		char *top = xasprintf("%s/../..", unitdir);
		setenv("TPF_TOP", top, 1);
		free(top);
		free(unitdir);
	}
	dir = unit_tmpdir();
	/* sshd_watch: the worker goes when this process does, even if it
	 * crashes. */
	char *s = xasprintf("sshd_start %s 1 %s >&2 && sshd_watch %d && echo $SSHD_PORT", dir,
			    BASE_IP, (int)getpid());
	int rc = 0;
	char *p = harness(s, &rc);
	free(s);
	if (rc == 0)
		port = atoi(p);
	free(p);
	if (rc != 0)
		return rc;
	/* Later harness calls need the same settings in their environment. */
	keyfile = unit_sshd_export(dir, 1, BASE_IP, port);
	char *f = harness("sshd_fingerprint 0", NULL);
	snprintf(fp0, sizeof(fp0), "%s", f);
	free(f);
	return 0;
}

/* A port of ip where nothing listens: one the kernel gave a socket that
 * never listened, closed again. */
static int silent_port(const char *ip)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	inet_pton(AF_INET, ip, &sa.sin_addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int p = 0;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		p = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return p;
}

/* The options of these tests: TPUFORM_SSH_RETRY (both budgets) as given,
 * read as the transport reads it. */
static struct tpf_ssh_options opts(const char *retry)
{
	struct tpf_ssh_options o;
	struct tpf_diags d = TPF_DIAGS_INIT;
	setenv("TPUFORM_SSH_RETRY", retry, 1);
	CHECK(tpf_ssh_options_default(&o, NULL, &d) == 0);
	unsetenv("TPUFORM_SSH_RETRY");
	tpf_diags_release(&d);
	o.user = "root";
	/* The loop-driven dial is the one with a key file (never read when
	 * nothing answers). */
	o.private_key = keyfile ? keyfile : "/nonexistent/id_ed25519";
	o.connect_timeout = 5;
	o.io_timeout = 10;
	return o;
}

struct worker {
	struct tpf_endpoint e;
	struct tpf_worker_ref ref;
};

static void worker_init(struct worker *w, char *ip, int p, const char *pin, int once)
{
	memset(w, 0, sizeof(*w));
	w->e.ip = ip;
	w->e.port = p;
	w->ref.node = "ut-dial-0";
	w->ref.node_id = "id-1";
	w->ref.nworkers = 1;
	w->ref.endpoint = &w->e;
	w->ref.host_key = pin;
	w->ref.once = once;
}

static int has_diag(const struct tpf_diags *d, const char *needle)
{
	for (size_t i = 0; i < d->n; i++)
		if (strstr(d->items[i].summary, needle))
			return 1;
	return 0;
}

static void print_diags(const struct tpf_diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		printf("#   diag: %s\n", d->items[i].summary);
}

/* How a dial went: its result, steps that had nothing to poll (backing
 * off), seconds from dial_start to the end. */
struct drive {
	int rc, idle;
	double secs;
};

/* Start a dial at w and step it as an event loop would (poll its socket;
 * with none, step again within 0.25 s) until it ends, at most 30 s (then
 * rc 99). The connection made, if any, goes to *c (NULL: closed). */
static struct drive drive(struct tpf_transport *t, const struct worker *w, struct tpf_conn **c,
			  char **hk, struct tpf_diags *d)
{
	struct drive r = { 0 };
	struct tpf_dial *g = NULL;
	double t0 = tpf_now_mono();
	if (c)
		*c = NULL;
	r.rc = t->ops->dial_start(t, &w->ref, &g, d);
	while (!r.rc) {
		struct pollfd pfd;
		r.rc = t->ops->dial_step(g, &pfd, d);
		if (r.rc != 1)
			break;
		r.rc = 0;
		if (tpf_now_mono() - t0 > 30) {
			r.rc = 99;
			break;
		}
		if (pfd.fd < 0) {
			r.idle++;
			tpf_sleep(0.05);
		} else {
			poll(&pfd, 1, 100);
		}
	}
	r.secs = tpf_now_mono() - t0;
	if (r.rc == 0) {
		struct tpf_conn *got = NULL;
		r.rc = t->ops->dial_finish(g, &got, hk);
		if (c)
			*c = got;
		else if (got)
			t->ops->close(got);
	}
	t->ops->dial_free(g);
	if (r.rc)
		print_diags(d);
	return r;
}

/* Nobody listens: with once 0 the dial keeps trying for the budget (3 s)
 * and reports the last attempt's error only, saying how long it tried;
 * with once 1, pinned or not, one attempt and the error as it was. */
static void test_dial__refused_retried_unless_once(void)
{
	struct tpf_ssh_options o = opts("3s");
	CHECK(o.retry_pinned == 3 && o.retry_first == 3);
	struct tpf_transport *t = tpf_ssh_transport_new_opts(&o);
	int p = silent_port(SILENT_IP);
	CHECK(p > 0);
	const char *pins[] = { "SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", NULL };
	for (int i = 0; i < 2; i++) {
		struct worker w;
		struct tpf_diags d = TPF_DIAGS_INIT;
		worker_init(&w, silent_ip, p, pins[i], 0);
		struct drive r = drive(t, &w, NULL, NULL, &d);
		CHECK_INT(r.rc, TPF_EUNREACHABLE);
		CHECKF(r.idle > 0, "no backoff: %d steps with nothing to poll", r.idle);
		/* the budget, not the first refusal, ended it */
		CHECKF(r.secs >= 1.0 && r.secs < 6, "%.2f s", r.secs);
		CHECK(has_diag(&d, "cannot connect to worker 'ut-dial-0/w0'"));
		CHECK(has_diag(&d, "attempts over"));
		/* the attempts before the last said nothing to the caller */
		CHECK_INT(tpf_diags_errors(&d), 1);
		tpf_diags_release(&d);

		worker_init(&w, silent_ip, p, pins[i], 1);
		r = drive(t, &w, NULL, NULL, &d);
		CHECK_INT(r.rc, TPF_EUNREACHABLE);
		CHECK_INT(r.idle, 0);
		CHECKF(r.secs < 1.0, "%.2f s", r.secs);
		CHECK(has_diag(&d, "cannot connect to worker 'ut-dial-0/w0'"));
		CHECK(!has_diag(&d, "attempts"));
		CHECK_INT(tpf_diags_errors(&d), 1);
		tpf_diags_release(&d);
	}
	/* A budget of 0: one attempt with once 0 too. */
	tpf_ssh_transport_free(t);
	o = opts("0s");
	t = tpf_ssh_transport_new_opts(&o);
	struct worker w;
	struct tpf_diags d = TPF_DIAGS_INIT;
	worker_init(&w, silent_ip, p, NULL, 0);
	struct drive r = drive(t, &w, NULL, NULL, &d);
	CHECK_INT(r.rc, TPF_EUNREACHABLE);
	CHECK_INT(r.idle, 0);
	CHECK(!has_diag(&d, "attempts"));
	tpf_diags_release(&d);
	tpf_ssh_transport_free(t);
}

/* A VM whose sshd comes up late (a second after the dial starts): a dial
 * with once 0 is made once it is up, the failed attempts unreported; with
 * once 1 it fails at once. */
static void test_dial__retry_until_up(void)
{
	harness_do("sshd_stop_one 0");
	struct tpf_ssh_options o = opts("15s");
	struct tpf_transport *t = tpf_ssh_transport_new_opts(&o);
	struct worker w;
	struct tpf_diags d = TPF_DIAGS_INIT;

	worker_init(&w, base_ip, port, NULL, 1);
	struct drive r = drive(t, &w, NULL, NULL, &d);
	CHECK_INT(r.rc, TPF_EUNREACHABLE);
	CHECK(!has_diag(&d, "attempts"));
	tpf_diags_release(&d);

	worker_init(&w, base_ip, port, NULL, 0);
	char *up = xasprintf("%s/restarted", dir);
	char *s = xasprintf("(sleep 1; sshd_restart_one 0; : >%s) >/dev/null 2>&1 &", up);
	harness_do(s);
	free(s);
	struct tpf_conn *c = NULL;
	char *hk = NULL;
	r = drive(t, &w, &c, &hk, &d);
	CHECK_INT(r.rc, 0);
	CHECK(c != NULL);
	CHECKF(r.secs >= 0.9, "%.2f s: it did not wait for the daemon", r.secs);
	CHECK(r.idle > 0);
	CHECK_STR(hk, fp0);
	CHECK_INT(tpf_diags_errors(&d), 0);
	if (c) {
		struct tpf_buf out = TPF_BUF_INIT;
		int status = -1;
		CHECK(t->ops->exec(c, "echo dialed", &out, &status, 10, &d) == 0);
		CHECK_INT(status, 0);
		CHECK(strstr(out.buf, "dialed") != NULL);
		tpf_buf_release(&out);
		t->ops->close(c);
	}
	free(hk);
	tpf_diags_release(&d);
	tpf_ssh_transport_free(t);
	/* The restart has ended before the worker is stopped for good (a
	 * dial that failed early would else see it start again after). */
	for (int i = 0; i < 200 && access(up, F_OK) != 0; i++)
		tpf_sleep(0.05);
	CHECK(access(up, F_OK) == 0);
	free(up);
}

int main(void)
{
	RUN(test_dial__refused_retried_unless_once);
	int rc = start_worker();
	if (rc != 0) {
		printf("# SKIP the sshd test: tests/e2e/sshd.sh could not start a worker (%d)\n",
		       rc);
	} else {
		RUN(test_dial__retry_until_up);
		harness_do("sshd_stop");
		struct tpf_diags d = TPF_DIAGS_INIT;
		tpf_remove_tree(dir, &d);
		tpf_diags_release(&d);
	}
	free(dir);
	free(keyfile);
	return unit_done();
}

/*
 * What apply's interrupt does to the gcp provider's waits
 * (providers/gcp/gcp_api.c, the operation polls): a create or delete
 * whose operation runs for an hour returns TPF_EINTERRUPTED within a
 * second of the provider's interrupt flag, with the request sent and
 * nothing undone. Against the emulator (tests/fakegcp); skipped when it is
 * not built.
 */
#include "providers/gcp/gcp.h"
#include "providers/provider.h"
#include "tests/unit/unit.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROJECT "test-project"
#define ZONE "us-central2-b"

static char *tmpdir;
static char base[64]; /* the emulator's URL */

static const char *fakegcp_path(void)
{
	static char path[4200];
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	snprintf(path, sizeof(path), "%s/../fakegcp/fakegcp", dirname(exe));
	return access(path, X_OK) == 0 ? path : NULL;
}

/* Start the emulator (operations take an hour); its pid, and its base URL
 * in url. -1 when it did not start. */
static pid_t emu_start(const char *bin, char *url, size_t size)
{
	char *port_file = xasprintf("%s/port", tmpdir);
	char *log = xasprintf("%s/fakegcp.log", tmpdir);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(bin, bin, "--port-file", port_file, "--project", PROJECT, "--op-seconds",
		      "3600", (char *)NULL);
		_exit(127);
	}
	int port = 0;
	for (int i = 0; i < 500 && pid > 0 && port <= 0; i++) {
		FILE *f = fopen(port_file, "r");
		if (!f || fscanf(f, "%d", &port) != 1)
			port = 0;
		if (f)
			fclose(f);
		if (port <= 0)
			tpf_sleep(0.01);
	}
	snprintf(url, size, "http://127.0.0.1:%d", port);
	free(port_file);
	free(log);
	if (port <= 0 && pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

struct later {
	volatile int *flag;
	double delay;
	double set_at;
};

static void *set_later(void *arg)
{
	struct later *l = arg;
	tpf_sleep(l->delay);
	l->set_at = tpf_now_mono();
	*l->flag = 1;
	return NULL;
}

static void test_apply_gcp__interrupted_waits(void)
{
	struct tpf_fleet f;
	memset(&f, 0, sizeof(f));
	f.name = "ig";
	f.provider = TPF_PROVIDER_GCP;
	f.gcp.project = PROJECT;
	f.gcp.endpoint = base;
	f.ssh.port = 22;
	/* Creates carry the user's key in ssh-keys metadata: give it one. */
	f.ssh.user = "tpu";
	char *key = xasprintf("%s/id_test", tmpdir), *pub = xasprintf("%s.pub", key);
	static const char pubkey[] = "ssh-ed25519 "
				     "AAAAC3NzaC1lZDI1NTE5AAAAIGnVhWh0HUkf2CYnw8WyWHNHhK4Ifl3VnTKTimH1YbpD t\n";
	struct tpf_diags kd = TPF_DIAGS_INIT;
	tpf_write_file_atomic(pub, pubkey, strlen(pubkey), 0644, &kd);
	tpf_diags_release(&kd);
	free(pub);
	f.ssh.private_key = key;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_provider *p = NULL;
	CHECK_INT(tpf_gcp_provider_open(&p, &f, &d), 0);
	if (!p) {
		tpf_diags_release(&d);
		free(key);
		return;
	}
	volatile int flag = 0;
	p->interrupted = &flag;

	struct tpf_recipe r;
	memset(&r, 0, sizeof(r));
	r.accelerator_type = xstrdup("v2-8");
	r.runtime_version = xstrdup("tpu-ubuntu2204-base");
	r.zone = xstrdup(ZONE);
	r.workers = 1;
	tpf_kvlist_set(&r.labels, "tpuform-fleet", "ig");
	struct tpf_live_node out = { 0 };
	struct later l = { &flag, 0.3, 0 };
	pthread_t th;
	pthread_create(&th, NULL, set_later, &l);
	CHECK_INT(p->ops->create(p, "ig-a-0", &r, &out, &d), TPF_EINTERRUPTED);
	double returned = tpf_now_mono();
	pthread_join(th, NULL);
	CHECKF(returned - l.set_at < 1.0, "create returned %.2fs after the interrupt",
	       returned - l.set_at);
	CHECK_INT(tpf_diags_errors(&d), 0);

	/* The request was sent: the node is there, still CREATING. */
	struct tpf_live_set set = { 0 };
	const char *zones[] = { ZONE };
	CHECK_INT(p->ops->refresh(p, zones, 1, &set, &d), 0);
	struct tpf_live_node *n = tpf_live_set_find(&set, "ig-a-0");
	CHECK_STR(n ? n->state : NULL, "CREATING");
	tpf_live_set_release(&set);

	/* A delete waits on its operation the same way: still set, it
	 * returns at its first look. */
	double t0 = tpf_now_mono();
	CHECK_INT(p->ops->remove(p, ZONE, "ig-a-0", NULL, &d), TPF_EINTERRUPTED);
	CHECKF(tpf_now_mono() - t0 < 1.0, "delete took %.2fs", tpf_now_mono() - t0);
	CHECK_INT(tpf_diags_errors(&d), 0);

	tpf_live_node_release(&out);
	tpf_recipe_release(&r);
	tpf_diags_release(&d);
	tpf_provider_free(p);
	free(key);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const char *bin = fakegcp_path();
	if (!bin) {
		printf("TAP version 13\n1..0 # SKIP tests/fakegcp/fakegcp is not built\n");
		return 0;
	}
	tmpdir = unit_tmpdir();
	/* Polls far apart: only the interrupt can end these waits early. */
	setenv("TPUFORM_GCP_POLL_MIN", "5", 1);
	setenv("TPUFORM_GCP_POLL_MAX", "5", 1);
	setenv("TPUFORM_GCP_OP_TIMEOUT", "3600", 1);
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	unsetenv("CLOUDSDK_CONFIG");
	unsetenv("GCE_METADATA_HOST");
	unsetenv("TPUFORM_TPU_ENDPOINT");
	setenv("HOME", tmpdir, 1); /* no gcloud ADC file here */
	setenv("TPUFORM_ACCESS_TOKEN", "test-static-token", 1);
	pid_t pid = emu_start(bin, base, sizeof(base));
	CHECKF(pid > 0, "fakegcp did not start: see %s/fakegcp.log", tmpdir);
	if (pid > 0) {
		RUN(test_apply_gcp__interrupted_waits);
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	free(tmpdir);
	return unit_done();
}

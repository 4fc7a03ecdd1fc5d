/*
 * The Cloud Storage object client (google/gcs.h) against an in-memory
 * stand-in (tests/unit/gcs_fake.h): generation preconditions, reads that
 * match their generation, retries of 503s, a lost answer to a write, list
 * by prefix, and the endpoint policy.
 */
#include "google/gcs.h"
#include "tests/unit/gcs_fake.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static struct gcs_fake fake;

static struct tpf_gcs *client(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_gcs_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.endpoint = fake.url;
	struct tpf_gcs *g = NULL;
	CHECK_INT(tpf_gcs_open(&g, &cfg, &d), 0);
	tpf_diags_release(&d);
	return g;
}

static void test_gcs__endpoint_policy(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *u = NULL;
	unsetenv("TPUFORM_STORAGE_ENDPOINT");
	CHECK_INT(tpf_gcs_endpoint_resolve(NULL, &u, &d), 0);
	CHECK_STR(u, "https://storage.googleapis.com");
	free(u);
	u = NULL;
	setenv("TPUFORM_STORAGE_ENDPOINT", "http://storage.example.com", 1);
	CHECK_INT(tpf_gcs_endpoint_resolve(NULL, &u, &d), TPF_ERROR);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "TPUFORM_STORAGE_ENDPOINT"));
	setenv("TPUFORM_STORAGE_ENDPOINT", "http://127.0.0.1:9/", 1);
	CHECK_INT(tpf_gcs_endpoint_resolve(NULL, &u, &d), 0);
	CHECK_STR(u, "http://127.0.0.1:9");
	free(u);
	u = NULL;
	/* the fleet file's key wins over the variable */
	CHECK_INT(tpf_gcs_endpoint_resolve("https://gcs.internal.example/", &u, &d), 0);
	CHECK_STR(u, "https://gcs.internal.example");
	free(u);
	unsetenv("TPUFORM_STORAGE_ENDPOINT");
	tpf_diags_release(&d);
}

static void test_gcs__write_read_preconditions(void)
{
	struct tpf_gcs *g = client();
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_buf b = TPF_BUF_INIT;
	long long gen = -1, gen2 = -1;

	CHECK_INT(tpf_gcs_read(g, "bkt", "p/a.tfstate", 1024, &b, &gen, &d), TPF_ENOTFOUND);
	CHECK_INT(gen, 0);
	CHECK_INT(d.n, 0);
	/* create-if-absent */
	CHECK_INT(tpf_gcs_write(g, "bkt", "p/a.tfstate", "one", 3, "application/json", 0, &gen, &d), 0);
	CHECK(gen > 0);
	CHECK_INT(tpf_gcs_write(g, "bkt", "p/a.tfstate", "two", 3, NULL, 0, &gen2, &d), TPF_ESTALE);
	CHECK_INT(d.n, 0);
	/* compare-and-swap: the right generation wins, a stale one is refused */
	CHECK_INT(tpf_gcs_write(g, "bkt", "p/a.tfstate", "two", 3, NULL, gen, &gen2, &d), 0);
	CHECK(gen2 > gen);
	CHECK_INT(tpf_gcs_write(g, "bkt", "p/a.tfstate", "three", 5, NULL, gen, NULL, &d), TPF_ESTALE);
	long long got = 0;
	CHECK_INT(tpf_gcs_read(g, "bkt", "p/a.tfstate", 1024, &b, &got, &d), 0);
	CHECK_INT(got, gen2);
	CHECK_STR(b.buf, "two");
	/* the name went into the path with its slash encoded */
	CHECK(strstr(fake.log.buf, "ifGenerationMatch=0 412") != NULL);
	CHECK_INT(tpf_gcs_read(g, "bkt", "p/a.tfstate", 2, &b, &got, &d), TPF_ERROR);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "limit"));
	tpf_diags_release(&d);
	/* delete with the wrong generation is refused, with the right one done */
	CHECK_INT(tpf_gcs_delete(g, "bkt", "p/a.tfstate", gen, &d), TPF_ESTALE);
	CHECK_INT(tpf_gcs_delete(g, "bkt", "p/a.tfstate", gen2, &d), 0);
	CHECK_INT(tpf_gcs_delete(g, "bkt", "p/a.tfstate", gen2, &d), TPF_ENOTFOUND);
	CHECK_INT(d.n, 0);
	tpf_buf_release(&b);
	tpf_diags_release(&d);
	tpf_gcs_free(g);
}

static void test_gcs__retries_and_lost_answers(void)
{
	struct tpf_gcs *g = client();
	struct tpf_diags d = TPF_DIAGS_INIT;
	long long gen = 0;
	/* two 503s, then success */
	fake.fail = 2;
	long before = tpf_gcs_requests(g);
	CHECK_INT(tpf_gcs_write(g, "bkt", "r/lock", "L1", 2, NULL, 0, &gen, &d), 0);
	CHECK_INT(tpf_gcs_requests(g) - before, 3);
	/* the write lands but its answer is lost: the retry meets 412, and
	 * the object's MD5 shows it was ours */
	fake.lose = 1;
	long long gen2 = 0;
	CHECK_INT(tpf_gcs_write(g, "bkt", "r/lock", "L2", 2, NULL, gen, &gen2, &d), 0);
	CHECK(gen2 > gen);
	CHECK_INT(d.n, 0);
	/* ...but a 412 for someone else's content stays a refusal */
	fake.lose = 1;
	CHECK_INT(tpf_gcs_write(g, "bkt", "r/other", "X", 1, NULL, 0, NULL, &d), 0);
	CHECK_INT(tpf_gcs_write(g, "bkt", "r/other", "Y", 1, NULL, 0, NULL, &d), TPF_ESTALE);
	/* give up after TPUFORM_GCP_TRIES (3 here) */
	fake.fail = 10;
	CHECK_INT(tpf_gcs_delete(g, "bkt", "r/lock", gen2, &d), TPF_ETRANSIENT);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "gave up after 3 tries"));
	CHECK(d.n == 1 && strstr(d.items[0].summary, "HTTP 503"));
	tpf_diags_release(&d);
	/* a write without a precondition could land twice: sent once only */
	fake.fail = 1;
	before = tpf_gcs_requests(g);
	CHECK_INT(tpf_gcs_write(g, "bkt", "r/plain", "P", 1, NULL, -1, NULL, &d), TPF_ETRANSIENT);
	CHECK_INT(tpf_gcs_requests(g) - before, 1);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "not retried"));
	tpf_diags_release(&d);
	/* ... unless the caller says the same bytes twice are harmless (the
	 * state backup, written under the lock): retried, and it lands. */
	fake.fail = 1;
	before = tpf_gcs_requests(g);
	CHECK_INT(tpf_gcs_write(g, "bkt", "r/backup", "B", 1, NULL, TPF_GCS_REPEATABLE, NULL, &d), 0);
	CHECK_INT(tpf_gcs_requests(g) - before, 2);
	CHECK_INT(d.n, 0);
	fake.fail = 0;
	tpf_diags_release(&d);
	tpf_gcs_free(g);
}

static void test_gcs__list_prefix(void)
{
	struct tpf_gcs *g = client();
	struct tpf_diags d = TPF_DIAGS_INIT;
	char **names = NULL;
	size_t n = 0;
	CHECK_INT(tpf_gcs_write(g, "bkt", "fleets/x.tfstate", "{}", 2, NULL, -1, NULL, &d), 0);
	CHECK_INT(tpf_gcs_write(g, "bkt", "fleets/y.tfstate", "{}", 2, NULL, -1, NULL, &d), 0);
	CHECK_INT(tpf_gcs_write(g, "bkt", "other/z", "{}", 2, NULL, -1, NULL, &d), 0);
	CHECK_INT(tpf_gcs_list(g, "bkt", "fleets/", &names, &n, &d), 0);
	CHECK_INT(n, 2);
	int x = 0, y = 0;
	for (size_t i = 0; i < n; i++) {
		x += !strcmp(names[i], "fleets/x.tfstate");
		y += !strcmp(names[i], "fleets/y.tfstate");
	}
	CHECK(x == 1 && y == 1 && names[n] == NULL);
	tpf_gcs_names_free(names);
	tpf_diags_release(&d);
	tpf_gcs_free(g);
}

int main(void)
{
	setenv("TPUFORM_ACCESS_TOKEN", "test-token", 1);
	setenv("TPUFORM_GCP_RETRY_BASE", "0.01", 1);
	setenv("TPUFORM_GCP_RETRY_CAP", "0.02", 1);
	setenv("TPUFORM_GCP_TRIES", "3", 1);
	if (gcs_fake_start(&fake)) {
		printf("1..0 # SKIP cannot start the Cloud Storage stand-in\n");
		return 0;
	}
	RUN(test_gcs__endpoint_policy);
	RUN(test_gcs__write_read_preconditions);
	RUN(test_gcs__retries_and_lost_answers);
	RUN(test_gcs__list_prefix);
	gcs_fake_stop(&fake);
	return unit_done();
}

/*
 * The chores' pure rules (engine/chores/chores.h): OpenSSH's -L syntax, where a
 * remote path of cp lands, the exec prefix that gives a command the job's
 * variables, and the path check for paths a user names.
 */
#include "engine/chores/chores.h"
#include "tests/unit/unit.h"

#include <stdlib.h>
#include <string.h>

static void test_chores__forward_spec(void)
{
	struct tpf_forward_spec f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_forward_spec_parse("8080:localhost:80", &f, &d), 0);
	CHECK(f.bind == NULL);
	CHECK_INT(f.port, 8080);
	CHECK_STR(f.host, "localhost");
	CHECK_INT(f.hostport, 80);
	tpf_forward_spec_release(&f);
	CHECK_INT(tpf_forward_spec_parse("127.0.0.1:0:10.0.0.2:6006", &f, &d), 0);
	CHECK_STR(f.bind, "127.0.0.1");
	CHECK_INT(f.port, 0);
	CHECK_STR(f.host, "10.0.0.2");
	CHECK_INT(f.hostport, 6006);
	tpf_forward_spec_release(&f);
	CHECK_INT(tpf_forward_spec_parse("[::1]:8080:[::1]:80", &f, &d), 0);
	CHECK_STR(f.bind, "::1");
	CHECK_STR(f.host, "::1");
	tpf_forward_spec_release(&f);
	CHECK_INT(d.n, 0);
	const char *bad[] = { "8080", "8080:host", "x:host:80", "8080:host:0", "8080:host:65536",
			      "1:2:3:4:5", "8080::80", "[::1:8080:h:80", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECKF(tpf_forward_spec_parse(bad[i], &f, &d) == TPF_ERROR, "'%s' is refused", bad[i]);
		CHECK(f.host == NULL && f.bind == NULL);
	}
	CHECK_INT(d.n, sizeof(bad) / sizeof(bad[0]));
	CHECK(strstr(d.items[0].detail, "[bind_address:]port:host:hostport") != NULL);
	tpf_diags_release(&d);
}

static void test_chores__remote_path(void)
{
	char *p;
	CHECK_STR(p = tpf_chore_remote_path("data/x"), "tpuform/src/data/x");
	free(p);
	CHECK_STR(p = tpf_chore_remote_path("~/x"), "x");
	free(p);
	CHECK_STR(p = tpf_chore_remote_path("~"), ".");
	free(p);
	CHECK_STR(p = tpf_chore_remote_path("~/"), ".");
	free(p);
	CHECK_STR(p = tpf_chore_remote_path("/tmp/x"), "/tmp/x");
	free(p);
}

static void test_chores__file_path_check(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_remote_file_path_check("/abs/../ok", "n/w0", &d), 0);
	CHECK_INT(tpf_remote_file_path_check("", "n/w0", &d), TPF_ERROR);
	CHECK_INT(tpf_remote_file_path_check("a\nb", "n/w0", &d), TPF_ERROR);
	CHECK_INT(d.n, 2);
	CHECK(strstr(d.items[1].summary, "control character") != NULL);
	tpf_diags_release(&d);
}

static void test_chores__env_prefix(void)
{
	char *p = tpf_chore_env_prefix(0);
	/* The job's variables, not the script's own settings. */
	CHECK(strstr(p, "tpuform/bootstrap.sh") != NULL);
	CHECK(strstr(p, "unset TPUFORM_SESSION") != NULL && strstr(p, "TPUFORM_RUN") != NULL);
	CHECK(strstr(p, "secrets.env") == NULL);
	free(p);
	p = tpf_chore_env_prefix(1);
	CHECK(strstr(p, ". tpuform/secrets.env") != NULL);
	free(p);
}

int main(void)
{
	RUN(test_chores__forward_spec);
	RUN(test_chores__remote_path);
	RUN(test_chores__file_path_check);
	RUN(test_chores__env_prefix);
	return unit_done();
}

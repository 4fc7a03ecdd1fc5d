/*
 * ssh.proxy_jump: the "[user@]host[:port]" parser (config/config_jump.c),
 * the fleet-file keys and their messages, and the process-wide bastion pin
 * (providers/ssh/ssh_jump.c, tpf_ssh_jump_pin_sync). The tunnel itself is
 * tested end to end by tests/e2e/t450-ssh-proxy-jump.sh.
 */
#include "tests/unit/unit.h"
#include "config/config.h"
#include "providers/ssh/ssh.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static void test_jump__parse_good(void)
{
	static const struct {
		const char *in, *user, *host;
		int port;
	} good[] = {
		{ "bastion", NULL, "bastion", 0 },
		{ "bastion.example.com", NULL, "bastion.example.com", 0 },
		{ "tpuform@bastion", "tpuform", "bastion", 0 },
		{ "10.0.0.2:2222", NULL, "10.0.0.2", 2222 },
		{ "ops@10.0.0.2:22", "ops", "10.0.0.2", 22 },
		{ "[fd00::1]", NULL, "fd00::1", 0 },
		{ "me@[fd00::1]:65535", "me", "fd00::1", 65535 },
		{ "a.b_c@h-1:1", "a.b_c", "h-1", 1 },
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct tpf_jump j;
		const char *why = NULL;
		int rc = tpf_jump_parse(good[i].in, &j, &why);
		CHECKF(rc == 0, "'%s': %s", good[i].in, why ? why : "");
		if (rc)
			continue;
		if (good[i].user)
			CHECK_STR(j.user, good[i].user);
		else
			CHECKF(j.user == NULL, "'%s': user '%s'", good[i].in, j.user);
		CHECK_STR(j.host, good[i].host);
		CHECK_INT(j.port, good[i].port);
		tpf_jump_release(&j);
	}
}

static void test_jump__parse_bad(void)
{
	static const struct {
		const char *in, *why;
	} bad[] = {
		{ "", "the host is empty" },
		{ "@bastion", "the user before '@' is empty" },
		{ "u@", "the host is empty" },
		{ "u@v@bastion", "more than one '@'" },
		{ "bastion:", "the port after ':'" },
		{ "bastion:0", "the port after ':'" },
		{ "bastion:65536", "the port after ':'" },
		{ "bastion:22x", "the port after ':'" },
		{ "bastion:-1", "the port after ':'" },
		{ "fd00::1", "must be in brackets" },
		{ "[fd00::1", "is not closed" },
		{ "[fd00::1]x", "only ':PORT' may follow" },
		{ "[bastion]:22", "not an IPv6 address" },
		{ "-oProxyCommand=x", "the host is empty or has a character" },
		{ "-u@bastion", "the user before '@'" },
		{ "bas tion", "the host is empty or has a character" },
		{ "bastion/22", "the host is empty or has a character" },
		{ "u;rm@bastion", "the user before '@'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tpf_jump j;
		const char *why = NULL;
		int rc = tpf_jump_parse(bad[i].in, &j, &why);
		CHECKF(rc == -1, "'%s' was accepted", bad[i].in);
		CHECKF(why && strstr(why, bad[i].why), "'%s': got '%s', want '%s'", bad[i].in,
		       why ? why : "(none)", bad[i].why);
		CHECK(j.host == NULL && j.user == NULL && j.port == 0);
	}
}

#define FLEET_HEAD                                                                       \
	"fleet: f\nprovider: { local: {} }\nrun: train\n"                                \
	"groups:\n  - { name: g, accelerator_type: v2-8, runtime_version: r, zones: [z], " \
	"count: 1 }\n"
#define KEY "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAb3ZyZhbmRvbWtleWJ5dGVzZm9ydGVzdHM"

static void test_jump__fleet_file(void)
{
	const char *text = FLEET_HEAD "ssh:\n  proxy_jump: ops@bastion.example.com:2222\n"
				      "  proxy_jump_host_key: \"" KEY " comment\"\n";
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	int rc = tpf_fleet_parse(&f, "/x/fleet.yaml", text, strlen(text), &d);
	CHECK_INT(rc, 0);
	if (!rc) {
		CHECK_STR(f.ssh.jump.user, "ops");
		CHECK_STR(f.ssh.jump.host, "bastion.example.com");
		CHECK_INT(f.ssh.jump.port, 2222);
		CHECK_STR(f.ssh.jump_host_key, KEY " comment");
		tpf_fleet_release(&f);
	}
	tpf_diags_release(&d);

	/* Absent: workers are reached directly. */
	text = FLEET_HEAD;
	rc = tpf_fleet_parse(&f, "/x/fleet.yaml", text, strlen(text), &d);
	CHECK_INT(rc, 0);
	if (!rc) {
		CHECK(f.ssh.jump.host == NULL);
		CHECK(f.ssh.jump_host_key == NULL);
		tpf_fleet_release(&f);
	}
	tpf_diags_release(&d);
}

static void test_jump__fleet_file_errors(void)
{
	static const struct {
		const char *ssh, *want;
	} bad[] = {
		{ "ssh: { proxy_jump: \"u@v@h\" }\n",
		  "fleet.yaml:6:20: 'proxy_jump' must be [user@]host[:port]: it has more than one "
		  "'@', got 'u@v@h'" },
		{ "ssh: { proxy_jump: \"h:99999\" }\n",
		  "fleet.yaml:6:20: 'proxy_jump' must be [user@]host[:port]: the port after ':' must "
		  "be a number from 1 to 65535, got 'h:99999'" },
		{ "ssh: { proxy_jump: [a] }\n", "fleet.yaml:6:20: 'proxy_jump' must be" },
		{ "ssh: { proxy_jump_host_key: \"" KEY "\" }\n",
		  "fleet.yaml:6:29: 'proxy_jump_host_key' is set but 'proxy_jump' is not" },
		{ "ssh: { proxy_jump: h, proxy_jump_host_key: \"not a key\" }\n",
		  "fleet.yaml:6:44: 'proxy_jump_host_key' must be a host key as 'TYPE BASE64', got "
		  "'not a key'" },
		{ "ssh: { proxy_jmp: h }\n",
		  "fleet.yaml:6:8: unknown key 'proxy_jmp' in ssh; did you mean 'proxy_jump'?" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *text = xasprintf(FLEET_HEAD "%s", bad[i].ssh);
		struct tpf_diags d = TPF_DIAGS_INIT;
		struct tpf_fleet f;
		int rc = tpf_fleet_parse(&f, "fleet.yaml", text, strlen(text), &d);
		CHECKF(rc != 0, "accepted: %s", bad[i].ssh);
		const char *got = d.n ? d.items[0].summary : "(no diagnostic)";
		CHECKF(!strncmp(got, bad[i].want, strlen(bad[i].want)), "got '%s', want '%s'", got,
		       bad[i].want);
		if (!rc)
			tpf_fleet_release(&f);
		tpf_diags_release(&d);
		free(text);
	}
}

/* The process-wide pin: taken from the state once, then handed back. */
static void test_jump__pin_sync(void)
{
	char *host = NULL, *key = NULL;
	tpf_ssh_jump_pin_sync(&host, &key);
	CHECK(host == NULL && key == NULL); /* nothing pinned, nothing stored */

	host = xstrdup("bastion:22");
	key = xstrdup("SHA256:first");
	tpf_ssh_jump_pin_sync(&host, &key); /* seeds the process */
	char *h2 = NULL, *k2 = NULL;
	tpf_ssh_jump_pin_sync(&h2, &k2); /* an empty state gets it back */
	CHECK_STR(h2, "bastion:22");
	CHECK_STR(k2, "SHA256:first");

	/* A state with another pin does not replace the process's: the
	 * process's is what its connections checked. */
	free(h2);
	free(k2);
	h2 = xstrdup("other:22");
	k2 = xstrdup("SHA256:other");
	tpf_ssh_jump_pin_sync(&h2, &k2);
	CHECK_STR(h2, "bastion:22");
	CHECK_STR(k2, "SHA256:first");
	free(h2);
	free(k2);
	free(host);
	free(key);
}

int main(void)
{
	RUN(test_jump__parse_good);
	RUN(test_jump__parse_bad);
	RUN(test_jump__fleet_file);
	RUN(test_jump__fleet_file_errors);
	RUN(test_jump__pin_sync);
	return unit_done();
}

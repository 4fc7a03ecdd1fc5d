#include "tests/unit/unit.h"
#include "config/config.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A valid head and group that the malformed snippets break one thing of. */
#define HEAD "fleet: f\nprovider: { local: {} }\nrun: train\n"
#define GROUP                                                                            \
	"groups:\n  - { name: g, accelerator_type: v2-8, runtime_version: tpu-vm-base, " \
	"zones: [us-central1-f], count: 1 }\n"
#define GROUP_BLOCK                                                                      \
	"groups:\n  - name: g\n    accelerator_type: v2-8\n    runtime_version: tpu-vm-base\n" \
	"    zones: [us-central1-f]\n    count: 1\n"
/* 40 + 1 + 20 + 1 + 2 ("-99") = 64 characters: one too many. */
#define LONG_FLEET "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define LONG_GROUP "bbbbbbbbbbbbbbbbbbbb"

static const struct {
	const char *snippet;
	const char *first; /* exact summary of the first diagnostic */
} bad[] = {
	/* YAML itself */
	{ "fleet: [a, b\nrun: x\n",
	  "fleet.yaml:2:4: invalid YAML: did not find expected ',' or ']' "
	  "(while parsing a flow sequence at 1:8)" },
	{ "fleet: \"abc\n",
	  "fleet.yaml:2:1: invalid YAML: found unexpected end of stream "
	  "(while scanning a quoted scalar at 1:8)" },
	{ HEAD "groups:\n  - name: g\n\tcount: 1\n",
	  "fleet.yaml:6:1: invalid YAML: found a tab character that violates indentation "
	  "(while scanning a plain scalar at 5:11)" },
	{ HEAD "\tgroups: []\n",
	  "fleet.yaml:4:1: invalid YAML: found a tab character that violates indentation "
	  "(while scanning a plain scalar at 3:6)" },
	{ HEAD GROUP "env: { A: \xc3\x28 }\n",
	  "fleet.yaml:6:12: invalid YAML: invalid trailing UTF-8 octet" },
	{ HEAD GROUP "env: &e { A: x }\n",
	  "fleet.yaml:6:6: YAML anchor '&e' is not supported in a fleet file" },
	{ "fleet: f\nprovider: { local: {} }\nrun: train\nsetup: x\n" GROUP "ssh: { user: *u }\n",
	  "fleet.yaml:7:14: YAML alias '*u' is not supported in a fleet file" },
	{ HEAD GROUP "env: { A: !!str 5 }\n",
	  "fleet.yaml:6:11: YAML tag '!!str' is not supported in a fleet file" },
	{ HEAD GROUP "---\nfleet: g\n",
	  "fleet.yaml:6:1: a fleet file holds one YAML document, found a second one" },
	{ "", "fleet.yaml:1:1: the fleet file is empty; expected a mapping with 'fleet', "
	      "'provider' and 'groups'" },
	{ "- a\n- b\n",
	  "fleet.yaml:1:1: the fleet file must be a mapping with keys such as 'fleet', 'provider' "
	  "and 'groups', got a list" },
	{ HEAD GROUP "provider: { local: {} }\n",
	  "fleet.yaml:6:1: duplicate key 'provider' at top level (first at line 2)" },
	{ HEAD GROUP_BLOCK "    count: 2\n",
	  "fleet.yaml:10:5: duplicate key 'count' in group 'g' (first at line 9)" },
	{ HEAD GROUP "? [a]\n: 1\n", "fleet.yaml:6:3: keys at top level must be names, got a list" },

	/* group-only keys at top level */
	{ HEAD GROUP "zones: [a]\n", "fleet.yaml:6:8: 'zones' belongs in a group, not at top level" },
	{ HEAD GROUP "count: 3\n", "fleet.yaml:6:8: 'count' belongs in a group, not at top level" },

	/* unknown keys, with and without a hint, at several levels */
	{ "flet: f\nprovider: { local: {} }\nrun: x\n" GROUP,
	  "fleet.yaml:1:1: unknown key 'flet' at top level; did you mean 'fleet'?" },
	{ HEAD GROUP "colour: red\n", "fleet.yaml:6:1: unknown key 'colour' at top level" },
	{ HEAD GROUP "setupp: x\n",
	  "fleet.yaml:6:1: unknown key 'setupp' at top level; did you mean 'setup'?" },
	{ "fleet: f\nprovider: { lcoal: {} }\nrun: x\n" GROUP,
	  "fleet.yaml:2:13: unknown key 'lcoal' in provider; did you mean 'local'?" },
	{ "fleet: f\nprovider: { local: { rot: x } }\nrun: x\n" GROUP,
	  "fleet.yaml:2:22: unknown key 'rot' in provider.local; did you mean 'root'?" },
	{ "fleet: f\nprovider: { gcp: { project: p, region: x } }\nrun: x\n" GROUP,
	  "fleet.yaml:2:32: unknown key 'region' in provider.gcp" },
	{ HEAD GROUP "state: { file: s.json }\n", "fleet.yaml:6:10: unknown key 'file' in state" },
	{ HEAD GROUP "quota: [{ zone: z, accelerator_type: v2-8, preemptable: 3 }]\n",
	  "fleet.yaml:6:44: unknown key 'preemptable' in quota rule; did you mean 'preemptible'?" },
	{ HEAD GROUP "source: { repo: r, branch: main }\n",
	  "fleet.yaml:6:20: unknown key 'branch' in source" },
	{ HEAD GROUP "ssh: { priv: k }\n",
	  "fleet.yaml:6:8: unknown key 'priv' in ssh; did you mean 'private_key'?" },
	{ HEAD "groups:\n  - name: sweep\n    acelerator_type: v2-8\n    runtime_version: r\n"
	       "    zones: [z]\n    count: 1\n",
	  "fleet.yaml:6:5: unknown key 'acelerator_type' in group 'sweep'; did you mean "
	  "'accelerator_type'?" },
	{ HEAD GROUP_BLOCK "    zone: z\n",
	  "fleet.yaml:10:5: unknown key 'zone' in group 'g'; did you mean 'zones'?" },
	{ HEAD GROUP_BLOCK "    machine: big\n", "fleet.yaml:10:5: unknown key 'machine' in group 'g'; did you mean 'machine_type'?" },

	/* wrong types */
	{ HEAD "groups:\n  - { name: g, accelerator_type: v2-8, runtime_version: r, zones: [z], "
	       "count: many }\n",
	  "fleet.yaml:5:79: 'count' must be a whole number >= 0, got 'many'" },
	{ HEAD "groups:\n  - { name: g, accelerator_type: v2-8, runtime_version: r, zones: [z], "
	       "count: -2 }\n",
	  "fleet.yaml:5:79: 'count' must be a whole number >= 0, got '-2'" },
	{ HEAD GROUP_BLOCK "    preemptible: yes please\n",
	  "fleet.yaml:10:18: 'preemptible' must be true or false, got 'yes please'" },
	{ HEAD GROUP_BLOCK "    spot: yes\n",
	  "fleet.yaml:10:11: 'spot' must be true or false, got 'yes'" },
	{ HEAD "groups:\n  - { name: g, accelerator_type: v2-8, runtime_version: r, zones: {a: 1}, "
	       "count: 1 }\n",
	  "fleet.yaml:5:67: 'zones' must be a list of zone names, got a mapping" },
	{ HEAD "groups:\n  - { name: g, accelerator_type: v2-8, runtime_version: r, zones: [], "
	       "count: 1 }\n",
	  "fleet.yaml:5:67: 'zones' must list at least one zone" },
	{ HEAD "groups:\n  - { name: g, accelerator_type: v2-8, runtime_version: r, zones: [z, Z], "
	       "count: 1 }\n",
	  "fleet.yaml:5:71: each zone must be a zone name such as 'us-central1-f', got 'Z'" },
	{ HEAD "groups:\n  - { name: g, accelerator_type: v2-8, runtime_version: r, zones: [z, z], "
	       "count: 1 }\n",
	  "fleet.yaml:5:71: zone 'z' is listed twice in group 'g'" },
	{ HEAD "groups: { name: g }\n",
	  "fleet.yaml:4:9: 'groups' must be a list of groups, each a mapping, got a mapping" },
	{ HEAD "groups: []\n", "fleet.yaml:4:9: 'groups' must list at least one group" },
	{ HEAD "groups:\n  - just-a-name\n",
	  "fleet.yaml:5:5: 'groups' must be a list of mappings with 'name', 'accelerator_type', "
	  "'runtime_version', 'zones' and 'count', got 'just-a-name'" },
	{ "fleet: f\nprovider: [local]\nrun: x\n" GROUP,
	  "fleet.yaml:2:11: 'provider' must be a mapping with 'local' or 'gcp', got a list" },
	{ HEAD GROUP "env: { A: x, A: y }\n",
	  "fleet.yaml:6:14: duplicate key 'A' in env (first at line 6)" },
	{ "fleet: f\nprovider: { local: {} }\nrun: [a, b]\n" GROUP,
	  "fleet.yaml:3:6: 'run' must be a shell command, got a list" },
	{ HEAD GROUP "env: [A, B]\n",
	  "fleet.yaml:6:6: 'env' must be a mapping of variable names to values, got a list" },
	{ HEAD GROUP "env: { A: { b: c } }\n", "fleet.yaml:6:11: env 'A' must be text, got a mapping" },
	{ HEAD GROUP "max_restarts: lots\n",
	  "fleet.yaml:6:15: 'max_restarts' must be a whole number >= 0, got 'lots'" },
	{ HEAD GROUP "restart_scope: slice\n",
	  "fleet.yaml:6:16: 'restart_scope' must be node or worker, got 'slice'" },
	{ HEAD GROUP "stall_timeout: forever\n",
	  "fleet.yaml:6:16: 'stall_timeout' must be a duration such as 500ms, 30s, 5m, 6h, 7d or 1h30m "
	  "(a bare number is seconds), at most 36500d, got 'forever'" },
	{ HEAD GROUP "restart_on_exit_codes: 42\n",
	  "fleet.yaml:6:24: 'restart_on_exit_codes' must be a list of exit codes, got '42'" },
	{ HEAD GROUP "restart_on_exit_codes: [42, 300]\n",
	  "fleet.yaml:6:29: 'restart_on_exit_codes' must be exit codes 0-255 or ranges like "
	  "128-255, got '300'" },
	{ HEAD GROUP "never_restart_on: [9-3]\n",
	  "fleet.yaml:6:20: 'never_restart_on' must be exit codes 0-255 or ranges like 128-255, "
	  "got '9-3'" },
	{ HEAD GROUP "restart_on_exit_codes: [42]\nnever_restart_on: [3]\n",
	  "fleet.yaml:7:19: 'never_restart_on' cannot be given with 'restart_on_exit_codes'" },
	{ HEAD GROUP "on_disruption: { signal: SIGKILL }\n",
	  "fleet.yaml:6:26: 'on_disruption.signal' must be one of SIGTERM, SIGINT, SIGUSR1, SIGUSR2, "
	  "SIGHUP or SIGQUIT, got 'SIGKILL'" },
	{ HEAD GROUP "on_disruption: { grace: 5m }\n",
	  "fleet.yaml:6:25: 'on_disruption.grace' must be between 1s and 100s" },
	{ HEAD GROUP "tpu_busy: maybe\n",
	  "fleet.yaml:6:11: 'tpu_busy' must be refuse, wait or kill, got 'maybe'" },
	{ HEAD GROUP "preflight_failures: 0\n",
	  "fleet.yaml:6:21: 'preflight_failures' must be a whole number >= 1, got '0'" },
	{ HEAD GROUP "on_success: deleted\n",
	  "fleet.yaml:6:13: 'on_success' must be keep or delete, got 'deleted'; did you mean "
	  "'delete'?" },
	{ HEAD "restart: always\non_success: delete\n" GROUP,
	  "fleet.yaml:4:10: 'on_success: delete' cannot apply with 'restart: always'" },
	/* restart and max_restarts per group (issue 26): checked as at top level,
	 * the pair checked on what the group makes of it */
	{ HEAD GROUP_BLOCK "    max_restarts: lots\n",
	  "fleet.yaml:10:19: 'max_restarts' must be a whole number >= 0, got 'lots'" },
	{ HEAD GROUP_BLOCK "    max_restarts: -1\n",
	  "fleet.yaml:10:19: 'max_restarts' must be a whole number >= 0, got '-1'" },
	{ HEAD GROUP_BLOCK "    restart: sometimes\n",
	  "fleet.yaml:10:14: 'restart' must be one of always, on-failure or never, got "
	  "'sometimes'" },
	{ HEAD "restart: always\n" GROUP_BLOCK "    on_success: delete\n",
	  "fleet.yaml:11:17: 'on_success: delete' cannot apply with 'restart: always'" },
	{ HEAD "on_success: delete\n" GROUP_BLOCK "    restart: always\n",
	  "fleet.yaml:11:14: 'on_success: delete' cannot apply with 'restart: always'" },
	{ HEAD GROUP "ssh: { port: 0 }\n",
	  "fleet.yaml:6:14: 'port' must be a port number from 1 to 65535, got '0'" },
	{ HEAD GROUP "ssh: { port: 70000 }\n", "fleet.yaml:6:14: 'port' must be at most 65535, got '70000'" },
	{ HEAD GROUP "ssh: { address: public }\n",
	  "fleet.yaml:6:17: 'address' must be one of auto, external or internal, got 'public'" },
	{ HEAD GROUP "source: { repo: r, transfer: copy }\n",
	  "fleet.yaml:6:30: 'transfer' must be clone or bundle, got 'copy'" },
	{ "fleet: f\nprovider: { local: { create_delay: soon } }\nrun: x\n" GROUP,
	  "fleet.yaml:2:36: 'create_delay' must be a duration such as 500ms, 30s, 5m, 6h, 7d or 1h30m "
	  "(a bare number is seconds), at most 36500d, got 'soon'" },
	{ HEAD GROUP "quota: [{ zone: z, accelerator_type: v2-8, spot: -1 }]\n",
	  "fleet.yaml:6:50: 'spot' must be a whole number >= 0, got '-1'" },
	{ HEAD GROUP "quota: [{ zone: z, accelerator_type: v2-8 }]\n",
	  "fleet.yaml:6:9: quota rule declares no cap; expected at least one of 'preemptible', "
	  "'spot' or 'on_demand'" },
	{ HEAD GROUP "quota:\n  - { zone: z, accelerator_type: v2-8, spot: 1 }\n"
		     "  - { zone: z, accelerator_type: v2-8, preemptible: 1 }\n",
	  "fleet.yaml:8:5: quota rule for zone 'z' and accelerator type 'v2-8' is already declared "
	  "at line 7" },
	{ "fleet: f\nprovider: { gcp: { project: p, endpoint: tpu.googleapis.com } }\nrun: x\n" GROUP,
	  "fleet.yaml:2:42: 'endpoint' must be a URL such as 'https://tpu.googleapis.com', got "
	  "'tpu.googleapis.com'" },

	/* missing required keys */
	{ "provider: { local: {} }\nrun: x\n" GROUP,
	  "fleet.yaml:1:1: the fleet file is missing required key 'fleet'" },
	{ "fleet: f\nrun: x\n" GROUP,
	  "fleet.yaml:1:1: the fleet file is missing required key 'provider'" },
	{ HEAD, "fleet.yaml:1:1: the fleet file is missing required key 'groups'" },
	{ HEAD "groups:\n  - name: sweep\n    accelerator_type: v2-8\n    zones: [z]\n"
	       "    count: 1\n",
	  "fleet.yaml:5:5: group 'sweep' is missing required key 'runtime_version'" },
	{ HEAD "groups:\n  - { accelerator_type: v2-8, runtime_version: r, zones: [z], count: 1 }\n",
	  "fleet.yaml:5:5: group #1 is missing required key 'name'" },
	{ "fleet: f\nprovider: { local: {} }\n" GROUP,
	  "fleet.yaml:4:5: group 'g' is missing required key 'run'" },
	{ "fleet: f\nprovider: { gcp: { credentials: k.json } }\nrun: x\n" GROUP,
	  "fleet.yaml:2:18: provider.gcp is missing required key 'project'" },
	{ "fleet: f\nprovider: {}\nrun: x\n" GROUP,
	  "fleet.yaml:2:11: 'provider' must have one of 'local' or 'gcp'" },
	{ "fleet: f\nprovider: { local: {}, gcp: { project: p } }\nrun: x\n" GROUP,
	  "fleet.yaml:2:11: 'provider' must have exactly one of 'local' or 'gcp', got both" },
	{ HEAD GROUP "source: { ref: main }\n",
	  "fleet.yaml:6:9: source is missing required key 'repo'" },
	{ HEAD GROUP "quota: [{ accelerator_type: v2-8, spot: 1 }]\n",
	  "fleet.yaml:6:9: quota rule is missing required key 'zone'" },

	/* names, labels, env */
	{ "fleet: LLM_Sweep\nprovider: { local: {} }\nrun: x\n" GROUP,
	  "fleet.yaml:1:8: 'fleet' must be a name of at most 40 lowercase letters, digits and '-', "
	  "starting with a letter, got 'LLM_Sweep'" },
	{ "fleet: " LONG_FLEET "a\nprovider: { local: {} }\nrun: x\n" GROUP,
	  "fleet.yaml:1:8: 'fleet' must be a name of at most 40 lowercase letters, digits and '-', "
	  "starting with a letter, got '" LONG_FLEET "a'" },
	{ HEAD "groups:\n  - { name: 2nd, accelerator_type: v2-8, runtime_version: r, zones: [z], "
	       "count: 1 }\n",
	  "fleet.yaml:5:13: 'name' must be a name of lowercase letters, digits and '-', starting "
	  "with a letter, got '2nd'" },
	{ HEAD GROUP "  - { name: g, accelerator_type: v3-8, runtime_version: r, zones: [z], "
		     "count: 1 }\n",
	  "fleet.yaml:6:13: group name 'g' is already used at line 5" },
	{ "fleet: " LONG_FLEET "\nprovider: { local: {} }\nrun: x\ngroups:\n  - { name: " LONG_GROUP
	  ", accelerator_type: v2-8, runtime_version: r, zones: [z], count: 100 }\n",
	  "fleet.yaml:5:13: node name '" LONG_FLEET "-" LONG_GROUP "-99' would be 64 characters, "
	  "more than the 63 GCP allows" },
	{ HEAD GROUP_BLOCK "    labels: { tpuform-fleet: other }\n",
	  "fleet.yaml:10:15: label key 'tpuform-fleet' in group 'g' is reserved: keys starting "
	  "with 'tpuform-' belong to tpuform" },
	{ HEAD GROUP_BLOCK "    labels: { Team: nlp }\n",
	  "fleet.yaml:10:15: label key 'Team' in group 'g' must match [a-z][a-z0-9_-]{0,62}" },
	{ HEAD GROUP_BLOCK "    labels: { team: NLP }\n",
	  "fleet.yaml:10:21: label 'team' in group 'g' must have a value matching "
	  "[a-z0-9_-]{0,63}, got 'NLP'" },
	{ HEAD GROUP "env: { TPUFORM_NODE: x }\n",
	  "fleet.yaml:6:8: env name 'TPUFORM_NODE' is reserved: names starting with 'TPUFORM_' "
	  "belong to tpuform" },
	{ HEAD GROUP_BLOCK "    env: { my-var: x }\n",
	  "fleet.yaml:10:12: env name 'my-var' must be letters, digits and '_', not starting with "
	  "a digit" },
	{ HEAD GROUP "env: { 1X: x }\n",
	  "fleet.yaml:6:8: env name '1X' must be letters, digits and '_', not starting with a digit" },

	/* scheduling, accelerator, enums */
	{ HEAD GROUP_BLOCK "    preemptible: true\n    spot: true\n",
	  "fleet.yaml:11:11: group 'g' sets both 'preemptible' and 'spot'; choose one" },
	{ HEAD "groups:\n  - { name: g, accelerator_type: v9-8, runtime_version: r, zones: [z], "
	       "count: 1 }\n",
	  "fleet.yaml:5:34: 'accelerator_type' must be <family>-<size> with family v2, v3, v4, "
	  "v5p, v5litepod or v6e, such as 'v4-16', got 'v9-8'" },
	{ HEAD "groups:\n  - { name: g, accelerator_type: v4-12, runtime_version: r, zones: [z], "
	       "count: 1 }\n",
	  "fleet.yaml:5:34: 'accelerator_type' must be v4-N with N a power of two from 8 to 4096, "
	  "got 'v4-12'" },
	{ HEAD GROUP "quota: [{ zone: z, accelerator_type: v6e-2, spot: 1 }]\n",
	  "fleet.yaml:6:38: 'accelerator_type' must be v6e-N with N one of 1, 4, 8, 16, 32, 64, 128 "
	  "or 256, got 'v6e-2'" },
	{ HEAD GROUP "restart: sometimes\n",
	  "fleet.yaml:6:10: 'restart' must be one of always, on-failure or never, got 'sometimes'" },
	{ HEAD GROUP "restart: on_failure\n",
	  "fleet.yaml:6:10: 'restart' must be one of always, on-failure or never, got "
	  "'on_failure'; did you mean 'on-failure'?" },
	{ HEAD GROUP_BLOCK "    valid_until: 6h\n",
	  "fleet.yaml:10:18: 'valid_until' in group 'g' applies to queued resources only" },

	/* secrets */
	{ HEAD GROUP "secrets: { WANDB_API_KEY: \"${TPF_TEST_UNSET_VAR}\" }\n",
	  "fleet.yaml:6:27: secret 'WANDB_API_KEY' needs environment variable 'TPF_TEST_UNSET_VAR', "
	  "which is not set" },
	{ HEAD GROUP "env: { TOKEN: x }\nsecrets: { TOKEN: y }\n",
	  "fleet.yaml:7:12: secret 'TOKEN' has the same name as an env entry; a variable is either "
	  "in env or in secrets" },
	{ HEAD GROUP_BLOCK "    env: { TOKEN: x }\nsecrets: { TOKEN: y }\n",
	  "fleet.yaml:11:12: secret 'TOKEN' has the same name as an env entry; a variable is either "
	  "in env or in secrets" },
	{ HEAD GROUP "secrets: { TPUFORM_KEY: y }\n",
	  "fleet.yaml:6:12: secret name 'TPUFORM_KEY' is reserved: names starting with 'TPUFORM_' "
	  "belong to tpuform" },
	{ HEAD GROUP "secrets: { K: \"${oops\" }\n",
	  "fleet.yaml:6:15: secret 'K' has a malformed '${' reference; expected ${NAME} with NAME "
	  "made of letters, digits and '_'" },
};

/* Read a fleet as plan and apply do: parse, then resolve the secrets. On
 * any error *f is left released. */
static int parse_resolved(struct tpf_fleet *f, const char *text, size_t len, struct tpf_diags *d)
{
	int rc = tpf_fleet_parse(f, "fleet.yaml", text, len, d);
	if (rc == 0 && (rc = tpf_fleet_resolve_secrets(f, d)) != 0)
		tpf_fleet_release(f);
	return rc;
}

static void parse_text(const char *text, struct tpf_fleet *f, struct tpf_diags *d, int *rc)
{
	*rc = parse_resolved(f, text, strlen(text), d);
}

static void test_config__malformed_first_error(void)
{
	size_t n = sizeof(bad) / sizeof(bad[0]);
	CHECKF(n >= 25, "only %zu malformed snippets", n);
	unsetenv("TPF_TEST_UNSET_VAR");
	for (size_t i = 0; i < n; i++) {
		struct tpf_diags d = TPF_DIAGS_INIT;
		struct tpf_fleet f;
		int rc;
		parse_text(bad[i].snippet, &f, &d, &rc);
		CHECKF(rc == TPF_ERROR, "case %zu: rc %d", i, rc);
		CHECKF(d.n >= 1, "case %zu: no diagnostic", i);
		CHECK_STR(d.n ? d.items[0].summary : NULL, bad[i].first);
		CHECKF(f.name == NULL && f.groups == NULL && f.path == NULL,
		       "case %zu: *out must be left released", i);
		tpf_fleet_release(&f); /* must be harmless */
		tpf_diags_release(&d);
	}
}

/* Hints travel in the detail line. */
static void test_config__details(void)
{
	static const struct {
		const char *snippet, *detail;
	} cases[] = {
		{ HEAD "groups:\n  - name: g\n\tcount: 1\n",
		  "YAML does not allow tabs for indentation; indent with spaces" },
		{ HEAD GROUP_BLOCK "    preemptible: yes\n",
		  "only the words true and false are accepted, not yes/no/on/off (which YAML 1.1 "
		  "reads as booleans and other tools do not)" },
		{ HEAD GROUP "secrets: { WANDB_API_KEY: \"${TPF_TEST_UNSET_VAR}\" }\n",
		  "set it in tpuform's environment first: export TPF_TEST_UNSET_VAR=..." },
		{ "fleet: f\nprovider: { local: {} }\n" GROUP,
		  "set 'run' in the group, or once at top level for all groups" },
	};
	unsetenv("TPF_TEST_UNSET_VAR");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tpf_diags d = TPF_DIAGS_INIT;
		struct tpf_fleet f;
		int rc;
		parse_text(cases[i].snippet, &f, &d, &rc);
		CHECK(rc == TPF_ERROR);
		CHECK_STR(d.n ? d.items[0].detail : NULL, cases[i].detail);
		tpf_diags_release(&d);
	}
}

static int has_summary(const struct tpf_diags *d, const char *want)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->items[i].summary, want))
			return 1;
	return 0;
}

/* All errors are reported, in file order, not just the first. */
static void test_config__collects_all_errors(void)
{
	const char *text = "fleet: Bad\n"
			   "provider: { local: {} }\n"
			   "restart: maybe\n"
			   "secrets: { TPUFORM_S: y }\n"
			   "groups:\n"
			   "  - name: a\n"
			   "    acelerator_type: v2-8\n"
			   "    runtime_version: r\n"
			   "    zones: [z]\n"
			   "    count: many\n"
			   "    run: x\n"
			   "  - { name: a, accelerator_type: v4-12, runtime_version: r, zones: [z], "
			   "count: 1, run: x }\n"
			   "colour: red\n";
	/* Sorted by position, though the walk finds top-level unknown keys
	 * first and secrets last. */
	static const char *const want[] = {
		"fleet.yaml:1:8: 'fleet' must be a name of at most 40 lowercase letters, digits and "
		"'-', starting with a letter, got 'Bad'",
		"fleet.yaml:3:10: 'restart' must be one of always, on-failure or never, got 'maybe'",
		"fleet.yaml:4:12: secret name 'TPUFORM_S' is reserved: names starting with "
		"'TPUFORM_' belong to tpuform",
		"fleet.yaml:7:5: unknown key 'acelerator_type' in group 'a'; did you mean "
		"'accelerator_type'?",
		"fleet.yaml:10:12: 'count' must be a whole number >= 0, got 'many'",
		"fleet.yaml:12:13: group name 'a' is already used at line 6",
		"fleet.yaml:12:34: 'accelerator_type' must be v4-N with N a power of two from 8 to "
		"4096, got 'v4-12'",
		"fleet.yaml:13:1: unknown key 'colour' at top level",
	};
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	int rc;
	parse_text(text, &f, &d, &rc);
	CHECK(rc == TPF_ERROR);
	CHECK_INT(d.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < d.n && i < sizeof(want) / sizeof(want[0]); i++)
		CHECK_STR(d.items[i].summary, want[i]);
	/* The misspelt key is not also reported as missing. */
	CHECK(!has_summary(&d, "fleet.yaml:6:5: group 'a' is missing required key "
			       "'accelerator_type'"));
	tpf_diags_release(&d);
}

static const char full[] =
	"fleet: llm-sweep\n"
	"provider:\n"
	"  local: { root: sandboxes, create_delay: 500ms }\n"
	"state: { path: state/fleet.json }\n"
	"quota:\n"
	"  - { zone: us-central1-f, accelerator_type: v2-8, preemptible: 100, spot: 10, "
	"on_demand: 5 }\n"
	"  - { zone: europe-west4-a, accelerator_type: v3-8, on_demand: 0 }\n"
	"source: { repo: https://github.com/org/model.git, ref: main, transfer: bundle }\n"
	"ssh: { user: tpuform, private_key: ~/.ssh/google_compute_engine, port: 2222, "
	"address: internal }\n"
	"env: { WANDB_PROJECT: llm, SHARED: fleet }\n"
	"secrets: { WANDB_API_KEY: \"key-${TPF_TEST_SECRET}-end\" }\n"
	"setup: pip install -r requirements.txt\n"
	"run: python train.py --resume\n"
	"restart: always\n"
	"max_restarts: 7\n"
	"groups:\n"
	"  - name: sweep\n"
	"    accelerator_type: v2-8\n"
	"    runtime_version: tpu-vm-base\n"
	"    zones: [us-central1-f, us-central1-a]\n"
	"    count: 20\n"
	"    preemptible: true\n"
	"    labels: { team: nlp, cost-center: \"42\" }\n"
	"    run: wandb agent org/proj/abc123\n"
	"    env: { X: \"1\", SHARED: group, N: 2 }\n"
	"    queued: false\n"
	"  - name: pod\n"
	"    accelerator_type: v4-32\n"
	"    runtime_version: tpu-ubuntu2204-base\n"
	"    zones: us-central2-b\n"
	"    count: 0\n"
	"    spot: true\n"
	"    setup: \"\"\n"
	"  - name: lite\n"
	"    accelerator_type: v5litepod-16\n"
	"    runtime_version: v2-alpha-tpuv5-lite\n"
	"    zones: [us-central2-b, us-central1-f, europe-west4-a]\n"
	"    count: 2\n"
	"    queued: true\n"
	"    valid_until: 6h\n"
	"    setup: make deps\n";

static void test_config__full_file(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	setenv("TPF_TEST_SECRET", "s3cr3t", 1);
	setenv("HOME", "/home/tester", 1);
	int rc = tpf_fleet_parse(&f, "conf/fleet.yaml", full, strlen(full), &d);
	CHECK_INT(f.secrets.n, 0); /* not resolved by parsing */
	if (rc == 0)
		rc = tpf_fleet_resolve_secrets(&f, &d);
	CHECK_INT(rc, 0);
	CHECK_INT(d.n, 0);
	if (rc) {
		for (size_t i = 0; i < d.n; i++)
			printf("# %s\n", d.items[i].summary);
		tpf_diags_release(&d);
		return;
	}
	CHECK_STR(f.path, "conf/fleet.yaml");
	CHECK_STR(f.dir, "conf");
	CHECK_STR(f.name, "llm-sweep");
	CHECK_INT(f.provider, TPF_PROVIDER_LOCAL);
	CHECK_STR(f.local.root, "conf/sandboxes");
	CHECKF(f.local.create_delay > 0.499 && f.local.create_delay < 0.501, "create_delay %g",
	       f.local.create_delay);
	CHECK_STR(f.state_path, "conf/state/fleet.json");

	CHECK_INT(f.nquota, 2);
	CHECK_STR(f.quota[0].zone, "us-central1-f");
	CHECK_STR(f.quota[0].accelerator_type, "v2-8");
	CHECK_INT(f.quota[0].preemptible, 100);
	CHECK_INT(f.quota[0].spot, 10);
	CHECK_INT(f.quota[0].on_demand, 5);
	CHECK_INT(f.quota[0].line, 6);
	CHECK_INT(f.quota[0].column, 5);
	CHECK_INT(f.quota[1].preemptible, -1);
	CHECK_INT(f.quota[1].spot, -1);
	CHECK_INT(f.quota[1].on_demand, 0);

	CHECK_STR(f.source.repo, "https://github.com/org/model.git");
	CHECK_STR(f.source.ref, "main");
	CHECK_INT(f.source.transfer, TPF_TRANSFER_BUNDLE);
	CHECK_STR(f.ssh.user, "tpuform");
	CHECK_STR(f.ssh.private_key, "/home/tester/.ssh/google_compute_engine");
	CHECK_INT(f.ssh.port, 2222);
	CHECK_INT(f.ssh.address, TPF_SSH_ADDRESS_INTERNAL);

	CHECK_INT(f.env.n, 2);
	CHECK_STR(tpf_kvlist_get(&f.env, "SHARED"), "fleet");
	CHECK_INT(f.secrets.n, 1);
	CHECK_STR(tpf_kvlist_get(&f.secrets, "WANDB_API_KEY"), "key-s3cr3t-end");
	CHECK_STR(f.setup, "pip install -r requirements.txt");
	CHECK_STR(f.run, "python train.py --resume");
	CHECK_INT(f.policy.restart, TPF_RESTART_ALWAYS);
	CHECK_INT(f.policy.max_restarts, 7);

	CHECK_INT(f.ngroups, 3);
	const struct tpf_group *g = tpf_fleet_group(&f, "sweep");
	CHECK(g == &f.groups[0]);
	if (g) {
		CHECK_STR(g->accelerator_type, "v2-8");
		CHECK_STR(g->runtime_version, "tpu-vm-base");
		CHECK_INT(g->nzones, 2);
		CHECK_STR(g->zones[1], "us-central1-a");
		CHECK_INT(g->count, 20);
		CHECK_INT(g->preemptible, 1);
		CHECK_INT(g->spot, 0);
		CHECK_INT(g->workers, 1);
		CHECK_INT(g->labels.n, 2);
		CHECK_STR(tpf_kvlist_get(&g->labels, "cost-center"), "42");
		CHECK_STR(g->setup, "pip install -r requirements.txt"); /* inherited */
		CHECK_STR(g->run, "wandb agent org/proj/abc123");    /* overridden */
		/* fleet env, then the group's on top */
		CHECK_INT(g->env.n, 4);
		CHECK_STR(tpf_kvlist_get(&g->env, "WANDB_PROJECT"), "llm");
		CHECK_STR(tpf_kvlist_get(&g->env, "SHARED"), "group");
		CHECK_STR(tpf_kvlist_get(&g->env, "X"), "1");
		CHECK_STR(tpf_kvlist_get(&g->env, "N"), "2");
		CHECK_INT(g->queued, 0);
		CHECK(g->valid_until == NULL);
		CHECK_INT(g->line, 17);
		CHECK_INT(g->column, 5);
	}
	g = tpf_fleet_group(&f, "pod");
	CHECK(g != NULL);
	if (g) {
		CHECK_INT(g->workers, 4);
		CHECK_INT(g->nzones, 1);
		CHECK_STR(g->zones[0], "us-central2-b");
		CHECK_INT(g->count, 0);
		CHECK_INT(g->spot, 1);
		CHECK(g->setup == NULL); /* "" cancels the fleet's setup */
		CHECK_STR(g->run, "python train.py --resume");
		CHECK_INT(g->env.n, 2);
		CHECK_INT(g->labels.n, 0);
	}
	g = tpf_fleet_group(&f, "lite");
	CHECK(g != NULL);
	if (g) {
		CHECK_INT(g->workers, 4);
		CHECK_STR(g->setup, "make deps");
		CHECK_INT(g->queued, 1);
		CHECK_STR(g->valid_until, "6h");
	}
	CHECK(tpf_fleet_group(&f, "nope") == NULL);

	size_t nz;
	const char **zones = tpf_fleet_zones(&f, &nz);
	CHECK_INT(nz, 4);
	if (nz == 4) {
		CHECK_STR(zones[0], "us-central1-f");
		CHECK_STR(zones[1], "us-central1-a");
		CHECK_STR(zones[2], "us-central2-b");
		CHECK_STR(zones[3], "europe-west4-a");
	}
	free(zones);
	tpf_fleet_release(&f);
	CHECK(f.groups == NULL && f.name == NULL);
	tpf_diags_release(&d);
}

static void test_config__defaults(void)
{
	const char *text = "fleet: f\n"
			   "provider:\n"
			   "  local:\n"
			   "run: train\n"
			   "env: { A: x }\n"
			   "groups:\n"
			   "  - { name: g, accelerator_type: v6e-256, runtime_version: r, zones: [z], "
			   "count: 1 }\n";
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	setenv("USER", "alice", 1);
	int rc = tpf_fleet_parse(&f, "/srv/fleets/fleet.yaml", text, strlen(text), &d);
	CHECK_INT(rc, 0);
	CHECK_INT(d.n, 0);
	if (!rc) {
		CHECK_STR(f.dir, "/srv/fleets");
		CHECK_STR(f.state_path, "/srv/fleets/tpuform.state.json");
		CHECK_STR(f.local.root, "/srv/fleets/.tpuform/local");
		CHECKF(f.local.create_delay == 1.0, "create_delay %g", f.local.create_delay);
		CHECK(f.source.repo == NULL);
		CHECK_STR(f.source.ref, "HEAD");
		CHECK_INT(f.source.transfer, TPF_TRANSFER_CLONE);
		CHECK_STR(f.ssh.user, "alice");
		CHECK(f.ssh.private_key == NULL);
		CHECK_INT(f.ssh.port, 22);
		CHECK_INT(f.ssh.address, TPF_SSH_ADDRESS_AUTO);
		CHECK_INT(f.policy.restart, TPF_RESTART_ON_FAILURE);
		CHECK_INT(f.policy.max_restarts, 3);
		CHECK(f.setup == NULL);
		CHECK_INT(f.nquota, 0);
		CHECK_INT(f.secrets.n, 0);
		CHECK(f.groups[0].setup == NULL);
		CHECK_STR(f.groups[0].run, "train");
		CHECK_STR(tpf_kvlist_get(&f.groups[0].env, "A"), "x");
		CHECK_INT(f.groups[0].workers, 64);
		CHECK_INT(f.groups[0].preemptible, 0);
		CHECK_INT(f.groups[0].spot, 0);
	}
	tpf_fleet_release(&f);

	unsetenv("USER");
	rc = tpf_fleet_parse(&f, "fleet.yaml", text, strlen(text), &d);
	CHECK_INT(rc, 0);
	if (!rc) {
		CHECK_STR(f.ssh.user, "root");
		CHECK_STR(f.state_path, "tpuform.state.json");
		CHECK_STR(f.local.root, ".tpuform/local");
	}
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void test_config__gcp_and_paths(void)
{
	const char *text = "fleet: f\n"
			   "provider:\n"
			   "  gcp: { project: my-trc-project, credentials: keys/sa.json, "
			   "endpoint: \"http://127.0.0.1:8080/\" }\n"
			   "source: { repo: ../model }\n"
			   "run: train\n"
			   "groups:\n"
			   "  - { name: g, accelerator_type: v4-16, runtime_version: r, zones: z, "
			   "count: 3, run: other }\n";
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	int rc = tpf_fleet_parse(&f, "deploy/fleet.yaml", text, strlen(text), &d);
	CHECK_INT(rc, 0);
	if (!rc) {
		CHECK_INT(f.provider, TPF_PROVIDER_GCP);
		CHECK_STR(f.gcp.project, "my-trc-project");
		CHECK_STR(f.gcp.credentials, "deploy/keys/sa.json");
		CHECK_STR(f.gcp.endpoint, "http://127.0.0.1:8080");
		CHECK(f.local.root == NULL);
		CHECK_STR(f.source.repo, "deploy/../model");
		CHECK_STR(f.state_path, "deploy/tpuform.state.json");
		CHECK_INT(f.groups[0].workers, 2);
		CHECK_STR(f.groups[0].run, "other");
	}
	tpf_fleet_release(&f);

	/* scp-style and absolute repos are not joined with the directory */
	const char *scp = "fleet: f\nprovider: { local: {} }\nrun: x\n"
			  "source: { repo: \"git@github.com:org/model.git\" }\n" GROUP;
	rc = tpf_fleet_parse(&f, "deploy/fleet.yaml", scp, strlen(scp), &d);
	CHECK_INT(rc, 0);
	if (!rc)
		CHECK_STR(f.source.repo, "git@github.com:org/model.git");
	tpf_fleet_release(&f);
	const char *abs = "fleet: f\nprovider: { local: {} }\nrun: x\n"
			  "source: { repo: /srv/git/model }\n" GROUP;
	rc = tpf_fleet_parse(&f, "deploy/fleet.yaml", abs, strlen(abs), &d);
	CHECK_INT(rc, 0);
	if (!rc)
		CHECK_STR(f.source.repo, "/srv/git/model");
	tpf_fleet_release(&f);
	CHECK_INT(d.n, 0);
	tpf_diags_release(&d);
}

static int mentions(const struct tpf_diags *d, const char *s)
{
	for (size_t i = 0; i < d->n; i++) {
		if (strstr(d->items[i].summary, s))
			return 1;
		if (d->items[i].detail && strstr(d->items[i].detail, s))
			return 1;
	}
	return 0;
}

/* Secret values, resolved or literal, never reach a diagnostic. */
static void test_config__secrets_never_in_diagnostics(void)
{
	static const char *const texts[] = {
		HEAD GROUP "env: { CLASH: x }\nsecrets: { CLASH: \"${TPF_TEST_SECRET}\", "
			   "OK: \"${TPF_TEST_SECRET}\", LIT: hunter2-literal, bad-name: "
			   "hunter2-literal, TPUFORM_X: hunter2-literal, NEST: [hunter2-literal], "
			   "BROKEN: \"hunter2-literal${\" }\n"
			   "restart: nope\n",
		HEAD GROUP "secrets: hunter2-literal\n",
		HEAD GROUP "secrets: [hunter2-literal]\n",
		HEAD GROUP "secrets: { A: hunter2-literal, A: s3cr3t-value }\n",
		HEAD GROUP "secrets: { A: \"hunter2-literal\n",
		HEAD GROUP "secrets: { GONE: \"hunter2-literal${TPF_TEST_UNSET_VAR}\", "
			   "OK: \"${TPF_TEST_SECRET}\" }\n",
	};
	setenv("TPF_TEST_SECRET", "s3cr3t-value", 1);
	unsetenv("TPF_TEST_UNSET_VAR");
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct tpf_diags d = TPF_DIAGS_INIT;
		struct tpf_fleet f;
		int rc = parse_resolved(&f, texts[i], strlen(texts[i]), &d);
		CHECKF(rc == TPF_ERROR, "case %zu must fail", i);
		if (i == 5)
			CHECK(mentions(&d, "secret 'GONE' needs environment variable 'TPF_TEST_UNSET_VAR'"));
		CHECKF(d.n > 0, "case %zu has diagnostics", i);
		CHECKF(!mentions(&d, "s3cr3t"), "case %zu: resolved secret leaked", i);
		CHECKF(!mentions(&d, "hunter2"), "case %zu: literal secret leaked", i);
		tpf_diags_release(&d);
	}
	/* ...while the first case did report each secret problem by name. */
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	tpf_fleet_parse(&f, "fleet.yaml", texts[0], strlen(texts[0]), &d);
	CHECK(mentions(&d, "secret 'CLASH' has the same name"));
	CHECK(mentions(&d, "secret name 'bad-name'"));
	CHECK(mentions(&d, "secret name 'TPUFORM_X' is reserved"));
	CHECK(mentions(&d, "secret 'NEST' must be text such as \"${NEST}\", got a list"));
	CHECK(mentions(&d, "secret 'BROKEN' has a malformed"));
	CHECK(!mentions(&d, "secret 'OK'"));
	CHECK(!mentions(&d, "secret 'LIT'"));
	CHECK_INT(d.n, 6);
	tpf_diags_release(&d);
}

static void test_config__load_from_file(void)
{
	char *dir = unit_tmpdir();
	char *path = xasprintf("%s/fleet.yaml", dir);
	const char *text = HEAD "state: { path: s.json }\n" GROUP;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;

	CHECK_INT(tpf_write_file_atomic(path, text, strlen(text), 0644, &d), 0);
	CHECK_INT(tpf_fleet_load(&f, path, &d), 0);
	char *want = xasprintf("%s/s.json", dir);
	CHECK_STR(f.state_path, want);
	CHECK_STR(f.path, path);
	free(want);
	tpf_fleet_release(&f);

	char *missing = xasprintf("%s/none.yaml", dir);
	CHECK(tpf_fleet_load(&f, missing, &d) < 0);
	CHECK(f.name == NULL);
	char *msg = xasprintf("fleet file '%s' does not exist", missing);
	CHECK_STR(d.n ? d.items[d.n - 1].summary : NULL, msg);
	free(msg);
	free(missing);

	/* Errors from a file carry the path as given. */
	const char *broken = "fleet: f\nprovider: { local: {} }\nrun: x\ngroups: []\n";
	CHECK_INT(tpf_write_file_atomic(path, broken, strlen(broken), 0644, &d), 0);
	tpf_diags_release(&d);
	CHECK(tpf_fleet_load(&f, path, &d) == TPF_ERROR);
	msg = xasprintf("%s:4:9: 'groups' must list at least one group", path);
	CHECK_STR(d.n ? d.items[0].summary : NULL, msg);
	free(msg);
	tpf_diags_release(&d);
	tpf_remove_tree(dir, &d);
	free(path);
	free(dir);
}

/* No fleet-wide run is fine when every group has its own. */
static void test_config__run_per_group(void)
{
	const char *text = "fleet: f\nprovider: { local: {} }\nsetup: s\ngroups:\n"
			   "  - { name: a, accelerator_type: v2-8, runtime_version: r, zones: [z], "
			   "count: 1, run: ra }\n"
			   "  - { name: b, accelerator_type: v3-32, runtime_version: r, zones: [y, z], "
			   "count: 1, run: rb, setup: ~ }\n";
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	CHECK_INT(tpf_fleet_parse(&f, "fleet.yaml", text, strlen(text), &d), 0);
	CHECK_INT(d.n, 0);
	if (f.ngroups == 2) {
		CHECK(f.run == NULL);
		CHECK_STR(f.groups[0].run, "ra");
		CHECK_STR(f.groups[0].setup, "s");
		CHECK_STR(f.groups[1].run, "rb");
		CHECK(f.groups[1].setup == NULL);
		CHECK_INT(f.groups[1].workers, 4);
		size_t nz;
		const char **zones = tpf_fleet_zones(&f, &nz);
		CHECK_INT(nz, 2);
		if (nz == 2) {
			CHECK_STR(zones[0], "z");
			CHECK_STR(zones[1], "y");
		}
		free(zones);
	}
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

/* The job policy keys: fleet-wide defaults, group overrides, restart units. */
static void test_config__job_policy(void)
{
	const char *text = "fleet: f\nprovider: { local: {} }\nrun: r\nstall_timeout: 30m\n"
			   "restart_backoff: 5s\ngroups:\n"
			   "  - { name: a, accelerator_type: v4-16, runtime_version: r, zones: [z], "
			   "count: 1 }\n"
			   "  - { name: b, accelerator_type: v4-16, runtime_version: r, zones: [z], "
			   "count: 1, restart_scope: worker, stall_timeout: 90s, on_success: delete }\n"
			   "  - { name: c, accelerator_type: v2-8, runtime_version: r, zones: [z], "
			   "count: 1, restart_backoff: 0s }\n";
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	CHECK_INT(tpf_fleet_parse(&f, "fleet.yaml", text, strlen(text), &d), 0);
	CHECK_INT(d.n, 0);
	if (f.ngroups == 3) {
		const struct tpf_group *a = &f.groups[0], *b = &f.groups[1], *c = &f.groups[2];
		CHECK(f.policy.stall_timeout == 1800 && f.policy.restart_backoff == 5);
		CHECK(a->policy.stall_timeout == 1800 && a->policy.restart_backoff == 5);
		CHECK_INT(a->policy.on_success, TPF_ON_SUCCESS_KEEP);
		CHECK_INT(tpf_group_restart_scope(a), TPF_SCOPE_NODE); /* multi-host default */
		CHECK_INT(tpf_group_restart_scope(b), TPF_SCOPE_WORKER);
		CHECK(b->policy.stall_timeout == 90);
		CHECK_INT(b->policy.on_success, TPF_ON_SUCCESS_DELETE);
		CHECK_INT(tpf_group_restart_scope(c), TPF_SCOPE_WORKER); /* one worker */
		CHECK(c->policy.restart_backoff == 0 && c->policy.stall_timeout == 1800);
		CHECK(tpf_fleet_job_policy(&f, "b") == &b->policy);
		CHECK(tpf_fleet_job_policy(&f, "gone") == &f.policy);
	}
	CHECK_INT(tpf_group_restart_scope(NULL), TPF_SCOPE_WORKER);
	tpf_fleet_release(&f);
	/* Defaults: no stall detection, 10 s backoff, keep. */
	const char *plain = HEAD GROUP;
	CHECK_INT(tpf_fleet_parse(&f, "fleet.yaml", plain, strlen(plain), &d), 0);
	CHECK(f.policy.stall_timeout == 0 && f.policy.restart_backoff == 10);
	CHECK_INT(f.policy.on_success, TPF_ON_SUCCESS_KEEP);
	CHECK_INT(f.policy.scope, TPF_SCOPE_AUTO);
	/* No exit-code list: every code but 0 restarts (the behaviour before
	 * the key), signals' unknown codes too. */
	CHECK_INT(f.policy.exit_codes_set, 0);
	CHECK(!tpf_policy_restarts_on(&f.policy, 0) && tpf_policy_restarts_on(&f.policy, 3) &&
	      tpf_policy_restarts_on(&f.policy, 255) && tpf_policy_restarts_on(&f.policy, -1));
	tpf_fleet_release(&f);
	/* xpk's default spelled out; a group's list replaces the fleet's. */
	const char *codes = HEAD "restart_on_exit_codes: [42, 127-255]\ngroups:\n"
			    "  - { name: g, accelerator_type: v2-8, runtime_version: r, zones: [z], "
			    "count: 1 }\n"
			    "  - { name: h, accelerator_type: v2-8, runtime_version: r, zones: [z], "
			    "count: 1, never_restart_on: [0, 3] }\n";
	CHECK_INT(tpf_fleet_parse(&f, "fleet.yaml", codes, strlen(codes), &d), 0);
	if (f.ngroups == 2) {
		const struct tpf_job_policy *g = &f.groups[0].policy, *h = &f.groups[1].policy;
		CHECK(tpf_policy_restarts_on(g, 42) && tpf_policy_restarts_on(g, 127) &&
		      tpf_policy_restarts_on(g, 255));
		CHECK(!tpf_policy_restarts_on(g, 1) && !tpf_policy_restarts_on(g, 126) &&
		      !tpf_policy_restarts_on(g, 43) && !tpf_policy_restarts_on(g, 0));
		CHECK(!tpf_policy_restarts_on(h, 3) && !tpf_policy_restarts_on(h, 0) &&
		      tpf_policy_restarts_on(h, 1) && tpf_policy_restarts_on(h, 42));
		/* the preflight and disruption defaults */
		CHECK_INT(g->tpu_busy, TPF_TPU_BUSY_REFUSE);
		CHECK_INT(g->preflight_failures, 2);
		CHECK(g->preflight == NULL && g->preflight_timeout == 300);
		CHECK_STR(tpf_disruption_signal_name(g->disruption_signal), "SIGTERM");
		CHECK(g->disruption_grace == 15);
	}
	tpf_fleet_release(&f);
	const char *pf = HEAD "preflight: nvidia-smi\ntpu_busy: kill\n"
			 "on_disruption: { signal: USR1, grace: 30s }\ngroups:\n"
			 "  - { name: g, accelerator_type: v2-8, runtime_version: r, zones: [z], "
			 "count: 1, preflight: 'python3 -c 1', tpu_busy: wait }\n";
	CHECK_INT(tpf_fleet_parse(&f, "fleet.yaml", pf, strlen(pf), &d), 0);
	if (f.ngroups == 1) {
		const struct tpf_job_policy *g = &f.groups[0].policy;
		CHECK_STR(g->preflight, "python3 -c 1");
		CHECK_STR(f.policy.preflight, "nvidia-smi");
		CHECK_INT(g->tpu_busy, TPF_TPU_BUSY_WAIT);
		CHECK_STR(tpf_disruption_signal_name(g->disruption_signal), "SIGUSR1");
		CHECK(g->disruption_grace == 30);
	}
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

/* restart and max_restarts per group (issue 26): a sweep group and a
 * training group with their own budgets of restarts; a group without the
 * key takes the fleet's; the fleet's `restart: always` with on_success:
 * delete is fine where the group restarts on failure only. */
static void test_config__restart_keys_per_group(void)
{
	const char *text = "fleet: f\nprovider: { local: {} }\nrun: r\nmax_restarts: 5\n"
			   "restart: always\ngroups:\n"
			   "  - { name: sweep, accelerator_type: v2-8, runtime_version: r, zones: [z], "
			   "count: 1, max_restarts: 0, restart: on-failure, on_success: delete }\n"
			   "  - { name: train, accelerator_type: v2-8, runtime_version: r, zones: [z], "
			   "count: 1, max_restarts: 20 }\n"
			   "  - { name: eval, accelerator_type: v2-8, runtime_version: r, zones: [z], "
			   "count: 1, restart: never }\n";
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	CHECK_INT(tpf_fleet_parse(&f, "fleet.yaml", text, strlen(text), &d), 0);
	for (size_t i = 0; i < d.n; i++)
		printf("# %s\n", d.items[i].summary);
	CHECK_INT(d.n, 0);
	if (f.ngroups == 3) {
		CHECK_INT(f.policy.max_restarts, 5);
		CHECK_INT(f.policy.restart, TPF_RESTART_ALWAYS);
		CHECK_INT(f.groups[0].policy.max_restarts, 0);
		CHECK_INT(f.groups[0].policy.restart, TPF_RESTART_ON_FAILURE);
		CHECK_INT(f.groups[1].policy.max_restarts, 20);
		CHECK_INT(f.groups[1].policy.restart, TPF_RESTART_ALWAYS);
		CHECK_INT(f.groups[2].policy.max_restarts, 5);
		CHECK_INT(f.groups[2].policy.restart, TPF_RESTART_NEVER);
	}
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

/* The buffer need not be NUL-terminated: only len bytes are read. */
static void test_config__length_bounded(void)
{
	const char *text = HEAD GROUP "colour: red\n";
	size_t len = strlen(HEAD GROUP);
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	CHECK_INT(tpf_fleet_parse(&f, "fleet.yaml", text, len, &d), 0);
	CHECK_INT(d.n, 0);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

/* Hostile input ends at once: nesting past the depth limit is refused at
 * the first too-deep collection, with its position. */
static void test_config__nesting_depth_limit(void)
{
	struct tpf_buf text = TPF_BUF_INIT;
	size_t deep = 100000;
	tpf_buf_adds(&text, HEAD GROUP "env: { A: ");
	for (size_t i = 0; i < deep; i++)
		tpf_buf_addch(&text, '[');
	for (size_t i = 0; i < deep; i++)
		tpf_buf_addch(&text, ']');
	tpf_buf_adds(&text, " }\n");
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	CHECK_INT(tpf_fleet_parse(&f, "fleet.yaml", text.buf, text.len, &d), TPF_ERROR);
	/* env's mapping is depth 2, so the 63rd '[' is depth 65: column 11 + 62. */
	CHECKF(d.n >= 1 && !strcmp(d.items[0].summary, "fleet.yaml:6:73: nesting deeper than 64 levels"),
	       "got: %s", d.n ? d.items[0].summary : "(none)");
	tpf_fleet_release(&f);
	tpf_diags_release(&d);

	/* 64 levels are not refused for depth (the value is then the wrong type). */
	tpf_buf_reset(&text);
	tpf_buf_adds(&text, HEAD GROUP "env: { A: ");
	for (int i = 0; i < 62; i++)
		tpf_buf_addch(&text, '[');
	for (int i = 0; i < 62; i++)
		tpf_buf_addch(&text, ']');
	tpf_buf_adds(&text, " }\n");
	tpf_fleet_parse(&f, "fleet.yaml", text.buf, text.len, &d);
	int depth_refused = 0;
	for (size_t i = 0; i < d.n; i++)
		depth_refused |= strstr(d.items[i].summary, "nesting deeper") != NULL;
	CHECKF(d.n >= 1 && !depth_refused, "64 levels: refused for its type, not its depth");
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
	tpf_buf_release(&text);
}

/* A fleet file over the size limit is refused without being read whole:
 * /dev/zero, which never ends, ends at the limit. */
static void test_config__size_limit(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	CHECK_INT(tpf_fleet_load(&f, "/dev/zero", &d), TPF_ERROR);
	CHECKF(d.n == 1 && strstr(d.items[0].summary, "'/dev/zero' is larger than 16 MiB"),
	       "got: %s", d.n ? d.items[0].summary : "(none)");
	tpf_fleet_release(&f);
	tpf_diags_release(&d);

	char *dir = unit_tmpdir();
	char *path = xasprintf("%s/big.yaml", dir);
	FILE *fp = fopen(path, "w");
	CHECK(fp != NULL);
	if (fp) {
		fputs(HEAD GROUP, fp);
		/* A comment pads the file to exactly one byte over the limit. */
		long pad = (long)TPF_FLEET_FILE_MAX + 1 - (long)strlen(HEAD GROUP) - 2;
		fputc('#', fp);
		for (long i = 0; i < pad; i++)
			fputc('x', fp);
		fputc('\n', fp);
		fclose(fp);
	}
	CHECK_INT(tpf_fleet_load(&f, path, &d), TPF_ERROR);
	CHECKF(d.n == 1 && strstr(d.items[0].summary, "the limit for a fleet file"), "got: %s",
	       d.n ? d.items[0].summary : "(none)");
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
	remove(path);
	free(path);
	free(dir);
}

/* Parse HEAD GROUP plus `extra`; returns the first diagnostic's summary
 * (static copy) or "" when the file is valid. */
static const char *first_error(const char *extra)
{
	static char out[512];
	struct tpf_buf text = TPF_BUF_INIT;
	tpf_buf_adds(&text, HEAD GROUP);
	tpf_buf_adds(&text, extra);
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	parse_resolved(&f, text.buf, text.len, &d);
	snprintf(out, sizeof(out), "%s", d.n ? d.items[0].summary : "");
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
	tpf_buf_release(&text);
	return out;
}

static char *repeat(char c, size_t n)
{
	char *s = xmalloc(n + 1);
	memset(s, c, n);
	s[n] = 0;
	return s;
}

/* What every worker's execve takes (config/config_limits.h): one string is
 * at most 131072 bytes with its NUL; all together at most 1 MiB. */
static void test_config__worker_limits(void)
{
	char *v = repeat('x', 131069); /* "A=" + v + NUL = 131072: fits */
	char *line = xasprintf("env: { A: %s }\n", v);
	CHECK_STR(first_error(line), "");
	free(line);
	free(v);
	v = repeat('x', 131070);
	line = xasprintf("env: { A: %s }\n", v);
	CHECK_STR(first_error(line),
		  "fleet.yaml:5:5: in group 'g': env 'A' (NAME=value) is 131073 bytes; a worker "
		  "accepts at most 131072");
	free(line);
	free(v);

	v = repeat('y', 131071); /* run + NUL = 131072: fits */
	line = xasprintf("setup: %s\n", v);
	CHECK_STR(first_error(line), "");
	free(line);
	free(v);
	v = repeat('y', 131072);
	line = xasprintf("setup: %s\n", v);
	CHECK_STR(first_error(line),
		  "fleet.yaml:5:5: in group 'g': setup is 131073 bytes; a worker accepts at most 131072");
	free(line);
	free(v);

	/* Nine values of 120,000 bytes each fit one by one, not together. */
	struct tpf_buf many = TPF_BUF_INIT;
	v = repeat('z', 120000);
	tpf_buf_adds(&many, "env:\n");
	for (int i = 0; i < 9; i++)
		tpf_buf_addf(&many, "  V%d: %s\n", i, v);
	CHECKF(strstr(first_error(many.buf), "env, secrets and the longer of setup and run together is "
					     "1080042 bytes; a worker accepts at most 1048576") != NULL,
	       "got: %s", first_error(many.buf));
	tpf_buf_release(&many);

	/* A secret is measured, never shown. */
	char *secret = repeat('s', 140000);
	setenv("TPF_TEST_BIG_SECRET", secret, 1);
	const char *e = first_error("secrets: { TOKEN: \"${TPF_TEST_BIG_SECRET}\" }\n");
	CHECKF(strstr(e, "secret 'TOKEN' (NAME=value) is 140007 bytes") && !strstr(e, "sss"),
	       "got: %.200s", e);
	unsetenv("TPF_TEST_BIG_SECRET");
	free(secret);
	free(v);
}

/* ${VAR} only: "$VAR" is a forgotten brace, "$$" a literal '$', and an
 * empty variable is as good as unset. */
static void test_config__secret_references(void)
{
	setenv("TPF_TEST_TOKEN", "t0ken", 1);
	setenv("TPF_TEST_EMPTY", "", 1);
	CHECK_STR(first_error("secrets: { A: \"$TPF_TEST_TOKEN\" }\n"),
		  "fleet.yaml:6:15: secret 'A' refers to $TPF_TEST_TOKEN without braces");
	CHECK_STR(first_error("secrets: { A: \"x${TPF_TEST_EMPTY}\" }\n"),
		  "fleet.yaml:6:15: secret 'A' needs environment variable 'TPF_TEST_EMPTY', which is "
		  "empty");
	CHECK_STR(first_error("secrets: { A: \"pa$$word-${TPF_TEST_TOKEN}-$1\" }\n"), "");

	struct tpf_buf text = TPF_BUF_INIT;
	tpf_buf_adds(&text, HEAD GROUP "secrets: { A: \"pa$$word-${TPF_TEST_TOKEN}-$1\" }\n");
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	CHECK_INT(parse_resolved(&f, text.buf, text.len, &d), 0);
	CHECK_STR(tpf_kvlist_get(&f.secrets, "A"), "pa$word-t0ken-$1");
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
	tpf_buf_release(&text);
	unsetenv("TPF_TEST_TOKEN");
	unsetenv("TPF_TEST_EMPTY");
}

/* Parsing never reads the secrets' variables: show, logs, exec, state and
 * destroy work without them. Resolving does, with the secret's position. */
static void test_config__secrets_resolved_only_on_demand(void)
{
	const char *text = HEAD GROUP "secrets:\n  KEY: \"${TPF_TEST_UNSET_VAR}\"\n";
	unsetenv("TPF_TEST_UNSET_VAR");
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	CHECK_INT(tpf_fleet_parse(&f, "fleet.yaml", text, strlen(text), &d), 0);
	CHECK_INT(d.n, 0);
	CHECK_INT(f.nsecret_refs, 1);
	CHECK_INT(f.secrets_resolved, 0);
	CHECK_INT(tpf_fleet_resolve_secrets(&f, &d), TPF_ERROR);
	CHECK_STR(d.n ? d.items[0].summary : NULL,
		  "fleet.yaml:7:8: secret 'KEY' needs environment variable 'TPF_TEST_UNSET_VAR', which "
		  "is not set");
	CHECK_INT(f.secrets.n, 0);
	tpf_diags_release(&d);
	setenv("TPF_TEST_UNSET_VAR", "v4lue", 1);
	CHECK_INT(tpf_fleet_resolve_secrets(&f, &d), 0);
	CHECK_INT(f.secrets_resolved, 1);
	CHECK_STR(tpf_kvlist_get(&f.secrets, "KEY"), "v4lue");
	CHECK_INT(tpf_fleet_resolve_secrets(&f, &d), 0); /* idempotent */
	CHECK_INT(f.secrets.n, 1);
	unsetenv("TPF_TEST_UNSET_VAR");
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

int main(void)
{
	RUN(test_config__malformed_first_error);
	RUN(test_config__details);
	RUN(test_config__collects_all_errors);
	RUN(test_config__full_file);
	RUN(test_config__defaults);
	RUN(test_config__gcp_and_paths);
	RUN(test_config__secrets_never_in_diagnostics);
	RUN(test_config__load_from_file);
	RUN(test_config__run_per_group);
	RUN(test_config__job_policy);
	RUN(test_config__restart_keys_per_group);
	RUN(test_config__length_bounded);
	RUN(test_config__nesting_depth_limit);
	RUN(test_config__size_limit);
	RUN(test_config__worker_limits);
	RUN(test_config__secret_references);
	RUN(test_config__secrets_resolved_only_on_demand);
	return unit_done();
}

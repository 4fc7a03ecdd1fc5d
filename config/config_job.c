/*
 * The job policy keys, fleet-wide and per group (config/config.h struct
 * tpf_job_policy): restart, max_restarts, restart_scope, restart_backoff,
 * stall_timeout, on_success, restart_on_exit_codes / never_restart_on,
 * the preflight keys and on_disruption. What they do is docs/design.md
 * section 5 ("Restart units", "Stalled jobs", "Completion") and
 * docs/fleet-file.md's key table.
 */
#include "config/config_walk.h"
#include "util/number.h"
#include "util/xalloc.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const restart_words[] = { "on-failure", "always", "never", NULL };
static const char *const scope_words[] = { "node", "worker", NULL };
static const char *const on_success_words[] = { "keep", "delete", NULL };
static const char *const tpu_busy_words[] = { "refuse", "wait", "kill", NULL };

/* The signals a job may ask for on a disruption: ones a job can catch and
 * that mean "stop soon" or "checkpoint now". */
static const struct {
	const char *name;
	int sig;
} disruption_signals[] = {
	{ "SIGTERM", SIGTERM }, { "SIGINT", SIGINT },	{ "SIGUSR1", SIGUSR1 },
	{ "SIGUSR2", SIGUSR2 }, { "SIGHUP", SIGHUP },	{ "SIGQUIT", SIGQUIT },
};
static const char *const disruption_keys[] = { "signal", "grace", NULL };

const char *tpf_disruption_signal_name(int sig)
{
	for (size_t i = 0; i < sizeof(disruption_signals) / sizeof(disruption_signals[0]); i++)
		if (disruption_signals[i].sig == sig)
			return disruption_signals[i].name;
	return "SIGTERM";
}

/* on_disruption: { signal: SIGUSR1, grace: 30s } into p. */
static void read_disruption(struct cfg *c, yaml_node_t *v, struct tpf_job_policy *p)
{
	struct cfg_map m;
	yaml_node_t *x;
	if (cfg_map_open(&m, c, v, "'on_disruption'", "a mapping such as { signal: SIGTERM, grace: 30s }",
			 disruption_keys, "in on_disruption", "on_disruption"))
		return;
	if ((x = cfg_map_get(&m, "signal"))) {
		const char *t = cfg_want_text(c, x, "on_disruption.signal", "a signal name", 0);
		size_t i, n = sizeof(disruption_signals) / sizeof(disruption_signals[0]);
		for (i = 0; t && i < n; i++)
			if (!strcmp(t, disruption_signals[i].name) ||
			    !strcmp(t, disruption_signals[i].name + 3))
				break;
		if (t && i == n)
			cfg_error(c, x, "a job can catch these and checkpoint; SIGKILL and SIGSTOP "
				  "cannot be caught",
				  "'on_disruption.signal' must be one of SIGTERM, SIGINT, SIGUSR1, "
				  "SIGUSR2, SIGHUP or SIGQUIT, got '%s'", t);
		else if (t)
			p->disruption_signal = disruption_signals[i].sig;
	}
	if ((x = cfg_map_get(&m, "grace")) &&
	    cfg_want_duration(c, x, "on_disruption.grace", &p->disruption_grace) == 0 &&
	    (p->disruption_grace < 1 || p->disruption_grace > 100)) {
		cfg_error(c, x, "tpuform stops a job within its 2 minute stop timeout, and a spot "
			  "VM has 30 s after its preemption notice",
			  "'on_disruption.grace' must be between 1s and 100s");
		p->disruption_grace = TPF_DISRUPTION_GRACE_DEFAULT;
	}
}

const char *tpf_tpu_busy_word(enum tpf_tpu_busy b)
{
	return (unsigned)b < 3 ? tpu_busy_words[b] : "refuse";
}

void tpf_job_policy_release(struct tpf_job_policy *p)
{
	free(p->preflight);
	p->preflight = NULL;
}

void tpf_job_policy_copy(struct tpf_job_policy *dst, const struct tpf_job_policy *src)
{
	*dst = *src;
	dst->preflight = src->preflight ? xstrdup(src->preflight) : NULL;
}

void cfg_job_policy_defaults(struct tpf_job_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->restart = TPF_RESTART_ON_FAILURE;
	p->max_restarts = TPF_MAX_RESTARTS_DEFAULT;
	p->scope = TPF_SCOPE_AUTO;
	p->restart_backoff = TPF_RESTART_BACKOFF_DEFAULT;
	p->stall_timeout = 0;
	p->on_success = TPF_ON_SUCCESS_KEEP;
	p->tpu_busy = TPF_TPU_BUSY_REFUSE;
	p->preflight_timeout = TPF_PREFLIGHT_TIMEOUT_DEFAULT;
	p->preflight_failures = TPF_PREFLIGHT_FAILURES_DEFAULT;
	p->disruption_signal = SIGTERM;
	p->disruption_grace = TPF_DISRUPTION_GRACE_DEFAULT;
}

/* tpu_busy, preflight, preflight_timeout, preflight_failures and
 * require_tpu_devices of mapping m into p. */
static void read_preflight(struct cfg *c, const struct cfg_map *m, struct tpf_job_policy *p)
{
	yaml_node_t *x;
	int e;
	if ((x = cfg_map_get(m, "tpu_busy")) &&
	    cfg_want_enum(c, x, "tpu_busy", tpu_busy_words, "refuse, wait or kill", &e) == 0)
		p->tpu_busy = (enum tpf_tpu_busy)e;
	if ((x = cfg_map_get(m, "preflight"))) {
		const char *t = cfg_want_text(c, x, "preflight", "a shell command", 1);
		if (t) {
			free(p->preflight);
			p->preflight = *t ? xstrdup(t) : NULL;
		}
	}
	if ((x = cfg_map_get(m, "preflight_timeout")) &&
	    cfg_want_duration(c, x, "preflight_timeout", &p->preflight_timeout) == 0 &&
	    (p->preflight_timeout < 1 || p->preflight_timeout > 540)) {
		cfg_error(c, x, "a start must finish within tpuform's 10 minute start timeout",
			  "'preflight_timeout' must be between 1s and 9m");
		p->preflight_timeout = TPF_PREFLIGHT_TIMEOUT_DEFAULT;
	}
	if ((x = cfg_map_get(m, "preflight_failures")))
		cfg_want_uint(c, x, "preflight_failures", "a whole number >= 1", 1, 1000,
			      &p->preflight_failures);
	if ((x = cfg_map_get(m, "require_tpu_devices")))
		cfg_want_bool(c, x, "require_tpu_devices", &p->require_tpu_devices);
}

int tpf_policy_restarts_on(const struct tpf_job_policy *p, int code)
{
	if (code < 0 || code > 255)
		return 1;
	if (!p || !p->exit_codes_set)
		return code != 0;
	return (p->restart_codes[code / 8] >> (code % 8)) & 1;
}

/* One item of an exit-code list: "42" or "128-255", 0..255. Sets *lo and
 * *hi; 0, or -1 after the error. */
static int exit_code_item(struct cfg *c, yaml_node_t *x, const char *name, int *lo, int *hi)
{
	const char *t = cfg_text(x);
	const char *end = NULL;
	double a = -1, b = -1; /* numbers of util/number.h's grammar */
	if (tpf_parse_number_prefix(t, &a, &end) == 0) {
		b = a;
		if (*end == '-' && tpf_parse_number_prefix(end + 1, &b, &end) < 0)
			b = -1;
	}
	if (a < 0 || !end || *end || a > 255 || b > 255 || b < a || a != (int)a || b != (int)b) {
		cfg_type_error(c, x, name, "exit codes 0-255 or ranges like 128-255",
			       "a job's exit status is 0-255 (a shell gives 128+N for signal N); "
			       "e.g. [42, 128-255]");
		return -1;
	}
	*lo = (int)a;
	*hi = (int)b;
	return 0;
}

/* restart_on_exit_codes or never_restart_on (invert) at x into p. */
static void read_exit_codes(struct cfg *c, yaml_node_t *x, const char *name, int invert,
			    struct tpf_job_policy *p)
{
	if (x->type != YAML_SEQUENCE_NODE) {
		cfg_type_error(c, x, name, "a list of exit codes", "e.g. [42, 128-255]");
		return;
	}
	unsigned char bits[32];
	memset(bits, 0, sizeof(bits));
	int ok = 1;
	for (yaml_node_item_t *it = x->data.sequence.items.start; it < x->data.sequence.items.top;
	     it++) {
		int lo, hi;
		if (exit_code_item(c, cfg_node(c, *it), name, &lo, &hi)) {
			ok = 0;
			continue;
		}
		for (int k = lo; k <= hi; k++)
			bits[k / 8] |= (unsigned char)(1u << (k % 8));
	}
	if (!ok)
		return;
	for (size_t i = 0; i < sizeof(bits); i++)
		p->restart_codes[i] = invert ? (unsigned char)~bits[i] : bits[i];
	if (invert) /* never_restart_on: 0 still ends a run as a success */
		p->restart_codes[0] &= (unsigned char)~1u;
	p->exit_codes_set = 1;
}

void cfg_read_job_policy(struct cfg *c, const struct cfg_map *m, struct tpf_job_policy *p)
{
	yaml_node_t *x;
	int e;
	if ((x = cfg_map_get(m, "restart")) &&
	    cfg_want_enum(c, x, "restart", restart_words, "one of always, on-failure or never", &e) == 0)
		p->restart = (enum tpf_restart)e;
	if ((x = cfg_map_get(m, "max_restarts")))
		cfg_want_uint(c, x, "max_restarts", "a whole number >= 0", 0, INT_MAX, &p->max_restarts);
	if ((x = cfg_map_get(m, "restart_scope")) &&
	    cfg_want_enum(c, x, "restart_scope", scope_words, "node or worker", &e) == 0)
		p->scope = e == 0 ? TPF_SCOPE_NODE : TPF_SCOPE_WORKER;
	if ((x = cfg_map_get(m, "restart_backoff")))
		cfg_want_duration(c, x, "restart_backoff", &p->restart_backoff);
	if ((x = cfg_map_get(m, "stall_timeout")))
		cfg_want_duration(c, x, "stall_timeout", &p->stall_timeout);
	if ((x = cfg_map_get(m, "on_success")) &&
	    cfg_want_enum(c, x, "on_success", on_success_words, "keep or delete", &e) == 0)
		p->on_success = e == 0 ? TPF_ON_SUCCESS_KEEP : TPF_ON_SUCCESS_DELETE;
	read_preflight(c, m, p);
	if ((x = cfg_map_get(m, "on_disruption")))
		read_disruption(c, x, p);
	yaml_node_t *on = cfg_map_get(m, "restart_on_exit_codes");
	yaml_node_t *off = cfg_map_get(m, "never_restart_on");
	if (on && off)
		cfg_error(c, off, "keep one: restart_on_exit_codes lists the codes that restart, "
			  "never_restart_on the codes that do not",
			  "'never_restart_on' cannot be given with 'restart_on_exit_codes'");
	else if (on)
		read_exit_codes(c, on, "restart_on_exit_codes", 0, p);
	else if (off)
		read_exit_codes(c, off, "never_restart_on", 1, p);
}

void cfg_check_job_policy(struct cfg *c, const struct cfg_map *m, const struct tpf_job_policy *p)
{
	if (p->restart != TPF_RESTART_ALWAYS || p->on_success != TPF_ON_SUCCESS_DELETE)
		return;
	yaml_node_t *at = cfg_map_get(m, "restart");
	if (!at)
		at = cfg_map_get(m, "on_success");
	if (at)
		cfg_error(c, at,
			  "restart: always starts a job again when it exits 0, so its node never "
			  "completes; use restart: on-failure with on_success: delete",
			  "'on_success: delete' cannot apply with 'restart: always'");
}

enum tpf_restart_scope tpf_group_restart_scope(const struct tpf_group *g)
{
	if (!g)
		return TPF_SCOPE_WORKER;
	if (g->policy.scope != TPF_SCOPE_AUTO)
		return g->policy.scope;
	return g->workers > 1 ? TPF_SCOPE_NODE : TPF_SCOPE_WORKER;
}

const struct tpf_job_policy *tpf_fleet_job_policy(const struct tpf_fleet *f, const char *group)
{
	const struct tpf_group *g = group ? tpf_fleet_group(f, group) : NULL;
	return g ? &g->policy : &f->policy;
}

/*
 * Injected faults: a fraction --fault-rate of API requests get one of
 * --fault-kinds instead of their answer. The kinds are what clients meet in
 * practice: request-rate 429s (with Retry-After), 5xx from the front end,
 * connections closed without an answer, and slow answers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define SLOW_SECONDS 2.0

static const char *const known[] = { "429", "500", "502", "503", "504", "drop", "slow" };
#define N_KNOWN (sizeof(known) / sizeof(known[0]))

static double rate;
static int enabled[N_KNOWN];
static uint64_t rng = 0x853c49e6748fea9bULL;

int fg_faults_set(double r, const char *kinds)
{
	int want[N_KNOWN] = { 0 };
	char *copy = xstrdup(kinds), *save = NULL;
	int rc = 0;

	if (r < 0 || r > 1)
		rc = -1;
	for (char *t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
		size_t i;
		for (i = 0; i < N_KNOWN && strcmp(known[i], t); i++)
			;
		if (i == N_KNOWN)
			rc = -1;
		else
			want[i] = 1;
	}
	free(copy);
	if (rc)
		return rc;
	fg_lock();
	rate = r;
	memcpy(enabled, want, sizeof(enabled));
	fg_unlock();
	return 0;
}

void fg_faults_seed(uint64_t seed)
{
	rng = seed * 0x9e3779b97f4a7c15ULL + 0x853c49e6748fea9bULL;
}

/* xorshift64* (Vigna 2014): seedable, so a --seed replays the same faults. */
static uint64_t next(void)
{
	if (!rng)
		rng = 1;
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dULL;
}

const char *fg_fault_pick(void)
{
	const char *kind = NULL;
	size_t on[N_KNOWN], n = 0;

	fg_lock();
	for (size_t i = 0; i < N_KNOWN; i++)
		if (enabled[i])
			on[n++] = i;
	if (rate > 0 && n && (double)(next() >> 11) / 9007199254740992.0 < rate)
		kind = known[on[next() % n]];
	fg_unlock();
	return kind;
}

int fg_fault_apply(struct fg_req *r, const char *kind)
{
	r->fault = kind;
	if (!strcmp(kind, "drop")) {
		r->drop = 1;
		return 1;
	}
	if (!strcmp(kind, "slow")) {
		fg_sleep(SLOW_SECONDS);
		return 0;
	}
	if (!strcmp(kind, "429")) {
		/* Google's wording for a request-rate limit, which clears by waiting. */
		json_t *info = json_pack(
			"{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s+}}", "@type",
			"type.googleapis.com/google.rpc.ErrorInfo", "reason", "RATE_LIMIT_EXCEEDED",
			"domain", "googleapis.com", "metadata", "service", "tpu.googleapis.com",
			"quota_metric", "tpu.googleapis.com/default_requests", "quota_limit",
			"DefaultRequestsPerMinutePerProject", "consumer", "projects/",
			fg_opt.project_number);
		fg_reply_error(r, 429, "RESOURCE_EXHAUSTED", json_pack("[o]", info),
			       "Quota exceeded for quota metric 'Requests' and limit 'Requests per "
			       "minute' of service 'tpu.googleapis.com' for consumer "
			       "'project_number:%s'.", fg_opt.project_number);
		fg_reply_header(r, "Retry-After", "1");
	} else if (!strcmp(kind, "500")) {
		fg_reply_error(r, 500, "INTERNAL", NULL, "Internal error encountered.");
	} else if (!strcmp(kind, "502")) {
		fg_reply_error(r, 502, "UNAVAILABLE", NULL, "Bad Gateway");
	} else if (!strcmp(kind, "503")) {
		fg_reply_error(r, 503, "UNAVAILABLE", NULL, "The service is currently unavailable.");
	} else {
		fg_reply_error(r, 504, "DEADLINE_EXCEEDED", NULL,
			       "Deadline expired before operation could complete.");
	}
	return 1;
}

json_t *fg_faults_json(void)
{
	json_t *k = json_array();

	fg_lock();
	for (size_t i = 0; i < N_KNOWN; i++)
		if (enabled[i])
			json_array_append_new(k, json_string(known[i]));
	json_t *out = json_pack("{s:f, s:o}", "rate", rate, "kinds", k);
	fg_unlock();
	return out;
}

/*
 * Per-zone faults (--zone-fault ZONE=KIND), the answers that make a client
 * move on to another zone besides quota (--quota) and a stockout reported
 * by the create operation (--capacity):
 *   unauthorized  every TPU API request in the zone is a 403
 *                 PERMISSION_DENIED "Location ZONE is not found or access is
 *                 unauthorized." (the real wording, quoted in SkyPilot's
 *                 failover handler, sky/backends/cloud_vm_ray_backend.py);
 *   preempted     a create's node is PREEMPTED before it is READY and its
 *                 operation ends with code 3 "... update is not supported
 *                 while in state PREEMPTED" (SkyPilot: "TPU is preempted
 *                 during creation"); the node stays until deleted.
 */
struct zone_fault {
	char *zone, *kind;
};
static struct zone_fault *zone_faults;
static size_t n_zone_faults, a_zone_faults;

int fg_zone_fault_parse(const char *spec)
{
	const char *eq = strchr(spec, '=');
	if (!eq || eq == spec || (strcmp(eq + 1, "unauthorized") && strcmp(eq + 1, "preempted")))
		return -1;
	XGROW(zone_faults, n_zone_faults + 1, a_zone_faults);
	zone_faults[n_zone_faults++] =
		(struct zone_fault){ xstrndup(spec, (size_t)(eq - spec)), xstrdup(eq + 1) };
	return 0;
}

int fg_zone_fault(const char *zone, const char *kind)
{
	for (size_t i = 0; zone && i < n_zone_faults; i++)
		if (!strcmp(zone_faults[i].zone, zone) && !strcmp(zone_faults[i].kind, kind))
			return 1;
	return 0;
}

void fg_zone_faults_free(void)
{
	for (size_t i = 0; i < n_zone_faults; i++) {
		free(zone_faults[i].zone);
		free(zone_faults[i].kind);
	}
	free(zone_faults);
	zone_faults = NULL;
	n_zone_faults = a_zone_faults = 0;
}

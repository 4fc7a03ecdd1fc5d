#include "google/gcp_retry.h"
#include "google/gcp_http.h"
#include "util/diag.h"
#include "util/env.h"

#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <openssl/rand.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void tpf_gcp_settings_default(struct tpf_gcp_settings *s)
{
	s->poll_min = 1;
	s->poll_max = 10;
	s->retry_base = 1;
	s->retry_cap = 30;
	s->tries = 6;
	/* google-auth-library refreshes 3m45s early; a little more is safe */
	s->token_margin = 240;
	s->op_timeout = 1800;
	s->connect_timeout = 10;
	s->stall_timeout = 30;
	s->request_timeout = 120;
	s->max_body = TPF_GCP_MAX_BODY;
}

int tpf_gcp_settings_load(struct tpf_gcp_settings *s, struct tpf_diags *d)
{
	int rc = 0;
	tpf_gcp_settings_default(s);
	rc |= tpf_env_seconds("TPUFORM_GCP_POLL_MIN", &s->poll_min, d);
	rc |= tpf_env_seconds("TPUFORM_GCP_POLL_MAX", &s->poll_max, d);
	rc |= tpf_env_seconds("TPUFORM_GCP_RETRY_BASE", &s->retry_base, d);
	rc |= tpf_env_seconds("TPUFORM_GCP_RETRY_CAP", &s->retry_cap, d);
	rc |= tpf_env_seconds("TPUFORM_GCP_TOKEN_MARGIN", &s->token_margin, d);
	rc |= tpf_env_seconds("TPUFORM_GCP_OP_TIMEOUT", &s->op_timeout, d);
	rc |= tpf_env_seconds("TPUFORM_GCP_CONNECT_TIMEOUT", &s->connect_timeout, d);
	rc |= tpf_env_seconds("TPUFORM_GCP_STALL_TIMEOUT", &s->stall_timeout, d);
	rc |= tpf_env_seconds("TPUFORM_GCP_REQUEST_TIMEOUT", &s->request_timeout, d);
	long tries = s->tries;
	rc |= tpf_env_int("TPUFORM_GCP_TRIES", 1, 100, &tries, d);
	s->tries = (int)tries;
	long max_body = (long)s->max_body;
	rc |= tpf_env_int("TPUFORM_GCP_MAX_BODY", 1, (long)TPF_BUF_DEFAULT_MAX, &max_body, d);
	s->max_body = (size_t)max_body;
	if (s->poll_max < s->poll_min)
		s->poll_max = s->poll_min;
	if (s->retry_cap < s->retry_base)
		s->retry_cap = s->retry_base;
	return rc ? TPF_ERROR : 0;
}

double tpf_gcp_backoff(int retry, double base, double cap, double u)
{
	if (retry < 0)
		retry = 0;
	/* 2^retry overflows nothing: min() with cap happens before it matters */
	double d = retry > 60 ? cap : base * ldexp(1.0, retry);
	if (d > cap)
		d = cap;
	if (u < 0)
		u = 0;
	if (u >= 1)
		u = 0.999999;
	return d / 2 + u * d / 2;
}

double tpf_gcp_random_unit(void)
{
	uint32_t r;
	if (RAND_bytes((unsigned char *)&r, sizeof(r)) != 1)
		return 0.5; /* jitter is a nicety; never fail a request over it */
	return (double)r / 4294967296.0;
}

double tpf_gcp_parse_retry_after(const char *value, double now_wall)
{
	if (!value)
		return -1;
	while (isspace((unsigned char)*value))
		value++;
	if (!*value)
		return -1;
	if (isdigit((unsigned char)*value)) {
		char *end;
		errno = 0;
		double x = strtod(value, &end);
		while (isspace((unsigned char)*end))
			end++;
		if (errno || *end || !isfinite(x) || x < 0)
			return -1;
		return x;
	}
	time_t t = curl_getdate(value, NULL);
	if (t == (time_t)-1)
		return -1;
	double delta = (double)t - now_wall;
	return delta > 0 ? delta : 0;
}

double tpf_gcp_retry_delay(const struct tpf_gcp_settings *s, int retry, double retry_after)
{
	double b = tpf_gcp_backoff(retry, s->retry_base, s->retry_cap, tpf_gcp_random_unit());
	if (retry_after > TPF_GCP_RETRY_AFTER_MAX)
		retry_after = TPF_GCP_RETRY_AFTER_MAX;
	return retry_after > b ? retry_after : b;
}

double tpf_gcp_next_poll(const struct tpf_gcp_settings *s, double cur)
{
	double n = cur * 1.5;
	if (n < s->poll_min)
		n = s->poll_min;
	return n > s->poll_max ? s->poll_max : n;
}

/*
 * The fleet file's `notify` key (config/config_notify.h).
 */
#include "config/config_notify.h"
#include "config/config_walk.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <string.h>
#include <strings.h>

static const char *const notify_keys[] = { "webhook", "events", "payload", NULL };
static const char *const payload_words[] = { "full", "text", NULL };

/* Indexed by enum tpf_notify_event; NULL-terminated for cfg_suggest. */
static const char *const event_names[] = {
	"preempted", "replaced", "job_failed", "job_succeeded", "stalled",
	"restarts_exhausted", "quota_deferred", "completed", "preflight_failed", "bad_host",
	"maintenance", "budget_reached", "shrunk", "grown", NULL,
};

const char *tpf_notify_event_name(enum tpf_notify_event e)
{
	return (unsigned)e < TPF_NOTIFY_NEVENTS ? event_names[e] : NULL;
}

/* localhost, 127.0.0.0/8 or ::1 (curl gives IPv6 hosts in brackets). */
static int host_is_loopback(const char *host)
{
	unsigned char a4[4];
	static const unsigned char v6_loopback[16] = { [15] = 1 };
	char bare[64];
	size_t len = strlen(host);
	if (!strcasecmp(host, "localhost"))
		return 1;
	if (inet_pton(AF_INET, host, a4) == 1)
		return a4[0] == 127;
	if (len > 2 && len < sizeof(bare) && host[0] == '[' && host[len - 1] == ']') {
		unsigned char a6[16];
		memcpy(bare, host + 1, len - 2);
		bare[len - 2] = '\0';
		return inet_pton(AF_INET6, bare, a6) == 1 && !memcmp(a6, v6_loopback, 16);
	}
	return 0;
}

static const char *const webhook_expect =
	"an https URL such as 'https://hooks.slack.com/services/...' (http only to this "
	"machine: localhost, 127.0.0.1 or [::1])";

/* Check the URL's scheme and host; 0 or -1 after an error. */
static int check_webhook(struct cfg *c, yaml_node_t *v, const char *url)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL;
	int rc = -1;
	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		cfg_error(c, v, NULL, "'webhook' must be %s, got a value that is not a URL",
			  webhook_expect);
	} else if (strcasecmp(scheme, "https") && strcasecmp(scheme, "http")) {
		cfg_error(c, v, NULL, "'webhook' must be %s, got a URL with scheme '%.20s'",
			  webhook_expect, scheme);
	} else if (!strcasecmp(scheme, "http") && !host_is_loopback(host)) {
		cfg_error(c, v,
			  "plain http would send the fleet's events readable to every hop on the "
			  "way; use the receiver's https URL",
			  "'webhook' must be %s, got an http URL to '%.100s'", webhook_expect, host);
	} else {
		rc = 0;
	}
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return rc;
}

/* The events list v into *mask; 0 or -1 after errors. */
static int read_events(struct cfg *c, yaml_node_t *v, unsigned *mask)
{
	/* Built from the one table of names, so a new event is never missing
	 * from the message (it once listed 8 of 12). */
	char expect[512] = "a list of events from: ";
	for (size_t i = 0; event_names[i]; i++) {
		if (i)
			strncat(expect, ", ", sizeof(expect) - strlen(expect) - 1);
		strncat(expect, event_names[i], sizeof(expect) - strlen(expect) - 1);
	}
	if (v->type != YAML_SEQUENCE_NODE) {
		cfg_type_error(c, v, "events", expect, NULL);
		return -1;
	}
	if (v->data.sequence.items.start == v->data.sequence.items.top) {
		cfg_error(c, v, "list the events to post, or remove 'notify'",
			  "'events' is empty: nothing would be posted");
		return -1;
	}
	int rc = 0, e;
	*mask = 0;
	for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
	     it++) {
		if (cfg_want_enum(c, cfg_node(c, *it), "events", event_names,
				  "one of preempted, replaced, job_failed, job_succeeded, stalled, "
				  "restarts_exhausted, quota_deferred or completed",
				  &e) < 0)
			rc = -1;
		else
			*mask |= 1u << e;
	}
	return rc;
}

void cfg_read_notify(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v)
{
	struct cfg_map m;
	yaml_node_t *x;
	unsigned events = (1u << TPF_NOTIFY_NEVENTS) - 1;
	int payload = 0, ok = 1;
	if (!v || cfg_map_open(&m, c, v, "'notify'",
			       "a mapping such as { webhook: https://hooks.slack.com/services/..., "
			       "events: [preempted, replaced] }",
			       notify_keys, "in notify", "notify") < 0)
		return;
	const char *url = NULL;
	if ((x = cfg_map_require(&m, "webhook", "the URL events are posted to"))) {
		url = cfg_want_text(c, x, "webhook", webhook_expect, 0);
		if (!url || check_webhook(c, x, url) < 0)
			ok = 0;
	} else {
		ok = 0;
	}
	if ((x = cfg_map_get(&m, "events")) && read_events(c, x, &events) < 0)
		ok = 0;
	if ((x = cfg_map_get(&m, "payload")) &&
	    cfg_want_enum(c, x, "payload", payload_words, "full or text", &payload) < 0)
		ok = 0;
	if (!ok)
		return;
	f->notify.webhook = xstrdup(url);
	f->notify.events = events;
	f->notify.text_only = payload == 1;
}

#include "plan/backoff.h"
#include "model/chips.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	char *zone;
	struct tpf_backoff_key key;
	double until;
	double delay; /* the last wait; 0 after a success */
	int why;      /* the last refusal's TPF_E* code */
};

struct tpf_backoff {
	double base, cap;
	struct entry *items;
	size_t n, alloc;
	pthread_mutex_t mu;
};

struct tpf_backoff_key tpf_backoff_key_of(const struct tpf_recipe *r)
{
	struct tpf_backoff_key k;
	memset(&k, 0, sizeof(k));
	k.api = r->compute.api;
	/* model/chips.h: the machine type on Compute Engine, else the
	 * accelerator type; NULL when the recipe has none. */
	const char *t = tpf_recipe_type(r);
	if (t) {
		size_t n = strnlen(t, sizeof(k.type) - 1);
		memcpy(k.type, t, n);
		k.type[n] = '\0';
	}
	return k;
}

struct tpf_backoff *tpf_backoff_new(double base, double cap)
{
	struct tpf_backoff *b = xcalloc(1, sizeof(*b));
	b->base = base > 0 ? base : 1;
	b->cap = cap >= b->base ? cap : b->base;
	pthread_mutex_init(&b->mu, NULL);
	return b;
}

void tpf_backoff_free(struct tpf_backoff *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		free(b->items[i].zone);
	free(b->items);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

static int same_key(const struct tpf_backoff_key *a, const struct tpf_backoff_key *b)
{
	return a->api == b->api && !strncmp(a->type, b->type, sizeof(a->type));
}

/* Call with the mutex held. */
static struct entry *find(struct tpf_backoff *b, const char *zone,
			  const struct tpf_backoff_key *key, int add)
{
	if (!zone)
		zone = "";
	for (size_t i = 0; i < b->n; i++)
		if (!strcmp(b->items[i].zone, zone) && same_key(&b->items[i].key, key))
			return &b->items[i];
	if (!add)
		return NULL;
	XGROW(b->items, b->n + 1, b->alloc);
	struct entry *e = &b->items[b->n++];
	memset(e, 0, sizeof(*e));
	e->zone = xstrdup(zone);
	e->key = *key;
	e->key.type[sizeof(e->key.type) - 1] = '\0';
	return e;
}

int tpf_backoff_blocked(struct tpf_backoff *b, const char *zone, const struct tpf_backoff_key *key,
			double now, double *until, int *why)
{
	pthread_mutex_lock(&b->mu);
	struct entry *e = find(b, zone, key, 0);
	int blocked = e && e->until > now;
	if (until)
		*until = e ? e->until : 0;
	if (why)
		*why = e ? e->why : 0;
	pthread_mutex_unlock(&b->mu);
	return blocked;
}

double tpf_backoff_fail(struct tpf_backoff *b, const char *zone, const struct tpf_backoff_key *key,
			double now, int why)
{
	pthread_mutex_lock(&b->mu);
	struct entry *e = find(b, zone, key, 1);
	e->delay = e->delay > 0 ? e->delay * 2 : b->base;
	if (e->delay > b->cap)
		e->delay = b->cap;
	e->until = now + e->delay;
	e->why = why;
	double d = e->delay;
	pthread_mutex_unlock(&b->mu);
	return d;
}

void tpf_backoff_ok(struct tpf_backoff *b, const char *zone, const struct tpf_backoff_key *key)
{
	pthread_mutex_lock(&b->mu);
	struct entry *e = find(b, zone, key, 0);
	if (e) {
		e->delay = 0;
		e->until = 0;
		e->why = 0;
	}
	pthread_mutex_unlock(&b->mu);
}

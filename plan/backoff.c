#include "plan/backoff.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	char *zone, *type;
	double until;
	double delay; /* the last wait; 0 after a success */
};

struct tpf_backoff {
	double base, cap;
	struct entry *items;
	size_t n, alloc;
	pthread_mutex_t mu;
};

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
	for (size_t i = 0; i < b->n; i++) {
		free(b->items[i].zone);
		free(b->items[i].type);
	}
	free(b->items);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

/* Call with the mutex held. */
static struct entry *find(struct tpf_backoff *b, const char *zone, const char *type, int add)
{
	for (size_t i = 0; i < b->n; i++)
		if (!strcmp(b->items[i].zone, zone) && !strcmp(b->items[i].type, type))
			return &b->items[i];
	if (!add)
		return NULL;
	XGROW(b->items, b->n + 1, b->alloc);
	struct entry *e = &b->items[b->n++];
	memset(e, 0, sizeof(*e));
	e->zone = xstrdup(zone);
	e->type = xstrdup(type);
	return e;
}

int tpf_backoff_blocked(struct tpf_backoff *b, const char *zone, const char *type, double now,
			double *until)
{
	pthread_mutex_lock(&b->mu);
	struct entry *e = find(b, zone, type, 0);
	int blocked = e && e->until > now;
	if (until)
		*until = e ? e->until : 0;
	pthread_mutex_unlock(&b->mu);
	return blocked;
}

double tpf_backoff_fail(struct tpf_backoff *b, const char *zone, const char *type, double now)
{
	pthread_mutex_lock(&b->mu);
	struct entry *e = find(b, zone, type, 1);
	e->delay = e->delay > 0 ? e->delay * 2 : b->base;
	if (e->delay > b->cap)
		e->delay = b->cap;
	e->until = now + e->delay;
	double d = e->delay;
	pthread_mutex_unlock(&b->mu);
	return d;
}

void tpf_backoff_ok(struct tpf_backoff *b, const char *zone, const char *type)
{
	pthread_mutex_lock(&b->mu);
	struct entry *e = find(b, zone, type, 0);
	if (e) {
		e->delay = 0;
		e->until = 0;
	}
	pthread_mutex_unlock(&b->mu);
}

#include "util/diag.h"
#include "util/xalloc.h"
/* The analyzer's stand-ins (util/diag.h) are not for the definitions. */
#undef tpf_error
#undef tpf_errorx
#undef tpf_errorc

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void tpf_diags_init(struct tpf_diags *d)
{
	d->items = NULL;
	d->n = d->alloc = 0;
	pthread_mutex_init(&d->mu, NULL);
	d->slots = NULL;
	d->nslots = 0;
	d->errors_seen = 0;
}

void tpf_diags_release(struct tpf_diags *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->items[i].summary);
		free(d->items[i].detail);
		free(d->items[i].address);
	}
	free(d->items);
	d->items = NULL;
	d->n = d->alloc = 0;
	free(d->slots);
	d->slots = NULL;
	d->nslots = 0;
	d->errors_seen = 0;
}

/* FNV-1a of one field; NULL and "" differ. */
static uint64_t hash_field(uint64_t h, const char *s)
{
	h = (h ^ (s ? 1u : 0u)) * 1099511628211u;
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return (h ^ 0xffu) * 1099511628211u;
}

static uint64_t hash_diag(enum tpf_severity sev, const char *address, const char *summary,
			  const char *detail)
{
	uint64_t h = 14695981039346656037u ^ (uint64_t)sev;
	return hash_field(hash_field(hash_field(h, address), summary), detail);
}

static int same_text(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* The slot of d that holds an item equal to the given one, or the empty
 * slot where it would go. d->nslots > 0. */
static size_t *find_slot(const struct tpf_diags *d, enum tpf_severity sev, const char *address,
			 const char *summary, const char *detail)
{
	size_t mask = d->nslots - 1;
	for (size_t i = (size_t)hash_diag(sev, address, summary, detail) & mask;; i = (i + 1) & mask) {
		size_t *slot = &d->slots[i];
		if (!*slot)
			return slot;
		const struct tpf_diag *g = &d->items[*slot - 1];
		if (g->severity == sev && same_text(g->summary, summary) &&
		    same_text(g->detail, detail) && same_text(g->address, address))
			return slot;
	}
}

/* Keep the index at most half full: rebuild it twice as large. */
static void grow_index(struct tpf_diags *d)
{
	if (2 * (d->n + 1) <= d->nslots)
		return;
	free(d->slots);
	d->nslots = d->nslots ? 2 * d->nslots : 16;
	d->slots = xcalloc(d->nslots, sizeof(*d->slots));
	for (size_t i = 0; i < d->n; i++) {
		const struct tpf_diag *g = &d->items[i];
		*find_slot(d, g->severity, g->address, g->summary, g->detail) = i + 1;
	}
}

static int add_coded(struct tpf_diags *d, enum tpf_severity sev, enum tpf_diag_code code,
		     const char *address, const char *summary, const char *detail)
{
	pthread_mutex_lock(&d->mu);
	d->errors_seen += sev == TPF_SEV_ERROR;
	grow_index(d);
	size_t *slot = find_slot(d, sev, address, summary, detail);
	if (*slot) {
		struct tpf_diag *had = &d->items[*slot - 1];
		if (had->code == TPF_DIAG_NONE)
			had->code = code;
		pthread_mutex_unlock(&d->mu);
		return sev == TPF_SEV_ERROR ? TPF_ERROR : 0;
	}
	*slot = d->n + 1;
	XGROW(d->items, d->n + 1, d->alloc);
	struct tpf_diag *g = &d->items[d->n++];
	g->severity = sev;
	g->code = code;
	g->summary = xstrdup(summary);
	g->detail = xstrdup(detail);
	g->address = xstrdup(address);
	pthread_mutex_unlock(&d->mu);
	return sev == TPF_SEV_ERROR ? TPF_ERROR : 0;
}

int tpf_diags_add(struct tpf_diags *d, enum tpf_severity sev, const char *address,
		  const char *summary, const char *detail)
{
	return add_coded(d, sev, TPF_DIAG_NONE, address, summary, detail);
}

/* Format a message and add it: the one body of the printf-style adders. */
__attribute__((format(printf, 6, 0)))
static int vadd(struct tpf_diags *d, enum tpf_severity sev, enum tpf_diag_code code,
		const char *address, const char *detail, const char *fmt, va_list ap)
{
	char *s = xvasprintf(fmt, ap);
	int rc = add_coded(d, sev, code, address, s, detail);
	free(s);
	return rc;
}

int tpf_error(struct tpf_diags *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vadd(d, TPF_SEV_ERROR, TPF_DIAG_NONE, NULL, NULL, fmt, ap);
	va_end(ap);
	return TPF_ERROR;
}

int tpf_errorx(struct tpf_diags *d, const char *address, const char *detail,
	       const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vadd(d, TPF_SEV_ERROR, TPF_DIAG_NONE, address, detail, fmt, ap);
	va_end(ap);
	return TPF_ERROR;
}

int tpf_errorc(struct tpf_diags *d, enum tpf_diag_code code, const char *address,
	       const char *detail, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vadd(d, TPF_SEV_ERROR, code, address, detail, fmt, ap);
	va_end(ap);
	return TPF_ERROR;
}

void tpf_warn(struct tpf_diags *d, const char *address, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vadd(d, TPF_SEV_WARNING, TPF_DIAG_NONE, address, NULL, fmt, ap);
	va_end(ap);
}

size_t tpf_diags_errors(const struct tpf_diags *d)
{
	size_t n = 0;
	for (size_t i = 0; i < d->n; i++)
		n += d->items[i].severity == TPF_SEV_ERROR;
	return n;
}

void tpf_diags_move(struct tpf_diags *dst, struct tpf_diags *src)
{
	for (size_t i = 0; i < src->n; i++) {
		struct tpf_diag *g = &src->items[i];
		add_coded(dst, g->severity, g->code, g->address, g->summary, g->detail);
	}
	tpf_diags_release(src);
}

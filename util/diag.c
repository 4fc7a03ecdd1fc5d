#include "util/diag.h"
#include "util/xalloc.h"
/* The analyzer's stand-ins (util/diag.h) are not for the definitions. */
#undef tpf_error
#undef tpf_errorx

#include <stdarg.h>
#include <stdlib.h>

void tpf_diags_init(struct tpf_diags *d)
{
	d->items = NULL;
	d->n = d->alloc = 0;
	pthread_mutex_init(&d->mu, NULL);
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
}

int tpf_diags_add(struct tpf_diags *d, enum tpf_severity sev, const char *address,
		  const char *summary, const char *detail)
{
	pthread_mutex_lock(&d->mu);
	XGROW(d->items, d->n + 1, d->alloc);
	struct tpf_diag *g = &d->items[d->n++];
	g->severity = sev;
	g->summary = xstrdup(summary);
	g->detail = xstrdup(detail);
	g->address = xstrdup(address);
	pthread_mutex_unlock(&d->mu);
	return sev == TPF_SEV_ERROR ? TPF_ERROR : 0;
}

int tpf_error(struct tpf_diags *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	tpf_diags_add(d, TPF_SEV_ERROR, NULL, s, NULL);
	free(s);
	return TPF_ERROR;
}

int tpf_errorx(struct tpf_diags *d, const char *address, const char *detail,
	       const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	tpf_diags_add(d, TPF_SEV_ERROR, address, s, detail);
	free(s);
	return TPF_ERROR;
}

void tpf_warn(struct tpf_diags *d, const char *address, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	tpf_diags_add(d, TPF_SEV_WARNING, address, s, NULL);
	free(s);
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
		tpf_diags_add(dst, g->severity, g->address, g->summary, g->detail);
	}
	tpf_diags_release(src);
}

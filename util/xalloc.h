/*
 * Allocation helpers that never return NULL.
 *
 * tpuform cannot do anything useful after running out of memory and a
 * half-finished apply is worse than a clean abort (state is saved after each
 * transition, so an abort loses at most the step in flight). Every function
 * here aborts the process with a message on allocation failure.
 */
#ifndef TPF_XALLOC_H
#define TPF_XALLOC_H

#include <stddef.h>
#include <stdarg.h>

/* malloc/calloc/realloc that abort on failure. Caller frees with free(). */
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);

/* strdup of s; NULL in gives NULL out. Caller frees. */
char *xstrdup(const char *s);
/* Copy of the first n bytes of s, NUL-terminated. Caller frees. */
char *xstrndup(const char *s, size_t n);
/* printf into a fresh string. Caller frees. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Abort with "out of memory", for libraries that report it by a return
 * value (hcreate_r, hsearch_r). Never returns. */
void tpf_oom(void) __attribute__((noreturn));

/* Replace *slot with a copy of s (freeing the old value). */
void xstrset(char **slot, const char *s);

/* Grow an array so that at least `need` elements fit; *alloc is updated. */
#define XGROW(ptr, need, alloc)                                              \
	do {                                                                 \
		if ((need) > (alloc)) {                                      \
			size_t xg_n_ = (alloc) ? (alloc) * 2 : 8;            \
			while (xg_n_ < (need))                               \
				xg_n_ *= 2;                                  \
			(ptr) = xrealloc((ptr), xg_n_ * sizeof(*(ptr)));     \
			(alloc) = xg_n_;                                     \
		}                                                            \
	} while (0)

#endif

/*
 * Diagnostics: errors and warnings collected for people.
 *
 * Library code (plan/, state/, providers/) never prints and never exits: it
 * returns an int (0, or a negative TPF_E* code) and appends what went wrong
 * to a caller-owned struct tpf_diags. Only cmd/ prints them. This mirrors
 * Terraform, which gathers every error of a parallel apply and prints them
 * together at the end (docs/terraform-behaviour.md section 7).
 *
 * Thread safety: tpf_diags_add* lock an internal mutex, so workers of a
 * parallel apply may share one list.
 */
#ifndef TPF_DIAG_H
#define TPF_DIAG_H

#include <pthread.h>
#include <stddef.h>

/* Expected failures. Anything else is -1 (TPF_ERROR). */
enum {
	TPF_OK = 0,
	TPF_ERROR = -1,
	TPF_ENOTFOUND = -2,  /* object does not exist (HTTP 404, no such node) */
	TPF_ELOCKED = -3,    /* state lock held by someone else */
	TPF_ESTALE = -4,     /* saved plan no longer matches state */
	TPF_EQUOTA = -5,     /* quota exhausted: try the next zone */
	TPF_ECAPACITY = -6,  /* no capacity / reservation short: next zone or later */
	TPF_ETRANSIENT = -7, /* retry may succeed (5xx, resets, timeouts) */
	TPF_EUNREACHABLE = -8, /* worker could not be reached */
	TPF_EHOSTKEY = -9,   /* worker host key differs from the pinned one */
	TPF_EINTERRUPTED = -10, /* a signal asked us to stop */
	TPF_EDEFERRED = -11, /* not done now, by design (quota, capacity backoff): retry later */
	TPF_EZONE = -12,     /* the project cannot use this zone (not found or unauthorized): next zone */
	TPF_EFOREIGN = -13,  /* a node named as this fleet's belongs to another state (plan/ownership.h) */
};

enum tpf_severity { TPF_SEV_ERROR, TPF_SEV_WARNING };

/* What a diagnostic is about, for the code that acts on it (cmd/ adds a
 * hint by it): set where the diagnostic is made, so no caller reads the
 * message to decide. Most diagnostics have none. */
enum tpf_diag_code {
	TPF_DIAG_NONE = 0,
	TPF_DIAG_NOT_IN_STATE, /* a node named by the user is not in the state */
	TPF_DIAG_NOT_READY,    /* a node named by the user is missing or not READY */
};

struct tpf_diag {
	enum tpf_severity severity;
	enum tpf_diag_code code;
	char *summary; /* one line; for config errors "FILE:LINE:COL: message" */
	char *detail;  /* optional further lines, e.g. a hint; may be NULL */
	char *address; /* optional subject (node name, NODE/wN); may be NULL */
};

/*
 * Each diagnostic is kept once: adding one equal to a diagnostic already in
 * the list (same severity, summary, detail and address) adds nothing, so a
 * command prints it once however many stages or zones met it (the same
 * missing credentials for every zone's list, the same secret for every
 * session step). Terraform's views consolidate repeated diagnostics the same
 * way (command/views: consolidateWarnings). `errors_seen` still counts every
 * error added, repeats included, for callers that ask "did this step add an
 * error?" (engine/apply/apply.c).
 */
struct tpf_diags {
	struct tpf_diag *items;
	size_t n, alloc;
	pthread_mutex_t mu;
	size_t *slots;      /* open-addressing index of items: i + 1, 0 empty */
	size_t nslots;      /* a power of two, or 0 */
	size_t errors_seen; /* errors added, repeats included */
};

#define TPF_DIAGS_INIT { NULL, 0, 0, PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 }

void tpf_diags_init(struct tpf_diags *d);
void tpf_diags_release(struct tpf_diags *d);

/*
 * Append a diagnostic, unless an equal one is in the list already (see
 * above). `address` and `detail` may be NULL. Returns TPF_ERROR for errors
 * (so callers can `return tpf_error(d, ...)`) and 0 for warnings, repeats
 * included.
 */
int tpf_diags_add(struct tpf_diags *d, enum tpf_severity sev, const char *address,
		  const char *summary, const char *detail);
int tpf_error(struct tpf_diags *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tpf_errorx(struct tpf_diags *d, const char *address, const char *detail,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void tpf_warn(struct tpf_diags *d, const char *address, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* tpf_errorx with a code (an equal diagnostic already listed without one
 * takes it); returns TPF_ERROR. */
int tpf_errorc(struct tpf_diags *d, enum tpf_diag_code code, const char *address,
	       const char *detail, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
#ifdef __clang_analyzer__
/* The static analyzer (make lint) reads one file at a time: tell it what
 * util/diag.c does, that these two always return TPF_ERROR, so that
 * `if (tpf_error(...))` paths are not taken as successes. */
#define tpf_error(d, ...) (tpf_error((d), __VA_ARGS__), TPF_ERROR)
#define tpf_errorx(d, a, x, ...) (tpf_errorx((d), (a), (x), __VA_ARGS__), TPF_ERROR)
#define tpf_errorc(d, c, a, x, ...) (tpf_errorc((d), (c), (a), (x), __VA_ARGS__), TPF_ERROR)
#endif

size_t tpf_diags_errors(const struct tpf_diags *d);
/* Move every diagnostic of src to the end of dst; src ends empty. */
void tpf_diags_move(struct tpf_diags *dst, struct tpf_diags *src);

#endif

/*
 * Private to state/: the rows of the object store seam (state/objstore.h):
 * objstore.c (dispatch and the local row) and objstore_gcs.c.
 */
#ifndef TPF_STATE_OBJSTORE_PRIV_H
#define TPF_STATE_OBJSTORE_PRIV_H

#include "state/objstore.h"

struct tpf_objstore_ops {
	int shared;
	char *(*where)(const struct tpf_objstore *s, const char *name);
	int (*get)(struct tpf_objstore *s, const char *name, size_t max, const char *what,
		   struct tpf_buf *out, long long *generation, struct tpf_diags *d);
	int (*stat)(struct tpf_objstore *s, const char *name, long long *generation,
		    struct tpf_diags *d);
	int (*put)(struct tpf_objstore *s, const char *name, const char *data, size_t len,
		   const char *content_type, long long if_generation, long long *generation,
		   struct tpf_diags *d);
	int (*del)(struct tpf_objstore *s, const char *name, long long if_generation,
		   struct tpf_diags *d);
	/* gens NULL: not wanted */
	int (*list)(struct tpf_objstore *s, const char *name_prefix, char ***names,
		    long long **gens, size_t *n, struct tpf_diags *d);
	void (*free)(struct tpf_objstore *s);
};

struct tpf_objstore {
	const struct tpf_objstore_ops *ops;
	char *prefix;
};

#endif

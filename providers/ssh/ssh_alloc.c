/*
 * Tracking allocators for libssh2 sessions (ssh_alloc.h says why).
 *
 * Every block carries a header that links it into its session's list. One
 * session is only ever used by one thread at a time (libssh2 requires it),
 * so the list needs no lock.
 */
#include "providers/ssh/ssh_alloc.h"

#include <stdalign.h>
#include <stdlib.h>

struct block {
	struct block *prev, *next;
};

/* The header's size, rounded up so that the caller's part keeps malloc's
 * alignment. */
#define HEAD ((sizeof(struct block) + alignof(max_align_t) - 1) / alignof(max_align_t) * alignof(max_align_t))

struct arena {
	struct block head; /* a circular list's sentinel */
	size_t blocks;
};

static void link_block(struct arena *a, struct block *b)
{
	b->prev = &a->head;
	b->next = a->head.next;
	a->head.next->prev = b;
	a->head.next = b;
	a->blocks++;
}

static void unlink_block(struct arena *a, struct block *b)
{
	b->prev->next = b->next;
	b->next->prev = b->prev;
	a->blocks--;
}

static void *track_alloc(size_t count, void **abstract)
{
	struct arena *a = *abstract;
	struct block *b = malloc(HEAD + count);
	if (!b)
		return NULL;
	link_block(a, b);
	return (char *)b + HEAD;
}

static void track_free(void *ptr, void **abstract)
{
	/* Read the arena first: the block freed last is the session itself,
	 * which holds *abstract. */
	struct arena *a = *abstract;
	if (!ptr)
		return;
	struct block *b = (struct block *)((char *)ptr - HEAD);
	unlink_block(a, b);
	free(b);
}

static void *track_realloc(void *ptr, size_t count, void **abstract)
{
	struct arena *a = *abstract;
	if (!ptr)
		return track_alloc(count, abstract);
	struct block *b = (struct block *)((char *)ptr - HEAD);
	unlink_block(a, b);
	struct block *nb = realloc(b, HEAD + count);
	if (!nb) {
		link_block(a, b); /* the old block stays valid, as realloc's */
		return NULL;
	}
	link_block(a, nb);
	return (char *)nb + HEAD;
}

/* Free every block still on a's list, which is then empty. */
static void free_blocks(struct arena *a)
{
	struct block *b = a->head.next;
	while (b != &a->head) {
		struct block *next = b->next;
		free(b);
		b = next;
	}
	a->head.prev = a->head.next = &a->head;
	a->blocks = 0;
}

LIBSSH2_SESSION *tpf_ssh_session_new(void)
{
	struct arena *a = malloc(sizeof(*a));
	if (!a)
		return NULL;
	a->head.prev = a->head.next = &a->head;
	a->blocks = 0;
	LIBSSH2_SESSION *s = libssh2_session_init_ex(track_alloc, track_free, track_realloc, a);
	if (!s) {
		free_blocks(a); /* whatever init allocated before failing */
		free(a);
	}
	return s;
}

void tpf_ssh_session_free(LIBSSH2_SESSION *s)
{
	if (!s)
		return;
	struct arena *a = *libssh2_session_abstract(s);
	libssh2_session_free(s);
	free_blocks(a);
	free(a);
}

size_t tpf_ssh_session_blocks(LIBSSH2_SESSION *s)
{
	if (!s)
		return 0;
	struct arena *a = *libssh2_session_abstract(s);
	return a->blocks;
}

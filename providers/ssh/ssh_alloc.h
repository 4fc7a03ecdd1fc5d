/*
 * libssh2 sessions whose memory tpuform can account for.
 *
 * libssh2 1.10 (Debian 12) does not free everything when a session is
 * freed in the middle of its key exchange: the two 32-byte curve25519 keys
 * of an exchange that has not finished stay allocated (LeakSanitizer saw
 * them when `watch` was stopped while a job wait was dialing). A session
 * made here gives libssh2 allocators (libssh2_session_init_ex) that keep
 * every block of that session on a list, and tpf_ssh_session_free frees
 * what the library left on it after libssh2_session_free. libssh2 frees
 * every block it allocated through the same session's free function
 * (LIBSSH2_FREE), which is what makes this safe; curl's libssh2 back-end
 * relies on the same contract with its debugging allocator.
 */
#ifndef TPF_SSH_ALLOC_H
#define TPF_SSH_ALLOC_H

#include <libssh2.h>
#include <stddef.h>

/* A new session with tracking allocators, or NULL when out of memory.
 * Owned by the caller: free it with tpf_ssh_session_free, never with
 * libssh2_session_free alone (that would leak the list). The session's
 * abstract pointer (libssh2_session_abstract) is the list's: the caller
 * must not set it. */
LIBSSH2_SESSION *tpf_ssh_session_new(void);

/* libssh2_session_free(s), then free every block of s that libssh2 left
 * allocated, and the list. NULL is accepted. s must come from
 * tpf_ssh_session_new. Any agent, channel, SFTP or knownhost handle made
 * from s must be freed first, as libssh2 itself requires. */
void tpf_ssh_session_free(LIBSSH2_SESSION *s);

/* The number of blocks libssh2 holds for s now (tests; 0 for NULL). */
size_t tpf_ssh_session_blocks(LIBSSH2_SESSION *s);

#endif

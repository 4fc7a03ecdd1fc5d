/*
 * A set of file descriptors to wait on, each with a pointer of the
 * caller's: epoll(7), level-triggered, so that a wait costs in proportion
 * to the descriptors that are ready, not to all of them as poll(2) does
 * (watch's job waits hold one socket per worker: thousands, nearly all
 * quiet; engine/watch/watch_waits.c, docs/watch.md "Job waits").
 *
 * The events are poll(2)'s (POLLIN, POLLOUT; POLLERR and POLLHUP are
 * always reported), so a caller that says what to wait for in a struct
 * pollfd keeps doing so. Not thread-safe: one thread owns a set.
 * Linux only (epoll), as the rest of tpuform.
 */
#ifndef TPF_EVSET_H
#define TPF_EVSET_H

struct tpf_evset;

/* A new, empty set; NULL (errno set) when epoll_create1 fails. Free with
 * tpf_evset_free. */
struct tpf_evset *tpf_evset_new(void);
void tpf_evset_free(struct tpf_evset *s);

/* Wait on fd for `events` (POLLIN | POLLOUT), reporting `ptr`: added, or
 * changed when fd is already in the set. 0, or -1 with errno (fd not
 * open: EBADF). Close nothing while it is in the set without
 * tpf_evset_forget first: the set would keep the file open (a dup) or
 * forget it silently, and a reused number would then mean another file. */
int tpf_evset_watch(struct tpf_evset *s, int fd, short events, void *ptr);
/* Stop waiting on fd (not in the set: nothing happens). */
void tpf_evset_forget(struct tpf_evset *s, int fd);

/* Wait up to ms milliseconds (-1: without limit, 0: not at all) for any
 * fd to be ready; ready[] gets the pointers of up to max ready ones.
 * Returns how many (0: the time passed or a signal came), or -1 with
 * errno. */
int tpf_evset_wait(struct tpf_evset *s, void **ready, int max, int ms);

#endif

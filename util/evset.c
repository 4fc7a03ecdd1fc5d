/*
 * A set of file descriptors to wait on: epoll(7) (util/evset.h).
 */
#include "util/evset.h"
#include "util/xalloc.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

struct tpf_evset {
	int ep;
	struct epoll_event *evs; /* tpf_evset_wait's buffer */
	size_t nevs;
};

struct tpf_evset *tpf_evset_new(void)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return NULL;
	struct tpf_evset *s = xcalloc(1, sizeof(*s));
	s->ep = ep;
	return s;
}

void tpf_evset_free(struct tpf_evset *s)
{
	if (!s)
		return;
	close(s->ep);
	free(s->evs);
	free(s);
}

int tpf_evset_watch(struct tpf_evset *s, int fd, short events, void *ptr)
{
	struct epoll_event ev = { 0 };
	ev.events = ((events & POLLIN) ? EPOLLIN : 0) | ((events & POLLOUT) ? EPOLLOUT : 0);
	ev.data.ptr = ptr;
	if (epoll_ctl(s->ep, EPOLL_CTL_MOD, fd, &ev) == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	return epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev);
}

void tpf_evset_forget(struct tpf_evset *s, int fd)
{
	struct epoll_event ev = { 0 }; /* kernels before 2.6.9 want one */
	if (fd >= 0)
		epoll_ctl(s->ep, EPOLL_CTL_DEL, fd, &ev);
}

int tpf_evset_wait(struct tpf_evset *s, void **ready, int max, int ms)
{
	if (max < 1)
		max = 1;
	if (s->nevs < (size_t)max) {
		s->evs = xrealloc(s->evs, (size_t)max * sizeof(*s->evs));
		s->nevs = (size_t)max;
	}
	int n = epoll_wait(s->ep, s->evs, max, ms);
	if (n < 0)
		return errno == EINTR ? 0 : -1;
	for (int i = 0; i < n; i++)
		ready[i] = s->evs[i].data.ptr;
	return n;
}

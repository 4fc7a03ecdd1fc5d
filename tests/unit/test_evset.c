/* util/evset: the epoll set watch's job waits wait on. */
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/unit/unit.h"
#include "util/evset.h"

/* Only ready descriptors are reported, each with its own pointer; a
 * changed interest and a forgotten descriptor take effect. */
static void test_evset__ready_and_forget(void)
{
	struct tpf_evset *s = tpf_evset_new();
	CHECK(s != NULL);
	if (!s)
		return;
	int a[2], b[2];
	CHECK(pipe(a) == 0 && pipe(b) == 0);
	int tag_a = 1, tag_b = 2;
	void *ready[4];
	CHECK_INT(tpf_evset_watch(s, a[0], POLLIN, &tag_a), 0);
	CHECK_INT(tpf_evset_watch(s, b[0], POLLIN, &tag_b), 0);
	CHECK_INT(tpf_evset_wait(s, ready, 4, 0), 0); /* nothing written */

	CHECK(write(b[1], "x", 1) == 1);
	int n = tpf_evset_wait(s, ready, 4, 1000);
	CHECK_INT(n, 1);
	CHECK(n == 1 && ready[0] == &tag_b);
	/* Level-triggered: still ready until read. */
	CHECK_INT(tpf_evset_wait(s, ready, 4, 0), 1);

	/* Changing the pointer (and interest) of a held descriptor. */
	CHECK_INT(tpf_evset_watch(s, b[0], POLLIN, &tag_a), 0);
	n = tpf_evset_wait(s, ready, 4, 0);
	CHECK(n == 1 && ready[0] == &tag_a);

	/* Forgotten: no longer reported; forgetting twice is harmless. */
	tpf_evset_forget(s, b[0]);
	tpf_evset_forget(s, b[0]);
	CHECK_INT(tpf_evset_wait(s, ready, 4, 0), 0);

	/* POLLOUT on a writable pipe end is reported at once. */
	CHECK_INT(tpf_evset_watch(s, a[1], POLLOUT, &tag_b), 0);
	n = tpf_evset_wait(s, ready, 4, 0);
	CHECK(n == 1 && ready[0] == &tag_b);

	/* A descriptor that is not open is refused. */
	CHECK(tpf_evset_watch(s, 1 << 20, POLLIN, NULL) == -1);
	close(a[0]), close(a[1]), close(b[0]), close(b[1]);
	tpf_evset_free(s);
}

int main(void)
{
	RUN(test_evset__ready_and_forget);
	return unit_done();
}

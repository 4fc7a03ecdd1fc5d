/* providers/ssh/ssh_alloc: libssh2 sessions whose leftovers are freed. */
#include <libssh2.h>
#include <sys/socket.h>
#include <unistd.h>

#include "providers/ssh/ssh_alloc.h"
#include "tests/unit/unit.h"

/* Every block libssh2 allocates for the session is counted, its frees
 * uncount it, and one left allocated on purpose is freed with the session
 * (under ASan, LeakSanitizer fails this test otherwise). */
static void test_ssh_alloc__blocks_counted_and_freed(void)
{
	LIBSSH2_SESSION *s = tpf_ssh_session_new();
	CHECK(s != NULL);
	if (!s)
		return;
	size_t base = tpf_ssh_session_blocks(s);
	CHECK(base >= 1); /* the session itself */
	const char **algs = NULL;
	int n = libssh2_session_supported_algs(s, LIBSSH2_METHOD_HOSTKEY, &algs);
	CHECK(n > 0);
	CHECK_INT((int)tpf_ssh_session_blocks(s), (int)base + 1);
	libssh2_free(s, algs);
	CHECK_INT((int)tpf_ssh_session_blocks(s), (int)base);
	n = libssh2_session_supported_algs(s, LIBSSH2_METHOD_KEX, &algs);
	CHECK(n > 0); /* not freed: tpf_ssh_session_free must */
	tpf_ssh_session_free(s);
	tpf_ssh_session_free(NULL);
	CHECK_INT((int)tpf_ssh_session_blocks(NULL), 0);
}

/* Two sessions freed in the middle of their key exchange, the case that
 * leaked (libssh2 1.10: `watch` stopped while a job wait dialed). Two
 * clients over a socket pair get that far without a server: the banner
 * and KEXINIT are the same from both ends, each then makes its curve25519
 * keys, sends its ECDH_INIT, and waits for a reply that never comes. */
static void test_ssh_alloc__freed_mid_key_exchange(void)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	LIBSSH2_SESSION *a = tpf_ssh_session_new(), *b = tpf_ssh_session_new();
	CHECK(a != NULL && b != NULL);
	if (!a || !b)
		return;
	libssh2_session_set_blocking(a, 0);
	libssh2_session_set_blocking(b, 0);
	size_t before = tpf_ssh_session_blocks(a);
	int ra = 0, rb = 0;
	for (int i = 0; i < 200; i++) {
		ra = libssh2_session_handshake(a, sv[0]);
		rb = libssh2_session_handshake(b, sv[1]);
		if (ra != LIBSSH2_ERROR_EAGAIN || rb != LIBSSH2_ERROR_EAGAIN)
			break;
		usleep(1000);
	}
	/* Still exchanging (neither finished nor failed) ... */
	CHECK_INT(ra, LIBSSH2_ERROR_EAGAIN);
	CHECK_INT(rb, LIBSSH2_ERROR_EAGAIN);
	/* ... with the exchange's memory held. */
	CHECK(tpf_ssh_session_blocks(a) > before);
	tpf_ssh_session_free(a);
	tpf_ssh_session_free(b);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	RUN(test_ssh_alloc__blocks_counted_and_freed);
	RUN(test_ssh_alloc__freed_mid_key_exchange);
	return unit_done();
}

#include "util/shquote.h"

void tpf_shquote_buf(struct tpf_buf *b, const char *s)
{
	tpf_buf_addch(b, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			tpf_buf_adds(b, "'\\''");
		else
			tpf_buf_addch(b, *s);
	}
	tpf_buf_addch(b, '\'');
}

char *tpf_shquote(const char *s)
{
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_shquote_buf(&b, s);
	return tpf_buf_detach(&b, NULL);
}

/* Helpers shared by the harnesses (tests/fuzz/fuzz.h). */
#include "tests/fuzz/fuzz.h"
#include "util/xalloc.h"

#include <string.h>

char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = xmalloc(size + 1);
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

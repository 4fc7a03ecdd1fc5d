/*
 * List paging as the API does it: pageSize and an opaque pageToken, here
 * the base64url of the last key shown, so deletions between pages skip
 * nothing. The sizes follow Google's list rule, AIP-158
 * (https://google.aip.dev/158): 0 or absent is the server's default,
 * FG_DEFAULT_PAGE (50, AIP-158's example); a size above the maximum
 * (--page-size, default 1,000, AIP-158's example) is coerced to it, not
 * refused; a negative one is a 400.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

char *fg_page_token(const char *key)
{
	return fg_b64url_encode(key, strlen(key));
}

int fg_page_params(struct fg_req *r, int *size, char **after)
{
	const char *ps = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "pageSize");
	const char *pt = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "pageToken");
	long n = ps && *ps ? strtol(ps, NULL, 10) : 0;

	*after = NULL;
	if (n < 0) {
		fg_bad_request(r, "page_size", "Invalid value for page_size: must not be negative.");
		return -1;
	}
	int max = fg_opt.page_size;
	*size = n == 0 ? (FG_DEFAULT_PAGE < max ? FG_DEFAULT_PAGE : max) : n > max ? max : (int)n;
	if (pt && *pt) {
		size_t len;
		unsigned char *raw = fg_b64url_decode(pt, strlen(pt), &len);
		if (!raw || !len || memchr(raw, 0, len)) {
			free(raw);
			fg_bad_request(r, "page_token", "The page token is invalid.");
			return -1;
		}
		*after = xstrndup((const char *)raw, len);
		free(raw);
	}
	return 0;
}

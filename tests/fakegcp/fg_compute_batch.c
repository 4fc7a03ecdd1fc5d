/*
 * POST /batch/compute/v1: Google's batch endpoint, which gcloud 528 uses
 * for lists over several zones and deletes of several instances (the
 * reference's captures C38 and C42). The body is multipart/mixed; each
 * part (Content-Type: application/http, a Content-ID) holds one HTTP
 * request: "METHOD /compute/v1/projects/...?QUERY HTTP/1.1", headers, an
 * empty line, a body. Each is answered as if it had come alone (after the
 * batch's own bearer was checked), and logged as its own request; the
 * answer is multipart/mixed with one application/http part per request,
 * in order, its Content-ID "<response-ID>".
 * Format: https://cloud.google.com/compute/docs/api/how-tos/batch (and
 * apitools' batch.py, which builds gcloud's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tests/fakegcp/fg_compute.h"
#include "util/xalloc.h"

#define BOUNDARY "batch_fakegcp_boundary"

/* The boundary of a multipart Content-Type (fresh), or NULL. */
static char *boundary_of(const char *ctype)
{
	const char *b = ctype ? strstr(ctype, "boundary=") : NULL;

	if (!ctype || strncasecmp(ctype, "multipart/mixed", 15) || !b)
		return NULL;
	b += 9;
	if (*b == '"') {
		const char *e = strchr(b + 1, '"');
		return e ? xstrndup(b + 1, (size_t)(e - b - 1)) : NULL;
	}
	return xstrndup(b, strcspn(b, "; \t\r\n"));
}

/* The next line of [*p, end) without its CR LF or LF (fresh), *p moved on. */
static char *next_line(const char **p, const char *end)
{
	const char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
	const char *e = nl ? nl : end;

	*p = nl ? nl + 1 : end;
	if (e > s && e[-1] == '\r')
		e--;
	return xstrndup(s, (size_t)(e - s));
}

/* Query string to an object of decoded values ('+' is a space). */
static json_t *parse_query(const char *q)
{
	json_t *args = json_object();
	char *copy = xstrdup(q ? q : ""), *save = NULL;

	for (char *kv = strtok_r(copy, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		if (eq)
			*eq++ = '\0';
		for (char *c = eq; c && *c; c++)
			if (*c == '+')
				*c = ' ';
		MHD_http_unescape(kv);
		if (eq)
			MHD_http_unescape(eq);
		json_object_set_new(args, kv, json_string(eq ? eq : ""));
	}
	free(copy);
	return args;
}

static void sub_free(struct fg_req *s)
{
	free(s->method);
	free(s->path);
	free(s->raw_uri);
	free(s->out);
	json_decref(s->pending);
	tpf_buf_release(&s->body);
	for (int i = 0; i < s->nhdr; i++) {
		free(s->hdr_name[i]);
		free(s->hdr_value[i]);
	}
	json_decref(s->args);
	json_decref(s->log_body);
}

/* Answer the request in one part [p, end) into out. */
static void one_part(struct fg_req *r, const char *p, const char *end, struct tpf_buf *out)
{
	char *line, *id = NULL;
	struct fg_req s = { .status = 0 };

	while (p < end) { /* the part's own headers, up to an empty line */
		line = next_line(&p, end);
		int empty = !*line;
		if (!strncasecmp(line, "Content-ID:", 11)) {
			const char *v = line + 11 + strspn(line + 11, " \t<");
			free(id);
			id = xstrndup(v, strcspn(v, ">"));
		}
		free(line);
		if (empty)
			break;
	}
	char *reqline = p < end ? next_line(&p, end) : xstrdup("");
	char *sp1 = strchr(reqline, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	while (p < end) { /* the inner request's headers: the batch's bearer stands */
		line = next_line(&p, end);
		int empty = !*line;
		free(line);
		if (empty)
			break;
	}
	tpf_buf_init(&s.body);
	s.conn = r->conn;
	s.pretty = 1;
	s.t0 = fg_mono();
	if (sp1) {
		s.method = xstrndup(reqline, (size_t)(sp1 - reqline));
		s.raw_uri = sp2 ? xstrndup(sp1 + 1, (size_t)(sp2 - sp1 - 1)) : xstrdup(sp1 + 1);
		char *q = strchr(s.raw_uri, '?');
		s.query = q && q[1] ? q + 1 : NULL;
		s.path = q ? xstrndup(s.raw_uri, (size_t)(q - s.raw_uri)) : xstrdup(s.raw_uri);
		MHD_http_unescape(s.path);
		s.args = parse_query(s.query);
		size_t blen = (size_t)(end - p);
		while (blen && (p[blen - 1] == '\n' || p[blen - 1] == '\r'))
			blen--;
		tpf_buf_add(&s.body, p, blen);
		if (!fg_compute_request(&s))
			ce_error(&s, 404, "notFound", "The requested URL was not found on this server.");
		fg_reply_flush(&s);
		fg_reqlog_add(&s);
	} else {
		s.raw_uri = xstrdup("");
		ce_error(&s, 400, "badRequest", "A batch part holds no request line.");
	}
	tpf_buf_addf(out, "--" BOUNDARY "\r\nContent-Type: application/http\r\nContent-ID: "
		     "<response-%s>\r\n\r\nHTTP/1.1 %u %s\r\nContent-Type: %s\r\n\r\n", id ? id : "",
		     s.status, MHD_get_reason_phrase_for(s.status), s.ctype ? s.ctype : "text/plain");
	tpf_buf_add(out, s.out ? s.out : "", s.out_len);
	tpf_buf_adds(out, "\r\n");
	sub_free(&s);
	free(reqline);
	free(id);
}

int fg_compute_batch(struct fg_req *r)
{
	if (strcmp(r->path, "/batch/compute/v1"))
		return 0;
	if (strcmp(r->method, "POST")) {
		ce_error(r, 405, "methodNotAllowed", "Method %s is not allowed on a batch.", r->method);
		return 1;
	}
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Type");
	char *b = boundary_of(ct);
	if (!b) {
		ce_error(r, 400, "badRequest", "A batch request is multipart/mixed with a boundary.");
		return 1;
	}
	char *delim = xasprintf("--%s", b);
	struct tpf_buf out = TPF_BUF_INIT;
	const char *body = r->body.buf ? r->body.buf : "", *end = body + r->body.len;
	const char *p = memmem(body, r->body.len, delim, strlen(delim));
	while (p) {
		p += strlen(delim);
		if (end - p >= 2 && !strncmp(p, "--", 2))
			break; /* the closing delimiter */
		const char *next = memmem(p, (size_t)(end - p), delim, strlen(delim));
		one_part(r, p + strspn(p, "\r\n"), next ? next : end, &out);
		p = next;
	}
	tpf_buf_adds(&out, "--" BOUNDARY "--\r\n");
	fg_reply_bytes(r, 200, "multipart/mixed; boundary=" BOUNDARY, out.buf, out.len);
	tpf_buf_release(&out);
	free(delim);
	free(b);
	return 1;
}

/*
 * Request bodies against the discovery schemas, answered in the words of
 * Google's JSON-to-proto front end (ESF), whose messages name fields by
 * their proto (snake_case) path under the request field that holds the
 * body ('node' for nodes.create/patch):
 *
 *   Invalid JSON payload received. Unknown name "acceleratorTyp" at 'node': Cannot find field.
 *   Invalid value at 'node.scheduling_config.preemptible' (TYPE_BOOL), "yes"
 *   Invalid JSON payload received. Unknown name "tags" at 'node': Proto field is not repeating, cannot start list.
 *
 * Several problems are joined with newlines and each is also a
 * google.rpc.BadRequest field violation, as the real API does. Like a proto
 * parser, both camelCase and snake_case field names are accepted and null
 * means "not set". Output-only fields are type-checked, then dropped.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define PROTO_PKG "type.googleapis.com/google.cloud.tpu.v2."

struct vctx {
	struct tpf_buf msg;
	json_t *violations;
	int flags;
	int missing; /* second pass: report required fields that are not set */
};

char *fg_snake(const char *camel)
{
	struct tpf_buf b = TPF_BUF_INIT;

	for (const char *p = camel; *p; p++) {
		if (isupper((unsigned char)*p)) {
			tpf_buf_addch(&b, '_');
			tpf_buf_addch(&b, tolower((unsigned char)*p));
		} else {
			tpf_buf_addch(&b, *p);
		}
	}
	return tpf_buf_detach(&b, NULL);
}

static char *camel(const char *snake)
{
	struct tpf_buf b = TPF_BUF_INIT;

	for (const char *p = snake; *p; p++) {
		if (*p == '_' && p[1]) {
			tpf_buf_addch(&b, toupper((unsigned char)p[1]));
			p++;
		} else {
			tpf_buf_addch(&b, *p);
		}
	}
	return tpf_buf_detach(&b, NULL);
}

json_t *fg_camel_path(const char *path)
{
	struct tpf_buf b = TPF_BUF_INIT;
	char *copy = xstrdup(path), *save = NULL;

	for (char *seg = strtok_r(copy, ".", &save); seg; seg = strtok_r(NULL, ".", &save)) {
		char *c = camel(seg);
		tpf_buf_addf(&b, "%s%s", b.len ? "." : "", c);
		free(c);
	}
	free(copy);
	json_t *out = json_string(b.buf ? b.buf : "");
	tpf_buf_release(&b);
	return out;
}

static void violation(struct vctx *c, const char *field, const char *desc)
{
	if (c->msg.len)
		tpf_buf_addch(&c->msg, '\n');
	tpf_buf_adds(&c->msg, desc);
	json_t *v = json_object();
	if (field && *field)
		json_object_set_new(v, "field", json_string(field));
	json_object_set_new(v, "description", json_string(desc));
	json_array_append_new(c->violations, v);
}

static void unknown_name(struct vctx *c, const char *name, const char *at, const char *why)
{
	char *d = *at ? xasprintf("Invalid JSON payload received. Unknown name \"%s\" at '%s': %s",
				  name, at, why)
		      : xasprintf("Invalid JSON payload received. Unknown name \"%s\": %s", name, why);
	violation(c, at, d);
	free(d);
}

static void invalid_value(struct vctx *c, const char *path, const char *type, json_t *v)
{
	char *val = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	char *d = xasprintf("Invalid value at '%s' (%s), %s", path, type, val ? val : "null");

	violation(c, path, d);
	free(d);
	free(val);
}

static int is_output_only(json_t *prop)
{
	const char *desc = json_string_value(json_object_get(prop, "description"));

	return json_is_true(json_object_get(prop, "readOnly")) ||
	       (desc && !strncmp(desc, "Output only.", 12));
}

static int is_required(json_t *prop)
{
	const char *desc = json_string_value(json_object_get(prop, "description"));

	return desc && !strncmp(desc, "Required.", 9);
}

/* Integers may come as JSON numbers or decimal strings (proto3 JSON). */
static int int_value_ok(json_t *v, long long min, long long max)
{
	long long x;

	if (json_is_integer(v)) {
		x = json_integer_value(v);
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;
		errno = 0;
		x = strtoll(s, &end, 10);
		if (!*s || *end || errno)
			return 0;
	} else if (json_is_real(v)) {
		double d = json_real_value(v);
		if (d != (double)(long long)d)
			return 0;
		x = (long long)d;
	} else {
		return 0;
	}
	return x >= min && x <= max;
}

static int duration_ok(const char *s)
{
	const char *p = s;

	if (*p == '-')
		p++;
	if (!isdigit((unsigned char)*p))
		return 0;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p == '.') {
		int n = 0;
		for (p++; isdigit((unsigned char)*p); p++)
			n++;
		if (n < 1 || n > 9)
			return 0;
	}
	return p[0] == 's' && !p[1];
}

static int datetime_ok(const char *s)
{
	struct tm tm;
	const char *p;

	memset(&tm, 0, sizeof(tm));
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return 0;
	if (*p == '.') {
		int n = 0;
		for (p++; isdigit((unsigned char)*p); p++)
			n++;
		if (n < 1 || n > 9)
			return 0;
	}
	if (*p == 'Z' || *p == 'z')
		return !p[1];
	if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) &&
	    isdigit((unsigned char)p[2]) && p[3] == ':' && isdigit((unsigned char)p[4]) &&
	    isdigit((unsigned char)p[5]) && !p[6])
		return 1;
	return 0;
}

/* "Node" + "apiVersion" -> "...tpu.v2.Node.ApiVersion" (the enum's proto name). */
static char *enum_type(const char *schema, const char *field)
{
	char *c = camel(field);

	c[0] = (char)toupper((unsigned char)c[0]);
	char *t = xasprintf(PROTO_PKG "%s.%s", schema, c);
	free(c);
	return t;
}

static void check_object(struct vctx *c, const char *schema_name, json_t *obj, const char *at);

/*
 * One value v of property prop. path names it ('node.scheduling_config');
 * at names the object holding it and name the key used, for the
 * "Unknown name" family of messages; owner is the schema holding prop.
 */
static void check_value(struct vctx *c, json_t *prop, json_t *v, const char *path,
			const char *at, const char *name, const char *owner, const char *field)
{
	const char *ref = json_string_value(json_object_get(prop, "$ref"));
	const char *type = json_string_value(json_object_get(prop, "type"));
	const char *fmt = json_string_value(json_object_get(prop, "format"));

	if (json_is_null(v))
		return;
	if (ref) {
		if (json_is_array(v)) {
			unknown_name(c, name, at, "Proto field is not repeating, cannot start list.");
		} else if (!json_is_object(v)) {
			char *t = xasprintf(PROTO_PKG "%s", ref);
			invalid_value(c, path, t, v);
			free(t);
		} else {
			check_object(c, ref, v, path);
		}
		return;
	}
	if (!type || !strcmp(type, "any"))
		return;
	if (!strcmp(type, "array")) {
		json_t *items = json_object_get(prop, "items");
		size_t i;
		json_t *e;

		if (!json_is_array(v)) {
			if (json_is_object(v))
				unknown_name(c, name, at, "Starting an object on a scalar field");
			else
				invalid_value(c, path, "TYPE_STRING", v);
			return;
		}
		json_array_foreach(v, i, e) {
			char *p = xasprintf("%s[%zu]", path, i);
			if (json_is_null(e))
				invalid_value(c, p, "TYPE_STRING", e); /* proto3 JSON: no null items */
			else if (json_is_array(e))
				unknown_name(c, name, at, "Proto field is not repeating, cannot start list.");
			else
				check_value(c, items, e, p, at, name, owner, field);
			free(p);
		}
		return;
	}
	if (!strcmp(type, "object")) {
		json_t *ap = json_object_get(prop, "additionalProperties");
		const char *k;
		json_t *e;

		if (json_is_array(v)) {
			unknown_name(c, name, at, "Proto field is not repeating, cannot start list.");
			return;
		}
		if (!json_is_object(v)) {
			invalid_value(c, path, "type.googleapis.com/google.protobuf.Struct", v);
			return;
		}
		if (!ap)
			return;
		json_object_foreach(v, k, e) {
			char *p = xasprintf("%s[%s]", path, k);
			if (json_is_null(e))
				invalid_value(c, p, "TYPE_STRING", e); /* proto3 JSON: no null values */
			else
				check_value(c, ap, e, p, path, k, owner, field);
			free(p);
		}
		return;
	}
	if (json_is_array(v)) {
		unknown_name(c, name, at, "Proto field is not repeating, cannot start list.");
		return;
	}
	if (json_is_object(v)) {
		unknown_name(c, name, at, "Starting an object on a scalar field");
		return;
	}
	if (!strcmp(type, "boolean")) {
		if (!json_is_boolean(v))
			invalid_value(c, path, "TYPE_BOOL", v);
	} else if (!strcmp(type, "integer")) {
		int u = fmt && !strcmp(fmt, "uint32");
		if (!int_value_ok(v, u ? 0 : INT_MIN, u ? (long long)UINT_MAX : INT_MAX))
			invalid_value(c, path, u ? "TYPE_UINT32" : "TYPE_INT32", v);
	} else if (!strcmp(type, "number")) {
		if (!json_is_number(v) && !json_is_string(v))
			invalid_value(c, path, "TYPE_DOUBLE", v);
	} else if (!strcmp(type, "string")) {
		json_t *en = json_object_get(prop, "enum");
		if (fmt && (!strcmp(fmt, "int64") || !strcmp(fmt, "uint64"))) {
			if (!int_value_ok(v, !strcmp(fmt, "int64") ? LLONG_MIN : 0, LLONG_MAX))
				invalid_value(c, path, !strcmp(fmt, "int64") ? "TYPE_INT64"
									  : "TYPE_UINT64", v);
		} else if (!json_is_string(v)) {
			if (en && json_is_integer(v) && json_integer_value(v) >= 0 &&
			    (size_t)json_integer_value(v) < json_array_size(en))
				return;
			if (en) {
				char *t = enum_type(owner, field);
				invalid_value(c, path, t, v);
				free(t);
			} else {
				invalid_value(c, path, "TYPE_STRING", v);
			}
		} else if (en) {
			size_t i;
			json_t *e;
			int found = 0;
			json_array_foreach(en, i, e)
				if (json_equal(e, v))
					found = 1;
			if (!found) {
				char *t = enum_type(owner, field);
				invalid_value(c, path, t, v);
				free(t);
			}
		} else if (fmt && !strcmp(fmt, "google-duration")) {
			if (!duration_ok(json_string_value(v)))
				invalid_value(c, path, "type.googleapis.com/google.protobuf.Duration", v);
		} else if (fmt && !strcmp(fmt, "google-datetime")) {
			if (!datetime_ok(json_string_value(v)))
				invalid_value(c, path, "type.googleapis.com/google.protobuf.Timestamp", v);
		}
	}
}

static void check_object(struct vctx *c, const char *schema_name, json_t *obj, const char *at)
{
	json_t *props = json_object_get(fg_schema(schema_name), "properties");
	json_t *drop = json_array();
	json_t *renames = json_object();
	const char *key;
	json_t *v, *prop;

	json_object_foreach(obj, key, v) {
		const char *field = key;
		char *alt = NULL;

		prop = json_object_get(props, key);
		if (!prop && strchr(key, '_')) {
			alt = camel(key);
			prop = json_object_get(props, alt);
			field = alt;
		}
		if (!prop) {
			unknown_name(c, key, at, "Cannot find field.");
			free(alt);
			continue;
		}
		char *snake = fg_snake(field);
		char *path = *at ? xasprintf("%s.%s", at, snake) : xstrdup(snake);
		check_value(c, prop, v, path, at, key, schema_name, field);
		if (json_is_null(v) || ((c->flags & FG_V_STRIP_RO) && is_output_only(prop)))
			json_array_append_new(drop, json_string(key));
		else if (alt)
			json_object_set_new(renames, key, json_string(alt));
		free(path);
		free(snake);
		free(alt);
	}
	size_t i;
	json_array_foreach(drop, i, v)
		json_object_del(obj, json_string_value(v));
	json_decref(drop);
	/* Stored resources use the JSON (camelCase) names only. */
	json_object_foreach(renames, key, v) {
		json_object_set(obj, json_string_value(v), json_object_get(obj, key));
		json_object_del(obj, key);
	}
	json_decref(renames);

	if (!(c->flags & FG_V_REQUIRED) || !c->missing)
		return;
	json_object_foreach(props, key, prop) {
		if (!is_required(prop))
			continue;
		char *snake = fg_snake(key);
		json_t *val = json_object_get(obj, key);
		if (!val || (json_is_string(val) && !*json_string_value(val))) {
			/* Our wording: the real API's text for this case is not on record. */
			char *path = *at ? xasprintf("%s.%s", at, snake) : xstrdup(snake);
			char *d = xasprintf("Invalid value at '%s': required field is not set. "
					    "Set '%s' and try again.", path, key);
			violation(c, path, d);
			free(d);
			free(path);
		}
		free(snake);
	}
}

/* The request field that carries the body: 'node' for a Node body,
 * nothing for "...Request" bodies (body: "*"). */
static char *body_field(const char *schema)
{
	size_t n = strlen(schema);

	if (n > 7 && !strcmp(schema + n - 7, "Request"))
		return xstrdup("");
	char *s = fg_snake(schema);
	if (s[0] == '_')
		memmove(s, s + 1, strlen(s));
	return s;
}

int fg_validate_body(struct fg_req *r, const struct fg_method *m, json_t *body, int flags)
{
	const char *schema = fg_method_request(m);
	struct vctx c = { TPF_BUF_INIT, json_array(), flags, 0 };
	int rc = 0;

	if (!schema)
		goto done;
	if (!json_is_object(body)) {
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
			       "Invalid JSON payload received. Root element must be a message.");
		rc = -1;
		goto done;
	}
	char *at = body_field(schema);
	/* Pass 1 is the parse (names, types); only a body that parses is
	 * checked for required fields (pass 2), as the API validates after
	 * parsing. */
	check_object(&c, schema, body, at);
	if (!c.msg.len && (flags & FG_V_REQUIRED)) {
		c.missing = 1;
		check_object(&c, schema, body, at);
	}
	free(at);
	if (c.msg.len) {
		json_t *details = json_pack("[{s:s, s:O}]", "@type",
					    "type.googleapis.com/google.rpc.BadRequest",
					    "fieldViolations", c.violations);
		fg_reply_error(r, 400, "INVALID_ARGUMENT", details, "%s", c.msg.buf);
		rc = -1;
	}
done:
	json_decref(c.violations);
	tpf_buf_release(&c.msg);
	return rc;
}

static int is_default(json_t *prop, json_t *v)
{
	json_t *en = json_object_get(prop, "enum");

	if (json_is_false(v) || json_is_null(v))
		return 1;
	if (json_is_integer(v))
		return json_integer_value(v) == 0;
	if (json_is_real(v))
		return json_real_value(v) == 0.0;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (!*s)
			return 1;
		if (en && json_equal(json_array_get(en, 0), v))
			return 1;
		const char *fmt = json_string_value(json_object_get(prop, "format"));
		return fmt && (!strcmp(fmt, "int64") || !strcmp(fmt, "uint64")) && !strcmp(s, "0");
	}
	if (json_is_array(v))
		return json_array_size(v) == 0;
	if (json_is_object(v) && !json_object_get(prop, "$ref"))
		return json_object_size(v) == 0;
	return 0;
}

void fg_proto3_prune(const char *schema, json_t *obj)
{
	json_t *props = json_object_get(fg_schema(schema), "properties");
	json_t *drop = json_array();
	const char *key;
	json_t *v;
	size_t i;

	if (!json_is_object(obj))
		goto done;
	json_object_foreach(obj, key, v) {
		json_t *prop = json_object_get(props, key);
		const char *ref = json_string_value(json_object_get(prop, "$ref"));
		const char *iref = json_string_value(
			json_object_get(json_object_get(prop, "items"), "$ref"));

		if (!prop)
			continue;
		if (ref) {
			fg_proto3_prune(ref, v);
		} else if (iref && json_is_array(v)) {
			size_t j;
			json_t *e;
			json_array_foreach(v, j, e)
				fg_proto3_prune(iref, e);
		}
		if (is_default(prop, v))
			json_array_append_new(drop, json_string(key));
	}
	json_array_foreach(drop, i, v)
		json_object_del(obj, json_string_value(v));
done:
	json_decref(drop);
}

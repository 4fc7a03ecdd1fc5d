/*
 * Compute request bodies against tests/fakegcp/compute.v1.schema.json, the
 * messages of the resources served, generated from gcloud 528's
 * compute_v1_messages.py plus the current v1 additions
 * (tests/fakegcp/compute-schema.py says which and why).
 *
 * Compute's JSON front end is ESF (responses carry "Server: ESF"), so the
 * wording is ESF's, as on the TPU side (fg_schema.c), naming fields by
 * their proto path under the request field that holds the body
 * ('resource'):
 *   Invalid JSON payload received. Unknown name "foo" at 'resource.scheduling': Cannot find field.
 *   Invalid value at 'resource.scheduling.automatic_restart' (TYPE_BOOL), "yes"
 *   Invalid value at 'resource.scheduling.provisioning_model' (type.googleapis.com/google.cloud.compute.v1.Scheduling.ProvisioningModel), "FOO"
 * in Compute's error body with reason "invalid". The first problem found
 * is reported. camelCase and snake_case names are both accepted (snake
 * ones are renamed to camelCase for the handlers); null means unset.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fg_compute.h"
#include "util/xalloc.h"

static json_t *messages; /* name -> field -> spec */

int ce_schema_load(const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);

	if (!doc || !json_is_object(json_object_get(doc, "messages"))) {
		snprintf(err, errlen, "cannot load the Compute schema '%s': %s", path,
			 doc ? "no \"messages\"" : je.text);
		json_decref(doc);
		return -1;
	}
	messages = json_incref(json_object_get(doc, "messages"));
	json_decref(doc);
	return 0;
}

void ce_schema_free(void)
{
	json_decref(messages);
	messages = NULL;
}

struct vc {
	struct fg_req *r;
	int failed;
};

static void fail(struct vc *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct vc *c, const char *fmt, ...)
{
	va_list ap;

	if (c->failed++)
		return;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	ce_error(c->r, 400, "invalid", "%s", msg);
	free(msg);
}

static char *camel(const char *snake)
{
	struct tpf_buf b = TPF_BUF_INIT;

	for (const char *p = snake; *p; p++) {
		if (*p == '_' && p[1]) {
			tpf_buf_addch(&b, (char)toupper((unsigned char)p[1]));
			p++;
		} else {
			tpf_buf_addch(&b, *p);
		}
	}
	return tpf_buf_detach(&b, NULL);
}

static int digits(const char *s, int sign)
{
	if (sign && *s == '-')
		s++;
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

static const char *scalar_type(const char *t)
{
	if (!strcmp(t, "int32")) return "TYPE_INT32";
	if (!strcmp(t, "int64")) return "TYPE_INT64";
	if (!strcmp(t, "uint32")) return "TYPE_UINT32";
	if (!strcmp(t, "uint64")) return "TYPE_UINT64";
	if (!strcmp(t, "bool")) return "TYPE_BOOL";
	if (!strcmp(t, "double")) return "TYPE_DOUBLE";
	if (!strcmp(t, "bytes")) return "TYPE_BYTES";
	return "TYPE_STRING";
}

static int scalar_ok(const char *t, json_t *v)
{
	if (!strcmp(t, "bool"))
		return json_is_boolean(v);
	if (!strcmp(t, "string") || !strcmp(t, "bytes"))
		return json_is_string(v);
	if (!strcmp(t, "double"))
		return json_is_number(v);
	int sign = t[0] == 'i';
	if (json_is_integer(v))
		return sign || json_integer_value(v) >= 0;
	if (!json_is_string(v) || !digits(json_string_value(v), sign))
		return 0;
	if (!strcmp(t, "int32") || !strcmp(t, "uint32")) {
		errno = 0;
		long long x = strtoll(json_string_value(v), NULL, 10);
		return !errno && x >= (sign ? INT_MIN : 0) && x <= (sign ? INT_MAX : (long long)UINT_MAX);
	}
	return 1;
}

static void check_msg(struct vc *c, const char *msg, json_t *obj, const char *path);

static void check_one(struct vc *c, const char *msg, const char *fname, json_t *spec, json_t *v,
		      const char *path)
{
	const char *t = json_string_value(json_object_get(spec, "t"));

	if (!strcmp(t, "message")) {
		if (!json_is_object(v))
			fail(c, "Invalid value at '%s' (type.googleapis.com/google.cloud.compute.v1.%s), "
			     "%s", path, json_string_value(json_object_get(spec, "m")),
			     json_is_string(v) ? json_string_value(v) : "a non-object value");
		else
			check_msg(c, json_string_value(json_object_get(spec, "m")), v, path);
	} else if (!strcmp(t, "map")) {
		const char *k;
		json_t *e;
		if (!json_is_object(v)) {
			fail(c, "Invalid JSON payload received. Expected an object for '%s'.", path);
			return;
		}
		json_object_foreach(v, k, e) {
			char *p = xasprintf("%s[%s]", path, k);
			check_one(c, msg, fname, json_object_get(spec, "v"), e, p);
			free(p);
		}
	} else if (!strcmp(t, "enum")) {
		size_t i;
		json_t *e;
		json_array_foreach(json_object_get(spec, "e"), i, e)
			if (json_is_string(v) && !strcmp(json_string_value(e), json_string_value(v)))
				return;
		char *dump = json_dumps(v, JSON_ENCODE_ANY);
		char up = (char)toupper((unsigned char)fname[0]);
		fail(c, "Invalid value at '%s' (type.googleapis.com/google.cloud.compute.v1.%s.%c%s), "
		     "%s", path, msg, up, fname + 1, dump);
		free(dump);
	} else if (!scalar_ok(t, v)) {
		char *dump = json_dumps(v, JSON_ENCODE_ANY);
		fail(c, "Invalid value at '%s' (%s), %s", path, scalar_type(t), dump);
		free(dump);
	}
}

static void check_msg(struct vc *c, const char *msg, json_t *obj, const char *path)
{
	json_t *fields = json_object_get(messages, msg);
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(obj, tmp, k, v) {
		char *name = strchr(k, '_') ? camel(k) : xstrdup(k);
		json_t *spec = json_object_get(fields, name);
		if (!spec) {
			fail(c, "Invalid JSON payload received. Unknown name \"%s\" at '%s': Cannot "
			     "find field.", k, path);
			free(name);
			return;
		}
		if (strcmp(name, k)) { /* snake_case: keep it under its JSON name */
			json_object_set(obj, name, v);
			json_object_del(obj, k);
			v = json_object_get(obj, name);
		}
		char *snake = fg_snake(name);
		char *p = xasprintf("%s.%s", path, snake);
		free(snake);
		if (json_is_null(v)) {
			/* unset */
		} else if (json_is_true(json_object_get(spec, "r"))) {
			size_t i;
			json_t *e;
			if (!json_is_array(v))
				fail(c, "Invalid value at '%s': a list was expected.", p);
			json_array_foreach(json_is_array(v) ? v : NULL, i, e) {
				char *pi = xasprintf("%s[%zu]", p, i);
				if (json_is_null(e))
					fail(c, "Invalid value at '%s': null is not allowed in a list.",
					     pi);
				else
					check_one(c, msg, name, spec, e, pi);
				free(pi);
			}
		} else if (json_is_array(v)) {
			fail(c, "Invalid JSON payload received. Unknown name \"%s\" at '%s': Proto "
			     "field is not repeating, cannot start list.", k, path);
		} else {
			check_one(c, msg, name, spec, v, p);
		}
		free(p);
		free(name);
		if (c->failed)
			return;
	}
}

int ce_validate(struct fg_req *r, const char *msg, json_t *body, const char *at)
{
	struct vc c = { r, 0 };

	if (!body) {
		ce_error(r, 400, "required", "Required field '%s' not specified", at);
		return -1;
	}
	if (!json_is_object(body)) {
		ce_error(r, 400, "invalid", "Invalid JSON payload received. Expected an object.");
		return -1;
	}
	check_msg(&c, msg, body, at);
	return c.failed ? -1 : 0;
}

/* ---- the types of answers, for partial responses (fg_fields.c) ---- */

/* Fields of the list wrappers and of Operation, which the schema file
 * does not carry (the v1 reference: InstanceList, InstanceAggregatedList,
 * InstancesScopedList, Operation). */
static const char *const list_fields[] = {
	"kind", "id", "items", "nextPageToken", "selfLink", "warning", "unreachables", NULL,
};
static const char *const op_fields[] = {
	"kind", "id", "creationTimestamp", "name", "zone", "clientOperationId", "operationType",
	"targetLink", "targetId", "status", "statusMessage", "user", "progress", "insertTime",
	"startTime", "endTime", "error", "warnings", "httpErrorStatusCode", "httpErrorMessage",
	"selfLink", "region", "description", "operationGroupId",
	"instancesBulkInsertOperationMetadata", "setCommonInstanceMetadataOperationMetadata",
	NULL,
};

static int among(const char *const *v, const char *name)
{
	for (; *v; v++)
		if (!strcmp(*v, name))
			return 1;
	return 0;
}

/* "compute#instanceAggregatedList" -> "AggList:Instance:instances",
 * "compute#instanceList" -> "List:Instance", "compute#instance" ->
 * "Instance". */
char *ce_kind_type(const char *kind)
{
	if (!kind || strncmp(kind, "compute#", 8) || !kind[8])
		return NULL;
	char *k = xstrdup(kind + 8), *out;
	size_t n = strlen(k);
	k[0] = (char)toupper((unsigned char)k[0]);
	if (n > 14 && !strcmp(k + n - 14, "AggregatedList")) {
		k[n - 14] = '\0';
		char *coll = xasprintf("%c%ss", tolower((unsigned char)k[0]), k + 1);
		out = xasprintf("AggList:%s:%s", k, coll);
		free(coll);
	} else if (n > 4 && !strcmp(k + n - 4, "List")) {
		k[n - 4] = '\0';
		out = xasprintf("List:%s", k);
	} else {
		out = xstrdup(k);
	}
	free(k);
	return out;
}

/* The type of a field of a wrapper ("List:", "AggList:", "Scoped:"). */
static char *wrapper_field(const char *type, const char *name, int *ok)
{
	const char *rest = strchr(type, ':') + 1;
	if (!strncmp(type, "Scoped:", 7)) {
		const char *coll = strchr(rest, ':');
		*ok = !strcmp(name, "warning") || (coll && !strcmp(name, coll + 1));
		return *ok && strcmp(name, "warning") ? xstrndup(rest, (size_t)(coll - rest))
						      : xstrdup("");
	}
	*ok = among(list_fields, name);
	if (!*ok || strcmp(name, "items"))
		return xstrdup("");
	if (!strncmp(type, "AggList:", 8))
		return xasprintf("map:Scoped:%s", rest);
	return xstrdup(rest);
}

char *ce_field_type(const char *type, const char *name, int *ok)
{
	if (strchr(type, ':'))
		return wrapper_field(type, name, ok);
	if (!strcmp(type, "Operation")) {
		*ok = among(op_fields, name);
		return xstrdup("");
	}
	json_t *msg = json_object_get(messages, type);
	json_t *spec = json_object_get(msg, name);
	*ok = !msg || spec; /* a message the file lacks is not checked */
	const char *t = json_string_value(json_object_get(spec, "t"));
	if (t && !strcmp(t, "message"))
		return xstrdup(json_string_value(json_object_get(spec, "m")));
	if (t && !strcmp(t, "map")) {
		const char *m = json_string_value(json_object_get(json_object_get(spec, "v"), "m"));
		return xasprintf("map:%s", m ? m : "");
	}
	return xstrdup("");
}

/*
 * The catalog's price table beside the state (engine/ledger/price_catalog.h):
 * fetched through google/billing.h, stored and read through the object
 * store seam (state/objstore.h), so it lives where the state lives, a
 * local file or Cloud Storage.
 */
#include "engine/ledger/price_catalog.h"
#include "config/config.h"
#include "engine/state_store.h"
#include "google/billing.h"
#include "state/objstore.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* "<state>.prices.json" (local) or "[PREFIX/]<fleet>.prices.json". */
#define SUFFIX "."
#define OBJECT "prices.json"
/* A stored table is a few hundred rows: 16 MiB is far above any. */
#define TABLE_MAX ((size_t)16 << 20)

static int store_open(const struct tpf_fleet *f, struct tpf_objstore **s, struct tpf_diags *d)
{
	*s = NULL;
	struct tpf_backend_gcs_config c;
	if (!f->state_path && !tpf_fleet_gcs_config(f, &c))
		return TPF_ENOTFOUND; /* a fleet with no state (tests): no table */
	return tpf_fleet_objstore_open(s, f, SUFFIX, d);
}

/* Both services' SKUs into skus. */
static int fetch(const struct tpf_fleet *f, json_t *skus, char **endpoint, struct tpf_diags *d)
{
	struct tpf_gcp_auth_config auth = {
		.credentials = f->gcp.credentials,
		.impersonate = f->gcp.impersonate_service_account,
		.quota_project = f->gcp.quota_project,
	};
	struct tpf_billing *b;
	if (tpf_billing_open(&b, &auth, d))
		return TPF_ERROR;
	int rc = tpf_billing_skus(b, TPF_BILLING_SERVICE_COMPUTE, skus, d);
	if (!rc)
		rc = tpf_billing_skus(b, TPF_BILLING_SERVICE_TPU, skus, d);
	*endpoint = xstrdup(tpf_billing_endpoint(b));
	tpf_billing_free(b);
	return rc;
}

int tpf_price_catalog_refresh(const struct tpf_fleet *f, double now, json_t **doc,
			      struct tpf_diags *d)
{
	*doc = NULL;
	json_t *skus = json_array();
	char *endpoint = NULL;
	int rc = fetch(f, skus, &endpoint, d);
	json_t *table = rc ? NULL : tpf_price_catalog_build(skus, now, endpoint);
	free(endpoint);
	json_decref(skus);
	if (rc)
		return rc;
	struct tpf_objstore *s;
	rc = store_open(f, &s, d);
	if (rc == TPF_ENOTFOUND)
		rc = tpf_error(d, "fleet '%s' has no state to keep the price table beside", f->name);
	char *text = rc ? NULL : json_dumps(table, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
	if (text)
		rc = tpf_objstore_put(s, OBJECT, text, strlen(text), "application/json",
				      TPF_OBJ_REPEATABLE, NULL, d);
	free(text);
	tpf_objstore_free(s);
	if (rc) {
		json_decref(table);
		return rc < 0 ? rc : TPF_ERROR;
	}
	*doc = table;
	return 0;
}

int tpf_price_catalog_load(const struct tpf_fleet *f, json_t **doc, struct tpf_diags *d)
{
	*doc = NULL;
	struct tpf_objstore *s;
	int rc = store_open(f, &s, d);
	if (rc == TPF_ENOTFOUND)
		return 0;
	struct tpf_buf b = TPF_BUF_INIT;
	if (!rc)
		rc = tpf_objstore_get(s, OBJECT, TABLE_MAX, "price table", &b, NULL, d);
	if (rc == TPF_ENOTFOUND) {
		rc = 0;
	} else if (!rc) {
		json_error_t e;
		*doc = json_loadb(b.buf, b.len, 0, &e);
		if (!json_is_object(*doc)) {
			char *where = tpf_objstore_where(s, OBJECT);
			rc = tpf_errorx(d, NULL, "Run tpuform prices -refresh to write it again.",
					"%s:%d:%d: the price table is not a JSON object: %s", where,
					e.line, e.column, *doc ? "another type" : e.text);
			free(where);
			json_decref(*doc);
			*doc = NULL;
		}
	}
	tpf_buf_release(&b);
	tpf_objstore_free(s);
	return rc < 0 ? rc : rc ? TPF_ERROR : 0;
}

void tpf_prices_load(const struct tpf_fleet *f, struct tpf_prices *out, struct tpf_diags *d)
{
	tpf_prices_from_fleet(f, out);
	struct tpf_diags rd = TPF_DIAGS_INIT;
	json_t *doc = NULL;
	if (tpf_price_catalog_load(f, &doc, &rd)) {
		if (d)
			tpf_warn(d, NULL, "the catalog's price table was not used: %s",
				 rd.n ? rd.items[0].summary : "unknown error");
	} else if (doc) {
		tpf_prices_use_catalog(out, doc);
	}
	tpf_diags_release(&rd);
}

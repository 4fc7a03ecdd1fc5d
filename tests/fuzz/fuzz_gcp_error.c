/*
 * Google API error bodies and long-running operations
 * (google/gcp_errors.h; docs/cloud-tpu-api.md section 6, AIP-193). The
 * input is taken as the body of an HTTP error answer at each status the
 * client treats differently (anything: JSON of either shape, an OAuth2
 * {"error","error_description"}, HTML from a proxy), and, when it is JSON,
 * as an Operation whose "error" is a google.rpc.Status (what
 * providers/gcp/gcp_api.c wait_op reads once "done" is true) and as a bare
 * Status. Each parsed error is classified, formatted and given its hint,
 * as the client does before it reports.
 */
#include "tests/fuzz/fuzz.h"
#include "google/gcp_errors.h"
#include "util/buf.h"

#include <jansson.h>
#include <stdlib.h>

static void report(struct tpf_gcp_error *e)
{
	struct tpf_buf b = TPF_BUF_INIT;
	enum tpf_gcp_class c = tpf_gcp_error_classify(e);
	(void)tpf_gcp_class_rc(c);
	(void)tpf_gcp_code_name(e->code);
	tpf_gcp_error_format(e, &b);
	free(tpf_gcp_error_hint(e, c, "fuzz-project"));
	free(tpf_gcp_error_hint(e, c, NULL));
	tpf_buf_release(&b);
	tpf_gcp_error_release(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long statuses[] = { 400, 401, 403, 404, 408, 409, 429, 500, 503, 0 };
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
		tpf_gcp_error_parse_http(&e, statuses[i], (const char *)data, size);
		if (!e.message)
			abort(); /* documented: never NULL after parsing */
		report(&e);
	}
	json_t *root = json_loadb((const char *)data, size, 0, NULL);
	if (root) {
		json_t *err = json_object_get(root, "error");
		(void)json_is_true(json_object_get(root, "done"));
		if (json_is_object(err)) {
			struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
			tpf_gcp_error_parse_status(&e, err);
			report(&e);
		}
		struct tpf_gcp_error bare = TPF_GCP_ERROR_INIT;
		tpf_gcp_error_parse_status(&bare, root);
		report(&bare);
		json_decref(root);
	}
	return 0;
}

/*
 * Cloud Storage answers and what tpuform reads out of the bucket
 * (google/gcs_internal.h, state/backend_gcs.c): the input is taken
 *  - as the body of an objects.get / insert answer (the Object resource:
 *    generation, metageneration and size as decimal strings, md5Hash,
 *    updated), at a success and an error status;
 *  - as the content of the lock object another writer left (Terraform's
 *    Lock Info JSON, which anyone with write access to the bucket may have
 *    written), formatted into the "Error acquiring the state lock"
 *    diagnostic exactly as a held lock is reported.
 * The state object itself is the state file's JSON: fuzz_state covers it.
 */
#include "tests/fuzz/fuzz.h"
#include "google/gcs_internal.h"
#include "state/backend_priv.h"
#include "util/diag.h"

#include <jansson.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long statuses[] = { 200, 412 };
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		struct tpf_gcs_object o = { 0 };
		struct tpf_diags d = TPF_DIAGS_INIT;
		int rc = tpf_gcs_parse_object((const char *)data, size, "fuzz", statuses[i], &o, &d);
		if (rc == 0 && o.generation <= 0)
			abort(); /* documented: success names a positive generation */
		if (rc != 0 && d.n == 0)
			abort(); /* documented: a failure says why */
		tpf_gcs_object_release(&o);
		tpf_diags_release(&d);
	}
	json_t *info = json_loadb((const char *)data, size, 0, NULL);
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (tpf_lock_conflict(&d, "fuzz: the lock object exists", info, "unreadable", 1) !=
	    TPF_ELOCKED || d.n == 0)
		abort(); /* documented: always TPF_ELOCKED with one diagnostic */
	tpf_diags_release(&d);
	json_decref(info);
	return 0;
}

/*
 * Saved plans (plan/planfile.c tpf_plan_from_json, read by
 * engine/saved_plan.c with json_load_file and no flags): `tpuform apply
 * FILE` and `show FILE` take a file a pipeline may have handed over. A plan
 * that parses is rendered as `show` does, checked for staleness as `apply`
 * does, and written back as JSON (a plan must survive a round trip).
 */
#include "tests/fuzz/fuzz.h"
#include "plan/plan.h"
#include "util/buf.h"
#include "util/diag.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static void round_trip(const struct tpf_plan *p)
{
	struct tpf_plan again;
	struct tpf_diags d = TPF_DIAGS_INIT;
	json_t *j = tpf_plan_to_json(p);
	char *first = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	if (tpf_plan_from_json(&again, j, "fuzz round trip", &d) != 0)
		abort(); /* we wrote a plan we cannot read back */
	json_t *j2 = tpf_plan_to_json(&again);
	char *second = json_dumps(j2, JSON_COMPACT | JSON_SORT_KEYS);
	if (!first || !second || strcmp(first, second))
		abort(); /* the plan changed on its way through the file */
	free(first);
	free(second);
	json_decref(j);
	json_decref(j2);
	tpf_plan_release(&again);
	tpf_diags_release(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	json_t *root = json_loadb((const char *)data, size, 0, NULL);
	if (root) {
		struct tpf_plan p;
		if (tpf_plan_from_json(&p, root, "fuzz.tfplan", &d) == 0) {
			struct tpf_buf out = TPF_BUF_INIT;
			tpf_plan_render_human(&p, 1, &out);
			tpf_plan_summary(&p, &out);
			tpf_plan_closing(&p, &out);
			tpf_plan_check_stale(&p, "lineage", 3, "sha256:00", &d);
			tpf_buf_release(&out);
			round_trip(&p);
		}
		tpf_plan_release(&p);
		json_decref(root);
	}
	tpf_diags_release(&d);
	return 0;
}

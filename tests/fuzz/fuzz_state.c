/*
 * The state file (state/state.h), read from bytes as tpf_state_load reads
 * it from disk (json_loadb with JSON_REJECT_DUPLICATES, then
 * tpf_state_from_json); a Cloud Storage backend hands the same bytes to the
 * same parser. A state that loads must survive a round trip: its JSON form
 * parses again to the same canonical JSON (otherwise a save would write a
 * file the next load reads differently).
 */
#include "tests/fuzz/fuzz.h"
#include "state/state.h"
#include "util/diag.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static char *dump(const struct tpf_state *st)
{
	json_t *j = tpf_state_to_json(st);
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	return s;
}

static void round_trip(const struct tpf_state *st)
{
	struct tpf_state again;
	struct tpf_diags d = TPF_DIAGS_INIT;
	json_t *j = tpf_state_to_json(st);
	char *first = dump(st);
	if (tpf_state_from_json(&again, j, "fuzz round trip", &d) != 0)
		abort(); /* we wrote something we cannot read back */
	char *second = dump(&again);
	if (!first || !second || strcmp(first, second))
		abort(); /* the state changed on its way through the file */
	free(first);
	free(second);
	json_decref(j);
	tpf_state_release(&again);
	tpf_diags_release(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (root) {
		struct tpf_state st;
		if (tpf_state_from_json(&st, root, "fuzz.state.json", &d) == 0) {
			for (size_t i = 0; i < st.nnodes; i++)
				if (tpf_state_find(&st, st.nodes[i].name) != &st.nodes[i])
					abort(); /* nodes must be sorted and unique */
			round_trip(&st);
		}
		tpf_state_release(&st);
		json_decref(root);
	}
	tpf_diags_release(&d);
	return 0;
}

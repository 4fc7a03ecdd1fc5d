/*
 * The fleet file (config/config.h tpf_fleet_parse): YAML written by people,
 * the first outside input of every command. A fleet that parses is also
 * put through what commands do next without a provider: its secrets are
 * resolved (two variables are set; the rest are unset, an error path) and
 * its zones listed.
 */
#include "tests/fuzz/fuzz.h"
#include "config/config.h"
#include "util/diag.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	setenv("FUZZ_TOKEN", "fuzz-secret-value", 1);
	setenv("FUZZ_EMPTY", "", 1);
	/* the path only names the file in messages and anchors relative paths */
	if (tpf_fleet_parse(&f, "/nonexistent/fuzz/fleet.yaml", (const char *)data, size, &d) == 0) {
		size_t n = 0;
		free(tpf_fleet_zones(&f, &n));
		tpf_fleet_resolve_secrets(&f, &d);
		tpf_fleet_release(&f);
	}
	tpf_diags_release(&d);
	return 0;
}

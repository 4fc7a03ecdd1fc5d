/*
 * Saved plan files on disk (engine/saved_plan.h).
 */
#include "engine/saved_plan.h"
#include "util/outfile.h"

#include <stdlib.h>
#include <string.h>

int tpf_saved_plan_write(const struct tpf_plan *p, const char *path, struct tpf_diags *d)
{
	json_t *j = tpf_plan_to_json(p);
	char *text = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(j);
	if (!text)
		return tpf_error(d, "cannot write saved plan '%s': out of memory", path);
	int rc = tpf_outfile_write(path, text, strlen(text), 0600, d);
	free(text);
	return rc;
}

int tpf_saved_plan_read(struct tpf_plan *p, const char *path, struct tpf_diags *d)
{
	memset(p, 0, sizeof(*p));
	json_error_t err;
	json_t *j = json_load_file(path, 0, &err);
	if (!j)
		return tpf_error(d, "cannot read saved plan '%s': %s", path, err.text);
	int rc = tpf_plan_from_json(p, j, path, d);
	json_decref(j);
	return rc;
}

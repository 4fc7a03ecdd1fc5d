/*
 * The two halves of `tpuform show` (cmd/cmd_show.c: the table, saved
 * plans, the command entry; cmd/cmd_show_detail.c: per-worker detail).
 * Private to cmd/.
 */
#ifndef TPF_CMD_SHOW_H
#define TPF_CMD_SHOW_H

#include "engine/show/show.h"

#include <jansson.h>

/*
 * Node sn's JSON object for `show -json` (new reference): its row's facts
 * (engine/show/show.h) and one object per worker. With print set (human
 * output), also prints the node's header line and worker rows.
 */
json_t *tpf_show_node(const struct tpf_pipeline *s, const struct tpf_state_node *sn, int print);

#endif

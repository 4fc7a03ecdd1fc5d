/*
 * Elastic slices (issue 30; docs/recovery.md "Elastic slices"): which
 * slices of a multislice node its job runs on while some are lost, and how
 * its workers are renumbered as a job of that many slices. Pure.
 */
#ifndef TPF_ELASTIC_H
#define TPF_ELASTIC_H

#include "state/state.h"

/*
 * The slices listed in `list` ("0,2": indexes in increasing order,
 * comma-separated; state.h tpf_state_node.elastic_slices) into on[0 ..
 * nslices-1] (1: the job runs there). NULL: every slice. Returns how many
 * run; a malformed list (an index out of range, repeated or out of order,
 * another character, none) reads as every slice and returns -1.
 */
int tpf_elastic_running(const char *list, int nslices, unsigned char *on);

/* The list form of on[0 .. nslices-1] ("0,2"). Caller frees. */
char *tpf_elastic_list(const unsigned char *on, int nslices);

/* Worker `worker` of a node in the job its slices run (the numbering the
 * bootstrap gets; templates/render.h). */
struct tpf_elastic_view {
	int running; /* 1: its slice is in the job */
	int slice;   /* TPUFORM_SLICE_ID / MEGASCALE_SLICE_ID: its slice's rank among
		      * the running ones (its own index when every slice runs) */
	int nslices; /* TPUFORM_NUM_SLICES / MEGASCALE_NUM_SLICES: slices running */
	int first;   /* the first worker of the first running slice: the coordinator */
};

/* The view of worker `worker` of n (n->elastic_slices, n->recipe's slices
 * and workers). Without elastic_slices it is the plain numbering: slice =
 * worker / workers-per-slice, nslices = the recipe's, first = 0. */
void tpf_elastic_view(const struct tpf_state_node *n, int worker, struct tpf_elastic_view *v);

#endif

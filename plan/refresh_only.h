/*
 * Refresh-only plans: Terraform's `plan -refresh-only` and `apply
 * -refresh-only` (docs/terraform-behaviour.md section 5). The state is
 * brought in line with the live nodes and nothing else happens: no node
 * is created, deleted, relabelled or provisioned. Also the one rule for
 * recording a node found live into the state, which `tpuform import`
 * shares. Pure: memory only, no I/O.
 */
#ifndef TPF_PLAN_REFRESH_ONLY_H
#define TPF_PLAN_REFRESH_ONLY_H

#include "plan/plan.h"

/* Reason codes of a refresh-only plan's actions. */
#define TPF_REFRESH_DELETED "deleted" /* in state, gone from the provider */
#define TPF_REFRESH_CHANGED "changed" /* in state and live: its id or zone moved */
#define TPF_REFRESH_FOUND "found"     /* live, labelled for this fleet, not in state */

/*
 * What the refresh found that the state does not say, into *out (which
 * is overwritten; the caller releases it), with out->refresh_only set:
 *   - a node in state as created or tainted that is not live "has been
 *     deleted": TPF_ACT_FORGET, reason TPF_REFRESH_DELETED. (A pending
 *     node records a create that may not have been sent: it is left.)
 *   - a node in state whose live id or zone differs from the state's, or
 *     that is pending in state but live, "has changed": TPF_ACT_UPDATE,
 *     reason TPF_REFRESH_CHANGED, a line per changed field;
 *   - a live node carrying this fleet's labels that is not in state "has
 *     been found": TPF_ACT_UPDATE with adopt set, reason
 *     TPF_REFRESH_FOUND, desired set when the node is declared. A node
 *     whose group and index are neither declared nor labelled cannot be
 *     recorded and is left out, with a warning.
 * The counts stay 0: nothing is added, changed or destroyed. Actions are
 * sorted by kind, then node. in->facts and in->destroy are not used.
 */
int tpf_plan_refresh_only(struct tpf_plan *out, const struct tpf_diff_input *in,
			  struct tpf_diags *d);

/*
 * Terraform's refresh-only rendering: "Note: Objects have changed outside
 * of tpuform", one "# NODE has been deleted" / "has changed" / "has been
 * found" block each, then "This is a refresh-only plan, so tpuform will
 * not take any actions to undo these. ..."; with no actions, "No changes.
 * Your infrastructure still matches the configuration." (Terraform's
 * words, with "tpuform"). color: 1 to add ANSI colour.
 */
void tpf_plan_render_refresh_only(const struct tpf_plan *p, int color, struct tpf_buf *out);

#endif

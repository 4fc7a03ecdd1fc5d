/*
 * Targeted plans: Terraform's -target=ADDR and -replace=ADDR
 * (docs/terraform-behaviour.md section 5), for nodes. Both take a plan
 * tpf_diff made and change it; both are pure (no I/O).
 *
 * A name given to either is a node name ("<fleet>-<group>-<index>", as
 * `tpuform plan` and `tpuform state list` show them) or a group name,
 * which stands for every node of that group (as Terraform's address of a
 * resource with `count` stands for all its instances). A name that is
 * neither declared nor in the state nor live is an error: Terraform
 * silently plans nothing for an unknown -target, which hides typos in
 * exactly the situations -target is for.
 */
#ifndef TPF_PLAN_TARGET_H
#define TPF_PLAN_TARGET_H

#include "plan/plan.h"

/* Why a requested replace is planned, for machines and people. The
 * code is Terraform's action_reason ("replace_by_request"). */
#define TPF_REASON_REPLACE_BY_REQUEST_TEXT "requested with -replace"

/* What a plan is asked for, beyond the normal plan (borrowed strings). */
struct tpf_plan_mode {
	int destroy;      /* -destroy (and `tpuform destroy`) */
	int refresh_only; /* -refresh-only (plan/refresh_only.h) */
	const char *const *targets; /* -target, ntargets of them */
	size_t ntargets;
	const char *const *replace; /* -replace, nreplace of them */
	size_t nreplace;
};

/*
 * The combinations Terraform refuses, in its words (adapted), before
 * anything is refreshed: -destroy with -refresh-only ("The -destroy and
 * -refresh-only options are mutually-exclusive."), -replace outside a
 * normal plan ("Unsupported plan mode"), and -refresh-only with
 * -refresh=false (refresh 0: "nothing to do"). Returns 0, or TPF_ERROR
 * with a diagnostic.
 */
int tpf_plan_mode_check(const struct tpf_plan_mode *m, int refresh, struct tpf_diags *d);

/*
 * Check that every name in names[0..n) is a node or a group of what the
 * plan was made from (in: the fleet, desired nodes, state and live nodes;
 * borrowed). flag names the option in messages ("-target"). Returns 0, or
 * TPF_ERROR with one error diagnostic per unknown name, naming it and
 * listing some node names as a hint.
 */
int tpf_plan_check_names(const struct tpf_diff_input *in, const char *flag,
			 const char *const *names, size_t n, struct tpf_diags *d);

/*
 * -target: keep only the actions (and the entries of what is not as
 * declared) of the nodes that targets[0..n) name, and record the targets
 * in p (copied; a saved plan keeps them, so `apply PLANFILE` can say the
 * apply was targeted). Counts are recomputed. n == 0 leaves p as it is.
 * Errors: the unknown names of tpf_plan_check_names; p is then unchanged.
 */
int tpf_plan_target(struct tpf_plan *p, const struct tpf_diff_input *in,
		    const char *const *targets, size_t n, struct tpf_diags *d);

/*
 * -replace: every declared node that names[0..n) name and that exists
 * (is live) is replaced (-/+, delete then create, so apply gives it
 * generation + 1 and its job TPUFORM_RETRY + 1, as after a preemption):
 * an action already planned for it becomes that replace, else one is
 * added. Its reason is TPF_REASON_REPLACE_BY_REQUEST ("requested with
 * -replace"), rendered "will be replaced, as requested" as Terraform
 * does. A named node that does not exist yet is created anyway; one that
 * is no longer declared is deleted anyway: neither changes. Entries of
 * what is not as declared for a replaced node are dropped (the new node
 * starts afresh). Actions are sorted and counted again. Errors: unknown
 * names, as tpf_plan_check_names; p is then unchanged.
 */
int tpf_plan_replace(struct tpf_plan *p, const struct tpf_diff_input *in,
		     const char *const *names, size_t n, struct tpf_diags *d);

#endif

/*
 * The flow every planning command shares: fleet -> lock -> state ->
 * provider -> refresh -> pin source -> desired -> diff.
 */
#include "cmd/cmd.h"
#include "engine/refresh.h"
#include "source/source.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <string.h>

int tpf_session_open(struct tpf_session *s, struct tpf_common_opts *o, const char *lock_op)
{
	memset(s, 0, sizeof(*s));
	s->o = o;
	tpf_diags_init(&s->d);
	struct tpf_lock init = TPF_LOCK_INIT;
	s->lock = init;

	struct tpf_buf raw = TPF_BUF_INIT;
	int rc = tpf_read_file(o->file, &raw, &s->d);
	if (rc == TPF_ENOTFOUND) {
		tpf_errorx(&s->d, NULL,
			   "Run tpuform in the directory of your fleet file, or name it with -f FILE.\n"
			   "examples/local.yaml is a fleet that runs on this machine.",
			   "fleet file '%s' does not exist", o->file);
		tpf_buf_release(&raw);
		return -1;
	}
	if (rc) {
		tpf_buf_release(&raw);
		return -1;
	}
	s->fleet_sha256 = tpf_sha256_tagged(raw.buf, raw.len);
	rc = tpf_fleet_parse(&s->fleet, o->file, raw.buf, raw.len, &s->d);
	tpf_buf_release(&raw);
	if (rc)
		return -1;
	s->have_fleet = 1;

	if (lock_op && o->lock) {
		if (!tpf_ui.json && o->lock_timeout > 0)
			tpf_ui_say("Acquiring state lock. This may take a few moments...\n");
		if (tpf_lock_acquire(&s->lock, s->fleet.state_path, lock_op, o->lock_timeout, &s->d))
			return -1;
	}
	rc = tpf_state_load(&s->state, s->fleet.state_path, &s->d);
	s->have_state = 1;
	if (rc)
		return -1;
	if (s->state.fleet && strcmp(s->state.fleet, s->fleet.name)) {
		tpf_errorx(&s->d, NULL,
			   "Each fleet needs its own state file: set state.path in the fleet file.",
			   "state file '%s' belongs to fleet '%s', not '%s'", s->fleet.state_path,
			   s->state.fleet, s->fleet.name);
		return -1;
	}
	if (tpf_provider_open(&s->prov, &s->fleet, &s->d))
		return -1;
	return 0;
}

int tpf_session_refresh(struct tpf_session *s, int probe)
{
	if (!tpf_ui.json && !s->quiet)
		for (size_t i = 0; i < s->state.nnodes; i++)
			if (s->state.nodes[i].id)
				tpf_ui_say("%s: Refreshing state... [id=%s]\n", s->state.nodes[i].name,
					   s->state.nodes[i].id);
	if (s->o->refresh && tpf_refresh(s->prov, &s->fleet, &s->state, &s->live, &s->d))
		return -1;
	if (!s->o->refresh) {
		/* -refresh=false: believe the state (Terraform's behaviour). */
		for (size_t i = 0; i < s->state.nnodes; i++) {
			const struct tpf_state_node *sn = &s->state.nodes[i];
			if (!sn->id)
				continue;
			struct tpf_live_node *ln = tpf_live_set_add(&s->live);
			ln->name = xstrdup(sn->name);
			ln->id = xstrdup(sn->id);
			ln->state = xstrdup("READY");
			tpf_recipe_copy(&ln->recipe, &sn->recipe);
		}
	}
	if (probe && s->o->refresh &&
	    tpf_probe_sessions(s->prov, &s->state, &s->live, s->o->parallelism, &s->facts, &s->d))
		return -1;
	/* Secrets are needed where scripts are rendered: plan, apply, watch.
	 * destroy (no_source) renders none, so it never asks for them. */
	if (!s->no_source && !s->fleet.secrets_resolved &&
	    tpf_fleet_resolve_secrets(&s->fleet, &s->d))
		return -1;
	if (s->fleet.source.repo && !s->no_source && s->pinned) {
		snprintf(s->commit, sizeof(s->commit), "%s", s->pinned);
		s->have_commit = 1;
	} else if (s->fleet.source.repo && !s->no_source) {
		if (tpf_source_resolve(s->fleet.source.repo, s->fleet.source.ref, s->commit, &s->d))
			return -1;
		s->have_commit = 1;
	}
	return tpf_desired_compute(&s->desired, &s->fleet, s->have_commit ? s->commit : NULL,
				   &s->state, &s->d);
}

int tpf_session_plan(struct tpf_session *s, int destroy, struct tpf_plan *p)
{
	struct tpf_diff_input in = {
		.fleet = &s->fleet,
		.desired = &s->desired,
		.state = &s->state,
		.live = &s->live,
		.facts = &s->facts,
		.destroy = destroy,
	};
	if (tpf_diff(p, &in, &s->d))
		return -1;
	p->commit = s->have_commit ? xstrdup(s->commit) : NULL;
	p->fleet_sha256 = xstrdup(s->fleet_sha256);
	return 0;
}

void tpf_session_close(struct tpf_session *s)
{
	tpf_lock_release(&s->lock);
	if (s->prov)
		tpf_provider_free(s->prov);
	tpf_live_set_release(&s->live);
	tpf_session_facts_release(&s->facts);
	tpf_desired_release(&s->desired);
	if (s->have_state)
		tpf_state_release(&s->state);
	if (s->have_fleet)
		tpf_fleet_release(&s->fleet);
	free(s->fleet_sha256);
	tpf_diags_release(&s->d);
}

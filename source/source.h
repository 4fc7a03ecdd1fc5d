/*
 * Source pinning with libgit2: a ref of a repo -> a commit, and getting
 * that commit onto a worker.
 */
#ifndef TPF_SOURCE_H
#define TPF_SOURCE_H

#include "util/buf.h"
#include "util/diag.h"

/*
 * Resolve `ref` (branch, tag, full or abbreviated commit, "HEAD") of `repo`
 * (a local path, or a URL: then the remote's advertised refs, like
 * git ls-remote) to a 40-hex commit id in out. Errors name the repo and ref
 * and quote libgit2's message.
 */
int tpf_source_resolve(const char *repo, const char *ref, char out[41], struct tpf_diags *d);

/*
 * Make `dest` a checkout of `repo` at `commit` (40 hex; detached HEAD):
 * clone if dest does not exist (an existing directory without a repository
 * is initialised in place, keeping untracked files), else fetch remote
 * "origin" (set to repo) if the commit is missing, then a forced checkout
 * (tracked files are reset to the commit). Uses libgit2 only (no git
 * binary); ssh URLs authenticate with ssh-agent.
 */
int tpf_source_checkout(const char *repo, const char *commit, const char *dest,
			struct tpf_diags *d);

/*
 * A git bundle (v2, gitformat-bundle(5)) of `commit` and its history from
 * `repo`, appended to out: the header "# v2 git bundle", ref lines
 * "<commit> refs/heads/tpuform" and "<commit> HEAD" (so that a clone checks
 * it out), a blank line, then a packfile built with libgit2's packbuilder.
 * A worker clones it with `git clone source.bundle` or fetches
 * refs/heads/tpuform from it. A URL repo is first cloned (bare) into a
 * temporary directory under $TMPDIR. On error out is left as it was, but
 * for a bundle past out's cap (util/buf.h): then out is overflowed, empty.
 */
int tpf_source_bundle(const char *repo, const char *commit, struct tpf_buf *out,
		      struct tpf_diags *d);

#endif

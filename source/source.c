#include "source/source.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <git2.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * libgit2 is initialised once per process and never shut down: worker
 * threads call into it concurrently, and a shutdown that drops the
 * refcount to zero deletes libgit2's thread-local error key while other
 * threads still hold buffers under it, which then leak.
 */
static pthread_once_t source_once = PTHREAD_ONCE_INIT;

static void source_init_once(void)
{
	git_libgit2_init();
}

static void source_init(void)
{
	pthread_once(&source_once, source_init_once);
}

/* libgit2's message for the last failure (thread-local in libgit2). */
static const char *git_msg(void)
{
	const git_error *e = git_error_last();
	return e && e->message ? e->message : "unknown libgit2 error";
}

/* A URL ("scheme://...") or scp-like "host:path", not a local path. */
static int is_url(const char *repo)
{
	struct stat st;
	if (strstr(repo, "://"))
		return 1;
	if (stat(repo, &st) == 0)
		return 0;
	const char *colon = strchr(repo, ':');
	const char *slash = strchr(repo, '/');
	return colon && colon != repo && (!slash || colon < slash);
}

static int is_hex(const char *s, size_t min, size_t max)
{
	size_t n = strlen(s);
	if (n < min || n > max)
		return 0;
	for (; *s; s++) {
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))
			return 0;
	}
	return 1;
}

/*
 * Credentials for remotes: ssh-agent for ssh URLs, nothing else (tokens in
 * https URLs are the user's choice). libgit2 asks again after a refusal,
 * so one attempt per connection, then GIT_PASSTHROUGH gives its own
 * "authentication required" error.
 */
struct cred_state {
	int tries;
};

static int acquire_cred(git_credential **out, const char *url, const char *user,
			unsigned int allowed, void *payload)
{
	struct cred_state *cs = payload;
	if (cs->tries++ > 0)
		return GIT_PASSTHROUGH;
	if (allowed & GIT_CREDENTIAL_SSH_KEY)
		return git_credential_ssh_key_from_agent(out, user ? user : "git");
	if (allowed & GIT_CREDENTIAL_USERNAME)
		return git_credential_username_new(out, user ? user : "git");
	return GIT_PASSTHROUGH;
}

/*
 * Warn when the work tree has changes to tracked files: workers get the
 * commit, never the work tree, and a user who edited train.py and ran apply
 * would otherwise wonder why nothing changed. Untracked files are not
 * counted (build outputs are common and rarely meant). Best effort: a repo
 * whose status cannot be read gives no warning.
 */
static void warn_uncommitted(git_repository *r, const char *repo, const char *commit,
			     struct tpf_diags *d)
{
	git_status_list *list = NULL;
	git_status_options o;
	if (git_repository_is_bare(r) || git_status_options_init(&o, GIT_STATUS_OPTIONS_VERSION) < 0)
		return;
	o.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	o.flags = GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	if (git_status_list_new(&list, r, &o) < 0)
		return;
	size_t n = git_status_list_entrycount(list);
	if (n > 0) {
		const git_status_entry *e = git_status_byindex(list, 0);
		const char *first = e->index_to_workdir && e->index_to_workdir->new_file.path
					    ? e->index_to_workdir->new_file.path
				    : e->head_to_index && e->head_to_index->new_file.path
					    ? e->head_to_index->new_file.path
					    : "?";
		char *detail = xasprintf("Workers get commit %.12s as committed. Commit the changes (git "
					 "-C %s commit) to deploy them.",
					 commit, repo);
		char *summary = xasprintf("source repo '%s' has uncommitted changes to %zu tracked "
					  "file%s (first: %s); they are not deployed",
					  repo, n, n == 1 ? "" : "s", first);
		tpf_diags_add(d, TPF_SEV_WARNING, NULL, summary, detail);
		free(summary);
		free(detail);
	}
	git_status_list_free(list);
}

static int resolve_local(const char *repo, const char *ref, char out[41], struct tpf_diags *d)
{
	git_repository *r = NULL;
	git_object *obj = NULL, *commit = NULL;
	int err = 0;

	if (git_repository_open_ext(&r, repo, 0, NULL) < 0) {
		err = tpf_errorx(d, NULL, "is the path a git repository? (git -C <path> status)",
				 "cannot open repo '%s': %s", repo, git_msg());
		goto done;
	}
	int gerr = git_revparse_single(&obj, r, ref);
	if (gerr < 0) {
		err = tpf_errorx(d, NULL,
				 gerr == GIT_EAMBIGUOUS ?
				 "give more digits of the commit id, or the full 40-hex id" :
				 "expected a branch, a tag, a commit id or HEAD that exists in the repo "
				 "(is the ref committed? try: git -C <repo> rev-parse <ref>)",
				 "cannot resolve ref '%s' of repo '%s': %s", ref, repo, git_msg());
		goto done;
	}
	if (git_object_peel(&commit, obj, GIT_OBJECT_COMMIT) < 0) {
		err = tpf_errorx(d, NULL, "source.ref must name a commit (a branch, a tag or a commit id)",
				 "ref '%s' of repo '%s' is not a commit: %s", ref, repo, git_msg());
		goto done;
	}
	git_oid_tostr(out, 41, git_object_id(commit));
	warn_uncommitted(r, repo, out, d);
done:
	git_object_free(commit);
	git_object_free(obj);
	git_repository_free(r);
	return err;
}

static const git_remote_head *find_head(const git_remote_head **heads, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(heads[i]->name, name))
			return heads[i];
	}
	return NULL;
}

/* ref -> advertised head, in git's precedence (gitrevisions(7)): the full
 * name, refs/tags/REF (peeled "^{}" entry first: an annotated tag's own
 * id is not a commit), refs/heads/REF. */
static const git_remote_head *match_ref(const git_remote_head **heads, size_t n, const char *ref)
{
	static const struct {
		const char *prefix, *suffix;
	} patterns[] = {
		{ "", "^{}" }, { "", "" }, { "refs/tags/", "^{}" }, { "refs/tags/", "" },
		{ "refs/heads/", "" },
	};
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		char *name = xasprintf("%s%s%s", patterns[i].prefix, ref, patterns[i].suffix);
		const git_remote_head *h = find_head(heads, n, name);
		free(name);
		if (h)
			return h;
	}
	return NULL;
}

static int resolve_remote(const char *url, const char *ref, char out[41], struct tpf_diags *d)
{
	git_remote *remote = NULL;
	git_remote_callbacks cb;
	struct cred_state cs = { 0 };
	const git_remote_head **heads = NULL;
	size_t n = 0;
	int err = 0;

	if (is_hex(ref, 40, 40)) {
		/* Only fetching would prove it exists; the worker's checkout
		 * reports a missing commit. */
		for (int i = 0; i < 40; i++)
			out[i] = (char)(ref[i] >= 'A' && ref[i] <= 'F' ? ref[i] - 'A' + 'a' : ref[i]);
		out[40] = '\0';
		return 0;
	}
	git_remote_init_callbacks(&cb, GIT_REMOTE_CALLBACKS_VERSION);
	cb.credentials = acquire_cred;
	cb.payload = &cs;
	if (git_remote_create_detached(&remote, url) < 0 ||
	    git_remote_connect(remote, GIT_DIRECTION_FETCH, &cb, NULL, NULL) < 0 ||
	    git_remote_ls(&heads, &n, remote) < 0) {
		err = tpf_errorx(d, NULL,
				 "check the URL and that this machine can reach it "
				 "(git ls-remote <repo>); ssh URLs use ssh-agent",
				 "cannot list refs of repo '%s' (resolving ref '%s'): %s", url, ref,
				 git_msg());
		goto done;
	}
	const git_remote_head *h = match_ref(heads, n, ref);
	if (h) {
		git_oid_tostr(out, 41, &h->oid);
		goto done;
	}
	if (is_hex(ref, 4, 39)) {
		err = tpf_errorx(d, NULL,
				 "an abbreviated commit id can only be resolved in a local repo: "
				 "give the full 40-hex id",
				 "cannot resolve ref '%s' of repo '%s'", ref, url);
		goto done;
	}
	err = tpf_errorx(d, NULL, "is the ref pushed? (git ls-remote <repo>)",
			 "ref '%s' not found in repo '%s': expected a branch, a tag, HEAD or a "
			 "full commit id the remote advertises", ref, url);
done:
	git_remote_free(remote);
	return err;
}

int tpf_source_resolve(const char *repo, const char *ref, char out[41], struct tpf_diags *d)
{
	int err;
	if (!ref || !*ref)
		ref = "HEAD";
	source_init();
	if (is_url(repo))
		err = resolve_remote(repo, ref, out, d);
	else
		err = resolve_local(repo, ref, out, d);
	return err;
}

/*
 * Fetch every branch (as remote-tracking refs of "origin") and tag of repo
 * into r.
 * An in-memory remote without url.*.insteadOf rewriting, as for resolve:
 * libgit2 1.5's config regex lookups for named remotes leak (fixed
 * upstream in libgit2 PR #6382), and a clone of a fixed URL needs none.
 */
static int fetch_into(git_repository *r, const char *repo, const char *commit,
		      struct tpf_diags *d)
{
	static char *specs[] = {
		"+refs/heads/*:refs/remotes/origin/*",
		"+refs/tags/*:refs/tags/*",
	};
	git_strarray refspecs = { specs, 2 };
	git_remote *remote = NULL;
	git_remote_create_options ro;
	git_fetch_options fo;
	struct cred_state cs = { 0 };
	int err = 0;

	git_remote_create_options_init(&ro, GIT_REMOTE_CREATE_OPTIONS_VERSION);
	ro.repository = r;
	ro.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
	git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
	fo.callbacks.credentials = acquire_cred;
	fo.callbacks.payload = &cs;
	if (git_remote_create_with_opts(&remote, repo, &ro) < 0 ||
	    git_remote_fetch(remote, &refspecs, &fo, "tpuform: fetch") < 0)
		err = tpf_errorx(d, NULL,
				 "check the repo path or URL and that this machine can reach it "
				 "(git ls-remote <repo>)",
				 "cannot fetch repo '%s' (for commit %s): %s", repo, commit, git_msg());
	git_remote_free(remote);
	return err;
}

/* Open dest, or make it a repository (created when absent, initialised in
 * place when it exists without one: files a job left there stay). */
static int open_dest(git_repository **r, const char *dest, struct tpf_diags *d)
{
	int gerr = git_repository_open_ext(r, dest, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (gerr == GIT_ENOTFOUND)
		gerr = git_repository_init(r, dest, 0);
	if (gerr < 0)
		return tpf_error(d, "cannot open or create a repository in '%s': %s", dest, git_msg());
	return 0;
}

int tpf_source_checkout(const char *repo, const char *commit, const char *dest,
			struct tpf_diags *d)
{
	git_repository *r = NULL;
	git_commit *c = NULL;
	git_oid oid;
	git_checkout_options co;
	int err = 0;

	source_init();
	git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	if (!commit || !is_hex(commit, 40, 40) || git_oid_fromstr(&oid, commit) < 0) {
		err = tpf_error(d, "cannot check out '%s' of repo '%s': expected a full 40-hex commit id",
				commit ? commit : "(none)", repo);
		goto done;
	}
	if ((err = open_dest(&r, dest, d)) < 0)
		goto done;
	if (git_commit_lookup(&c, r, &oid) < 0) {
		if ((err = fetch_into(r, repo, commit, d)) < 0)
			goto done;
		if (git_commit_lookup(&c, r, &oid) < 0) {
			err = tpf_errorx(d, NULL, "is the commit pushed to a branch or tag of the repo?",
					 "commit %s not found in repo '%s' after fetching it: %s", commit,
					 repo, git_msg());
			goto done;
		}
	}
	/* FORCE: the tree must be exactly the commit's, whatever a previous
	 * job changed in tracked files. */
	co.checkout_strategy = GIT_CHECKOUT_FORCE;
	if (git_checkout_tree(r, (const git_object *)c, &co) < 0 ||
	    git_repository_set_head_detached(r, &oid) < 0) {
		err = tpf_error(d, "cannot check out commit %s of repo '%s' in '%s': %s", commit, repo,
				dest, git_msg());
		goto done;
	}
done:
	git_commit_free(c);
	git_repository_free(r);
	return err;
}

static int pack_chunk(void *data, size_t size, void *payload)
{
	return tpf_buf_add(payload, data, size) < 0 ? -1 : 0; /* past the cap */
}

/* A bare copy of a remote in a fresh temporary directory (*tmpdir, caller
 * removes and frees), for bundling a commit of a URL. */
static int clone_temp(git_repository **r, const char *url, const char *commit, char **tmpdir,
		      struct tpf_diags *d)
{
	const char *base = getenv("TMPDIR");
	char *dir = xasprintf("%s/tpuform-bundle-XXXXXX", base && *base ? base : "/tmp");

	if (!mkdtemp(dir)) {
		int e = tpf_error(d, "cannot create a temporary directory '%s' to bundle repo '%s'",
				  dir, url);
		free(dir);
		return e;
	}
	*tmpdir = dir;
	if (git_repository_init(r, dir, 1) < 0)
		return tpf_error(d, "cannot create a repository in '%s' to bundle repo '%s': %s", dir,
				 url, git_msg());
	return fetch_into(*r, url, commit, d);
}

int tpf_source_bundle(const char *repo, const char *commit, struct tpf_buf *out,
		      struct tpf_diags *d)
{
	git_repository *r = NULL;
	git_commit *c = NULL;
	git_packbuilder *pb = NULL;
	git_revwalk *walk = NULL;
	git_oid oid;
	char *tmpdir = NULL;
	size_t start_len = out->len;
	int err = 0;

	source_init();
	if (!commit || !is_hex(commit, 40, 40) || git_oid_fromstr(&oid, commit) < 0) {
		err = tpf_error(d, "cannot bundle '%s' of repo '%s': expected a full 40-hex commit id",
				commit ? commit : "(none)", repo);
		goto done;
	}
	if (is_url(repo)) {
		if ((err = clone_temp(&r, repo, commit, &tmpdir, d)) < 0)
			goto done;
	} else if (git_repository_open_ext(&r, repo, 0, NULL) < 0) {
		err = tpf_errorx(d, NULL, "is the path a git repository? (git -C <path> status)",
				 "cannot open repo '%s' to bundle it: %s", repo, git_msg());
		goto done;
	}
	if (git_commit_lookup(&c, r, &oid) < 0) {
		err = tpf_errorx(d, NULL, "is the commit in the repo? (git -C <repo> cat-file -t <commit>)",
				 "cannot bundle commit %s of repo '%s': %s", commit, repo, git_msg());
		goto done;
	}
	if (git_packbuilder_new(&pb, r) < 0 || git_revwalk_new(&walk, r) < 0 ||
	    git_revwalk_push(walk, &oid) < 0 || git_packbuilder_insert_walk(pb, walk) < 0) {
		err = tpf_error(d, "cannot pack commit %s of repo '%s': %s", commit, repo, git_msg());
		goto done;
	}
	/* gitformat-bundle(5), v2. HEAD as well as the branch, so that
	 * `git clone source.bundle` checks the commit out. */
	tpf_buf_addf(out, "# v2 git bundle\n%s refs/heads/tpuform\n%s HEAD\n\n", commit, commit);
	int packed = git_packbuilder_foreach(pb, pack_chunk, out);
	if (tpf_buf_overflowed(out)) {
		char lim[32];
		err = tpf_errorx(d, NULL, "use 'transfer: clone' for a repository this large",
				 "cannot bundle commit %s of repo '%s': the bundle is larger than the "
				 "limit of %s", commit, repo, tpf_fmt_bytes(tpf_buf_max(out), lim));
		goto done;
	} else if (packed < 0) {
		err = tpf_error(d, "cannot write the pack of commit %s of repo '%s': %s", commit, repo,
				git_msg());
		goto done;
	}
done:
	if (err && !tpf_buf_overflowed(out)) { /* an overflowed out is empty already */
		out->len = start_len;
		out->buf[out->len] = '\0';
	}
	git_revwalk_free(walk);
	git_packbuilder_free(pb);
	git_commit_free(c);
	git_repository_free(r);
	if (tmpdir) {
		struct tpf_diags ignored = TPF_DIAGS_INIT;
		tpf_remove_tree(tmpdir, &ignored);
		tpf_diags_release(&ignored);
		free(tmpdir);
	}
	return err;
}

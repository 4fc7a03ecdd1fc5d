/*
 * The local transport: a worker is a private HOME directory on this
 * machine, and commands run there with /bin/sh and a clean environment.
 * Like SSH to a VM, it works only while the node is READY.
 */
#include "source/source.h"
#include "providers/local/local_internal.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int local_connect(struct tpf_transport *t, const struct tpf_worker_ref *w,
			 struct tpf_conn **out, char **host_key_out, struct tpf_diags *d)
{
	struct tpf_local *l = t->impl;
	char *address = xasprintf("%s/w%d", w->node ? w->node : "", w->worker);
	char *home = NULL;
	int err;

	*out = NULL;
	if (host_key_out)
		*host_key_out = NULL; /* no host key: nothing to pin */
	err = tpf_local_locate(l->root, w->node, w->worker, address, &home, d);
	if (err < 0)
		goto done;
	err = tpf_local_prepare_home(l->root, home, d);
	if (err < 0)
		goto done;
	struct tpf_conn *c = xcalloc(1, sizeof(*c));
	c->root = xstrdup(l->root);
	c->node = xstrdup(w->node);
	c->worker = w->worker;
	c->home = home;
	c->address = address;
	c->env = tpf_local_env(l->root, home, NULL);
	home = address = NULL;
	*out = c;
done:
	free(home);
	free(address);
	return err;
}

static int local_put(struct tpf_conn *c, const char *path, const void *data, size_t len,
		     mode_t mode, struct tpf_diags *d)
{
	if (tpf_remote_path_check(path, c->address, d) < 0)
		return TPF_ERROR;
	int err = tpf_local_still_reachable(c, d);
	if (err < 0)
		return err;
	char *full = xasprintf("%s/%s", c->home, path);
	char *dir = tpf_dirname(full);
	err = tpf_mkdir_p(dir, 0700, d);
	if (!err)
		err = tpf_write_file_atomic(full, data, len, mode, d);
	free(dir);
	free(full);
	return err;
}

static int local_exec(struct tpf_conn *c, const char *command, struct tpf_buf *out, int *status,
		      double timeout, struct tpf_diags *d)
{
	int err = tpf_local_still_reachable(c, d);
	if (err < 0)
		return err;
	return tpf_local_run(c->home, c->env, command, out, status, timeout, c->address, d);
}

static int local_put_source(struct tpf_conn *c, const char *repo, const char *commit,
			    const char *dest, struct tpf_diags *d)
{
	if (tpf_remote_path_check(dest, c->address, d) < 0)
		return TPF_ERROR;
	int err = tpf_local_still_reachable(c, d);
	if (err < 0)
		return err;
	char *full = xasprintf("%s/%s", c->home, dest);
	char *parent = tpf_dirname(full);
	err = tpf_mkdir_p(parent, 0700, d);
	if (!err)
		err = tpf_source_checkout(repo, commit, full, d);
	free(parent);
	free(full);
	return err;
}

static void local_close(struct tpf_conn *c)
{
	if (!c)
		return;
	free(c->root);
	free(c->node);
	free(c->home);
	free(c->address);
	tpf_local_env_free(c->env);
	free(c);
}

static int local_interactive(struct tpf_transport *t, const struct tpf_worker_ref *w,
			     struct tpf_diags *d)
{
	struct tpf_local *l = t->impl;
	char *address = xasprintf("%s/w%d", w->node ? w->node : "", w->worker);
	char *home = NULL;
	char **env = NULL;
	int err, cwd_fd = -1;

	err = tpf_local_locate(l->root, w->node, w->worker, address, &home, d);
	if (err < 0 || (err = tpf_local_prepare_home(l->root, home, d)) < 0)
		goto done;
	const char *shell = getenv("SHELL");
	if (!shell || shell[0] != '/')
		shell = "/bin/sh";
	env = tpf_local_env(l->root, home, shell);
	cwd_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (chdir(home) < 0) {
		err = tpf_errorx(d, address, NULL, "cannot enter the home '%s' of worker '%s': %s",
				 home, address, strerror(errno));
		goto done;
	}
	char *const argv[] = { (char *)shell, "-i", NULL };
	execve(shell, argv, env);
	err = tpf_errorx(d, address, "set SHELL to a shell that exists, or unset it to use /bin/sh",
			 "cannot start shell '%s' on worker '%s': %s", shell, address,
			 strerror(errno));
	if (cwd_fd >= 0 && fchdir(cwd_fd) < 0)
		tpf_warn(d, address, "cannot return to the previous directory: %s", strerror(errno));
done:
	if (cwd_fd >= 0)
		close(cwd_fd);
	tpf_local_env_free(env);
	free(home);
	free(address);
	return err;
}

const struct tpf_transport_ops tpf_local_transport_ops = {
	.connect = local_connect,
	.put = local_put,
	.exec = local_exec,
	.put_source = local_put_source,
	.close = local_close,
	.interactive = local_interactive,
	.file_stat = tpf_local_file_stat,
	.file_list = tpf_local_file_list,
	.file_mkdir = tpf_local_file_mkdir,
	.file_send = tpf_local_file_send,
	.file_recv = tpf_local_file_recv,
	.exec_stream = tpf_local_exec_stream,
	.forward = tpf_local_forward,
	.ssh_info = tpf_local_ssh_info,
};

/*
 * tpuform ssh-config [-out FILE] [-install]: Host entries NODE-wN for
 * ssh(1) and VSCode Remote-SSH, with the pinned host keys in a known_hosts
 * file of tpuform's own (engine/chores/ssh_config.c does the work).
 */
#include "cmd/cmd.h"
#include "engine/chores/chores.h"
#include "util/fs.h"
#include "util/outfile.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static struct {
	const char *out;
	int install;
} sc_o;

static const struct tpf_flag sc_flags[] = {
	TPF_STR("out", "FILE", &sc_o.out, "write the entries to FILE (its host keys to "
					  "FILE.known_hosts) instead of printing them"),
	TPF_BOOL("install", &sc_o.install, "write ~/.ssh/tpuform/FLEET.config (or -out FILE), "
					   "Include it from ~/.ssh/config once; apply and watch keep it current"),
	TPF_FLAGS_END,
};

static int run_ssh_config(struct tpf_cmd_ctx *ctx)
{
	struct tpf_pipeline *s = &ctx->s;
	char *cfg = sc_o.out ? xstrdup(sc_o.out)
		  : sc_o.install ? tpf_ssh_config_installed_path(s->fleet.name, "config") : NULL;
	char *kh = cfg ? xasprintf("%s.known_hosts", cfg)
		       : tpf_ssh_config_installed_path(s->fleet.name, "known_hosts");
	if (sc_o.install && !sc_o.out) {
		free(kh);
		kh = tpf_ssh_config_installed_path(s->fleet.name, "known_hosts");
	}
	int code = TPF_EXIT_ERROR;
	if (!kh || (sc_o.install && !cfg)) {
		tpf_errorx(ctx->d, NULL, "set HOME, or name the file with -out FILE",
			   "cannot find the home directory for ~/.ssh/tpuform");
		goto done;
	}
	if (cfg) {
		/* ~/.ssh/tpuform is tpuform's to create; the directory of a
		 * file named with -out is the user's (util/outfile.h). */
		char *dir = sc_o.out ? NULL : tpf_dirname(cfg);
		int err = dir && tpf_mkdir_p(dir, 0700, ctx->d);
		free(dir);
		if (err || tpf_chore_ssh_config_write(s, cfg, kh, ctx->d))
			goto done;
		tpf_ui_say("Wrote %s (host keys in %s)\n", cfg, kh);
	} else {
		/* Printed: the known hosts still need a file of their own. */
		char *text = NULL, *keys = NULL, *dir = tpf_dirname(kh);
		int err = tpf_chore_ssh_config(s, kh, &text, &keys, ctx->d);
		if (!err && !(err = tpf_mkdir_p(dir, 0700, ctx->d)))
			err = tpf_outfile_write(kh, keys, strlen(keys), 0600, ctx->d);
		if (!err)
			tpf_ui_say("%s", text);
		free(text);
		free(keys);
		free(dir);
		if (err)
			goto done;
	}
	int added = 0;
	if (sc_o.install && tpf_ssh_config_include(cfg, &added, ctx->d))
		goto done;
	if (sc_o.install)
		tpf_ui_say(added ? "Added an Include of it to ~/.ssh/config.\n"
				 : "~/.ssh/config includes it already.\n");
	code = TPF_EXIT_OK;
done:
	free(cfg);
	free(kh);
	return code;
}

const struct tpf_cmd tpf_cmd_ssh_config = {
	.name = "ssh-config",
	.summary = "Write ssh_config entries (NODE-wN) for ssh and VSCode",
	.description =
		"  Print ssh_config(5) Host entries NODE-wN for every worker of the fleet's\n"
		"  READY nodes, with the host keys tpuform pinned in a known_hosts file of\n"
		"  its own (StrictHostKeyChecking yes) and the bastion (ssh.proxy_jump) as\n"
		"  ProxyJump, so that ssh, scp and VSCode Remote-SSH connect as tpuform\n"
		"  does. -install writes ~/.ssh/tpuform/FLEET.config and adds an Include\n"
		"  line to ~/.ssh/config once; apply, and watch after it replaces nodes,\n"
		"  then rewrite it and its known_hosts (not a file named with -out).\n",
	.footer = "Examples:\n"
		  "  tpuform ssh-config -install && ssh my-node-w1\n"
		  "  tpuform ssh-config -out fleet.sshconfig && ssh -F fleet.sshconfig my-node-w0\n",
	.flags = sc_flags,
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_PROVIDER | TPF_CMD_LIVE,
	.signals = TPF_SIG_STOP,
	.run = run_ssh_config,
};

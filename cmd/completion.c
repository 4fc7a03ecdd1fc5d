/*
 * Shell completion, generated from the command table as help and the man
 * pages are: `tpuform help -completion=bash|zsh|fish` writes a script in
 * which every command, subcommand and flag of the table, and the kind of
 * value each flag and positional argument takes, are baked in. What only
 * the fleet knows, its node and group names, the script asks of
 * `tpuform help -complete-names=FILE` (tpf_complete_names), which reads the
 * fleet file and the local state file and never the network.
 *
 * Kinds of values: yaml (-f: YAML files), file (-out=FILE, PLANFILE,
 * SOURCE), node (NODE, -target, -replace: node and group names), remote
 * (cp's SRC and DEST: local files, and the state's nodes as "NODE:", as
 * scp's completion offers hosts; nothing after the colon), bool
 * (true, false; only as -flag=VALUE), cmd (help's COMMAND), value (not
 * enumerable: nothing offered).
 *
 * bash: the programmable completion builtins (bash(1), "Programmable
 * Completion": complete -F, COMP_WORDS, COMP_CWORD, COMPREPLY, compgen).
 * zsh: the same function through zsh's bashcompinit (zshcompsys(1)).
 * fish: `complete -c` lines (fish's complete(1)), -o for single-dash long
 * options.
 */
#include "cmd/gen.h"
#include "config/config.h"
#include "state/state.h"

#include <stdlib.h>
#include <string.h>

static const char *flag_kind(const struct tpf_flag *f)
{
	if (f->type == TPF_FLAG_BOOL)
		return "bool";
	if (!strcmp(f->name, "file"))
		return "yaml";
	if (f->value && !strcmp(f->value, "FILE"))
		return "file";
	if (f->value && !strcmp(f->value, "NODE"))
		return "node";
	return "value";
}

/* The kind of a command's positional arguments, from the table (struct
 * tpf_cmd's args, so this file does not reach out to the command files). */
static const char *arg_kind(const struct tpf_cmd *c)
{
	if (!c->args_name || c->subs)
		return "";
	switch (c->args) {
	case TPF_ARGS_COMMAND: return "cmd";
	case TPF_ARGS_REMOTE: return "remote"; /* cp SRC... DEST: files, and NODE: paths */
	case TPF_ARGS_NODE: return "node";
	case TPF_ARGS_PLANFILE:
	case TPF_ARGS_FILE: return "file";
	case TPF_ARGS_VALUE: break;
	}
	return "value";
}

/* One case of __tpuform_spec: the subcommands, flags (NAME:KIND) and
 * argument kind of path. */
static void bash_spec(FILE *out, const struct tpf_cmd *c, const char *path)
{
	fprintf(out, "\t\"%s\") __tpuform_subs=\"", path);
	for (const struct tpf_cmd *const *s = c->subs; s && *s; s++)
		fprintf(out, "%s%s", s == c->subs ? "" : " ", (*s)->name);
	fputs("\" __tpuform_opts=\"", out);
	if (!c->subs) {
		struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
		int help = 0, first = 1;
		struct tpf_flag *flags = tpf_cmd_flags(c, &o, &help);
		for (const struct tpf_flag *f = flags; f->name; f++) {
			if (!f->help)
				continue;
			if (f->alias)
				fprintf(out, "%s-%s:%s", first ? "" : " ", f->alias, flag_kind(f));
			fprintf(out, "%s-%s:%s", first && !f->alias ? "" : " ", f->name, flag_kind(f));
			first = 0;
		}
		free(flags);
	} else {
		fputs("-h:bool -help:bool", out);
	}
	fprintf(out, "\" __tpuform_arg=\"%s\" ;;\n", arg_kind(c));
	for (const struct tpf_cmd *const *s = c->subs; s && *s; s++) {
		char sub[64];
		snprintf(sub, sizeof(sub), "%s %s", path, (*s)->name);
		bash_spec(out, *s, sub);
	}
}

/* The part of the bash script that does not depend on the table. */
static const char bash_body[] =
	"# The value candidates of a kind, for the word part $1.\n"
	"__tpuform_values() {\n"
	"\tlocal kind=$1 part=$2 name what\n"
	"\tcase $kind in\n"
	"\tbool) mapfile -t COMPREPLY < <(compgen -W 'true false' -- \"$part\") ;;\n"
	"\tcmd) __tpuform_spec \"\"; mapfile -t COMPREPLY < <(compgen -W \"$__tpuform_subs\" -- "
	"\"$part\") ;;\n"
	"\tyaml | file)\n"
	"\t\tcompopt -o filenames 2>/dev/null\n"
	"\t\tif [ \"$kind\" = yaml ]; then\n"
	"\t\t\tmapfile -t COMPREPLY < <(compgen -d -- \"$part\"; compgen -f -X '!*.yaml' -- "
	"\"$part\"; compgen -f -X '!*.yml' -- \"$part\")\n"
	"\t\telse mapfile -t COMPREPLY < <(compgen -f -- \"$part\"); fi ;;\n"
	"\tnode*)\n"
	"\t\t# node: nodes and groups (-target); node-only: a node (ssh, logs)\n"
	"\t\tCOMPREPLY=()\n"
	"\t\twhile IFS=$'\\t' read -r name what; do\n"
	"\t\t\t[ \"$kind\" = node-only ] && [ \"$what\" != node ] && continue\n"
	"\t\t\tcase $name in \"$part\"*) COMPREPLY+=(\"$name\") ;; esac\n"
	"\t\tdone < <(\"$__tpuform_bin\" ${__tpuform_chdir:+-chdir=\"$__tpuform_chdir\"} help "
	"-complete-names=\"$__tpuform_file\" 2>/dev/null) ;;\n"
	"\tremote)\n"
	"\t\t# cp: files, and nodes as NODE: (no space after); nothing after a colon\n"
	"\t\tCOMPREPLY=()\n"
	"\t\tcase $part in *:*) return ;; esac\n"
	"\t\tcompopt -o filenames 2>/dev/null\n"
	"\t\tmapfile -t COMPREPLY < <(compgen -f -- \"$part\")\n"
	"\t\twhile IFS=$'\\t' read -r name what; do\n"
	"\t\t\t[ \"$what\" = node ] || continue\n"
	"\t\t\tcase $name in \"$part\"*) COMPREPLY+=(\"$name:\"); compopt -o nospace 2>/dev/null ;; esac\n"
	"\t\tdone < <(\"$__tpuform_bin\" ${__tpuform_chdir:+-chdir=\"$__tpuform_chdir\"} help "
	"-complete-names=\"$__tpuform_file\" 2>/dev/null) ;;\n"
	"\t*) COMPREPLY=() ;;\n"
	"\tesac\n"
	"}\n"
	"\n"
	"# The kind of flag $1's value among __tpuform_opts (empty: unknown flag).\n"
	"__tpuform_kind() {\n"
	"\tlocal o name=-${1#-}\n"
	"\tname=-${name#-}\n"
	"\tfor o in $__tpuform_opts; do\n"
	"\t\t[ \"${o%:*}\" = \"$name\" ] && { echo \"${o##*:}\"; return; }\n"
	"\tdone\n"
	"}\n";

/* The word walk: rejoin "-flag" "=" "value" (bash splits at "="), find
 * the command path, the fleet file, -chdir, and whether a flag's value is
 * expected; then offer candidates for the word under the cursor. */
static const char bash_main[] =
	"_tpuform() {\n"
	"\tlocal -a ws=()\n"
	"\tlocal i j=-1 glue=0 w path=\"\" expect=\"\" kind cur\n"
	"\tlocal __tpuform_bin=${COMP_WORDS[0]} __tpuform_file=tpuform.yaml __tpuform_chdir=\"\"\n"
	"\tlocal __tpuform_subs __tpuform_opts __tpuform_arg\n"
	"\tfor ((i = 0; i <= COMP_CWORD; i++)); do\n"
	"\t\tw=${COMP_WORDS[i]}\n"
	"\t\tif [ \"$w\" = \"=\" ] && [ $j -ge 1 ] && [[ ${ws[j]} == -* && ${ws[j]} != *=* ]]; "
	"then\n"
	"\t\t\tws[j]+=\"=\"; glue=1\n"
	"\t\telif [ \"$w\" = \":\" ] && [ $j -ge 2 ]; then\n"
	"\t\t\tws[j]+=\":\"; glue=1 # NODE:PATH (\":\" is in COMP_WORDBREAKS)\n"
	"\t\telif [ $glue = 1 ]; then ws[j]+=\"$w\"; glue=0\n"
	"\t\telse ws+=(\"$w\"); j=$((j + 1)); fi\n"
	"\tdone\n"
	"\tcur=${ws[j]}\n"
	"\t__tpuform_spec \"\"\n"
	"\tfor ((i = 1; i < j; i++)); do\n"
	"\t\tw=${ws[i]}\n"
	"\t\tif [ -n \"$expect\" ]; then\n"
	"\t\t\t[ \"$expect\" = yaml ] && __tpuform_file=$w\n"
	"\t\t\texpect=\"\"; continue\n"
	"\t\tfi\n"
	"\t\tcase $w in\n"
	"\t\t--) break ;;\n"
	"\t\t-chdir=* | --chdir=*) [ -z \"$path\" ] && __tpuform_chdir=${w#*=} ;;\n"
	"\t\t-*=*) [ \"$(__tpuform_kind \"${w%%=*}\")\" = yaml ] && __tpuform_file=${w#*=} ;;\n"
	"\t\t-*) kind=$(__tpuform_kind \"$w\")\n"
	"\t\t\t[ -n \"$kind\" ] && [ \"$kind\" != bool ] && expect=$kind ;;\n"
	"\t\t*) if [ -n \"$__tpuform_subs\" ] && [[ \" $__tpuform_subs \" == *\" $w \"* ]]; then\n"
	"\t\t\t\tpath=${path:+$path }$w; __tpuform_spec \"$path\"\n"
	"\t\t\tfi ;;\n"
	"\t\tesac\n"
	"\tdone\n"
	"\tif [ -n \"$expect\" ]; then\n"
	"\t\t__tpuform_values \"$expect\" \"$cur\"\n"
	"\t\treturn 0\n"
	"\tfi\n"
	"\tcase $cur in\n"
	"\t-*=*) __tpuform_values \"$(__tpuform_kind \"${cur%%=*}\")\" \"${cur#*=}\" ;;\n"
	"\t-*)\n"
	"\t\tif [ -z \"$path\" ]; then\n"
	"\t\t\tmapfile -t COMPREPLY < <(compgen -W '-chdir= -no-color -help -version' -- "
	"\"$cur\")\n"
	"\t\telse\n"
	"\t\t\tlocal o names=\"\"\n"
	"\t\t\tfor o in $__tpuform_opts; do names+=\" ${o%:*}\"; done\n"
	"\t\t\tmapfile -t COMPREPLY < <(compgen -W \"$names\" -- \"$cur\")\n"
	"\t\tfi ;;\n"
	"\t*)\n"
	"\t\tif [ -n \"$__tpuform_subs\" ]; then\n"
	"\t\t\tmapfile -t COMPREPLY < <(compgen -W \"$__tpuform_subs\" -- \"$cur\")\n"
	"\t\telif [ \"$__tpuform_arg\" = node ]; then __tpuform_values node-only \"$cur\"\n"
	"\t\telse __tpuform_values \"$__tpuform_arg\" \"$cur\"; fi ;;\n"
	"\tesac\n"
	"\treturn 0\n"
	"}\n";

static void bash_script(FILE *out, const struct tpf_cmd *const *cmds)
{
	fputs("# tpuform completion for bash. Generated by `tpuform help -completion=bash`\n"
	      "# from the command table (cmd/completion.c): do not edit.\n"
	      "\n"
	      "# The subcommands, flags (NAME:KIND) and argument kind of a command path.\n"
	      "__tpuform_spec() {\n"
	      "\tcase $1 in\n\t\"\") __tpuform_subs=\"",
	      out);
	for (const struct tpf_cmd *const *c = cmds; *c; c++)
		if (!(*c)->hidden)
			fprintf(out, "%s%s", c == cmds ? "" : " ", (*c)->name);
	fputs("\" __tpuform_opts=\"\" __tpuform_arg=\"\" ;;\n", out);
	for (const struct tpf_cmd *const *c = cmds; *c; c++)
		bash_spec(out, *c, (*c)->name);
	fputs("\t*) __tpuform_subs=\"\" __tpuform_opts=\"\" __tpuform_arg=\"\" ;;\n\tesac\n}\n\n",
	      out);
	fputs(bash_body, out);
	fputc('\n', out);
	fputs(bash_main, out);
}

static void fish_flags(FILE *out, const struct tpf_cmd *c, const char *cond)
{
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	int help = 0;
	struct tpf_flag *flags = tpf_cmd_flags(c, &o, &help);
	for (const struct tpf_flag *f = flags; f->name; f++) {
		if (!f->help)
			continue;
		const char *kind = flag_kind(f);
		fprintf(out, "complete -c tpuform -n '%s' -o %s", cond, f->name);
		if (f->alias)
			fprintf(out, " -o %s", f->alias);
		if (!strcmp(kind, "yaml"))
			fputs(" -r -F -a '(__fish_complete_suffix .yaml .yml)'", out);
		else if (!strcmp(kind, "file"))
			fputs(" -r -F", out);
		else if (!strcmp(kind, "node"))
			fputs(" -x -a '(__tpuform_names)'", out);
		else if (strcmp(kind, "bool"))
			fputs(" -x", out);
		fputs(" -d '", out);
		for (const char *p = f->help; *p; p++)
			fputs(*p == '\'' ? "\\'" : (char[]){ *p, 0 }, out);
		fputs("'\n", out);
	}
	free(flags);
}

static void fish_script(FILE *out, const struct tpf_cmd *const *cmds)
{
	fputs("# tpuform completion for fish. Generated by `tpuform help -completion=fish`\n"
	      "# from the command table (cmd/completion.c): do not edit.\n"
	      "function __tpuform_names\n"
	      "    set -l f tpuform.yaml\n"
	      "    set -l t (commandline -opc)\n"
	      "    for i in (seq (count $t))\n"
	      "        if contains -- $t[$i] -f -file --file; and test $i -lt (count $t)\n"
	      "            set f $t[(math $i + 1)]\n"
	      "        end\n"
	      "    end\n"
	      "    tpuform help -complete-names=$f 2>/dev/null\n"
	      "end\n"
	      "complete -c tpuform -f\n",
	      out);
	for (const struct tpf_cmd *const *c = cmds; *c; c++) {
		const struct tpf_cmd *cmd = *c;
		if (cmd->hidden)
			continue;
		fprintf(out, "complete -c tpuform -n __fish_use_subcommand -a %s -d '%s'\n",
			cmd->name, cmd->summary);
		char cond[256];
		snprintf(cond, sizeof(cond), "__fish_seen_subcommand_from %s", cmd->name);
		if (!cmd->subs) {
			fish_flags(out, cmd, cond);
			if (!strcmp(arg_kind(cmd), "node"))
				fprintf(out, "complete -c tpuform -n '%s' -a '(__tpuform_names)'\n",
					cond);
			else if (!strcmp(arg_kind(cmd), "remote")) /* files, and NODE: */
				fprintf(out, "complete -c tpuform -n '%s' -F -a '(__tpuform_names | "
					"string replace -rf \"\\tnode\\$\" :)'\n", cond);
			continue;
		}
		for (const struct tpf_cmd *const *s = cmd->subs; *s; s++) {
			fprintf(out, "complete -c tpuform -n '%s' -a %s -d '%s'\n", cond,
				(*s)->name, (*s)->summary);
			char sub[300];
			snprintf(sub, sizeof(sub), "%s; and __fish_seen_subcommand_from %s", cond,
				 (*s)->name);
			fish_flags(out, *s, sub);
		}
	}
}

int tpf_completion_script(FILE *out, const struct tpf_cmd *const *cmds, const char *shell)
{
	if (!strcmp(shell, "bash")) {
		bash_script(out, cmds);
		fputs("complete -F _tpuform tpuform\n", out);
		return 0;
	}
	if (!strcmp(shell, "zsh")) {
		/* The bash function through zsh's emulation; `complete` sets
		 * _comps[tpuform], and this first call is answered at once. */
		fputs("#compdef tpuform\n", out);
		fputs("autoload -U +X bashcompinit && bashcompinit\n", out);
		bash_script(out, cmds);
		fputs("complete -F _tpuform tpuform\n"
		      "[[ -n ${funcstack[(r)_main_complete]} ]] && _bash_complete -F _tpuform\n",
		      out);
		return 0;
	}
	if (!strcmp(shell, "fish")) {
		fish_script(out, cmds);
		return 0;
	}
	return -1;
}

int tpf_complete_names(FILE *out, const char *fleet_file)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	memset(&f, 0, sizeof(f));
	if (tpf_fleet_load(&f, fleet_file, &d) == 0) {
		if (!f.state_gcs.bucket && f.state_path) {
			struct tpf_state st;
			memset(&st, 0, sizeof(st));
			if (tpf_state_load(&st, f.state_path, &d) == 0)
				for (size_t i = 0; i < st.nnodes; i++)
					fprintf(out, "%s\tnode\n", st.nodes[i].name);
			tpf_state_release(&st);
		}
		for (size_t i = 0; i < f.ngroups; i++)
			fprintf(out, "%s\tgroup\n", f.groups[i].name);
	}
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
	return TPF_EXIT_OK;
}

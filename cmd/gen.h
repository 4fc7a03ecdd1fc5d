/*
 * What is generated from the command table (cmd/commands.c) besides help:
 * the man pages (cmd/man.c) and the shell completions (cmd/completion.c).
 * The Makefile runs them through hidden flags of `tpuform help`
 * (cmd/cmd_help.c), which passes them the command table (cmds: NULL-ended,
 * tpf_commands) so that they need not reach up to cmd/commands.c:
 *
 *   tpuform help -man [COMMAND]          tpuform(1), or tpuform-COMMAND(1)
 *   tpuform help -completion=SHELL       bash, zsh or fish
 *   tpuform help -complete-names=FILE    node and group names, for completion
 */
#ifndef TPF_CMD_GEN_H
#define TPF_CMD_GEN_H

#include <stdio.h>
#include "cmd/cmd.h"

/*
 * Write a man page in roff (man(7) macros) to out: c NULL is tpuform(1),
 * the overview (global options, the commands of cmds, exit status, environment,
 * files); otherwise tpuform-NAME(1) for top-level command c, with every
 * flag, its default and range as -help gives them, and for a group each
 * subcommand. Text is ASCII (other characters as \[uXXXX]), so
 * `groff -ww -man` and `mandoc -T lint` render it without warnings. The
 * date is $SOURCE_DATE_EPOCH's (reproducible builds) or today's.
 */
void tpf_man_page(FILE *out, const struct tpf_cmd *const *cmds, const struct tpf_cmd *c);

/*
 * Write the completion script for shell "bash", "zsh" or "fish" to out.
 * Commands, subcommands, flags and enumerable values are baked in from the
 * table cmds; node and group names are asked of `tpuform help
 * -complete-names=FILE` at completion time. Returns 0, or -1 for another
 * shell (nothing written).
 */
int tpf_completion_script(FILE *out, const struct tpf_cmd *const *cmds, const char *shell);

/*
 * Node names from the local state file of fleet file `fleet_file`, then
 * the fleet's group names, one a line on out. Never touches the network:
 * with the state in Cloud Storage only the groups are listed. A fleet file
 * or state that cannot be read gives fewer names or none, never an error
 * (completion must stay quiet). Returns 0.
 */
int tpf_complete_names(FILE *out, const char *fleet_file);

#endif

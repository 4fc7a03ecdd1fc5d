/*
 * tpuform state list|show|rm|pull — Terraform's state subcommands.
 * `rm` forgets nodes without destroying them (they keep their labels, so
 * the next plan offers to adopt them while they are still declared).
 */
#include "cmd/cmd.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("Usage: tpuform state <subcommand> [options] [args]\n\n"
	       "  list            the nodes in state\n"
	       "  show NODE       one node's recipe, job and workers (JSON)\n"
	       "  rm NODE...      forget nodes without destroying them (backup kept)\n"
	       "  pull            print the state file\n\n"
	       "Options: -f FILE (fleet file), -lock-timeout=DURATION (rm)\n");
}

int cmd_state(int argc, char **argv)
{
	if (argc < 1 || !strcmp(argv[0], "-help") || !strcmp(argv[0], "--help")) {
		help();
		return argc < 1 ? TPF_EXIT_ERROR : TPF_EXIT_OK;
	}
	const char *sub = argv[0];
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	struct tpf_flag flags[] = {
		TPF_COMMON_FLAGS(o),
		{ "lock-timeout", NULL, TPF_FLAG_DURATION, &o.lock_timeout, "wait this long for the state lock" },
		{ 0 },
	};
	char **pos;
	int npos;
	if (tpf_parse_flags("state", argc - 1, argv + 1, flags, &pos, &npos))
		return TPF_EXIT_ERROR;
	int is_rm = !strcmp(sub, "rm");
	if (strcmp(sub, "list") && strcmp(sub, "show") && !is_rm && strcmp(sub, "pull")) {
		fprintf(stderr, "Error: unknown state subcommand '%s'\n\n", sub);
		help();
		free(pos);
		return TPF_EXIT_ERROR;
	}
	tpf_ui_init(o.no_color, o.json);
	struct tpf_session s;
	int code = TPF_EXIT_ERROR;
	if (tpf_cmd_session_open(&s, &o, is_rm ? "OperationTypeInvalid" : NULL))
		goto done;
	if (!strcmp(sub, "list")) {
		for (size_t i = 0; i < s.state.nnodes; i++)
			printf("%s\n", s.state.nodes[i].name);
		code = TPF_EXIT_OK;
	} else if (!strcmp(sub, "pull")) {
		json_t *j = tpf_state_to_json(&s.state);
		char *text = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
		printf("%s\n", text);
		free(text);
		json_decref(j);
		code = TPF_EXIT_OK;
	} else if (!strcmp(sub, "show")) {
		if (npos != 1) {
			tpf_error(&s.d, "state show takes one node name");
			goto done;
		}
		json_t *j = tpf_state_to_json(&s.state);
		json_t *nodes = json_object_get(j, "nodes");
		size_t i;
		json_t *n;
		json_array_foreach(nodes, i, n) {
			if (!strcmp(json_string_value(json_object_get(n, "name")), pos[0])) {
				char *text = json_dumps(n, JSON_INDENT(2) | JSON_SORT_KEYS);
				printf("%s\n", text);
				free(text);
				code = TPF_EXIT_OK;
			}
		}
		json_decref(j);
		if (code)
			tpf_error(&s.d, "node '%s' is not in the state", pos[0]);
	} else {
		if (npos < 1) {
			tpf_error(&s.d, "state rm takes one or more node names");
			goto done;
		}
		int removed = 0;
		for (int i = 0; i < npos; i++) {
			if (tpf_state_remove(&s.state, pos[i])) {
				printf("Removed %s\n", pos[i]);
				removed++;
			} else {
				tpf_error(&s.d, "node '%s' is not in the state", pos[i]);
			}
		}
		if (removed && !tpf_state_save(&s.state, s.fleet.state_path, &s.d))
			printf("Successfully removed %d resource instance(s).\n", removed);
		code = tpf_diags_errors(&s.d) ? TPF_EXIT_ERROR : TPF_EXIT_OK;
	}
done:
	free(pos);
	tpf_ui_diags(&s.d);
	if (tpf_diags_errors(&s.d))
		code = TPF_EXIT_ERROR;
	tpf_session_close(&s);
	return code;
}

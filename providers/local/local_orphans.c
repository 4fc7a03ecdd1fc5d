/*
 * Workers whose node is gone. A node's directory removed behind tpuform's
 * back (the hint for a corrupt node.json suggests it) takes node.json and
 * the worker homes with it, but not what the workers run: their screen
 * sessions and jobs, and the short SCREENDIR links in /tmp. On a VM those
 * would die with the node; here they are found by what they name -- a
 * process's HOME or SCREENDIR under <root>/nodes/, a link of ours pointing
 * there -- and stopped once their node has no node.json, so that a job
 * never runs next to the job of a new node of the same name.
 */
#include "providers/local/local_internal.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int node_exists(const char *root, const char *name)
{
	char *file = tpf_local_node_file(root, name);
	int yes = access(file, F_OK) == 0;
	free(file);
	return yes;
}

/* Stop the workers in homes[from, to) (all of node `name`) and remove
 * their links. The caller made sure node.json is gone, under the lock. */
static int reap_node(const char *root, const char *name, char *const *homes, size_t from,
		     size_t to, struct tpf_diags *d)
{
	size_t total = 0;
	int err = 0;
	for (size_t i = from; i < to; i++) {
		size_t killed = 0;
		const char *worker = strrchr(homes[i], '/') + 1;
		char *address = xasprintf("%s/w%s", name, worker);
		if (tpf_local_kill_strays(homes[i], address, &killed, d) < 0 ||
		    tpf_local_forget_home(homes[i], d) < 0)
			err = TPF_ERROR;
		total += killed;
		free(address);
	}
	if (total) {
		char *dir = tpf_local_node_dir(root, name);
		tpf_warn(d, name,
			 "node '%s' has no directory any more ('%s' was removed), but %zu process%s "
			 "of its workers still ran: stopped them",
			 name, dir, total, total == 1 ? "" : "es");
		free(dir);
	}
	return err;
}

int tpf_local_reap_orphans(const char *root, const char *only, int locked, struct tpf_diags *d)
{
	struct tpf_local_homes homes = { 0 };
	int err = 0;

	tpf_local_running_homes(root, &homes);
	tpf_local_linked_homes(root, &homes);
	if (homes.n > 1)
		qsort(homes.items, homes.n, sizeof(*homes.items), cmp_str);

	/* Sorted, the homes of one node are neighbours: one run per node. */
	for (size_t i = 0; i < homes.n;) {
		char *name = tpf_local_home_node(root, homes.items[i]);
		size_t end = i + 1;
		while (end < homes.n) {
			char *next = tpf_local_home_node(root, homes.items[end]);
			int same = next && !strcmp(next, name);
			free(next);
			if (!same)
				break;
			end++;
		}
		if ((!only || !strcmp(name, only)) && !node_exists(root, name)) {
			int fd = -1;
			if (!locked && tpf_local_lock(root, name, &fd, d) < 0)
				err = TPF_ERROR;
			else if (!node_exists(root, name) &&
				 reap_node(root, name, homes.items, i, end, d) < 0)
				err = TPF_ERROR;
			tpf_local_unlock(fd);
		}
		free(name);
		i = end;
	}
	tpf_local_homes_release(&homes);
	return err;
}

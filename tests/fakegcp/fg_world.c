/*
 * The world: the one lock, the nodes of every zone, worker addresses and
 * the random stream for ids.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

static pthread_mutex_t world_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fg_node **nodes;
static size_t n_nodes, a_nodes;
static uint64_t id_state;
static uint32_t next_ip;

void fg_lock(void)
{
	pthread_mutex_lock(&world_mu);
}

void fg_unlock(void)
{
	pthread_mutex_unlock(&world_mu);
}

/* splitmix64 (Steele, Lea, Flood 2014): a tiny seedable generator, so a
 * --seed reproduces ids; nothing here needs cryptographic randomness. */
static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t fg_rand_id(void)
{
	return splitmix64(&id_state);
}

void fg_world_init(uint64_t seed)
{
	id_state = seed ^ 0x5bd1e995ULL;
	next_ip = fg_opt.worker_ip_base;
}

struct fg_node *fg_node_find(const char *zone, const char *id)
{
	for (size_t i = 0; i < n_nodes; i++)
		if (!strcmp(nodes[i]->zone, zone) && !strcmp(nodes[i]->id, id))
			return nodes[i];
	return NULL;
}

void fg_node_add(struct fg_node *n)
{
	XGROW(nodes, n_nodes + 1, a_nodes);
	nodes[n_nodes++] = n;
}

void fg_node_free(struct fg_node *n)
{
	if (!n)
		return;
	free(n->zone);
	free(n->id);
	free(n->type);
	free(n->create_op);
	json_decref(n->res);
	free(n);
}

void fg_node_remove(struct fg_node *n)
{
	for (size_t i = 0; i < n_nodes; i++) {
		if (nodes[i] != n)
			continue;
		memmove(nodes + i, nodes + i + 1, (n_nodes - i - 1) * sizeof(*nodes));
		n_nodes--;
		fg_node_free(n);
		return;
	}
}

static int by_zone_id(const void *a, const void *b)
{
	const struct fg_node *x = *(struct fg_node *const *)a, *y = *(struct fg_node *const *)b;
	int c = strcmp(x->zone, y->zone);

	return c ? c : strcmp(x->id, y->id);
}

struct fg_node **fg_nodes_in(const char *zone, size_t *count)
{
	struct fg_node **out = xcalloc(n_nodes + 1, sizeof(*out));
	size_t k = 0;

	for (size_t i = 0; i < n_nodes; i++)
		if (!zone || !strcmp(nodes[i]->zone, zone))
			out[k++] = nodes[i];
	qsort(out, k, sizeof(*out), by_zone_id);
	*count = k;
	return out;
}

uint32_t fg_alloc_ips(int count)
{
	uint32_t first = next_ip;

	next_ip += (uint32_t)count;
	return first;
}

void fg_world_free(void)
{
	for (size_t i = 0; i < n_nodes; i++)
		fg_node_free(nodes[i]);
	free(nodes);
	nodes = NULL;
	n_nodes = a_nodes = 0;
}

/*
 * ke_memstore.c
 *		The engine's memory home: nodes are malloc'd blocks in a growable
 *		table, freed nodes are kept on a free list for reuse.
 *
 * Used by the engine's unit tests, its benchmarks and the backend functions
 * that partition an array without any index.  Node 0 is never handed out.
 */
#include <stdlib.h>
#include <string.h>

#include "ke_engine.h"

typedef struct MemStore
{
	KeStore		pub;			/* must be first */
	void	  **nodes;
	size_t		nnodes;			/* slots used, including slot 0 */
	size_t		capacity;
	KeNodeId   *freelist;
	size_t		nfree;
	size_t		live;
	KeMeta		meta;
} MemStore;

/* Node for reading */
static const void *
mem_read(KeStore *store, KeNodeId id)
{
	MemStore   *ms = (MemStore *) store;

	return ms->nodes[id];
}

/* Node for writing */
static void *
mem_write(KeStore *store, KeNodeId id)
{
	MemStore   *ms = (MemStore *) store;

	return ms->nodes[id];
}

/* Allocate a zeroed node; 0 when out of memory */
static KeNodeId
mem_alloc(KeStore *store)
{
	MemStore   *ms = (MemStore *) store;
	KeNodeId	id;
	void	   *node;

	if (ms->nfree > 0)
	{
		id = ms->freelist[--ms->nfree];
		memset(ms->nodes[id], 0, store->node_size);
		ms->live++;
		return id;
	}
	if (ms->nnodes == ms->capacity)
	{
		size_t		ncap = ms->capacity * 2;
		void	  **nn = ke_realloc(ms->nodes, ncap * sizeof(void *));
		KeNodeId   *nf;

		if (nn == NULL)
			return 0;
		ms->nodes = nn;
		nf = ke_realloc(ms->freelist, ncap * sizeof(KeNodeId));
		if (nf == NULL)
			return 0;
		ms->freelist = nf;
		ms->capacity = ncap;
	}
	node = ke_calloc(1, store->node_size);
	if (node == NULL)
		return 0;
	id = (KeNodeId) ms->nnodes++;
	ms->nodes[id] = node;
	ms->live++;
	return id;
}

/* Put a node on the free list */
static void
mem_release(KeStore *store, KeNodeId id)
{
	MemStore   *ms = (MemStore *) store;

	ms->freelist[ms->nfree++] = id;
	ms->live--;
}

/* The root record */
static KeMeta *
mem_meta(KeStore *store, bool for_write)
{
	MemStore   *ms = (MemStore *) store;

	(void) for_write;
	return &ms->meta;
}

/* Create a memory home with nodes of node_size bytes */
KeStore *
ke_memstore_create(size_t node_size)
{
	MemStore   *ms;

	if (node_size < 512)
		return NULL;
	ms = ke_calloc(1, sizeof(MemStore));
	if (ms == NULL)
		return NULL;
	ms->capacity = 64;
	ms->nodes = ke_calloc(ms->capacity, sizeof(void *));
	ms->freelist = ke_calloc(ms->capacity, sizeof(KeNodeId));
	if (ms->nodes == NULL || ms->freelist == NULL)
	{
		ke_free(ms->nodes);
		ke_free(ms->freelist);
		ke_free(ms);
		return NULL;
	}
	ms->nnodes = 1;
	ms->pub.node_size = node_size;
	ms->pub.read = mem_read;
	ms->pub.write = mem_write;
	ms->pub.alloc = mem_alloc;
	ms->pub.release = mem_release;
	ms->pub.meta = mem_meta;
	return &ms->pub;
}

/* Free a memory home and every node in it */
void
ke_memstore_destroy(KeStore *store)
{
	MemStore   *ms = (MemStore *) store;

	if (ms == NULL)
		return;
	for (size_t i = 1; i < ms->nnodes; i++)
		ke_free(ms->nodes[i]);
	ke_free(ms->nodes);
	ke_free(ms->freelist);
	ke_free(ms);
}

/* Bytes held by live nodes */
size_t
ke_memstore_bytes(KeStore *store)
{
	MemStore   *ms = (MemStore *) store;

	return ms->live * store->node_size;
}

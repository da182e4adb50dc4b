/*
 * ke_memstore.c
 *		The engine's memory home: nodes are malloc'd blocks in a growable
 *		table, freed nodes are kept on a free list for reuse.
 *
 * Used by the engine's unit tests, its benchmarks and the backend functions
 * that partition an array without any index.  Node 0 is never handed out.
 *
 * A store made by ke_memstore_create_strict() hands out short-lived views
 * instead of the nodes themselves, to hold the engine to the KeStore
 * contract that an index's store relies on when it writes pages back
 * early: each read or write returns a copy kept among the
 * KE_STRICT_WINDOW most recently used; a view that falls out is written
 * back and filled with a poison pattern, and its memory is not handed out
 * again for KE_STRICT_WINDOW * 3 more views, so an engine that kept a
 * pointer longer reads garbage and loses its writes (and the unit tests
 * fail).
 */
#include <stdlib.h>
#include <string.h>

#include "ke_engine.h"

#define KE_STRICT_WINDOW	16
#define KE_STRICT_SPARE		(KE_STRICT_WINDOW * 3)
#define KE_STRICT_POISON	0xA5

/* A view of a node, in a strict store */
typedef struct View
{
	KeNodeId	id;				/* 0: unused */
	uint64_t	stamp;			/* last handed out */
	unsigned char *mem;
} View;

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
	/* strict stores only */
	bool		strict;
	View		views[KE_STRICT_WINDOW];
	unsigned char *spare[KE_STRICT_SPARE];	/* poisoned, oldest first */
	uint64_t	clock;
} MemStore;

/* Write a view back to its node and poison it, keeping its memory aside */
static void
view_retire(MemStore *ms, View *v)
{
	if (v->id != 0)
		memcpy(ms->nodes[v->id], v->mem, ms->pub.node_size);
	memset(v->mem, KE_STRICT_POISON, ms->pub.node_size);
	/* the oldest spare becomes this view's memory again */
	{
		unsigned char *oldest = ms->spare[0];

		memmove(ms->spare, ms->spare + 1, sizeof(ms->spare) - sizeof(ms->spare[0]));
		ms->spare[KE_STRICT_SPARE - 1] = v->mem;
		v->mem = oldest;
	}
	v->id = 0;
}

/* The view of a node: the one it has, or a fresh copy in the oldest view */
static void *
view_of(MemStore *ms, KeNodeId id)
{
	View	   *oldest = &ms->views[0];

	for (int i = 0; i < KE_STRICT_WINDOW; i++)
	{
		View	   *v = &ms->views[i];

		if (v->id == id)
		{
			v->stamp = ++ms->clock;
			return v->mem;
		}
		if (v->stamp < oldest->stamp)
			oldest = v;
	}
	view_retire(ms, oldest);
	oldest->id = id;
	oldest->stamp = ++ms->clock;
	memcpy(oldest->mem, ms->nodes[id], ms->pub.node_size);
	return oldest->mem;
}

/* Node for reading */
static const void *
mem_read(KeStore *store, KeNodeId id)
{
	MemStore   *ms = (MemStore *) store;

	return ms->strict ? view_of(ms, id) : ms->nodes[id];
}

/* Node for writing */
static void *
mem_write(KeStore *store, KeNodeId id)
{
	MemStore   *ms = (MemStore *) store;

	return ms->strict ? view_of(ms, id) : ms->nodes[id];
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

	if (ms->strict)
	{
		/* a released node's view goes without being written back */
		for (int i = 0; i < KE_STRICT_WINDOW; i++)
			if (ms->views[i].id == id)
			{
				ms->views[i].id = 0;
				view_retire(ms, &ms->views[i]);
				ms->views[i].stamp = 0;
			}
	}
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

/*
 * A strict memory home (see the head of this file), for tests; NULL when
 * out of memory
 */
KeStore *
ke_memstore_create_strict(size_t node_size)
{
	MemStore   *ms = (MemStore *) ke_memstore_create(node_size);
	bool		ok = ms != NULL;

	if (!ok)
		return NULL;
	ms->strict = true;
	for (int i = 0; i < KE_STRICT_WINDOW; i++)
		ok &= (ms->views[i].mem = ke_malloc(node_size)) != NULL;
	for (int i = 0; i < KE_STRICT_SPARE; i++)
		ok &= (ms->spare[i] = ke_malloc(node_size)) != NULL;
	if (!ok)
	{
		ke_memstore_destroy(&ms->pub);
		return NULL;
	}
	return &ms->pub;
}

/* Free a memory home and every node in it */
void
ke_memstore_destroy(KeStore *store)
{
	MemStore   *ms = (MemStore *) store;

	if (ms == NULL)
		return;
	if (ms->strict)
	{
		for (int i = 0; i < KE_STRICT_WINDOW; i++)
			ke_free(ms->views[i].mem);
		for (int i = 0; i < KE_STRICT_SPARE; i++)
			ke_free(ms->spare[i]);
	}
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

/*
 * ke_engine.c
 *		The run tree and the incremental linear DP over it.
 *
 * Tree.  A B+-tree over runs ordered by value, one node per store node.
 * Leaves hold runs (LeafItem); internal nodes hold (key, add, child) where
 * key is a lower bound of the child's values (ignored for item 0) and add is
 * a pending offset for every E and best in the child's subtree.  The real E
 * of a run is its stored E plus the adds on its root-to-leaf path; a cursor
 * carries those sums down with it.  Nodes are not merged when they shrink,
 * only freed when empty, as most database indexes do.
 *
 * DP state.  Each run stores E, the running minimum best with its argmin
 * (run value, first/last row) and its frontier (value of the last run whose
 * candidates best has absorbed), so the DP can resume at any run from the
 * state of the run before it.  A flag says whether any valid partitioning
 * ends at the run; E and best mean something only then (best exists exactly
 * when E does, E = value + best).  The flag is never folded into E: in the
 * float kind a valid partitioning's error can overflow to infinity.
 *
 * A change.  A batch of count changes is applied to the runs first.  Count
 * changes that keep a run at >= 2 rows, or at 1, leave every E and boundary
 * unchanged.  A new run, a removed run, or a count crossing 1 <-> 2 (a
 * candidate start appears or goes) starts a recompute at the first run that
 * can see it.  The recompute stops at the first run r at least k runs past
 * every change whose frontier has absorbed the last changed run, whose
 * frontier and argmin are as before, whose best moved by the same delta as
 * its E, and whose E moved by that delta all the way from its frontier:
 * every later run then only moves by delta, which is applied lazily.
 *
 * Boundaries.  Runs carry flags saying where the optimal partitioning ends a
 * partition.  After a change the new path is walked down from the lowest
 * untouched boundary above the recompute until it lands on an old boundary
 * below every change; only runs between the two are re-flagged.
 */
#include <stdlib.h>
#include <string.h>

#include "ke_engine.h"

/*
 * A bulk build leaves room in every node, as btree's fillfactor does, so
 * that the inserts that follow do not split nearly every leaf at once.
 */
#define KE_BUILD_FILL	80

typedef struct NodeHdr
{
	uint16_t	level;			/* 0 = leaf */
	uint16_t	nitems;
	uint32_t	pad;
	uint64_t	pad2;
} NodeHdr;

typedef struct LeafItem
{
	KeNum		value;
	KeNum		E;				/* stored: real minus the path's adds */
	KeNum		best;			/* stored likewise */
	KeNum		argmin;
	KeNum		frontier;
	int64_t		count;
	uint8_t		argmin_last;
	uint8_t		has_frontier;
	uint8_t		end;			/* KE_END_* */
	uint8_t		fresh;			/* inserted by the current change */
	uint8_t		feasible;		/* E and best hold a valid partitioning's */
	uint8_t		pad1;
	uint16_t	pad2;
} LeafItem;

typedef struct InnerItem
{
	KeNum		key;
	KeNum		add;
	KeNodeId	child;
	uint32_t	pad;
} InnerItem;

#define LEAF_ITEMS(n)	((LeafItem *) ((char *) (n) + sizeof(NodeHdr)))
#define INNER_ITEMS(n)	((InnerItem *) ((char *) (n) + sizeof(NodeHdr)))

struct KeEngine
{
	KeStore    *store;
	KeKind		kind;
	int			k;
	KeNum		e;
	int			leaf_cap;
	int			inner_cap;
	bool		keep_boundaries;	/* ke_keep_boundaries(): the tie rule */
	KeChangeInfo last;
};

typedef struct Cursor
{
	int			height;
	bool		valid;			/* false: before the first or past the last run */
	KeNodeId	node[KE_MAX_HEIGHT];
	int			idx[KE_MAX_HEIGHT];
	KeNum		add[KE_MAX_HEIGHT]; /* sum of adds above node[level] */
} Cursor;

/* A run as the DP sees it: real numbers, no stored offsets */
typedef struct Run
{
	KeNum		value;
	int64_t		count;
	bool		feasible;
	KeNum		E;
	KeNum		best;
	KeNum		argmin;
	int			argmin_last;
	bool		has_frontier;
	KeNum		frontier;
	int			end;
	bool		fresh;
} Run;

/* What a seek looks for: the first run whose value satisfies a monotone test */
typedef enum SeekMode
{
	SEEK_GE,					/* value >= x */
	SEEK_GT,					/* value > x */
	SEEK_RANGE					/* value - x >= e */
} SeekMode;

typedef struct SeekKey
{
	SeekMode	mode;
	KeNum		x;
	KeNum		e;
} SeekKey;

/* Does v satisfy the seek's test? */
static inline bool
seek_test(KeKind kind, const SeekKey *key, KeNum v)
{
	switch (key->mode)
	{
		case SEEK_GE:
			return ke_num_le(kind, key->x, v);
		case SEEK_GT:
			return !ke_num_le(kind, v, key->x);
		case SEEK_RANGE:
			return ke_num_range_ok(kind, key->x, v, key->e);
	}
	return true;
}

/* ----------------------------------------------------------------
 * Small helpers
 * ----------------------------------------------------------------
 */

static inline KeMeta *
meta_r(KeEngine *eng)
{
	return eng->store->meta(eng->store, false);
}

static inline KeMeta *
meta_w(KeEngine *eng)
{
	return eng->store->meta(eng->store, true);
}

static inline const NodeHdr *
node_r(KeEngine *eng, KeNodeId id)
{
	return (const NodeHdr *) eng->store->read(eng->store, id);
}

static inline NodeHdr *
node_w(KeEngine *eng, KeNodeId id)
{
	return (NodeHdr *) eng->store->write(eng->store, id);
}

/* Is a number usable as a value (not NaN, not infinite)? */
static bool
value_ok(KeKind kind, KeNum v)
{
	if (kind == KE_KIND_FLOAT)
		return isfinite(v.f);
	return v.i > -KE_VALUE_LIMIT && v.i < KE_VALUE_LIMIT;
}

/* Human-readable status */
const char *
ke_status_message(KeStatus st)
{
	switch (st)
	{
		case KE_OK:
			return "ok";
		case KE_ERR_ARG:
			return "invalid argument";
		case KE_ERR_NOTFOUND:
			return "value not present";
		case KE_ERR_NOMEM:
			return "out of memory";
		case KE_ERR_CORRUPT:
			return "engine state is inconsistent";
	}
	return "unknown status";
}

/* ----------------------------------------------------------------
 * Cursor
 * ----------------------------------------------------------------
 */

/* Descend from level lev to a leaf, always taking item 0 (or the last) */
static void
cur_descend_edge(KeEngine *eng, Cursor *c, int lev, bool rightmost)
{
	for (; lev < c->height - 1; lev++)
	{
		const NodeHdr *n = node_r(eng, c->node[lev]);
		const InnerItem *it = INNER_ITEMS(n);
		int			i = rightmost ? n->nitems - 1 : 0;

		c->idx[lev] = i;
		c->node[lev + 1] = it[i].child;
		c->add[lev + 1] = ke_num_add(eng->kind, c->add[lev], it[i].add);
	}
	{
		const NodeHdr *leaf = node_r(eng, c->node[c->height - 1]);

		c->idx[c->height - 1] = rightmost ? leaf->nitems - 1 : 0;
		c->valid = leaf->nitems > 0;
	}
}

/* Start a cursor at the root */
static void
cur_init(KeEngine *eng, Cursor *c)
{
	KeMeta	   *m = meta_r(eng);

	c->height = (int) m->height;
	c->node[0] = m->root;
	c->add[0] = ke_num_zero(eng->kind);
	c->valid = false;
}

/* Position at the first run */
static bool
cur_first(KeEngine *eng, Cursor *c)
{
	cur_init(eng, c);
	cur_descend_edge(eng, c, 0, false);
	return c->valid;
}

/* Position at the last run */
static bool
cur_last(KeEngine *eng, Cursor *c)
{
	cur_init(eng, c);
	cur_descend_edge(eng, c, 0, true);
	return c->valid;
}

/*
 * Search a node for the first item in [lo, hi) whose number (at keyoff in
 * items of the given width) passes the seek's test; hi if none.
 *
 * A plain binary search of a node that is not in cache waits for one memory
 * load per probe, one after the other.  Here fifteen evenly spaced samples
 * are prefetched together and scanned, then the sixteenth of the node they
 * point to is prefetched and searched: two memory latencies a level instead
 * of about eight.  On large trees this is most of the cost of a change.
 */
static inline int
node_search(KeKind kind, const SeekKey *key, const void *items, size_t width,
			size_t keyoff, int lo, int hi)
{
	const char *base = (const char *) items + keyoff;

#define ITEM_NUM(i) (*(const KeNum *) (base + (size_t) (i) * width))
	if (hi - lo > 32)
	{
		int			step = (hi - lo) / 16;
		int			nlo = lo,
					nhi = hi;

		for (int j = 1; j < 16; j++)
			__builtin_prefetch(base + (size_t) (lo + j * step) * width);
		for (int j = 1; j < 16; j++)
		{
			int			i = lo + j * step;

			if (seek_test(kind, key, ITEM_NUM(i)))
			{
				nhi = i;
				break;
			}
			nlo = i + 1;
		}
		lo = nlo;
		hi = nhi;
		for (const char *p = base + (size_t) lo * width;
			 p < base + (size_t) hi * width; p += 64)
			__builtin_prefetch(p);
	}
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (seek_test(kind, key, ITEM_NUM(mid)))
			hi = mid;
		else
			lo = mid + 1;
	}
#undef ITEM_NUM
	return lo;
}

/*
 * Position at the first run whose value satisfies the key's test (monotone:
 * false, then true).  The leaf index may equal nitems (the insertion point is the end of
 * that leaf); c->valid tells whether it names a run.  Call cur_normalize()
 * before reading.
 */
static void
cur_seek_raw(KeEngine *eng, Cursor *c, const SeekKey *key)
{
	int			lev;

	cur_init(eng, c);
	for (lev = 0; lev < c->height - 1; lev++)
	{
		const NodeHdr *n = node_r(eng, c->node[lev]);
		const InnerItem *it = INNER_ITEMS(n);
		int			lo;

		/* the last item whose key is false; item 0 counts as false */
		lo = node_search(eng->kind, key, it, sizeof(InnerItem),
						 offsetof(InnerItem, key), 1, n->nitems);
		c->idx[lev] = lo - 1;
		c->node[lev + 1] = it[lo - 1].child;
		c->add[lev + 1] = ke_num_add(eng->kind, c->add[lev], it[lo - 1].add);
	}
	{
		const NodeHdr *leaf = node_r(eng, c->node[lev]);
		const LeafItem *li = LEAF_ITEMS(leaf);
		int			lo;

		lo = node_search(eng->kind, key, li, sizeof(LeafItem),
						 offsetof(LeafItem, value), 0, leaf->nitems);
		c->idx[lev] = lo;
		c->valid = lo < leaf->nitems;
	}
}

/* Move to the next run; false (and !valid) past the last */
static bool
cur_next(KeEngine *eng, Cursor *c)
{
	int			lev = c->height - 1;
	const NodeHdr *n = node_r(eng, c->node[lev]);

	if (c->idx[lev] + 1 < n->nitems)
	{
		c->idx[lev]++;
		c->valid = true;
		return true;
	}
	for (lev = c->height - 2; lev >= 0; lev--)
	{
		n = node_r(eng, c->node[lev]);
		if (c->idx[lev] + 1 < n->nitems)
		{
			const InnerItem *it = INNER_ITEMS(n);
			int			i = ++c->idx[lev];

			c->node[lev + 1] = it[i].child;
			c->add[lev + 1] = ke_num_add(eng->kind, c->add[lev], it[i].add);
			cur_descend_edge(eng, c, lev + 1, false);
			if (c->valid)
				return true;
			/* an empty leaf can only be the root */
			break;
		}
	}
	c->valid = false;
	return false;
}

/* Move to the previous run; false (and !valid) before the first */
static bool
cur_prev(KeEngine *eng, Cursor *c)
{
	int			lev = c->height - 1;

	if (c->idx[lev] > 0)
	{
		c->idx[lev]--;
		c->valid = true;
		return true;
	}
	for (lev = c->height - 2; lev >= 0; lev--)
	{
		if (c->idx[lev] > 0)
		{
			const NodeHdr *n = node_r(eng, c->node[lev]);
			const InnerItem *it = INNER_ITEMS(n);
			int			i = --c->idx[lev];

			c->node[lev + 1] = it[i].child;
			c->add[lev + 1] = ke_num_add(eng->kind, c->add[lev], it[i].add);
			cur_descend_edge(eng, c, lev + 1, true);
			return c->valid;
		}
	}
	c->valid = false;
	return false;
}

/* After cur_seek_raw: step onto the next leaf when at a leaf's end */
static bool
cur_normalize(KeEngine *eng, Cursor *c)
{
	int			lev = c->height - 1;
	const NodeHdr *n = node_r(eng, c->node[lev]);

	if (c->idx[lev] < n->nitems)
	{
		c->valid = true;
		return true;
	}
	if (n->nitems == 0)
	{
		c->valid = false;
		return false;
	}
	c->idx[lev] = n->nitems - 1;
	return cur_next(eng, c);
}

/* Position at the first run >= x (or > x when strict); false if none */
static bool
cur_seek(KeEngine *eng, Cursor *c, KeNum x, bool strict)
{
	SeekKey		key;

	key.mode = strict ? SEEK_GT : SEEK_GE;
	key.x = x;
	cur_seek_raw(eng, c, &key);
	return cur_normalize(eng, c);
}

/* The leaf item under the cursor, for reading */
static inline const LeafItem *
cur_item(KeEngine *eng, const Cursor *c)
{
	return &LEAF_ITEMS(node_r(eng, c->node[c->height - 1]))[c->idx[c->height - 1]];
}

/* The leaf item under the cursor, for writing */
static inline LeafItem *
cur_item_w(KeEngine *eng, const Cursor *c)
{
	return &LEAF_ITEMS(node_w(eng, c->node[c->height - 1]))[c->idx[c->height - 1]];
}

/* Read the run under the cursor with its real E and best */
static void
cur_get(KeEngine *eng, const Cursor *c, Run *r)
{
	const LeafItem *it = cur_item(eng, c);
	KeNum		add = c->add[c->height - 1];

	r->value = it->value;
	r->count = it->count;
	r->feasible = it->feasible;
	r->E = it->feasible ? ke_num_add(eng->kind, it->E, add) : ke_num_zero(eng->kind);
	r->best = it->feasible ? ke_num_add(eng->kind, it->best, add) : ke_num_zero(eng->kind);
	r->argmin = it->argmin;
	r->argmin_last = it->argmin_last;
	r->has_frontier = it->has_frontier;
	r->frontier = it->frontier;
	r->end = it->end;
	r->fresh = it->fresh;
}

/* Convert a real E or best to the stored form under the cursor's path */
static inline KeNum
to_stored(KeEngine *eng, const Cursor *c, KeNum real)
{
	return ke_num_sub(eng->kind, real, c->add[c->height - 1]);
}

/* Does a valid partitioning end at the run under the cursor? */
static inline bool
cur_feasible(KeEngine *eng, const Cursor *c)
{
	return cur_item(eng, c)->feasible;
}

/* Real E of the run under the cursor, which must be feasible */
static inline KeNum
cur_E(KeEngine *eng, const Cursor *c)
{
	return ke_num_add(eng->kind, cur_item(eng, c)->E, c->add[c->height - 1]);
}

/* ----------------------------------------------------------------
 * Tree structure changes
 * ----------------------------------------------------------------
 */

/*
 * Insert item at pos into a full array a of n items of the given width,
 * splitting: the first keep = (n + 1) / 2 items stay in a, the rest go to r.
 * Done in place, without a scratch copy.
 */
static void
split_insert(char *a, char *r, int n, int pos, const void *item, size_t width)
{
	int			keep = (n + 1) / 2;

	if (pos < keep)
	{
		memcpy(r, a + (size_t) (keep - 1) * width, (size_t) (n - keep + 1) * width);
		memmove(a + (size_t) (pos + 1) * width, a + (size_t) pos * width,
				(size_t) (keep - 1 - pos) * width);
		memcpy(a + (size_t) pos * width, item, width);
	}
	else
	{
		memcpy(r, a + (size_t) keep * width, (size_t) (pos - keep) * width);
		memcpy(r + (size_t) (pos - keep) * width, item, width);
		memcpy(r + (size_t) (pos - keep + 1) * width, a + (size_t) pos * width,
			   (size_t) (n - pos) * width);
	}
}

/*
 * Add a right sibling `rid` of node[lev] (whose lowest key is key) to the
 * parent, splitting upwards as needed.
 */
static KeStatus
link_sibling(KeEngine *eng, Cursor *c, int lev, KeNodeId rid, KeNum key)
{
	KeMeta	   *m;
	InnerItem	item;

	memset(&item, 0, sizeof(item));
	item.key = key;
	item.child = rid;
	if (lev == 0)
	{
		/* the root split: grow a new root */
		KeNodeId	nr = eng->store->alloc(eng->store);
		NodeHdr    *rn;
		InnerItem  *it;
		const NodeHdr *old;

		if (nr == 0)
			return KE_ERR_NOMEM;
		old = node_r(eng, c->node[0]);
		rn = node_w(eng, nr);
		rn->level = (uint16_t) (old->level + 1);
		rn->nitems = 2;
		it = INNER_ITEMS(rn);
		memset(it, 0, 2 * sizeof(InnerItem));
		it[0].key = old->level == 0 ? LEAF_ITEMS(old)[0].value : INNER_ITEMS(old)[0].key;
		it[0].add = ke_num_zero(eng->kind);
		it[0].child = c->node[0];
		item.add = ke_num_zero(eng->kind);
		it[1] = item;
		m = meta_w(eng);
		m->root = nr;
		m->height++;
		return KE_OK;
	}
	else
	{
		int			plev = lev - 1;
		int			pos = c->idx[plev] + 1;
		NodeHdr    *pn = node_w(eng, c->node[plev]);
		InnerItem  *pit = INNER_ITEMS(pn);

		item.add = pit[c->idx[plev]].add;
		if (pn->nitems < eng->inner_cap)
		{
			memmove(&pit[pos + 1], &pit[pos], (pn->nitems - pos) * sizeof(InnerItem));
			pit[pos] = item;
			pn->nitems++;
			return KE_OK;
		}
		else
		{
			KeNodeId	rid2 = eng->store->alloc(eng->store);
			NodeHdr    *rn;
			int			total = pn->nitems + 1;
			int			keep = total / 2;
			KeNum		upkey;

			if (rid2 == 0)
				return KE_ERR_NOMEM;
			pn = node_w(eng, c->node[plev]);
			rn = node_w(eng, rid2);
			rn->level = pn->level;
			split_insert((char *) INNER_ITEMS(pn), (char *) INNER_ITEMS(rn),
						 pn->nitems, pos, &item, sizeof(InnerItem));
			pn->nitems = (uint16_t) keep;
			rn->nitems = (uint16_t) (total - keep);
			upkey = INNER_ITEMS(rn)[0].key;
			return link_sibling(eng, c, plev, rid2, upkey);
		}
	}
}

/* Insert a leaf item at the (raw) cursor position */
static KeStatus
leaf_insert(KeEngine *eng, Cursor *c, const LeafItem *item)
{
	int			lev = c->height - 1;
	int			pos = c->idx[lev];
	NodeHdr    *n = node_w(eng, c->node[lev]);
	LeafItem   *it = LEAF_ITEMS(n);

	if (n->nitems < eng->leaf_cap)
	{
		memmove(&it[pos + 1], &it[pos], (n->nitems - pos) * sizeof(LeafItem));
		it[pos] = *item;
		n->nitems++;
		return KE_OK;
	}
	else
	{
		KeNodeId	rid = eng->store->alloc(eng->store);
		NodeHdr    *rn;
		int			total = n->nitems + 1;
		int			keep = total / 2;
		KeNum		key;

		if (rid == 0)
			return KE_ERR_NOMEM;
		n = node_w(eng, c->node[lev]);
		rn = node_w(eng, rid);
		rn->level = 0;
		split_insert((char *) LEAF_ITEMS(n), (char *) LEAF_ITEMS(rn),
					 n->nitems, pos, item, sizeof(LeafItem));
		n->nitems = (uint16_t) keep;
		rn->nitems = (uint16_t) (total - keep);
		key = LEAF_ITEMS(rn)[0].value;
		return link_sibling(eng, c, lev, rid, key);
	}
}

/* While the root is an inner node with one child, make the child the root */
static void
collapse_root(KeEngine *eng)
{
	for (;;)
	{
		KeMeta	   *m = meta_r(eng);
		const NodeHdr *root = node_r(eng, m->root);
		KeNodeId	child;
		KeNum		add;
		NodeHdr    *cn;

		if (root->level == 0 || root->nitems != 1)
			return;
		child = INNER_ITEMS(root)[0].child;
		add = INNER_ITEMS(root)[0].add;
		cn = node_w(eng, child);
		for (int i = 0; i < cn->nitems; i++)
		{
			if (cn->level == 0)
			{
				LeafItem   *li = &LEAF_ITEMS(cn)[i];

				if (!li->feasible)
					continue;
				li->E = ke_num_add(eng->kind, li->E, add);
				li->best = ke_num_add(eng->kind, li->best, add);
			}
			else
			{
				InnerItem  *ii = &INNER_ITEMS(cn)[i];

				ii->add = ke_num_add(eng->kind, ii->add, add);
			}
		}
		eng->store->release(eng->store, m->root);
		m = meta_w(eng);
		m->root = child;
		m->height--;
	}
}

/* Remove the run under the cursor; the cursor is invalid afterwards */
static void
leaf_remove(KeEngine *eng, Cursor *c)
{
	int			lev = c->height - 1;
	NodeHdr    *n = node_w(eng, c->node[lev]);
	int			pos = c->idx[lev];

	if (n->level == 0)
	{
		LeafItem   *it = LEAF_ITEMS(n);

		memmove(&it[pos], &it[pos + 1], (n->nitems - pos - 1) * sizeof(LeafItem));
	}
	n->nitems--;
	/* free emptied nodes upwards; the root always stays */
	while (n->nitems == 0 && lev > 0)
	{
		InnerItem  *pit;

		eng->store->release(eng->store, c->node[lev]);
		lev--;
		n = node_w(eng, c->node[lev]);
		pit = INNER_ITEMS(n);
		pos = c->idx[lev];
		memmove(&pit[pos], &pit[pos + 1], (n->nitems - pos - 1) * sizeof(InnerItem));
		n->nitems--;
	}
	if (n->nitems == 0 && n->level > 0)
	{
		/* the whole tree emptied: the root becomes an empty leaf */
		n->level = 0;
		meta_w(eng)->height = 1;
	}
	collapse_root(eng);
	c->valid = false;
}

/*
 * Add delta to E and best of every run after the cursor's run, lazily:
 * items to the right in the leaf directly, whole subtrees to the right of
 * the path through their pending add.
 */
static void
add_suffix(KeEngine *eng, const Cursor *c, KeNum delta)
{
	int			lev = c->height - 1;
	NodeHdr    *n;

	n = node_w(eng, c->node[lev]);
	for (int i = c->idx[lev] + 1; i < n->nitems; i++)
	{
		LeafItem   *li = &LEAF_ITEMS(n)[i];

		if (!li->feasible)
			continue;
		li->E = ke_num_add(eng->kind, li->E, delta);
		li->best = ke_num_add(eng->kind, li->best, delta);
	}
	for (lev = c->height - 2; lev >= 0; lev--)
	{
		const NodeHdr *rn = node_r(eng, c->node[lev]);

		if (c->idx[lev] + 1 >= rn->nitems)
			continue;
		n = node_w(eng, c->node[lev]);
		for (int i = c->idx[lev] + 1; i < n->nitems; i++)
		{
			InnerItem  *ii = &INNER_ITEMS(n)[i];

			ii->add = ke_num_add(eng->kind, ii->add, delta);
		}
	}
}

/* Release every node of the tree below (and including) id */
static void
free_subtree(KeEngine *eng, KeNodeId id)
{
	const NodeHdr *n = node_r(eng, id);

	if (n->level > 0)
	{
		int			cnt = n->nitems;
		KeNodeId   *kids = ke_malloc(cnt * sizeof(KeNodeId));

		if (kids != NULL)
		{
			for (int i = 0; i < cnt; i++)
				kids[i] = INNER_ITEMS(n)[i].child;
			for (int i = 0; i < cnt; i++)
				free_subtree(eng, kids[i]);
			ke_free(kids);
		}
	}
	eng->store->release(eng->store, id);
}

/* ----------------------------------------------------------------
 * Creation
 * ----------------------------------------------------------------
 */

/* Check k and e */
KeStatus
ke_validate_params(KeKind kind, int k, KeNum e)
{
	if (kind != KE_KIND_EXACT && kind != KE_KIND_FLOAT)
		return KE_ERR_ARG;
	if (k < 2 || k > KE_MAX_K)
		return KE_ERR_ARG;
	if (kind == KE_KIND_FLOAT && !isfinite(e.f))
		return KE_ERR_ARG;
	if (!value_ok(kind, e) || ke_num_cmp(kind, e, ke_num_zero(kind)) < 0)
		return KE_ERR_ARG;
	return KE_OK;
}

/* Fill in the parts of an engine handle derived from the store */
static KeStatus
engine_attach(KeEngine **out, KeStore *store)
{
	KeEngine   *eng = ke_calloc(1, sizeof(KeEngine));
	KeMeta	   *m = store->meta(store, false);

	if (eng == NULL)
		return KE_ERR_NOMEM;
	eng->store = store;
	eng->kind = (KeKind) m->kind;
	eng->k = m->k;
	eng->e = m->e;
	eng->leaf_cap = (int) ((store->node_size - sizeof(NodeHdr)) / sizeof(LeafItem));
	eng->inner_cap = (int) ((store->node_size - sizeof(NodeHdr)) / sizeof(InnerItem));
	if (eng->leaf_cap < 3 || eng->inner_cap < 3)
	{
		ke_free(eng);
		return KE_ERR_ARG;
	}
	*out = eng;
	return KE_OK;
}

/* Create an empty engine in a store */
KeStatus
ke_create(KeEngine **out, KeStore *store, KeKind kind, int k, KeNum e)
{
	KeStatus	st = ke_validate_params(kind, k, e);
	KeMeta	   *m;
	KeNodeId	root;

	*out = NULL;
	if (st != KE_OK)
		return st;
	if (store == NULL || store->node_size < sizeof(NodeHdr) + 3 * sizeof(LeafItem))
		return KE_ERR_ARG;
	root = store->alloc(store);
	if (root == 0)
		return KE_ERR_NOMEM;
	memset(store->write(store, root), 0, sizeof(NodeHdr));
	m = store->meta(store, true);
	memset(m, 0, sizeof(KeMeta));
	m->magic = KE_META_MAGIC;
	m->version = KE_META_VERSION;
	m->kind = kind;
	m->k = k;
	m->e = e;
	m->root = root;
	m->height = 1;
	return engine_attach(out, store);
}

/* Attach to an engine already in a store */
KeStatus
ke_open(KeEngine **out, KeStore *store)
{
	KeMeta	   *m = store->meta(store, false);

	*out = NULL;
	if (m->magic != KE_META_MAGIC || m->version != KE_META_VERSION)
		return KE_ERR_CORRUPT;
	if (ke_validate_params((KeKind) m->kind, m->k, m->e) != KE_OK)
		return KE_ERR_CORRUPT;
	return engine_attach(out, store);
}

/* Free the handle (not the store) */
void
ke_close(KeEngine *eng)
{
	ke_free(eng);
}

/*
 * Choose the tie rule of later changes (not stored: each handle sets it).
 * Off, the partitioning is the one the report's algorithm gives (largest
 * start wins); on, among the optimal partitionings a change keeps the
 * previous one's boundaries where it can (see walk_new_path).  The exact
 * kind only: a float's errors, carried in lazy offsets, need not compare
 * equal where the sums are.
 */
void
ke_keep_boundaries(KeEngine *eng, bool on)
{
	eng->keep_boundaries = on && eng->kind == KE_KIND_EXACT;
}

KeKind
ke_kind(const KeEngine *eng)
{
	return eng->kind;
}

int
ke_k(const KeEngine *eng)
{
	return eng->k;
}

KeNum
ke_e(const KeEngine *eng)
{
	return eng->e;
}

int64_t
ke_nrows(KeEngine *eng)
{
	return meta_r(eng)->nrows;
}

int64_t
ke_nruns(KeEngine *eng)
{
	return meta_r(eng)->nruns;
}

const KeChangeInfo *
ke_last_change(const KeEngine *eng)
{
	return &eng->last;
}

/* The optimal sum-error; false when no valid partitioning exists */
bool
ke_sum_error(KeEngine *eng, KeNum *out)
{
	Cursor		c;
	KeNum		E;

	if (!cur_last(eng, &c) || !cur_feasible(eng, &c))
		return false;
	E = cur_E(eng, &c);
	*out = E;
	return true;
}

/* ----------------------------------------------------------------
 * Bulk build
 * ----------------------------------------------------------------
 */

/*
 * Runs laid out as arrays, with the from-scratch DP's results over them:
 * what ke_linear_dp reads and fills in, for a bulk build and for ke_verify.
 */
typedef struct DpArrays
{
	KeNum	   *vals;
	int64_t    *counts;
	KeNum	   *E;
	bool	   *feasible;
	KeNum	   *best;
	KeNum	   *argmin;
	int		   *argmin_last;
	int64_t    *frontier;
	int		   *end;
} DpArrays;

/* Did every array's allocation succeed? */
static bool
dp_arrays_ok(const DpArrays *d)
{
	return d->vals && d->counts && d->E && d->feasible && d->best &&
		d->argmin && d->argmin_last && d->frontier && d->end;
}

/* Free the arrays (those that were allocated) */
static void
dp_arrays_free(DpArrays *d)
{
	ke_free(d->vals);
	ke_free(d->counts);
	ke_free(d->E);
	ke_free(d->feasible);
	ke_free(d->best);
	ke_free(d->argmin);
	ke_free(d->argmin_last);
	ke_free(d->frontier);
	ke_free(d->end);
}

/* Run the from-scratch DP over the first m runs of the arrays */
static void
dp_arrays_solve(KeEngine *eng, DpArrays *d, size_t m)
{
	ke_linear_dp(eng->kind, eng->k, eng->e, d->vals, d->counts, m,
				 d->E, d->feasible, d->best, d->argmin, d->argmin_last,
				 d->frontier, d->end);
}

/*
 * Check a build's input: n usable values, ascending (strictly so for runs),
 * and every run's count at least 1.
 */
static KeStatus
build_check_input(KeKind kind, const KeNum *sorted, const int64_t *run_counts, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		if (!value_ok(kind, sorted[i]))
			return KE_ERR_ARG;
		if (i > 0 && ke_num_cmp(kind, sorted[i - 1], sorted[i]) >= (run_counts ? 0 : 1))
			return KE_ERR_ARG;
		if (run_counts != NULL && run_counts[i] < 1)
			return KE_ERR_ARG;
	}
	return KE_OK;
}

/*
 * Gather a build's input into runs in d: equal values merge into one run.
 * Returns the number of runs; sets *nrows to the number of rows.
 */
static size_t
build_gather_runs(KeKind kind, const KeNum *sorted, const int64_t *run_counts, size_t n,
				  DpArrays *d, int64_t *nrows)
{
	size_t		m = 0;
	int64_t		rows = 0;

	for (size_t i = 0; i < n; i++)
	{
		int64_t		c = run_counts != NULL ? run_counts[i] : 1;

		if (m > 0 && ke_num_eq(kind, d->vals[m - 1], sorted[i]))
			d->counts[m - 1] += c;
		else
		{
			d->vals[m] = sorted[i];
			d->counts[m] = c;
			m++;
		}
		rows += c;
	}
	*nrows = rows;
	return m;
}

/*
 * Lay the m runs of d into nleaves new leaves of leaf_fill runs each (the
 * last may hold fewer), noting each leaf and its lowest value in ids and
 * keys.  Sets *nparts to the number of partition ends.
 */
static KeStatus
build_leaves(KeEngine *eng, const DpArrays *d, size_t m, size_t leaf_fill,
			 size_t nleaves, KeNodeId *ids, KeNum *keys, int64_t *nparts)
{
	KeKind		kind = eng->kind;
	int64_t		nends = 0;

	for (size_t l = 0; l < nleaves; l++)
	{
		KeNodeId	id = eng->store->alloc(eng->store);
		NodeHdr    *nd;
		size_t		from = l * leaf_fill;
		size_t		to = from + leaf_fill < m ? from + leaf_fill : m;

		if (id == 0)
			return KE_ERR_NOMEM;
		nd = node_w(eng, id);
		nd->level = 0;
		nd->nitems = (uint16_t) (to - from);
		for (size_t r = from; r < to; r++)
		{
			LeafItem   *li = &LEAF_ITEMS(nd)[r - from];

			memset(li, 0, sizeof(LeafItem));
			li->value = d->vals[r];
			li->count = d->counts[r];
			li->feasible = d->feasible[r];
			li->E = d->E[r];
			li->best = d->best[r];
			li->argmin = d->argmin[r];
			li->argmin_last = (uint8_t) d->argmin_last[r];
			li->has_frontier = d->frontier[r] >= 0;
			li->frontier = d->frontier[r] >= 0 ? d->vals[d->frontier[r]] : ke_num_zero(kind);
			li->end = (uint8_t) d->end[r];
			if (d->end[r] != KE_END_NONE)
				nends++;
		}
		ids[l] = id;
		keys[l] = to > from ? d->vals[from] : ke_num_zero(kind);
	}
	*nparts = nends;
	return KE_OK;
}

/*
 * Stack new inner levels, KE_BUILD_FILL percent full, over the n leaves in
 * ids (their lowest values in keys) until one node is left: the root, in
 * ids[0].  Sets *height to the tree's height.
 */
static KeStatus
build_inner_levels(KeEngine *eng, KeNodeId *ids, KeNum *keys, size_t n,
				   uint32_t *height)
{
	size_t		inner_fill = eng->inner_cap * KE_BUILD_FILL / 100;
	uint32_t	h = 1;

	while (n > 1)
	{
		size_t		nup = (n + inner_fill - 1) / inner_fill;

		for (size_t u = 0; u < nup; u++)
		{
			KeNodeId	id = eng->store->alloc(eng->store);
			NodeHdr    *nd;
			size_t		from = u * inner_fill;
			size_t		to = from + inner_fill < n ? from + inner_fill : n;
			KeNum		firstkey = keys[from];

			if (id == 0)
				return KE_ERR_NOMEM;
			nd = node_w(eng, id);
			nd->level = (uint16_t) h;
			nd->nitems = (uint16_t) (to - from);
			for (size_t j = from; j < to; j++)
			{
				InnerItem  *ii = &INNER_ITEMS(nd)[j - from];

				memset(ii, 0, sizeof(InnerItem));
				ii->key = keys[j];
				ii->add = ke_num_zero(eng->kind);
				ii->child = ids[j];
			}
			ids[u] = id;
			keys[u] = firstkey;
		}
		n = nup;
		h++;
	}
	*height = h;
	return KE_OK;
}

/*
 * Replace the contents by one linear DP pass: over n sorted values when
 * run_counts is NULL, else over n runs (strictly ascending values, each
 * with its count of rows).
 */
static KeStatus
build(KeEngine *eng, const KeNum *sorted, const int64_t *run_counts, size_t n)
{
	size_t		m;
	int64_t		nrows;
	DpArrays	d;
	KeNodeId   *level_ids = NULL;
	KeNum	   *level_keys = NULL;
	size_t		nleaves;
	uint32_t	height;
	KeStatus	st;
	KeMeta	   *meta;
	KeNodeId	old_root;
	int64_t		nparts;
	size_t		cap = n > 0 ? n : 1;
	size_t		leaf_fill = eng->leaf_cap * KE_BUILD_FILL / 100;

	if ((st = build_check_input(eng->kind, sorted, run_counts, n)) != KE_OK)
		return st;
	st = KE_ERR_NOMEM;
	d.vals = ke_calloc(cap, sizeof(KeNum));
	d.E = ke_malloc(cap * sizeof(KeNum));
	d.feasible = ke_malloc(cap * sizeof(bool));
	d.best = ke_malloc(cap * sizeof(KeNum));
	d.argmin = ke_malloc(cap * sizeof(KeNum));
	d.counts = ke_calloc(cap, sizeof(int64_t));
	d.frontier = ke_malloc(cap * sizeof(int64_t));
	d.argmin_last = ke_malloc(cap * sizeof(int));
	d.end = ke_malloc(cap * sizeof(int));
	if (!dp_arrays_ok(&d))
		goto done;
	m = build_gather_runs(eng->kind, sorted, run_counts, n, &d, &nrows);
	dp_arrays_solve(eng, &d, m);

	/*
	 * Lay the runs into leaves, then free the old tree.  A store may zero
	 * the root beforehand to discard the old tree wholesale.
	 */
	old_root = meta_r(eng)->root;
	nleaves = m == 0 ? 1 : (m + leaf_fill - 1) / leaf_fill;
	level_ids = ke_malloc(nleaves * sizeof(KeNodeId));
	level_keys = ke_malloc(nleaves * sizeof(KeNum));
	if (!level_ids || !level_keys)
		goto done;
	if ((st = build_leaves(eng, &d, m, leaf_fill, nleaves, level_ids, level_keys,
						   &nparts)) != KE_OK ||
		(st = build_inner_levels(eng, level_ids, level_keys, nleaves,
								 &height)) != KE_OK)
		goto done;
	if (old_root != 0)
		free_subtree(eng, old_root);
	meta = meta_w(eng);
	meta->root = level_ids[0];
	meta->height = height;
	meta->nruns = (int64_t) m;
	meta->nrows = nrows;
	meta->npartitions = nparts;
	memset(&eng->last, 0, sizeof(eng->last));
	eng->last.runs_recomputed = (int64_t) m;
	eng->last.boundaries_changed = true;
	eng->last.any = true;
	eng->last.lo_unbounded = eng->last.hi_unbounded = true;

done:
	dp_arrays_free(&d);
	ke_free(level_ids);
	ke_free(level_keys);
	return st;
}

/* Replace the contents with the sorted values, by one linear DP pass */
KeStatus
ke_build_sorted(KeEngine *eng, const KeNum *sorted, size_t n)
{
	return build(eng, sorted, NULL, n);
}

/* Replace the contents with m runs: ascending distinct values and their counts */
KeStatus
ke_build_runs(KeEngine *eng, const KeNum *vals, const int64_t *counts, size_t m)
{
	return build(eng, vals, counts, m);
}

/* ----------------------------------------------------------------
 * Incremental recompute
 * ----------------------------------------------------------------
 */

typedef struct Recompute
{
	const KeNum *trig;			/* sorted recompute starts, trig[0] first */
	size_t		ntrig;
	bool		has_absorb;		/* the frontier must pass this value */
	bool		absorb_strict;
	KeNum		absorb;
	/* results */
	bool		converged;
	Cursor		conv;			/* the run where it converged */
	int64_t		steps;
} Recompute;

/* Position a cursor on the run whose value is exactly v */
static KeStatus
seek_exact(KeEngine *eng, Cursor *c, KeNum v)
{
	if (!cur_seek(eng, c, v, false) || !ke_num_eq(eng->kind, cur_item(eng, c)->value, v))
		return KE_ERR_CORRUPT;
	return KE_OK;
}

/*
 * Move the cursor back to the run of value v (v <= the current value).  The
 * targets are almost always a few runs away, so step first and seek only
 * when that does not get there quickly.
 */
static KeStatus
cur_back_to(KeEngine *eng, Cursor *c, KeNum v)
{
	for (int i = 0; i < 32 && c->valid; i++)
	{
		int			cmp = ke_num_cmp(eng->kind, cur_item(eng, c)->value, v);

		if (cmp == 0)
			return KE_OK;
		if (cmp < 0)
			return KE_ERR_CORRUPT;
		cur_prev(eng, c);
	}
	return seek_exact(eng, c, v);
}

/*
 * What a recompute carries from run to run: the running minimum over the
 * candidate starts absorbed so far, the frontier it has absorbed up to, and
 * the E of the rows before the next candidate run.
 */
typedef struct RunningMin
{
	bool		ok;				/* false: no candidate absorbed yet */
	KeNum		best;
	KeNum		arg;
	int			arg_last;
	bool		has_frontier;
	KeNum		frontier;
	/* E of the rows before the next candidate run (none before the first) */
	bool		prevE_ok;
	KeNum		prevE;
} RunningMin;

/*
 * The runs from the streak's start up to the current run of a recompute,
 * all of which moved by diff (or stayed infeasible).
 */
typedef struct Streak
{
	bool		from_start;		/* it began with the recompute */
	bool		excl;			/* the run at start is not part of it */
	KeNum		start;
	bool		has_diff;		/* false: no run of it has moved yet */
	KeNum		diff;
} Streak;

/* Resume the running minimum from the state stored in the run before cr */
static void
resume_min(KeEngine *eng, const Cursor *cr, RunningMin *mn)
{
	KeNum		zero = ke_num_zero(eng->kind);
	Cursor		pc = *cr;

	mn->ok = false;
	mn->best = zero;
	mn->arg = zero;
	mn->arg_last = 0;
	mn->has_frontier = false;
	mn->frontier = zero;
	mn->prevE_ok = true;
	mn->prevE = zero;
	if (cur_prev(eng, &pc))
	{
		Run			prev;

		cur_get(eng, &pc, &prev);
		mn->ok = prev.feasible;
		mn->best = prev.best;
		mn->arg = prev.argmin;
		mn->arg_last = prev.argmin_last;
		mn->has_frontier = prev.has_frontier;
		mn->frontier = prev.frontier;
	}
}

/*
 * Position cq on the next candidate run after the frontier, which lies
 * before ck, and note the E of the rows before it; the first run when
 * there is no frontier.
 */
static KeStatus
seek_candidate(KeEngine *eng, const Cursor *ck, RunningMin *mn, Cursor *cq,
			   bool *cq_valid)
{
	if (mn->has_frontier)
	{
		*cq = *ck;
		cq->valid = true;
		if (cur_back_to(eng, cq, mn->frontier) != KE_OK)
			return KE_ERR_CORRUPT;
		mn->prevE_ok = cur_feasible(eng, cq);
		mn->prevE = mn->prevE_ok ? cur_E(eng, cq) : ke_num_zero(eng->kind);
		*cq_valid = cur_next(eng, cq);
	}
	else
		*cq_valid = cur_first(eng, cq);
	return KE_OK;
}

/*
 * Absorb into the running minimum the candidate runs from cq on that can
 * start a partition ending at the run of value v_r: those before it, no
 * later than kth (the run k - 1 runs back) and at least e below v_r.
 */
static void
absorb_candidates(KeEngine *eng, RunningMin *mn, Cursor *cq, bool *cq_valid,
				  KeNum v_r, KeNum kth)
{
	KeKind		kind = eng->kind;
	KeNum		zero = ke_num_zero(kind);

	while (*cq_valid)
	{
		const LeafItem *qi = cur_item(eng, cq);
		KeNum		vq = qi->value;
		int64_t		cnt = qi->count;
		bool		Eq_ok;
		KeNum		Eq,
					a;

		if (ke_num_cmp(kind, vq, v_r) >= 0 ||
			!ke_num_le(kind, vq, kth) ||
			!ke_num_range_ok(kind, vq, v_r, eng->e))
			break;
		Eq_ok = cur_feasible(eng, cq);
		Eq = Eq_ok ? cur_E(eng, cq) : zero;
		if (mn->prevE_ok)
		{
			a = ke_num_sub(kind, mn->prevE, vq);
			if (!mn->ok || ke_num_le(kind, a, mn->best))
			{
				mn->best = a;
				mn->ok = true;
				mn->arg = vq;
				mn->arg_last = 0;
			}
		}
		if (cnt >= 2 && Eq_ok)
		{
			a = ke_num_sub(kind, Eq, vq);
			if (!mn->ok || ke_num_le(kind, a, mn->best))
			{
				mn->best = a;
				mn->ok = true;
				mn->arg = vq;
				mn->arg_last = 1;
			}
		}
		mn->has_frontier = true;
		mn->frontier = vq;
		mn->prevE_ok = Eq_ok;
		mn->prevE = Eq;
		*cq_valid = cur_next(eng, cq);
	}
}

/* Store the recomputed DP state (E is newE) in the run under cr */
static void
store_run(KeEngine *eng, const Cursor *cr, const RunningMin *mn, KeNum newE)
{
	KeNum		zero = ke_num_zero(eng->kind);
	LeafItem   *w = cur_item_w(eng, cr);

	w->feasible = mn->ok;
	w->E = mn->ok ? to_stored(eng, cr, newE) : zero;
	w->best = mn->ok ? to_stored(eng, cr, mn->best) : zero;
	w->argmin = mn->arg;
	w->argmin_last = (uint8_t) mn->arg_last;
	w->has_frontier = mn->has_frontier;
	w->frontier = mn->has_frontier ? mn->frontier : zero;
	w->fresh = 0;
}

/*
 * Extend the streak over a run that was old and is now feasible (new_ok)
 * with E newE.  True when the run moved by a finite delta.
 */
static bool
streak_extend(KeKind kind, Streak *s, const Run *old, bool new_ok, KeNum newE)
{
	/*
	 * A float-kind error that overflowed has no delta to shift by: such a
	 * run breaks the streak, as a run that became (in)feasible does.
	 */
	bool		old_none = !old->feasible;
	bool		new_none = !new_ok;
	bool		old_fin = old->feasible && ke_num_finite(kind, old->E);
	bool		new_fin = new_ok && ke_num_finite(kind, newE);
	bool		moved = !old->fresh && old_fin && new_fin;

	if (!old->fresh && old_none && new_none)
	{
		/* no partitioning ends here, before or after: matches any delta */
	}
	else if (moved)
	{
		KeNum		d = ke_num_sub(kind, newE, old->E);

		if (!s->has_diff)
		{
			s->has_diff = true;
			s->diff = d;
		}
		else if (!ke_num_eq(kind, d, s->diff))
		{
			s->from_start = false;
			s->excl = false;
			s->start = old->value;
			s->diff = d;
		}
	}
	else
	{
		s->from_start = false;
		s->excl = true;
		s->start = old->value;
		s->has_diff = false;
	}
	return moved;
}

/*
 * Does the recompute converge at the run it just wrote, which moved by a
 * finite delta from old (see the file header)?  The caller has checked
 * that the run is at least k runs past every change.  Sets *delta.
 */
static bool
converges_at(KeKind kind, const Recompute *rc, const Streak *s,
			 const RunningMin *mn, const Run *old, KeNum newE, KeNum *delta)
{
	if (!mn->has_frontier || !s->has_diff)
		return false;
	/* the frontier has absorbed the last changed run */
	if (rc->has_absorb &&
		!(rc->absorb_strict ? ke_num_cmp(kind, mn->frontier, rc->absorb) > 0
		  : ke_num_le(kind, rc->absorb, mn->frontier)))
		return false;
	/* E moved by the streak's delta all the way from the frontier */
	if (!s->from_start &&
		!(s->excl ? ke_num_cmp(kind, s->start, mn->frontier) < 0
		  : ke_num_le(kind, s->start, mn->frontier)))
		return false;
	/* the frontier and the argmin are as before */
	if (!old->has_frontier || !ke_num_eq(kind, old->frontier, mn->frontier) ||
		!ke_num_eq(kind, old->argmin, mn->arg) || old->argmin_last != mn->arg_last)
		return false;
	/* best moved by the same delta as E */
	*delta = ke_num_sub(kind, newE, old->E);
	return ke_num_eq(kind, mn->best, ke_num_add(kind, old->best, *delta));
}

/*
 * Rerun the DP from the run at trig[0], resuming from the state stored in
 * the run before it, until it converges (see the file header) or reaches
 * the last run.
 */
static KeStatus
recompute(KeEngine *eng, Recompute *rc)
{
	KeKind		kind = eng->kind;
	KeNum		zero = ke_num_zero(kind);
	Cursor		cr,
				cq,
				ck;
	RunningMin	mn;
	bool		cq_valid;
	int			neg = 0;
	size_t		ti = 0;
	int64_t		since = 0;
	Streak		streak;

	streak.from_start = true;
	streak.excl = false;
	streak.start = zero;
	streak.has_diff = true;
	streak.diff = zero;
	rc->converged = false;
	rc->steps = 0;
	if (!cur_seek(eng, &cr, rc->trig[0], false))
		return KE_OK;

	resume_min(eng, &cr, &mn);
	/* ck trails cr by k - 1 runs; neg counts positions before the first */
	ck = cr;
	for (int s = 0; s < eng->k - 1; s++)
	{
		if (neg > 0 || !cur_prev(eng, &ck))
			neg++;
	}
	/* the frontier lies before ck: cq is the next candidate after it */
	if (seek_candidate(eng, &ck, &mn, &cq, &cq_valid) != KE_OK)
		return KE_ERR_CORRUPT;

	for (;;)
	{
		Run			old;
		KeNum		v_r,
					newE,
					delta;
		bool		moved;

		cur_get(eng, &cr, &old);
		v_r = old.value;
		while (ti < rc->ntrig && ke_num_le(kind, rc->trig[ti], v_r))
		{
			ti++;
			since = 0;
		}
		if (neg == 0)
			absorb_candidates(eng, &mn, &cq, &cq_valid, v_r,
							  cur_item(eng, &ck)->value);

		newE = mn.ok ? ke_num_add(kind, v_r, mn.best) : zero;
		store_run(eng, &cr, &mn, newE);
		rc->steps++;

		moved = streak_extend(kind, &streak, &old, mn.ok, newE);
		if (ti == rc->ntrig && since >= eng->k && moved &&
			converges_at(kind, rc, &streak, &mn, &old, newE, &delta))
		{
			if (!ke_num_eq(kind, delta, zero))
				add_suffix(eng, &cr, delta);
			rc->converged = true;
			rc->conv = cr;
			return KE_OK;
		}
		since++;

		if (!cur_next(eng, &cr))
			return KE_OK;
		if (neg > 0)
		{
			if (--neg == 0)
				ck.valid = true;
		}
		else
			cur_next(eng, &ck);
	}
}

/* ----------------------------------------------------------------
 * Partition boundaries
 * ----------------------------------------------------------------
 */

typedef struct Boundary
{
	KeNum		value;
	int			end;
} Boundary;

typedef struct BoundList
{
	Boundary   *items;
	size_t		n;
	size_t		cap;
	Boundary	local[64];
} BoundList;

/* Append to a boundary list */
static KeStatus
bl_push(BoundList *bl, KeNum v, int end)
{
	if (bl->n == bl->cap)
	{
		size_t		ncap = bl->cap * 2;
		Boundary   *nb = ke_malloc(ncap * sizeof(Boundary));

		if (nb == NULL)
			return KE_ERR_NOMEM;
		memcpy(nb, bl->items, bl->n * sizeof(Boundary));
		if (bl->items != bl->local)
			ke_free(bl->items);
		bl->items = nb;
		bl->cap = ncap;
	}
	bl->items[bl->n].value = v;
	bl->items[bl->n].end = end;
	bl->n++;
	return KE_OK;
}

/* Clear every end flag (the partitioning ceased to exist) */
static void
clear_all_flags(KeEngine *eng)
{
	Cursor		c;

	if (meta_r(eng)->npartitions == 0)
		return;
	for (bool ok = cur_first(eng, &c); ok; ok = cur_next(eng, &c))
	{
		if (cur_item(eng, &c)->end != KE_END_NONE)
			cur_item_w(eng, &c)->end = KE_END_NONE;
	}
	meta_w(eng)->npartitions = 0;
}

/*
 * After a recompute that converged, find the first run above rc->conv that
 * ends a partition: the lowest boundary the change left in place.  Leaves
 * c on it.  False when there is none, or the recompute did not converge.
 */
static bool
find_kept_anchor(KeEngine *eng, const Recompute *rc, Cursor *c, Boundary *anchor)
{
	if (!rc->converged)
		return false;
	*c = rc->conv;
	while (cur_next(eng, c))
	{
		int			f = cur_item(eng, c)->end;

		if (f != KE_END_NONE)
		{
			anchor->value = cur_item(eng, c)->value;
			anchor->end = f;
			return true;
		}
	}
	return false;
}

/*
 * The start that keeps an old boundary, for the partition ending at the run
 * under c (feasible, on the new path), under the tie rule of
 * ke_keep_boundaries(): scanning down from the run's frontier (its largest
 * valid start), at most KE_KEEP_SCAN runs, the first old partition end that
 * offers a valid start (the first row after a full end, the last row of a
 * split run, or the first run, where every partitioning begins) gives the
 * candidate; it is taken when its error is the run's best (it is then as
 * optimal as the argmin).  Sets *q and *split and returns true when taken.
 * The scan's bound keeps a walk through runs no old partition ends at
 * linear; the rule with it is still a function of the previous
 * partitioning and the new runs alone, which the unit tests replay.
 */
#define KE_KEEP_SCAN	256

static KeStatus
keep_start(KeEngine *eng, const Cursor *c, KeNum *q, bool *split, bool *taken)
{
	KeKind		kind = eng->kind;
	const LeafItem *it = cur_item(eng, c);
	KeNum		target = ke_num_sub(kind, cur_E(eng, c), it->value);
	Cursor		s = *c;
	bool		have_next = false;
	KeNum		next_value = ke_num_zero(kind);
	KeStatus	st;

	*taken = false;
	if (!it->has_frontier)
		return KE_OK;
	if ((st = cur_back_to(eng, &s, it->frontier)) != KE_OK)
		return st;
	for (int i = 0; i < KE_KEEP_SCAN; i++)
	{
		const LeafItem *b = cur_item(eng, &s);
		bool		found = false;
		KeNum		a = ke_num_zero(kind);

		if (b->end == KE_END_SPLIT && b->count >= 2 && b->feasible)
		{
			a = ke_num_sub(kind, cur_E(eng, &s), b->value);
			*q = b->value;
			*split = true;
			found = true;
		}
		else if (b->end == KE_END_FULL && have_next && b->feasible)
		{
			a = ke_num_sub(kind, cur_E(eng, &s), next_value);
			*q = next_value;
			*split = false;
			found = true;
		}
		if (found)
		{
			*taken = ke_num_eq(kind, a, target);
			return KE_OK;
		}
		have_next = true;
		next_value = b->value;
		if (!cur_prev(eng, &s))
		{
			/* every partitioning begins at the first run */
			a = ke_num_sub(kind, ke_num_zero(kind), next_value);
			*q = next_value;
			*split = false;
			*taken = ke_num_eq(kind, a, target);
			return KE_OK;
		}
	}
	return KE_OK;
}

/*
 * Walk the new path of partition ends down from the run under c, pushing
 * each end onto bl, until it lands on an old boundary below `below`: that
 * boundary is *x (and *has_x is set), and c is left on its run.  Otherwise
 * the walk ends when the path reaches the first run.  Each partition's
 * start is the stored argmin, or under ke_keep_boundaries() the one that
 * keeps an old boundary when that is as good (keep_start).
 */
static KeStatus
walk_new_path(KeEngine *eng, Cursor *c, KeNum below, BoundList *bl,
			  Boundary *x, bool *has_x)
{
	for (;;)
	{
		const LeafItem *it = cur_item(eng, c);
		KeNum		q = it->argmin;
		bool		split = it->argmin_last;
		Boundary	nb;
		KeStatus	st;

		if (eng->keep_boundaries)
		{
			KeNum		kq;
			bool		ksplit,
						taken;

			if ((st = keep_start(eng, c, &kq, &ksplit, &taken)) != KE_OK)
				return st;
			if (taken)
			{
				q = kq;
				split = ksplit;
			}
		}
		if ((st = cur_back_to(eng, c, q)) != KE_OK)
			return st;
		if (split)
		{
			nb.value = q;
			nb.end = KE_END_SPLIT;
		}
		else
		{
			if (!cur_prev(eng, c))
				return KE_OK;	/* reached the first run */
			nb.value = cur_item(eng, c)->value;
			nb.end = KE_END_FULL;
		}
		if (ke_num_cmp(eng->kind, nb.value, below) < 0 &&
			cur_item(eng, c)->end == nb.end)
		{
			*x = nb;
			*has_x = true;
			return KE_OK;
		}
		if ((st = bl_push(bl, nb.value, nb.end)) != KE_OK)
			return st;
	}
}

/*
 * Re-flag the runs after x (from the first run when x is NULL; c is on x's
 * run) up to the anchor, the anchor included unless it was kept, to the
 * partition ends in bl.  Sets ci->lo, and ci->boundaries_changed when a
 * flag moved, and keeps the metadata's count of partitions.
 */
static KeStatus
reflag_runs(KeEngine *eng, Cursor *c, const Boundary *x, const BoundList *bl,
			const Boundary *anchor, bool anchor_kept, KeChangeInfo *ci)
{
	KeKind		kind = eng->kind;
	size_t		li = bl->n;		/* the list is descending: walk it from its end */
	bool		ok;
	bool		first = true;
	int64_t		nparts_delta = 0;

	if (x != NULL)
	{
		/* x keeps its flag; after a split x's last row opens the next partition */
		if (x->end == KE_END_SPLIT)
		{
			ci->lo = x->value;
			first = false;
		}
		ok = cur_next(eng, c);
	}
	else
		ok = cur_first(eng, c);
	for (; ok; ok = cur_next(eng, c))
	{
		const LeafItem *it = cur_item(eng, c);
		int			want = KE_END_NONE;
		int			cmp;

		if (first)
		{
			ci->lo = it->value;
			first = false;
		}
		cmp = ke_num_cmp(kind, it->value, anchor->value);
		if (anchor_kept && cmp >= 0)
			break;
		if (li > 0 && ke_num_eq(kind, bl->items[li - 1].value, it->value))
			want = bl->items[--li].end;
		if (it->end != want)
		{
			nparts_delta += (want != KE_END_NONE) - (it->end != KE_END_NONE);
			cur_item_w(eng, c)->end = (uint8_t) want;
			ci->boundaries_changed = true;
		}
		if (cmp >= 0)
			break;
	}
	if (li != 0)
		return KE_ERR_CORRUPT;
	if (nparts_delta != 0)
		meta_w(eng)->npartitions += nparts_delta;
	return KE_OK;
}

/*
 * Re-flag partition ends after a recompute.  rc->converged says whether
 * everything above rc->conv is untouched; below is the lowest recompute
 * start (runs under it kept their DP state); had_parts whether a valid
 * partitioning existed before the change.  Sets the changed range.
 */
static KeStatus
update_boundaries(KeEngine *eng, const Recompute *rc, KeNum below, bool had_parts,
				  KeChangeInfo *ci)
{
	Cursor		c;
	Boundary	anchor;
	bool		anchor_kept;
	bool		has_x = false;
	Boundary	x = {{0}, 0};
	BoundList	bl;
	KeStatus	st = KE_OK;

	bl.items = bl.local;
	bl.n = 0;
	bl.cap = sizeof(bl.local) / sizeof(bl.local[0]);

	if (!cur_last(eng, &c) || !cur_feasible(eng, &c))
	{
		/* no valid partitioning now */
		if (had_parts)
		{
			clear_all_flags(eng);
			ci->boundaries_changed = true;
			ci->any = true;
			ci->lo_unbounded = ci->hi_unbounded = true;
		}
		return KE_OK;
	}

	/* the new path starts at the lowest kept boundary, else the last run */
	anchor_kept = find_kept_anchor(eng, rc, &c, &anchor);
	if (!anchor_kept)
	{
		cur_last(eng, &c);
		anchor.value = cur_item(eng, &c)->value;
		anchor.end = KE_END_FULL;
		st = bl_push(&bl, anchor.value, anchor.end);
		if (st != KE_OK)
			goto done;
	}

	/* walk the new path down (c is at the anchor) until it meets the old one */
	if ((st = walk_new_path(eng, &c, below, &bl, &x, &has_x)) != KE_OK)
		goto done;

	/* re-flag the runs strictly between x and the anchor */
	if ((st = reflag_runs(eng, &c, has_x ? &x : NULL, &bl, &anchor, anchor_kept,
						  ci)) != KE_OK)
		goto done;
	ci->any = true;
	ci->lo_unbounded = !has_x;
	ci->hi = anchor.value;
	ci->hi_unbounded = false;

done:
	if (bl.items != bl.local)
		ke_free(bl.items);
	return st;
}

/*
 * Does the partitioning whose ends are bounds (ascending, one per
 * partition: the run it ends at, and whether it ends before that run's
 * last row) lay out an optimal partitioning of the runs?  Each partition
 * must begin at a valid start (at or below its end's frontier) whose error
 * is its end's best, and the last must end at the last run.  When so and
 * write, the runs are flagged to it.  This takes back a publication's
 * partitioning after the runs were laid out from scratch, which flags the
 * report's optimum while ke_keep_boundaries() may have kept another.
 */
KeStatus
ke_adopt_boundaries(KeEngine *eng, const KeBoundary *bounds, size_t n, bool write,
					bool *optimal)
{
	KeKind		kind = eng->kind;
	Cursor		c;
	size_t		j = 0;
	bool		fixed = false;	/* the open partition's start is known */
	KeNum		start = ke_num_zero(kind);	/* its start's value */
	KeNum		a = ke_num_zero(kind);	/* its start's error */
	KeNum		prevE = ke_num_zero(kind);	/* E of a full end below, for the next start */
	bool		after_full = false;
	bool		ends_last = false;

	*optimal = false;
	if (!cur_last(eng, &c) || !cur_feasible(eng, &c))
	{
		*optimal = n == 0;
		return KE_OK;
	}
	for (bool ok = cur_first(eng, &c); ok; ok = cur_next(eng, &c))
	{
		Run			r;

		cur_get(eng, &c, &r);
		if (!fixed)
		{
			/* the first run, or the run after a full end */
			start = r.value;
			a = after_full ? ke_num_sub(kind, prevE, r.value) : ke_num_sub(kind, ke_num_zero(kind), r.value);
			fixed = true;
		}
		ends_last = false;
		if (j >= n || ke_num_cmp(kind, bounds[j].value, r.value) > 0)
			continue;
		if (ke_num_cmp(kind, bounds[j].value, r.value) < 0)
			return KE_OK;		/* an end at no run */
		if (!r.feasible || !r.has_frontier || ke_num_cmp(kind, start, r.frontier) > 0 ||
			!ke_num_eq(kind, ke_num_add(kind, a, r.value), r.E) ||
			(bounds[j].split && r.count < 2))
			return KE_OK;
		if (bounds[j].split)
		{
			/* the next partition starts at this run's last row */
			start = r.value;
			a = ke_num_sub(kind, r.E, r.value);
			fixed = true;
		}
		else
		{
			prevE = r.E;
			after_full = true;
			fixed = false;
			ends_last = true;
		}
		j++;
	}
	if (j != n || !ends_last)
		return KE_OK;
	*optimal = true;
	if (!write)
		return KE_OK;

	j = 0;
	for (bool ok = cur_first(eng, &c); ok; ok = cur_next(eng, &c))
	{
		const LeafItem *it = cur_item(eng, &c);
		int			want = KE_END_NONE;

		if (j < n && ke_num_eq(kind, bounds[j].value, it->value))
			want = bounds[j++].split ? KE_END_SPLIT : KE_END_FULL;
		if (it->end != want)
			cur_item_w(eng, &c)->end = (uint8_t) want;
	}
	meta_w(eng)->npartitions = (int64_t) n;
	return KE_OK;
}

/* ----------------------------------------------------------------
 * Applying changes
 * ----------------------------------------------------------------
 */

typedef enum ChangeKind
{
	CH_MEMBER,					/* count moved, >= 2 before and after (or 1) */
	CH_NEW,						/* a new run */
	CH_REMOVED,					/* a run went away */
	CH_CROSS					/* count crossed between 1 and 2 */
} ChangeKind;

/* Order changes by value */
static int
change_cmp_exact(const void *a, const void *b)
{
	const KeChange *x = a,
			   *y = b;

	return (x->value.i > y->value.i) - (x->value.i < y->value.i);
}

static int
change_cmp_float(const void *a, const void *b)
{
	const KeChange *x = a,
			   *y = b;

	return (x->value.f > y->value.f) - (x->value.f < y->value.f);
}

static int
num_cmp_exact(const void *a, const void *b)
{
	const KeNum *x = a,
			   *y = b;

	return (x->i > y->i) - (x->i < y->i);
}

static int
num_cmp_float(const void *a, const void *b)
{
	const KeNum *x = a,
			   *y = b;

	return (x->f > y->f) - (x->f < y->f);
}

/*
 * The first run whose frontier can absorb the candidates of run q: at least
 * k - 1 runs past q and with a range of at least e from it.  False if none.
 */
static bool
first_absorbing(KeEngine *eng, KeNum q, KeNum *out)
{
	Cursor		w,
				s;
	SeekKey		key;
	KeNum		wv,
				sv;

	if (!cur_seek(eng, &w, q, false))
		return false;
	for (int i = 0; i < eng->k - 1; i++)
	{
		if (!cur_next(eng, &w))
			return false;
	}
	wv = cur_item(eng, &w)->value;
	key.mode = SEEK_RANGE;
	key.x = q;
	key.e = eng->e;
	cur_seek_raw(eng, &s, &key);
	if (!cur_normalize(eng, &s))
		return false;
	sv = cur_item(eng, &s)->value;
	*out = ke_num_cmp(eng->kind, wv, sv) >= 0 ? wv : sv;
	return true;
}

/*
 * Copy a batch of n changes into ch sorted by value, merging equal values
 * and dropping no-ops; sets *m to the number left.  A batch is checked
 * here before anything is touched; a single change's delete is checked as
 * it is applied.
 */
static KeStatus
prepare_changes(KeEngine *eng, const KeChange *changes, size_t n, KeChange *ch,
				size_t *m)
{
	KeKind		kind = eng->kind;
	size_t		nch = 0;

	for (size_t i = 0; i < n; i++)
	{
		if (!value_ok(kind, changes[i].value))
			return KE_ERR_ARG;
		ch[i] = changes[i];
	}
	if (n > 1)
		qsort(ch, n, sizeof(KeChange),
			  kind == KE_KIND_EXACT ? change_cmp_exact : change_cmp_float);
	for (size_t i = 0; i < n; i++)
	{
		if (nch > 0 && ke_num_eq(kind, ch[nch - 1].value, ch[i].value))
			ch[nch - 1].delta += ch[i].delta;
		else
			ch[nch++] = ch[i];
	}
	{
		size_t		j = 0;

		for (size_t i = 0; i < nch; i++)
			if (ch[i].delta != 0)
				ch[j++] = ch[i];
		nch = j;
	}
	*m = nch;
	for (size_t i = 0; nch > 1 && i < nch; i++)
	{
		Cursor		c;
		int64_t		have = 0;

		if (cur_seek(eng, &c, ch[i].value, false) &&
			ke_num_eq(kind, cur_item(eng, &c)->value, ch[i].value))
			have = cur_item(eng, &c)->count;
		if (have + ch[i].delta < 0)
			return KE_ERR_NOTFOUND;
	}
	return KE_OK;
}

/*
 * Apply one count change to its run: change the count, remove the run when
 * it reaches zero, or insert a new run.  Sets *what to what it did.
 */
static KeStatus
apply_count(KeEngine *eng, const KeChange *chg, ChangeKind *what, KeChangeInfo *ci)
{
	KeKind		kind = eng->kind;
	Cursor		c;
	KeNum		x = chg->value;
	bool		found;
	SeekKey		key;
	KeStatus	st;

	key.mode = SEEK_GE;
	key.x = x;
	cur_seek_raw(eng, &c, &key);
	{
		Cursor		t = c;

		found = cur_normalize(eng, &t) &&
			ke_num_eq(kind, cur_item(eng, &t)->value, x);
		if (found)
			c = t;
	}
	if (found)
	{
		LeafItem   *w;
		int64_t		oldc = cur_item(eng, &c)->count;
		int64_t		newc = oldc + chg->delta;

		/* a batch was validated before; a single change is checked here */
		if (newc < 0)
			return KE_ERR_NOTFOUND;
		w = cur_item_w(eng, &c);
		if (newc == 0)
		{
			if (w->end != KE_END_NONE)
			{
				meta_w(eng)->npartitions--;
				ci->boundaries_changed = true;
			}
			leaf_remove(eng, &c);
			meta_w(eng)->nruns--;
			*what = CH_REMOVED;
		}
		else
		{
			w->count = newc;
			*what = (oldc >= 2) != (newc >= 2) ? CH_CROSS : CH_MEMBER;
		}
	}
	else
	{
		LeafItem	li;

		if (chg->delta < 0)
			return KE_ERR_NOTFOUND;
		memset(&li, 0, sizeof(li));
		li.value = x;
		li.count = chg->delta;
		li.feasible = 0;
		li.E = ke_num_zero(kind);
		li.best = ke_num_zero(kind);
		li.argmin = ke_num_zero(kind);
		li.frontier = ke_num_zero(kind);
		li.fresh = 1;
		if ((st = leaf_insert(eng, &c, &li)) != KE_OK)
			return st;
		meta_w(eng)->nruns++;
		*what = CH_NEW;
	}
	meta_w(eng)->nrows += chg->delta;
	return KE_OK;
}

/*
 * Plan the recompute after the m changes in ch did what ck says: where the
 * DP must resume (rc->trig, sorted, kept in trig, which has room for m) and
 * what its frontier must pass.  Sets *below to the lowest recompute start
 * or removed last run (runs under it kept their DP state), and *top_dirty
 * when a removed run had no run above it: the old path above the recompute
 * went with it.
 */
static void
plan_recompute(KeEngine *eng, const KeChange *ch, const ChangeKind *ck, size_t m,
			   KeNum *trig, Recompute *rc, bool *top_dirty, KeNum *below)
{
	KeKind		kind = eng->kind;
	size_t		ntrig = 0;
	bool		has_below = false;

	*top_dirty = false;
	*below = ke_num_zero(kind);
	for (size_t i = 0; i < m; i++)
	{
		KeNum		x = ch[i].value;
		KeNum		start;
		bool		has_start = false;
		Cursor		s;

		switch (ck[i])
		{
			case CH_MEMBER:
				continue;
			case CH_NEW:
				start = x;
				has_start = true;
				break;
			case CH_REMOVED:
				if (cur_seek(eng, &s, x, true))
				{
					start = cur_item(eng, &s)->value;
					has_start = true;
				}
				else
				{
					*top_dirty = true;
					if (!has_below || ke_num_cmp(kind, x, *below) < 0)
						*below = x;
					has_below = true;
				}
				break;
			case CH_CROSS:
				has_start = first_absorbing(eng, x, &start);
				break;
		}
		if (!has_start)
			continue;
		trig[ntrig++] = start;
		if (!rc->has_absorb || ke_num_cmp(kind, x, rc->absorb) > 0 ||
			(ke_num_eq(kind, x, rc->absorb) && ck[i] == CH_REMOVED))
		{
			rc->has_absorb = true;
			rc->absorb = x;
			rc->absorb_strict = ck[i] == CH_REMOVED;
		}
	}
	if (ntrig > 1)
		qsort(trig, ntrig, sizeof(KeNum),
			  kind == KE_KIND_EXACT ? num_cmp_exact : num_cmp_float);
	if (ntrig > 0)
	{
		if (!has_below || ke_num_cmp(kind, trig[0], *below) < 0)
			*below = trig[0];
		rc->trig = trig;
		rc->ntrig = ntrig;
	}
}

/* Widen the changed range to take in [lo, hi] */
static void
widen_changed_range(KeKind kind, KeChangeInfo *ci, KeNum lo, KeNum hi)
{
	if (!ci->any)
	{
		ci->any = true;
		ci->lo = lo;
		ci->hi = hi;
	}
	else
	{
		if (ke_num_cmp(kind, lo, ci->lo) < 0)
			ci->lo = lo;
		if (ke_num_cmp(kind, hi, ci->hi) > 0)
			ci->hi = hi;
	}
}

/* Apply a batch of count changes, then bring the DP and boundaries up to date */
KeStatus
ke_apply(KeEngine *eng, const KeChange *changes, size_t n)
{
	KeKind		kind = eng->kind;
	KeChange	local[16];
	KeChange   *ch = n <= 16 ? local : ke_malloc(n * sizeof(KeChange));
	ChangeKind	klocal[16];
	ChangeKind *ck = n <= 16 ? klocal : ke_malloc(n * sizeof(ChangeKind));
	KeNum		tlocal[16];
	KeNum	   *trig = n <= 16 ? tlocal : ke_malloc(n * sizeof(KeNum));
	size_t		m = 0;
	KeStatus	st = KE_OK;
	Recompute	rc;
	bool		top_dirty;
	KeNum		below;
	KeChangeInfo *ci = &eng->last;
	bool		had_parts = meta_r(eng)->npartitions > 0;

	memset(ci, 0, sizeof(*ci));
	memset(&rc, 0, sizeof(rc));
	if (ch == NULL || ck == NULL || trig == NULL)
	{
		st = KE_ERR_NOMEM;
		goto done;
	}

	/* sort, merge equal values, drop no-ops, validate before touching anything */
	if ((st = prepare_changes(eng, changes, n, ch, &m)) != KE_OK || m == 0)
		goto done;

	/* apply the counts */
	for (size_t i = 0; i < m; i++)
	{
		if ((st = apply_count(eng, &ch[i], &ck[i], ci)) != KE_OK)
			goto done;
	}

	/* where the DP must resume, and what its frontier must pass */
	plan_recompute(eng, ch, ck, m, trig, &rc, &top_dirty, &below);
	if (rc.ntrig > 0)
	{
		if ((st = recompute(eng, &rc)) != KE_OK)
			goto done;
		ci->runs_recomputed = rc.steps;
	}
	if (rc.ntrig > 0 || top_dirty)
	{
		/* with the old last run gone, the old path above the recompute is too */
		if (top_dirty)
			rc.converged = false;
		if ((st = update_boundaries(eng, &rc, below, had_parts, ci)) != KE_OK)
			goto done;
	}

	/* rows of changed runs changed their partitions' membership */
	if (had_parts || meta_r(eng)->npartitions > 0)
		widen_changed_range(kind, ci, ch[0].value, ch[m - 1].value);

done:
	if (ch != local)
		ke_free(ch);
	if (ck != klocal)
		ke_free(ck);
	if (trig != tlocal)
		ke_free(trig);
	return st;
}

/* Insert one row of value v */
KeStatus
ke_insert(KeEngine *eng, KeNum v)
{
	KeChange	c;

	c.value = v;
	c.delta = 1;
	return ke_apply(eng, &c, 1);
}

/* Delete one row of value v */
KeStatus
ke_delete(KeEngine *eng, KeNum v)
{
	KeChange	c;

	c.value = v;
	c.delta = -1;
	return ke_apply(eng, &c, 1);
}

/* ----------------------------------------------------------------
 * Reading
 * ----------------------------------------------------------------
 */

/*
 * Emit partitions scanning forward from the cursor's run.  When
 * split_start, the scan opens with a partition holding only the last row of
 * that run.  Stops after the partition ending past hi when bounded.
 */
static bool
scan_partitions(KeEngine *eng, Cursor *c, bool split_start, bool bounded, KeNum hi,
				KePartitionFn fn, void *arg)
{
	KeKind		kind = eng->kind;
	KePartition p;
	bool		open = false;
	bool		ok = c->valid;

	memset(&p, 0, sizeof(p));
	if (ok && split_start)
	{
		p.lo = cur_item(eng, c)->value;
		p.lo_last_only = true;
		p.n = 1;
		p.ndistinct = 1;
		open = true;
		ok = cur_next(eng, c);
	}
	for (; ok; ok = cur_next(eng, c))
	{
		const LeafItem *it = cur_item(eng, c);

		if (!open)
		{
			if (bounded && ke_num_cmp(kind, it->value, hi) > 0)
				return true;
			memset(&p, 0, sizeof(p));
			p.lo = it->value;
			open = true;
		}
		p.ndistinct++;
		if (it->end == KE_END_SPLIT)
		{
			p.n += it->count - 1;
			p.hi = it->value;
			p.hi_split = true;
			p.error = ke_num_sub(kind, p.hi, p.lo);
			if (!fn(&p, arg))
				return false;
			if (bounded && ke_num_cmp(kind, it->value, hi) > 0)
				return true;
			memset(&p, 0, sizeof(p));
			p.lo = it->value;
			p.lo_last_only = true;
			p.n = 1;
			p.ndistinct = 1;
			continue;
		}
		p.n += it->count;
		if (it->end == KE_END_FULL)
		{
			p.hi = it->value;
			p.error = ke_num_sub(kind, p.hi, p.lo);
			if (!fn(&p, arg))
				return false;
			open = false;
		}
	}
	return true;
}

/* Call fn for every partition, ascending; false if fn stopped early */
bool
ke_foreach_partition(KeEngine *eng, KePartitionFn fn, void *arg)
{
	Cursor		c;

	if (meta_r(eng)->npartitions == 0)
		return true;
	if (!cur_first(eng, &c))
		return true;
	return scan_partitions(eng, &c, false, false, ke_num_zero(eng->kind), fn, arg);
}

/*
 * Call fn for every partition holding a value in [lo, hi] (an unbounded end
 * reaches the first or last run), ascending.
 */
bool
ke_foreach_partition_range(KeEngine *eng, bool lo_unbounded, KeNum lo,
						   bool hi_unbounded, KeNum hi, KePartitionFn fn, void *arg)
{
	Cursor		c;
	bool		split_start = false;

	if (meta_r(eng)->npartitions == 0)
		return true;
	if (lo_unbounded)
	{
		if (!cur_first(eng, &c))
			return true;
	}
	else if (!cur_seek(eng, &c, lo, false))
		return true;
	else
	{
		/* back to the start of the partition holding lo's first rows */
		Cursor		b = c;

		for (;;)
		{
			int			f;

			if (!cur_prev(eng, &b))
			{
				cur_first(eng, &c);
				break;
			}
			f = cur_item(eng, &b)->end;
			if (f == KE_END_FULL)
			{
				c = b;
				cur_next(eng, &c);
				break;
			}
			if (f == KE_END_SPLIT)
			{
				c = b;
				split_start = true;
				break;
			}
		}
	}
	return scan_partitions(eng, &c, split_start, !hi_unbounded, hi, fn, arg);
}

/* Call fn for every partition the last change may have altered */
bool
ke_foreach_changed_partition(KeEngine *eng, KePartitionFn fn, void *arg)
{
	KeChangeInfo *ci = &eng->last;

	if (!ci->any)
		return true;
	return ke_foreach_partition_range(eng, ci->lo_unbounded, ci->lo,
									  ci->hi_unbounded, ci->hi, fn, arg);
}

/* Call fn for every run, ascending */
bool
ke_foreach_run(KeEngine *eng, KeRunFn fn, void *arg)
{
	Cursor		c;

	for (bool ok = cur_first(eng, &c); ok; ok = cur_next(eng, &c))
	{
		Run			r;
		KeRunInfo	ri;

		cur_get(eng, &c, &r);
		ri.value = r.value;
		ri.count = r.count;
		ri.feasible = r.feasible;
		ri.E = r.E;
		ri.best = r.best;
		ri.argmin = r.argmin;
		ri.argmin_last = r.argmin_last;
		ri.has_frontier = r.has_frontier;
		ri.frontier = r.frontier;
		ri.end = r.end;
		if (!fn(&ri, arg))
			return false;
	}
	return true;
}

/* ----------------------------------------------------------------
 * Verification
 * ----------------------------------------------------------------
 */

/* Check a subtree's shape and bounds; counts runs into *nruns */
static bool
verify_node(KeEngine *eng, KeNodeId id, int level, bool has_lo, KeNum lo,
			bool has_hi, KeNum hi, int64_t *nruns, char *msg, size_t len)
{
	KeKind		kind = eng->kind;
	const NodeHdr *n = node_r(eng, id);
	int			nitems;

	if (n->level != level)
	{
		snprintf(msg, len, "node %u has level %d, expected %d", id, n->level, level);
		return false;
	}
	if (n->nitems == 0 && !(level == 0 && id == meta_r(eng)->root))
	{
		snprintf(msg, len, "node %u is empty", id);
		return false;
	}
	if (level == 0)
	{
		const LeafItem *li = LEAF_ITEMS(n);

		if (n->nitems > eng->leaf_cap)
		{
			snprintf(msg, len, "leaf %u overfull", id);
			return false;
		}
		for (int i = 0; i < n->nitems; i++)
		{
			if ((i > 0 && ke_num_cmp(kind, li[i - 1].value, li[i].value) >= 0) ||
				(has_lo && ke_num_cmp(kind, li[i].value, lo) < 0) ||
				(has_hi && ke_num_cmp(kind, li[i].value, hi) > 0) ||
				li[i].count < 1 || li[i].fresh)
			{
				snprintf(msg, len, "leaf %u item %d out of order, out of bounds or empty", id, i);
				return false;
			}
		}
		*nruns += n->nitems;
		return true;
	}
	if (n->nitems > eng->inner_cap)
	{
		snprintf(msg, len, "inner node %u overfull", id);
		return false;
	}
	nitems = n->nitems;
	for (int i = 0; i < nitems; i++)
	{
		/* re-read: the recursion may have let a store drop this node */
		const InnerItem *it = INNER_ITEMS(node_r(eng, id));
		bool		clo = i > 0 ? true : has_lo;
		KeNum		vlo = i > 0 ? it[i].key : lo;
		bool		chi = i + 1 < nitems ? true : has_hi;
		KeNum		vhi = i + 1 < nitems ? it[i + 1].key : hi;
		KeNodeId	child = it[i].child;

		if (!verify_node(eng, child, level - 1, clo, vlo, chi, vhi, nruns, msg, len))
			return false;
	}
	return true;
}

/*
 * Read every run into runs, and its value and count into d, checking the
 * number of runs, rows and partition ends against the metadata.
 */
static bool
verify_read_runs(KeEngine *eng, const KeMeta *meta, Run *runs, DpArrays *d,
				 char *msg, size_t msglen)
{
	int64_t		m = meta->nruns;
	int64_t		rows = 0,
				flags = 0,
				r = 0;
	Cursor		c;

	for (bool ok = cur_first(eng, &c); ok; ok = cur_next(eng, &c))
	{
		if (r >= m)
		{
			snprintf(msg, msglen, "cursor visits more runs than the tree holds");
			return false;
		}
		cur_get(eng, &c, &runs[r]);
		d->vals[r] = runs[r].value;
		d->counts[r] = runs[r].count;
		rows += runs[r].count;
		flags += runs[r].end != KE_END_NONE;
		r++;
	}
	if (r != m || rows != meta->nrows || flags != meta->npartitions)
	{
		snprintf(msg, msglen, "runs %lld/%lld, rows %lld/%lld or partitions %lld/%lld disagree with metadata",
				 (long long) r, (long long) m, (long long) rows, (long long) meta->nrows,
				 (long long) flags, (long long) meta->npartitions);
		return false;
	}
	return true;
}

/* Compare the stored run x with run r of the from-scratch DP in d */
static bool
verify_run(KeKind kind, const Run *x, const DpArrays *d, int64_t r,
		   char *msg, size_t msglen)
{
	bool		e_ok;
	char		b1[64],
				b2[64];

	if (x->feasible != d->feasible[r])
	{
		snprintf(msg, msglen, "run %s: stored as %s, recomputed as %s",
				 ke_num_format(kind, x->value, b1, sizeof(b1)),
				 x->feasible ? "feasible" : "infeasible",
				 d->feasible[r] ? "feasible" : "infeasible");
		return false;
	}
	if (!d->feasible[r])
		e_ok = true;
	else if (kind == KE_KIND_FLOAT && isfinite(d->E[r].f))
		e_ok = isfinite(x->E.f) &&
			fabs(x->E.f - d->E[r].f) <= 1e-9 * fmax(1.0, fabs(d->E[r].f));
	else
		e_ok = ke_num_eq(kind, x->E, d->E[r]);
	if (!e_ok)
	{
		snprintf(msg, msglen, "run %s: stored E %s, recomputed %s",
				 ke_num_format(kind, x->value, b1, sizeof(b1)),
				 ke_num_format(kind, x->E, b2, sizeof(b2)),
				 ke_num_format(kind, d->E[r], b1 + 32, sizeof(b1) - 32));
		return false;
	}
	if (d->feasible[r] &&
		(!ke_num_eq(kind, x->argmin, d->argmin[r]) ||
		 x->argmin_last != d->argmin_last[r]))
	{
		snprintf(msg, msglen, "run %s: stored argmin %s/%d, recomputed %s/%d",
				 ke_num_format(kind, x->value, b1, 32),
				 ke_num_format(kind, x->argmin, b1 + 32, 32), x->argmin_last,
				 ke_num_format(kind, d->argmin[r], b2, sizeof(b2)), d->argmin_last[r]);
		return false;
	}
	if (x->has_frontier != (d->frontier[r] >= 0) ||
		(d->frontier[r] >= 0 && !ke_num_eq(kind, x->frontier, d->vals[d->frontier[r]])))
	{
		snprintf(msg, msglen, "run %s: frontier differs from the recomputed one",
				 ke_num_format(kind, x->value, b1, sizeof(b1)));
		return false;
	}
	return true;
}

/*
 * The end flags must lay out an optimal partitioning (under either tie rule
 * of ke_keep_boundaries they do; which optimum, the unit tests check): the
 * stored state, already found equal to a recomputation, must take them back
 * as ke_adopt_boundaries() would.
 */
static bool
verify_flags(KeEngine *eng, const Run *runs, int64_t m, char *msg, size_t msglen)
{
	KeBoundary *b = ke_malloc((size_t) (m > 0 ? m : 1) * sizeof(KeBoundary));
	size_t		n = 0;
	bool		optimal = false;
	KeStatus	st;

	if (b == NULL)
	{
		snprintf(msg, msglen, "out of memory");
		return false;
	}
	for (int64_t r = 0; r < m; r++)
		if (runs[r].end != KE_END_NONE)
		{
			b[n].value = runs[r].value;
			b[n++].split = runs[r].end == KE_END_SPLIT;
		}
	st = ke_adopt_boundaries(eng, b, n, false, &optimal);
	ke_free(b);
	if (st != KE_OK || !optimal)
	{
		snprintf(msg, msglen, "the partition ends do not lay out an optimal partitioning");
		return false;
	}
	return true;
}

/*
 * Compare the stored state with a from-scratch DP over the same runs, and
 * the tree with its invariants.  KE_OK, or KE_ERR_CORRUPT with a message.
 */
KeStatus
ke_verify(KeEngine *eng, char *msg, size_t msglen)
{
	KeKind		kind = eng->kind;
	/* a copy: a store may drop the metapage during the long walk below */
	KeMeta		metacopy = *meta_r(eng);
	KeMeta	   *meta = &metacopy;
	int64_t		m = meta->nruns;
	int64_t		counted = 0;
	size_t		cap = m > 0 ? (size_t) m : 1;
	DpArrays	d;
	Run		   *runs;
	KeStatus	st = KE_ERR_CORRUPT;

	d.vals = ke_malloc(cap * sizeof(KeNum));
	d.counts = ke_malloc(cap * sizeof(int64_t));
	runs = ke_malloc(cap * sizeof(Run));
	d.E = ke_malloc(cap * sizeof(KeNum));
	d.feasible = ke_malloc(cap * sizeof(bool));
	d.best = ke_malloc(cap * sizeof(KeNum));
	d.argmin = ke_malloc(cap * sizeof(KeNum));
	d.argmin_last = ke_malloc(cap * sizeof(int));
	d.frontier = ke_malloc(cap * sizeof(int64_t));
	d.end = ke_malloc(cap * sizeof(int));
	if (msglen > 0)
		msg[0] = '\0';
	if (!runs || !dp_arrays_ok(&d))
	{
		st = KE_ERR_NOMEM;
		goto done;
	}
	if (!verify_node(eng, meta->root, (int) meta->height - 1, false, ke_num_zero(kind),
					 false, ke_num_zero(kind), &counted, msg, msglen))
		goto done;
	if (counted != m)
	{
		snprintf(msg, msglen, "tree holds %lld runs, metadata says %lld",
				 (long long) counted, (long long) m);
		goto done;
	}
	if (!verify_read_runs(eng, meta, runs, &d, msg, msglen))
		goto done;
	dp_arrays_solve(eng, &d, (size_t) m);
	for (int64_t r = 0; r < m; r++)
	{
		if (!verify_run(kind, &runs[r], &d, r, msg, msglen))
			goto done;
	}
	if (!verify_flags(eng, runs, m, msg, msglen))
		goto done;
	st = KE_OK;

done:
	dp_arrays_free(&d);
	ke_free(runs);
	return st;
}

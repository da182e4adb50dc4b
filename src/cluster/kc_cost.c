/*
 * kc_cost.c
 *		Information loss (I3M, Definition 4), the schema check, and the
 *		helpers the rest of the core shares: group summaries, the choice
 *		of a group for a row, rows copied out of the store.
 *
 * A categorical coordinate is a leaf number.  With leaves numbered in
 * depth-first order every node covers a contiguous interval of them, so the
 * lowest common ancestor of a box [lo, hi] is found by walking up from lo's
 * leaf until the node's interval reaches hi, and it is that of every leaf in
 * between.  The schema check makes sure that walk ends: the parent of a node
 * is higher and its interval contains the node's, up to the root, which
 * covers every leaf.
 *
 * Every IL is computed as n * kc_row_cost(lo, hi) through the same code, so
 * that two ways of reaching the same box give bit-identical costs and ties
 * are broken the same way everywhere (the unit tests rely on it).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ke_alloc.h"
#include "kc_int.h"

/* The weight that scales dimension d's coordinates for the store's distance */
double
kc_weight(const KcSchema *s, int d)
{
	const KcDim *dim = &s->dims[d];

	if (dim->kind == KC_NUMERIC)
		return 1.0 / dim->range;
	return 1.0 / (double) dim->h->nleaves;
}

/* The node published for categorical dimension d of a box [lo, hi] */
int
kc_lca(const KcHierarchy *h, int lo, int hi)
{
	int			node = h->leaf_node[lo];

	/* the parent test only guards against a hierarchy never checked */
	while (h->leaf_hi[node] < hi && h->parent[node] >= 0)
		node = h->parent[node];
	return node;
}

/* The cost of one dimension of a box, as a fraction of the dimension's span */
static double
dim_cost(const KcDim *dim, double lo, double hi)
{
	const KcHierarchy *h;
	int			top;

	if (dim->kind == KC_NUMERIC)
		return (hi - lo) / dim->range;
	h = dim->h;
	top = h->height[h->root];
	if (top == 0)
		return 0.0;
	return (double) h->height[kc_lca(h, (int) lo, (int) hi)] / (double) top;
}

/* The cost of one row of a group of box lo, hi (IL / n) */
double
kc_row_cost(const KcSchema *s, const double *lo, const double *hi)
{
	double		cost = 0.0;
	int			d;

	for (d = 0; d < s->ndims; d++)
		cost += dim_cost(&s->dims[d], lo[d], hi[d]);
	return cost;
}

/* IL of a group */
double
kc_il(const KcSchema *s, const KcGroup *g)
{
	if (g->n <= 0)
		return 0.0;
	return (double) g->n * kc_row_cost(s, g->lo, g->hi);
}

/* Check one hierarchy: nested leaf intervals, heights rising to the root */
static KcStatus
hierarchy_check(const KcHierarchy *h)
{
	int			i;

	if (h == NULL || h->nnodes < 1 || h->nleaves < 1 || h->nleaves > h->nnodes ||
		h->root < 0 || h->root >= h->nnodes || h->parent == NULL ||
		h->height == NULL || h->leaf_lo == NULL || h->leaf_hi == NULL ||
		h->leaf_node == NULL)
		return KC_ERR_ARG;
	if (h->parent[h->root] != -1 || h->leaf_lo[h->root] != 0 ||
		h->leaf_hi[h->root] != h->nleaves - 1)
		return KC_ERR_ARG;
	for (i = 0; i < h->nnodes; i++)
	{
		int			p = h->parent[i];

		if (h->height[i] < 0 || h->leaf_lo[i] < 0 || h->leaf_lo[i] > h->leaf_hi[i] ||
			h->leaf_hi[i] >= h->nleaves)
			return KC_ERR_ARG;
		if (i == h->root)
			continue;
		/* a rising height along parents also rules out a cycle */
		if (p < 0 || p >= h->nnodes || h->height[p] <= h->height[i] ||
			h->leaf_lo[p] > h->leaf_lo[i] || h->leaf_hi[p] < h->leaf_hi[i])
			return KC_ERR_ARG;
	}
	for (i = 0; i < h->nleaves; i++)
	{
		int			n = h->leaf_node[i];

		if (n < 0 || n >= h->nnodes || h->height[n] != 0 ||
			h->leaf_lo[n] != i || h->leaf_hi[n] != i)
			return KC_ERR_ARG;
	}
	return KC_OK;
}

/* Check a schema: dimensions, ranges, hierarchies, k, method */
KcStatus
kc_schema_check(const KcSchema *s)
{
	int			d;

	if (s == NULL || s->ndims < 1 || s->ndims > KC_MAX_DIMS ||
		s->k < 1 || s->k > KC_MAX_K || s->candidates < 1 ||
		(s->method != KC_I3M && s->method != KC_SBTREE))
		return KC_ERR_ARG;
	for (d = 0; d < s->ndims; d++)
	{
		const KcDim *dim = &s->dims[d];

		if (dim->kind == KC_NUMERIC)
		{
			if (!isfinite(dim->range) || !(dim->range > 0.0))
				return KC_ERR_ARG;
		}
		else if (dim->kind == KC_CATEGORICAL)
		{
			if (hierarchy_check(dim->h) != KC_OK)
				return KC_ERR_ARG;
		}
		else
			return KC_ERR_ARG;
	}
	return KC_OK;
}

/*
 * The checks every operation can afford: the hierarchies are walked only by
 * kc_schema_check, which callers run once per schema.
 */
KcStatus
kc_args_check(const KcSchema *s, const KcStore *st)
{
	if (s == NULL || st == NULL || s->ndims < 1 || s->ndims > KC_MAX_DIMS ||
		s->k < 1 || s->k > KC_MAX_K || s->candidates < 1 ||
		(s->method != KC_I3M && s->method != KC_SBTREE))
		return KC_ERR_ARG;
	if (st->nearest == NULL || st->covering == NULL || st->get == NULL ||
		st->members == NULL || st->create == NULL || st->put == NULL ||
		st->drop == NULL || st->place == NULL || st->count == NULL ||
		st->all == NULL)
		return KC_ERR_ARG;
	return KC_OK;
}

/* Check a row's coordinates: finite, and leaf numbers for categoricals */
KcStatus
kc_point_check(const KcSchema *s, const double *x)
{
	int			d;

	if (x == NULL)
		return KC_ERR_ARG;
	for (d = 0; d < s->ndims; d++)
	{
		if (!isfinite(x[d]))
			return KC_ERR_ARG;
		if (s->dims[d].kind == KC_CATEGORICAL &&
			(x[d] != floor(x[d]) || x[d] < 0.0 || x[d] >= (double) s->dims[d].h->nleaves))
			return KC_ERR_ARG;
	}
	return KC_OK;
}

/* count group summaries with their arrays, in one block (NULL when out of memory) */
KcGroup *
kc_groups_alloc(int64_t count, int ndims)
{
	size_t		head = (size_t) (count > 0 ? count : 1) * sizeof(KcGroup);
	size_t		body = (size_t) (count > 0 ? count : 1) * 3 * (size_t) ndims * sizeof(double);
	KcGroup    *g = ke_malloc(head + body);
	double	   *arr;
	int64_t		i;

	if (g == NULL)
		return NULL;
	/* KcGroup's size is a multiple of 8, so the doubles stay aligned */
	arr = (double *) ((char *) g + head);
	for (i = 0; i < (count > 0 ? count : 1); i++)
	{
		g[i].gid = -1;
		g[i].n = 0;
		g[i].lo = arr + (size_t) i * 3 * ndims;
		g[i].hi = g[i].lo + ndims;
		g[i].sum = g[i].hi + ndims;
	}
	return g;
}

/* Free what kc_groups_alloc returned */
void
kc_groups_free(KcGroup *groups)
{
	ke_free(groups);
}

/* Make a summary empty: no rows, an inverted box */
void
kc_summary_reset(const KcSchema *s, KcGroup *g)
{
	int			d;

	g->n = 0;
	for (d = 0; d < s->ndims; d++)
	{
		g->lo[d] = INFINITY;
		g->hi[d] = -INFINITY;
		g->sum[d] = 0.0;
	}
}

/* Add a row to a summary */
void
kc_summary_add(const KcSchema *s, KcGroup *g, const double *x)
{
	int			d;

	for (d = 0; d < s->ndims; d++)
	{
		if (x[d] < g->lo[d])
			g->lo[d] = x[d];
		if (x[d] > g->hi[d])
			g->hi[d] = x[d];
		g->sum[d] += x[d];
	}
	g->n++;
}

/* Copy a summary into one whose arrays are already provided */
void
kc_summary_copy(const KcSchema *s, KcGroup *dst, const KcGroup *src)
{
	size_t		bytes = (size_t) s->ndims * sizeof(double);

	dst->gid = src->gid;
	dst->n = src->n;
	memcpy(dst->lo, src->lo, bytes);
	memcpy(dst->hi, src->hi, bytes);
	memcpy(dst->sum, src->sum, bytes);
}

/* IL(g + x) - IL(g); scratch holds 2 * ndims doubles */
double
kc_il_growth(const KcSchema *s, const KcGroup *g, const double *x, double *scratch)
{
	double	   *lo = scratch;
	double	   *hi = scratch + s->ndims;
	int			d;

	if (g->n <= 0)
		return 0.0;
	for (d = 0; d < s->ndims; d++)
	{
		lo[d] = x[d] < g->lo[d] ? x[d] : g->lo[d];
		hi[d] = x[d] > g->hi[d] ? x[d] : g->hi[d];
	}
	return (double) (g->n + 1) * kc_row_cost(s, lo, hi) - kc_il(s, g);
}

/*
 * The candidate a row joins: a group of fewer than k rows (the lone small
 * group) first; else by I3M's rule the least growth of IL, ties to the
 * smaller group then the lower id; by the similar-B-tree's the first (the
 * nearest).  The greedy build asks for I3M's rule whatever the schema's.
 */
int
kc_choose(const KcSchema *s, KcMethod method, const KcGroup *cand, int found,
		  const double *x, double *scratch)
{
	int			best = 0;
	double		best_growth = 0.0;
	int			i;

	for (i = 0; i < found; i++)
		if (cand[i].n < s->k)
			return i;
	if (method == KC_SBTREE)
		return 0;
	for (i = 0; i < found; i++)
	{
		double		growth = kc_il_growth(s, &cand[i], x, scratch);

		if (i == 0 || growth < best_growth ||
			(growth == best_growth &&
			 (cand[i].n < cand[best].n ||
			  (cand[i].n == cand[best].n && cand[i].gid < cand[best].gid))))
		{
			best = i;
			best_growth = growth;
		}
	}
	return best;
}

/* Order rows by handle */
static int
row_cmp(const void *a, const void *b)
{
	const KcRow *ra = a;
	const KcRow *rb = b;

	return (ra->handle > rb->handle) - (ra->handle < rb->handle);
}

/* Copy group gid's members out of the store, sorted by handle */
KcStatus
kc_rowset_load(const KcSchema *s, const KcStore *st, int64_t gid, KcRowSet *rs)
{
	const KcRow *rows;
	KcRow	   *sorted;
	int64_t		n;
	int64_t		i;
	KcStatus	rc;

	rs->n = 0;
	rs->handle = NULL;
	rs->x = NULL;
	rc = st->members(st->arg, gid, &rows, &n);
	if (rc != KC_OK)
		return rc;
	if (n < 0 || (n > 0 && rows == NULL))
		return KC_ERR_CORRUPT;
	sorted = ke_malloc((size_t) n * sizeof(KcRow));
	rs->handle = ke_malloc((size_t) n * sizeof(int64_t));
	rs->x = ke_malloc((size_t) n * (size_t) s->ndims * sizeof(double));
	if (sorted == NULL || rs->handle == NULL || rs->x == NULL)
	{
		ke_free(sorted);
		kc_rowset_free(rs);
		return KC_ERR_NOMEM;
	}
	if (n > 0)
	{
		memcpy(sorted, rows, (size_t) n * sizeof(KcRow));
		qsort(sorted, (size_t) n, sizeof(KcRow), row_cmp);
	}
	for (i = 0; i < n; i++)
	{
		rs->handle[i] = sorted[i].handle;
		memcpy(KC_ROWX(s, rs, i), sorted[i].x, (size_t) s->ndims * sizeof(double));
	}
	rs->n = n;
	ke_free(sorted);
	return KC_OK;
}

/* Free a row set's arrays */
void
kc_rowset_free(KcRowSet *rs)
{
	ke_free(rs->handle);
	ke_free(rs->x);
	rs->handle = NULL;
	rs->x = NULL;
	rs->n = 0;
}

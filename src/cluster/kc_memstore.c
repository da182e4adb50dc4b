/*
 * kc_memstore.c
 *		An in-memory KcStore: rows in one array, groups in arrays indexed
 *		by id, each group's members on a doubly linked list.
 *
 * For the clustering core's unit tests and benchmarks.  The store checks
 * what the core asks of it where that is cheap (a summary put must count
 * the group's members; only an empty group may be dropped; rows and
 * groups must exist) and answers KC_ERR_CORRUPT otherwise, so that a slip
 * of the core shows at once.  nearest and covering search every group: a
 * query costs O(groups * (ndims + max)).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ke_alloc.h"
#include "kc_memstore.h"

/* The store: its interface first, then rows, groups and answer buffers */
struct KcMemStore
{
	KcStore		pub;
	KcSchema	s;
	int			nd;
	/* rows: handle = index */
	int64_t		nrows;
	int64_t		rowcap;
	double	   *x;				/* [rowcap * nd] */
	int64_t    *rgroup;			/* group, or -1 */
	int64_t    *next;			/* member list links, -1 ends */
	int64_t    *prev;
	char	   *removed;
	/* groups: gid = index, never reused */
	int64_t		ngid;
	int64_t		gcap;
	int64_t		nalive;
	char	   *alive;
	int64_t    *n;				/* summary as put */
	double	   *lo;				/* [gcap * nd] */
	double	   *hi;
	double	   *sum;
	int64_t    *head;			/* first member, or -1 */
	int64_t    *mcount;			/* members now */
	/* answers kept until the next call */
	KcRow	   *mbuf;
	int64_t		mbufcap;
	int64_t    *abuf;
	int64_t		abufcap;
	double	   *tdist;			/* nearest's best so far */
	int64_t    *tgid;
	int64_t		tcap;
};

/* Grow *p to hold need elements of size elem; false when out of memory */
static bool
grow(void **p, int64_t *cap, int64_t need, size_t elem)
{
	int64_t		c = *cap > 0 ? *cap : 16;
	void	   *q;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	q = ke_realloc(*p, (size_t) c * elem);
	if (q == NULL)
		return false;
	*p = q;
	*cap = c;
	return true;
}

/* Grow several arrays sharing one capacity */
static bool
grow_all(void **arrs[], const size_t *elems, int narrs, int64_t *cap, int64_t need)
{
	int64_t		c = *cap > 0 ? *cap : 16;
	int			i;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	for (i = 0; i < narrs; i++)
	{
		void	   *q = ke_realloc(*arrs[i], (size_t) c * elems[i]);

		if (q == NULL)
			return false;
		*arrs[i] = q;
	}
	*cap = c;
	return true;
}

/* Whether gid names a live group */
static bool
live(const KcMemStore *ms, int64_t gid)
{
	return gid >= 0 && gid < ms->ngid && ms->alive[gid];
}

/* Copy group gid's summary out */
static void
copy_out(const KcMemStore *ms, int64_t gid, KcGroup *out)
{
	size_t		bytes = (size_t) ms->nd * sizeof(double);

	out->gid = gid;
	out->n = ms->n[gid];
	memcpy(out->lo, ms->lo + gid * ms->nd, bytes);
	memcpy(out->hi, ms->hi + gid * ms->nd, bytes);
	memcpy(out->sum, ms->sum + gid * ms->nd, bytes);
}

/* Squared scaled distance from x to group gid: to its box or its centre */
static double
distance(const KcMemStore *ms, int64_t gid, const double *x)
{
	const double *lo = ms->lo + gid * ms->nd;
	const double *hi = ms->hi + gid * ms->nd;
	const double *sum = ms->sum + gid * ms->nd;
	double		dist = 0.0;
	int			d;

	for (d = 0; d < ms->nd; d++)
	{
		double		t;

		if (ms->s.method == KC_I3M)
			t = x[d] < lo[d] ? lo[d] - x[d] : (x[d] > hi[d] ? x[d] - hi[d] : 0.0);
		else
			t = x[d] - sum[d] / (double) ms->n[gid];
		t *= kc_weight(&ms->s, d);
		dist += t * t;
	}
	return dist;
}

/* The up to max groups nearest x, nearest first, ties by id */
static KcStatus
mem_nearest(void *arg, const double *x, int max, int64_t except, KcGroup *out,
			int *found)
{
	KcMemStore *ms = arg;
	int			cnt = 0;
	int64_t		g;
	int			i;
	void	  **arrs[] = {(void **) &ms->tdist, (void **) &ms->tgid};
	size_t		elems[] = {sizeof(double), sizeof(int64_t)};

	*found = 0;
	if (max < 0)
		return KC_ERR_ARG;
	if (!grow_all(arrs, elems, 2, &ms->tcap, max))
		return KC_ERR_NOMEM;
	for (g = 0; g < ms->ngid; g++)
	{
		double		dist;

		if (!ms->alive[g] || ms->n[g] == 0 || g == except)
			continue;
		dist = distance(ms, g, x);
		/* ids rise, so an equal distance never displaces an earlier group */
		if (cnt == max && !(dist < ms->tdist[cnt - 1]))
			continue;
		i = cnt < max ? cnt++ : cnt - 1;
		for (; i > 0 && dist < ms->tdist[i - 1]; i--)
		{
			ms->tdist[i] = ms->tdist[i - 1];
			ms->tgid[i] = ms->tgid[i - 1];
		}
		ms->tdist[i] = dist;
		ms->tgid[i] = g;
	}
	for (i = 0; i < cnt; i++)
		copy_out(ms, ms->tgid[i], &out[i]);
	*found = cnt;
	return KC_OK;
}

/*
 * Whether dimension dim of a group of box [lo, hi] publishes a value that
 * covers x: the interval itself for a numeric dimension, every leaf under
 * the lowest common ancestor for a categorical one
 */
static bool
published_contains(const KcDim *dim, double lo, double hi, double x)
{
	int			node;

	if (dim->kind == KC_NUMERIC)
		return x >= lo && x <= hi;
	node = kc_lca(dim->h, (int) lo, (int) hi);
	return x >= dim->h->leaf_lo[node] && x <= dim->h->leaf_hi[node];
}

/* The up to max groups whose published box contains x, by id */
static KcStatus
mem_covering(void *arg, const double *x, int max, int64_t except, KcGroup *out,
			 int *found)
{
	KcMemStore *ms = arg;
	int64_t		g;
	int			d;

	*found = 0;
	for (g = 0; g < ms->ngid && *found < max; g++)
	{
		const double *lo = ms->lo + g * ms->nd;
		const double *hi = ms->hi + g * ms->nd;

		if (!ms->alive[g] || ms->n[g] == 0 || g == except)
			continue;
		for (d = 0; d < ms->nd; d++)
			if (!published_contains(&ms->s.dims[d], lo[d], hi[d], x[d]))
				break;
		if (d == ms->nd)
			copy_out(ms, g, &out[(*found)++]);
	}
	return KC_OK;
}

/* The summary of group gid */
static KcStatus
mem_get(void *arg, int64_t gid, KcGroup *out)
{
	KcMemStore *ms = arg;

	if (!live(ms, gid))
		return KC_ERR_CORRUPT;
	copy_out(ms, gid, out);
	return KC_OK;
}

/* The members of group gid */
static KcStatus
mem_members(void *arg, int64_t gid, const KcRow **rows, int64_t *n)
{
	KcMemStore *ms = arg;
	int64_t		r;
	int64_t		i = 0;

	*rows = NULL;
	*n = 0;
	if (!live(ms, gid))
		return KC_ERR_CORRUPT;
	if (!grow((void **) &ms->mbuf, &ms->mbufcap, ms->mcount[gid], sizeof(KcRow)))
		return KC_ERR_NOMEM;
	for (r = ms->head[gid]; r >= 0; r = ms->next[r])
	{
		ms->mbuf[i].handle = r;
		ms->mbuf[i].x = ms->x + r * ms->nd;
		i++;
	}
	*rows = ms->mbuf;
	*n = i;
	return KC_OK;
}

/* A new empty group */
static KcStatus
mem_create(void *arg, int64_t *gid)
{
	KcMemStore *ms = arg;
	void	  **arrs[] = {(void **) &ms->alive, (void **) &ms->n, (void **) &ms->lo,
	(void **) &ms->hi, (void **) &ms->sum, (void **) &ms->head, (void **) &ms->mcount};
	size_t		dbl = (size_t) ms->nd * sizeof(double);
	size_t		elems[] = {sizeof(char), sizeof(int64_t), dbl, dbl, dbl,
	sizeof(int64_t), sizeof(int64_t)};
	int64_t		g = ms->ngid;

	if (!grow_all(arrs, elems, 7, &ms->gcap, g + 1))
		return KC_ERR_NOMEM;
	ms->alive[g] = 1;
	ms->n[g] = 0;
	ms->head[g] = -1;
	ms->mcount[g] = 0;
	memset(ms->lo + g * ms->nd, 0, dbl);
	memset(ms->hi + g * ms->nd, 0, dbl);
	memset(ms->sum + g * ms->nd, 0, dbl);
	ms->ngid++;
	ms->nalive++;
	*gid = g;
	return KC_OK;
}

/* Write a group's summary, which must count its members */
static KcStatus
mem_put(void *arg, const KcGroup *g)
{
	KcMemStore *ms = arg;
	size_t		bytes = (size_t) ms->nd * sizeof(double);

	if (!live(ms, g->gid) || g->n != ms->mcount[g->gid])
		return KC_ERR_CORRUPT;
	ms->n[g->gid] = g->n;
	memcpy(ms->lo + g->gid * ms->nd, g->lo, bytes);
	memcpy(ms->hi + g->gid * ms->nd, g->hi, bytes);
	memcpy(ms->sum + g->gid * ms->nd, g->sum, bytes);
	return KC_OK;
}

/* Remove an empty group */
static KcStatus
mem_drop(void *arg, int64_t gid)
{
	KcMemStore *ms = arg;

	if (!live(ms, gid) || ms->mcount[gid] != 0)
		return KC_ERR_CORRUPT;
	ms->alive[gid] = 0;
	ms->nalive--;
	return KC_OK;
}

/* Take row r off its group's member list */
static void
unlink_row(KcMemStore *ms, int64_t r)
{
	int64_t		g = ms->rgroup[r];

	if (g < 0)
		return;
	if (ms->prev[r] >= 0)
		ms->next[ms->prev[r]] = ms->next[r];
	else
		ms->head[g] = ms->next[r];
	if (ms->next[r] >= 0)
		ms->prev[ms->next[r]] = ms->prev[r];
	ms->mcount[g]--;
	ms->rgroup[r] = -1;
}

/* Make a row a member of group gid */
static KcStatus
mem_place(void *arg, const KcRow *row, int64_t gid)
{
	KcMemStore *ms = arg;
	int64_t		r = row->handle;

	if (r < 0 || r >= ms->nrows || ms->removed[r] || !live(ms, gid))
		return KC_ERR_CORRUPT;
	unlink_row(ms, r);
	ms->rgroup[r] = gid;
	ms->prev[r] = -1;
	ms->next[r] = ms->head[gid];
	if (ms->head[gid] >= 0)
		ms->prev[ms->head[gid]] = r;
	ms->head[gid] = r;
	ms->mcount[gid]++;
	return KC_OK;
}

/* The number of groups */
static KcStatus
mem_count(void *arg, int64_t *ngroups)
{
	KcMemStore *ms = arg;

	*ngroups = ms->nalive;
	return KC_OK;
}

/* Every group's id, rising */
static KcStatus
mem_all(void *arg, const int64_t **gids, int64_t *n)
{
	KcMemStore *ms = arg;
	int64_t		g;
	int64_t		i = 0;

	*gids = NULL;
	*n = 0;
	if (!grow((void **) &ms->abuf, &ms->abufcap, ms->nalive, sizeof(int64_t)))
		return KC_ERR_NOMEM;
	for (g = 0; g < ms->ngid; g++)
		if (ms->alive[g])
			ms->abuf[i++] = g;
	*gids = ms->abuf;
	*n = i;
	return KC_OK;
}

/* A new empty store for rows of schema s */
KcMemStore *
kc_memstore_create(const KcSchema *s)
{
	KcMemStore *ms;

	if (s == NULL || s->ndims < 1 || s->ndims > KC_MAX_DIMS)
		return NULL;
	ms = ke_calloc(1, sizeof(KcMemStore));
	if (ms == NULL)
		return NULL;
	ms->s = *s;
	ms->nd = s->ndims;
	ms->pub.arg = ms;
	ms->pub.nearest = mem_nearest;
	ms->pub.covering = mem_covering;
	ms->pub.get = mem_get;
	ms->pub.members = mem_members;
	ms->pub.create = mem_create;
	ms->pub.put = mem_put;
	ms->pub.drop = mem_drop;
	ms->pub.place = mem_place;
	ms->pub.count = mem_count;
	ms->pub.all = mem_all;
	return ms;
}

/* Free the store */
void
kc_memstore_destroy(KcMemStore *ms)
{
	if (ms == NULL)
		return;
	ke_free(ms->x);
	ke_free(ms->rgroup);
	ke_free(ms->next);
	ke_free(ms->prev);
	ke_free(ms->removed);
	ke_free(ms->alive);
	ke_free(ms->n);
	ke_free(ms->lo);
	ke_free(ms->hi);
	ke_free(ms->sum);
	ke_free(ms->head);
	ke_free(ms->mcount);
	ke_free(ms->mbuf);
	ke_free(ms->abuf);
	ke_free(ms->tdist);
	ke_free(ms->tgid);
	ke_free(ms);
}

/* The store's interface for the core */
const KcStore *
kc_memstore_store(KcMemStore *ms)
{
	return &ms->pub;
}

/* Add n rows, members of no group */
KcStatus
kc_memstore_add_rows(KcMemStore *ms, const double *x, int64_t n, int64_t *first)
{
	void	  **arrs[] = {(void **) &ms->x, (void **) &ms->rgroup, (void **) &ms->next,
	(void **) &ms->prev, (void **) &ms->removed};
	size_t		elems[] = {(size_t) ms->nd * sizeof(double), sizeof(int64_t),
	sizeof(int64_t), sizeof(int64_t), sizeof(char)};
	int64_t		i;

	if (n < 0 || (n > 0 && x == NULL))
		return KC_ERR_ARG;
	if (!grow_all(arrs, elems, 5, &ms->rowcap, ms->nrows + n))
		return KC_ERR_NOMEM;
	if (n > 0)
		memcpy(ms->x + ms->nrows * ms->nd, x, (size_t) n * ms->nd * sizeof(double));
	for (i = ms->nrows; i < ms->nrows + n; i++)
	{
		ms->rgroup[i] = -1;
		ms->next[i] = ms->prev[i] = -1;
		ms->removed[i] = 0;
	}
	if (first != NULL)
		*first = ms->nrows;
	ms->nrows += n;
	return KC_OK;
}

/* Rows ever added */
int64_t
kc_memstore_nrows(const KcMemStore *ms)
{
	return ms->nrows;
}

/* A row's coordinates */
const double *
kc_memstore_row(const KcMemStore *ms, int64_t handle)
{
	if (handle < 0 || handle >= ms->nrows)
		return NULL;
	return ms->x + handle * ms->nd;
}

/* The group of a row, or -1 */
int64_t
kc_memstore_row_group(const KcMemStore *ms, int64_t handle)
{
	if (handle < 0 || handle >= ms->nrows)
		return -1;
	return ms->rgroup[handle];
}

/* Take a row out of its group for good */
KcStatus
kc_memstore_remove(KcMemStore *ms, int64_t handle, int64_t *gid)
{
	if (handle < 0 || handle >= ms->nrows || ms->removed[handle])
		return KC_ERR_ARG;
	*gid = ms->rgroup[handle];
	unlink_row(ms, handle);
	ms->removed[handle] = 1;
	return KC_OK;
}

/* One more than the greatest group id handed out */
int64_t
kc_memstore_gid_limit(const KcMemStore *ms)
{
	return ms->ngid;
}

/* Group gid's summary as last put and its member count */
bool
kc_memstore_group(const KcMemStore *ms, int64_t gid, KcGroup *out, int64_t *members)
{
	if (!live(ms, gid))
		return false;
	copy_out(ms, gid, out);
	if (members != NULL)
		*members = ms->mcount[gid];
	return true;
}

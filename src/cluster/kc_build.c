/*
 * kc_build.c
 *		Static clustering of a whole set of rows into an empty store: the
 *		recursive median split that builds a watch, and the greedy
 *		k-member clustering of Byun et al. that I3M compares against.
 *
 * The median split cuts a part of m >= 2k rows at position m / 2 of its
 * rows ordered by the dimension of greatest spread, ties by the other
 * coordinates in order and then by handle, so that the order is total and
 * the result reproducible.  Spread is measured as the dimension's share of
 * a row's IL over the part (a numeric dimension's kc_weight-scaled extent,
 * a categorical one's lca height over the root's), ties by scaled extent:
 * a categorical part spanning two leaves of a flat hierarchy costs as much
 * as one spanning them all, and splitting by leaf numbers alone would
 * leave it so.  The cut then moves from the median to the nearer boundary
 * between values of that dimension that leaves k rows on each side, so
 * that equal values (a leaf, above all) stay together; on random mixed
 * data this took the IL from up to 4x the greedy clustering's to under 2x.
 * Both halves hold at least k rows; a part of fewer than 2k rows is a
 * group.  Each cut finds the median by quickselect (expected linear time,
 * with a fixed-seed pivot generator), so the build takes O(n log n)
 * expected.
 *
 * The greedy clustering seeds each group with the row furthest (by the IL
 * of the pair, Byun's distance) from the previous seed, grows it to k rows
 * by least IL growth, and gives each leftover row its best group: O(n^2).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ke_alloc.h"
#include "kc_int.h"

/* State of the median split */
typedef struct Build
{
	const KcSchema *s;
	const KcRow *rows;
	int64_t    *idx;			/* the rows, permuted into parts */
	int64_t    *cut;			/* each part's first position */
	int64_t		ncut;
	uint64_t	rng;			/* pivot choice */
} Build;

/* Check the arguments of a build: schema, store, rows */
static KcStatus
build_check(const KcSchema *s, const KcStore *st, const KcRow *rows, int64_t n)
{
	int64_t		i;
	KcStatus	rc;

	rc = kc_schema_check(s);
	if (rc == KC_OK)
		rc = kc_args_check(s, st);
	if (rc == KC_OK && (n < 0 || (n > 0 && rows == NULL)))
		rc = KC_ERR_ARG;
	for (i = 0; rc == KC_OK && i < n; i++)
		rc = kc_point_check(s, rows[i].x);
	return rc;
}

/* Order two rows by dimension d, then the other dimensions, then handle */
static int
row_order(const Build *b, int64_t i, int64_t j, int d)
{
	const double *x = b->rows[i].x;
	const double *y = b->rows[j].x;
	int			e;

	if (x[d] != y[d])
		return x[d] < y[d] ? -1 : 1;
	for (e = 0; e < b->s->ndims; e++)
		if (e != d && x[e] != y[e])
			return x[e] < y[e] ? -1 : 1;
	return (b->rows[i].handle > b->rows[j].handle) -
		(b->rows[i].handle < b->rows[j].handle);
}

/* Next pseudo-random number (xorshift64) */
static uint64_t
next_rng(Build *b)
{
	b->rng ^= b->rng << 13;
	b->rng ^= b->rng >> 7;
	b->rng ^= b->rng << 17;
	return b->rng;
}

/* Quickselect: put the row of rank want (within lo .. hi - 1) at want */
static void
select_rank(Build *b, int64_t lo, int64_t hi, int64_t want, int d)
{
	int64_t    *idx = b->idx;

	while (hi - lo > 1)
	{
		int64_t		p = lo + (int64_t) (next_rng(b) % (uint64_t) (hi - lo));
		int64_t		store = lo;
		int64_t		t;
		int64_t		i;

		t = idx[p];
		idx[p] = idx[hi - 1];
		idx[hi - 1] = t;
		for (i = lo; i < hi - 1; i++)
			if (row_order(b, idx[i], idx[hi - 1], d) < 0)
			{
				t = idx[i];
				idx[i] = idx[store];
				idx[store++] = t;
			}
		t = idx[store];
		idx[store] = idx[hi - 1];
		idx[hi - 1] = t;
		if (want == store)
			return;
		if (want < store)
			hi = store;
		else
			lo = store + 1;
	}
}

/* The dimension of greatest IL share (then scaled extent) over idx[lo .. hi - 1] */
static int
widest(const Build *b, int64_t lo, int64_t hi)
{
	const KcSchema *s = b->s;
	double		min[KC_MAX_DIMS];
	double		max[KC_MAX_DIMS];
	double		best_spread = -1.0;
	double		best_cost = 0.0;
	int			best = 0;
	int64_t		i;
	int			d;

	for (d = 0; d < s->ndims; d++)
	{
		min[d] = INFINITY;
		max[d] = -INFINITY;
	}
	for (i = lo; i < hi; i++)
		for (d = 0; d < s->ndims; d++)
		{
			double		v = b->rows[b->idx[i]].x[d];

			if (v < min[d])
				min[d] = v;
			if (v > max[d])
				max[d] = v;
		}
	for (d = 0; d < s->ndims; d++)
	{
		double		lo[KC_MAX_DIMS];
		double		hi[KC_MAX_DIMS];
		double		cost;
		double		spread = (max[d] - min[d]) * kc_weight(s, d);
		int			e;

		for (e = 0; e < s->ndims; e++)
			lo[e] = hi[e] = 0.0;
		lo[d] = min[d];
		hi[d] = max[d];
		cost = kc_row_cost(s, lo, hi);
		if (best_spread < 0.0 || cost > best_cost ||
			(cost == best_cost && spread > best_spread))
		{
			best_cost = cost;
			best_spread = spread;
			best = d;
		}
	}
	return best;
}

/*
 * Move the cut at mid (idx[lo .. hi - 1] selected around it) to a boundary
 * between values of dimension d, the nearer of the two around mid that leaves
 * k rows or more on each side; or leave it at mid when neither does.
 */
static int64_t
value_cut(Build *b, int64_t lo, int64_t mid, int64_t hi, int d)
{
	int64_t    *idx = b->idx;
	double		v = b->rows[idx[mid]].x[d];
	int64_t		k = b->s->k;
	int64_t		left = mid;		/* first row of value v, once packed */
	int64_t		right = mid;	/* first row past value v, once packed */
	int64_t		i;
	int64_t		t;
	bool		okl;
	bool		okr;

	for (i = mid - 1; i >= lo; i--)
		if (b->rows[idx[i]].x[d] == v)
		{
			left--;
			t = idx[i];
			idx[i] = idx[left];
			idx[left] = t;
		}
	for (i = mid; i < hi; i++)
		if (b->rows[idx[i]].x[d] == v)
		{
			t = idx[i];
			idx[i] = idx[right];
			idx[right] = t;
			right++;
		}
	okl = left - lo >= k && hi - left >= k;
	okr = right - lo >= k && hi - right >= k;
	if (okl && (!okr || mid - left <= right - mid))
		return left;
	return okr ? right : mid;
}

/* Cut idx[lo .. hi - 1] into parts of k to 2k - 1 rows, recording their starts */
static void
cut_parts(Build *b, int64_t lo, int64_t hi)
{
	int64_t		m = hi - lo;
	int64_t		mid;
	int			d;

	if (m < 2 * (int64_t) b->s->k)
	{
		b->cut[b->ncut++] = lo;
		return;
	}
	mid = lo + m / 2;
	d = widest(b, lo, hi);
	select_rank(b, lo, hi, mid, d);
	mid = value_cut(b, lo, mid, hi, d);
	cut_parts(b, lo, mid);
	cut_parts(b, mid, hi);
}

/* Split the rows at medians until every part holds k to 2k - 1 rows */
KcStatus
kc_build(const KcSchema *s, const KcStore *st, const KcRow *rows, int64_t n)
{
	Build		b;
	KcGroup    *g;
	int64_t		i;
	KcStatus	rc;

	rc = build_check(s, st, rows, n);
	if (rc != KC_OK || n == 0)
		return rc;
	b.s = s;
	b.rows = rows;
	b.ncut = 0;
	b.rng = 0x9E3779B97F4A7C15ULL;
	b.idx = ke_malloc((size_t) n * sizeof(int64_t));
	b.cut = ke_malloc((size_t) (n / s->k + 2) * sizeof(int64_t));
	g = kc_groups_alloc(1, s->ndims);
	if (b.idx == NULL || b.cut == NULL || g == NULL)
		rc = KC_ERR_NOMEM;
	else
	{
		for (i = 0; i < n; i++)
			b.idx[i] = i;
		cut_parts(&b, 0, n);
		b.cut[b.ncut] = n;
	}
	for (i = 0; rc == KC_OK && i < b.ncut; i++)
		rc = kc_write_part(s, st, -1, true, rows, b.idx + b.cut[i],
						   b.cut[i + 1] - b.cut[i], g);
	kc_groups_free(g);
	ke_free(b.cut);
	ke_free(b.idx);
	return rc;
}

/* Byun's distance of two rows: the cost of a row of their box */
static double
pair_cost(const KcSchema *s, const double *x, const double *y, double *scratch)
{
	double	   *lo = scratch;
	double	   *hi = scratch + s->ndims;
	int			d;

	for (d = 0; d < s->ndims; d++)
	{
		lo[d] = x[d] < y[d] ? x[d] : y[d];
		hi[d] = x[d] < y[d] ? y[d] : x[d];
	}
	return kc_row_cost(s, lo, hi);
}

/* State of the greedy clustering */
typedef struct Greedy
{
	const KcSchema *s;
	const KcRow *rows;
	int64_t		n;
	int64_t    *group;			/* [n] each row's group, -1 for none yet */
	KcGroup    *groups;			/* [n / k + 1] */
	int64_t		ngroups;
	double		scratch[2 * KC_MAX_DIMS];
} Greedy;

/* The unassigned row furthest from row from (ties to the lower handle) */
static int64_t
furthest(Greedy *gr, int64_t from)
{
	int64_t		best = -1;
	double		best_d = 0.0;
	int64_t		i;

	for (i = 0; i < gr->n; i++)
	{
		double		dist;

		if (gr->group[i] >= 0)
			continue;
		dist = pair_cost(gr->s, gr->rows[from].x, gr->rows[i].x, gr->scratch);
		if (best < 0 || dist > best_d ||
			(dist == best_d && gr->rows[i].handle < gr->rows[best].handle))
		{
			best = i;
			best_d = dist;
		}
	}
	return best;
}

/* The unassigned row of least IL growth for group g (ties to the lower handle) */
static int64_t
closest(Greedy *gr, const KcGroup *g)
{
	int64_t		best = -1;
	double		best_g = 0.0;
	int64_t		i;

	for (i = 0; i < gr->n; i++)
	{
		double		growth;

		if (gr->group[i] >= 0)
			continue;
		growth = kc_il_growth(gr->s, g, gr->rows[i].x, gr->scratch);
		if (best < 0 || growth < best_g ||
			(growth == best_g && gr->rows[i].handle < gr->rows[best].handle))
		{
			best = i;
			best_g = growth;
		}
	}
	return best;
}

/* Form the groups of k rows, then give each leftover row its best group */
static void
greedy_assign(Greedy *gr)
{
	const KcSchema *s = gr->s;
	int64_t		left = gr->n;
	int64_t		seed = 0;
	int64_t		i;

	/* Byun starts from any row: take the lowest handle */
	for (i = 1; i < gr->n; i++)
		if (gr->rows[i].handle < gr->rows[seed].handle)
			seed = i;
	while (left >= s->k)
	{
		KcGroup    *g = &gr->groups[gr->ngroups];
		int64_t		r = furthest(gr, seed);

		seed = r;
		kc_summary_reset(s, g);
		g->gid = gr->ngroups++;
		for (; r >= 0; r = g->n < s->k ? closest(gr, g) : -1)
		{
			gr->group[r] = g->gid;
			kc_summary_add(s, g, gr->rows[r].x);
			left--;
		}
	}
	for (i = 0; i < gr->n; i++)
	{
		if (gr->group[i] >= 0)
			continue;
		if (gr->ngroups == 0)
		{
			/* fewer than k rows in all: one group holds them */
			kc_summary_reset(s, &gr->groups[0]);
			gr->groups[0].gid = gr->ngroups++;
		}
		gr->group[i] = kc_choose(s, KC_I3M, gr->groups, (int) gr->ngroups,
								 gr->rows[i].x, gr->scratch);
		kc_summary_add(s, &gr->groups[gr->group[i]], gr->rows[i].x);
	}
}

/* Write the greedy groups into the store, splitting any of 2k rows or more */
static KcStatus
greedy_write(Greedy *gr, const KcStore *st)
{
	int64_t    *idx = ke_malloc((size_t) (gr->n + 1) * sizeof(int64_t));
	KcGroup    *g = kc_groups_alloc(1, gr->s->ndims);
	KcStatus	rc = KC_OK;
	int64_t		j;
	int64_t		i;

	if (idx == NULL || g == NULL)
		rc = KC_ERR_NOMEM;
	for (j = 0; rc == KC_OK && j < gr->ngroups; j++)
	{
		int64_t		count = 0;

		for (i = 0; i < gr->n; i++)
			if (gr->group[i] == j)
				idx[count++] = i;
		rc = kc_write_part(gr->s, st, -1, true, gr->rows, idx, count, g);
		if (rc == KC_OK && count >= 2 * (int64_t) gr->s->k)
			rc = kc_split(gr->s, st, g->gid);
	}
	kc_groups_free(g);
	ke_free(idx);
	return rc;
}

/* The greedy clustering of Byun et al. */
KcStatus
kc_build_greedy(const KcSchema *s, const KcStore *st, const KcRow *rows, int64_t n)
{
	Greedy		gr;
	int64_t		i;
	KcStatus	rc;

	rc = build_check(s, st, rows, n);
	if (rc != KC_OK || n == 0)
		return rc;
	gr.s = s;
	gr.rows = rows;
	gr.n = n;
	gr.ngroups = 0;
	gr.group = ke_malloc((size_t) n * sizeof(int64_t));
	gr.groups = kc_groups_alloc(n / s->k + 1, s->ndims);
	if (gr.group == NULL || gr.groups == NULL)
		rc = KC_ERR_NOMEM;
	else
	{
		for (i = 0; i < n; i++)
			gr.group[i] = -1;
		greedy_assign(&gr);
		rc = greedy_write(&gr, st);
	}
	kc_groups_free(gr.groups);
	ke_free(gr.group);
	return rc;
}

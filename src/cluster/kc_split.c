/*
 * kc_split.c
 *		Splitting a group of 2k rows or more into groups of k to 2k - 1.
 *
 * I3M's Split2kCluster: the row whose removal lowers the group's IL most
 * seeds a new group, then rows move one at a time, each the one that
 * minimises IL(old) + IL(new), until the new group holds k rows.  The
 * similar-B-tree keeps the k rows nearest the centre (in kc_weight-scaled
 * coordinates) and moves the rest.  A group may hold more than 2k rows
 * (a similar-B-tree merge, a break of IL_Optimization): then the piece
 * still too large is split again, until every piece holds k to 2k - 1.
 *
 * Removing one row from the old group changes its box only where that row
 * is the one least or greatest value of a dimension, so each step keeps
 * per dimension the least value, how many rows hold it and the next value
 * (likewise for the greatest): a step costs O(m * ndims) and a split
 * O(k * m * ndims) for a group of m rows, instead of O(k * m^2 * ndims).
 * Ties fall to the lower handle, the rows being sorted by handle.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ke_alloc.h"
#include "kc_int.h"

/* Per-dimension extremes of the rows of one piece, for removing a row */
typedef struct Extremes
{
	double	   *min1;			/* least value */
	double	   *min2;			/* least value above min1 (or +inf) */
	int64_t    *nmin;			/* rows holding min1 */
	double	   *max1;
	double	   *max2;
	int64_t    *nmax;
} Extremes;

/* Recompute the extremes of the rows of part p */
static void
extremes_compute(const KcSchema *s, const KcRowSet *rs, const int *part, int p,
				 Extremes *e)
{
	int			d;
	int64_t		i;

	for (d = 0; d < s->ndims; d++)
	{
		e->min1[d] = e->min2[d] = INFINITY;
		e->max1[d] = e->max2[d] = -INFINITY;
		e->nmin[d] = e->nmax[d] = 0;
	}
	for (i = 0; i < rs->n; i++)
	{
		const double *x = KC_ROWX(s, rs, i);

		if (part[i] != p)
			continue;
		for (d = 0; d < s->ndims; d++)
		{
			if (x[d] < e->min1[d])
			{
				e->min2[d] = e->min1[d];
				e->min1[d] = x[d];
				e->nmin[d] = 1;
			}
			else if (x[d] == e->min1[d])
				e->nmin[d]++;
			else if (x[d] < e->min2[d])
				e->min2[d] = x[d];
			if (x[d] > e->max1[d])
			{
				e->max2[d] = e->max1[d];
				e->max1[d] = x[d];
				e->nmax[d] = 1;
			}
			else if (x[d] == e->max1[d])
				e->nmax[d]++;
			else if (x[d] > e->max2[d])
				e->max2[d] = x[d];
		}
	}
}

/*
 * Move k rows of part cur (m rows) to part newp by Split2kCluster's rule.
 * buf holds 10 * ndims doubles and e's arrays.
 */
static void
carve_i3m(const KcSchema *s, const KcRowSet *rs, int *part, int cur, int newp,
		  int64_t m, double *buf, Extremes *e)
{
	int			nd = s->ndims;
	double	   *nlo = buf;
	double	   *nhi = buf + nd;
	double	   *olo = buf + 2 * nd;
	double	   *ohi = buf + 3 * nd;
	double	   *xlo = buf + 4 * nd;
	double	   *xhi = buf + 5 * nd;
	int64_t		nn;
	int64_t		i;
	int			d;

	for (d = 0; d < nd; d++)
	{
		nlo[d] = INFINITY;
		nhi[d] = -INFINITY;
	}
	for (nn = 0; nn < s->k; nn++, m--)
	{
		int64_t		best = -1;
		double		best_il = 0.0;

		/* each step reads the whole piece: O(k * m) in all, so it may be cancelled */
		ke_check_interrupts();
		extremes_compute(s, rs, part, cur, e);
		for (i = 0; i < rs->n; i++)
		{
			const double *x = KC_ROWX(s, rs, i);
			double		il;

			if (part[i] != cur)
				continue;
			for (d = 0; d < nd; d++)
			{
				olo[d] = (x[d] == e->min1[d] && e->nmin[d] == 1) ? e->min2[d] : e->min1[d];
				ohi[d] = (x[d] == e->max1[d] && e->nmax[d] == 1) ? e->max2[d] : e->max1[d];
				xlo[d] = x[d] < nlo[d] ? x[d] : nlo[d];
				xhi[d] = x[d] > nhi[d] ? x[d] : nhi[d];
			}
			il = (double) (m - 1) * kc_row_cost(s, olo, ohi) +
				(double) (nn + 1) * kc_row_cost(s, xlo, xhi);
			if (best < 0 || il < best_il)
			{
				best = i;
				best_il = il;
			}
		}
		part[best] = newp;
		for (d = 0; d < nd; d++)
		{
			const double *x = KC_ROWX(s, rs, best);

			if (x[d] < nlo[d])
				nlo[d] = x[d];
			if (x[d] > nhi[d])
				nhi[d] = x[d];
		}
	}
}

/* Scaled squared distances of a piece's rows */
typedef struct Near
{
	double		dist;
	int64_t		i;				/* row index, which orders like the handle */
} Near;

/* Order by distance, then by row */
static int
near_cmp(const void *a, const void *b)
{
	const Near *na = a;
	const Near *nb = b;

	if (na->dist != nb->dist)
		return na->dist < nb->dist ? -1 : 1;
	return (na->i > nb->i) - (na->i < nb->i);
}

/*
 * Keep in part cur (m rows) the k rows nearest its centre; the rest go to
 * part newp.  near holds m entries, centre ndims doubles.
 */
static void
carve_sbtree(const KcSchema *s, const KcRowSet *rs, int *part, int cur, int newp,
			 int64_t m, Near *near, double *centre)
{
	int64_t		i;
	int64_t		j = 0;
	int			d;

	for (d = 0; d < s->ndims; d++)
		centre[d] = 0.0;
	for (i = 0; i < rs->n; i++)
		if (part[i] == cur)
			for (d = 0; d < s->ndims; d++)
				centre[d] += KC_ROWX(s, rs, i)[d];
	for (d = 0; d < s->ndims; d++)
		centre[d] /= (double) m;
	for (i = 0; i < rs->n; i++)
	{
		double		dist = 0.0;

		if (part[i] != cur)
			continue;
		for (d = 0; d < s->ndims; d++)
		{
			double		t = (KC_ROWX(s, rs, i)[d] - centre[d]) * kc_weight(s, d);

			dist += t * t;
		}
		near[j].dist = dist;
		near[j].i = i;
		j++;
	}
	qsort(near, (size_t) m, sizeof(Near), near_cmp);
	for (j = s->k; j < m; j++)
		part[near[j].i] = newp;
}

/*
 * Assign every row of rs a part, 0 .. *nparts - 1, each of k to 2k - 1
 * rows (rs->n >= 2k).
 */
static KcStatus
partition(const KcSchema *s, const KcRowSet *rs, int *part, int *nparts)
{
	int			nd = s->ndims;
	double	   *buf = ke_malloc((size_t) 10 * nd * sizeof(double) +
								(size_t) 2 * nd * sizeof(int64_t));
	Near	   *near = NULL;
	Extremes	e;
	int64_t		m = rs->n;
	int			cur = 0;

	if (buf == NULL)
		return KC_ERR_NOMEM;
	if (s->method == KC_SBTREE && (near = ke_malloc((size_t) m * sizeof(Near))) == NULL)
	{
		ke_free(buf);
		return KC_ERR_NOMEM;
	}
	e.min1 = buf + 6 * nd;
	e.min2 = buf + 7 * nd;
	e.max1 = buf + 8 * nd;
	e.max2 = buf + 9 * nd;
	e.nmin = (int64_t *) (buf + 10 * nd);
	e.nmax = e.nmin + nd;
	memset(part, 0, (size_t) rs->n * sizeof(int));
	*nparts = 1;
	while (m >= 2 * (int64_t) s->k)
	{
		int			newp = (*nparts)++;

		/* I3M carves k rows off and goes on with the rest; the tree keeps k */
		if (s->method == KC_I3M)
			carve_i3m(s, rs, part, cur, newp, m, buf, &e);
		else
		{
			carve_sbtree(s, rs, part, cur, newp, m, near, buf);
			cur = newp;
		}
		m -= s->k;
	}
	ke_free(near);
	ke_free(buf);
	return KC_OK;
}

/*
 * Write one group: create it when gid < 0, place its rows when asked (or
 * created), and put its summary computed from those rows.  rows[idx[i]]
 * for i < count are its members (rows[i] when idx is NULL); scratch is a
 * summary whose arrays the call may use.
 */
KcStatus
kc_write_part(const KcSchema *s, const KcStore *st, int64_t gid, bool place,
			  const KcRow *rows, const int64_t *idx, int64_t count, KcGroup *scratch)
{
	int64_t		i;
	KcStatus	rc;

	if (gid < 0)
	{
		rc = st->create(st->arg, &gid);
		if (rc != KC_OK)
			return rc;
		place = true;
	}
	kc_summary_reset(s, scratch);
	scratch->gid = gid;
	for (i = 0; i < count; i++)
	{
		const KcRow *row = &rows[idx != NULL ? idx[i] : i];

		if (place && (rc = st->place(st->arg, row, gid)) != KC_OK)
			return rc;
		kc_summary_add(s, scratch, row->x);
	}
	return st->put(st->arg, scratch);
}

/* Write the parts of a split: part 0 stays group gid, the others are new */
static KcStatus
write_parts(const KcSchema *s, const KcStore *st, int64_t gid, const KcRowSet *rs,
			const int *part, int nparts)
{
	KcRow	   *rows = ke_malloc((size_t) rs->n * sizeof(KcRow));
	int64_t    *idx = ke_malloc((size_t) rs->n * sizeof(int64_t));
	KcGroup    *g = kc_groups_alloc(1, s->ndims);
	KcStatus	rc = KC_OK;
	int64_t		i;
	int			p;

	if (rows == NULL || idx == NULL || g == NULL)
		rc = KC_ERR_NOMEM;
	for (i = 0; rc == KC_OK && i < rs->n; i++)
	{
		rows[i].handle = rs->handle[i];
		rows[i].x = KC_ROWX(s, rs, i);
	}
	/* the new groups first, so that the old one's members are settled */
	for (p = 1; rc == KC_OK && p <= nparts; p++)
	{
		int			q = p % nparts;
		int64_t		count = 0;

		for (i = 0; i < rs->n; i++)
			if (part[i] == q)
				idx[count++] = i;
		rc = kc_write_part(s, st, q == 0 ? gid : -1, false, rows, idx, count, g);
	}
	kc_groups_free(g);
	ke_free(idx);
	ke_free(rows);
	return rc;
}

/* Split group gid, which holds 2k rows or more, into groups of k to 2k - 1 */
KcStatus
kc_split(const KcSchema *s, const KcStore *st, int64_t gid)
{
	KcRowSet	rs;
	int		   *part;
	int			nparts = 1;
	KcStatus	rc;

	rc = kc_rowset_load(s, st, gid, &rs);
	if (rc != KC_OK)
		return rc;
	part = ke_malloc((size_t) (rs.n > 0 ? rs.n : 1) * sizeof(int));
	if (part == NULL)
	{
		kc_rowset_free(&rs);
		return KC_ERR_NOMEM;
	}
	memset(part, 0, (size_t) rs.n * sizeof(int));
	if (rs.n >= 2 * (int64_t) s->k)
		rc = partition(s, &rs, part, &nparts);
	if (rc == KC_OK)
		rc = write_parts(s, st, gid, &rs, part, nparts);
	ke_free(part);
	kc_rowset_free(&rs);
	return rc;
}

/*
 * kc_cluster.c
 *		Incremental maintenance of k-anonymous groups: I3M+ and I3M-
 *		(Truta and Campan), the similar-B-tree's InsertLeafNode and
 *		DeleteLeafNode, and I3M's IL_Optimization.
 *
 * Invariant, kept by every operation: every group holds k to 2k - 1 rows,
 * except the one group of a table of fewer than 2k rows, which may hold
 * fewer than k.  An insert joins one group and splits it if it reaches 2k;
 * a delete leaves one group short of k at most, which is dispersed (I3M,
 * each row to its best group) or merged whole into the group of nearest
 * centre (similar-B-tree), splitting what reaches 2k; IL_Optimization
 * breaks a group into groups that already cover its rows, splitting what
 * reaches 2k.  Splits cut pieces of k to 2k - 1 rows, so the invariant
 * holds after each of them.
 *
 * The core never trusts the order in which the store lists rows: members
 * are sorted by handle, and every choice is broken by IL, then group size,
 * then group id, so a run is reproducible whatever the store.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ke_alloc.h"
#include "kc_int.h"

/* Ask the store for the groups nearest x, checking what it answers */
static KcStatus
nearest(const KcSchema *s, const KcStore *st, const double *x, int max,
		int64_t except, KcGroup *out, int *found)
{
	KcStatus	rc;

	*found = 0;
	rc = st->nearest(st->arg, x, max, except, out, found);
	if (rc != KC_OK)
		return rc;
	(void) s;
	if (*found < 0 || *found > max)
		return KC_ERR_CORRUPT;
	return KC_OK;
}

/*
 * Add the row x (handle) to the best of the groups nearest it, other than
 * except, and split that group if it reaches 2k.  cand holds s->candidates
 * summaries; scratch 2 * ndims doubles.  When the store has no group, a
 * new one takes the row, unless must_join (a row of a dispersed group).
 */
static KcStatus
join_best(const KcSchema *s, const KcStore *st, const KcRow *row, int64_t except,
		  bool must_join, KcGroup *cand, double *scratch)
{
	KcGroup    *g;
	int			found;
	KcStatus	rc;

	rc = nearest(s, st, row->x, s->candidates, except, cand, &found);
	if (rc != KC_OK)
		return rc;
	if (found == 0)
	{
		if (must_join)
			return KC_ERR_CORRUPT;
		return kc_write_part(s, st, -1, true, row, NULL, 1, cand);
	}
	g = &cand[kc_choose(s, s->method, cand, found, row->x, scratch)];
	kc_summary_add(s, g, row->x);
	rc = st->place(st->arg, row, g->gid);
	if (rc != KC_OK)
		return rc;
	if (g->n >= 2 * (int64_t) s->k)
		return kc_split(s, st, g->gid);
	return st->put(st->arg, g);
}

/* Add a row (not yet a member of any group) to the best group */
KcStatus
kc_insert(const KcSchema *s, const KcStore *st, const KcRow *row)
{
	KcGroup    *cand;
	double	   *scratch;
	KcStatus	rc;

	rc = kc_args_check(s, st);
	if (rc == KC_OK && row == NULL)
		rc = KC_ERR_ARG;
	if (rc == KC_OK)
		rc = kc_point_check(s, row->x);
	if (rc != KC_OK)
		return rc;
	cand = kc_groups_alloc(s->candidates, s->ndims);
	scratch = ke_malloc((size_t) 2 * s->ndims * sizeof(double));
	if (cand == NULL || scratch == NULL)
		rc = KC_ERR_NOMEM;
	else
		rc = join_best(s, st, row, -1, false, cand, scratch);
	ke_free(scratch);
	kc_groups_free(cand);
	return rc;
}

/* I3M's DisperseLessKCluster: each row of gid to its best other group */
static KcStatus
disperse(const KcSchema *s, const KcStore *st, int64_t gid, const KcRowSet *rs)
{
	KcGroup    *cand = kc_groups_alloc(s->candidates, s->ndims);
	double	   *scratch = ke_malloc((size_t) 2 * s->ndims * sizeof(double));
	KcStatus	rc = KC_OK;
	int64_t		i;

	if (cand == NULL || scratch == NULL)
		rc = KC_ERR_NOMEM;
	for (i = 0; rc == KC_OK && i < rs->n; i++)
	{
		KcRow		row;

		row.handle = rs->handle[i];
		row.x = KC_ROWX(s, rs, i);
		rc = join_best(s, st, &row, gid, true, cand, scratch);
	}
	ke_free(scratch);
	kc_groups_free(cand);
	if (rc == KC_OK)
		rc = st->drop(st->arg, gid);
	return rc;
}

/* DeleteLeafNode's merge: every row of g into the group of nearest centre */
static KcStatus
merge(const KcSchema *s, const KcStore *st, const KcGroup *g, const KcRowSet *rs)
{
	KcGroup    *t = kc_groups_alloc(1, s->ndims);
	double	   *centre = ke_malloc((size_t) s->ndims * sizeof(double));
	KcStatus	rc = KC_OK;
	int			found = 0;
	int64_t		i;
	int			d;

	if (t == NULL || centre == NULL)
		rc = KC_ERR_NOMEM;
	for (d = 0; rc == KC_OK && d < s->ndims; d++)
		centre[d] = g->sum[d] / (double) g->n;
	if (rc == KC_OK)
		rc = nearest(s, st, centre, 1, g->gid, t, &found);
	if (rc == KC_OK && found != 1)
		rc = KC_ERR_CORRUPT;
	for (i = 0; rc == KC_OK && i < rs->n; i++)
	{
		KcRow		row;

		row.handle = rs->handle[i];
		row.x = KC_ROWX(s, rs, i);
		rc = st->place(st->arg, &row, t->gid);
		kc_summary_add(s, t, row.x);
	}
	if (rc == KC_OK)
		rc = t->n >= 2 * (int64_t) s->k ? kc_split(s, st, t->gid) : st->put(st->arg, t);
	if (rc == KC_OK)
		rc = st->drop(st->arg, g->gid);
	ke_free(centre);
	kc_groups_free(t);
	return rc;
}

/* Account for a row that has left group gid */
KcStatus
kc_delete(const KcSchema *s, const KcStore *st, int64_t gid, const double *x)
{
	KcRowSet	rs;
	KcGroup    *g;
	int64_t		ngroups = 0;
	int64_t		i;
	KcStatus	rc;

	/* x only documents the change: the members are the truth */
	rc = kc_args_check(s, st);
	if (rc == KC_OK && (x == NULL || gid < 0))
		rc = KC_ERR_ARG;
	if (rc == KC_OK)
		rc = kc_rowset_load(s, st, gid, &rs);
	if (rc != KC_OK)
		return rc;
	if (rs.n == 0)
	{
		kc_rowset_free(&rs);
		return st->drop(st->arg, gid);
	}
	g = kc_groups_alloc(1, s->ndims);
	if (g == NULL)
	{
		kc_rowset_free(&rs);
		return KC_ERR_NOMEM;
	}
	kc_summary_reset(s, g);
	g->gid = gid;
	for (i = 0; i < rs.n; i++)
		kc_summary_add(s, g, KC_ROWX(s, &rs, i));
	if (g->n < s->k)
		rc = st->count(st->arg, &ngroups);
	if (rc == KC_OK)
	{
		/* a lone group keeps its rows, however few */
		if (g->n >= s->k || ngroups <= 1)
			rc = st->put(st->arg, g);
		else if (s->method == KC_I3M)
			rc = disperse(s, st, gid, &rs);
		else
			rc = merge(s, st, g, &rs);
	}
	kc_groups_free(g);
	kc_rowset_free(&rs);
	return rc;
}

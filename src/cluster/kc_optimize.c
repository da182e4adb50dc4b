/*
 * kc_optimize.c
 *		I3M's IL_Optimization (Truta and Campan, Figure 3): break totally
 *		covered groups when that lowers the total information loss.
 *
 * A row is covered by another group when adding it leaves that group's
 * generalization unchanged (Definition 6): the store's covering answers the
 * groups whose published box (numeric [lo, hi], categorical the leaves under
 * the lowest common ancestor) contains it.  A group is totally covered when each
 * of its rows is covered by some other group (Definition 7).  Breaking it
 * moves every row to a group covering it: no published box changes, so
 * each move costs the target's IL per row and the break gains the group's own IL;
 * ComputeOptimalBreak sends each row to the covering group of least IL per
 * row, counting the rows already sent there by the same break.  A break is
 * applied only when it lowers the total (Definition 9, "interesting").
 * Targets that reach 2k rows are split, which never raises IL: a piece's
 * box lies inside its group's.
 *
 * The totally covered groups are found once, then broken most costly
 * first; each is checked again when its turn comes, since earlier breaks
 * may have split the groups that covered it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ke_alloc.h"
#include "kc_int.h"

/* Covering groups asked of the store per row, at least */
#define KC_COVER_MIN	16

/* A totally covered group and its IL */
typedef struct Covered
{
	int64_t		gid;
	double		il;
} Covered;

/* Most costly first, then by id */
static int
covered_cmp(const void *a, const void *b)
{
	const Covered *ca = a;
	const Covered *cb = b;

	if (ca->il != cb->il)
		return ca->il > cb->il ? -1 : 1;
	return (ca->gid > cb->gid) - (ca->gid < cb->gid);
}

/* The working state of one break */
typedef struct Break
{
	KcRowSet	rs;				/* the rows of the group to break */
	KcGroup    *cover;			/* [maxc] the store's answer for one row */
	KcGroup    *target;			/* [rs.n] targets, with the rows sent so far */
	double	   *before;			/* [rs.n] each target's IL before the break */
	int		   *to;				/* [rs.n] each row's target */
	int			ntarget;
	double		scratch[2 * KC_MAX_DIMS];
} Break;

/* The number of covering groups to ask for */
static int
cover_max(const KcSchema *s)
{
	return s->candidates > KC_COVER_MIN ? s->candidates : KC_COVER_MIN;
}

/* Send row i to the covering group of least IL growth; false when none covers it */
static KcStatus
send_row(const KcSchema *s, const KcStore *st, int64_t gid, Break *b, int64_t i,
		 bool *covered)
{
	const double *x = KC_ROWX(s, &b->rs, i);
	const KcGroup *best = NULL;
	double		best_growth = 0.0;
	int			found = 0;
	int			c;
	int			j;
	KcStatus	rc;

	rc = st->covering(st->arg, x, cover_max(s), gid, b->cover, &found);
	if (rc != KC_OK)
		return rc;
	if (found < 0 || found > cover_max(s))
		return KC_ERR_CORRUPT;
	*covered = found > 0;
	for (c = 0; c < found; c++)
	{
		const KcGroup *g = &b->cover[c];
		double		growth;

		/* a group already chosen by this break counts its new rows */
		for (j = 0; j < b->ntarget; j++)
			if (b->target[j].gid == g->gid)
				g = &b->target[j];
		growth = kc_il_growth(s, g, x, b->scratch);
		if (best == NULL || growth < best_growth ||
			(growth == best_growth &&
			 (g->n < best->n || (g->n == best->n && g->gid < best->gid))))
		{
			best = g;
			best_growth = growth;
		}
	}
	if (best == NULL)
		return KC_OK;
	for (j = 0; j < b->ntarget; j++)
		if (b->target[j].gid == best->gid)
			break;
	if (j == b->ntarget)
	{
		kc_summary_copy(s, &b->target[j], best);
		b->before[j] = kc_il(s, best);
		b->ntarget++;
	}
	kc_summary_add(s, &b->target[j], x);
	b->to[i] = j;
	return KC_OK;
}

/* Move the rows to their targets, split or put the targets, drop the group */
static KcStatus
apply_break(const KcSchema *s, const KcStore *st, int64_t gid, Break *b)
{
	KcStatus	rc = KC_OK;
	int64_t		i;
	int			j;

	for (i = 0; rc == KC_OK && i < b->rs.n; i++)
	{
		KcRow		row;

		row.handle = b->rs.handle[i];
		row.x = KC_ROWX(s, &b->rs, i);
		rc = st->place(st->arg, &row, b->target[b->to[i]].gid);
	}
	for (j = 0; rc == KC_OK && j < b->ntarget; j++)
	{
		if (b->target[j].n >= 2 * (int64_t) s->k)
			rc = kc_split(s, st, b->target[j].gid);
		else
			rc = st->put(st->arg, &b->target[j]);
	}
	if (rc == KC_OK)
		rc = st->drop(st->arg, gid);
	return rc;
}

/* ComputeOptimalBreak for group gid, applied when it lowers the total IL */
static KcStatus
try_break(const KcSchema *s, const KcStore *st, int64_t gid, bool *broken)
{
	Break		b;
	bool		covered = true;
	double		il_group;
	double		before;
	double		after = 0.0;
	int64_t		i;
	int			j;
	KcStatus	rc;

	*broken = false;
	memset(&b, 0, sizeof(b));
	rc = kc_rowset_load(s, st, gid, &b.rs);
	if (rc != KC_OK)
		return rc;
	b.cover = kc_groups_alloc(cover_max(s), s->ndims);
	b.target = kc_groups_alloc(b.rs.n, s->ndims);
	b.before = ke_malloc((size_t) (b.rs.n + 1) * sizeof(double));
	b.to = ke_malloc((size_t) (b.rs.n + 1) * sizeof(int));
	if (b.cover == NULL || b.target == NULL || b.before == NULL || b.to == NULL)
		rc = KC_ERR_NOMEM;
	for (i = 0; rc == KC_OK && covered && i < b.rs.n; i++)
		rc = send_row(s, st, gid, &b, i, &covered);
	if (rc == KC_OK && covered && b.rs.n > 0)
	{
		KcGroup    *g = kc_groups_alloc(1, s->ndims);

		if (g == NULL)
			rc = KC_ERR_NOMEM;
		else
		{
			kc_summary_reset(s, g);
			for (i = 0; i < b.rs.n; i++)
				kc_summary_add(s, g, KC_ROWX(s, &b.rs, i));
			il_group = kc_il(s, g);
			kc_groups_free(g);
			before = il_group;
			for (j = 0; j < b.ntarget; j++)
			{
				before += b.before[j];
				after += kc_il(s, &b.target[j]);
			}
			/* a gain lost in rounding is no gain: no churn */
			if (after < before - KC_IL_EPSILON * (1.0 + before))
			{
				rc = apply_break(s, st, gid, &b);
				*broken = rc == KC_OK;
			}
		}
	}
	ke_free(b.to);
	ke_free(b.before);
	kc_groups_free(b.target);
	kc_groups_free(b.cover);
	kc_rowset_free(&b.rs);
	return rc;
}

/* Whether every row of group gid lies in the box of another group */
static KcStatus
totally_covered(const KcSchema *s, const KcStore *st, int64_t gid, KcGroup *one,
				bool *covered, double *il)
{
	KcRowSet	rs;
	int64_t		i;
	KcStatus	rc;

	*covered = false;
	rc = kc_rowset_load(s, st, gid, &rs);
	if (rc != KC_OK)
		return rc;
	*covered = rs.n > 0;
	for (i = 0; rc == KC_OK && *covered && i < rs.n; i++)
	{
		int			found = 0;

		rc = st->covering(st->arg, KC_ROWX(s, &rs, i), 1, gid, one, &found);
		if (rc == KC_OK && (found < 0 || found > 1))
			rc = KC_ERR_CORRUPT;
		*covered = found > 0;
	}
	if (rc == KC_OK && *covered)
	{
		kc_summary_reset(s, one);
		for (i = 0; i < rs.n; i++)
			kc_summary_add(s, one, KC_ROWX(s, &rs, i));
		*il = kc_il(s, one);
	}
	kc_rowset_free(&rs);
	return rc;
}

/* The totally covered groups, most costly first */
static KcStatus
find_covered(const KcSchema *s, const KcStore *st, Covered **out, int64_t *nout)
{
	const int64_t *gids;
	int64_t    *ids = NULL;
	int64_t		n = 0;
	int64_t		i;
	KcGroup    *one;
	KcStatus	rc;

	*out = NULL;
	*nout = 0;
	rc = st->all(st->arg, &gids, &n);
	if (rc != KC_OK)
		return rc;
	if (n < 0 || (n > 0 && gids == NULL))
		return KC_ERR_CORRUPT;
	/* the store's array lives only until its next call of all */
	ids = ke_malloc((size_t) (n + 1) * sizeof(int64_t));
	*out = ke_malloc((size_t) (n + 1) * sizeof(Covered));
	one = kc_groups_alloc(1, s->ndims);
	if (ids == NULL || *out == NULL || one == NULL)
		rc = KC_ERR_NOMEM;
	else
		memcpy(ids, gids, (size_t) n * sizeof(int64_t));
	for (i = 0; rc == KC_OK && i < n; i++)
	{
		bool		covered;
		double		il = 0.0;

		rc = totally_covered(s, st, ids[i], one, &covered, &il);
		if (rc == KC_OK && covered)
		{
			(*out)[*nout].gid = ids[i];
			(*out)[*nout].il = il;
			(*nout)++;
		}
	}
	if (rc == KC_OK)
		qsort(*out, (size_t) *nout, sizeof(Covered), covered_cmp);
	kc_groups_free(one);
	ke_free(ids);
	return rc;
}

/* I3M's IL_Optimization: break totally covered groups when it lowers IL */
KcStatus
kc_optimize(const KcSchema *s, const KcStore *st, int64_t *broken)
{
	Covered    *list = NULL;
	int64_t		n = 0;
	int64_t		i;
	KcStatus	rc;

	rc = kc_args_check(s, st);
	if (rc == KC_OK && broken == NULL)
		rc = KC_ERR_ARG;
	if (rc != KC_OK)
		return rc;
	*broken = 0;
	rc = find_covered(s, st, &list, &n);
	for (i = 0; rc == KC_OK && i < n; i++)
	{
		bool		done = false;

		rc = try_break(s, st, list[i].gid, &done);
		if (done)
			(*broken)++;
	}
	ke_free(list);
	return rc;
}

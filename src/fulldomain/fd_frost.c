/*
 * fd_frost.c
 *		PrivacyFrost2's full-domain search (Kiyomoto and Miyake, CD-ARES
 *		2014, Section 5 and Fig. 3): pre-computation, top-down search
 *		guided by the priorities, then the extension that alternates a
 *		second top-down step with a bottom-up walk.
 *
 * Attributes are visited in the order of the paper's Sort: by increasing
 * priority, so that "for i = n to 1" visits the most important attribute
 * first.  Levels are the caller's (0 = leaves); the paper's
 * De-Generalization lowers our level by one, Generalization raises it.
 *
 * Pre-computation starts every attribute at its leaves and generalizes it
 * until, alone, it is (k + p)-anonymous (the subset property: a k-anonymous
 * table is k-anonymous on each attribute), then generalizes every
 * attribute one level per round until the table qualifies.  The top-down
 * search then repeatedly takes the qualifying one-step de-generalization
 * of the highest score, skipping a candidate whose score bound cannot beat
 * the round's best (Section 5.3).  The reading of every ambiguous step is
 * listed at the top of fd_score.c (items 11 to 13 and 16).
 */
#include <stdlib.h>
#include <string.h>

#include "ke_alloc.h"
#include "fd_int.h"

/* Attributes by increasing priority, stable (the paper's Sort) */
void
fd_priority_order(const FdContext *ctx, int *order)
{
	int			i;
	int			j;

	for (i = 0; i < ctx->nqi; i++)
	{
		int			a = i;

		for (j = i; j > 0 && ctx->p.priority[order[j - 1]] > ctx->p.priority[a]; j--)
			order[j] = order[j - 1];
		order[j] = a;
	}
}

/*
 * Whether attribute a alone at level l leaves more than max_suppressed rows
 * in values shared by fewer than k + p rows; -1 when out of memory
 */
static int
attribute_fails(const FdContext *ctx, int a, int l)
{
	const uint32_t *lm = ctx->map[a][l];
	int64_t		need = (int64_t) ctx->p.k + ctx->p.p;
	int64_t		small = 0;
	int		   *count;
	uint32_t	c;
	int			r;

	if ((count = ke_calloc(ctx->ncodes[a][l], sizeof(int))) == NULL)
		return -1;
	for (r = 0; r < ctx->nrows; r++)
		count[lm[ctx->qi[a][r]]]++;
	for (c = 0; c < ctx->ncodes[a][l]; c++)
		if (count[c] > 0 && count[c] < need)
			small += count[c];
	ke_free(count);
	return small > ctx->p.max_suppressed ? 1 : 0;
}

/* Pre-computation (Section 5.2): the initial qualifying table T^I */
static FdStatus
precompute(FdContext *ctx, int *lev, FdMeasures *cur, FdError *err)
{
	FdStatus	st;
	int			a;

	for (a = 0; a < ctx->nqi; a++)
	{
		int			f;

		lev[a] = 0;
		while (lev[a] < ctx->maxlev[a] && (f = attribute_fails(ctx, a, lev[a])) != 0)
		{
			if (f < 0)
				return FD_ERR_NOMEM;
			lev[a]++;
		}
	}
	for (;;)
	{
		bool		moved = false;

		if ((st = fd_check(ctx, lev, cur)) != FD_OK)
			return st;
		if (cur->qualifies)
			return FD_OK;
		for (a = 0; a < ctx->nqi; a++)
			if (lev[a] < ctx->maxlev[a])
			{
				lev[a]++;
				moved = true;
			}
		if (!moved)
		{
			fd_seterr(err, FD_ERR_NO_SOLUTION, -1,
					  "even the most general table allowed fails: %d rows of failing groups, %d may be suppressed",
					  cur->suppressed, ctx->p.max_suppressed);
			return FD_ERR_NO_SOLUTION;
		}
	}
}

/* Check the node lev with attribute a moved by delta levels */
static FdStatus
check_moved(FdContext *ctx, int *lev, int a, int delta, FdMeasures *m)
{
	FdStatus	st;

	lev[a] += delta;
	st = fd_check(ctx, lev, m);
	lev[a] -= delta;
	return st;
}

/* Top-down search (Section 5.3): best qualifying de-generalization until none */
static FdStatus
top_down(FdContext *ctx, const int *order, int *lev, FdMeasures *cur)
{
	for (;;)
	{
		FdMeasures	m;
		FdMeasures	bm;
		double		best = cur->score;
		int			best_a = -1;
		int			i;

		for (i = ctx->nqi - 1; i >= 0; i--)
		{
			int			a = order[i];
			FdStatus	st;

			if (lev[a] == 0)
				continue;
			if (ctx->monotone && fd_score_bound_degen(ctx, cur, lev, a) <= best)
			{
				ctx->counters.bound_skips++;
				continue;
			}
			if ((st = check_moved(ctx, lev, a, -1, &m)) != FD_OK)
				return st;
			if (m.qualifies && m.score > best)
			{
				best = m.score;
				best_a = a;
				bm = m;
			}
		}
		if (best_a < 0)
			return FD_OK;
		lev[best_a]--;
		*cur = bm;
	}
}

/*
 * The bottom-up walk from tt (Fig. 3): true in *improved when it found a
 * qualifying node scoring above cur, which then replaces lev and cur
 */
static FdStatus
bottom_up(FdContext *ctx, const int *order, int *tt, int *lev, FdMeasures *cur,
		  bool *improved)
{
	*improved = false;
	for (;;)
	{
		FdMeasures	m;
		FdMeasures	okm;
		double		ok_s = cur->score;
		double		ng_s = cur->score;
		int			ok_a = -1;
		int			ng_a = -1;
		int			i;

		for (i = 0; i < ctx->nqi; i++)
		{
			int			a = order[i];
			FdStatus	st;

			if (tt[a] >= ctx->maxlev[a])
				continue;
			if ((st = check_moved(ctx, tt, a, 1, &m)) != FD_OK)
				return st;
			if (m.qualifies && m.score > ok_s)
			{
				ok_s = m.score;
				ok_a = a;
				okm = m;
			}
			else if (!m.qualifies && m.score > ng_s)
			{
				ng_s = m.score;
				ng_a = a;
			}
		}
		if (ok_a >= 0)
		{
			tt[ok_a]++;
			memcpy(lev, tt, sizeof(int) * ctx->nqi);
			*cur = okm;
			*improved = true;
			return FD_OK;
		}
		if (ng_a < 0)
			return FD_OK;
		tt[ng_a]++;
	}
}

/* The extension (Section 5.4, steps 1 to 3): until no restart improves s */
static FdStatus
extension(FdContext *ctx, const int *order, int *lev, FdMeasures *cur)
{
	for (;;)
	{
		FdMeasures	m;
		int			tt[FD_MAX_QI];
		double		tts = cur->score;
		int			tt_a = -1;
		bool		improved;
		FdStatus	st;
		int			i;

		/* second top-down: the best-scoring one-step de-generalization */
		for (i = ctx->nqi - 1; i >= 0; i--)
		{
			int			a = order[i];

			if (lev[a] == 0)
				continue;
			if ((st = check_moved(ctx, lev, a, -1, &m)) != FD_OK)
				return st;
			if (m.score > tts)
			{
				tts = m.score;
				tt_a = a;
			}
		}
		if (tt_a < 0)
			return FD_OK;
		memcpy(tt, lev, sizeof(int) * ctx->nqi);
		tt[tt_a]--;
		if ((st = bottom_up(ctx, order, tt, lev, cur, &improved)) != FD_OK)
			return st;
		if (!improved)
			return FD_OK;
	}
}

/* PrivacyFrost2's full-domain node: the basic search, then the extension */
FdStatus
fd_frost(FdContext *ctx, const FdSearchOpts *o, int *node, FdError *err)
{
	FdMeasures	cur;
	int			order[FD_MAX_QI];
	FdStatus	st;

	fd_priority_order(ctx, order);
	if ((st = precompute(ctx, node, &cur, err)) != FD_OK)
		return st;
	if ((st = top_down(ctx, order, node, &cur)) != FD_OK)
		return st;
	if (o->extension)
		st = extension(ctx, order, node, &cur);
	return st;
}

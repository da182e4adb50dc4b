/*
 * fd_score.c
 *		PrivacyFrost2's three scoring functions (Kiyomoto and Miyake,
 *		CD-ARES 2014, Section 6) and the upper bounds the searches prune
 *		with.
 *
 *		basic		S = sum over a of v(a) e(a)
 *		eta-based	S = sum over a of v(a) eta(e(a)),
 *					eta(x) = 2 if x > d, 1 if d/2 < x <= d, 0 if x <= d/2
 *		log-based	S = max over a of v(a) log e(a) / log e_b(a)
 *
 * e(a) is the number of distinct values of attribute a in the generalized
 * table and e_b(a) its number before anonymization.  Each function is
 * non-decreasing in every e(a), so a score computed with each e(a)
 * replaced by something no smaller bounds the true one from above.
 *
 * Where the paper is ambiguous, and what this module does:
 *
 *	1. Direction.  The paper always keeps the table of the highest score
 *	   ("Score(T) > s"), for all three functions; so does this module.
 *	2. Log-based: printed as a maximum over attributes, not a sum, and
 *	   described as making the top-priority attribute's precision "of prime
 *	   importance".  We implement the maximum as printed.  It makes the
 *	   score flat in every attribute but the one attaining the maximum, so
 *	   PrivacyFrost2's strict "greater than" moves rarely under it.
 *	3. Log-based when e_b(a) <= 1 (a constant column) the ratio is 0/0; we
 *	   count the term as 0.  When e(a) = 0 (no published row) the term is 0.
 *	4. e_b(a) "before anonymization": the distinct leaf values among the
 *	   rows the search runs on (after pre-sampling), not the size of the
 *	   hierarchy's leaf level.
 *	5. eta's d is "a constant parameter" with no value given.  FdParams.
 *	   eta_d > 0 is used for every attribute; otherwise each attribute gets
 *	   d(a) = e_b(a) / 2, so that eta = 2 keeps more than half the original
 *	   distinct values and eta = 1 more than a quarter (our choice).
 *	6. e(a) counts values among published rows: rows of suppressed groups
 *	   do not count.  After partial-domain de-generalization a column mixes
 *	   levels; e(a) then counts distinct (level, code) pairs, so a tree node
 *	   reachable at two levels (the root of a short path) counts twice.
 *	7. Priorities are "positive integers"; any positive real is accepted.
 *	8. The skip rule of Section 5.3, delta_s = (b_{w+1} - e(a)) v(a) with
 *	   b the number of hierarchy nodes at the finer level, is a bound for
 *	   the basic function only.  We use, for all three, the score with e(a)
 *	   replaced by the distinct codes of the finer level over all rows (no
 *	   larger than b, still an upper bound), and skip a candidate whose
 *	   bound cannot beat the round's best.  The bound assumes the other
 *	   e(b) cannot grow, which holds only when de-generalizing cannot shrink
 *	   the suppressed rows (see fd_optimal.c); otherwise nothing is skipped.
 *	9. Levels.  The paper numbers levels from the root (0) down; the caller
 *	   numbers them from the leaves (0) up.  The paper's "minimum level"
 *	   w^M, the coarsest a user allows, is FdParams.max_level; its "lowest
 *	   level" w^L is our level 0.
 *	10. Check_{k,l,c,t} shares one l between distinct and recursive
 *	   diversity (c given or not); FdParams keeps them apart (l_distinct;
 *	   rec_c and rec_l).  Suppression is not in the paper; a node qualifies
 *	   when its failing groups hold at most max_suppressed rows and some row
 *	   is published.  t-closeness compares with the distribution of all rows
 *	   searched, suppressed or not.
 *	11. Pre-computation step 1 generalizes an attribute while "Check(a) <
 *	   k + p"; with a suppression budget we generalize while the rows whose
 *	   value (at the current level) is shared by fewer than k + p rows
 *	   outnumber max_suppressed, which is the same test when the budget is
 *	   0 and a necessary condition for the whole table otherwise.
 *	12. Pre-computation step 2 loops "while Check = NG and all w > w^M";
 *	   the text says each attribute is generalized once per round but never
 *	   beyond w^M.  We generalize, each round, every attribute still below
 *	   its max_level, and fail only when the node where none can move fails.
 *	13. The extension (Fig. 3): T^T is the best-scoring one-step
 *	   de-generalization of T^G whose score exceeds s.  From T^T the
 *	   bottom-up walk tries every one-step generalization (least priority
 *	   first); the best qualifying one scoring above s replaces T^G and the
 *	   extension starts again; if none qualifies, the walk moves to the
 *	   best-scoring non-qualifying one, provided it still scores above s
 *	   (Fig. 3 compares with s', which we read as the score to beat, s);
 *	   else the extension stops.  Each restart raises s, so it ends.
 *	14. Partial-domain de-generalization: "selects one group ... and
 *	   modifies one attribute ... to satisfy the predefined anonymity
 *	   condition".  We visit the published groups in order and, for each,
 *	   the attributes from the highest priority; a group is split one level
 *	   finer on an attribute when every part passes every criterion (no new
 *	   suppression) and the table's score does not drop, and the parts are
 *	   visited in turn.  The paper says the resulting score is higher; under
 *	   item 6 a split can leave it unchanged, which we accept.
 *	15. Pre-sampling's threshold levels u(a) are taken in the caller's
 *	   numbering (0 = leaves); the paper's experiments set "level 2", which
 *	   in its root-down numbering is our H_a - 2.  The paper's step is
 *	   deterministic; the generator the caller seeds only drives the
 *	   optional Bernoulli sample (FdPresample.fraction < 1) taken first.
 *	16. Ties between equal scores go, as in Fig. 3's strict comparisons, to
 *	   the first candidate visited: top-down visits attributes from the
 *	   highest priority, bottom-up from the lowest; equal priorities keep
 *	   the attributes' order, later ones counted as higher (a stable sort
 *	   by increasing priority, read from its end).
 */
#include <math.h>

#include "fd_int.h"

/* eta of Section 6.2 */
static double
eta(double x, double d)
{
	if (x > d)
		return 2.0;
	if (x > d / 2.0)
		return 1.0;
	return 0.0;
}

/* The score of a table whose attributes have e[a] distinct values */
double
fd_score(const FdContext *ctx, const int *e)
{
	const FdParams *p = &ctx->p;
	double		s = 0.0;
	int			a;

	for (a = 0; a < ctx->nqi; a++)
	{
		double		term;
		int			eb = ctx->e_full[a][0];

		switch (p->scoring)
		{
			case FD_SCORE_ETA:
				s += p->priority[a] * eta(e[a], ctx->eta_d[a]);
				break;
			case FD_SCORE_LOG:
				term = (eb > 1 && e[a] > 0) ?
					p->priority[a] * log((double) e[a]) / log((double) eb) : 0.0;
				if (a == 0 || term > s)
					s = term;
				break;
			default:
				s += p->priority[a] * e[a];
				break;
		}
	}
	return s;
}

/* An upper bound of the score at a node: every row published */
double
fd_score_bound_node(const FdContext *ctx, const int *levels)
{
	int			e[FD_MAX_QI];
	int			a;

	for (a = 0; a < ctx->nqi; a++)
		e[a] = ctx->e_full[a][levels[a]];
	return fd_score(ctx, e);
}

/*
 * An upper bound of the score after de-generalizing attribute a of a node
 * whose measures are m; valid when the other attributes' e cannot grow
 */
double
fd_score_bound_degen(const FdContext *ctx, const FdMeasures *m, const int *levels, int a)
{
	int			e[FD_MAX_QI];
	int			b;

	for (b = 0; b < ctx->nqi; b++)
		e[b] = m->e[b];
	e[a] = ctx->e_full[a][levels[a] - 1];
	return fd_score(ctx, e);
}

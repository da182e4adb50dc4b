/*
 * fd_optimal.c
 *		The best-scoring qualifying full-domain node over the whole
 *		lattice, with predictive tagging in the manner of ARX's Flash and
 *		OLA, top down, and a score bound.
 *
 * Monotonicity.  Generalizing a node merges its groups.  Without
 * suppression every criterion here is monotone: a union of groups of at
 * least k rows has at least k; of groups with at least l distinct
 * sensitive values has at least l; of recursive (c,l)-diverse groups is
 * recursive (c,l)-diverse (Machanavajjhala et al., the monotonicity of
 * recursive diversity); and EMD to a fixed distribution is convex in the
 * group's distribution, so a union is no farther than its farthest part.
 * Hence a qualifying node's generalizations qualify and a failing node's
 * specializations fail.
 *
 * With a suppression budget, k-anonymity and distinct l-diversity stay
 * monotone: a merged group fails only if all its parts fail, so the
 * suppressed rows of a generalization are a subset of the node's.
 * Recursive (c,l)-diversity and t-closeness do not: a passing group merged
 * with a failing one may fail, and then the passing group's rows are
 * suppressed too, which can exceed the budget.  So tagging is used only
 * when the budget is 0 or neither of those two criteria is on
 * (ctx->monotone); otherwise every node is evaluated unless the bound
 * rules it out.
 *
 * Score bound.  Every score is non-decreasing in each e(a), and e(a) at a
 * node is at most the distinct codes of its level over all rows, which
 * only fall as levels rise; so bound(N) = score(e_full(N)) bounds the
 * score of N and of all its generalizations.  Without suppression a
 * qualifying node publishes every row and its score is exactly its bound.
 *
 * Phase 1 (monotone only) goes top down: nodes by decreasing height, then
 * decreasing bound, then index; each node not yet tagged whose bound
 * beats the best score so far is settled, and every check tags the
 * qualifying node's generalizations or the failing node's
 * specializations.  The first such node u in that order has no open node
 * above it that could beat the best, so the open nodes above u cannot
 * raise the best, but one of them failing tags u and a wider cone with
 * it.  So a path is built upward from u through open nodes (each step to
 * the successor of greatest bound) and, when it has at least PATH_MIN
 * nodes, bisected for its highest failing node, in the manner of Flash;
 * u is checked itself if that leaves it open.  Without suppression a
 * qualifying node scores exactly its bound, so a node tagged as
 * qualifying scores no more than the node that tagged it, and when the
 * pass ends every node is checked, tagged or beaten by the bound: phase 1
 * is exact.  On the benchmarks it needs a fifth to a tenth of the checks
 * of bisecting paths that climb from the lowest open nodes (Flash's
 * order), which spends checks on low nodes (high bounds) that one failing
 * generalization would have tagged, and a third to a sixth of checking
 * each u without the path above it, which pays one failing check per
 * maximal node of the region the best leaves open where the flat steps of
 * the eta score leave that region wide.
 * Phase 2 (with suppression, or not monotone): nodes by decreasing bound,
 * stopping at the first bound that cannot beat the best; every node not
 * yet checked and not known to fail is checked.
 */
#include <stdlib.h>
#include <string.h>

#include "ke_alloc.h"
#include "fd_int.h"

#define ST_QUAL		1
#define ST_FAIL		2
#define ST_CHECKED	4
#define PATH_MIN	3			/* shorter paths up are not bisected */

typedef struct OptNode
{
	double		bound;
	int			height;
	int			idx;
} OptNode;

typedef struct Lattice
{
	FdContext  *ctx;
	int64_t		n;
	int64_t		stride[FD_MAX_QI];
	uint8_t    *state;
	int		   *queue;
	OptNode    *nodes;
	double	   *bound;			/* [n] by node index */
	double		best;
	int64_t		best_idx;
} Lattice;

/* The levels of lattice node idx */
static void
decode(const Lattice *lt, int64_t idx, int *lev)
{
	int			a;

	for (a = 0; a < lt->ctx->nqi; a++)
	{
		lev[a] = (int) (idx / lt->stride[a] % (lt->ctx->maxlev[a] + 1));
	}
}

/* Order by decreasing height, then decreasing bound, then index */
static int
cmp_top_down(const void *x, const void *y)
{
	const OptNode *a = x;
	const OptNode *b = y;

	if (a->height != b->height)
		return a->height > b->height ? -1 : 1;
	if (a->bound != b->bound)
		return a->bound > b->bound ? -1 : 1;
	return a->idx < b->idx ? -1 : (a->idx > b->idx ? 1 : 0);
}

/* Order by decreasing bound, then increasing height, then index */
static int
cmp_bound(const void *x, const void *y)
{
	const OptNode *a = x;
	const OptNode *b = y;

	if (a->bound != b->bound)
		return a->bound > b->bound ? -1 : 1;
	if (a->height != b->height)
		return a->height < b->height ? -1 : 1;
	return a->idx < b->idx ? -1 : (a->idx > b->idx ? 1 : 0);
}

/*
 * Tag a node and everything reachable from it upward (dir 1, as
 * qualifying) or downward (dir -1, as failing); a node already so tagged
 * has its closure tagged already
 */
static void
tag_closure(Lattice *lt, int64_t idx, int dir)
{
	uint8_t		flag = dir > 0 ? ST_QUAL : ST_FAIL;
	int64_t		head = 0;
	int64_t		tail = 0;
	int			lev[FD_MAX_QI];
	int			a;

	lt->state[idx] |= flag;
	lt->queue[tail++] = (int) idx;
	while (head < tail)
	{
		int64_t		v = lt->queue[head++];

		if ((head & 0xffff) == 0)
			ke_check_interrupts();
		decode(lt, v, lev);
		for (a = 0; a < lt->ctx->nqi; a++)
		{
			int64_t		w;

			if ((dir > 0 && lev[a] >= lt->ctx->maxlev[a]) || (dir < 0 && lev[a] == 0))
				continue;
			w = v + dir * lt->stride[a];
			if (lt->state[w] & flag)
				continue;
			lt->state[w] |= flag;
			if (!(lt->state[w] & ST_CHECKED))
				lt->ctx->counters.tagged++;
			lt->queue[tail++] = (int) w;
		}
	}
}

/* Check one node, keep the best qualifying score, tag when monotone */
static FdStatus
visit(Lattice *lt, int64_t idx, bool *qualifies)
{
	FdMeasures	m;
	int			lev[FD_MAX_QI];
	FdStatus	st;

	decode(lt, idx, lev);
	if ((st = fd_check(lt->ctx, lev, &m)) != FD_OK)
		return st;
	lt->state[idx] |= ST_CHECKED;
	*qualifies = m.qualifies;
	if (m.qualifies && (lt->best_idx < 0 || m.score > lt->best))
	{
		lt->best = m.score;
		lt->best_idx = idx;
	}
	if (lt->ctx->monotone)
		tag_closure(lt, idx, m.qualifies ? 1 : -1);
	return FD_OK;
}

/* Whether a bound can still beat the best qualifying score */
static bool
can_beat(const Lattice *lt, double bound)
{
	return lt->best_idx < 0 || bound > lt->best;
}

/*
 * A path upward from an open node u through open nodes, each step to the
 * successor of greatest bound; its length
 */
static int
path_up(const Lattice *lt, int64_t u, int64_t *path)
{
	int			lev[FD_MAX_QI];
	int			len = 0;
	int64_t		cur = u;

	decode(lt, u, lev);
	for (;;)
	{
		int			ba = -1;
		int			a;

		path[len++] = cur;
		for (a = 0; a < lt->ctx->nqi; a++)
		{
			int64_t		w = cur + lt->stride[a];

			if (lev[a] >= lt->ctx->maxlev[a] || lt->state[w] != 0)
				continue;
			if (ba < 0 || lt->bound[w] > lt->bound[cur + lt->stride[ba]])
				ba = a;
		}
		if (ba < 0)
			return len;
		lev[ba]++;
		cur += lt->stride[ba];
	}
}

/*
 * Settle an open node u: bisect a path upward from it for its highest
 * failing node, whose failure tags u and much else, then check u itself if
 * it is still open and may beat the best
 */
static FdStatus
settle_top_down(Lattice *lt, int64_t u)
{
	int64_t		path[FD_MAX_QI * FD_MAX_LEVELS + 1];
	int			len = path_up(lt, u, path);
	int			lo = 0;
	int			hi = len - 1;
	bool		q;
	FdStatus	st;

	while (len >= PATH_MIN && lo <= hi && lt->state[u] == 0)
	{
		int			mid = (lo + hi + 1) / 2;
		uint8_t		s = lt->state[path[mid]];

		if (s & ST_QUAL)
			q = true;
		else if (s & ST_FAIL)
			q = false;
		else if ((st = visit(lt, path[mid], &q)) != FD_OK)
			return st;
		if (q)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	if (lt->state[u] == 0 && can_beat(lt, lt->bound[u]))
		return visit(lt, u, &q);
	return FD_OK;
}

/* Phase 1: top down, every open node whose bound beats the best settled */
static FdStatus
phase1(Lattice *lt)
{
	int64_t		i;

	qsort(lt->nodes, lt->n, sizeof(OptNode), cmp_top_down);
	for (i = 0; i < lt->n; i++)
	{
		const OptNode *u = &lt->nodes[i];
		FdStatus	st;

		if ((i & 0xffff) == 0)
			ke_check_interrupts();
		if (lt->state[u->idx] != 0)
			continue;
		if (!can_beat(lt, u->bound))
		{
			lt->ctx->counters.bound_skips++;
			continue;
		}
		if ((st = settle_top_down(lt, u->idx)) != FD_OK)
			return st;
	}
	return FD_OK;
}

/* Phase 2: every node that may beat the best, by decreasing bound */
static FdStatus
phase2(Lattice *lt)
{
	int64_t		i;

	qsort(lt->nodes, lt->n, sizeof(OptNode), cmp_bound);
	for (i = 0; i < lt->n; i++)
	{
		const OptNode *u = &lt->nodes[i];
		uint8_t		s = lt->state[u->idx];
		bool		q;
		FdStatus	st;

		if ((i & 0xffff) == 0)
			ke_check_interrupts();

		if (!can_beat(lt, u->bound))
		{
			lt->ctx->counters.bound_skips += lt->n - i;
			break;
		}
		if ((s & ST_CHECKED) || (lt->ctx->monotone && (s & ST_FAIL)))
			continue;
		if ((st = visit(lt, u->idx, &q)) != FD_OK)
			return st;
	}
	return FD_OK;
}

/* Set up the lattice: strides, states, nodes with their bounds */
static FdStatus
lattice_init(Lattice *lt, FdContext *ctx, const FdSearchOpts *o, FdError *err)
{
	int64_t		i;
	int			a;

	memset(lt, 0, sizeof(*lt));
	lt->ctx = ctx;
	lt->best_idx = -1;
	lt->n = 1;
	for (a = 0; a < ctx->nqi; a++)
	{
		lt->stride[a] = lt->n;
		lt->n *= ctx->maxlev[a] + 1;
		if (lt->n > o->max_nodes || lt->n > INT32_MAX)
		{
			fd_seterr(err, FD_ERR_LATTICE_TOO_LARGE, a,
					  "the generalization lattice has more than %lld nodes",
					  (long long) o->max_nodes);
			return FD_ERR_LATTICE_TOO_LARGE;
		}
	}
	ctx->counters.lattice_nodes = lt->n;
	lt->state = ke_calloc(lt->n, 1);
	lt->queue = ke_malloc(sizeof(int) * lt->n);
	lt->nodes = ke_malloc(sizeof(OptNode) * lt->n);
	lt->bound = ke_malloc(sizeof(double) * lt->n);
	if (lt->state == NULL || lt->queue == NULL || lt->nodes == NULL || lt->bound == NULL)
		return FD_ERR_NOMEM;
	for (i = 0; i < lt->n; i++)
	{
		int			lev[FD_MAX_QI];

		if ((i & 0xffff) == 0)
			ke_check_interrupts();
		decode(lt, i, lev);
		lt->nodes[i].idx = (int) i;
		lt->nodes[i].bound = lt->bound[i] = fd_score_bound_node(ctx, lev);
		lt->nodes[i].height = 0;
		for (a = 0; a < ctx->nqi; a++)
			lt->nodes[i].height += lev[a];
	}
	return FD_OK;
}

/* The best-scoring qualifying full-domain node of the lattice */
FdStatus
fd_optimal(FdContext *ctx, const FdSearchOpts *o, int *node, FdError *err)
{
	Lattice		lt;
	FdStatus	st;

	st = lattice_init(&lt, ctx, o, err);
	if (st == FD_OK && ctx->monotone)
		st = phase1(&lt);
	if (st == FD_OK && (!ctx->monotone || ctx->p.max_suppressed > 0))
		st = phase2(&lt);
	if (st == FD_OK && lt.best_idx < 0)
	{
		fd_seterr(err, FD_ERR_NO_SOLUTION, -1,
				  "no full-domain generalization within the levels allowed satisfies the criteria");
		st = FD_ERR_NO_SOLUTION;
	}
	if (st == FD_OK)
		decode(&lt, lt.best_idx, node);
	ke_free(lt.state);
	ke_free(lt.queue);
	ke_free(lt.nodes);
	ke_free(lt.bound);
	return st;
}

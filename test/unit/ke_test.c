/*
 * ke_test.c
 *		Unit tests of the (k,e) engine against the report's algorithms.
 *
 * The oracle is ke_quadratic (the report's Figure 3.2, O(n^2)) run from
 * scratch over the current multiset after every single operation.  Against
 * it the engine must agree on everything it exposes: the E of every run, the
 * argmin and frontier of its running minimum, the partition end flags, the
 * partitions with their split-run flags, the sum-error and the absence of
 * any valid partitioning.  After each change the range reported by
 * ke_last_change() must cover every row whose partition changed, and
 * ke_foreach_changed_partition() must list every partition that is new or
 * whose membership changed.  The report's incremental algorithm (KePaperInc)
 * is held to the same oracle after every insert, and the greedy
 * 2-approximation must never beat the optimum.
 *
 * Parts:
 *	golden		the report's worked examples (golden.h, generated from
 *				golden.json by gen_golden.py), built in bulk and by inserts
 *	bounds		the report's query-bound examples over the engine's partitions
 *	args		invalid arguments are refused and change nothing
 *	build_runs	building from runs equals building from their rows
 *	overflow	float-kind sum-errors past the largest double: a valid
 *				partitioning stays valid, feasibility against the oracle
 *	random		deterministic randomized sequences of inserts, deletes, batches,
 *				rebuilds and re-opens, in both number kinds and with node sizes
 *				small enough to force multi-level trees
 *
 * A failing random sequence is replayed and shrunk by dropping operations
 * while it still fails, and the smallest failing sequence found is printed.
 *
 * Output: one line per failure, a summary per part, and a last line
 * "N passed, M failed" counting test cases; the exit status is 1 if any
 * failed.  Everything is deterministic: the random part uses its own
 * xorshift generator with fixed seeds.
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ke_baseline.h"
#include "ke_engine.h"
#include "golden.h"

#define MAX_FAIL_LINES	12		/* failure lines printed per test case */
#define MAX_FAIL_CASES	40		/* failing cases whose lines are printed */
#define SHRINK_SECONDS	3.0		/* CPU time spent shrinking one failure */
#define MAX_BATCH		40		/* changes in one generated batch */

/* ----------------------------------------------------------------
 * Test bookkeeping
 * ----------------------------------------------------------------
 */
static int64_t ops_checked;

#include "unit_cases.h"

/* Format a number into one of a few rotating buffers, for messages */
static const char *
fmt_num(KeKind kind, KeNum x)
{
	static char bufs[8][64];
	static int	next;
	char	   *b = bufs[next++ % 8];

	return ke_num_format(kind, x, b, 64);
}

/* Two errors with their feasibility: both infeasible, or both feasible and equal */
static bool
E_same(KeKind kind, bool aok, KeNum a, bool bok, KeNum b)
{
	if (!aok || !bok)
		return aok == bok;
	return ke_num_eq(kind, a, b);
}

/* An error with its feasibility, for messages */
static const char *
fmt_E(KeKind kind, bool ok, KeNum x)
{
	return ok ? fmt_num(kind, x) : "none";
}

/* Allocate or stop the test run: nothing sensible can follow */
static void *
xmalloc(size_t size)
{
	void	   *p = malloc(size ? size : 1);

	if (p == NULL)
	{
		fprintf(stderr, "ke_test: out of memory\n");
		exit(2);
	}
	return p;
}

/* Grow an array to hold at least need elements */
static void *
xgrow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t		c = *cap ? *cap : 16;

	if (need <= *cap)
		return p;
	while (c < need)
		c *= 2;
	p = realloc(p, c * elem);
	if (p == NULL)
	{
		fprintf(stderr, "ke_test: out of memory\n");
		exit(2);
	}
	*cap = c;
	return p;
}

/* ----------------------------------------------------------------
 * Deterministic random numbers (xorshift64*)
 * ----------------------------------------------------------------
 */
static uint64_t rng_state = 88172645463325252ULL;

/* Reseed; zero is not a valid xorshift state */
static void
rng_seed(uint64_t seed)
{
	rng_state = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
	if (rng_state == 0)
		rng_state = 1;
}

/* Next 64 random bits */
static uint64_t
rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [0, n), n > 0 */
static uint64_t
rng_below(uint64_t n)
{
	return rng_next() % n;
}

/* Uniform in [lo, hi] */
static int64_t
rng_range(int64_t lo, int64_t hi)
{
	uint64_t	span = (uint64_t) hi - (uint64_t) lo;

	if (span == UINT64_MAX)
		return (int64_t) rng_next();
	return (int64_t) ((uint64_t) lo + rng_below(span + 1));
}

/* True with probability pct percent */
static bool
rng_pct(int pct)
{
	return (int) rng_below(100) < pct;
}

/* ----------------------------------------------------------------
 * The multiset model and what the oracle says about it
 * ----------------------------------------------------------------
 */

/* Values kept sorted; tests use integers, exact in both kinds */
typedef struct Model
{
	KeKind		kind;
	size_t		n;
	size_t		cap;
	KeNum	   *d;
} Model;

/* Everything the oracle derives from a multiset */
typedef struct Expect
{
	size_t		n;
	KeNum	   *d;				/* copy of the sorted values */
	KeNum	   *E;				/* E[0..n] from ke_quadratic */
	bool	   *Eok;			/* feasibility of each */
	size_t	   *P;				/* P[0..n] */
	size_t		m;				/* runs */
	KeNum	   *rv;				/* run values */
	int64_t    *rc;				/* run counts */
	size_t	   *rs;				/* 1-based first position of each run */
	size_t		np;				/* partitions (0: none valid) */
	KePartition *parts;
	size_t	   *pfirst;			/* 1-based positions of each partition */
	size_t	   *plast;
	bool		has_sum;
	KeNum		sum;
} Expect;

/* The number of kind `kind` for an integer */
static KeNum
num(KeKind kind, int64_t x)
{
	return ke_num_from_int(kind, x);
}

/* Index of the first value > v in the model */
static size_t
model_upper(const Model *mo, KeNum v)
{
	size_t		lo = 0,
				hi = mo->n;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (ke_num_le(mo->kind, mo->d[mid], v))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the first value >= v in the model */
static size_t
model_lower(const Model *mo, KeNum v)
{
	size_t		lo = 0,
				hi = mo->n;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (ke_num_cmp(mo->kind, mo->d[mid], v) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* How many copies of v the model holds */
static int64_t
model_count(const Model *mo, KeNum v)
{
	return (int64_t) (model_upper(mo, v) - model_lower(mo, v));
}

/* Add copies of v */
static void
model_add(Model *mo, KeNum v, int64_t copies)
{
	size_t		at = model_upper(mo, v);

	mo->d = xgrow(mo->d, &mo->cap, mo->n + (size_t) copies, sizeof(KeNum));
	memmove(&mo->d[at + copies], &mo->d[at], (mo->n - at) * sizeof(KeNum));
	for (int64_t i = 0; i < copies; i++)
		mo->d[at + i] = v;
	mo->n += (size_t) copies;
}

/* Remove copies of v (the caller made sure they are there) */
static void
model_remove(Model *mo, KeNum v, int64_t copies)
{
	size_t		at = model_lower(mo, v);

	memmove(&mo->d[at], &mo->d[at + copies], (mo->n - at - copies) * sizeof(KeNum));
	mo->n -= (size_t) copies;
}

/* Free an Expect's arrays */
static void
expect_free(Expect *x)
{
	free(x->d);
	free(x->E);
	free(x->Eok);
	free(x->P);
	free(x->rv);
	free(x->rc);
	free(x->rs);
	free(x->parts);
	free(x->pfirst);
	free(x->plast);
	memset(x, 0, sizeof(*x));
}

/* Run the oracle over sorted d[0..n-1] and derive runs and partitions */
static void
expect_compute(Expect *x, KeKind kind, int k, KeNum e, const KeNum *d, size_t n)
{
	memset(x, 0, sizeof(*x));
	x->n = n;
	x->d = xmalloc((n + 1) * sizeof(KeNum));
	if (n > 0)
		memcpy(x->d, d, n * sizeof(KeNum));
	x->E = xmalloc((n + 1) * sizeof(KeNum));
	x->Eok = xmalloc((n + 1) * sizeof(bool));
	x->P = xmalloc((n + 1) * sizeof(size_t));
	ke_quadratic(kind, k, e, d, n, x->E, x->Eok, x->P);

	x->rv = xmalloc((n + 1) * sizeof(KeNum));
	x->rc = xmalloc((n + 1) * sizeof(int64_t));
	x->rs = xmalloc((n + 1) * sizeof(size_t));
	for (size_t i = 0; i < n; i++)
	{
		if (x->m > 0 && ke_num_eq(kind, x->rv[x->m - 1], d[i]))
			x->rc[x->m - 1]++;
		else
		{
			x->rv[x->m] = d[i];
			x->rc[x->m] = 1;
			x->rs[x->m] = i + 1;
			x->m++;
		}
	}

	x->parts = xmalloc((n + 1) * sizeof(KePartition));
	x->pfirst = xmalloc((n + 1) * sizeof(size_t));
	x->plast = xmalloc((n + 1) * sizeof(size_t));
	x->np = ke_positions_partitions(x->Eok, x->P, n, x->pfirst, x->plast);
	for (size_t p = 0; p < x->np; p++)
	{
		size_t		f = x->pfirst[p],
					l = x->plast[p];
		KePartition *pt = &x->parts[p];

		memset(pt, 0, sizeof(*pt));
		pt->lo = d[f - 1];
		pt->hi = d[l - 1];
		pt->lo_last_only = f > 1 && ke_num_eq(kind, d[f - 2], d[f - 1]);
		pt->hi_split = l < n && ke_num_eq(kind, d[l], d[l - 1]);
		pt->n = (int64_t) (l - f + 1);
		pt->ndistinct = 1;
		for (size_t i = f; i < l; i++)
			if (!ke_num_eq(kind, d[i - 1], d[i]))
				pt->ndistinct++;
		pt->error = ke_num_sub(kind, pt->hi, pt->lo);
	}
	x->has_sum = n > 0 && x->Eok[n];
	if (x->has_sum)
		x->sum = x->E[n];
}

/* Index of the run holding 1-based position pos */
static size_t
expect_run_of(const Expect *x, size_t pos)
{
	size_t		lo = 0,
				hi = x->m;

	while (hi - lo > 1)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (x->rs[mid] <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the run of value v, or -1 */
static int64_t
expect_find_run(KeKind kind, const Expect *x, KeNum v)
{
	size_t		lo = 0,
				hi = x->m;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (ke_num_cmp(kind, x->rv[mid], v) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < x->m && ke_num_eq(kind, x->rv[lo], v))
		return (int64_t) lo;
	return -1;
}

/* ----------------------------------------------------------------
 * Reading the engine
 * ----------------------------------------------------------------
 */
typedef struct RunList
{
	size_t		n;
	size_t		cap;
	KeRunInfo  *r;
} RunList;

typedef struct PartList
{
	size_t		n;
	size_t		cap;
	KePartition *p;
} PartList;

/* ke_foreach_run callback: append */
static bool
collect_run(const KeRunInfo *run, void *arg)
{
	RunList    *rl = arg;

	rl->r = xgrow(rl->r, &rl->cap, rl->n + 1, sizeof(KeRunInfo));
	rl->r[rl->n++] = *run;
	return true;
}

/* ke_foreach_partition callback: append */
static bool
collect_part(const KePartition *part, void *arg)
{
	PartList   *pl = arg;

	pl->p = xgrow(pl->p, &pl->cap, pl->n + 1, sizeof(KePartition));
	pl->p[pl->n++] = *part;
	return true;
}

/* Are two partitions the same in every field? */
static bool
part_same(KeKind kind, const KePartition *a, const KePartition *b)
{
	return ke_num_eq(kind, a->lo, b->lo) && ke_num_eq(kind, a->hi, b->hi) &&
		a->lo_last_only == b->lo_last_only && a->hi_split == b->hi_split &&
		a->n == b->n && a->ndistinct == b->ndistinct &&
		ke_num_eq(kind, a->error, b->error);
}

/* Do two partitions have the same boundaries (ignoring membership)? */
static bool
part_same_bounds(KeKind kind, const KePartition *a, const KePartition *b)
{
	return ke_num_eq(kind, a->lo, b->lo) && ke_num_eq(kind, a->hi, b->hi) &&
		a->lo_last_only == b->lo_last_only && a->hi_split == b->hi_split;
}

/* A partition as text, for messages */
static const char *
part_text(KeKind kind, const KePartition *p)
{
	static char bufs[4][200];
	static int	next;
	char	   *b = bufs[next++ % 4];

	snprintf(b, 200, "[%s%s..%s%s n=%lld nd=%lld err=%s]",
			 p->lo_last_only ? "last of " : "", fmt_num(kind, p->lo),
			 fmt_num(kind, p->hi), p->hi_split ? " minus last" : "",
			 (long long) p->n, (long long) p->ndistinct, fmt_num(kind, p->error));
	return b;
}

/* Is p (by its boundaries and membership) in the list? */
static bool
part_in_list(KeKind kind, const KePartition *p, const KePartition *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (part_same(kind, p, &list[i]))
			return true;
	return false;
}

/* ----------------------------------------------------------------
 * Comparing the engine with the oracle
 * ----------------------------------------------------------------
 */

/*
 * The largest run q < r whose last row is a valid start for a partition
 * ending at run r (k distinct values and a range of e), or -1: what the
 * engine calls the frontier of run r.
 */
static int64_t
frontier_of(KeKind kind, int k, KeNum e, const Expect *x, size_t r)
{
	int64_t		q;

	if (r + 1 < (size_t) k)
		return -1;
	for (q = (int64_t) r - (k - 1); q >= 0; q--)
		if (ke_num_range_ok(kind, x->rv[q], x->rv[r], e))
			return q;
	return -1;
}

/*
 * The end flag of each run of x under the report's tie rule (largest start
 * wins), from the quadratic algorithm's partitions: KE_END_FULL where a
 * partition ends at the run's last row, KE_END_SPLIT at its second-to-last.
 */
static int *
scratch_flags(const Expect *x)
{
	int		   *f = xmalloc((x->m + 1) * sizeof(int));

	for (size_t r = 0; r < x->m; r++)
		f[r] = KE_END_NONE;
	for (size_t p = 0; p < x->np; p++)
	{
		size_t		l = x->plast[p];
		size_t		r = expect_run_of(x, l);

		f[r] = l == x->rs[r] + (size_t) x->rc[r] - 1 ? KE_END_FULL : KE_END_SPLIT;
	}
	return f;
}

/*
 * The end flags under the tie rule of ke_keep_boundaries(), written from
 * its definition, apart from the engine's walk: backtrack from the last run;
 * for the partition ending at run r, scan down from r's frontier (at most
 * KEEP_SCAN runs) for the first run the old partitioning (ox's runs with
 * flags oflags) ended a partition at and that offers a valid start (a split
 * end: the run's last row, if it has two rows and a valid partitioning ends
 * at it; a full end below the frontier: the next run's first row, if one
 * ends there), or else the first run; take that start if its error is r's
 * best, otherwise the largest optimal start (the quadratic algorithm's).
 */
#define KEEP_SCAN	256

static int *
keep_flags(KeKind kind, int k, KeNum e, const Expect *x, const Expect *ox, const int *oflags)
{
	int		   *f = xmalloc((x->m + 1) * sizeof(int));
	int		   *old = xmalloc((x->m + 1) * sizeof(int));
	int64_t		r = (int64_t) x->m - 1;
	int			kend = KE_END_FULL;

	for (size_t i = 0; i < x->m; i++)
	{
		int64_t		o = expect_find_run(kind, ox, x->rv[i]);

		f[i] = KE_END_NONE;
		old[i] = o >= 0 ? oflags[o] : KE_END_NONE;
	}
	if (x->m == 0 || !x->has_sum)
	{
		free(old);
		return f;
	}
	while (r >= 0)
	{
		size_t		t = x->rs[r] + (size_t) x->rc[r] - 1;
		KeNum		target = ke_num_sub(kind, x->E[t], x->rv[r]);
		int64_t		fr = frontier_of(kind, k, e, x, (size_t) r);
		int64_t		q = -1;
		bool		last = false;
		bool		found = false;

		f[r] = kend;
		for (int i = 0; i < KEEP_SCAN && fr - i >= 0 && !found; i++)
		{
			int64_t		b = fr - i;
			size_t		bt = x->rs[b] + (size_t) x->rc[b] - 1;
			KeNum		a = ke_num_zero(kind);

			if (old[b] == KE_END_SPLIT && x->rc[b] >= 2 && x->Eok[bt])
			{
				a = ke_num_sub(kind, x->E[bt], x->rv[b]);
				q = b;
				last = true;
				found = true;
			}
			else if (old[b] == KE_END_FULL && i > 0 && x->Eok[bt])
			{
				a = ke_num_sub(kind, x->E[bt], x->rv[b + 1]);
				q = b + 1;
				found = true;
			}
			else if (b == 0)
			{
				a = ke_num_sub(kind, ke_num_zero(kind), x->rv[0]);
				q = 0;
				found = true;
			}
			if (found && !ke_num_eq(kind, a, target))
				q = -1;
		}
		if (q < 0)
		{
			/* the largest optimal start */
			size_t		pos = x->P[t];

			q = (int64_t) expect_run_of(x, pos);
			last = pos != x->rs[q];
		}
		if (last)
		{
			r = q;
			kend = KE_END_SPLIT;
		}
		else
		{
			r = q - 1;
			kend = KE_END_FULL;
		}
	}
	free(old);
	return f;
}

/*
 * Check the engine's whole observable state against the oracle; the runs
 * and partitions read are left in rl and pl for the change checks.
 */
static void
check_engine_flags(KeEngine *eng, KeKind kind, int k, KeNum e, const Expect *x,
				   const int *want, RunList *rl, PartList *pl)
{
	char		msg[512];
	KeStatus	st;
	KeNum		sum;
	bool		has_sum;
	size_t		*partof_last;	/* per run: end flag the oracle implies */

	st = ke_verify(eng, msg, sizeof(msg));
	if (st != KE_OK)
		fail("ke_verify: %s: %s", ke_status_message(st), msg);
	if (ke_nrows(eng) != (int64_t) x->n)
		fail("ke_nrows %lld, expected %zu", (long long) ke_nrows(eng), x->n);
	if (ke_nruns(eng) != (int64_t) x->m)
		fail("ke_nruns %lld, expected %zu", (long long) ke_nruns(eng), x->m);

	has_sum = ke_sum_error(eng, &sum);
	if (has_sum != x->has_sum)
		fail("ke_sum_error says %s, the oracle %s",
			 has_sum ? "valid" : "none valid", x->has_sum ? "valid" : "none valid");
	else if (has_sum && !ke_num_eq(kind, sum, x->sum))
		fail("sum-error %s, expected %s", fmt_num(kind, sum), fmt_num(kind, x->sum));

	/* runs: values, counts and the DP state of each */
	rl->n = 0;
	ke_foreach_run(eng, collect_run, rl);
	if (rl->n != x->m)
		fail("ke_foreach_run gave %zu runs, expected %zu", rl->n, x->m);

	partof_last = xmalloc((x->m + 1) * sizeof(size_t));
	for (size_t r = 0; r < x->m; r++)
		partof_last[r] = KE_END_NONE;
	for (size_t p = 0; p < x->np; p++)
	{
		size_t		l = x->plast[p];
		size_t		r = expect_run_of(x, l);
		size_t		rend = x->rs[r] + (size_t) x->rc[r] - 1;
		size_t		f = x->pfirst[p];
		size_t		fr = expect_run_of(x, f);

		if (l == rend)
			partof_last[r] = KE_END_FULL;
		else if (l + 1 == rend)
			partof_last[r] = KE_END_SPLIT;
		else
			fail("oracle partition %zu..%zu ends inside run %s, not at its last or second-to-last row",
				 f, l, fmt_num(kind, x->rv[r]));
		if (f != x->rs[fr] && f != x->rs[fr] + (size_t) x->rc[fr] - 1)
			fail("oracle partition %zu..%zu starts inside run %s, not at its first or last row",
				 f, l, fmt_num(kind, x->rv[fr]));
	}

	for (size_t r = 0; r < x->m && r < rl->n; r++)
	{
		const KeRunInfo *ri = &rl->r[r];
		size_t		s = x->rs[r];
		size_t		t = s + (size_t) x->rc[r] - 1;
		KeNum		Ex = x->E[t];
		bool		Exok = x->Eok[t];
		const char *v = fmt_num(kind, x->rv[r]);

		if (!ke_num_eq(kind, ri->value, x->rv[r]) || ri->count != x->rc[r])
		{
			fail("run %zu is %s x%lld, expected %s x%lld", r,
				 fmt_num(kind, ri->value), (long long) ri->count, v,
				 (long long) x->rc[r]);
			continue;
		}
		for (size_t i = s; i < t; i++)
			if (!E_same(kind, x->Eok[i], x->E[i], Exok, Ex) || x->P[i] != x->P[t])
				fail("oracle: positions %zu and %zu of run %s differ (E %s/%s, P %zu/%zu)",
					 i, t, v, fmt_E(kind, x->Eok[i], x->E[i]), fmt_E(kind, Exok, Ex),
					 x->P[i], x->P[t]);
		if (!E_same(kind, ri->feasible, ri->E, Exok, Ex))
			fail("run %s: E %s, expected %s", v, fmt_E(kind, ri->feasible, ri->E),
				 fmt_E(kind, Exok, Ex));
		if (want != NULL ? want[r] != ri->end : (int) partof_last[r] != ri->end)
			fail("run %s: end flag %d, expected %d%s", v, ri->end,
				 want != NULL ? want[r] : (int) partof_last[r],
				 want != NULL ? " (keeping boundaries)" : "");
		if (Exok)
		{
			int64_t		ar = expect_find_run(kind, x, ri->argmin);
			int64_t		fq = frontier_of(kind, k, e, x, r);

			if (!ke_num_eq(kind, ri->best, ke_num_sub(kind, Ex, x->rv[r])))
				fail("run %s: best %s, expected E - value = %s", v,
					 fmt_num(kind, ri->best), fmt_num(kind, ke_num_sub(kind, Ex, x->rv[r])));
			if (ar < 0)
				fail("run %s: argmin %s is not a run", v, fmt_num(kind, ri->argmin));
			else
			{
				size_t		pos = ri->argmin_last ?
					x->rs[ar] + (size_t) x->rc[ar] - 1 : x->rs[ar];

				if (pos != x->P[t])
					fail("run %s: argmin %s/%s is position %zu, the oracle's P is %zu", v,
						 fmt_num(kind, ri->argmin), ri->argmin_last ? "last" : "first",
						 pos, x->P[t]);
			}
			if (!ri->has_frontier || fq < 0 ||
				!ke_num_eq(kind, ri->frontier, x->rv[fq]))
				fail("run %s: frontier %s, expected %s", v,
					 ri->has_frontier ? fmt_num(kind, ri->frontier) : "none",
					 fq >= 0 ? fmt_num(kind, x->rv[fq]) : "none");
		}
		else if (ri->has_frontier)
			fail("run %s: infeasible but a frontier %s", v, fmt_num(kind, ri->frontier));
	}
	free(partof_last);

	/* partitions (those of another optimum when keeping boundaries) */
	pl->n = 0;
	ke_foreach_partition(eng, collect_part, pl);
	if (want != NULL)
	{
		int64_t		nrows = 0;

		for (size_t p = 0; p < pl->n; p++)
			nrows += pl->p[p].n;
		if (pl->n > 0 && nrows != (int64_t) x->n)
			fail("partitions hold %lld rows, the table %zu", (long long) nrows, x->n);
		return;
	}
	if (pl->n != x->np)
		fail("ke_foreach_partition gave %zu partitions, expected %zu", pl->n, x->np);
	for (size_t p = 0; p < pl->n && p < x->np; p++)
		if (!part_same(kind, &pl->p[p], &x->parts[p]))
			fail("partition %zu is %s, expected %s", p,
				 part_text(kind, &pl->p[p]), part_text(kind, &x->parts[p]));
}

/* check_engine_flags() under the report's tie rule */
static void
check_engine(KeEngine *eng, KeKind kind, int k, KeNum e, const Expect *x,
			 RunList *rl, PartList *pl)
{
	check_engine_flags(eng, kind, k, e, x, NULL, rl, pl);
}

/*
 * Per run of x, the partitions holding its rows: main[r] holds all rows but
 * possibly the last-arriving, last[r] the last-arriving one (they differ
 * only for a split run); -1 when no valid partitioning exists.
 */
static void
row_homes(KeKind kind, const Expect *x, const KePartition *parts, size_t np,
		  int64_t *main_, int64_t *last)
{
	size_t		p = 0;

	for (size_t r = 0; r < x->m; r++)
	{
		main_[r] = last[r] = -1;
		if (np == 0)
			continue;
		while (p < np && ke_num_cmp(kind, parts[p].hi, x->rv[r]) < 0)
			p++;
		if (p >= np)
			continue;
		if (parts[p].hi_split && ke_num_eq(kind, parts[p].hi, x->rv[r]))
		{
			main_[r] = (int64_t) p;
			last[r] = p + 1 < np ? (int64_t) p + 1 : -1;
		}
		else
			main_[r] = last[r] = (int64_t) p;
	}
}

/* Does value v lie in the changed range? */
static bool
in_changed(KeKind kind, const KeChangeInfo *ci, KeNum v)
{
	if (!ci->any)
		return false;
	if (!ci->lo_unbounded && ke_num_cmp(kind, v, ci->lo) < 0)
		return false;
	if (!ci->hi_unbounded && ke_num_cmp(kind, v, ci->hi) > 0)
		return false;
	return true;
}

/* Does a partition's value span meet the changed range? */
static bool
overlaps_changed(KeKind kind, const KeChangeInfo *ci, const KePartition *p)
{
	if (!ci->any)
		return false;
	if (!ci->lo_unbounded && ke_num_cmp(kind, p->hi, ci->lo) < 0)
		return false;
	if (!ci->hi_unbounded && ke_num_cmp(kind, p->lo, ci->hi) > 0)
		return false;
	return true;
}

/* Same home for a row before and after? (-1 = suppressed) */
static bool
home_same(KeKind kind, const KePartition *op, int64_t oi,
		  const KePartition *np_, int64_t ni)
{
	if (oi < 0 || ni < 0)
		return oi < 0 && ni < 0;
	return part_same_bounds(kind, &op[oi], &np_[ni]);
}

/*
 * Check what ke_last_change() and ke_foreach_changed_partition() report
 * after a successful change from state ox (partitions opl) to nx (npl).
 */
static void
check_change(KeEngine *eng, KeKind kind, const Expect *ox, const PartList *opl,
			 const Expect *nx, const PartList *npl)
{
	const KeChangeInfo *ci = ke_last_change(eng);
	int64_t    *om = xmalloc((ox->m + 1) * sizeof(int64_t));
	int64_t    *ol = xmalloc((ox->m + 1) * sizeof(int64_t));
	int64_t    *nm = xmalloc((nx->m + 1) * sizeof(int64_t));
	int64_t    *nl = xmalloc((nx->m + 1) * sizeof(int64_t));
	PartList	cl = {0, 0, NULL};
	size_t		a = 0,
				b = 0;
	bool		bounds_moved = false;
	char		range[160];

	snprintf(range, sizeof(range), "%s%s, %s%s",
			 ci->any ? "" : "(none) ",
			 ci->lo_unbounded ? "-inf" : fmt_num(kind, ci->lo),
			 ci->hi_unbounded ? "+inf" : fmt_num(kind, ci->hi),
			 ci->boundaries_changed ? " boundaries changed" : "");

	row_homes(kind, ox, opl->p, opl->n, om, ol);
	row_homes(kind, nx, npl->p, npl->n, nm, nl);

	/* rows: merge the old and new runs by value */
	while (a < ox->m || b < nx->m)
	{
		int			c;

		if (a >= ox->m)
			c = 1;
		else if (b >= nx->m)
			c = -1;
		else
			c = ke_num_cmp(kind, ox->rv[a], nx->rv[b]);

		if (c == 0 && ox->rc[a] == nx->rc[b])
		{
			/* same rows; a row whose partition moved must be in range */
			bool		moved = !home_same(kind, opl->p, om[a], npl->p, nm[b]) ||
				!home_same(kind, opl->p, ol[a], npl->p, nl[b]);

			if (moved && !in_changed(kind, ci, nx->rv[b]))
				fail("rows of %s changed partition, outside the reported range [%s]",
					 fmt_num(kind, nx->rv[b]), range);
			a++;
			b++;
			continue;
		}

		/* a value whose count changed: its rows joined or left a partition */
		{
			KeNum		v = c <= 0 ? ox->rv[a] : nx->rv[b];

			if ((opl->n > 0 || npl->n > 0) && !in_changed(kind, ci, v))
				fail("count of %s changed, outside the reported range [%s]",
					 fmt_num(kind, v), range);
		}
		if (c <= 0)
			a++;
		if (c >= 0)
			b++;
	}

	/* partitions that went away or changed must meet the range */
	for (size_t i = 0; i < opl->n; i++)
		if (!part_in_list(kind, &opl->p[i], npl->p, npl->n) &&
			!overlaps_changed(kind, ci, &opl->p[i]))
			fail("old partition %s changed, outside the reported range [%s]",
				 part_text(kind, &opl->p[i]), range);

	/* new or changed partitions must be listed as changed */
	ke_foreach_changed_partition(eng, collect_part, &cl);
	for (size_t i = 0; i < npl->n; i++)
		if (!part_in_list(kind, &npl->p[i], opl->p, opl->n) &&
			!part_in_list(kind, &npl->p[i], cl.p, cl.n))
			fail("partition %s is new or changed but not listed by ke_foreach_changed_partition (range [%s])",
				 part_text(kind, &npl->p[i]), range);
	for (size_t i = 0; i < cl.n; i++)
		if (!part_in_list(kind, &cl.p[i], npl->p, npl->n))
			fail("ke_foreach_changed_partition listed %s, which is not a current partition",
				 part_text(kind, &cl.p[i]));

	/*
	 * A boundary is where a partition ends (a run's last or second-to-last
	 * row); a partition that only gained or lost rows moved none.
	 */
	if (opl->n != npl->n)
		bounds_moved = true;
	for (size_t i = 0; !bounds_moved && i < opl->n; i++)
		if (!ke_num_eq(kind, opl->p[i].hi, npl->p[i].hi) ||
			opl->p[i].hi_split != npl->p[i].hi_split)
			bounds_moved = true;
	if (bounds_moved && !ci->boundaries_changed)
		fail("partition boundaries moved but boundaries_changed is false");

	free(cl.p);
	free(om);
	free(ol);
	free(nm);
	free(nl);
}

/* KePaperInc's arrays must equal the oracle's */
static void
check_paperinc(KePaperInc *pi, KeKind kind, const Expect *x)
{
	const KeNum *E;
	const bool *Eok;
	const size_t *P;
	size_t		n = ke_paperinc_arrays(pi, &E, &Eok, &P);
	KeNum		sum;
	bool		has;

	if (n != x->n)
	{
		fail("KePaperInc holds %zu values, expected %zu", n, x->n);
		return;
	}
	for (size_t i = 0; i <= n; i++)
	{
		if (!E_same(kind, Eok[i], E[i], x->Eok[i], x->E[i]) || P[i] != x->P[i])
		{
			fail("KePaperInc position %zu: E %s P %zu, expected E %s P %zu",
				 i, fmt_E(kind, Eok[i], E[i]), P[i], fmt_E(kind, x->Eok[i], x->E[i]), x->P[i]);
			return;
		}
	}
	has = ke_paperinc_sum_error(pi, &sum);
	if (has != x->has_sum || (has && !ke_num_eq(kind, sum, x->sum)))
		fail("KePaperInc sum-error disagrees with the oracle");
}

/* The 2-approximation: valid exactly when the optimum is, never better */
static void
check_approx(KeKind kind, int k, KeNum e, const Expect *x)
{
	KeNum		s;
	bool		has = ke_approx(kind, k, e, x->d, x->n, &s);

	if (has != x->has_sum)
		fail("ke_approx says %s, the oracle %s", has ? "valid" : "none valid",
			 x->has_sum ? "valid" : "none valid");
	else if (has && ke_num_cmp(kind, s, x->sum) < 0)
		fail("ke_approx sum-error %s beats the optimum %s",
			 fmt_num(kind, s), fmt_num(kind, x->sum));
}

/* ----------------------------------------------------------------
 * Golden examples
 * ----------------------------------------------------------------
 */

/* Check one golden entry's final state in an engine and the baselines */
static void
check_golden_state(KeEngine *eng, const KeGoldenPartitioning *g, const Expect *x,
				   const PartList *pl, const RunList *rl)
{
	KeKind		kind = KE_KIND_EXACT;
	size_t		pos = 1;
	size_t		gi = 0;

	/* the oracle against the golden arrays */
	for (int i = 1; i <= g->n; i++)
	{
		bool		ginf = g->error[i - 1] == KE_GOLDEN_INF;

		if (!E_same(kind, x->Eok[i], x->E[i], !ginf, num(kind, g->error[i - 1])))
			fail("ke_quadratic E[%d] = %s, golden %s", i, fmt_E(kind, x->Eok[i], x->E[i]),
				 ginf ? "inf" : fmt_num(kind, num(kind, g->error[i - 1])));
		if ((int64_t) x->P[i] != g->partition[i - 1])
			fail("ke_quadratic P[%d] = %zu, golden %lld", i, x->P[i],
				 (long long) g->partition[i - 1]);
	}

	/* engine runs: every position of a run carries the run's E */
	for (size_t r = 0; r < rl->n; r++)
	{
		for (int64_t c = 0; c < rl->r[r].count && pos <= (size_t) g->n; c++, pos++)
		{
			int64_t		ge = g->error[pos - 1];
			bool		ok = E_same(kind, rl->r[r].feasible, rl->r[r].E,
									ge != KE_GOLDEN_INF, num(kind, ge));

			if (!ok)
				fail("engine run %s: E %s, golden position %zu says %s",
					 fmt_num(kind, rl->r[r].value),
					 fmt_E(kind, rl->r[r].feasible, rl->r[r].E), pos,
					 ge == KE_GOLDEN_INF ? "inf" : fmt_num(kind, num(kind, ge)));
		}
	}
	if (pos != (size_t) g->n + 1)
		fail("engine runs hold %zu rows, golden %d", pos - 1, g->n);

	/* engine partitions against the golden groups */
	if (pl->n != (size_t) g->ngroups)
		fail("engine has %zu partitions, golden %d", pl->n, g->ngroups);
	{
		size_t		first = 1;

		for (int p = 0; p < g->ngroups && (size_t) p < pl->n; p++)
		{
			const int64_t *gv = &g->group_values[gi];
			int			gn = g->group_sizes[p];
			size_t		last = first + (size_t) gn - 1;
			KePartition want;

			memset(&want, 0, sizeof(want));
			want.lo = num(kind, gv[0]);
			want.hi = num(kind, gv[gn - 1]);
			want.n = gn;
			want.ndistinct = 1;
			for (int i = 1; i < gn; i++)
				if (gv[i] != gv[i - 1])
					want.ndistinct++;
			want.error = num(kind, gv[gn - 1] - gv[0]);
			/* the golden values are sorted: a split shows as equal neighbours */
			want.lo_last_only = first > 1 && x->d[first - 2].i == gv[0];
			want.hi_split = last < x->n && x->d[last].i == gv[gn - 1];
			if (!part_same(kind, &pl->p[p], &want))
				fail("engine partition %d is %s, golden %s", p,
					 part_text(kind, &pl->p[p]), part_text(kind, &want));
			gi += (size_t) gn;
			first = last + 1;
		}
	}

	/* sum-error */
	{
		KeNum		s;
		bool		has = ke_sum_error(eng, &s);

		if (has != g->has_sum_error)
			fail("engine sum-error %s, golden %s", has ? "present" : "none",
				 g->has_sum_error ? "present" : "none");
		else if (has && !ke_num_eq(kind, s, num(kind, g->sum_error)))
			fail("engine sum-error %s, golden %lld", fmt_num(kind, s),
				 (long long) g->sum_error);
	}
}

/* Every golden partitioning entry, built in bulk and by inserts */
static void
test_golden(void)
{
	static const size_t node_sizes[] = {512, 8192};
	KeKind		kind = KE_KIND_EXACT;

	for (int gidx = 0; gidx < KE_GOLDEN_NPARTITIONINGS; gidx++)
	{
		const KeGoldenPartitioning *g = &golden_partitionings[gidx];
		KeNum		e = num(kind, g->e);
		Model		mo = {kind, 0, 0, NULL};
		Expect		x;

		for (int i = 0; i < g->n; i++)
			model_add(&mo, num(kind, g->values[i]), 1);
		expect_compute(&x, kind, g->k, e, mo.d, mo.n);

		for (size_t ns = 0; ns < sizeof(node_sizes) / sizeof(node_sizes[0]); ns++)
		{
			for (int how = 0; how < 3; how++)
			{
				static const char *hows[] = {"ke_build_sorted", "inserts in order",
				"inserts in reverse order"};
				KeStore    *store = ke_memstore_create_strict(node_sizes[ns]);
				KeEngine   *eng = NULL;
				KeStatus	st;
				RunList		rl = {0, 0, NULL};
				PartList	pl = {0, 0, NULL};

				case_begin("golden '%s', %s, node %zu", g->name, hows[how], node_sizes[ns]);
				st = ke_create(&eng, store, kind, g->k, e);
				if (st != KE_OK)
				{
					fail("ke_create: %s", ke_status_message(st));
					ke_memstore_destroy(store);
					case_end();
					continue;
				}
				if (how == 0)
				{
					if ((st = ke_build_sorted(eng, mo.d, mo.n)) != KE_OK)
						fail("ke_build_sorted: %s", ke_status_message(st));
				}
				else
				{
					/* check after every insert, not only at the end */
					Model		part = {kind, 0, 0, NULL};

					for (int i = 0; i < g->n; i++)
					{
						int			at = how == 1 ? i : g->n - 1 - i;
						KeNum		v = num(kind, g->values[at]);
						Expect		px;

						if ((st = ke_insert(eng, v)) != KE_OK)
							fail("ke_insert(%s): %s", fmt_num(kind, v), ke_status_message(st));
						model_add(&part, v, 1);
						expect_compute(&px, kind, g->k, e, part.d, part.n);
						check_engine(eng, kind, g->k, e, &px, &rl, &pl);
						expect_free(&px);
					}
					free(part.d);
				}
				check_engine(eng, kind, g->k, e, &x, &rl, &pl);
				check_golden_state(eng, g, &x, &pl, &rl);
				ke_close(eng);
				ke_memstore_destroy(store);
				free(rl.r);
				free(pl.p);
				case_end();
			}
		}

		/* the baselines on the same example */
		case_begin("golden '%s', baselines", g->name);
		{
			KePaperInc *pi = ke_paperinc_create(kind, g->k, e);

			for (int i = 0; i < g->n; i++)
				ke_paperinc_insert(pi, num(kind, g->values[i]));
			check_paperinc(pi, kind, &x);
			ke_paperinc_destroy(pi);
			check_approx(kind, g->k, e, &x);
		}
		case_end();

		expect_free(&x);
		free(mo.d);
	}
}

/* The report's query-bound examples over the engine's partitions */
static void
test_bounds(void)
{
	KeKind		kind = KE_KIND_EXACT;
	KeStore    *store = ke_memstore_create_strict(512);
	KeEngine   *eng = NULL;
	RunList		rl = {0, 0, NULL};
	PartList	pl = {0, 0, NULL};
	int64_t    *vals = NULL;
	int		   *sizes = NULL;
	size_t		nvals = 0;
	KeStatus	st;

	case_begin("bounds: partitions of the report's salary table");
	st = ke_create(&eng, store, kind, KE_GOLDEN_BOUNDS_K, num(kind, KE_GOLDEN_BOUNDS_E));
	if (st != KE_OK)
	{
		fail("ke_create: %s", ke_status_message(st));
		ke_memstore_destroy(store);
		case_end();
		return;
	}
	for (int i = 0; i < KE_GOLDEN_BOUNDS_NROWS; i++)
		if ((st = ke_insert(eng, num(kind, golden_bounds_rows[i]))) != KE_OK)
			fail("ke_insert: %s", ke_status_message(st));
	ke_foreach_run(eng, collect_run, &rl);
	ke_foreach_partition(eng, collect_part, &pl);

	/* spell out each partition's values from the runs and split flags */
	vals = xmalloc((KE_GOLDEN_BOUNDS_NROWS + 1) * sizeof(int64_t));
	sizes = xmalloc((pl.n + 1) * sizeof(int));
	{
		size_t		r = 0;

		for (size_t p = 0; p < pl.n; p++)
		{
			const KePartition *pt = &pl.p[p];

			sizes[p] = 0;
			while (r < rl.n && ke_num_cmp(kind, rl.r[r].value, pt->lo) < 0)
				r++;
			for (; r < rl.n && ke_num_cmp(kind, rl.r[r].value, pt->hi) <= 0; r++)
			{
				int64_t		c = rl.r[r].count;

				if (pt->lo_last_only && ke_num_eq(kind, rl.r[r].value, pt->lo))
					c = 1;
				else if (pt->hi_split && ke_num_eq(kind, rl.r[r].value, pt->hi))
					c = c - 1;
				for (int64_t i = 0; i < c && nvals < KE_GOLDEN_BOUNDS_NROWS; i++)
				{
					vals[nvals++] = (int64_t) rl.r[r].value.i;
					sizes[p]++;
				}
			}
			/* a split run's last row opens the next partition */
			if (pt->hi_split && r > 0)
				r--;
		}
	}
	if (pl.n != KE_GOLDEN_BOUNDS_NPARTS || nvals != KE_GOLDEN_BOUNDS_NROWS)
		fail("engine has %zu partitions over %zu rows, golden %d over %d",
			 pl.n, nvals, KE_GOLDEN_BOUNDS_NPARTS, KE_GOLDEN_BOUNDS_NROWS);
	else
	{
		for (size_t i = 0; i < nvals; i++)
			if (vals[i] != golden_bounds_group_values[i])
				fail("partitioned value %zu is %lld, golden %lld", i,
					 (long long) vals[i], (long long) golden_bounds_group_values[i]);
		for (int p = 0; p < KE_GOLDEN_BOUNDS_NPARTS; p++)
			if (sizes[p] != golden_bounds_group_sizes[p])
				fail("partition %d holds %d rows, golden %d", p, sizes[p],
					 golden_bounds_group_sizes[p]);
	}
	case_end();

	/* each query: rows hit per partition may carry any h of its values */
	for (int q = 0; q < KE_GOLDEN_NBOUNDS; q++)
	{
		const KeGoldenBounds *gb = &golden_bounds[q];
		int64_t		lo = 0,
					hi = 0;
		bool		first = true;
		size_t		off = 0;

		case_begin("bounds: %s", gb->query);
		if (pl.n != KE_GOLDEN_BOUNDS_NPARTS || nvals != KE_GOLDEN_BOUNDS_NROWS)
		{
			fail("partitions differ from the golden ones; bounds not computed");
			case_end();
			continue;
		}
		for (int p = 0; p < KE_GOLDEN_BOUNDS_NPARTS; p++)
		{
			const int64_t *g = &vals[off];	/* ascending */
			int			n = sizes[p];
			int			h = gb->hits[p];

			off += (size_t) n;
			if (h == 0)
				continue;
			if (strcmp(gb->aggregate, "sum") == 0)
			{
				for (int i = 0; i < h; i++)
				{
					lo += g[i];
					hi += g[n - 1 - i];
				}
			}
			else if (strcmp(gb->aggregate, "min") == 0)
			{
				lo = first || g[0] < lo ? g[0] : lo;
				hi = first || g[n - h] < hi ? g[n - h] : hi;
			}
			else if (strcmp(gb->aggregate, "max") == 0)
			{
				lo = first || g[h - 1] > lo ? g[h - 1] : lo;
				hi = first || g[n - 1] > hi ? g[n - 1] : hi;
			}
			else if (strcmp(gb->aggregate, "count") == 0)
			{
				lo += h;
				hi += h;
			}
			else
				fail("aggregate %s not checked here", gb->aggregate);
			first = false;
		}
		if (lo != gb->answer_lo || hi != gb->answer_hi)
			fail("bounds [%lld, %lld], golden [%lld, %lld]", (long long) lo,
				 (long long) hi, (long long) gb->answer_lo, (long long) gb->answer_hi);
		if (gb->true_value < lo || gb->true_value > hi)
			fail("true value %lld outside [%lld, %lld]", (long long) gb->true_value,
				 (long long) lo, (long long) hi);
		case_end();
	}

	free(vals);
	free(sizes);
	free(rl.r);
	free(pl.p);
	ke_close(eng);
	ke_memstore_destroy(store);
}

/* ----------------------------------------------------------------
 * Invalid arguments
 * ----------------------------------------------------------------
 */

/* ke_create must refuse kind/k/e and leave *out NULL */
static void
expect_create_refused(KeKind kind, int k, KeNum e, const char *what)
{
	KeStore    *store = ke_memstore_create_strict(512);
	KeEngine   *eng = NULL;
	KeStatus	st = ke_create(&eng, store, kind, k, e);

	if (st != KE_ERR_ARG)
		fail("ke_create with %s: %s, expected KE_ERR_ARG", what, ke_status_message(st));
	if (ke_validate_params(kind, k, e) != KE_ERR_ARG)
		fail("ke_validate_params accepts %s", what);
	if (st == KE_OK && eng != NULL)
		ke_close(eng);
	ke_memstore_destroy(store);
}

/* An engine's state must still be what the model says */
static void
expect_unchanged(KeEngine *eng, KeKind kind, int k, KeNum e, const Model *mo)
{
	Expect		x;
	RunList		rl = {0, 0, NULL};
	PartList	pl = {0, 0, NULL};

	expect_compute(&x, kind, k, e, mo->d, mo->n);
	check_engine(eng, kind, k, e, &x, &rl, &pl);
	expect_free(&x);
	free(rl.r);
	free(pl.p);
}

/* Refused arguments and absent values */
static void
test_args(void)
{
	KeStore    *store;
	KeEngine   *eng;
	KeStatus	st;
	Model		mo;

	case_begin("args: ke_create refuses bad k and e");
	expect_create_refused(KE_KIND_EXACT, 1, num(KE_KIND_EXACT, 0), "k = 1");
	expect_create_refused(KE_KIND_EXACT, 0, num(KE_KIND_EXACT, 0), "k = 0");
	expect_create_refused(KE_KIND_EXACT, -3, num(KE_KIND_EXACT, 5), "k = -3");
	expect_create_refused(KE_KIND_FLOAT, 1, num(KE_KIND_FLOAT, 0), "float k = 1");
	expect_create_refused(KE_KIND_EXACT, KE_MAX_K + 1, num(KE_KIND_EXACT, 0), "k above KE_MAX_K");
	expect_create_refused(KE_KIND_EXACT, 3, num(KE_KIND_EXACT, -1), "e = -1");
	expect_create_refused(KE_KIND_FLOAT, 3, ke_num_float(-0.5), "float e = -0.5");
	expect_create_refused(KE_KIND_FLOAT, 3, ke_num_float(NAN), "float e = NaN");
	expect_create_refused(KE_KIND_FLOAT, 3, ke_num_float(INFINITY), "float e = infinity");
	expect_create_refused((KeKind) 7, 3, num(KE_KIND_EXACT, 0), "an unknown kind");
	case_end();

	case_begin("args: ke_create accepts the smallest valid parameters");
	store = ke_memstore_create_strict(512);
	st = ke_create(&eng, store, KE_KIND_EXACT, 2, num(KE_KIND_EXACT, 0));
	if (st != KE_OK)
		fail("ke_create(k = 2, e = 0): %s", ke_status_message(st));
	else
		ke_close(eng);
	ke_memstore_destroy(store);
	case_end();

	case_begin("args: ke_open of a store never created");
	store = ke_memstore_create_strict(512);
	st = ke_open(&eng, store);
	if (st != KE_ERR_CORRUPT)
		fail("ke_open on an empty store: %s, expected KE_ERR_CORRUPT", ke_status_message(st));
	if (st == KE_OK)
		ke_close(eng);
	ke_memstore_destroy(store);
	case_end();

	/* float kind: NaN and infinities are not values; nothing may change */
	case_begin("args: float kind refuses NaN and infinite values");
	store = ke_memstore_create_strict(512);
	mo = (Model) {KE_KIND_FLOAT, 0, 0, NULL};
	st = ke_create(&eng, store, KE_KIND_FLOAT, 2, ke_num_float(1.0));
	if (st != KE_OK)
		fail("ke_create: %s", ke_status_message(st));
	else
	{
		static const double good[] = {1, 2, 3, 3, 7};
		static const double bad[] = {NAN, INFINITY, -INFINITY};
		KeChange	batch[3];

		for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		{
			if ((st = ke_insert(eng, ke_num_float(good[i]))) != KE_OK)
				fail("ke_insert(%g): %s", good[i], ke_status_message(st));
			model_add(&mo, ke_num_float(good[i]), 1);
		}
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		{
			if ((st = ke_insert(eng, ke_num_float(bad[i]))) != KE_ERR_ARG)
				fail("ke_insert(%g): %s, expected KE_ERR_ARG", bad[i], ke_status_message(st));
			if ((st = ke_delete(eng, ke_num_float(bad[i]))) != KE_ERR_ARG &&
				st != KE_ERR_NOTFOUND)
				fail("ke_delete(%g): %s, expected an error", bad[i], ke_status_message(st));
		}
		/* a batch with one bad value is refused whole */
		batch[0] = (KeChange) {ke_num_float(5.0), 1};
		batch[1] = (KeChange) {ke_num_float(NAN), 1};
		batch[2] = (KeChange) {ke_num_float(1.0), -1};
		if ((st = ke_apply(eng, batch, 3)) != KE_ERR_ARG)
			fail("ke_apply with a NaN: %s, expected KE_ERR_ARG", ke_status_message(st));
		/* bulk build with a NaN is refused too */
		{
			KeNum		bulk[3] = {ke_num_float(1.0), ke_num_float(NAN), ke_num_float(2.0)};

			if ((st = ke_build_sorted(eng, bulk, 3)) != KE_ERR_ARG)
				fail("ke_build_sorted with a NaN: %s, expected KE_ERR_ARG",
					 ke_status_message(st));
		}
		expect_unchanged(eng, KE_KIND_FLOAT, 2, ke_num_float(1.0), &mo);
		ke_close(eng);
	}
	ke_memstore_destroy(store);
	free(mo.d);
	case_end();

	/* absent values */
	case_begin("args: deleting absent values");
	store = ke_memstore_create_strict(512);
	mo = (Model) {KE_KIND_EXACT, 0, 0, NULL};
	st = ke_create(&eng, store, KE_KIND_EXACT, 2, num(KE_KIND_EXACT, 1));
	if (st != KE_OK)
		fail("ke_create: %s", ke_status_message(st));
	else
	{
		KeChange	batch[3];

		if ((st = ke_delete(eng, num(KE_KIND_EXACT, 5))) != KE_ERR_NOTFOUND)
			fail("ke_delete on an empty engine: %s, expected KE_ERR_NOTFOUND",
				 ke_status_message(st));
		for (int v = 1; v <= 6; v++)
		{
			if ((st = ke_insert(eng, num(KE_KIND_EXACT, v * 10))) != KE_OK)
				fail("ke_insert(%d): %s", v * 10, ke_status_message(st));
			model_add(&mo, num(KE_KIND_EXACT, v * 10), 1);
		}
		if ((st = ke_insert(eng, num(KE_KIND_EXACT, 30))) != KE_OK)
			fail("ke_insert(30): %s", ke_status_message(st));
		model_add(&mo, num(KE_KIND_EXACT, 30), 1);
		if ((st = ke_delete(eng, num(KE_KIND_EXACT, 35))) != KE_ERR_NOTFOUND)
			fail("ke_delete(35): %s, expected KE_ERR_NOTFOUND", ke_status_message(st));
		if ((st = ke_delete(eng, num(KE_KIND_EXACT, 70))) != KE_ERR_NOTFOUND)
			fail("ke_delete(70), above every value: %s, expected KE_ERR_NOTFOUND",
				 ke_status_message(st));
		if ((st = ke_delete(eng, num(KE_KIND_EXACT, -5))) != KE_ERR_NOTFOUND)
			fail("ke_delete(-5), below every value: %s, expected KE_ERR_NOTFOUND",
				 ke_status_message(st));
		/* a batch that removes more copies than exist is refused whole */
		batch[0] = (KeChange) {num(KE_KIND_EXACT, 15), 2};
		batch[1] = (KeChange) {num(KE_KIND_EXACT, 30), -3};
		batch[2] = (KeChange) {num(KE_KIND_EXACT, 40), -1};
		if ((st = ke_apply(eng, batch, 3)) != KE_ERR_NOTFOUND)
			fail("ke_apply removing 3 of 2 copies: %s, expected KE_ERR_NOTFOUND",
				 ke_status_message(st));
		/* the second delete of a single copy finds nothing */
		if ((st = ke_delete(eng, num(KE_KIND_EXACT, 20))) != KE_OK)
			fail("ke_delete(20): %s", ke_status_message(st));
		model_remove(&mo, num(KE_KIND_EXACT, 20), 1);
		if ((st = ke_delete(eng, num(KE_KIND_EXACT, 20))) != KE_ERR_NOTFOUND)
			fail("second ke_delete(20): %s, expected KE_ERR_NOTFOUND", ke_status_message(st));
		expect_unchanged(eng, KE_KIND_EXACT, 2, num(KE_KIND_EXACT, 1), &mo);

		/* a handle re-opened on the same store sees the same state */
		ke_close(eng);
		if ((st = ke_open(&eng, store)) != KE_OK)
			fail("ke_open: %s", ke_status_message(st));
		else
		{
			if (ke_k(eng) != 2 || ke_kind(eng) != KE_KIND_EXACT ||
				!ke_num_eq(KE_KIND_EXACT, ke_e(eng), num(KE_KIND_EXACT, 1)))
				fail("re-opened engine has other parameters");
			expect_unchanged(eng, KE_KIND_EXACT, 2, num(KE_KIND_EXACT, 1), &mo);
			ke_close(eng);
		}
	}
	ke_memstore_destroy(store);
	free(mo.d);
	case_end();
}

/* ----------------------------------------------------------------
 * Float-kind errors that overflow
 * ----------------------------------------------------------------
 */

/*
 * Are the engine's partitions a valid (k,e)-partitioning of nrows rows in
 * ascending order?  Says what is wrong through fail().
 */
static void
check_parts_valid(KeKind kind, int k, KeNum e, const PartList *pl, int64_t nrows)
{
	int64_t		rows = 0;

	for (size_t p = 0; p < pl->n; p++)
	{
		const KePartition *pt = &pl->p[p];

		if (pt->ndistinct < k || !ke_num_range_ok(kind, pt->lo, pt->hi, e))
			fail("partition %s is not valid", part_text(kind, pt));
		if (p > 0 && ke_num_cmp(kind, pl->p[p - 1].hi, pt->lo) > 0)
			fail("partitions %s and %s overlap", part_text(kind, &pl->p[p - 1]),
				 part_text(kind, pt));
		rows += pt->n;
	}
	if (pl->n > 0 && rows != nrows)
		fail("partitions hold %lld rows, the engine %lld", (long long) rows,
			 (long long) nrows);
}

/*
 * A valid partitioning whose sum-error overflows double arithmetic is still
 * valid: the engine keeps feasibility apart from the error, so it must
 * neither lose the partitioning nor report one where none exists.  Against
 * ke_quadratic's feasibility and the plain rule (a valid partitioning exists
 * exactly when k distinct values span at least e).  Which valid
 * partitioning wins is not checked after incremental changes: errors past
 * the largest double are infinite, so the optimum is a tie broken by
 * rounding, and lazy offsets round differently from a fresh run.
 */
static void
test_overflow(int nseq)
{
	static const double pool[] = {-1.7e308, -1e308, -5e307, -1, 0, 1, 2, 5e307,
		1e308, 1.7e308, DBL_MAX, -DBL_MAX};
	const size_t npool = sizeof(pool) / sizeof(pool[0]);
	KeKind		kind = KE_KIND_FLOAT;

	for (int how = 0; how < 2; how++)
	{
		static const double vals[] = {1.7e308, -1.7e308, 0, 1};
		KeStore    *store = ke_memstore_create_strict(512);
		KeEngine   *eng;
		KeNum		sorted[4] = {ke_num_float(-1.7e308), ke_num_float(0), ke_num_float(1),
		ke_num_float(1.7e308)};
		PartList	pl = {0};
		Expect		x;
		KeNum		sum;
		char		msg[256];

		case_begin("overflow: {1.7e308, -1.7e308, 0, 1}, k = 2, e = 0, %s",
				   how == 0 ? "built" : "inserted");
		if (ke_create(&eng, store, kind, 2, ke_num_float(0)) != KE_OK)
			fail("ke_create failed");
		else
		{
			if (how == 0)
				ke_build_sorted(eng, sorted, 4);
			else
				for (int i = 0; i < 4; i++)
					ke_insert(eng, ke_num_float(vals[i]));
			if (ke_verify(eng, msg, sizeof(msg)) != KE_OK)
				fail("ke_verify: %s", msg);
			if (!ke_sum_error(eng, &sum))
				fail("ke_sum_error says no valid partitioning exists");
			else if (!isinf(sum.f))
				fail("sum-error %s, expected infinity in double arithmetic",
					 fmt_num(kind, sum));
			ke_foreach_partition(eng, collect_part, &pl);
			if (pl.n != 2 || pl.p[0].lo.f != -1.7e308 || pl.p[0].hi.f != 0 ||
				pl.p[1].lo.f != 1 || pl.p[1].hi.f != 1.7e308)
				fail("partitions %zu: %s %s, expected [-1.7e308..0] [1..1.7e308]", pl.n,
					 pl.n > 0 ? part_text(kind, &pl.p[0]) : "",
					 pl.n > 1 ? part_text(kind, &pl.p[1]) : "");
			expect_compute(&x, kind, 2, ke_num_float(0), sorted, 4);
			if (!x.has_sum || x.np != 2)
				fail("ke_quadratic: %s, %zu partitions", x.has_sum ? "valid" : "none valid",
					 x.np);
			expect_free(&x);
			ke_close(eng);
		}
		free(pl.p);
		ke_memstore_destroy(store);
		case_end();
	}

	for (int q = 0; q < nseq; q++)
	{
		int			k;
		KeNum		e;
		KeStore    *store;
		KeEngine   *eng;
		Model		mo = {kind, 0, 0, NULL};

		rng_seed(7000u + (unsigned) q);
		k = 2 + (int) rng_below(3);
		e = ke_num_float(rng_pct(50) ? 0 : rng_pct(50) ? 1e308 : 1.25e308);
		store = ke_memstore_create_strict(rng_pct(50) ? 512 : 8192);
		case_begin("overflow sequence %d: k=%d e=%g", q, k, e.f);
		if (ke_create(&eng, store, kind, k, e) != KE_OK)
		{
			fail("ke_create failed");
			ke_memstore_destroy(store);
			case_end();
			continue;
		}
		for (int op = 0; op < 60 && case_failures == 0; op++)
		{
			KeNum		v = ke_num_float(pool[rng_below(npool)]);
			bool		del = mo.n > 0 && rng_pct(35);
			PartList	pl = {0};
			Expect		x;
			KeNum		sum;
			bool		has;
			bool		rule;
			KeStatus	st;

			if (del)
				v = mo.d[rng_below(mo.n)];
			st = del ? ke_delete(eng, v) : ke_insert(eng, v);
			if (st != KE_OK)
			{
				fail("%s %g: %s", del ? "delete" : "insert", v.f, ke_status_message(st));
				break;
			}
			if (del)
				model_remove(&mo, v, 1);
			else
				model_add(&mo, v, 1);
			expect_compute(&x, kind, k, e, mo.d, mo.n);
			rule = mo.n > 0 && x.m >= (size_t) k &&
				ke_num_range_ok(kind, mo.d[0], mo.d[mo.n - 1], e);
			has = ke_sum_error(eng, &sum);
			if (has != x.has_sum || has != rule)
				fail("after %s %g: engine %s, ke_quadratic %s, the rule %s",
					 del ? "delete" : "insert", v.f, has ? "valid" : "none valid",
					 x.has_sum ? "valid" : "none valid", rule ? "valid" : "none valid");
			ke_foreach_partition(eng, collect_part, &pl);
			if (has != (pl.n > 0))
				fail("ke_sum_error and ke_foreach_partition disagree");
			check_parts_valid(kind, k, e, &pl, ke_nrows(eng));
			free(pl.p);
			expect_free(&x);
		}
		ke_close(eng);
		ke_memstore_destroy(store);
		free(mo.d);
		case_end();
	}
}

/*
 * ke_build_runs: building from runs (value, count) gives exactly the state
 * of building from the rows they stand for; runs out of order, repeated or
 * empty are refused.
 */
static void
test_build_runs(int nseq)
{
	for (int q = 0; q < nseq; q++)
	{
		KeKind		kind = q % 2 == 0 ? KE_KIND_EXACT : KE_KIND_FLOAT;
		int			k = 2 + q % 4;
		KeNum		e = num(kind, q % 3 == 0 ? 0 : (int64_t) (q % 7));
		size_t		m;
		KeNum	   *vals;
		int64_t    *counts;
		Model		mo = {kind, 0, 0, NULL};
		KeStore    *store = ke_memstore_create_strict(512);
		KeEngine   *eng;
		Expect		x;
		RunList		rl = {0};
		PartList	pl = {0};
		KeStatus	st;

		rng_seed(9000u + (unsigned) q);
		m = (size_t) rng_below(40);
		vals = xmalloc((m + 1) * sizeof(KeNum));
		counts = xmalloc((m + 1) * sizeof(int64_t));
		case_begin("build_runs %d: %zu runs, k=%d", q, m, k);
		for (size_t i = 0; i < m; i++)
		{
			vals[i] = num(kind, (int64_t) (i * 3 + rng_below(3)));
			counts[i] = 1 + (int64_t) rng_below(4);
			model_add(&mo, vals[i], counts[i]);
		}
		if (ke_create(&eng, store, kind, k, e) != KE_OK)
			fail("ke_create failed");
		else
		{
			if ((st = ke_build_runs(eng, vals, counts, m)) != KE_OK)
				fail("ke_build_runs: %s", ke_status_message(st));
			expect_compute(&x, kind, k, e, mo.d, mo.n);
			check_engine(eng, kind, k, e, &x, &rl, &pl);
			expect_free(&x);
			if (m >= 2)
			{
				KeNum		v0 = vals[0];
				int64_t		c0 = counts[0];

				vals[0] = vals[1];
				if (ke_build_runs(eng, vals, counts, m) != KE_ERR_ARG)
					fail("ke_build_runs took a repeated value");
				vals[0] = v0;
				counts[0] = 0;
				if (ke_build_runs(eng, vals, counts, m) != KE_ERR_ARG)
					fail("ke_build_runs took a run of no rows");
				counts[0] = c0;
			}
			ke_close(eng);
		}
		ke_memstore_destroy(store);
		free(vals);
		free(counts);
		free(mo.d);
		free(rl.r);
		free(pl.p);
		case_end();
	}
}

/* ----------------------------------------------------------------
 * Randomized differential tests
 * ----------------------------------------------------------------
 */
typedef enum OpType
{
	OP_INSERT,
	OP_DELETE,
	OP_BATCH,					/* ke_apply with mixed deltas */
	OP_BUILD,					/* ke_build_sorted replacing the contents */
	OP_REOPEN					/* ke_close and ke_open on the same store */
} OpType;

typedef struct Op
{
	OpType		type;
	int64_t		v;				/* OP_INSERT, OP_DELETE */
	size_t		n;				/* OP_BATCH: changes; OP_BUILD: values */
	int64_t    *cv;
	int64_t    *cd;
} Op;

typedef struct SeqParams
{
	unsigned	seed;
	KeKind		kind;
	int			k;
	int64_t		e;
	bool		e_half;			/* float kind: e is e + 0.5 */
	size_t		node_size;
	int64_t		lo;				/* value domain */
	int64_t		hi;
	int			dup_pct;		/* chance an insert repeats a present value */
	int			nops;
	int			target;			/* size the sequence wanders around */
	bool		waves;			/* grow to target, drain to empty, repeat */
	int			ordered;		/* deletes take the smallest (1) or largest (2) */
	bool		keep;			/* ke_keep_boundaries() (exact kind) */
} SeqParams;

/* e of a sequence as a number of its kind */
static KeNum
seq_e(const SeqParams *sp)
{
	if (sp->kind == KE_KIND_FLOAT)
		return ke_num_float((double) sp->e + (sp->e_half ? 0.5 : 0.0));
	return num(sp->kind, sp->e);
}

/* Describe a sequence's parameters */
static void
seq_text(const SeqParams *sp, char *buf, size_t len)
{
	char		eb[64];

	snprintf(buf, len, "seed %u: %s k=%d e=%s node=%zu domain=[%lld,%lld]%s",
			 sp->seed, sp->kind == KE_KIND_EXACT ? "exact" : "float", sp->k,
			 ke_num_format(sp->kind, seq_e(sp), eb, sizeof(eb)), sp->node_size,
			 (long long) sp->lo, (long long) sp->hi, sp->keep ? " keeping boundaries" : "");
}

/* Print an operation the way a reproduction would be written */
static void
op_print(const Op *op)
{
	switch (op->type)
	{
		case OP_INSERT:
			printf(" +%lld", (long long) op->v);
			break;
		case OP_DELETE:
			printf(" -%lld", (long long) op->v);
			break;
		case OP_BATCH:
			printf(" apply{");
			for (size_t i = 0; i < op->n; i++)
				printf("%s%lld:%+lld", i ? "," : "", (long long) op->cv[i],
					   (long long) op->cd[i]);
			printf("}");
			break;
		case OP_BUILD:
			printf(" build{");
			for (size_t i = 0; i < op->n; i++)
				printf("%s%lld", i ? "," : "", (long long) op->cv[i]);
			printf("}");
			break;
		case OP_REOPEN:
			printf(" reopen");
			break;
	}
}

/* Free the arrays of a list of operations */
static void
ops_free(Op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		free(ops[i].cv);
		free(ops[i].cd);
	}
	free(ops);
}

/* Copy a list of operations, arrays included */
static Op *
ops_copy(const Op *ops, size_t n)
{
	Op		   *c = xmalloc((n + 1) * sizeof(Op));

	for (size_t i = 0; i < n; i++)
	{
		c[i] = ops[i];
		c[i].cv = c[i].cd = NULL;
		if (ops[i].cv)
		{
			c[i].cv = xmalloc((ops[i].n + 1) * sizeof(int64_t));
			memcpy(c[i].cv, ops[i].cv, ops[i].n * sizeof(int64_t));
		}
		if (ops[i].cd)
		{
			c[i].cd = xmalloc((ops[i].n + 1) * sizeof(int64_t));
			memcpy(c[i].cd, ops[i].cd, ops[i].n * sizeof(int64_t));
		}
	}
	return c;
}

/* A value from the sequence's domain, often repeating a present one */
static int64_t
pick_value(const SeqParams *sp, const Model *mo)
{
	if (mo->n > 0 && rng_pct(sp->dup_pct))
	{
		KeNum		v = mo->d[rng_below(mo->n)];

		return sp->kind == KE_KIND_EXACT ? (int64_t) v.i : (int64_t) v.f;
	}
	return rng_range(sp->lo, sp->hi);
}

/* A present value, or a domain value when none is present */
static int64_t
pick_present(const SeqParams *sp, const Model *mo)
{
	KeNum		v;

	if (mo->n == 0)
		return rng_range(sp->lo, sp->hi);
	/* deleting from one end empties whole subtrees, then collapses the root */
	if (sp->ordered == 1 && rng_pct(90))
		v = mo->d[0];
	else if (sp->ordered == 2 && rng_pct(90))
		v = mo->d[mo->n - 1];
	else
		v = mo->d[rng_below(mo->n)];
	return sp->kind == KE_KIND_EXACT ? (int64_t) v.i : (int64_t) v.f;
}

/*
 * Generate a sequence's operations, simulating the multiset so that most
 * deletes hit present values; a few deliberately do not.
 */
static Op *
gen_ops(const SeqParams *sp, size_t *nops)
{
	Model		mo = {sp->kind, 0, 0, NULL};
	Op		   *ops = xmalloc((size_t) sp->nops * sizeof(Op));
	bool		draining = false;

	rng_seed(sp->seed * 7919u + 17u);
	for (int i = 0; i < sp->nops; i++)
	{
		Op		   *op = &ops[i];
		int			roll = (int) rng_below(100);
		bool		shrink = draining || (int) mo.n > sp->target;

		memset(op, 0, sizeof(*op));
		if (mo.n == 0)
			draining = false;
		else if (!draining && (rng_pct(2) || (sp->waves && (int) mo.n >= sp->target)))
			draining = true;	/* go all the way down to empty */

		if (roll < 2)
			op->type = OP_REOPEN;
		else if (roll < 4 && !draining)
			op->type = OP_BUILD;
		else if (roll < 18)
			op->type = OP_BATCH;
		else if (roll < (shrink ? 85 : 35))
			op->type = OP_DELETE;
		else
			op->type = OP_INSERT;

		switch (op->type)
		{
			case OP_INSERT:
				op->v = pick_value(sp, &mo);
				model_add(&mo, num(sp->kind, op->v), 1);
				break;
			case OP_DELETE:
				op->v = rng_pct(4) ? rng_range(sp->lo, sp->hi) : pick_present(sp, &mo);
				if (model_count(&mo, num(sp->kind, op->v)) > 0)
					model_remove(&mo, num(sp->kind, op->v), 1);
				break;
			case OP_BATCH:
				{
					/* mostly small batches; some above 16 entries */
					size_t		n = rng_pct(15) ? 17 + rng_below(MAX_BATCH - 16) :
						1 + rng_below(8);
					bool		valid = !rng_pct(3);
					Model		tmp = {sp->kind, 0, 0, NULL};

					op->n = n;
					op->cv = xmalloc(n * sizeof(int64_t));
					op->cd = xmalloc(n * sizeof(int64_t));
					tmp.d = xmalloc((mo.n + 1) * sizeof(KeNum));
					tmp.cap = mo.n + 1;
					if (mo.n > 0)
						memcpy(tmp.d, mo.d, mo.n * sizeof(KeNum));
					tmp.n = mo.n;
					for (size_t c = 0; c < n; c++)
					{
						bool		del = shrink ? rng_pct(75) : rng_pct(35);
						int64_t		v = del ? pick_present(sp, &tmp) : pick_value(sp, &tmp);
						int64_t		have = model_count(&tmp, num(sp->kind, v));
						int64_t		d;

						if (rng_pct(4))
							d = 0;		/* a no-op entry */
						else if (del && have > 0)
							d = -(int64_t) (1 + rng_below(have < 3 ? (uint64_t) have : 3));
						else
							d = 1 + (int64_t) rng_below(rng_pct(20) ? 3 : 1);
						if (!valid && c == n - 1)
							d = -(have + 1);	/* more than there is */
						op->cv[c] = v;
						op->cd[c] = d;
						if (d > 0)
							model_add(&tmp, num(sp->kind, v), d);
						else if (d < 0 && have >= -d)
							model_remove(&tmp, num(sp->kind, v), -d);
					}
					if (valid)
					{
						free(mo.d);
						mo = tmp;
					}
					else
						free(tmp.d);
					break;
				}
			case OP_BUILD:
				{
					size_t		n = rng_below((uint64_t) sp->target + 1);

					op->n = n;
					op->cv = xmalloc((n + 1) * sizeof(int64_t));
					mo.n = 0;
					for (size_t c = 0; c < n; c++)
					{
						op->cv[c] = pick_value(sp, &mo);
						model_add(&mo, num(sp->kind, op->cv[c]), 1);
					}
					break;
				}
			case OP_REOPEN:
				break;
		}
	}
	free(mo.d);
	*nops = (size_t) sp->nops;
	return ops;
}

/* Order int64 values */
static int
cmp_int64(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a,
				y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/*
 * A partitioning kept across changes is taken back by an engine built from
 * scratch over the same rows (ke_adopt_boundaries), which then lists the
 * same partitions; without one of its full ends it is refused, since the
 * merged partition's error exceeds the two's.
 */
static void
check_adopt(KeEngine *eng, KeKind kind, int k, KeNum e, const Model *mo, size_t node_size)
{
	PartList	have = {0, 0, NULL},
				got = {0, 0, NULL};
	KeBoundary *b;
	KeStore    *store = ke_memstore_create_strict(node_size);
	KeEngine   *fresh = NULL;
	bool		optimal;
	size_t		drop = SIZE_MAX;

	ke_foreach_partition(eng, collect_part, &have);
	b = xmalloc((have.n + 1) * sizeof(KeBoundary));
	for (size_t i = 0; i < have.n; i++)
	{
		b[i].value = have.p[i].hi;
		b[i].split = have.p[i].hi_split;
		if (!have.p[i].hi_split && i + 1 < have.n && drop == SIZE_MAX)
			drop = i;
	}
	if (ke_create(&fresh, store, kind, k, e) != KE_OK ||
		ke_build_sorted(fresh, mo->d, mo->n) != KE_OK)
		fail("adopt: could not build afresh");
	else
	{
		if (drop != SIZE_MAX)
		{
			KeBoundary *fewer = xmalloc((have.n + 1) * sizeof(KeBoundary));
			size_t		nf = 0;

			for (size_t i = 0; i < have.n; i++)
				if (i != drop)
					fewer[nf++] = b[i];
			if (ke_adopt_boundaries(fresh, fewer, nf, true, &optimal) != KE_OK || optimal)
				fail("adopt: a partitioning without the end at %s was taken", fmt_num(kind, b[drop].value));
			free(fewer);
		}
		if (ke_adopt_boundaries(fresh, b, have.n, true, &optimal) != KE_OK || !optimal)
			fail("adopt: the kept partitioning (%zu partitions) was refused", have.n);
		ke_foreach_partition(fresh, collect_part, &got);
		if (got.n != have.n)
			fail("adopt: %zu partitions after, %zu kept", got.n, have.n);
		for (size_t i = 0; i < got.n && i < have.n; i++)
			if (!part_same(kind, &got.p[i], &have.p[i]))
				fail("adopt: partition %zu is %s, kept %s", i, part_text(kind, &got.p[i]),
					 part_text(kind, &have.p[i]));
		{
			char		msg[256];

			if (ke_verify(fresh, msg, sizeof(msg)) != KE_OK)
				fail("adopt: ke_verify: %s", msg);
		}
	}
	if (fresh)
		ke_close(fresh);
	ke_memstore_destroy(store);
	free(b);
	free(have.p);
	free(got.p);
}

/*
 * Run a sequence against the engine, the oracle and the baselines, checking
 * after every operation.  Returns the index of the first operation after
 * which something failed, or -1.  The current case collects the failures.
 */
static int64_t
run_sequence(const SeqParams *sp, const Op *ops, size_t nops)
{
	KeKind		kind = sp->kind;
	KeNum		e = seq_e(sp);
	KeStore    *store = ke_memstore_create_strict(sp->node_size);
	KeEngine   *eng = NULL;
	KePaperInc *pi = ke_paperinc_create(kind, sp->k, e);
	bool		pi_synced = true;
	Model		mo = {kind, 0, 0, NULL};
	Expect		ox;
	RunList		rl = {0, 0, NULL};
	PartList	opl = {0, 0, NULL},
				npl = {0, 0, NULL};
	KeStatus	st;
	int64_t		failed_at = -1;
	int		   *oflags;			/* the end flags the oracle expects now */

	st = ke_create(&eng, store, kind, sp->k, e);
	if (st != KE_OK)
	{
		fail("ke_create: %s", ke_status_message(st));
		ke_paperinc_destroy(pi);
		ke_memstore_destroy(store);
		return 0;
	}
	ke_keep_boundaries(eng, sp->keep);
	expect_compute(&ox, kind, sp->k, e, NULL, 0);
	oflags = scratch_flags(&ox);

	for (size_t i = 0; i < nops && failed_at < 0; i++)
	{
		const Op   *op = &ops[i];
		KeStatus	want = KE_OK;
		bool		changed = true;
		int			before = case_failures;
		Expect		nx;
		int		   *nflags;

		switch (op->type)
		{
			case OP_INSERT:
				{
					KeNum		v = num(kind, op->v);

					st = ke_insert(eng, v);
					if (!pi_synced)
						ke_paperinc_build(pi, mo.d, mo.n);
					ke_paperinc_insert(pi, v);
					pi_synced = true;
					model_add(&mo, v, 1);
					break;
				}
			case OP_DELETE:
				{
					KeNum		v = num(kind, op->v);

					st = ke_delete(eng, v);
					if (model_count(&mo, v) > 0)
					{
						model_remove(&mo, v, 1);
						pi_synced = false;
					}
					else
					{
						want = KE_ERR_NOTFOUND;
						changed = false;
					}
					break;
				}
			case OP_BATCH:
				{
					KeChange   *ch = xmalloc((op->n + 1) * sizeof(KeChange));
					int64_t    *sv = xmalloc((op->n + 1) * sizeof(int64_t));
					KeChange   *net = xmalloc((op->n + 1) * sizeof(KeChange));
					size_t		nd = 0;

					for (size_t c = 0; c < op->n; c++)
					{
						ch[c].value = num(kind, op->cv[c]);
						ch[c].delta = op->cd[c];
					}
					st = ke_apply(eng, ch, op->n);

					/* the batch is valid iff every value's net count stays >= 0 */
					memcpy(sv, op->cv, op->n * sizeof(int64_t));
					qsort(sv, op->n, sizeof(int64_t), cmp_int64);
					for (size_t c = 0; c < op->n; c++)
					{
						int64_t		sum = 0;

						if (c > 0 && sv[c] == sv[c - 1])
							continue;
						for (size_t j = 0; j < op->n; j++)
							if (op->cv[j] == sv[c])
								sum += op->cd[j];
						if (model_count(&mo, num(kind, sv[c])) + sum < 0)
							want = KE_ERR_NOTFOUND;
						net[nd].value = num(kind, sv[c]);
						net[nd].delta = sum;
						nd++;
					}
					if (want == KE_OK)
					{
						for (size_t c = 0; c < nd; c++)
						{
							if (net[c].delta > 0)
								model_add(&mo, net[c].value, net[c].delta);
							else if (net[c].delta < 0)
								model_remove(&mo, net[c].value, -net[c].delta);
						}
						pi_synced = false;
					}
					else
						changed = false;
					free(ch);
					free(sv);
					free(net);
					break;
				}
			case OP_BUILD:
				{
					KeNum	   *d = xmalloc((op->n + 1) * sizeof(KeNum));
					int64_t    *sv = xmalloc((op->n + 1) * sizeof(int64_t));

					memcpy(sv, op->cv, op->n * sizeof(int64_t));
					qsort(sv, op->n, sizeof(int64_t), cmp_int64);
					for (size_t c = 0; c < op->n; c++)
						d[c] = num(kind, sv[c]);
					st = ke_build_sorted(eng, d, op->n);
					mo.n = 0;
					for (size_t c = 0; c < op->n; c++)
						model_add(&mo, d[c], 1);
					pi_synced = false;
					free(d);
					free(sv);
					break;
				}
			case OP_REOPEN:
				ke_close(eng);
				eng = NULL;
				st = ke_open(&eng, store);
				if (st == KE_OK)
					ke_keep_boundaries(eng, sp->keep);
				changed = false;
				if (st != KE_OK)
				{
					fail("op %zu: ke_open: %s", i, ke_status_message(st));
					failed_at = (int64_t) i;
					continue;
				}
				break;
		}
		if (st != want)
			fail("op %zu: status %s, expected %s", i, ke_status_message(st),
				 ke_status_message(want));

		expect_compute(&nx, kind, sp->k, e, mo.d, mo.n);
		/* a build starts afresh: the report's rule, as with no old boundary */
		nflags = sp->keep && op->type != OP_BUILD
			? keep_flags(kind, sp->k, e, &nx, &ox, oflags) : scratch_flags(&nx);
		check_engine_flags(eng, kind, sp->k, e, &nx, sp->keep ? nflags : NULL, &rl, &npl);
		if (changed && st == KE_OK && op->type != OP_REOPEN)
			check_change(eng, kind, &ox, &opl, &nx, &npl);
		if (op->type == OP_INSERT)
			check_paperinc(pi, kind, &nx);
		check_approx(kind, sp->k, e, &nx);
		ops_checked++;

		if (case_failures > before)
		{
			failed_at = (int64_t) i;
			if (!quiet && cases_failed < MAX_FAIL_CASES)
			{
				printf("      ... after op %zu:", i);
				op_print(op);
				printf(" (%zu values)\n", mo.n);
			}
		}

		/* the new state becomes the old one */
		expect_free(&ox);
		ox = nx;
		free(oflags);
		oflags = nflags;
		{
			PartList	t = opl;

			opl = npl;
			npl = t;
		}
	}

	if (sp->keep && eng != NULL && failed_at < 0)
		check_adopt(eng, kind, sp->k, e, &mo, sp->node_size);
	expect_free(&ox);
	free(oflags);
	free(rl.r);
	free(opl.p);
	free(npl.p);
	free(mo.d);
	ke_paperinc_destroy(pi);
	if (eng)
		ke_close(eng);
	ke_memstore_destroy(store);
	return failed_at;
}

/* Replay quietly: does the sequence still fail? */
static bool
still_fails(const SeqParams *sp, const Op *ops, size_t nops)
{
	int			saved = case_failures;
	bool		saved_quiet = quiet;
	int64_t		at;

	quiet = true;
	case_failures = 0;
	at = run_sequence(sp, ops, nops);
	case_failures = saved;
	quiet = saved_quiet;
	return at >= 0;
}

/* Drop ops[at..at+len-1] from a copy of ops[0..n-1] */
static Op *
ops_without(const Op *ops, size_t n, size_t at, size_t len)
{
	Op		   *c = xmalloc((n + 1) * sizeof(Op));
	Op		   *keep;
	size_t		j = 0;

	for (size_t i = 0; i < n; i++)
		if (i < at || i >= at + len)
			c[j++] = ops[i];
	keep = ops_copy(c, j);
	free(c);
	return keep;
}

/*
 * Shrink a failing sequence: cut it after the failing operation, then drop
 * runs of operations (halves, quarters, ... single ones) and entries of
 * batches and builds while it still fails, within a time budget.  Prints
 * the smallest sequence found.
 */
static void
shrink_and_print(const SeqParams *sp, const Op *ops, size_t nops, size_t failed_at)
{
	size_t		n = failed_at + 1;
	Op		   *cur = ops_copy(ops, n);
	int			runs = 0;
	bool		progress = true;
	char		desc[256];
	clock_t		deadline = clock() + (clock_t) (SHRINK_SECONDS * CLOCKS_PER_SEC);
	int64_t		saved_ops = ops_checked;	/* replays are not new checks */

	while (progress && clock() < deadline)
	{
		progress = false;
		for (size_t len = n / 2 > 0 ? n / 2 : 1; len >= 1 && clock() < deadline; len /= 2)
		{
			/* from the end: later operations depend on earlier ones */
			for (size_t at = n >= len ? n - len + 1 : 0; at-- > 0 && clock() < deadline;)
			{
				Op		   *trial;

				if (at + len > n)
					continue;
				trial = ops_without(cur, n, at, len);
				runs++;
				if (still_fails(sp, trial, n - len))
				{
					ops_free(cur, n);
					cur = trial;
					n -= len;
					progress = true;
					if (at > n)
						at = n;
				}
				else
					ops_free(trial, n - len);
			}
		}
		/* entries inside batches and builds */
		for (size_t i = 0; i < n && clock() < deadline; i++)
		{
			if (cur[i].type != OP_BATCH && cur[i].type != OP_BUILD)
				continue;
			for (size_t c = cur[i].n; c-- > 0 && clock() < deadline;)
			{
				Op		   *trial = ops_copy(cur, n);
				Op		   *t = &trial[i];

				memmove(&t->cv[c], &t->cv[c + 1], (t->n - c - 1) * sizeof(int64_t));
				if (t->cd)
					memmove(&t->cd[c], &t->cd[c + 1], (t->n - c - 1) * sizeof(int64_t));
				t->n--;
				runs++;
				if (t->n > 0 && still_fails(sp, trial, n))
				{
					ops_free(cur, n);
					cur = trial;
					progress = true;
				}
				else
					ops_free(trial, n);
			}
		}
	}

	seq_text(sp, desc, sizeof(desc));
	printf("      smallest failing sequence found (%zu of %zu ops, %d replays): %s:\n       ",
		   n, nops, runs, desc);
	for (size_t i = 0; i < n; i++)
		op_print(&cur[i]);
	printf("\n");
	/* show what the shrunk sequence reports */
	{
		bool		saved_quiet = quiet;
		int			saved = case_failures;

		quiet = false;
		case_failures = 0;
		printf("      its failures:\n");
		(void) run_sequence(sp, cur, n);
		case_failures = saved;
		quiet = saved_quiet;
	}
	ops_free(cur, n);
	ops_checked = saved_ops;
}

/* Choose a sequence's parameters from its seed */
static void
seq_params(SeqParams *sp, unsigned seed)
{
	int			dom;
	int64_t		width;

	rng_seed(seed);
	memset(sp, 0, sizeof(*sp));
	sp->seed = seed;
	sp->kind = rng_pct(30) ? KE_KIND_FLOAT : KE_KIND_EXACT;
	sp->k = rng_pct(55) ? 2 + (int) rng_below(3) : 2 + (int) rng_below(9);
	sp->node_size = rng_pct(70) ? 512 : rng_pct(60) ? 8192 : 1024;

	dom = (int) rng_below(100);
	if (dom < 35)
	{
		/* heavy duplicates */
		sp->lo = 0;
		sp->hi = rng_pct(50) ? 8 : sp->k + (int) rng_below(6);
	}
	else if (dom < 65)
	{
		sp->lo = rng_pct(30) ? -50 : 0;
		sp->hi = sp->lo + 100;
	}
	else if (dom < 90 || sp->kind == KE_KIND_FLOAT)
	{
		/* all-distinct likely; within 2^40 so float sums stay exact */
		sp->lo = rng_pct(20) ? -1000000 : 0;
		sp->hi = rng_pct(50) ? 1000000 : (INT64_C(1) << 40);
	}
	else
	{
		/* huge values: sums need the 128-bit exact kind */
		sp->lo = -(INT64_C(1) << 61);
		sp->hi = INT64_C(1) << 61;
	}
	sp->dup_pct = rng_pct(40) ? 0 : rng_pct(50) ? 10 : 40;

	width = sp->hi - sp->lo;
	switch (rng_below(7))
	{
		case 0:
			sp->e = 0;
			break;
		case 1:
			sp->e = 1;
			break;
		case 2:
			sp->e = (int64_t) rng_below(4);
			break;
		case 3:
			sp->e = rng_range(0, width / 8);
			break;
		case 4:
			sp->e = rng_range(0, width / 2);
			break;
		case 5:
			sp->e = rng_range(0, width);
			break;
		default:
			/* wider than the domain: never valid */
			sp->e = width + 1 + (int64_t) rng_below(10);
			break;
	}
	if (sp->kind == KE_KIND_FLOAT && sp->e < width && rng_pct(30))
		sp->e_half = true;		/* a fractional e */

	/*
	 * Mostly small multisets (the oracle is quadratic), some large enough
	 * for trees of three or four levels with 512-byte nodes; some sequences
	 * grow and drain in waves so that trees also shrink level by level.
	 */
	sp->waves = rng_pct(25);
	sp->ordered = rng_pct(85) ? 0 : 1 + (int) rng_below(2);
	/* half the exact sequences keep boundaries (without drawing: same ops) */
	sp->keep = sp->kind == KE_KIND_EXACT && seed % 2 == 0;
	if (rng_pct(55))
	{
		sp->target = 5 + (int) rng_below(40);
		sp->nops = 60 + (int) rng_below(200);
	}
	else if (rng_pct(65))
	{
		sp->target = 40 + (int) rng_below(120);
		sp->nops = 100 + (int) rng_below(300);
	}
	else
	{
		sp->target = 150 + (int) rng_below(250);
		sp->nops = 200 + (int) rng_below(600);
	}
}

/* Many deterministic random sequences, each checked after every operation */
static void
test_random(unsigned first_seed, int nseq)
{
	int			passed = 0,
				failed = 0,
				shrunk = 0;
	clock_t		t0 = clock();

	for (int s = 0; s < nseq; s++)
	{
		SeqParams	sp;
		size_t		nops;
		Op		   *ops;
		int64_t		at;
		char		desc[256];

		seq_params(&sp, first_seed + (unsigned) s);
		ops = gen_ops(&sp, &nops);
		seq_text(&sp, desc, sizeof(desc));
		case_begin("random %s", desc);
		at = run_sequence(&sp, ops, nops);
		if (at >= 0 && shrunk < 3 && cases_failed < MAX_FAIL_CASES)
		{
			/* shrinking replays many times; a handful of failures is enough */
			shrink_and_print(&sp, ops, nops, (size_t) at);
			shrunk++;
		}
		if (case_end())
			passed++;
		else
			failed++;
		ops_free(ops, nops);
	}
	printf("random: %d sequences, %d passed, %d failed, %lld operations checked (%.1f s)\n",
		   nseq, passed, failed, (long long) ops_checked,
		   (double) (clock() - t0) / CLOCKS_PER_SEC);
}

/* Insert-only runs of the report's incremental algorithm on larger inputs */
static void
test_paperinc(int nseq)
{
	int64_t		inserts = 0;

	for (int s = 0; s < nseq; s++)
	{
		SeqParams	sp;
		KeNum		e;
		KePaperInc *pi;
		Model		mo;
		int			n;

		seq_params(&sp, 5000u + (unsigned) s);
		e = seq_e(&sp);
		mo = (Model) {sp.kind, 0, 0, NULL};
		pi = ke_paperinc_create(sp.kind, sp.k, e);
		n = 100 + (int) rng_below(300);
		case_begin("paperinc seed %u: k=%d e=%s n=%d", sp.seed, sp.k,
				   fmt_num(sp.kind, e), n);
		/* start from a bulk build half of the time */
		if (rng_pct(50))
		{
			for (int i = 0; i < n / 3; i++)
				model_add(&mo, num(sp.kind, pick_value(&sp, &mo)), 1);
			ke_paperinc_build(pi, mo.d, mo.n);
		}
		for (int i = (int) mo.n; i < n && case_failures == 0; i++)
		{
			KeNum		v = num(sp.kind, pick_value(&sp, &mo));
			Expect		x;

			ke_paperinc_insert(pi, v);
			model_add(&mo, v, 1);
			expect_compute(&x, sp.kind, sp.k, e, mo.d, mo.n);
			check_paperinc(pi, sp.kind, &x);
			check_approx(sp.kind, sp.k, e, &x);
			expect_free(&x);
			inserts++;
		}
		case_end();
		ke_paperinc_destroy(pi);
		free(mo.d);
	}
	printf("paperinc: %d sequences, %lld inserts checked\n", nseq, (long long) inserts);
}

/* ----------------------------------------------------------------
 * Safe successive releases: the constrained DP against exhaustive search
 * ----------------------------------------------------------------
 */

/*
 * Does the partition d[start..end] breach the old range [c, d]: it holds
 * some of the rows whose values lie in that range, but not all of them?
 * Rows, not bare values: an old partition whose rows are partly gone is
 * still respected by keeping its remaining rows together.
 */
static bool
breaches(const int64_t *d, int n, int start, int end, int64_t c, int64_t dd)
{
	int			inside = 0,
				total = 0;

	for (int i = 0; i < n; i++)
	{
		if (d[i] < c || d[i] > dd)
			continue;
		total++;
		if (i >= start && i <= end)
			inside++;
	}
	return inside > 0 && inside < total;
}

/*
 * The least sum-error over every partitioning of sorted d[0..n-1] whose
 * partitions hold >= k distinct values, span >= e and overlap no old range
 * partially; -1 when none exists.  Tries all 2^(n-1) sets of cuts.
 */
static int64_t
brute_release(const int64_t *d, int n, int k, int64_t e,
			  const int64_t *olo, const int64_t *ohi, int nold)
{
	int64_t		bestv = -1;

	for (uint32_t mask = 0; mask < (1u << (n - 1)); mask++)
	{
		int			start = 0;
		int64_t		sum = 0;
		bool		ok = true;

		for (int i = 0; i < n && ok; i++)
		{
			if (i < n - 1 && !(mask & (1u << i)))
				continue;
			/* a partition d[start..i] */
			{
				int			distinct = 1;

				for (int j = start + 1; j <= i; j++)
					if (d[j] != d[j - 1])
						distinct++;
				if (distinct < k || d[i] - d[start] < e)
					ok = false;
				for (int o = 0; o < nold && ok; o++)
					if (breaches(d, n, start, i, olo[o], ohi[o]))
						ok = false;
				sum += d[i] - d[start];
			}
			start = i + 1;
		}
		if (ok && (bestv < 0 || sum < bestv))
			bestv = sum;
	}
	return bestv;
}

/* Compare the release DP with exhaustive search on small random inputs */
static void
test_releases(int ncases)
{
	int			checked = 0;

	for (int c = 0; c < ncases; c++)
	{
		int			n = 2 + (int) rng_below(11);
		int			k = 2 + (int) rng_below(3);
		int64_t		hi = (int64_t) rng_below(3) == 0 ? 6 : 40;
		int64_t		e = (int64_t) rng_below(4) * (hi / 10);
		int64_t		d[16],
					olo[16],
					ohi[16];
		KeNum		vals[16],
					dlo[16],
					dhi[16],
					E[16],
					best[16],
					argmin[16];
		int64_t		counts[16],
					frontier[16];
		int			argmin_last[16],
					end[16];
		bool		cut_after[16],
					cut_in[16],
					feasible[16];
		int			nold = 0;
		size_t		m = 0;
		int64_t		want,
					got;

		case_begin("release case %d", c);
		for (int i = 0; i < n; i++)
			d[i] = (int64_t) rng_below((uint64_t) hi + 1);
		qsort(d, n, sizeof(int64_t), cmp_int64);
		/* a previous release: disjoint or touching ranges over the domain */
		for (int64_t at = 0; at <= hi && nold < 8;)
		{
			int64_t		len = (int64_t) rng_below((uint64_t) hi / 3 + 1);

			if (rng_below(3) != 0)
			{
				olo[nold] = at;
				ohi[nold] = at + len;
				nold++;
			}
			at += len + (int64_t) rng_below(2);
		}
		for (int i = 0; i < n; i++)
		{
			if (m > 0 && vals[m - 1].i == d[i])
				counts[m - 1]++;
			else
			{
				vals[m] = ke_num_int(d[i]);
				counts[m] = 1;
				m++;
			}
		}
		for (int o = 0; o < nold; o++)
		{
			dlo[o] = ke_num_int(olo[o]);
			dhi[o] = ke_num_int(ohi[o]);
		}
		ke_release_cuts(KE_KIND_EXACT, vals, m, dlo, dhi, (size_t) nold, cut_after, cut_in);
		ke_masked_dp(KE_KIND_EXACT, k, ke_num_int(e), vals, counts, m, cut_after, cut_in,
					 E, feasible, best, argmin, argmin_last, frontier, end);
		want = brute_release(d, n, k, e, olo, ohi, nold);
		got = feasible[m - 1] ? (int64_t) E[m - 1].i : -1;
		if (got != want)
			fail("n=%d k=%d e=%lld olds=%d: release DP says %lld, exhaustive search %lld",
				 n, k, (long long) e, nold, (long long) got, (long long) want);
		else if (got >= 0)
		{
			/* the flagged partitions are valid, safe and add up to E */
			int64_t		sum = 0;
			size_t		start = 0;
			int			pstart = 0;		/* first row position of the partition */
			int			pos = 0;		/* first row position of run r */

			for (size_t r = 0; r < m; pos += (int) counts[r], r++)
			{
				int			pend;

				if (end[r] == KE_END_NONE)
					continue;
				pend = pos + (int) counts[r] - 1 - (end[r] == KE_END_SPLIT ? 1 : 0);
				{
					int64_t		lo = vals[start].i,
								hv = vals[r].i;
					int			distinct = (int) (r - start + 1);

					if (distinct < k || hv - lo < e)
						fail("partition [%lld, %lld] violates k or e", (long long) lo, (long long) hv);
					for (int o = 0; o < nold; o++)
						if (breaches(d, n, pstart, pend, olo[o], ohi[o]))
							fail("partition [%lld, %lld] breaches old [%lld, %lld]",
								 (long long) lo, (long long) hv, (long long) olo[o], (long long) ohi[o]);
					sum += hv - lo;
				}
				start = end[r] == KE_END_SPLIT ? r : r + 1;
				pstart = pend + 1;
			}
			if (sum != got)
				fail("flagged partitions add up to %lld, E says %lld", (long long) sum, (long long) got);
		}
		case_end();
		checked++;
	}
	printf("releases: %d cases against exhaustive search\n", checked);
}

/*
 * Sequences of inserts, deletes and releases: each release is the
 * constrained optimum against the one before, as exhaustive search finds
 * it, and breaches none of its ranges.
 */
static void
test_release_sequences(int nseq)
{
	int			releases = 0;

	for (int q = 0; q < nseq; q++)
	{
		int			k = 2 + (int) rng_below(3);
		int64_t		hi = 30;
		int64_t		e = (int64_t) rng_below(4) * 3;
		int64_t		d[24];
		int			n = 0;
		int64_t		olo[24],
					ohi[24];
		int			nold = 0;

		case_begin("release sequence %d (k=%d e=%lld)", q, k, (long long) e);
		for (int round = 0; round < 6; round++)
		{
			KeNum		vals[24],
						dlo[24],
						dhi[24],
						E[24],
						best[24],
						argmin[24];
			int64_t		counts[24],
						frontier[24];
			int			argmin_last[24],
						end[24];
			bool		cut_after[24],
						cut_in[24];
			size_t		m = 0;
			int64_t		want,
						got;
			int			adds = 1 + (int) rng_below(4),
						dels = (int) rng_below(3);

			for (int i = 0; i < adds && n < 12; i++)
				d[n++] = (int64_t) rng_below((uint64_t) hi + 1);
			for (int i = 0; i < dels && n > 0; i++)
			{
				int			j = (int) rng_below((uint64_t) n);

				d[j] = d[--n];
			}
			if (n == 0)
				continue;
			qsort(d, n, sizeof(int64_t), cmp_int64);
			for (int i = 0; i < n; i++)
			{
				if (m > 0 && vals[m - 1].i == d[i])
					counts[m - 1]++;
				else
				{
					vals[m] = ke_num_int(d[i]);
					counts[m] = 1;
					m++;
				}
			}
			for (int o = 0; o < nold; o++)
			{
				dlo[o] = ke_num_int(olo[o]);
				dhi[o] = ke_num_int(ohi[o]);
			}
			ke_release_cuts(KE_KIND_EXACT, vals, m, dlo, dhi, (size_t) nold, cut_after, cut_in);
			ke_constrained_dp(KE_KIND_EXACT, k, ke_num_int(e), vals, counts, m, cut_after, cut_in,
							  E, best, argmin, argmin_last, frontier, end);
			want = brute_release(d, n, k, e, olo, ohi, nold);
			got = ke_num_is_inf(KE_KIND_EXACT, E[m - 1]) ? -1 : (int64_t) E[m - 1].i;
			if (got != want)
			{
				fail("round %d, %d rows, %d previous ranges: release DP %lld, exhaustive %lld",
					 round, n, nold, (long long) got, (long long) want);
				break;
			}
			if (got < 0)
				continue;		/* no release: the previous one stays */
			/* this release's partitions become the ranges to respect */
			{
				size_t		start = 0;

				nold = 0;
				for (size_t r = 0; r < m; r++)
				{
					if (end[r] == KE_END_NONE)
						continue;
					olo[nold] = vals[start].i;
					ohi[nold] = vals[r].i;
					nold++;
					start = end[r] == KE_END_SPLIT ? r : r + 1;
				}
			}
			releases++;
		}
		case_end();
	}
	printf("release sequences: %d sequences, %d releases against exhaustive search\n",
		   nseq, releases);
}

/*
 * A release planned over the previous release's partitions (blocks) and
 * arrivals, against exhaustive search at the level of values: every subset
 * of the arrivals' distinct values released, every partitioning of the
 * released values and whole blocks into consecutive groups, each group
 * adding none or at least k distinct arrival values spanning at least e
 * (none only to a group that holds a block).  The plan must leave the
 * least total uncertainty (each released row its group's range, each
 * withheld row the range of all values), releasing as many arrival rows
 * at the same sum-error as the best such release, and its own partitions
 * must satisfy the rule.
 */
typedef struct PlanCase
{
	int			nblocks;
	int64_t		blo[4],
				bhi[4],
				bkept[4];
	int			nvals;
	int64_t		val[8],
				cnt[8];
} PlanCase;

/* The block holding value v within its range, or -1 */
static int
plan_block_of(const PlanCase *pc, int64_t v)
{
	for (int b = 0; b < pc->nblocks; b++)
		if (pc->blo[b] <= v && v <= pc->bhi[b])
			return b;
	return -1;
}

/* Best (loss, admitted, error) by exhaustive search */
static void
plan_exhaustive(const PlanCase *pc, int k, int64_t e, int64_t *best_loss, int64_t *best_adm,
				int64_t *best_err)
{
	int64_t		lo_all = INT64_MAX,
				hi_all = INT64_MIN,
				all_rows = 0;

	for (int b = 0; b < pc->nblocks; b++)
	{
		lo_all = pc->blo[b] < lo_all ? pc->blo[b] : lo_all;
		hi_all = pc->bhi[b] > hi_all ? pc->bhi[b] : hi_all;
	}
	for (int v = 0; v < pc->nvals; v++)
	{
		lo_all = pc->val[v] < lo_all ? pc->val[v] : lo_all;
		hi_all = pc->val[v] > hi_all ? pc->val[v] : hi_all;
		all_rows += pc->cnt[v];
	}
	*best_loss = -1;
	*best_adm = -1;
	*best_err = 0;
	for (int mask = 0; mask < (1 << pc->nvals); mask++)
	{
		/* elements in value order: blocks (with their admitted values), free values */
		int64_t		elo[12],
					ehi[12];
		int			eblock[12];
		int			nel = 0;
		int			b = 0,
					v = 0;

		while (b < pc->nblocks || v < pc->nvals)
		{
			if (v < pc->nvals && plan_block_of(pc, pc->val[v]) >= 0)
			{
				v++;			/* attached: goes with its block */
				continue;
			}
			if (b < pc->nblocks && (v >= pc->nvals || pc->blo[b] < pc->val[v]))
			{
				elo[nel] = pc->blo[b];
				ehi[nel] = pc->bhi[b];
				eblock[nel++] = b++;
			}
			else
			{
				if (mask & (1 << v))
				{
					elo[nel] = ehi[nel] = pc->val[v];
					eblock[nel++] = -1 - v;
				}
				v++;
			}
		}
		for (int cuts = 0; cuts < (1 << (nel > 0 ? nel - 1 : 0)); cuts++)
		{
			int64_t		adm = 0,
						err = 0,
						loss = 0;
			bool		ok = true;
			int			start = 0;

			for (int i = 0; i < nel && ok; i++)
			{
				int64_t		amin = 0,
							amax = 0,
							rows = 0,
							kept = 0;
				int			distinct = 0;
				bool		has_block = false;

				if (i < nel - 1 && !(cuts & (1 << i)))
					continue;
				/* group start .. i */
				for (int j = start; j <= i; j++)
				{
					if (eblock[j] >= 0)
					{
						has_block = true;
						kept += pc->bkept[eblock[j]];
					}
					for (int x = 0; x < pc->nvals; x++)
					{
						bool		in = eblock[j] >= 0 ?
							plan_block_of(pc, pc->val[x]) == eblock[j] && (mask & (1 << x)) :
							x == -1 - eblock[j];

						if (!in)
							continue;
						if (rows == 0 || pc->val[x] < amin)
							amin = pc->val[x];
						if (rows == 0 || pc->val[x] > amax)
							amax = pc->val[x];
						rows += pc->cnt[x];
						distinct++;
					}
				}
				if (rows > 0 ? !(distinct >= k && amax - amin >= e) : !has_block)
					ok = false;
				adm += rows;
				err += ehi[i] - elo[start];
				loss += (kept + rows) * (ehi[i] - elo[start]);
				start = i + 1;
			}
			if (!ok)
				continue;
			loss += (all_rows - adm) * (hi_all - lo_all);
			if (*best_loss < 0 || loss < *best_loss ||
				(loss == *best_loss && (adm > *best_adm || (adm == *best_adm && err < *best_err))))
			{
				*best_loss = loss;
				*best_adm = adm;
				*best_err = err;
			}
		}
	}
}

static void
test_release_plans(int ncases)
{
	int			checked = 0;

	for (int c = 0; c < ncases; c++)
	{
		PlanCase	pc = {0};
		KeReleaseItem items[12];
		int64_t		part[12],
					nparts;
		bool		released[12];
		int			nitems = 0;
		int			k = (int) rng_range(2, 3);
		int64_t		e = rng_range(0, 6);
		int64_t		pos = 0,
					adm,
					err,
					want_loss,
					want_adm,
					want_err;
		KeNum		kerr;

		rng_seed(90000 + (uint64_t) c);
		k = (int) rng_range(2, 3);
		e = rng_range(0, 6);
		/* blocks and values in value order, some values inside blocks */
		while (pc.nblocks + pc.nvals < (int) rng_range(2, 9))
		{
			if (pc.nblocks < 3 && rng_pct(35))
			{
				int64_t		width = rng_range(1, 5);

				pc.blo[pc.nblocks] = pos;
				pc.bhi[pc.nblocks] = pos + width;
				pc.bkept[pc.nblocks] = rng_range(1, 4);
				/* values strictly inside it */
				for (int64_t x = pos + 1; x < pos + width && pc.nvals < 7; x++)
					if (rng_pct(40))
					{
						pc.val[pc.nvals] = x;
						pc.cnt[pc.nvals++] = rng_range(1, 2);
					}
				pc.nblocks++;
				pos += width + rng_range(1, 2);
			}
			else if (pc.nvals < 7)
			{
				pc.val[pc.nvals] = pos;
				pc.cnt[pc.nvals++] = rng_range(1, 2);
				pos += rng_range(1, 2);
			}
			else
				break;
		}
		/* the planner's items */
		{
			int			b = 0,
						v = 0;

			while (b < pc.nblocks || v < pc.nvals)
			{
				KeReleaseItem *it = &items[nitems];

				if (v < pc.nvals && plan_block_of(&pc, pc.val[v]) >= 0)
				{
					v++;
					continue;
				}
				memset(it, 0, sizeof(*it));
				if (b < pc.nblocks && (v >= pc.nvals || pc.blo[b] < pc.val[v]))
				{
					it->block = true;
					it->kept = pc.bkept[b];
					it->lo = ke_num_int(pc.blo[b]);
					it->hi = ke_num_int(pc.bhi[b]);
					for (int x = 0; x < pc.nvals; x++)
						if (plan_block_of(&pc, pc.val[x]) == b)
						{
							if (it->rows == 0 || pc.val[x] < it->amin.i)
								it->amin = ke_num_int(pc.val[x]);
							if (it->rows == 0 || pc.val[x] > it->amax.i)
								it->amax = ke_num_int(pc.val[x]);
							it->rows += pc.cnt[x];
							it->distinct++;
						}
					b++;
				}
				else
				{
					it->lo = it->hi = it->amin = it->amax = ke_num_int(pc.val[v]);
					it->rows = pc.cnt[v];
					it->distinct = 1;
					v++;
				}
				nitems++;
			}
		}
		case_begin("release plan %d: %d blocks, %d arrival values, k %d, e %lld", c,
				   pc.nblocks, pc.nvals, k, (long long) e);
		nparts = ke_release_plan(KE_KIND_EXACT, k, ke_num_int(e), items, (size_t) nitems,
								 part, released, &adm, &kerr);
		if (nparts < 0)
			fail("out of memory");
		err = (int64_t) kerr.i;
		plan_exhaustive(&pc, k, e, &want_loss, &want_adm, &want_err);
		if (adm != want_adm || err != want_err)
			fail("plan releases %lld arrival rows at error %lld, the best %lld at %lld (loss %lld)",
				 (long long) adm, (long long) err, (long long) want_adm, (long long) want_err,
				 (long long) want_loss);
		/* the plan itself: blocks whole, each partition's arrivals valid */
		{
			int64_t		got_adm = 0,
						got_err = 0;

			for (int64_t p = 0; p < nparts; p++)
			{
				int64_t		rows = 0,
							distinct = 0,
							amin = 0,
							amax = 0,
							lo = 0,
							hi = 0;
				bool		has_block = false,
							seen = false;

				for (int j = 0; j < nitems; j++)
				{
					if (part[j] != p)
					{
						if (seen && part[j] >= 0 && part[j] < p)
							fail("partition %lld is not contiguous", (long long) p);
						continue;
					}
					if (!seen)
						lo = items[j].lo.i;
					seen = true;
					hi = items[j].hi.i;
					has_block |= items[j].block;
					if (!released[j] || items[j].rows == 0)
						continue;
					if (rows == 0 || items[j].amin.i < amin)
						amin = items[j].amin.i;
					if (rows == 0 || items[j].amax.i > amax)
						amax = items[j].amax.i;
					rows += items[j].rows;
					distinct += items[j].distinct;
				}
				if (!seen)
					fail("partition %lld is empty", (long long) p);
				if (rows > 0 ? !(distinct >= k && amax - amin >= e) : !has_block)
					fail("partition %lld adds %lld rows of %lld values", (long long) p,
						 (long long) rows, (long long) distinct);
				got_adm += rows;
				got_err += hi - lo;
			}
			for (int j = 0; j < nitems; j++)
				if (part[j] < 0 && (items[j].block || released[j]))
					fail("item %d waits, yet it is a block or released", j);
			if (got_adm != adm)
				fail("the plan's partitions add %lld rows, it reports %lld",
					 (long long) got_adm, (long long) adm);
			if (got_err != err)
				fail("the plan's partitions cost %lld, it reports %lld",
					 (long long) got_err, (long long) err);
		}
		checked += case_end();
	}
	printf("release plans: %d of %d plans checked against exhaustive search\n", checked, ncases);
}

/* Run every part and report */
/* Partitions a change moved: those ke_foreach_changed_partition lists */
static bool
count_part(const KePartition *part, void *arg)
{
	(void) part;
	(*(size_t *) arg)++;
	return true;
}

/*
 * The adversary of the report's tie rule: n evenly spaced values (k = 2,
 * e = 1: every placement of the one three-value partition is optimal), then
 * values arriving above the top one by one.  Under the report's rule the
 * first arrival moves the three-value partition to the bottom and every
 * boundary with it; keeping boundaries, no arrival changes more than two
 * partitions.  Both stay the optimum (check_engine against the oracle).
 */
static void
test_keep_adversary(size_t n)
{
	KeKind		kind = KE_KIND_EXACT;

	for (int keep = 0; keep <= 1; keep++)
	{
		KeStore    *store = ke_memstore_create_strict(512);
		KeEngine   *eng = NULL;
		Model		mo = {kind, 0, 0, NULL};
		RunList		rl = {0, 0, NULL};
		PartList	pl = {0, 0, NULL};
		size_t		most = 0;

		case_begin("evenly spaced, arrivals above the top, %s", keep ? "keeping boundaries" : "the report's rule");
		if (ke_create(&eng, store, kind, 2, num(kind, 1)) != KE_OK)
		{
			fail("ke_create");
			ke_memstore_destroy(store);
			case_end();
			continue;
		}
		ke_keep_boundaries(eng, keep);
		for (size_t i = 1; i <= n; i++)
		{
			if (ke_insert(eng, num(kind, (int64_t) i)) != KE_OK)
				fail("ke_insert(%zu)", i);
			model_add(&mo, num(kind, (int64_t) i), 1);
		}
		for (int64_t v = 3 * (int64_t) n; v < 3 * (int64_t) n + 6; v++)
		{
			size_t		changed = 0;
			Expect		x;

			if (ke_insert(eng, num(kind, v)) != KE_OK)
				fail("ke_insert(%lld)", (long long) v);
			model_add(&mo, num(kind, v), 1);
			ke_foreach_changed_partition(eng, count_part, &changed);
			if (changed > most)
				most = changed;
			expect_compute(&x, kind, 2, num(kind, 1), mo.d, mo.n);
			if (!keep)
				check_engine(eng, kind, 2, num(kind, 1), &x, &rl, &pl);
			else
			{
				KeNum		sum;
				char		msg[256];

				if (!ke_sum_error(eng, &sum) || !ke_num_eq(kind, sum, x.sum))
					fail("after %lld: not the optimum's sum-error", (long long) v);
				if (ke_verify(eng, msg, sizeof(msg)) != KE_OK)
					fail("after %lld: ke_verify: %s", (long long) v, msg);
			}
			expect_free(&x);
		}
		if (keep && most > 2)
			fail("an arrival changed %zu partitions", most);
		if (!keep && most < n / 4)
			fail("the report's rule changed only %zu partitions at most (expected about %zu)", most, n / 2);
		ke_close(eng);
		ke_memstore_destroy(store);
		free(rl.r);
		free(pl.p);
		free(mo.d);
		case_end();
	}
}

int
main(int argc, char **argv)
{
	int			nseq = 3000;
	int			before;

	/*
	 * "ke_test N" runs N random sequences (longer soak runs); "ke_test
	 * seed=S" replays the single random sequence of seed S and shrinks it
	 * if it fails, for debugging a reported failure.
	 */
	if (argc > 1 && strncmp(argv[1], "seed=", 5) == 0)
	{
		test_random((unsigned) strtoul(argv[1] + 5, NULL, 10), 1);
		printf("%d passed, %d failed\n", cases_passed, cases_failed);
		return cases_failed > 0 ? 1 : 0;
	}
	if (argc > 1)
		nseq = atoi(argv[1]);

	before = cases_failed;
	test_golden();
	printf("golden: %d partitioning examples checked%s\n", KE_GOLDEN_NPARTITIONINGS,
		   cases_failed > before ? " (with failures)" : "");
	before = cases_failed;
	test_bounds();
	printf("bounds: %d query examples checked%s\n", KE_GOLDEN_NBOUNDS,
		   cases_failed > before ? " (with failures)" : "");
	before = cases_failed;
	test_args();
	printf("args: invalid arguments checked%s\n",
		   cases_failed > before ? " (with failures)" : "");
	before = cases_failed;
	test_build_runs(200);
	printf("build_runs: builds from runs checked%s\n",
		   cases_failed > before ? " (with failures)" : "");
	before = cases_failed;
	test_overflow(300);
	printf("overflow: float-kind errors past the largest double checked%s\n",
		   cases_failed > before ? " (with failures)" : "");
	before = cases_failed;
	test_keep_adversary(400);
	printf("keep: the evenly spaced adversary checked%s\n",
		   cases_failed > before ? " (with failures)" : "");
	test_random(1000u, nseq);
	test_paperinc(nseq / 10 + 1);
	test_releases(3000);
	test_release_sequences(500);
	test_release_plans(4000);

	if (cases_hidden > 0)
		printf("(failure lines of %d more failing cases not shown)\n", cases_hidden);
	printf("%d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed > 0 ? 1 : 0;
}

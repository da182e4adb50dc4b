/*
 * ke_baseline.c
 *		The research's algorithms, kept as baselines for tests and benchmarks.
 *
 * Nothing here is on a production path: the engine (ke_engine.c) keeps the
 * optimum with a linear dynamic program over runs.  These functions exist so
 * that the engine can be checked against the report's own algorithm and so
 * that benchmarks can compare against what the report proposed.
 *
 * Notation: d[1..n] are the values sorted ascending (1-based positions, held
 * in a 0-based C array as d[0..n-1]); a partition [j..i] is valid when it
 * holds at least k distinct values and d_i - d_j >= e.
 *
 *	E[i] = min over valid [j..i] of E[j-1] + (d_i - d_j),	E[0] = 0
 *	P[i] = the largest j attaining E[i];	P[i] = P[i-1] when E[i] is infinite
 *
 * "Infinite" (no valid partitioning of d_1..d_i) is a flag of its own,
 * feasible[i], beside E[i], never a special value of it.
 *
 * Because d is sorted, validity is monotone in j: if [j..i] is valid so is
 * every [j'..i] with j' < j.  The valid starts of i are therefore 1..J(i)
 * for a largest valid start J(i), and J(i) never decreases as i grows.
 *
 * ke_quadratic
 *		Figure 3.2 of the report.  The inner loop walks j downward from i so
 *		that the number of distinct values in [j..i] is kept incrementally
 *		(one comparison per step) and the whole run is O(n^2).  Walking
 *		downward, the first j reaching the minimum is the largest, which is
 *		the report's tie rule ("t <= E[i]" over ascending j); later ties must
 *		not overwrite it.  A candidate whose E[j-1] is infeasible never
 *		becomes P[i].
 *
 * KePaperInc
 *		Figure 4.1: keep d, E and P as arrays; after inserting v at position p
 *		(after every value equal to v) shift the arrays by one and recompute
 *		E[i], P[i] for i = p, p+1, ... with the quadratic inner loop, until the
 *		"complete-alignment" position where the rest of the old state, shifted
 *		by one position, is known to be what recomputation would produce.
 *
 *		The break rule used here is proved from the prefix-minimum form of the
 *		recurrence.  Writing c_j = E[j-1] - d_j, E[i] = d_i + min(c_1..c_J(i))
 *		and P[i] is the largest index attaining that minimum.  Let primes
 *		denote the state after the insert and i' = i + 1 a new position past
 *		p.  Recomputation stops at the first i' for which
 *
 *		  (a) J'(i') >= p + 1, i.e. every later window [1..J'(x')] ends past
 *			  the inserted value; then J'(x') = J(x) + 1 for every x' >= i',
 *			  because segments starting after p are the old segments shifted;
 *		  (b) E'[i'] and E[i] are both finite; let delta = E'[i'] - E[i];
 *		  (c) P'[i'] = P[i] + 1, so the new prefix minimum up to J'(i') is
 *			  the old one plus delta, attained last at the shifted position;
 *		  (d) E'[y'] = E[y'-1] + delta for every y' in [J'(i'), i'].
 *
 *		For any later x', its window splits into the prefix [1..J'(i')],
 *		whose minimum is old + delta at the shifted argmin by (b) and (c), and
 *		the candidates j' in (J'(i'), J'(x')], each c'_j' = E'[j'-1] - d_(j'-1)
 *		= c_(j'-1) + delta by (d) and, inductively, by the tail itself (J'(x')
 *		< x' for k >= 2, so only earlier positions are needed).  Ties shift
 *		with the values, so E'[x'] = E[x] + delta and P'[x'] = P[x] + 1 for
 *		every x' > i'.  The rule is exact whenever the arithmetic is (the
 *		exact kind, or doubles holding integers below 2^53); in the float kind
 *		with fractional values the shifted tail may differ from a full
 *		recomputation by rounding, as ke_quadratic itself may differ from the
 *		engine's linear program.
 *
 *		The same argument shows that the prefix minimum Mc[x'] = min(c'_1..
 *		c'_x') is old + delta with its argmin shifted for every x' >= J'(i'),
 *		so a cache of it is kept per position and shifted with the tail.  The
 *		cache is what keeps the inner loop short: starts before p see no
 *		change, so their best candidate for any later position is already
 *		Mc[min(J, p - 1)]; only the starts from p up are visited one by one.
 *
 *		Condition (d) needs about one window (k distinct values or a range of
 *		e) of positions past the insertion whose optimal error moved by the
 *		same amount, so in typical data the recomputed stretch is short and
 *		its cost is quadratic in its length, plus the O(n) shift of the
 *		arrays that the report's array representation implies.
 *
 * ke_approx
 *		The 2-approximation of Procopiuc & Srivastava: one greedy scan closing
 *		a group as soon as it holds k distinct values and a range of e, never
 *		splitting a run of equal values; a leftover invalid tail joins the last
 *		group.
 */
#include <stdlib.h>
#include <string.h>

#include "ke_baseline.h"

struct KePaperInc
{
	KeKind		kind;
	int			k;
	KeNum		e;
	size_t		n;				/* values held */
	size_t		cap;			/* room in d; the per-position arrays hold cap + 1 */
	KeNum	   *d;				/* sorted values, 0-based */
	KeNum	   *E;				/* E[0..n] */
	bool	   *Eok;			/* Eok[i]: E[i] is feasible */
	size_t	   *P;				/* P[0..n] */
	KeNum	   *Mc;				/* Mc[x] = min(c_1..c_x), c_j = E[j-1] - d_j */
	bool	   *Mcok;			/* Mcok[x]: some c_j with j <= x exists */
	size_t	   *Ma;				/* Ma[x] = largest j <= x attaining Mc[x] */
	KeNum	   *oldE;			/* scratch: old E shifted, per new position */
	bool	   *oldEok;
	size_t	   *oldP;			/* scratch: old P shifted, per new position */
};

/* Allocate or die: the baselines have no error channel and are test-only */
static void *
xrealloc(void *ptr, size_t size)
{
	void	   *p = realloc(ptr, size ? size : 1);

	if (p == NULL)
	{
		fprintf(stderr, "ke_baseline: out of memory (%zu bytes)\n", size);
		abort();
	}
	return p;
}

/*
 * Compute E[i] and P[i] (1-based i) from E[0..i-1] with Figure 3.2's inner
 * loop over the starts j >= from; the starts below from are taken from the
 * cached prefix minimum (Mc, Ma) at min(J(i), from - 1), which must be up to
 * date there.  With from = 1 this is the report's loop exactly.  Returns
 * J(i), the largest valid start, or 0 when there is none.
 */
static size_t
quadratic_step(KeKind kind, int k, KeNum e, const KeNum *d, size_t i,
			   KeNum *E, bool *Eok, size_t *P, size_t from,
			   const KeNum *Mc, const bool *Mcok, const size_t *Ma)
{
	KeNum		di = d[i - 1];
	KeNum		best = ke_num_zero(kind);
	bool		have = false;
	size_t		bestj = P[i - 1];
	size_t		J = 0;
	int64_t		distinct = 1;
	size_t		j;

	for (j = i; j >= from; j--)
	{
		KeNum		t;

		/* d is sorted, so a new distinct value appears exactly at a change */
		if (j < i && !ke_num_eq(kind, d[j - 1], d[j]))
			distinct++;
		if (distinct < k || !ke_num_range_ok(kind, d[j - 1], di, e))
			continue;
		if (J == 0)
			J = j;
		if (!Eok[j - 1])
			continue;
		t = ke_num_add(kind, E[j - 1], ke_num_sub(kind, di, d[j - 1]));
		/* strict: walking downward, an earlier hit is the larger start */
		if (!have || ke_num_cmp(kind, t, best) < 0)
		{
			best = t;
			bestj = j;
			have = true;
		}
	}

	if (from > 1)
	{
		size_t		upto;

		/* still looking for J(i): keep walking, comparisons only */
		for (; J == 0 && j >= 1; j--)
		{
			if (j < i && !ke_num_eq(kind, d[j - 1], d[j]))
				distinct++;
			if (distinct >= k && ke_num_range_ok(kind, d[j - 1], di, e))
				J = j;
		}
		upto = J < from - 1 ? J : from - 1;
		if (upto > 0 && Mcok[upto])
		{
			KeNum		t = ke_num_add(kind, di, Mc[upto]);

			/* every direct start is larger, so it keeps a tie */
			if (!have || ke_num_cmp(kind, t, best) < 0)
			{
				best = t;
				bestj = Ma[upto];
				have = true;
			}
		}
	}

	E[i] = best;
	Eok[i] = have;
	P[i] = bestj;
	return J;
}

/* Figure 3.2 over sorted d[0..n-1]; fills E, feasible and P [0..n] */
void
ke_quadratic(KeKind kind, int k, KeNum e, const KeNum *d, size_t n,
			 KeNum *E, bool *feasible, size_t *P)
{
	E[0] = ke_num_zero(kind);
	feasible[0] = true;
	P[0] = 0;
	for (size_t i = 1; i <= n; i++)
		(void) quadratic_step(kind, k, e, d, i, E, feasible, P, 1, NULL, NULL, NULL);
}

/* Read the optimal partitions off P, ascending, as 1-based position pairs */
size_t
ke_positions_partitions(const bool *feasible, const size_t *P,
						size_t n, size_t *first, size_t *last)
{
	size_t		count = 0;
	size_t		i = n;

	if (n == 0 || !feasible[n])
		return 0;

	/* the walk yields partitions last to first; reverse in place after */
	while (i > 0)
	{
		size_t		j = P[i];

		first[count] = j;
		last[count] = i;
		count++;
		i = j - 1;
	}
	for (size_t a = 0, b = count - 1; a < b; a++, b--)
	{
		size_t		tf = first[a];
		size_t		tl = last[a];

		first[a] = first[b];
		last[a] = last[b];
		first[b] = tf;
		last[b] = tl;
	}
	return count;
}

/* Make sure a KePaperInc can hold need values */
static void
paperinc_reserve(KePaperInc *pi, size_t need)
{
	size_t		cap = pi->cap ? pi->cap : 16;

	if (need <= pi->cap)
		return;
	while (cap < need)
		cap *= 2;
	pi->d = xrealloc(pi->d, cap * sizeof(KeNum));
	pi->E = xrealloc(pi->E, (cap + 1) * sizeof(KeNum));
	pi->Eok = xrealloc(pi->Eok, (cap + 1) * sizeof(bool));
	pi->P = xrealloc(pi->P, (cap + 1) * sizeof(size_t));
	pi->Mc = xrealloc(pi->Mc, (cap + 1) * sizeof(KeNum));
	pi->Mcok = xrealloc(pi->Mcok, (cap + 1) * sizeof(bool));
	pi->Ma = xrealloc(pi->Ma, (cap + 1) * sizeof(size_t));
	pi->oldE = xrealloc(pi->oldE, (cap + 1) * sizeof(KeNum));
	pi->oldEok = xrealloc(pi->oldEok, (cap + 1) * sizeof(bool));
	pi->oldP = xrealloc(pi->oldP, (cap + 1) * sizeof(size_t));
	pi->cap = cap;
}

/* A new, empty incremental state for the given parameters */
KePaperInc *
ke_paperinc_create(KeKind kind, int k, KeNum e)
{
	KePaperInc *pi = xrealloc(NULL, sizeof(KePaperInc));

	memset(pi, 0, sizeof(KePaperInc));
	pi->kind = kind;
	pi->k = k;
	pi->e = e;
	paperinc_reserve(pi, 16);
	pi->E[0] = ke_num_zero(kind);
	pi->Eok[0] = true;
	pi->P[0] = 0;
	pi->Mc[0] = ke_num_zero(kind);
	pi->Mcok[0] = false;
	pi->Ma[0] = 0;
	return pi;
}

/* Free an incremental state */
void
ke_paperinc_destroy(KePaperInc *pi)
{
	if (pi == NULL)
		return;
	free(pi->d);
	free(pi->E);
	free(pi->Eok);
	free(pi->P);
	free(pi->Mc);
	free(pi->Mcok);
	free(pi->Ma);
	free(pi->oldE);
	free(pi->oldEok);
	free(pi->oldP);
	free(pi);
}

/* Bring the cached prefix minimum at position x up to date from x - 1 */
static void
paperinc_cache_at(KePaperInc *pi, size_t x)
{
	KeKind		kind = pi->kind;

	pi->Mc[x] = pi->Mc[x - 1];
	pi->Mcok[x] = pi->Mcok[x - 1];
	pi->Ma[x] = pi->Ma[x - 1];
	if (pi->Eok[x - 1])
	{
		KeNum		c = ke_num_sub(kind, pi->E[x - 1], pi->d[x - 1]);

		/* "<=": the largest start wins a tie, as in E's own recurrence */
		if (!pi->Mcok[x] || ke_num_le(kind, c, pi->Mc[x]))
		{
			pi->Mc[x] = c;
			pi->Mcok[x] = true;
			pi->Ma[x] = x;
		}
	}
}

/* Replace the state with sorted values, running the quadratic DP once */
void
ke_paperinc_build(KePaperInc *pi, const KeNum *sorted, size_t n)
{
	paperinc_reserve(pi, n);
	if (n > 0)
		memcpy(pi->d, sorted, n * sizeof(KeNum));
	pi->n = n;
	ke_quadratic(pi->kind, pi->k, pi->e, pi->d, n, pi->E, pi->Eok, pi->P);
	for (size_t x = 1; x <= n; x++)
		paperinc_cache_at(pi, x);
}

/*
 * Does the state at new position i (past insertion position p) satisfy the
 * complete-alignment conditions of the header comment?  J is J'(i).
 */
static bool
paperinc_aligned(const KePaperInc *pi, size_t p, size_t i, size_t J,
				 KeNum *delta)
{
	KeKind		kind = pi->kind;

	if (J < p + 1)
		return false;
	if (!pi->Eok[i] || !pi->oldEok[i] ||
		!ke_num_finite(kind, pi->E[i]) || !ke_num_finite(kind, pi->oldE[i]))
		return false;
	if (pi->P[i] != pi->oldP[i] + 1)
		return false;
	*delta = ke_num_sub(kind, pi->E[i], pi->oldE[i]);
	/* walk down from i: a mismatch is likeliest next to the insertion */
	for (size_t y = i; y >= J; y--)
	{
		if (!pi->Eok[y] || !pi->oldEok[y])
			return false;
		if (!ke_num_eq(kind, pi->E[y], ke_num_add(kind, pi->oldE[y], *delta)))
			return false;
	}
	return true;
}

/* Insert v and bring E and P up to date (Figure 4.1) */
void
ke_paperinc_insert(KePaperInc *pi, KeNum v)
{
	KeKind		kind = pi->kind;
	size_t		n = pi->n;
	size_t		lo = 0;
	size_t		hi = n;
	size_t		p;

	/* 0-based index of the first value greater than v: insert after equals */
	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (ke_num_le(kind, pi->d[mid], v))
			lo = mid + 1;
		else
			hi = mid;
	}
	p = lo + 1;					/* the new value's 1-based position */

	paperinc_reserve(pi, n + 1);
	memmove(&pi->d[p], &pi->d[p - 1], (n - (p - 1)) * sizeof(KeNum));
	pi->d[p - 1] = v;
	/* new position i > p starts out holding old E[i-1] and P[i-1] */
	memmove(&pi->E[p + 1], &pi->E[p], (n + 1 - p) * sizeof(KeNum));
	memmove(&pi->Eok[p + 1], &pi->Eok[p], (n + 1 - p) * sizeof(bool));
	memmove(&pi->P[p + 1], &pi->P[p], (n + 1 - p) * sizeof(size_t));
	memmove(&pi->Mc[p + 1], &pi->Mc[p], (n + 1 - p) * sizeof(KeNum));
	memmove(&pi->Mcok[p + 1], &pi->Mcok[p], (n + 1 - p) * sizeof(bool));
	memmove(&pi->Ma[p + 1], &pi->Ma[p], (n + 1 - p) * sizeof(size_t));
	pi->n = n + 1;

	for (size_t i = p; i <= n + 1; i++)
	{
		size_t		J;
		KeNum		delta;

		pi->oldE[i] = pi->E[i];
		pi->oldEok[i] = pi->Eok[i];
		pi->oldP[i] = pi->P[i];
		paperinc_cache_at(pi, i);
		/* starts before p saw no change: their minimum is cached */
		J = quadratic_step(kind, pi->k, pi->e, pi->d, i, pi->E, pi->Eok, pi->P, p,
						   pi->Mc, pi->Mcok, pi->Ma);
		if (i > p && paperinc_aligned(pi, p, i, J, &delta))
		{
			/* complete alignment: the shifted old tail is the answer */
			for (size_t x = i + 1; x <= n + 1; x++)
			{
				if (pi->Eok[x])
					pi->E[x] = ke_num_add(kind, pi->E[x], delta);
				pi->P[x] += 1;
				if (pi->Mcok[x])
					pi->Mc[x] = ke_num_add(kind, pi->Mc[x], delta);
				pi->Ma[x] += 1;
			}
			break;
		}
	}
}

/* The current sum-error; false when no valid partitioning exists */
bool
ke_paperinc_sum_error(const KePaperInc *pi, KeNum *out)
{
	if (pi->n == 0 || !pi->Eok[pi->n])
		return false;
	*out = pi->E[pi->n];
	return true;
}

/* The current E, feasible and P arrays (n + 1 entries each); returns n */
size_t
ke_paperinc_arrays(const KePaperInc *pi, const KeNum **E, const bool **feasible,
				   const size_t **P)
{
	*E = pi->E;
	*feasible = pi->Eok;
	*P = pi->P;
	return pi->n;
}

/* Greedy 2-approximation over sorted d; false when nothing valid exists */
bool
ke_approx(KeKind kind, int k, KeNum e, const KeNum *d, size_t n,
		  KeNum *sum_error)
{
	KeNum		closed = ke_num_zero(kind);	/* errors of all groups but the last */
	size_t		last_lo = 0;
	size_t		last_hi = 0;
	bool		have_group = false;
	size_t		start = 0;

	while (start < n)
	{
		int64_t		distinct = 0;
		size_t		j = start;
		bool		done = false;

		while (j < n)
		{
			if (j == start || !ke_num_eq(kind, d[j], d[j - 1]))
				distinct++;
			j++;
			if (distinct >= k && ke_num_range_ok(kind, d[start], d[j - 1], e))
			{
				/* keep a run of equal values in one group */
				while (j < n && ke_num_eq(kind, d[j], d[j - 1]))
					j++;
				done = true;
				break;
			}
		}
		if (!done)
		{
			/* an invalid tail joins the last group, or nothing is valid */
			if (!have_group)
				return false;
			last_hi = n - 1;
			break;
		}
		if (have_group)
			closed = ke_num_add(kind, closed,
								ke_num_sub(kind, d[last_hi], d[last_lo]));
		last_lo = start;
		last_hi = j - 1;
		have_group = true;
		start = j;
	}
	if (!have_group)
		return false;
	*sum_error = ke_num_add(kind, closed, ke_num_sub(kind, d[last_hi], d[last_lo]));
	return true;
}

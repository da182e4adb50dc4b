/*
 * ke_dp.c
 *		From-scratch linear dynamic program over runs.
 *
 * For k >= 2 every row of a run of equal values has the same optimal
 * sum-error E, and the largest valid start of a partition ending at run r is
 * the last row of some run q*(r) that never moves backwards as r grows.  So
 * E_r = v_r + (running minimum over candidate starts of runs <= q*(r)), where
 * run q offers its first row (E_{q-1} - v_q) and, when it holds two rows or
 * more, its last row (E_q - v_q, a boundary inside the run).  Ties go to the
 * later candidate, which is the largest start, as in the quadratic algorithm.
 *
 * Whether any valid partitioning ends at a run is a flag of its own
 * (feasible), never a special error value: a float-kind error may overflow
 * to infinity and still belong to a valid partitioning.
 *
 * This is both the bulk build of the engine and its own oracle in
 * ke_verify(); the incremental code in ke_engine.c resumes the very same
 * loop from stored state.  With cut masks it also computes the optimum of a
 * safe successive release.
 */
#include <stdlib.h>

#include "ke_alloc.h"
#include "ke_dp.h"

/* Run the DP over m runs; all output arrays have m entries */
void
ke_linear_dp(KeKind kind, int k, KeNum e,
			 const KeNum *vals, const int64_t *counts, size_t m,
			 KeNum *E, bool *feasible, KeNum *best, KeNum *argmin,
			 int *argmin_last, int64_t *frontier, int *end)
{
	ke_masked_dp(kind, k, e, vals, counts, m, NULL, NULL,
				 E, feasible, best, argmin, argmin_last, frontier, end);
}

/*
 * The same DP where partitions may only begin and end at allowed cuts:
 * cut_after_ok[r] allows a partition to end at run r's last row (the end of
 * the data is always allowed), cut_in_ok[r] allows one to end just before
 * run r's last row.  NULL masks allow every cut.  feasible[r] says whether
 * a valid partitioning of the rows up to run r exists; only then are E[r]
 * (its least error, whichever cut it ends at), best[r] and argmin[r]
 * meaningful (they are zero otherwise).  A start is only a candidate where
 * the cut before it is allowed.  This is the optimum of a safe release: see
 * ke_release_cuts().
 */
void
ke_masked_dp(KeKind kind, int k, KeNum e,
			 const KeNum *vals, const int64_t *counts, size_t m,
			 const bool *cut_after_ok, const bool *cut_in_ok,
			 KeNum *E, bool *feasible, KeNum *best, KeNum *argmin,
			 int *argmin_last, int64_t *frontier, int *end)
{
	KeNum		zero = ke_num_zero(kind);
	bool		cur_ok = false;
	KeNum		cur = zero;
	KeNum		cur_arg = zero;
	int			cur_last = 0;
	int64_t		qs = -1;

	for (size_t r = 0; r < m; r++)
	{
		/* a long pass (a build of millions of values) hears a cancel */
		if ((r & 0xFFFF) == 0xFFFF)
			ke_check_interrupts();
		if (r + 1 >= (size_t) k)
		{
			KeNum		kth = vals[r + 1 - k];

			while (qs + 1 < (int64_t) r &&
				   ke_num_le(kind, vals[qs + 1], kth) &&
				   ke_num_range_ok(kind, vals[qs + 1], vals[r], e))
			{
				int64_t		q = qs + 1;
				/* the rows before q's first row: none, or up to run q - 1 */
				bool		before_ok = q == 0 ||
					(feasible[q - 1] && (cut_after_ok == NULL || cut_after_ok[q - 1]));

				if (before_ok)
				{
					KeNum		a = ke_num_sub(kind, q > 0 ? E[q - 1] : zero, vals[q]);

					if (!cur_ok || ke_num_le(kind, a, cur))
					{
						cur = a;
						cur_ok = true;
						cur_arg = vals[q];
						cur_last = 0;
					}
				}
				if (counts[q] >= 2 && feasible[q] &&
					(cut_in_ok == NULL || cut_in_ok[q]))
				{
					KeNum		a = ke_num_sub(kind, E[q], vals[q]);

					if (!cur_ok || ke_num_le(kind, a, cur))
					{
						cur = a;
						cur_ok = true;
						cur_arg = vals[q];
						cur_last = 1;
					}
				}
				qs = q;
			}
		}
		feasible[r] = cur_ok;
		best[r] = cur;
		argmin[r] = cur_arg;
		argmin_last[r] = cur_last;
		if (frontier)
			frontier[r] = qs;
		E[r] = cur_ok ? ke_num_add(kind, vals[r], cur) : zero;
	}

	if (end == NULL)
		return;
	for (size_t r = 0; r < m; r++)
		end[r] = KE_END_NONE;
	if (m == 0 || !feasible[m - 1])
		return;

	/* walk the argmins back from the last row */
	{
		int64_t		r = (int64_t) m - 1;
		int			kind_end = KE_END_FULL;

		for (;;)
		{
			int64_t		q;

			end[r] = kind_end;
			/* runs are sorted and distinct: find the start run by search */
			{
				int64_t		lo = 0,
							hi = r;

				while (lo < hi)
				{
					int64_t		mid = (lo + hi) / 2;

					if (ke_num_cmp(kind, vals[mid], argmin[r]) < 0)
						lo = mid + 1;
					else
						hi = mid;
				}
				q = lo;
			}
			if (argmin_last[r])
			{
				/* the previous partition ends just before q's last row */
				r = q;
				kind_end = KE_END_SPLIT;
			}
			else
			{
				if (q == 0)
					break;
				r = q - 1;
				kind_end = KE_END_FULL;
			}
		}
	}
}

/*
 * ke_masked_dp() with the legacy contract of release.c and watch.c: E[r] is
 * ke_num_inf() where no valid partitioning ends at run r.  In the float kind
 * a valid partitioning whose error overflows is infinite too; end[m - 1]
 * (KE_END_NONE only when none exists) tells the two apart.  The flags are
 * kept in memory from ke_malloc(); should it fail, every E is infinite and
 * every end flag KE_END_NONE.
 */
void
ke_constrained_dp(KeKind kind, int k, KeNum e,
				  const KeNum *vals, const int64_t *counts, size_t m,
				  const bool *cut_after_ok, const bool *cut_in_ok,
				  KeNum *E, KeNum *best, KeNum *argmin,
				  int *argmin_last, int64_t *frontier, int *end)
{
	bool		local[64];
	bool	   *feasible = m <= 64 ? local : ke_malloc(m * sizeof(bool));

	if (feasible == NULL)
	{
		for (size_t r = 0; r < m; r++)
		{
			E[r] = best[r] = ke_num_inf(kind);
			argmin[r] = ke_num_zero(kind);
			argmin_last[r] = 0;
			if (frontier)
				frontier[r] = -1;
			if (end)
				end[r] = KE_END_NONE;
		}
		return;
	}
	ke_masked_dp(kind, k, e, vals, counts, m, cut_after_ok, cut_in_ok,
				 E, feasible, best, argmin, argmin_last, frontier, end);
	for (size_t r = 0; r < m; r++)
		if (!feasible[r])
			E[r] = best[r] = ke_num_inf(kind);
	if (feasible != local)
		ke_free(feasible);
}

/* Index of the first run with value >= x (m if none) */
static size_t
lower_bound(KeKind kind, const KeNum *vals, size_t m, KeNum x)
{
	size_t		lo = 0,
				hi = m;

	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (ke_num_cmp(kind, vals[mid], x) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The cuts a release may use without breaching the previous one: a new
 * partition must either contain a previous partition's whole value range
 * [old_lo, old_hi] or stay clear of it (ranges that share an end value
 * overlap).  So no cut may fall between two values of one previous range:
 * not between runs r and r + 1 when both lie inside it, and not inside a run
 * whose value lies inside it.  Previous releases need no check of their own:
 * respecting the last one respects them all.
 */
void
ke_release_cuts(KeKind kind, const KeNum *vals, size_t m,
				const KeNum *old_lo, const KeNum *old_hi, size_t nold,
				bool *cut_after_ok, bool *cut_in_ok)
{
	for (size_t r = 0; r < m; r++)
	{
		cut_after_ok[r] = true;
		cut_in_ok[r] = true;
	}
	for (size_t j = 0; j < nold; j++)
	{
		for (size_t r = lower_bound(kind, vals, m, old_lo[j]);
			 r < m && ke_num_le(kind, vals[r], old_hi[j]); r++)
		{
			cut_in_ok[r] = false;
			if (r + 1 < m && ke_num_le(kind, vals[r + 1], old_hi[j]))
				cut_after_ok[r] = false;
		}
	}
}

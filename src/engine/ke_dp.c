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
 * This is both the bulk build of the engine and its own oracle in
 * ke_verify(); the incremental code in ke_engine.c resumes the very same
 * loop from stored state.
 */
#include <stdlib.h>

#include "ke_engine.h"

/* Run the DP over m runs; all output arrays have m entries */
void
ke_linear_dp(KeKind kind, int k, KeNum e,
			 const KeNum *vals, const int64_t *counts, size_t m,
			 KeNum *E, KeNum *best, KeNum *argmin,
			 int *argmin_last, int64_t *frontier, int *end)
{
	KeNum		inf = ke_num_inf(kind);
	KeNum		cur = inf;
	KeNum		cur_arg = ke_num_zero(kind);
	int			cur_last = 0;
	int64_t		qs = -1;

	for (size_t r = 0; r < m; r++)
	{
		if (r + 1 >= (size_t) k)
		{
			KeNum		kth = vals[r + 1 - k];

			while (qs + 1 < (int64_t) r &&
				   ke_num_le(kind, vals[qs + 1], kth) &&
				   ke_num_range_ok(kind, vals[qs + 1], vals[r], e))
			{
				int64_t		q = qs + 1;
				KeNum		a;

				a = q > 0 ? E[q - 1] : ke_num_zero(kind);
				if (!ke_num_is_inf(kind, a))
				{
					a = ke_num_sub(kind, a, vals[q]);
					if (ke_num_le(kind, a, cur) || ke_num_is_inf(kind, cur))
					{
						cur = a;
						cur_arg = vals[q];
						cur_last = 0;
					}
				}
				if (counts[q] >= 2 && !ke_num_is_inf(kind, E[q]))
				{
					a = ke_num_sub(kind, E[q], vals[q]);
					if (ke_num_le(kind, a, cur) || ke_num_is_inf(kind, cur))
					{
						cur = a;
						cur_arg = vals[q];
						cur_last = 1;
					}
				}
				qs = q;
			}
		}
		best[r] = cur;
		argmin[r] = cur_arg;
		argmin_last[r] = cur_last;
		if (frontier)
			frontier[r] = qs;
		E[r] = ke_num_is_inf(kind, cur) ? inf : ke_num_add(kind, vals[r], cur);
	}

	if (end == NULL)
		return;
	for (size_t r = 0; r < m; r++)
		end[r] = KE_END_NONE;
	if (m == 0 || ke_num_is_inf(kind, E[m - 1]))
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

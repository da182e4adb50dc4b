/*
 * ke_dp.h
 *		The from-scratch linear dynamic program over runs (ke_dp.c): the
 *		engine's bulk build and its own oracle, and with cut masks the
 *		optimum of a first release.
 */
#ifndef KE_DP_H
#define KE_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ke_num.h"

/* where the optimal partitioning ends a partition, per run */
#define KE_END_NONE		0
#define KE_END_FULL		1		/* a partition ends at the run's last row */
#define KE_END_SPLIT	2		/* ... at its second-to-last row */

extern void ke_linear_dp(KeKind kind, int k, KeNum e,
						 const KeNum *vals, const int64_t *counts, size_t m,
						 KeNum *E, bool *feasible, KeNum *best, KeNum *argmin,
						 int *argmin_last, int64_t *frontier, int *end);
extern void ke_masked_dp(KeKind kind, int k, KeNum e,
						 const KeNum *vals, const int64_t *counts, size_t m,
						 const bool *cut_after_ok, const bool *cut_in_ok,
						 KeNum *E, bool *feasible, KeNum *best, KeNum *argmin,
						 int *argmin_last, int64_t *frontier, int *end);
extern void ke_constrained_dp(KeKind kind, int k, KeNum e,
							  const KeNum *vals, const int64_t *counts, size_t m,
							  const bool *cut_after_ok, const bool *cut_in_ok,
							  KeNum *E, KeNum *best, KeNum *argmin,
							  int *argmin_last, int64_t *frontier, int *end);
extern void ke_release_cuts(KeKind kind, const KeNum *vals, size_t m,
							const KeNum *old_lo, const KeNum *old_hi, size_t nold,
							bool *cut_after_ok, bool *cut_in_ok);

#endif							/* KE_DP_H */

/*
 * ke_baseline.h
 *		The research's algorithms, kept as baselines for tests and benchmarks
 *		only; no production path calls them.
 *
 *	ke_quadratic	the O(n^2) dynamic program of the report (Figure 3.2)
 *	KePaperInc		the report's incremental algorithm (Figure 4.1): after an
 *					insert, rerun the quadratic loop from the insertion point
 *					and stop at the complete-alignment partition
 *	ke_approx		the O(n) 2-approximation of Procopiuc & Srivastava: one
 *					greedy scan closing a group as soon as it satisfies k and e
 *
 * Positions are 1-based over the values sorted ascending; E, feasible and P
 * arrays have n + 1 entries, E[0] = 0, feasible[i] false where no valid
 * partitioning of the first i values exists (E[i] is then meaningless), and
 * P[i] the largest start attaining E[i] (P[i] = P[i-1] when infeasible).
 */
#ifndef KE_BASELINE_H
#define KE_BASELINE_H

#include <stdbool.h>
#include <stddef.h>

#include "ke_num.h"

/* Figure 3.2 over sorted d[0..n-1]; fills E, feasible and P [0..n] */
extern void ke_quadratic(KeKind kind, int k, KeNum e,
						 const KeNum *d, size_t n, KeNum *E, bool *feasible, size_t *P);

/*
 * Walk P back from n; writes the partitions as 1-based [first, last]
 * position pairs in ascending order and returns how many (0 when n is 0 or
 * not feasible).  first/last need room for n entries.
 */
extern size_t ke_positions_partitions(const bool *feasible, const size_t *P,
									  size_t n, size_t *first, size_t *last);

/* Figure 4.1: incremental state over a growing sorted array */
typedef struct KePaperInc KePaperInc;

extern KePaperInc *ke_paperinc_create(KeKind kind, int k, KeNum e);
extern void ke_paperinc_destroy(KePaperInc *pi);
/* start from sorted values (runs the quadratic algorithm once) */
extern void ke_paperinc_build(KePaperInc *pi, const KeNum *sorted, size_t n);
extern void ke_paperinc_insert(KePaperInc *pi, KeNum v);
/* the current sum-error; false when no valid partitioning exists */
extern bool ke_paperinc_sum_error(const KePaperInc *pi, KeNum *out);
/* the current E, feasible and P arrays (n + 1 entries each) and n */
extern size_t ke_paperinc_arrays(const KePaperInc *pi, const KeNum **E,
								 const bool **feasible, const size_t **P);

/*
 * The 2-approximation over sorted d: returns false when no valid
 * partitioning exists, else its sum-error in *sum_error.
 */
extern bool ke_approx(KeKind kind, int k, KeNum e, const KeNum *d, size_t n,
					  KeNum *sum_error);

#endif							/* KE_BASELINE_H */

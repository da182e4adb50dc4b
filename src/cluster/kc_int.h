/*
 * kc_int.h
 *		Helpers shared by the clustering core's files; not for callers.
 *
 * Rows taken from the store are copied (the store's arrays live only until
 * its next call) and sorted by handle, so that every choice the core makes
 * depends on the rows alone and not on the order a store lists them in.
 */
#ifndef KC_INT_H
#define KC_INT_H

#include "kc_cluster.h"

/* Rows copied out of the store, by handle */
typedef struct KcRowSet
{
	int64_t		n;
	int64_t    *handle;			/* [n] */
	double	   *x;				/* [n * ndims] */
} KcRowSet;

/* Coordinates of row i of a row set */
#define KC_ROWX(s, rs, i)	((rs)->x + (size_t) (i) * (size_t) (s)->ndims)

/* Relative slack under which a change of total IL counts as no change */
#define KC_IL_EPSILON	1e-9

/* kc_cost.c */
extern KcStatus kc_args_check(const KcSchema *s, const KcStore *st);
extern KcStatus kc_point_check(const KcSchema *s, const double *x);
extern KcGroup *kc_groups_alloc(int64_t count, int ndims);
extern void kc_groups_free(KcGroup *groups);
extern void kc_summary_reset(const KcSchema *s, KcGroup *g);
extern void kc_summary_add(const KcSchema *s, KcGroup *g, const double *x);
extern void kc_summary_copy(const KcSchema *s, KcGroup *dst, const KcGroup *src);
extern double kc_il_growth(const KcSchema *s, const KcGroup *g, const double *x,
						   double *scratch);
extern int	kc_choose(const KcSchema *s, KcMethod method, const KcGroup *cand,
					  int found, const double *x, double *scratch);
extern KcStatus kc_rowset_load(const KcSchema *s, const KcStore *st, int64_t gid,
							   KcRowSet *rs);
extern void kc_rowset_free(KcRowSet *rs);

/* kc_split.c */
extern KcStatus kc_split(const KcSchema *s, const KcStore *st, int64_t gid);
extern KcStatus kc_write_part(const KcSchema *s, const KcStore *st, int64_t gid,
							  bool place, const KcRow *rows, const int64_t *idx,
							  int64_t count, KcGroup *scratch);

#endif							/* KC_INT_H */

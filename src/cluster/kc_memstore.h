/*
 * kc_memstore.h
 *		An in-memory KcStore: the clustering core's tests and benchmarks, and
 *		the grouping of the rows a generalized release adds (gen_release.c).
 *
 * Rows are kept in one array (a row's handle is its index) with the group
 * each belongs to; groups are kept in arrays indexed by their id, which is
 * never reused.  nearest and covering search every group (distances in
 * kc_weight-scaled coordinates, ties by id).
 */
#ifndef KC_MEMSTORE_H
#define KC_MEMSTORE_H

#include "kc_cluster.h"

typedef struct KcMemStore KcMemStore;

/* A new empty store for rows of schema s (copied); NULL when out of memory */
extern KcMemStore *kc_memstore_create(const KcSchema *s);

/* Free the store */
extern void kc_memstore_destroy(KcMemStore *ms);

/* The store's interface for the core */
extern const KcStore *kc_memstore_store(KcMemStore *ms);

/*
 * Add n rows (x holds n * ndims coordinates), members of no group; their
 * handles are *first .. *first + n - 1.  Pointers to earlier rows'
 * coordinates may move.
 */
extern KcStatus kc_memstore_add_rows(KcMemStore *ms, const double *x, int64_t n,
									 int64_t *first);

/* Rows ever added (handles 0 .. this - 1) */
extern int64_t kc_memstore_nrows(const KcMemStore *ms);

/* A row's coordinates (NULL for no such handle) */
extern const double *kc_memstore_row(const KcMemStore *ms, int64_t handle);

/* The group of a row, or -1 when it belongs to none (new or removed) */
extern int64_t kc_memstore_row_group(const KcMemStore *ms, int64_t handle);

/*
 * Take a row out of its group for good (a delete); *gid receives the group
 * it left, to pass to kc_delete.
 */
extern KcStatus kc_memstore_remove(KcMemStore *ms, int64_t handle, int64_t *gid);

/* One more than the greatest group id handed out */
extern int64_t kc_memstore_gid_limit(const KcMemStore *ms);

/*
 * Group gid's summary as last put (out's arrays provided by the caller) and
 * its member count; false when there is no such group.
 */
extern bool kc_memstore_group(const KcMemStore *ms, int64_t gid, KcGroup *out,
							  int64_t *members);

#endif							/* KC_MEMSTORE_H */

/*
 * ke_engine.h
 *		The (k,e) engine: the optimal (k,e)-partitioning of a multiset of
 *		numbers, kept current under inserts and deletes.
 *
 * The multiset is held as runs (a distinct value and its count) in a B+-tree
 * ordered by value.  Each run r also stores the state of the linear dynamic
 * program over runs:
 *
 *	E		the least sum-error of a partitioning of every row up to r
 *	best	the running minimum of candidate starts absorbed so far, its
 *			argmin (run value, first or last row of that run) and its
 *			frontier (value of the last run whose candidates it absorbed)
 *	end		whether the current optimal partitioning ends a partition at
 *			this run's last row, or at its second-to-last row (a "split"
 *			run whose last row starts the next partition)
 *
 * E and best carry lazy offsets: every internal entry holds a pending add for
 * its child's subtree, so shifting every later E by the same delta costs
 * O(log m) node writes.  Argmins and frontiers are stored by value, so adding
 * or removing a run shifts nothing.
 *
 * The tree lives behind a node-access interface (KeStore): plain memory for
 * tests and benchmarks, index pages inside PostgreSQL.  The engine never
 * knows which.  The engine needs no PostgreSQL header.
 *
 * Rows of equal value that the optimum splits between two partitions are
 * assigned in arrival order by the caller: the last-arriving row of a split
 * run belongs to the later partition, the others to the earlier one.  The
 * engine deals in counts only.
 */
#ifndef KE_ENGINE_H
#define KE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ke_alloc.h"
#include "ke_dp.h"
#include "ke_num.h"
#include "ke_release.h"

#define KE_MAX_K		1000000
#define KE_MAX_HEIGHT	24

typedef enum KeStatus
{
	KE_OK = 0,
	KE_ERR_ARG,					/* invalid argument (k < 2, e < 0, NaN...) */
	KE_ERR_NOTFOUND,			/* delete of a value that is not there */
	KE_ERR_NOMEM,				/* allocation failed */
	KE_ERR_CORRUPT				/* stored state is inconsistent */
} KeStatus;

/* ----------------------------------------------------------------
 * Node access interface
 * ----------------------------------------------------------------
 */
typedef uint32_t KeNodeId;		/* 0 is never a valid node */

typedef struct KeMeta
{
	uint32_t	magic;
	uint32_t	version;
	int32_t		kind;			/* KeKind */
	int32_t		k;
	KeNum		e;
	KeNodeId	root;
	uint32_t	height;			/* 1 = the root is a leaf */
	int64_t		nruns;
	int64_t		nrows;
	int64_t		npartitions;	/* partition ends flagged in the runs */
} KeMeta;

#define KE_META_MAGIC	0x4b45414eU /* "KEAN" */
#define KE_META_VERSION 2	/* 2: feasibility is a flag of each run */

typedef struct KeStore KeStore;

struct KeStore
{
	size_t		node_size;		/* usable bytes of one node */
	/*
	 * Node for reading.  The pointer stays valid for at least the next 16
	 * read or write calls; the engine never keeps one longer.
	 */
	const void *(*read) (KeStore *store, KeNodeId id);
	/*
	 * Node for writing (marks it dirty).  The pointer, too, stays valid for
	 * the next 16 read or write calls and no longer: an index's store may
	 * write a page back and forget it after that (ke_memstore_create_strict
	 * holds the unit tests to this).
	 */
	void	   *(*write) (KeStore *store, KeNodeId id);
	/* a new zeroed node, returned for writing through write() */
	KeNodeId	(*alloc) (KeStore *store);
	/* give a node back */
	void		(*release) (KeStore *store, KeNodeId id);
	/* the engine's root record, for reading or writing */
	KeMeta	   *(*meta) (KeStore *store, bool for_write);
};

/* Memory home: nodes of node_size bytes (at least 512) from malloc */
extern KeStore *ke_memstore_create(size_t node_size);
extern KeStore *ke_memstore_create_strict(size_t node_size);
extern void ke_memstore_destroy(KeStore *store);
extern size_t ke_memstore_bytes(KeStore *store);

/* ----------------------------------------------------------------
 * Engine
 * ----------------------------------------------------------------
 */
typedef struct KeEngine KeEngine;

typedef struct KePartition
{
	KeNum		lo;				/* value of the first run */
	KeNum		hi;				/* value of the last run */
	bool		lo_last_only;	/* only the last-arriving row of run lo */
	bool		hi_split;		/* all rows of run hi but its last-arriving */
	int64_t		n;				/* rows */
	int64_t		ndistinct;		/* distinct values */
	KeNum		error;			/* hi - lo */
} KePartition;

typedef struct KeRunInfo
{
	KeNum		value;
	int64_t		count;
	bool		feasible;		/* a valid partitioning of the rows up to here exists */
	KeNum		E;				/* its least error (zero when not feasible) */
	KeNum		best;
	KeNum		argmin;			/* run value of the best start */
	int			argmin_last;	/* 1: the start is that run's last row */
	bool		has_frontier;
	KeNum		frontier;
	int			end;			/* KE_END_* */
} KeRunInfo;


/* What the last change did */
typedef struct KeChangeInfo
{
	int64_t		runs_recomputed;	/* DP steps of the last change */
	bool		boundaries_changed; /* some partition boundary moved */
	/*
	 * Rows whose partition may have changed have values in
	 * [lo, hi]; unbounded ends are flagged.  Empty when !any.
	 */
	bool		any;
	bool		lo_unbounded;
	bool		hi_unbounded;
	KeNum		lo;
	KeNum		hi;
} KeChangeInfo;

typedef struct KeChange
{
	KeNum		value;
	int64_t		delta;			/* rows added (> 0) or removed (< 0) */
} KeChange;

/* Where a partition ends: at run value's last row, or (split) before it */
typedef struct KeBoundary
{
	KeNum		value;
	bool		split;
} KeBoundary;

typedef bool (*KePartitionFn) (const KePartition *part, void *arg);
typedef bool (*KeRunFn) (const KeRunInfo *run, void *arg);


/* ke_engine.c */
extern KeStatus ke_validate_params(KeKind kind, int k, KeNum e);
extern KeStatus ke_create(KeEngine **out, KeStore *store, KeKind kind, int k, KeNum e);
extern KeStatus ke_open(KeEngine **out, KeStore *store);
extern void ke_close(KeEngine *eng);
extern void ke_keep_boundaries(KeEngine *eng, bool on);
extern KeStatus ke_adopt_boundaries(KeEngine *eng, const KeBoundary *bounds, size_t n,
									bool write, bool *optimal);
extern KeKind ke_kind(const KeEngine *eng);
extern int	ke_k(const KeEngine *eng);
extern KeNum ke_e(const KeEngine *eng);
extern int64_t ke_nrows(KeEngine *eng);
extern int64_t ke_nruns(KeEngine *eng);
extern bool ke_sum_error(KeEngine *eng, KeNum *out);
extern const char *ke_status_message(KeStatus st);

extern KeStatus ke_build_sorted(KeEngine *eng, const KeNum *sorted, size_t n);
extern KeStatus ke_build_runs(KeEngine *eng, const KeNum *vals, const int64_t *counts, size_t m);
extern KeStatus ke_insert(KeEngine *eng, KeNum v);
extern KeStatus ke_delete(KeEngine *eng, KeNum v);
extern KeStatus ke_apply(KeEngine *eng, const KeChange *changes, size_t n);
extern const KeChangeInfo *ke_last_change(const KeEngine *eng);

extern bool ke_foreach_partition(KeEngine *eng, KePartitionFn fn, void *arg);
extern bool ke_foreach_changed_partition(KeEngine *eng, KePartitionFn fn, void *arg);
extern bool ke_foreach_partition_range(KeEngine *eng, bool lo_unbounded, KeNum lo,
									   bool hi_unbounded, KeNum hi,
									   KePartitionFn fn, void *arg);
extern bool ke_foreach_run(KeEngine *eng, KeRunFn fn, void *arg);
extern KeStatus ke_verify(KeEngine *eng, char *msg, size_t msglen);

#endif							/* KE_ENGINE_H */

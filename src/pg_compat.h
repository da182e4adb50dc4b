/*
 * pg_compat.h
 *		The server API calls whose form differs between the PostgreSQL
 *		versions keanon builds against (15 and 17), behind one name each.
 *
 * Every PG_VERSION_NUM test of keanon is in this file.  PostgreSQL 16
 * changed the range constructor, the tuplesort datum fetch, the ownership
 * check, the executor's range table (column permissions moved from
 * RangeTblEntry to RTEPermissionInfo), simple_heap_update (which now says
 * which indexes the new row version needs) and ExecInsertIndexTuples
 * (which can insert into the summarizing indexes only); PostgreSQL 17
 * renamed ShmemVariableCache to TransamVariables.
 *
 * Include after postgres.h.
 */
#ifndef KEANON_PG_COMPAT_H
#define KEANON_PG_COMPAT_H

#include "access/heapam.h"
#include "access/transam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/rangetypes.h"
#include "utils/tuplesort.h"
#include "utils/typcache.h"

#if PG_VERSION_NUM >= 160000
#include "parser/parse_relation.h"
#endif

/* Which index entries a new row version needs (keanon_simple_heap_update) */
typedef enum KeanonIndexUpdate
{
	KEANON_INDEX_NONE,			/* a HOT update touching no indexed column */
	KEANON_INDEX_SUMMARIZING,	/* HOT, but summarizing indexes (BRIN) changed */
	KEANON_INDEX_ALL			/* a new entry in every index */
} KeanonIndexUpdate;

/* A range of the type of tc between two bounds (errors are thrown) */
static inline RangeType *
keanon_make_range(TypeCacheEntry *tc, RangeBound *lower, RangeBound *upper,
				  bool empty)
{
#if PG_VERSION_NUM >= 160000
	return make_range(tc, lower, upper, empty, NULL);
#else
	return make_range(tc, lower, upper, empty);
#endif
}

/* The next datum of a sort; a by-reference value is the caller's palloc'd copy */
static inline bool
keanon_tuplesort_getdatum(Tuplesortstate *state, bool forward, Datum *val,
						  bool *isnull)
{
#if PG_VERSION_NUM >= 160000
	return tuplesort_getdatum(state, forward, true, val, isnull, NULL);
#else
	return tuplesort_getdatum(state, forward, val, isnull, NULL);
#endif
}

/* Does role own the relation relid (or have the privileges of its owner)? */
static inline bool
keanon_owns_relation(Oid relid, Oid role)
{
#if PG_VERSION_NUM >= 160000
	return object_ownercheck(RelationRelationId, relid, role);
#else
	return pg_class_ownercheck(relid, role);
#endif
}

/* May role use (look up objects in) schema nsp? */
static inline bool
keanon_schema_usage(Oid nsp, Oid role)
{
#if PG_VERSION_NUM >= 160000
	return object_aclcheck(NamespaceRelationId, nsp, role, ACL_USAGE) == ACLCHECK_OK;
#else
	return pg_namespace_aclcheck(nsp, role, ACL_USAGE) == ACLCHECK_OK;
#endif
}

/* The oldest transaction id the commit log still holds */
static inline TransactionId
keanon_oldest_clog_xid(void)
{
#if PG_VERSION_NUM >= 170000
	return TransamVariables->oldestClogXid;
#else
	return ShmemVariableCache->oldestClogXid;
#endif
}

/*
 * Give estate a range table of the one relation rte describes (range table
 * index 1), with no column declared updated yet
 */
static inline void
keanon_init_range_table(EState *estate, RangeTblEntry *rte)
{
#if PG_VERSION_NUM >= 160000
	List	   *perminfos = NIL;

	(void) addRTEPermissionInfo(&perminfos, rte);
	ExecInitRangeTable(estate, list_make1(rte), perminfos);
#else
	ExecInitRangeTable(estate, list_make1(rte));
#endif
}

/*
 * Declare the column att of estate's relation 1 updated, as
 * ExecGetUpdatedCols reports it (keanon_init_range_table made the table)
 */
static inline void
keanon_mark_column_updated(EState *estate, AttrNumber att)
{
	RangeTblEntry *rte = exec_rt_fetch(1, estate);
	int			member = att - FirstLowInvalidHeapAttributeNumber;

#if PG_VERSION_NUM >= 160000
	RTEPermissionInfo *perminfo = getRTEPermissionInfo(estate->es_rteperminfos, rte);

	perminfo->updatedCols = bms_add_member(perminfo->updatedCols, member);
#else
	rte->updatedCols = bms_add_member(rte->updatedCols, member);
#endif
}

/*
 * simple_heap_update of the row at tid to tup; says which index entries
 * the new version needs
 */
static inline KeanonIndexUpdate
keanon_simple_heap_update(Relation rel, ItemPointer tid, HeapTuple tup)
{
#if PG_VERSION_NUM >= 160000
	TU_UpdateIndexes update_indexes;

	simple_heap_update(rel, tid, tup, &update_indexes);
	if (update_indexes == TU_All)
		return KEANON_INDEX_ALL;
	if (update_indexes == TU_Summarizing)
		return KEANON_INDEX_SUMMARIZING;
	return KEANON_INDEX_NONE;
#else
	simple_heap_update(rel, tid, tup);
	return HeapTupleIsHeapOnly(tup) ? KEANON_INDEX_NONE : KEANON_INDEX_ALL;
#endif
}

/*
 * ExecInsertIndexTuples without arbiter indexes or a conflict report:
 * the entries of slot's row in the indexes which says (never
 * KEANON_INDEX_NONE)
 */
static inline List *
keanon_insert_index_tuples(ResultRelInfo *rri, TupleTableSlot *slot,
						   EState *estate, bool update, KeanonIndexUpdate which)
{
	Assert(which != KEANON_INDEX_NONE);
#if PG_VERSION_NUM >= 160000
	return ExecInsertIndexTuples(rri, slot, estate, update, false, NULL, NIL,
								 which == KEANON_INDEX_SUMMARIZING);
#else
	/* before 16 a HOT update leaves every index, summarizing ones too, alone */
	Assert(which == KEANON_INDEX_ALL);
	return ExecInsertIndexTuples(rri, slot, estate, update, false, NULL, NIL);
#endif
}

#endif							/* KEANON_PG_COMPAT_H */

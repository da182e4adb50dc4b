/*
 * am_build.c
 *		Building a keanon index: from the table's rows to the optimum in
 *		pages.
 *
 * The rows visible to a fresh snapshot (recently dead and aborted rows
 * left out) are sorted with tuplesort, in maintenance_work_mem, then one
 * linear DP pass lays the runs into pages from block 1 without WAL, and
 * the whole relation is logged once at the end.  The same path rebuilds
 * an existing index in place after an abort or crash (KeanonRebuild), and
 * lays out the runs of an index whose scale rises (KeanonWriteRuns).
 *
 * An unconstrained numeric column's scale is chosen here: the most decimal
 * places a value needs, but at least KEANON_GROWING_SCALE, so that an index
 * built over an empty table (as keanon.watch builds one) takes the usual
 * decimals without a rebuild.  Values show with the decimal places they
 * were written with at build (display_scale).
 *
 * Progress is reported in pg_stat_progress_create_index: the table scan as
 * usual, then the sort and the write as subphases.
 */
#include "postgres.h"

#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "commands/progress.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "pgstat.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplesort.h"
#include "utils/typcache.h"

#include "keanon_am.h"
#include "pg_compat.h"

#define KEANON_PHASE_SORT	2
#define KEANON_PHASE_WRITE	3

typedef struct CollectState
{
	Tuplesortstate *sort;
	const KeanonValueType *vt;
	int			max_scale;		/* numeric: the most decimal places written */
	int			max_need;		/* numeric: the most decimal places needed */
	double		heap_tuples;
	int64		nvalues;
} CollectState;

/* Name the subphases for pg_stat_progress_create_index */
char *
keanonbuildphasename(int64 phasenum)
{
	switch (phasenum)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case KEANON_PHASE_SORT:
			return "sorting values";
		case KEANON_PHASE_WRITE:
			return "computing partitions and writing pages";
		default:
			return NULL;
	}
}

/* Start a sort of the indexed type */
static Tuplesortstate *
begin_sort(Oid typid)
{
	TypeCacheEntry *tc = lookup_type_cache(typid, TYPECACHE_LT_OPR);

	if (!OidIsValid(tc->lt_opr))
		elog(ERROR, "no ordering operator for type %u", typid);
	return tuplesort_begin_datum(typid, tc->lt_opr, InvalidOid, false,
								 maintenance_work_mem, NULL, TUPLESORT_NONE);
}

/* Feed one value to the sort, refusing what the engine cannot hold */
static void
collect_value(CollectState *cs, Datum value)
{
	if (cs->vt->typid == NUMERICOID && cs->vt->scale < 0)
	{
		int			s;

		/* NaN and infinity have no scale */
		KeanonRefuseNonFinite(NUMERICOID, value);
		s = KeanonNumericScale(value);
		if (s > cs->max_scale)
			cs->max_scale = s;
		s = KeanonNumericMinScale(value);
		if (s > cs->max_need)
			cs->max_need = s;
	}
	else
		(void) KeanonDatumToNum(cs->vt, value);	/* rejects NaN and infinity */
	tuplesort_putdatum(cs->sort, value, false);
	cs->nvalues++;
}

/* table_index_build_scan callback: keep live, non-null values */
static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	CollectState *cs = state;

	cs->heap_tuples += 1;
	if (isnull[0] || !tupleIsAlive)
		return;
	collect_value(cs, values[0]);
}

/* Sorted values out of the sort, as engine numbers */
static void
drain_sort(CollectState *cs, KeanonValueType *vt, KeanonValues *out)
{
	Datum		d;
	bool		isnull;
	int64		i = 0;

	if (vt->typid == NUMERICOID && vt->scale < 0)
	{
		if (cs->max_need > KEANON_MAX_SCALE)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("values with %d decimal places are too precise for a keanon index",
							cs->max_need),
					 errhint("Round the column, or set the index's \"scale\" option to at most %d.",
							 KEANON_MAX_SCALE)));
		vt->scale = Max(cs->max_need, KEANON_GROWING_SCALE);
		vt->display_scale = Min(cs->max_scale, KEANON_MAX_SCALE);
	}
	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, KEANON_PHASE_SORT);
	tuplesort_performsort(cs->sort);
	out->vals = MemoryContextAllocExtended(CurrentMemoryContext,
										   sizeof(KeNum) * Max(cs->nvalues, 1),
										   MCXT_ALLOC_HUGE);
	while (keanon_tuplesort_getdatum(cs->sort, true, &d, &isnull))
	{
		out->vals[i++] = KeanonDatumToNum(vt, d);
		if (vt->typid == NUMERICOID)
			pfree(DatumGetPointer(d));
		CHECK_FOR_INTERRUPTS();
	}
	tuplesort_end(cs->sort);
	out->n = i;
	out->heap_tuples = cs->heap_tuples;
}

/*
 * The sorted non-null values of the indexed column over the rows visible
 * to a fresh snapshot, for rebuilds and checks.
 */
void
KeanonTableValues(Relation heap, Relation index, const KeanonValueType *vt,
				  KeanonValues *out)
{
	AttrNumber	attno = index->rd_index->indkey.values[0];
	Snapshot	snap = RegisterSnapshot(GetLatestSnapshot());
	TableScanDesc scan = table_beginscan(heap, snap, 0, NULL);
	TupleTableSlot *slot = table_slot_create(heap, NULL);
	CollectState cs;
	KeanonValueType tmp = *vt;

	memset(&cs, 0, sizeof(cs));
	cs.vt = vt;
	cs.sort = begin_sort(vt->typid);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		d = slot_getattr(slot, attno, &isnull);

		cs.heap_tuples += 1;
		if (!isnull)
			collect_value(&cs, d);
		CHECK_FOR_INTERRUPTS();
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	UnregisterSnapshot(snap);
	/* a value with more decimal places than the index's scale is refused there */
	drain_sort(&cs, &tmp, out);
}

/*
 * Lay n sorted values (counts NULL) or n runs into the index's pages,
 * without WAL, then log them all.  The metapage takes vt's scale and e.
 */
static void
lay_out(Relation index, const KeanonValueType *vt, int k, KeNum e,
		const KeNum *vals, const int64 *counts, size_t n, bool from_table)
{
	KeStore    *store = KeanonStoreCreate(index, KEANON_STORE_BUILD);
	KeanonMetaPageData *meta;
	KeEngine   *eng;
	KeMeta	   *m;

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, KEANON_PHASE_WRITE);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL, (int64) n);
	KeanonEngineAllocator();
	meta = KeanonStoreMetaPage(store);
	meta->scale = vt->scale;
	meta->scale_grows = vt->grows;
	meta->display_scale = vt->display_scale;
	meta->e = e;
	meta->flags_built = from_table;
	m = store->meta(store, true);
	if (m->magic == KE_META_MAGIC)
	{
		m->e = e;
		KeanonCheckStatus(ke_open(&eng, store), index);
	}
	else
		KeanonCheckStatus(ke_create(&eng, store, vt->kind, k, e), index);
	KeanonStoreReset(store);
	/*
	 * no page locked while the partitioning is computed (a fresh engine's
	 * first node was), so that a cancel is heard then
	 */
	KeanonStoreRelease(store);
	if (counts != NULL)
		KeanonCheckStatus(ke_build_runs(eng, vals, counts, n), index);
	else
		KeanonCheckStatus(ke_build_sorted(eng, vals, n), index);
	ke_close(eng);
	KeanonStoreFinish(store);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, (int64) n);
	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, 0,
						  RelationGetNumberOfBlocks(index), true);
}

/* Lay sorted values into the index's pages, without WAL, then log them all */
static void
write_tree(Relation index, const KeanonValueType *vt, int k, KeNum e,
		   const KeanonValues *values)
{
	lay_out(index, vt, k, e, values->vals, NULL, (size_t) values->n, true);
}

/*
 * Lay m runs (ascending values and their counts, or m sorted values when
 * counts is NULL) into an existing index's pages, with vt's scale and e in
 * the metapage, without WAL, then log them all.  The caller holds the
 * keanon lock and has made the rebuild mark durable (see
 * KeanonIndexFitScale).
 */
void
KeanonWriteRuns(Relation index, const KeanonValueType *vt, int k, KeNum e,
				const KeNum *vals, const int64 *counts, size_t m)
{
	lay_out(index, vt, k, e, vals, counts, m, false);
}

/* The options of an index, with k required */
static KeanonOptions *
index_options(Relation index)
{
	KeanonOptions *opts = (KeanonOptions *) index->rd_options;

	if (opts == NULL || opts->k < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("keanon index \"%s\" needs the option k",
						RelationGetRelationName(index)),
				 errhint("Add WITH (k = ..., e = ...) to CREATE INDEX.")));
	return opts;
}

/* Work out the value type of an index's column */
static void
index_value_type(Relation heap, Relation index, const KeanonOptions *opts,
				 KeanonValueType *vt)
{
	AttrNumber	attno = index->rd_index->indkey.values[0];
	Form_pg_attribute att;

	if (attno == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("keanon indexes cannot be built on expressions"),
				 errhint("Index a plain column.")));
	att = TupleDescAttr(RelationGetDescr(heap), attno - 1);
	KeanonValueTypeFor(att->atttypid, att->atttypmod, opts->scale, vt);
	vt->index = RelationGetRelid(index);
}

/* ambuild: compute the optimum of the table's column into a new index */
IndexBuildResult *
keanonbuild(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	KeanonOptions *opts = index_options(index);
	KeanonValueType vt;
	CollectState cs;
	KeanonValues values;
	KeNum		e;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));
	if (indexInfo->ii_NumIndexAttrs != 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("keanon indexes have exactly one column")));
	/*
	 * A concurrent build would miss the changes made while it runs: keanon
	 * keeps its state in the pages of one index, which writers change in
	 * place, not through aminsert
	 */
	if (indexInfo->ii_Concurrent)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("keanon indexes cannot be built concurrently"),
				 errhint("Use REINDEX or CREATE INDEX without CONCURRENTLY.")));
	if (indexInfo->ii_Predicate != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("keanon indexes cannot be partial"),
				 errdetail("The partitioning covers every row of the table.")));
	index_value_type(heap, index, opts, &vt);

	memset(&cs, 0, sizeof(cs));
	cs.vt = &vt;
	cs.sort = begin_sort(vt.typid);
	cs.heap_tuples = table_index_build_scan(heap, index, indexInfo, true, true,
											build_callback, &cs, NULL);
	drain_sort(&cs, &vt, &values);
	/* only now is the scale of an unconstrained numeric column known */
	e = KeanonENum(&vt, KeanonOptionsE(opts));

	KeanonInitMetaPage(index, MAIN_FORKNUM, &vt, opts->k, e);
	write_tree(index, &vt, opts->k, e, &values);

	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = cs.heap_tuples;
	result->index_tuples = values.n;
	return result;
}

/* ambuildempty: the init fork of an unlogged index, a metapage alone */
void
keanonbuildempty(Relation index)
{
	KeanonOptions *opts = index_options(index);
	Relation	heap = table_open(index->rd_index->indrelid, AccessShareLock);
	KeanonValueType vt;

	index_value_type(heap, index, opts, &vt);
	table_close(heap, AccessShareLock);
	if (vt.typid == NUMERICOID && vt.scale < 0)
	{
		vt.scale = KEANON_GROWING_SCALE;
		vt.display_scale = 0;
	}
	KeanonInitMetaPage(index, INIT_FORKNUM, &vt, opts->k,
					   KeanonENum(&vt, KeanonOptionsE(opts)));
}

/* Rebuild an existing index's state in place from its table */
void
KeanonRebuild(KeanonIndex *ki)
{
	KeanonValues values;

	KeanonTableValues(ki->heap, ki->index, &ki->vt, &values);
	write_tree(ki->index, &ki->vt, ki->k, ki->e, &values);
	pfree(values.vals);
}

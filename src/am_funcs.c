/*
 * am_funcs.c
 *		SQL functions over keanon indexes: the partitions they hold, a
 *		check against the table (an amcheck for keanon), and, for
 *		superusers, a look at the metapage as it stands and an entry point
 *		that applies changes, for tests.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"

#include "keanon_am.h"

PG_FUNCTION_INFO_V1(keanon_index_partitions);
PG_FUNCTION_INFO_V1(keanon_index_check);
PG_FUNCTION_INFO_V1(keanon_index_apply);
PG_FUNCTION_INFO_V1(keanon_index_metapage);

typedef struct PartitionRows
{
	ReturnSetInfo *rsinfo;
	const KeanonValueType *vt;
	int64		pid;
} PartitionRows;

/* Emit one partition as a result row */
static bool
emit_partition(const KePartition *p, void *arg)
{
	PartitionRows *pr = arg;
	Datum		values[6];
	bool		nulls[6] = {false};

	values[0] = Int64GetDatum(++pr->pid);
	values[1] = Int64GetDatum(p->n);
	values[2] = Int64GetDatum(p->ndistinct);
	values[3] = KeanonNumToNumeric(pr->vt, p->lo);
	values[4] = KeanonNumToNumeric(pr->vt, p->hi);
	values[5] = KeanonNumToNumeric(pr->vt, p->error);
	tuplestore_putvalues(pr->rsinfo->setResult, pr->rsinfo->setDesc, values, nulls);
	return true;
}

/* keanon.index_partitions(index regclass): the partitions, ascending */
Datum
keanon_index_partitions(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	KeanonIndex *ki;
	PartitionRows pr;

	InitMaterializedSRF(fcinfo, 0);
	ki = KeanonIndexOpen(indexoid, false);
	pr.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	pr.vt = &ki->vt;
	pr.pid = 0;
	if (ki->engine != NULL)
		ke_foreach_partition(ki->engine, emit_partition, &pr);
	KeanonIndexClose(ki);
	return (Datum) 0;
}

typedef struct RunList
{
	KeRunInfo  *runs;
	int64		n;
	int64		cap;
} RunList;

/* Collect runs into a list */
static bool
collect_run(const KeRunInfo *r, void *arg)
{
	RunList    *rl = arg;

	if (rl->n == rl->cap)
	{
		rl->cap = rl->cap * 2 + 64;
		rl->runs = rl->runs ? repalloc_huge(rl->runs, sizeof(KeRunInfo) * rl->cap)
			: MemoryContextAllocExtended(CurrentMemoryContext,
										 sizeof(KeRunInfo) * rl->cap, MCXT_ALLOC_HUGE);
	}
	rl->runs[rl->n++] = *r;
	return true;
}

/* Do two runs carry the same state? */
static bool
same_run(KeKind kind, const KeRunInfo *a, const KeRunInfo *b)
{
	/* the end flags may lay out another optimum: ke_verify checks them */
	if (!ke_num_eq(kind, a->value, b->value) || a->count != b->count ||
		a->feasible != b->feasible)
		return false;
	if (!a->feasible)
		return true;
	if (kind == KE_KIND_FLOAT && isfinite(b->E.f))
	{
		if (!isfinite(a->E.f) || fabs(a->E.f - b->E.f) > 1e-9 * Max(1.0, fabs(b->E.f)))
			return false;
	}
	else if (!ke_num_eq(kind, a->E, b->E))
		return false;
	return ke_num_eq(kind, a->argmin, b->argmin) && a->argmin_last == b->argmin_last;
}

/* Raise the error for a failed check */
static void
check_failed(Relation index, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("keanon index \"%s\" does not match its table",
					RelationGetRelationName(index)),
			 errdetail_internal("%s", detail),
			 errhint("REINDEX the index.")));
}

/*
 * Recompute the optimum from the index's table and compare it, run by run,
 * with the state in the pages; check the pages' own invariants.  Raises an
 * error saying what differs.
 */
void
KeanonIndexVerify(KeanonIndex *ki)
{
	KeanonValues values;
	KeStore    *mem;
	KeEngine   *fresh;
	RunList		have = {0},
				want = {0};
	KeKind		kind = ki->vt.kind;
	char		msg[256];
	char		b1[64],
				b2[64];

	KeanonTableValues(ki->heap, ki->index, &ki->vt, &values);
	KeanonEngineAllocator();
	mem = ke_memstore_create(8192);
	KeanonCheckStatus(ke_create(&fresh, mem, kind, ki->k, ki->e), ki->index);
	KeanonCheckStatus(ke_build_sorted(fresh, values.vals, (size_t) values.n), ki->index);
	ke_foreach_run(fresh, collect_run, &want);

	if (ki->engine != NULL)
	{
		if (ke_verify(ki->engine, msg, sizeof(msg)) != KE_OK)
			check_failed(ki->index, msg);
		ke_foreach_run(ki->engine, collect_run, &have);
		if (ke_nrows(ki->engine) != values.n)
			check_failed(ki->index,
						 psprintf("The index holds %lld values, the table %lld.",
								  (long long) ke_nrows(ki->engine), (long long) values.n));
	}
	for (int64 i = 0; i < Max(have.n, want.n); i++)
	{
		if (i >= have.n)
			check_failed(ki->index,
						 psprintf("Value %s of the table is missing from the index.",
								  ke_num_format(kind, want.runs[i].value, b1, sizeof(b1))));
		if (i >= want.n)
			check_failed(ki->index,
						 psprintf("Value %s of the index is not in the table.",
								  ke_num_format(kind, have.runs[i].value, b1, sizeof(b1))));
		if (!same_run(kind, &have.runs[i], &want.runs[i]))
			check_failed(ki->index,
						 psprintf("At value %s (table: value %s, %lld rows) the stored state differs from a recomputation.",
								  ke_num_format(kind, have.runs[i].value, b1, sizeof(b1)),
								  ke_num_format(kind, want.runs[i].value, b2, sizeof(b2)),
								  (long long) want.runs[i].count));
	}
	ke_close(fresh);
	ke_memstore_destroy(mem);
}

/* keanon.index_check(index regclass): an amcheck for keanon indexes */
Datum
keanon_index_check(PG_FUNCTION_ARGS)
{
	KeanonIndex *ki = KeanonIndexOpen(PG_GETARG_OID(0), false);

	KeanonIndexVerify(ki);
	KeanonIndexClose(ki);
	PG_RETURN_BOOL(true);
}

/* A numeric from SQL as an engine number of the index's type */
static KeNum
numeric_arg_to_num(const KeanonValueType *vt, Datum num)
{
	switch (vt->typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			{
				Numeric		n = DatumGetNumeric(num);

				if (numeric_is_nan(n) || numeric_is_inf(n) ||
					KeanonNumericScale(num) != 0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("value for an integer keanon index must be an integer")));
				return ke_num_int(DatumGetInt64(DirectFunctionCall1(numeric_int8, num)));
			}
		case FLOAT4OID:
		case FLOAT8OID:
			return KeanonDatumToNum(vt, DirectFunctionCall1(numeric_float8, num));
		default:
			return KeanonDatumToNum(vt, num);
	}
}

/*
 * keanon.index_apply(index regclass, vals numeric[], deltas bigint[]):
 * change the index's multiset directly, as keanon's triggers do.  For tests
 * of crash safety and replication; superuser only, since it makes the index
 * disagree with its table until the table changes the same way.  Like the
 * triggers, call it before changing the table: an index that must repair
 * itself first rebuilds from the table as it stands.  An unconstrained
 * numeric index raises its scale to the finest value's first.
 */
Datum
keanon_index_apply(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	ArrayType  *va = PG_GETARG_ARRAYTYPE_P(1);
	ArrayType  *da = PG_GETARG_ARRAYTYPE_P(2);
	Datum	   *vals,
			   *deltas;
	bool	   *vnulls,
			   *dnulls;
	int			nv,
				nd;
	KeanonIndex *ki;
	KeChange   *changes;
	int64		recomputed;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only superusers may change a keanon index directly")));
	deconstruct_array(va, NUMERICOID, -1, false, TYPALIGN_INT, &vals, &vnulls, &nv);
	deconstruct_array(da, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &deltas, &dnulls, &nd);
	if (nv != nd)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("values and deltas must have the same length")));
	ki = KeanonIndexOpen(indexoid, true);
	changes = palloc(sizeof(KeChange) * Max(nv, 1));
	for (int i = 0; i < nv; i++)
		if (vnulls[i] || dnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("values and deltas must not be null")));
	/* an unconstrained numeric index first takes the finest value's scale */
	if (ki->vt.grows)
	{
		int			need = 0;

		for (int i = 0; i < nv; i++)
		{
			Numeric		n = DatumGetNumeric(vals[i]);

			if (!numeric_is_nan(n) && !numeric_is_inf(n))
				need = Max(need, KeanonNumericMinScale(vals[i]));
		}
		KeanonIndexFitScale(ki, need);
	}
	for (int i = 0; i < nv; i++)
	{
		changes[i].value = numeric_arg_to_num(&ki->vt, vals[i]);
		changes[i].delta = DatumGetInt64(deltas[i]);
	}
	KeanonIndexApply(ki, changes, nv);
	recomputed = ki->engine ? ke_last_change(ki->engine)->runs_recomputed : 0;
	KeanonIndexClose(ki);
	PG_RETURN_INT64(recomputed);
}

/* Refuse an index that is not a keanon index */
void
KeanonCheckIsKeanon(Relation index)
{
	if (index->rd_rel->relkind != RELKIND_INDEX || index->rd_indam == NULL ||
		index->rd_indam->ambuild != keanonbuild)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a keanon index", RelationGetRelationName(index))));
}

/*
 * keanon.index_metapage(index regclass): the metapage as it stands, without
 * the repair that opening the index would do: layout version, value type,
 * scale, k, e, rows, the rebuild mark and the list of transactions whose
 * changes are not known to have committed.  Superuser only: it shows
 * transaction ids of the table's writers.
 */
Datum
keanon_index_metapage(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Relation	index;
	KeanonMetaPageData *meta;
	KeanonValueType vt;
	XLogRecPtr	lsn;
	TupleDesc	tupdesc;
	Datum		values[8];
	bool		nulls[8] = {false};
	Datum	   *xids;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only superusers may read a keanon index's metapage")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	index = index_open(indexoid, AccessShareLock);
	KeanonCheckIsKeanon(index);
	meta = palloc(sizeof(KeanonMetaPageData));
	KeanonIndexReadMeta(index, meta, &lsn);
	KeanonMetaValueType(meta, indexoid, &vt);
	values[0] = Int32GetDatum((int32) meta->version);
	values[1] = ObjectIdGetDatum(meta->typid);
	values[2] = Int32GetDatum(meta->scale);
	values[3] = Int32GetDatum(meta->k);
	values[4] = KeanonNumToNumeric(&vt, meta->e);
	values[5] = Int64GetDatum(meta->engine.magic == KE_META_MAGIC ? meta->engine.nrows : 0);
	values[6] = BoolGetDatum(meta->needs_rebuild);
	xids = palloc(sizeof(Datum) * Max(meta->nflux, 1));
	for (uint32 i = 0; i < meta->nflux; i++)
		xids[i] = TransactionIdGetDatum(meta->flux[i]);
	values[7] = PointerGetDatum(construct_array(xids, (int) meta->nflux, XIDOID, sizeof(TransactionId),
												true, TYPALIGN_INT));
	index_close(index, AccessShareLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

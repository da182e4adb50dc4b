/*-------------------------------------------------------------------------
 *
 * sql_engine.c
 *		SQL-callable functions that run the (k,e) engine over an array.
 *
 * keanon.optimal_partitions(vals, k, e) computes the optimal
 * (k,e)-partitioning of the array's non-null elements from scratch, with
 * the same engine that maintains watched tables, placed in its memory home.
 * It lets users (and the regression tests) look at the engine's answer for
 * any multiset without watching a table.
 *
 * Integer arrays use the engine's exact kind, so errors are exact; double
 * precision arrays use its float kind, where errors round as double
 * arithmetic does.  NaN and infinities have no place in a partition and are
 * rejected, as is every parameter the engine would refuse, with a message
 * that says which one is wrong.
 *
 * The engine allocates with palloc (see _PG_init), so an error anywhere
 * frees its memory with the function's context; the store is destroyed on
 * the normal way out only to give the memory back early.

 * src/sql_engine.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/tuplestore.h"

#include "ke_engine.h"
#include "keanon_am.h"

/* Bytes per node of the engine's memory home */
#define KEANON_MEMSTORE_NODE_SIZE	8192

/* Columns of the result of keanon.optimal_partitions() */
#define KEANON_PARTITION_COLS		6

/* Partitions collected from the engine, in ascending order */
typedef struct PartitionList
{
	KePartition *parts;
	size_t		nparts;
	size_t		capacity;
	bool		overflow;		/* the engine reported more than capacity */
} PartitionList;

/* What one run of the engine found */
typedef struct EngineResult
{
	bool		valid;			/* a valid partitioning exists */
	int64		nruns;			/* distinct values */
	PartitionList list;
} EngineResult;

PG_FUNCTION_INFO_V1(keanon_optimal_partitions_int8);
PG_FUNCTION_INFO_V1(keanon_optimal_partitions_float8);

/* Order exact-kind numbers ascending, for qsort */
static int
cmp_exact(const void *a, const void *b)
{
	const KeNum *x = (const KeNum *) a;
	const KeNum *y = (const KeNum *) b;

	return ke_num_cmp(KE_KIND_EXACT, *x, *y);
}

/* Order float-kind numbers ascending, for qsort; NaN was rejected before */
static int
cmp_float(const void *a, const void *b)
{
	const KeNum *x = (const KeNum *) a;
	const KeNum *y = (const KeNum *) b;

	return ke_num_cmp(KE_KIND_FLOAT, *x, *y);
}

/* Text of a number for messages */
static char *
num_to_cstring(KeKind kind, KeNum x)
{
	char		buf[64];

	if (kind == KE_KIND_FLOAT)
		return float8out_internal(x.f);
	return pstrdup(ke_num_format(kind, x, buf, sizeof(buf)));
}

/* A finite engine number as a numeric datum */
static Datum
num_to_numeric(KeKind kind, KeNum x)
{
	char		buf[64];

	if (kind == KE_KIND_FLOAT)
		return KeanonFloatToNumeric(x.f);
	return DirectFunctionCall3(numeric_in,
							   CStringGetDatum(ke_num_format(kind, x, buf, sizeof(buf))),
							   ObjectIdGetDatum(InvalidOid),
							   Int32GetDatum(-1));
}

/* Throw the error that a failed engine call deserves */
static void
check_engine_status(KeStatus status)
{
	if (status == KE_OK)
		return;
	if (status == KE_ERR_NOMEM)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("The (k,e) engine could not allocate memory.")));
	elog(ERROR, "keanon engine failed: %s", ke_status_message(status));
}

/* Reject a k the engine cannot honour */
static void
validate_k(int32 k)
{
	if (k < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be at least 2"),
				 errdetail("The value given was %d.", k),
				 errhint("Each partition must hold at least k distinct values.")));
	if (k > KE_MAX_K)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be at most %d", KE_MAX_K),
				 errdetail("The value given was %d.", k)));
}

/* Reject a negative or non-finite e */
static void
validate_e(KeKind kind, KeNum e)
{
	if (kind == KE_KIND_FLOAT && (isnan(e.f) || isinf(e.f)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("e must be a finite number"),
				 errdetail("The value given was %s.", num_to_cstring(kind, e))));
	if (ke_num_cmp(kind, e, ke_num_zero(kind)) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("e must not be negative"),
				 errdetail("The value given was %s.", num_to_cstring(kind, e)),
				 errhint("e is the least range (maximum minus minimum) of a partition.")));
}

/*
 * The non-null elements of a one-dimensional bigint[] or float8[] as engine
 * numbers, sorted ascending; *count receives how many there are.
 */
static KeNum *
sorted_values(ArrayType *arr, KeKind kind, size_t *count)
{
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	KeNum	   *vals;
	size_t		n = 0;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("vals must be a one-dimensional array"),
				 errdetail("The array given has %d dimensions.", ARR_NDIM(arr))));

	if (kind == KE_KIND_EXACT)
		deconstruct_array(arr, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
						  TYPALIGN_DOUBLE, &elems, &nulls, &nelems);
	else
		deconstruct_array(arr, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
						  TYPALIGN_DOUBLE, &elems, &nulls, &nelems);

	vals = MemoryContextAllocHuge(CurrentMemoryContext,
								  Max(nelems, 1) * sizeof(KeNum));
	for (int i = 0; i < nelems; i++)
	{
		if (nulls[i])
			continue;
		if (kind == KE_KIND_EXACT)
			vals[n++] = ke_num_int(DatumGetInt64(elems[i]));
		else
		{
			float8		v = DatumGetFloat8(elems[i]);

			if (isnan(v) || isinf(v))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("vals must not contain NaN or infinity"),
						 errdetail("Element %d is %s.",
								   ARR_LBOUND(arr)[0] + i, float8out_internal(v)),
						 errhint("Remove non-finite values before calling the function.")));
			vals[n++] = ke_num_float(v);
		}
	}

	pfree(elems);
	pfree(nulls);

	qsort(vals, n, sizeof(KeNum), kind == KE_KIND_EXACT ? cmp_exact : cmp_float);
	*count = n;
	return vals;
}

/* Engine callback: copy one partition into the list; never throws */
static bool
collect_partition(const KePartition *part, void *arg)
{
	PartitionList *list = (PartitionList *) arg;

	if (list->nparts >= list->capacity)
	{
		list->overflow = true;
		return false;
	}
	list->parts[list->nparts++] = *part;
	return true;
}

/*
 * Build an engine in a memory home over sorted vals and collect its
 * partitions.
 */
static void
run_engine(KeKind kind, int k, KeNum e, const KeNum *vals, size_t n,
		   EngineResult *result)
{
	KeStore    *store;
	KeEngine   *eng = NULL;
	KeStatus	status;

	/* every partition holds at least k rows */
	result->list.capacity = n / (size_t) k + 1;
	result->list.parts = MemoryContextAllocHuge(CurrentMemoryContext,
												result->list.capacity * sizeof(KePartition));
	result->list.nparts = 0;
	result->list.overflow = false;
	result->valid = false;
	result->nruns = 0;

	store = ke_memstore_create(KEANON_MEMSTORE_NODE_SIZE);
	if (store == NULL)
		check_engine_status(KE_ERR_NOMEM);
	status = ke_create(&eng, store, kind, k, e);
	if (status == KE_OK)
		status = ke_build_sorted(eng, vals, n);
	if (status == KE_OK)
	{
		KeNum		sum_error;

		result->nruns = ke_nruns(eng);
		result->valid = ke_sum_error(eng, &sum_error);
		if (result->valid)
			ke_foreach_partition(eng, collect_partition, &result->list);
	}
	if (eng != NULL)
		ke_close(eng);
	ke_memstore_destroy(store);

	check_engine_status(status);
	if (result->list.overflow)
		elog(ERROR, "keanon engine reported more than %zu partitions for %zu values",
			 result->list.capacity, n);
	if (result->valid && result->list.nparts == 0)
		elog(ERROR, "keanon engine reported a valid partitioning without partitions");
}

/* Tell the user why no valid partitioning exists */
static void
explain_no_partitioning(KeKind kind, int k, KeNum e, const KeNum *vals,
						size_t n, int64 nruns)
{
	if (n == 0)
		ereport(NOTICE,
				(errmsg("no valid (k,e)-partitioning exists"),
				 errdetail("The array holds no non-null elements.")));
	else if (nruns < k)
		ereport(NOTICE,
				(errmsg("no valid (k,e)-partitioning exists"),
				 errdetail("The array holds " INT64_FORMAT " distinct values, fewer than k = %d.",
						   nruns, k)));
	else
		ereport(NOTICE,
				(errmsg("no valid (k,e)-partitioning exists"),
				 errdetail("The values span %s, less than e = %s.",
						   num_to_cstring(kind, ke_num_sub(kind, vals[n - 1], vals[0])),
						   num_to_cstring(kind, e))));
}

/* Shared body of both keanon.optimal_partitions() variants */
static void
optimal_partitions(FunctionCallInfo fcinfo, KeKind kind)
{
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(0);
	int32		k = PG_GETARG_INT32(1);
	KeNum		e;
	KeNum	   *vals;
	size_t		n;
	EngineResult result;
	ReturnSetInfo *rsinfo;

	if (kind == KE_KIND_EXACT)
		e = ke_num_int(PG_GETARG_INT64(2));
	else
		e = ke_num_float(PG_GETARG_FLOAT8(2));

	validate_k(k);
	validate_e(kind, e);
	vals = sorted_values(arr, kind, &n);

	InitMaterializedSRF(fcinfo, 0);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	run_engine(kind, k, e, vals, n, &result);
	if (!result.valid)
	{
		explain_no_partitioning(kind, k, e, vals, n, result.nruns);
		return;
	}

	for (size_t i = 0; i < result.list.nparts; i++)
	{
		const KePartition *part = &result.list.parts[i];
		Datum		values[KEANON_PARTITION_COLS];
		bool		nulls[KEANON_PARTITION_COLS] = {0};

		values[0] = Int64GetDatum((int64) i + 1);
		values[1] = Int64GetDatum(part->n);
		values[2] = Int64GetDatum(part->ndistinct);
		values[3] = num_to_numeric(kind, part->lo);
		values[4] = num_to_numeric(kind, part->hi);
		values[5] = num_to_numeric(kind, part->error);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* keanon.optimal_partitions(bigint[], integer, bigint) */
Datum
keanon_optimal_partitions_int8(PG_FUNCTION_ARGS)
{
	optimal_partitions(fcinfo, KE_KIND_EXACT);
	return (Datum) 0;
}

/* keanon.optimal_partitions(double precision[], integer, double precision) */
Datum
keanon_optimal_partitions_float8(PG_FUNCTION_ARGS)
{
	optimal_partitions(fcinfo, KE_KIND_FLOAT);
	return (Datum) 0;
}

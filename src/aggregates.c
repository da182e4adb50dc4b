/*
 * aggregates.c
 *		Bound aggregates over the published view: the tightest interval that
 *		holds the true SUM, MIN, MAX, COUNT or AVG of the sensitive column over
 *		the rows a query selects.
 *
 * The transition state counts the selected rows (hits) per partition; it
 * never looks at published values, which are a random permutation.  The
 * final function reads the summary of every partition hit, once, in the
 * query's own snapshot, and combines per-partition bounds.  A partition
 * with n rows, h of them hit, may have handed those h rows any h of its
 * values, and each of the bounds below is attained by some such choice:
 *
 *	SUM		[sum of the h smallest, sum of the h largest]
 *	MIN		[partition minimum, h-th largest]
 *	MAX		[h-th smallest, partition maximum]
 *	COUNT of values in [L, U], g of the n being there:
 *			[max(0, h - (n - g)), min(h, g)]
 *
 * Across partitions the hits are independent, so SUM and COUNT bounds add,
 * MIN takes the minimum of each end, MAX the maximum, and AVG divides the
 * SUM bounds by the (exact) number of rows selected.
 *
 * Sums are exact for integer and numeric columns whatever their size and
 * the number of rows: they add in 128-bit integers while those hold the
 * running total, and in numeric past that (WideSum).  Real and double
 * precision columns sum in double arithmetic.
 *
 * COUNT's [L, U] must be the same for every row of one aggregate (the
 * state keeps one pair, and per-row pairs would turn each partition's
 * bounds into a matching problem); GROUP BY the bounds to count against
 * several.  An end beyond every value the column can hold is clamped
 * (it is just a wide end), an infinite one is unbounded or empty, NaN is
 * refused.  For integer and numeric columns the ends are rounded inward to
 * the column's own steps (up for L, down for U), so the comparison stays
 * exact; for real and double precision columns they are read as doubles.
 *
 * Partition ids are the watch's number times 10^12 plus a counter, which is
 * how the final function finds the summaries; it reads them as the
 * watched table's owner after checking the caller may read the view.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rangetypes.h"
#include "utils/snapmgr.h"
#include "utils/typcache.h"

#include "keanon_gen.h"
#include "keanon_watch.h"
#include "pg_compat.h"

PG_FUNCTION_INFO_V1(keanon_hits_trans);
PG_FUNCTION_INFO_V1(keanon_hits_range_trans);
PG_FUNCTION_INFO_V1(keanon_hits_certain_trans);
PG_FUNCTION_INFO_V1(keanon_hits_certain_range_trans);
PG_FUNCTION_INFO_V1(keanon_hits_combine);
PG_FUNCTION_INFO_V1(keanon_hits_serialize);
PG_FUNCTION_INFO_V1(keanon_hits_deserialize);
PG_FUNCTION_INFO_V1(keanon_sum_final);
PG_FUNCTION_INFO_V1(keanon_min_final);
PG_FUNCTION_INFO_V1(keanon_max_final);
PG_FUNCTION_INFO_V1(keanon_avg_final);
PG_FUNCTION_INFO_V1(keanon_count_final);

#define PID_WATCH_BASE INT64CONST(1000000000000)

typedef struct HitEntry
{
	int64		pid;			/* hash key */
	int64		hits;			/* rows certainly selected */
	int64		maybe;			/* rows perhaps selected */
} HitEntry;

typedef struct HitState
{
	HTAB	   *hits;
	int64		total;
	int64		total_maybe;	/* rows perhaps selected (certain => false) */
	/* rows of one partition tend to come together: count them here first */
	int64		last_pid;
	int64		last_hits;
	bool		has_range;		/* count_bounds: [lower, upper] given */
	bool		lower_null;
	bool		upper_null;
	Datum		lower;			/* numeric */
	Datum		upper;
} HitState;

/*
 * An exact sum of engine numbers: a 128-bit part while the total fits, and
 * a numeric part (in the same units, NULL while unused) for what did not.
 * Float-kind sums use f alone.
 */
typedef struct WideSum
{
	ke_int128	part;
	Numeric		spill;			/* allocated in cxt */
	double		f;
	MemoryContext cxt;			/* the caller's: outlives the SPI connections */
} WideSum;

/* Bounds of one aggregate being combined */
typedef struct Bounds
{
	KeanonValueType vt;
	bool		any;
	WideSum		sum_lo,
				sum_hi;
	KeNum		min_lo,
				min_hi,
				max_lo,
				max_hi;
	int64		cnt_lo,
				cnt_hi;
	bool		certain_any;	/* some partition has a row certainly selected */
	KeNum		min_hi_maybe;	/* MIN's high end and MAX's low end when none */
	KeNum		max_lo_maybe;
} Bounds;

/* A new, empty state in the aggregate's context */
static HitState *
hits_new(MemoryContext cxt)
{
	HitState   *st = MemoryContextAllocZero(cxt, sizeof(HitState));
	HASHCTL		ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(int64);
	ctl.entrysize = sizeof(HitEntry);
	ctl.hcxt = cxt;
	st->hits = hash_create("keanon hits", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	return st;
}

/* Count hits more rows of a partition certainly selected, maybe perhaps */
static void
hits_add2(HitState *st, int64 pid, int64 hits, int64 maybe)
{
	bool		found;
	HitEntry   *e = hash_search(st->hits, &pid, HASH_ENTER, &found);

	if (!found)
		e->hits = e->maybe = 0;
	e->hits += hits;
	e->maybe += maybe;
	st->total += hits;
	st->total_maybe += maybe;
}

/* Count hits more rows of a partition */
static void
hits_add(HitState *st, int64 pid, int64 hits)
{
	hits_add2(st, pid, hits, 0);
}

/* Move the pending run of one partition's rows into the table */
static void
hits_flush(HitState *st)
{
	if (st->last_hits > 0)
	{
		int64		n = st->last_hits;

		st->last_hits = 0;
		hits_add(st, st->last_pid, n);
		st->total -= n;			/* already counted row by row */
	}
}

/* Count one selected row of partition pid */
static inline void
hits_row(HitState *st, int64 pid)
{
	st->total++;
	if (st->last_hits > 0 && st->last_pid == pid)
	{
		st->last_hits++;
		return;
	}
	hits_flush(st);
	st->last_pid = pid;
	st->last_hits = 1;
}

/* The aggregate's memory context, or an error outside an aggregate */
static MemoryContext
agg_context(FunctionCallInfo fcinfo)
{
	MemoryContext cxt;

	if (!AggCheckCallContext(fcinfo, &cxt))
		elog(ERROR, "keanon bound aggregate function called in non-aggregate context");
	return cxt;
}

/* Transition: one selected row of partition keanon_pid */
Datum
keanon_hits_trans(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = agg_context(fcinfo);
	HitState   *st = PG_ARGISNULL(0) ? hits_new(cxt) : (HitState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
		hits_row(st, PG_GETARG_INT64(1));
	PG_RETURN_POINTER(st);
}

/*
 * Transition of the aggregates over generalized quasi-identifiers: a row
 * of partition keanon_pid that the query's predicate certainly selects
 * (certain true) or perhaps selects (false or NULL: its published range
 * overlaps the predicate's without lying inside it)
 */
Datum
keanon_hits_certain_trans(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = agg_context(fcinfo);
	HitState   *st = PG_ARGISNULL(0) ? hits_new(cxt) : (HitState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
	{
		if (!PG_ARGISNULL(2) && PG_GETARG_BOOL(2))
			hits_row(st, PG_GETARG_INT64(1));
		else
			hits_add2(st, PG_GETARG_INT64(1), 0, 1);
	}
	PG_RETURN_POINTER(st);
}

/* Refuse a NaN end of count_bounds' [lower, upper] */
static void
check_range_end(Datum num, const char *which)
{
	if (numeric_is_nan(DatumGetNumeric(num)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("count_bounds cannot count against a NaN %s bound", which),
				 errhint("Pass NULL for an unbounded end.")));
}

/* The text of one end of a range, for messages */
static char *
range_end_text(bool isnull, Datum num)
{
	return isnull ? "NULL" : DatumGetCString(DirectFunctionCall1(numeric_out, num));
}

/* Are two ends of count_bounds' [lower, upper] the same bound? */
static bool
same_range_end(bool anull, Datum a, bool bnull, Datum b)
{
	if (anull || bnull)
		return anull == bnull;
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, a, b)) == 0;
}

/*
 * count_bounds keeps one [lower, upper] per aggregate: refuse bounds that
 * differ from the ones it already holds, rather than let the first row
 * decide.
 */
static void
check_same_range(const HitState *st, bool lower_null, Datum lower,
				 bool upper_null, Datum upper)
{
	if (same_range_end(st->lower_null, st->lower, lower_null, lower) &&
		same_range_end(st->upper_null, st->upper, upper_null, upper))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("count_bounds needs the same lower and upper bounds on every row"),
			 errdetail("Bounds [%s, %s] and [%s, %s] were both given.",
					   range_end_text(st->lower_null, st->lower),
					   range_end_text(st->upper_null, st->upper),
					   range_end_text(lower_null, lower),
					   range_end_text(upper_null, upper)),
			 errhint("To count against several ranges, GROUP BY the bounds.")));
}

/*
 * Transition of count_bounds: also remembers [lower, upper], the
 * arguments from first on (after the certain flag when there is one)
 */
static HitState *
range_trans(FunctionCallInfo fcinfo, int first)
{
	MemoryContext cxt = agg_context(fcinfo);
	HitState   *st = PG_ARGISNULL(0) ? hits_new(cxt) : (HitState *) PG_GETARG_POINTER(0);
	bool		lower_null = PG_ARGISNULL(first);
	bool		upper_null = PG_ARGISNULL(first + 1);
	Datum		lower = lower_null ? (Datum) 0 : PG_GETARG_DATUM(first);
	Datum		upper = upper_null ? (Datum) 0 : PG_GETARG_DATUM(first + 1);

	if (!st->has_range)
	{
		MemoryContext old;

		if (!lower_null)
			check_range_end(lower, "lower");
		if (!upper_null)
			check_range_end(upper, "upper");
		old = MemoryContextSwitchTo(cxt);
		st->has_range = true;
		st->lower_null = lower_null;
		st->upper_null = upper_null;
		if (!lower_null)
			st->lower = datumCopy(lower, false, -1);
		if (!upper_null)
			st->upper = datumCopy(upper, false, -1);
		MemoryContextSwitchTo(old);
	}
	else
		check_same_range(st, lower_null, lower, upper_null, upper);
	return st;
}

/* Transition of count_bounds(keanon_pid, lower, upper) */
Datum
keanon_hits_range_trans(PG_FUNCTION_ARGS)
{
	HitState   *st = range_trans(fcinfo, 2);

	if (!PG_ARGISNULL(1))
		hits_row(st, PG_GETARG_INT64(1));
	PG_RETURN_POINTER(st);
}

/* Transition of count_bounds(keanon_pid, certain, lower, upper) */
Datum
keanon_hits_certain_range_trans(PG_FUNCTION_ARGS)
{
	HitState   *st = range_trans(fcinfo, 3);

	if (!PG_ARGISNULL(1))
	{
		if (!PG_ARGISNULL(2) && PG_GETARG_BOOL(2))
			hits_row(st, PG_GETARG_INT64(1));
		else
			hits_add2(st, PG_GETARG_INT64(1), 0, 1);
	}
	PG_RETURN_POINTER(st);
}

/* Combine two partial states (parallel aggregation) */
Datum
keanon_hits_combine(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = agg_context(fcinfo);
	HitState   *a = PG_ARGISNULL(0) ? NULL : (HitState *) PG_GETARG_POINTER(0);
	HitState   *b = PG_ARGISNULL(1) ? NULL : (HitState *) PG_GETARG_POINTER(1);
	HASH_SEQ_STATUS seq;
	HitEntry   *e;

	if (b == NULL)
		PG_RETURN_POINTER(a);
	if (a == NULL)
		a = hits_new(cxt);
	hits_flush(a);
	hits_flush(b);
	if (!a->has_range && b->has_range)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		a->has_range = true;
		a->lower_null = b->lower_null;
		a->upper_null = b->upper_null;
		if (!a->lower_null)
			a->lower = datumCopy(b->lower, false, -1);
		if (!a->upper_null)
			a->upper = datumCopy(b->upper, false, -1);
		MemoryContextSwitchTo(old);
	}
	else if (a->has_range && b->has_range)
		check_same_range(a, b->lower_null, b->lower, b->upper_null, b->upper);
	hash_seq_init(&seq, b->hits);
	while ((e = hash_seq_search(&seq)) != NULL)
		hits_add2(a, e->pid, e->hits, e->maybe);
	PG_RETURN_POINTER(a);
}

/* Serialize a state for a parallel worker */
Datum
keanon_hits_serialize(PG_FUNCTION_ARGS)
{
	HitState   *st = (HitState *) PG_GETARG_POINTER(0);
	StringInfoData buf;
	HASH_SEQ_STATUS seq;
	HitEntry   *e;

	hits_flush(st);
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, st->has_range);
	pq_sendbyte(&buf, st->lower_null);
	pq_sendbyte(&buf, st->upper_null);
	if (st->has_range && !st->lower_null)
		pq_sendstring(&buf, DatumGetCString(DirectFunctionCall1(numeric_out, st->lower)));
	if (st->has_range && !st->upper_null)
		pq_sendstring(&buf, DatumGetCString(DirectFunctionCall1(numeric_out, st->upper)));
	pq_sendint64(&buf, hash_get_num_entries(st->hits));
	hash_seq_init(&seq, st->hits);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		pq_sendint64(&buf, e->pid);
		pq_sendint64(&buf, e->hits);
		pq_sendint64(&buf, e->maybe);
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* Deserialize a state from a parallel worker */
Datum
keanon_hits_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = agg_context(fcinfo);
	bytea	   *b = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;
	HitState   *st = hits_new(cxt);
	int64		n;
	MemoryContext old = MemoryContextSwitchTo(cxt);

	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b));
	st->has_range = pq_getmsgbyte(&buf);
	st->lower_null = pq_getmsgbyte(&buf);
	st->upper_null = pq_getmsgbyte(&buf);
	if (st->has_range && !st->lower_null)
		st->lower = DirectFunctionCall3(numeric_in, CStringGetDatum(pq_getmsgstring(&buf)),
										ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	if (st->has_range && !st->upper_null)
		st->upper = DirectFunctionCall3(numeric_in, CStringGetDatum(pq_getmsgstring(&buf)),
										ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	n = pq_getmsgint64(&buf);
	for (int64 i = 0; i < n; i++)
	{
		int64		pid = pq_getmsgint64(&buf);
		int64		hits = pq_getmsgint64(&buf);
		int64		maybe = pq_getmsgint64(&buf);

		hits_add2(st, pid, hits, maybe);
	}
	MemoryContextSwitchTo(old);
	PG_RETURN_POINTER(st);
}

/* The table watched under a watch number, read past row security */
static Oid
watch_by_number(int64 pid)
{
	int32		watch_no = (int32) (pid / PID_WATCH_BASE);
	Oid			nsp = get_namespace_oid("keanon", false);
	Oid			catoid = get_relname_relid("watches", nsp);
	Relation	rel = table_open(catoid, AccessShareLock);
	TableScanDesc scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	Oid			relid = InvalidOid;

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		no = slot_getattr(slot, 2, &isnull);

		if (!isnull && DatumGetInt32(no) == watch_no)
		{
			relid = DatumGetObjectId(slot_getattr(slot, 1, &isnull));
			break;
		}
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return relid;
}

/*
 * A keanon_pid of no watch, or of one the caller may not read: one error
 * for both, so that it tells nothing of other roles' watches
 */
static void
pid_refused(int64 pid)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("keanon_pid %lld belongs to no view you may read", (long long) pid),
			 errhint("Pass the keanon_pid column of a published view you may read.")));
}

/* An exact-kind number as a numeric in the engine's units */
static Numeric
int128_numeric(ke_int128 x)
{
	char		buf[64];

	return DatumGetNumeric(DirectFunctionCall3(numeric_in,
											   CStringGetDatum(ke_num_format(KE_KIND_EXACT,
																			 (KeNum) {.i = x},
																			 buf, sizeof(buf))),
											   ObjectIdGetDatum(InvalidOid),
											   Int32GetDatum(-1)));
}

/* Move x (in the engine's units) into the numeric part of a sum */
static void
wide_spill(WideSum *s, Numeric x)
{
	MemoryContext old = MemoryContextSwitchTo(s->cxt);
	Numeric		was = s->spill;

	s->spill = was == NULL ? DatumGetNumericCopy(NumericGetDatum(x))
		: numeric_add_opt_error(was, x, NULL);
	if (was != NULL)
		pfree(was);
	MemoryContextSwitchTo(old);
}

/* s += times * v, exactly in the exact kind */
static void
wide_add(KeKind kind, WideSum *s, KeNum v, int64 times)
{
	ke_int128	prod,
				sum;

	if (kind == KE_KIND_FLOAT)
	{
		/* in numeric, each double as exactly the value it is: no rounding */
		wide_spill(s, numeric_mul_opt_error(DatumGetNumeric(KeanonFloatToNumeric(v.f)),
											int64_to_numeric(times), NULL));
		return;
	}
	if (__builtin_mul_overflow(v.i, (ke_int128) times, &prod))
	{
		wide_spill(s, numeric_mul_opt_error(int128_numeric(v.i), int64_to_numeric(times), NULL));
		return;
	}
	if (__builtin_add_overflow(s->part, prod, &sum))
	{
		wide_spill(s, int128_numeric(prod));
		return;
	}
	s->part = sum;
}

/* A sum as a numeric of the column's scale */
static Datum
wide_numeric(const KeanonValueType *vt, const WideSum *s)
{
	Numeric		units;

	if (vt->kind == KE_KIND_FLOAT)
		return s->spill == NULL ? KeanonFloatToNumeric(0.0) : NumericGetDatum(s->spill);
	if (s->spill == NULL)
		return KeanonNumToNumeric(vt, (KeNum) {.i = s->part});
	units = numeric_add_opt_error(s->spill, int128_numeric(s->part), NULL);
	if (vt->scale > 0)
	{
		Datum		step = DirectFunctionCall3(numeric_in,
											   CStringGetDatum(psprintf("1e-%d", vt->scale)),
											   ObjectIdGetDatum(InvalidOid),
											   Int32GetDatum(-1));

		units = numeric_mul_opt_error(units, DatumGetNumeric(step), NULL);
	}
	/* an unconstrained column's sum shows the decimals it needs, as its values do */
	if (vt->grows)
	{
		Datum		d = DirectFunctionCall1(numeric_trim_scale, NumericGetDatum(units));

		if (KeanonNumericScale(d) < vt->display_scale)
			d = DirectFunctionCall2(numeric_round, d, Int32GetDatum(vt->display_scale));
		return d;
	}
	return NumericGetDatum(units);
}

/*
 * count_bounds' [lower, upper] in the watch's units: an unbounded end, or
 * a value every stored value is compared with exactly.
 */
typedef struct RangeEnds
{
	bool		lower_null;
	bool		upper_null;
	KeNum		lower;
	KeNum		upper;
} RangeEnds;

/*
 * Add to s the values of ranks from .. from + take - 1 (0-based, in
 * ascending order, or descending when down) that are negative (positive
 * when down), or all of them when all is set
 */
static void
add_ranks(KeKind kind, WideSum *s, const KeNum *vals, const int64 *cnts, int nv, int64 from,
		  int64 take, bool down, bool all)
{
	KeNum		zero;

	if (kind == KE_KIND_FLOAT)
		zero.f = 0;
	else
		zero.i = 0;
	for (int j = 0; j < nv && take > 0; j++)
	{
		int			i = down ? nv - 1 - j : j;
		int64		skip = Min(from, cnts[i]);
		int64		here = Min(take, cnts[i] - skip);

		from -= skip;
		if (here <= 0)
			continue;
		if (all || (down ? ke_num_cmp(kind, vals[i], zero) > 0 : ke_num_cmp(kind, vals[i], zero) < 0))
			wide_add(kind, s, vals[i], here);
		take -= here;
	}
}

/* The value of rank r (1-based) from the bottom, or from the top when down */
static KeNum
value_of_rank(const KeNum *vals, const int64 *cnts, int nv, int64 r, bool down)
{
	for (int j = 0; j < nv; j++)
	{
		int			i = down ? nv - 1 - j : j;

		if (r <= cnts[i])
			return vals[i];
		r -= cnts[i];
	}
	return vals[down ? 0 : nv - 1];
}

/*
 * Fold one partition's bounds into b: of its n rows, h are certainly
 * selected and m more perhaps (any number of them), each selected row
 * showing any of the partition's values
 */
static void
partition_bounds(Bounds *b, const KeNum *vals, const int64 *cnts, int nv, int64 n, int64 h,
				 int64 m, const RangeEnds *range)
{
	KeKind		kind = b->vt.kind;
	KeNum		hmin,
				hmax;
	int64		g = 0;

	/* the h smallest, and those of the next m that lower the sum */
	add_ranks(kind, &b->sum_lo, vals, cnts, nv, 0, h, false, true);
	add_ranks(kind, &b->sum_lo, vals, cnts, nv, h, m, false, false);
	add_ranks(kind, &b->sum_hi, vals, cnts, nv, 0, h, true, true);
	add_ranks(kind, &b->sum_hi, vals, cnts, nv, h, m, true, false);
	/* the h-th smallest and the h-th largest */
	hmin = value_of_rank(vals, cnts, nv, Max(h, 1), false);
	hmax = value_of_rank(vals, cnts, nv, Max(h, 1), true);
	if (range != NULL)
	{
		for (int i = 0; i < nv; i++)
			if ((range->lower_null || ke_num_le(kind, range->lower, vals[i])) &&
				(range->upper_null || ke_num_le(kind, vals[i], range->upper)))
				g += cnts[i];
	}
	else
		g = n;

	if (!b->any)
	{
		b->any = true;
		b->min_lo = vals[0];
		b->max_hi = vals[nv - 1];
		b->min_hi_maybe = vals[nv - 1];
		b->max_lo_maybe = vals[0];
	}
	else
	{
		if (ke_num_cmp(kind, vals[0], b->min_lo) < 0)
			b->min_lo = vals[0];
		if (ke_num_cmp(kind, vals[nv - 1], b->max_hi) > 0)
			b->max_hi = vals[nv - 1];
		/* with no row certainly selected, one of the largest may be all */
		if (ke_num_cmp(kind, vals[nv - 1], b->min_hi_maybe) > 0)
			b->min_hi_maybe = vals[nv - 1];
		if (ke_num_cmp(kind, vals[0], b->max_lo_maybe) < 0)
			b->max_lo_maybe = vals[0];
	}
	if (h > 0)
	{
		if (!b->certain_any || ke_num_cmp(kind, hmax, b->min_hi) < 0)
			b->min_hi = hmax;
		if (!b->certain_any || ke_num_cmp(kind, hmin, b->max_lo) > 0)
			b->max_lo = hmin;
		b->certain_any = true;
	}
	b->cnt_lo += Max(0, h - (n - g));
	b->cnt_hi += Min(h + m, g);
}

/* The total hits as numeric */
static Datum
numeric_of_int64(int64 x)
{
	return DirectFunctionCall1(int8_numeric, Int64GetDatum(x));
}

/*
 * An end of count_bounds' [lower, upper] in the watch's units.  Exact
 * kinds: the whole number of steps of 10^-scale inside the interval
 * (rounded up for lower, down for upper), clamped to just beyond every
 * value the engine holds, so that a huge or infinite end is merely wide.
 * Float kind: the nearest double, as SQL compares a double with a
 * numeric, infinite past the largest double.
 */
static KeNum
range_end(const KeanonValueType *vt, Datum num, bool is_lower)
{
	Numeric		scaled;
	Numeric		limit;
	KeNum		out;

	if (vt->kind == KE_KIND_FLOAT)
		return ke_num_float(KeanonNumericToDouble(DatumGetNumeric(num)));
	scaled = DatumGetNumeric(num);
	if (vt->scale > 0)
		scaled = numeric_mul_opt_error(scaled,
									   DatumGetNumeric(DirectFunctionCall3(numeric_in,
																		   CStringGetDatum(psprintf("1e%d", vt->scale)),
																		   ObjectIdGetDatum(InvalidOid),
																		   Int32GetDatum(-1))),
									   NULL);
	scaled = DatumGetNumeric(DirectFunctionCall1(is_lower ? numeric_ceil : numeric_floor,
												 NumericGetDatum(scaled)));
	limit = int128_numeric(KE_VALUE_LIMIT);
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(scaled),
										  NumericGetDatum(limit))) >= 0)
		out.i = KE_VALUE_LIMIT;
	else if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(scaled),
											   NumericGetDatum(int128_numeric(-KE_VALUE_LIMIT)))) <= 0)
		out.i = -KE_VALUE_LIMIT;
	else
	{
		char	   *digits = DatumGetCString(DirectFunctionCall1(numeric_out,
																 NumericGetDatum(scaled)));
		const char *p = digits;
		bool		neg = *p == '-';
		ke_int128	v = 0;

		if (neg)
			p++;
		for (; *p; p++)
		{
			if (*p < '0' || *p > '9')
				elog(ERROR, "unexpected character in whole number \"%s\"", digits);
			v = v * 10 + (*p - '0');
		}
		out.i = neg ? -v : v;
	}
	return out;
}

static int
int64_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/* With no row certainly selected, the selection may be any one row */
static void
no_certain_row(Bounds *b)
{
	if (!b->certain_any)
	{
		b->min_hi = b->min_hi_maybe;
		b->max_lo = b->max_lo_maybe;
	}
}

/*
 * Compute the bounds over every partition hit: per watch, check the
 * caller may read its view, then read the hit partitions' summaries.
 */
static bool
compute_bounds(HitState *st, Bounds *b)
{
	HASH_SEQ_STATUS seq;
	HitEntry   *e;
	int64		npids;
	int64	   *pids;
	int64		done = 0;

	memset(b, 0, sizeof(Bounds));
	/* sums spilled into numeric are read after each watch's SPI_finish */
	b->sum_lo.cxt = CurrentMemoryContext;
	b->sum_hi.cxt = CurrentMemoryContext;
	if (st == NULL || st->total + st->total_maybe == 0)
		return false;
	hits_flush(st);
	npids = hash_get_num_entries(st->hits);
	pids = palloc(sizeof(int64) * npids);
	hash_seq_init(&seq, st->hits);
	for (int64 i = 0; (e = hash_seq_search(&seq)) != NULL; i++)
		pids[i] = e->pid;
	/* a watch's pids share their high bits: sorting groups them */
	qsort(pids, npids, sizeof(int64), int64_cmp);

	while (done < npids)
	{
		int32		wno = (int32) (pids[done] / PID_WATCH_BASE);
		Oid			relid = watch_by_number(pids[done]);
		KeanonOwnerScope os;
		Watch		w;
		KeanonValueType vt;
		Datum	   *ids;
		int			nids = 0;
		int			matched;
		char	   *sql;
		Oid			types[1] = {INT8ARRAYOID};
		Datum		values[1];
		RangeEnds	range;
		bool		first_watch = !b->any;

		if (!OidIsValid(relid) || !KeanonWatchReadable(relid, &w))
			pid_refused(pids[done]);
		KeanonOwnerBegin(relid, &os);
		KeanonGenRefuseUnpublished(&w);
		KeanonIndexValueType(w.index_oid, &vt);
		if (first_watch)
			b->vt = vt;
		else if (b->vt.typid != vt.typid || b->vt.scale != vt.scale)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a bound aggregate cannot combine watches of different value types")));
		memset(&range, 0, sizeof(range));
		if (st->has_range)
		{
			range.lower_null = st->lower_null;
			range.upper_null = st->upper_null;
			if (!st->lower_null)
				range.lower = range_end(&vt, st->lower, true);
			if (!st->upper_null)
				range.upper = range_end(&vt, st->upper, false);
		}

		ids = palloc(sizeof(Datum) * (npids - done));
		while (done < npids && (int32) (pids[done] / PID_WATCH_BASE) == wno)
			ids[nids++] = Int64GetDatum(pids[done++]);
		values[0] = PointerGetDatum(construct_array(ids, nids, INT8OID, 8, FLOAT8PASSBYVAL,
													TYPALIGN_DOUBLE));
		/* many partitions hit: one sequential read beats an index probe each */
		if (nids > 1000)
			sql = psprintf("SELECT keanon_pid, n, vals, cnts FROM %s WHERE keanon_pid "
						   "BETWEEN $1[1] AND $1[array_upper($1, 1)]", w.parts);
		else
			sql = psprintf("SELECT keanon_pid, n, vals, cnts FROM %s WHERE keanon_pid = ANY ($1)",
						   w.parts);
		if (SPI_execute_with_args(sql, 1, types, values, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "keanon: could not read the partitions of %s", get_rel_name(relid));
		matched = 0;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	t = SPI_tuptable->vals[i];
			TupleDesc	d = SPI_tuptable->tupdesc;
			int64		pid = DatumGetInt64(KeanonSpiColumn(relid, t, d, 1, INT8OID));
			int64		n = DatumGetInt64(KeanonSpiColumn(relid, t, d, 2, INT8OID));
			Datum	   *vd,
					   *cd;
			int			nv;
			KeNum	   *vals;
			int64	   *cnts;
			HitEntry   *he = hash_search(st->hits, &pid, HASH_FIND, NULL);

			if (he == NULL)
				continue;		/* read along, not hit */
			KeanonPartArrays(relid, KeanonSpiColumn(relid, t, d, 3, get_array_type(vt.typid)), false,
							 KeanonSpiColumn(relid, t, d, 4, INT8ARRAYOID), false,
							 vt.typid, false, &vd, &cd, &nv);
			vals = palloc(sizeof(KeNum) * Max(nv, 1));
			cnts = palloc(sizeof(int64) * Max(nv, 1));
			for (int j = 0; j < nv; j++)
			{
				vals[j] = KeanonDatumToNum(&vt, vd[j]);
				cnts[j] = DatumGetInt64(cd[j]);
			}
			if (he->hits + he->maybe > n || nv == 0)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("partition %lld of %s changed while the query read it",
								(long long) pid, get_rel_name(relid))));
			partition_bounds(b, vals, cnts, nv, n, he->hits, he->maybe, st->has_range ? &range : NULL);
			matched++;
		}
		if (matched != nids)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%d partitions of %s that the query selected no longer exist",
							nids - matched, get_rel_name(relid)),
					 errhint("Read the view and the bounds in one query.")));
		SPI_finish();
		KeanonOwnerEnd(&os);
	}
	no_certain_row(b);
	return true;
}

/* A closed numrange [lo, hi] */
static Datum
num_range(Datum lo, Datum hi)
{
	TypeCacheEntry *tc = lookup_type_cache(NUMRANGEOID, TYPECACHE_RANGE_INFO);
	RangeBound	l,
				u;

	l.val = lo;
	l.infinite = false;
	l.inclusive = true;
	l.lower = true;
	u.val = hi;
	u.infinite = false;
	u.inclusive = true;
	u.lower = false;
	return RangeTypePGetDatum(keanon_make_range(tc, &l, &u, false));
}

Datum
keanon_sum_final(PG_FUNCTION_ARGS)
{
	Bounds		b;

	if (PG_ARGISNULL(0) || !compute_bounds((HitState *) PG_GETARG_POINTER(0), &b))
		PG_RETURN_NULL();
	PG_RETURN_DATUM(num_range(wide_numeric(&b.vt, &b.sum_lo), wide_numeric(&b.vt, &b.sum_hi)));
}

Datum
keanon_min_final(PG_FUNCTION_ARGS)
{
	Bounds		b;

	if (PG_ARGISNULL(0) || !compute_bounds((HitState *) PG_GETARG_POINTER(0), &b))
		PG_RETURN_NULL();
	PG_RETURN_DATUM(num_range(KeanonNumToNumeric(&b.vt, b.min_lo),
							  KeanonNumToNumeric(&b.vt, b.min_hi)));
}

Datum
keanon_max_final(PG_FUNCTION_ARGS)
{
	Bounds		b;

	if (PG_ARGISNULL(0) || !compute_bounds((HitState *) PG_GETARG_POINTER(0), &b))
		PG_RETURN_NULL();
	PG_RETURN_DATUM(num_range(KeanonNumToNumeric(&b.vt, b.max_lo),
							  KeanonNumToNumeric(&b.vt, b.max_hi)));
}

/* decimal places an average's ends keep beyond an exact column's own */
#define AVG_EXTRA_PLACES 4

/* A numeric of the text t */
static Datum
numeric_of_text(const char *t)
{
	return DirectFunctionCall3(numeric_in, CStringGetDatum(t), ObjectIdGetDatum(InvalidOid),
							   Int32GetDatum(-1));
}

/*
 * a / b (b > 0) rounded outward to places decimal places, exactly: down for
 * a low end, up for a high end, so the interval always holds the exact
 * quotient; trailing zeros dropped (an exact 26000 prints as 26000)
 */
static Datum
div_outward(Datum a, Datum b, bool up, int places)
{
	Datum		shifted;
	Datum		q;
	Datum		rest;
	int			sign;

	/* a float column's sum beyond double's range: infinite either way */
	if (numeric_is_inf(DatumGetNumeric(a)) || numeric_is_nan(DatumGetNumeric(a)))
		return DirectFunctionCall2(numeric_div, a, b);
	shifted = DirectFunctionCall2(numeric_mul, a, numeric_of_text(psprintf("1e%d", places)));
	q = DirectFunctionCall2(numeric_div_trunc, shifted, b);
	rest = DirectFunctionCall2(numeric_sub, shifted, DirectFunctionCall2(numeric_mul, q, b));
	sign = DatumGetInt32(DirectFunctionCall2(numeric_cmp, rest, numeric_of_int64(0)));
	/* truncation went toward zero: step away from it where that was inward */
	if (up && sign > 0)
		q = DirectFunctionCall2(numeric_add, q, numeric_of_int64(1));
	else if (!up && sign < 0)
		q = DirectFunctionCall2(numeric_sub, q, numeric_of_int64(1));
	q = DirectFunctionCall2(numeric_mul, q, numeric_of_text(psprintf("1e%d", -places)));
	return DirectFunctionCall1(numeric_trim_scale, q);
}

Datum
keanon_avg_final(PG_FUNCTION_ARGS)
{
	HitState   *st = PG_ARGISNULL(0) ? NULL : (HitState *) PG_GETARG_POINTER(0);
	Bounds		b;
	Datum		total;
	int			places;

	if (!compute_bounds(st, &b))
		PG_RETURN_NULL();
	/* rows perhaps selected: the average lies between the least and greatest value */
	if (st->total_maybe > 0)
		PG_RETURN_DATUM(num_range(KeanonNumToNumeric(&b.vt, b.min_lo),
								  KeanonNumToNumeric(&b.vt, b.max_hi)));
	total = numeric_of_int64(st->total);
	/*
	 * An exact column's places and four more; a float column's quotient
	 * keeps the significant digits numeric division gives it (16 at least)
	 */
	if (b.vt.kind == KE_KIND_FLOAT)
	{
		Numeric		q = DatumGetNumeric(DirectFunctionCall2(numeric_div,
															wide_numeric(&b.vt, &b.sum_lo), total));

		places = numeric_is_inf(q) || numeric_is_nan(q) ? 0 :
			DatumGetInt32(DirectFunctionCall1(numeric_scale, NumericGetDatum(q)));
	}
	else
		places = Min(Max(b.vt.display_scale, 0) + AVG_EXTRA_PLACES, KEANON_MAX_SCALE);
	PG_RETURN_DATUM(num_range(div_outward(wide_numeric(&b.vt, &b.sum_lo), total, false, places),
							  div_outward(wide_numeric(&b.vt, &b.sum_hi), total, true, places)));
}

Datum
keanon_count_final(PG_FUNCTION_ARGS)
{
	HitState   *st = PG_ARGISNULL(0) ? NULL : (HitState *) PG_GETARG_POINTER(0);
	Bounds		b;
	TypeCacheEntry *tc;
	RangeBound	l,
				u;

	if (!compute_bounds(st, &b))
		PG_RETURN_NULL();
	tc = lookup_type_cache(INT8RANGEOID, TYPECACHE_RANGE_INFO);
	l.val = Int64GetDatum(b.cnt_lo);
	l.infinite = false;
	l.inclusive = true;
	l.lower = true;
	u.val = Int64GetDatum(b.cnt_hi);
	u.infinite = false;
	u.inclusive = true;
	u.lower = false;
	PG_RETURN_DATUM(RangeTypePGetDatum(keanon_make_range(tc, &l, &u, false)));
}

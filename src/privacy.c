/*
 * privacy.c
 *		keanon.privacy_report(tab): what the published partitions of a
 *		watched table achieve, in the usual privacy measures.
 *
 * For a partition whose distinct values v_1 < ... < v_d occur c_1 ... c_d
 * times (n = sum of c_i rows):
 *
 *	distinct_values	d, the k achieved
 *	value_range		v_d - v_1, the e achieved
 *	entropy			H = -sum (c_i/n) ln(c_i/n) = ln n - (sum c_i ln c_i) / n
 *	effective_l		exp(H): the partition is entropy l-diverse for every
 *					l <= exp(H)
 *	t_closeness		the earth mover's distance between the partition's
 *					value distribution P and the whole publication's Q under
 *					the ordered distance: over the m distinct values
 *					w_1 < ... < w_m of the publication,
 *					EMD = (1/(m-1)) sum_{i=1..m} |sum_{j<=i} (p_j - q_j)|
 *					(0 when m = 1)
 *
 * and one overall row (pid NULL) with every published row, the least
 * distinct_values, value_range, entropy and effective_l of the partitions
 * and the greatest t_closeness: the k, e, l and t the publication achieves.
 *
 * Only the partitions' summaries are read (the parts table's sorted vals and
 * counts): the multiset of values of each partition is what the view itself
 * shows to its readers, so the report tells them nothing new, and it is
 * readable by whoever may read the view.  It reads the summaries as the
 * watched table's owner after checking the caller may read the view, as
 * keanon.partitions does.
 *
 * Arithmetic.  The earth mover's distance is a rational number: with CP_i
 * and CQ_i the partition's and the publication's cumulative counts up to
 * w_i and N the publication's rows,
 *
 *	EMD = sum_i |CP_i N - CQ_i n| / (n N (m-1))
 *
 * whose numerator is summed exactly in 128-bit integers (each term is at
 * most n N, and m, n, N are at most a table's row count, far below the
 * 2^42 that keeps m n N below 2^127).  A partition's values are consecutive
 * among the publication's (partitions are ranges of the value order, a run
 * split between two partitions being shared by neighbours only), so the
 * terms before and after it come from prefix sums of CQ: O(d + 1) work a
 * partition.  Entropies are computed in numeric with 40 decimal places;
 * entropy, effective_l and t_closeness are reported rounded to 16 decimal
 * places with trailing zeros removed.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"

#include "keanon_gen.h"
#include "keanon_watch.h"

#ifndef HAVE_INT128
#error "keanon needs a 128-bit integer type"
#endif

PG_FUNCTION_INFO_V1(keanon_privacy_report);

#define PRIVACY_WORK_SCALE	40	/* decimal places of entropy arithmetic */
#define PRIVACY_OUT_SCALE	16	/* decimal places reported */
#define PRIVACY_LN_CACHE	1024	/* ln c cached for counts below this */
#define PRIVACY_MAX_ROWS	(INT64CONST(1) << 42)

#define REPORT_COLS 9

/* One published partition, as read from the parts table */
typedef struct PrivPart
{
	Datum		pid;
	int64		n;				/* sum of cnts */
	int			d;				/* distinct values */
	Datum	   *vals;			/* numeric, ascending */
	int64	   *cnts;
	int			g0;				/* index of vals[0] among the publication's */
} PrivPart;

/* Numeric helpers */
static Datum
num_int(int64 x)
{
	return NumericGetDatum(int64_to_numeric(x));
}

static Datum
num_round(Datum x, int scale)
{
	return DirectFunctionCall2(numeric_round, x, Int32GetDatum(scale));
}

/* A non-negative 128-bit integer as a numeric of the given scale */
static Datum
num_uint128(uint128 x, int scale)
{
	char		buf[48];
	char	   *p = buf + sizeof(buf) - 1;

	*p = '\0';
	do
	{
		*--p = (char) ('0' + (int) (x % 10));
		x /= 10;
	} while (x > 0);
	return num_round(DirectFunctionCall3(numeric_in, CStringGetDatum(p),
										 ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)),
					 scale);
}

/* How a value is reported: rounded, trailing zeros dropped */
static Datum
num_report(Datum x)
{
	return DirectFunctionCall1(numeric_trim_scale, num_round(x, PRIVACY_OUT_SCALE));
}

static int
num_cmp(Datum a, Datum b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, a, b));
}

/* ln c at the working scale, for a count c >= 1 */
static Datum
ln_count(int64 c, Datum *cache)
{
	Datum		r;

	if (c < PRIVACY_LN_CACHE && cache[c] != (Datum) 0)
		return cache[c];
	r = DirectFunctionCall1(numeric_ln, num_round(num_int(c), PRIVACY_WORK_SCALE));
	if (c < PRIVACY_LN_CACHE)
		cache[c] = r;
	return r;
}

/*
 * Entropy and effective l of a partition, at the working scale.  When every
 * count is 1, H = ln n and exp(H) = n exactly.
 */
static void
partition_entropy(const PrivPart *p, Datum *cache, Datum *entropy, Datum *effective_l)
{
	Datum		s = (Datum) 0;	/* sum of c ln c over counts above 1 */
	Datum		n = num_round(num_int(p->n), PRIVACY_WORK_SCALE);

	for (int i = 0; i < p->d; i++)
	{
		Datum		t;

		if (p->cnts[i] <= 1)
			continue;
		t = DirectFunctionCall2(numeric_mul, num_int(p->cnts[i]), ln_count(p->cnts[i], cache));
		s = s == (Datum) 0 ? t : DirectFunctionCall2(numeric_add, s, t);
	}
	if (s == (Datum) 0)
	{
		*entropy = ln_count(p->n, cache);
		*effective_l = n;
		return;
	}
	*entropy = DirectFunctionCall2(numeric_sub, ln_count(p->n, cache),
								   DirectFunctionCall2(numeric_div, s, n));
	*effective_l = DirectFunctionCall1(numeric_exp, *entropy);
}

/*
 * The earth mover's distance of a partition from the publication, given the
 * publication's cumulative counts cq[0..m-1], their prefix sums
 * scq[i] = cq[0] + ... + cq[i-1] (scq[0..m]) and its row count total.
 */
static Datum
partition_emd(const PrivPart *p, const int64 *cq, const int128 *scq, int m, int64 total)
{
	int128		n = p->n;
	int128		big_n = total;
	int128		num;
	int128		cp = 0;
	int			after = p->g0 + p->d;

	if (m <= 1)
		return num_int(0);
	/* values below the partition: its cumulative share is 0 */
	num = n * scq[p->g0];
	/* its own values */
	for (int t = 0; t < p->d; t++)
	{
		int128		diff;

		cp += p->cnts[t];
		diff = cp * big_n - (int128) cq[p->g0 + t] * n;
		num += diff < 0 ? -diff : diff;
	}
	/* values above it: its cumulative share is 1 */
	num += n * ((int128) (m - after) * big_n - (scq[m] - scq[after]));
	return DirectFunctionCall2(numeric_div,
							   num_uint128((uint128) num, PRIVACY_WORK_SCALE),
							   num_uint128((uint128) (n * big_n * (m - 1)), 0));
}

/* The publication's distinct values merged in order, with cumulative counts */
typedef struct MergedValues
{
	Datum	   *gvals;
	int64	   *cq;
	int			m;
	int			cap;
	int64		total;			/* rows */
} MergedValues;

/* What the publication achieves as a whole: the overall row */
typedef struct ReportOverall
{
	int64		min_d;
	Datum		min_range;
	Datum		min_h;
	Datum		min_l;
	Datum		max_t;
} ReportOverall;

/* The partitions table's corruption, as the report meets it */
static void
report_corrupted(Oid relid, const char *msg)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("%s", msg),
			 errhint("keanon.check() tells what differs; keanon.republish() rebuilds the publication.")));
}

/* Merge one partition's values into the publication's, in order */
static void
merge_partition(Oid relid, PrivPart *p, Datum *cd, MergedValues *mv)
{
	p->cnts = palloc(sizeof(int64) * p->d);
	p->n = 0;
	for (int j = 0; j < p->d; j++)
	{
		int64		c = DatumGetInt64(cd[j]);
		int			cmp = mv->m == 0 ? 1 : num_cmp(p->vals[j], mv->gvals[mv->m - 1]);

		if (c < 1 || cmp < 0 || (cmp == 0 && j > 0))
			report_corrupted(relid, psprintf("the partitions of %s are not ordered distinct values with positive counts",
											 get_rel_name(relid)));
		p->cnts[j] = c;
		p->n += c;
		if (cmp == 0)
			mv->cq[mv->m - 1] += c; /* the rest of a run the previous partition ends */
		else
		{
			if (mv->m == mv->cap)
			{
				if (mv->cap > INT_MAX / 2)
					ereport(ERROR,
							(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
							 errmsg("the publication of %s has too many distinct values for a privacy report",
									get_rel_name(relid))));
				mv->cap *= 2;
				mv->gvals = repalloc_huge(mv->gvals, sizeof(Datum) * mv->cap);
				mv->cq = repalloc_huge(mv->cq, sizeof(int64) * mv->cap);
			}
			mv->gvals[mv->m] = p->vals[j];
			mv->cq[mv->m] = (mv->m == 0 ? 0 : mv->cq[mv->m - 1]) + c;
			mv->m++;
		}
		if (j == 0)
			p->g0 = mv->m - 1;
	}
	mv->total += p->n;
	if (mv->total > PRIVACY_MAX_ROWS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the publication of %s is too large for a privacy report", get_rel_name(relid))));
}

/* The published partitions, in order, and the publication's values merged */
static PrivPart *
read_report_parts(Oid relid, const Watch *w, int *nparts, MergedValues *mv)
{
	char	   *sql = psprintf("SELECT keanon_pid, vals::pg_catalog.numeric[], cnts FROM %s "
							   "ORDER BY lo, hi, hi_split", w->parts);
	PrivPart   *parts;

	if (SPI_execute(sql, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read the partitions of %s", get_rel_name(relid));
	*nparts = (int) SPI_processed;
	parts = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(PrivPart) * Max(*nparts, 1));
	mv->cap = 64;
	mv->gvals = palloc(sizeof(Datum) * mv->cap);
	mv->cq = palloc(sizeof(int64) * mv->cap);
	for (int i = 0; i < *nparts; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		PrivPart   *p = &parts[i];
		Datum	   *cd;

		p->pid = KeanonSpiColumn(relid, t, desc, 1, INT8OID);
		KeanonPartArrays(relid, KeanonSpiColumn(relid, t, desc, 2, NUMERICARRAYOID), false,
						 KeanonSpiColumn(relid, t, desc, 3, INT8ARRAYOID), false,
						 NUMERICOID, false, &p->vals, &cd, &p->d);
		if (p->d == 0)
			report_corrupted(relid, psprintf("partition %lld of %s has no values",
											 (long long) DatumGetInt64(p->pid), get_rel_name(relid)));
		merge_partition(relid, p, cd, mv);
	}
	return parts;
}

/* One row per partition, and what the overall row takes from each */
static void
report_partitions(ReturnSetInfo *rsinfo, PrivPart *parts, int nparts, const MergedValues *mv,
				  ReportOverall *all)
{
	int128	   *scq = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int128) * ((Size) mv->m + 1));
	Datum	   *ln_cache = palloc0(sizeof(Datum) * PRIVACY_LN_CACHE);
	Datum		values[REPORT_COLS];
	bool		nulls[REPORT_COLS];

	scq[0] = 0;
	for (int i = 0; i < mv->m; i++)
		scq[i + 1] = scq[i] + mv->cq[i];
	memset(nulls, 0, sizeof(nulls));
	nulls[7] = nulls[8] = true;
	for (int i = 0; i < nparts; i++)
	{
		PrivPart   *p = &parts[i];
		Datum		range = DirectFunctionCall2(numeric_sub, p->vals[p->d - 1], p->vals[0]);
		Datum		h,
					l,
					t;

		partition_entropy(p, ln_cache, &h, &l);
		h = num_report(h);
		l = num_report(l);
		t = num_report(partition_emd(p, mv->cq, scq, mv->m, mv->total));
		if (i == 0 || p->d < all->min_d)
			all->min_d = p->d;
		if (i == 0 || num_cmp(range, all->min_range) < 0)
			all->min_range = range;
		if (i == 0 || num_cmp(h, all->min_h) < 0)
			all->min_h = h;
		if (i == 0 || num_cmp(l, all->min_l) < 0)
			all->min_l = l;
		if (i == 0 || num_cmp(t, all->max_t) > 0)
			all->max_t = t;
		values[0] = p->pid;
		values[1] = Int64GetDatum(p->n);
		values[2] = Int64GetDatum(p->d);
		values[3] = range;
		values[4] = h;
		values[5] = l;
		values[6] = t;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * A generalized watch's smallest published group and total information
 * loss (SPI connected, as the owner); NULL when it does not generalize or
 * publishes no group
 */
static void
report_groups(Oid relid, const Watch *w, Datum *values, bool *nulls)
{
	Oid			types[2] = {OIDOID, INT4OID};
	Datum		args[2] = {ObjectIdGetDatum(relid), Int32GetDatum(w->generalize)};

	nulls[0] = nulls[1] = true;
	if (w->generalize == 0)
		return;
	if (SPI_execute_with_args("SELECT pg_catalog.min(size), CASE WHEN pg_catalog.min(size) OPERATOR(pg_catalog.>=) $2 "
							  "THEN pg_catalog.max(total_il) END FROM keanon.qi_groups($1::pg_catalog.regclass) "
							  "HAVING pg_catalog.min(size) OPERATOR(pg_catalog.>=) $2",
							  2, types, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read the groups of %s", get_rel_name(relid));
	if (SPI_processed == 1)
		values[0] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &nulls[0]);
	if (SPI_processed == 1)
		values[1] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &nulls[1]);
}

/* keanon.privacy_report(tab) */
Datum
keanon_privacy_report(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KeanonOwnerScope os;
	Watch		w;
	PrivPart   *parts;
	int			nparts;
	MergedValues mv;
	ReportOverall all;
	Datum		values[REPORT_COLS];
	bool		nulls[REPORT_COLS];

	InitMaterializedSRF(fcinfo, 0);
	KeanonWatchForReader(relid, &w, "The privacy report of a watched table requires SELECT on its view.");
	KeanonOwnerBegin(relid, &os);
	KeanonGenRefuseUnpublished(&w);
	memset(&mv, 0, sizeof(mv));
	memset(&all, 0, sizeof(all));
	parts = read_report_parts(relid, &w, &nparts, &mv);
	report_partitions(rsinfo, parts, nparts, &mv, &all);

	/* the overall row: what the publication as a whole achieves */
	memset(nulls, nparts == 0, sizeof(nulls));
	nulls[0] = true;
	nulls[1] = false;
	values[0] = (Datum) 0;
	values[1] = Int64GetDatum(mv.total);
	values[2] = Int64GetDatum(all.min_d);
	values[3] = all.min_range;
	values[4] = all.min_h;
	values[5] = all.min_l;
	values[6] = all.max_t;
	report_groups(relid, &w, &values[7], &nulls[7]);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);

	SPI_finish();
	KeanonOwnerEnd(&os);
	return (Datum) 0;
}

/*
 * watch.c
 *		Entry points of watched tables: the statement trigger, republish,
 *		the published partitions and the consistency check.
 *
 * Maintenance runs as the watched table's owner, as foreign-key triggers
 * run as the referenced table's owner: the roles that change the table need
 * no privilege on keanon's internal tables, and never see them.
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "replication/logicalworker.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/queryenvironment.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "keanon_gen.h"
#include "keanon_watch.h"
#include "pg_compat.h"

PG_FUNCTION_INFO_V1(keanon_maintain);
PG_FUNCTION_INFO_V1(keanon_lock_watch);
PG_FUNCTION_INFO_V1(keanon_republish);
PG_FUNCTION_INFO_V1(keanon_fill);
PG_FUNCTION_INFO_V1(keanon_release);
PG_FUNCTION_INFO_V1(keanon_partitions);
PG_FUNCTION_INFO_V1(keanon_check);
PG_FUNCTION_INFO_V1(keanon_check_layout);
PG_FUNCTION_INFO_V1(keanon_apply_row);
PG_FUNCTION_INFO_V1(keanon_regeneralize);
PG_FUNCTION_INFO_V1(keanon_optimize);

/*
 * The trigger data of a call of one of keanon's statement triggers, after
 * checking it was fired as watch() creates it: BEFORE or AFTER, FOR EACH
 * STATEMENT.
 */
static TriggerData *
statement_trigger_data(FunctionCallInfo fcinfo, const char *name, bool before)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s must be called as a trigger", name)));
	if ((before ? !TRIGGER_FIRED_BEFORE(trigdata->tg_event) : !TRIGGER_FIRED_AFTER(trigdata->tg_event)) ||
		!TRIGGER_FIRED_FOR_STATEMENT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s must be fired %s, FOR EACH STATEMENT", name,
						before ? "BEFORE" : "AFTER")));
	return trigdata;
}

/* The statement trigger of watched tables */
Datum
keanon_maintain(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = statement_trigger_data(fcinfo, "keanon.maintain()", false);
	KeanonOwnerScope os;

	if (!TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event) &&
		trigdata->tg_newtable == NULL && trigdata->tg_oldtable == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("keanon.maintain() needs the statement's transition tables"),
				 errhint("Create watches with keanon.watch().")));

	KeanonOwnerBegin(RelationGetRelid(trigdata->tg_relation), &os);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	KeanonMaintain(trigdata);
	SPI_finish();
	KeanonOwnerEnd(&os);
	return PointerGetDatum(NULL);
}

/* Register a tuplestore of one row (of descriptor desc) under name */
static Tuplestorestate *
one_row_store(const char *name, TupleDesc desc, TupleTableSlot *slot)
{
	EphemeralNamedRelation enr = palloc0(sizeof(EphemeralNamedRelationData));
	Tuplestorestate *ts = tuplestore_begin_heap(false, false, work_mem);

	tuplestore_puttupleslot(ts, slot);
	enr->md.name = pstrdup(name);
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = desc;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = 1;
	enr->reldata = ts;
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "keanon: could not register %s", name);
	return ts;
}

/*
 * The row trigger of live and release watches for logical replication:
 * the apply worker fires row triggers only, never statement ones, so each
 * row it applies is maintained here as a statement of one row would be
 * (the writer's lock taken as keanon_lock takes it).  The trigger is
 * enabled for replica sessions alone, so ordinary writes skip it; in a
 * session that sets session_replication_role = replica itself the
 * statement triggers (enabled always) do the work and this returns at
 * once.
 */
Datum
keanon_apply_row(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	TriggerEvent ev;
	Oid			relid;
	TupleDesc	desc;
	Tuplestorestate *oldstore = NULL;
	Tuplestorestate *newstore = NULL;
	KeanonOwnerScope os;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(td->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(td->tg_event) || TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("keanon.apply_row() must be fired AFTER INSERT, UPDATE or DELETE, FOR EACH ROW")));
	if (!IsLogicalWorker())
		return PointerGetDatum(NULL);
	ev = td->tg_event;
	relid = RelationGetRelid(td->tg_relation);
	desc = RelationGetDescr(td->tg_relation);
	KeanonOwnerBegin(relid, &os);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	KeanonLockWatch(relid);
	if (TRIGGER_FIRED_BY_INSERT(ev))
		newstore = one_row_store("keanon_new", desc, td->tg_trigslot);
	else
		oldstore = one_row_store("keanon_old", desc, td->tg_trigslot);
	if (TRIGGER_FIRED_BY_UPDATE(ev))
		newstore = one_row_store("keanon_new", desc, td->tg_newslot);
	KeanonMaintainDelta(relid, TRIGGER_FIRED_BY_INSERT(ev), TRIGGER_FIRED_BY_UPDATE(ev),
						TRIGGER_FIRED_BY_DELETE(ev), "keanon_old", "keanon_new",
						oldstore, newstore, desc);
	/* the stores go with SPI's memory */
	SPI_finish();
	KeanonOwnerEnd(&os);
	return PointerGetDatum(NULL);
}

/* The BEFORE statement trigger of watched tables: take the writer's lock */
Datum
keanon_lock_watch(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = statement_trigger_data(fcinfo, "keanon.lock_watch()", true);
	KeanonOwnerScope os;

	KeanonOwnerBegin(RelationGetRelid(trigdata->tg_relation), &os);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	KeanonLockWatch(RelationGetRelid(trigdata->tg_relation));
	SPI_finish();
	KeanonOwnerEnd(&os);
	return PointerGetDatum(NULL);
}

/* A deferred watch republishes what its pending changes make of it */
static int64
flush_and_republish(Oid relid)
{
	KeanonFlush(relid);
	return KeanonRepublish(relid);
}

/* keanon.republish(tab): reassign and permute every row */
Datum
keanon_republish(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(KeanonOwnerAction(PG_GETARG_OID(0), flush_and_republish));
}

/* A deferred watch's pending changes first, then the static clustering */
static int64
flush_and_regeneralize(Oid relid)
{
	KeanonFlush(relid);
	return KeanonRegeneralize(relid);
}

/* keanon.regeneralize(tab): cluster every row anew; returns the groups */
Datum
keanon_regeneralize(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(KeanonOwnerAction(PG_GETARG_OID(0), flush_and_regeneralize));
}

/* A deferred watch's pending changes first, then IL_Optimization */
static int64
flush_and_optimize(Oid relid)
{
	KeanonFlush(relid);
	return KeanonOptimizeGroups(relid);
}

/* keanon.optimize(tab): break totally covered groups; returns how many */
Datum
keanon_optimize(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(KeanonOwnerAction(PG_GETARG_OID(0), flush_and_optimize));
}

/* keanon.fill(tab): write a new watch's rows; returns how many */
Datum
keanon_fill(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(KeanonOwnerAction(PG_GETARG_OID(0), KeanonFill));
}

/* keanon.release(tab): publish a safe release; returns its number */
Datum
keanon_release(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(KeanonOwnerAction(PG_GETARG_OID(0), KeanonRelease));
}

/*
 * keanon.partitions(tab): the published partitions.  Anyone who may read
 * the watch's view may read them.
 */
Datum
keanon_partitions(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KeanonOwnerScope os;
	Watch		w;
	char	   *sql;

	InitMaterializedSRF(fcinfo, 0);
	KeanonWatchForReader(relid, &w, "Reading the partitions of a watched table requires SELECT on its view.");
	KeanonOwnerBegin(relid, &os);
	KeanonGenRefuseUnpublished(&w);
	sql = psprintf("SELECT keanon_pid, n, pg_catalog.cardinality(vals)::pg_catalog.int8, lo::pg_catalog.numeric, "
				   "hi::pg_catalog.numeric, lo AS raw_lo, hi AS raw_hi FROM %s p ORDER BY p.lo, p.hi, p.hi_split", w.parts);
	if (SPI_execute(sql, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read the partitions of %s", get_rel_name(relid));
	/* the owner's code run above (a policy on the groups) may have changed the table */
	if (SPI_gettypeid(SPI_tuptable->tupdesc, 1) != INT8OID ||
		SPI_gettypeid(SPI_tuptable->tupdesc, 2) != INT8OID ||
		SPI_gettypeid(SPI_tuptable->tupdesc, 7) != SPI_gettypeid(SPI_tuptable->tupdesc, 6))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the layout of %s does not match the watch of %s",
						get_rel_name(w.parts_oid), get_rel_name(relid))));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		values[7];
		bool		nulls[7];
		Oid			typid = SPI_gettypeid(SPI_tuptable->tupdesc, 6);

		heap_deform_tuple(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, values, nulls);
		/* a double's bounds exactly as the doubles they are, not cut to 15 digits */
		if (typid == FLOAT8OID)
		{
			values[3] = KeanonFloatToNumeric(DatumGetFloat8(values[5]));
			values[4] = KeanonFloatToNumeric(DatumGetFloat8(values[6]));
		}
		else if (typid == FLOAT4OID)
		{
			values[3] = KeanonFloatToNumeric(DatumGetFloat4(values[5]));
			values[4] = KeanonFloatToNumeric(DatumGetFloat4(values[6]));
		}
		values[5] = DirectFunctionCall2(numeric_sub, values[4], values[3]);
		nulls[5] = false;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	KeanonOwnerEnd(&os);
	return (Datum) 0;
}

/* Raise the error of a failed check */
static void
check_failed(Oid relid, const char *what, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("keanon watch of %s is inconsistent: %s", get_rel_name(relid), what),
			 detail ? errdetail_internal("%s", detail) : 0,
			 errhint("keanon.republish() rebuilds the publication from the table.")));
}

/* A count from a one-row, one-column query */
static int64
count_query(const char *sql)
{
	bool		isnull;
	Datum		d;

	if (SPI_execute(sql, false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "keanon: check query failed: %s", sql);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? 0 : DatumGetInt64(d);
}

/*
 * Each published partition shows a permutation of its rows' true values,
 * holds n rows (in slots 0 .. n - 1 when with_slots) and has the summary of
 * exactly those values.
 */
static void
check_permutations(Oid relid, const Watch *w, const char *table, bool with_slots)
{
	char	   *sql;
	int64		bad;

	/*
	 * each table read once, grouped by partition (a lateral query per
	 * partition read a release table, which has no index on keanon_pid,
	 * once per partition: minutes at 10^5 rows)
	 */
	sql = psprintf("WITH x AS (SELECT r.keanon_pid, count(*) AS c, array_agg(r.%s ORDER BY r.%s) AS t, "
				   "array_agg(r.keanon_pub ORDER BY r.keanon_pub) AS u%s "
				   "FROM %s r GROUP BY r.keanon_pid), "
				   "y AS (SELECT g.keanon_pid, array_agg(g.v ORDER BY g.v) AS vv, array_agg(g.c ORDER BY g.v) AS cc "
				   "FROM (SELECT r.keanon_pid, r.%s AS v, count(*) AS c FROM %s r GROUP BY 1, 2) g "
				   "GROUP BY g.keanon_pid) "
				   "SELECT count(*) FROM %s p LEFT JOIN x ON x.keanon_pid OPERATOR(pg_catalog.=) p.keanon_pid "
				   "LEFT JOIN y ON y.keanon_pid OPERATOR(pg_catalog.=) p.keanon_pid "
				   "WHERE coalesce(x.c, 0) OPERATOR(pg_catalog.<>) p.n OR x.t IS DISTINCT FROM x.u %s"
				   "OR y.vv IS DISTINCT FROM p.vals OR y.cc IS DISTINCT FROM p.cnts",
				   w->s, w->s,
				   with_slots ? ", array_agg(r.keanon_slot ORDER BY r.keanon_slot) AS sl" : "",
				   table, w->s, table, w->parts,
				   with_slots ? "OR x.sl IS DISTINCT FROM (SELECT array_agg(i::integer ORDER BY i) "
				   "FROM generate_series(0, p.n - 1) i) " : "");
	bad = count_query(sql);
	if (bad != 0)
		check_failed(relid, "a partition does not publish a permutation of its true values",
					 psprintf("%lld partitions differ in their rows, values, slots or summaries.",
							  (long long) bad));
}

/*
 * The partition ranges of the release before the last, from its row of
 * keanon.releases (lo and hi text[], as long as each other); their number
 */
static size_t
previous_ranges(Oid relid, const KeanonValueType *vt, HeapTuple tup, TupleDesc desc,
				KeNum **olo, KeNum **ohi)
{
	Datum	   *lo,
			   *hi;
	bool	   *ln,
			   *hn;
	int			nl,
				nh;
	bool		isnull;

	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, desc, 1, &isnull)),
					  TEXTOID, -1, false, TYPALIGN_INT, &lo, &ln, &nl);
	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, desc, 2, &isnull)),
					  TEXTOID, -1, false, TYPALIGN_INT, &hi, &hn, &nh);
	if (nl != nh)
		check_failed(relid, "the releases recorded are inconsistent",
					 psprintf("A release lists %d low and %d high bounds.", nl, nh));
	*olo = palloc(sizeof(KeNum) * Max(nl, 1));
	*ohi = palloc(sizeof(KeNum) * Max(nl, 1));
	for (int i = 0; i < nl; i++)
	{
		if (ln[i] || hn[i])
			check_failed(relid, "the releases recorded are inconsistent", "A release lists a NULL bound.");
		(*olo)[i] = KeanonNumFromText(vt, TextDatumGetCString(lo[i]));
		(*ohi)[i] = KeanonNumFromText(vt, TextDatumGetCString(hi[i]));
	}
	return (size_t) nl;
}

/* The release holds no NULL: keanon writes none there, the owner may have */
static void
check_release_nulls(Oid relid, const Watch *w)
{
	if (count_query(psprintf("SELECT pg_catalog.count(*) FROM %s WHERE %s IS NULL OR keanon_pub IS NULL "
							 "OR keanon_pid IS NULL OR keanon_since IS NULL", w->release, w->s)) > 0)
		check_failed(relid, "the last release holds NULLs where keanon writes none", NULL);
}

/* Order ranges by low bound, then high bound */
static int
bound_pair_cmp(const void *a, const void *b, void *arg)
{
	const KeNum *ra = a;
	const KeNum *rb = b;
	KeKind		kind = *(const KeKind *) arg;
	int			c = ke_num_cmp(kind, ra[0], rb[0]);

	return c != 0 ? c : ke_num_cmp(kind, ra[1], rb[1]);
}

/*
 * Sort the previous release's ranges by low bound; true when their high
 * bounds then never fall (no range lies inside another, as in any
 * partitioning of sorted values), so that the ranges a partition meets
 * are consecutive and found by a binary search: the check compared every
 * partition with every previous one, minutes at 10^6 rows.  A release
 * table an owner has rewritten may not be so: then every pair is compared.
 */
static bool
sort_ranges(KeKind kind, KeNum *olo, KeNum *ohi, size_t n)
{
	KeNum	   *pairs = palloc(sizeof(KeNum) * 2 * Max(n, 1));

	for (size_t i = 0; i < n; i++)
	{
		pairs[2 * i] = olo[i];
		pairs[2 * i + 1] = ohi[i];
	}
	qsort_arg(pairs, n, sizeof(KeNum) * 2, bound_pair_cmp, &kind);
	for (size_t i = 0; i < n; i++)
	{
		olo[i] = pairs[2 * i];
		ohi[i] = pairs[2 * i + 1];
	}
	pfree(pairs);
	for (size_t i = 1; i < n; i++)
		if (ke_num_cmp(kind, ohi[i], ohi[i - 1]) < 0)
			return false;
	return true;
}

/* The first of n rising high bounds above x (n if none) */
static size_t
first_above(KeKind kind, const KeNum *ohi, size_t n, KeNum x)
{
	size_t		a = 0,
				b = n;

	while (a < b)
	{
		size_t		m = a + (b - a) / 2;

		if (ke_num_cmp(kind, ohi[m], x) > 0)
			b = m;
		else
			a = m + 1;
	}
	return a;
}

/*
 * A release after the first reveals nothing by subtraction from the one
 * before it (see release.c): every partition is (k,e)-anonymous; it covers
 * each previous partition it overlaps (nold ranges olo/ohi); the rows it
 * added in this release (keanon_since) are none or (k,e)-anonymous; and
 * it keeps every row of the previous release, none gone.
 */
static void
check_later_release(Oid relid, const Watch *w, KeanonIndex *ki, int64 release_no,
					int64 prev_rows, KeNum *olo, KeNum *ohi, size_t nold)
{
	const KeanonValueType *vt = &ki->vt;
	char	   *sql;
	int64		kept = 0;
	bool		sorted = sort_ranges(vt->kind, olo, ohi, nold);

	sql = psprintf("SELECT pg_catalog.min(%s), pg_catalog.max(%s), pg_catalog.count(DISTINCT %s), "
				   "pg_catalog.count(*) FILTER (WHERE keanon_since = %lld), "
				   "pg_catalog.count(DISTINCT %s) FILTER (WHERE keanon_since = %lld), "
				   "pg_catalog.min(%s) FILTER (WHERE keanon_since = %lld), "
				   "pg_catalog.max(%s) FILTER (WHERE keanon_since = %lld), "
				   "pg_catalog.count(*) FILTER (WHERE keanon_since < %lld) "
				   "FROM %s GROUP BY keanon_pid",
				   w->s, w->s, w->s, (long long) release_no, w->s, (long long) release_no,
				   w->s, (long long) release_no, w->s, (long long) release_no,
				   (long long) release_no, w->release);
	if (SPI_execute(sql, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: check query failed: %s", sql);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		TupleDesc	d = SPI_tuptable->tupdesc;
		KeNum		lo = KeanonDatumToNum(vt, KeanonSpiColumn(relid, t, d, 1, vt->typid));
		KeNum		hi = KeanonDatumToNum(vt, KeanonSpiColumn(relid, t, d, 2, vt->typid));
		int64		added = DatumGetInt64(KeanonSpiColumn(relid, t, d, 4, INT8OID));

		if (DatumGetInt64(KeanonSpiColumn(relid, t, d, 3, INT8OID)) < ki->k ||
			!ke_num_range_ok(vt->kind, lo, hi, ki->e))
			check_failed(relid, "a released partition violates k or e", NULL);
		if (added > 0 &&
			(DatumGetInt64(KeanonSpiColumn(relid, t, d, 5, INT8OID)) < ki->k ||
			 !ke_num_range_ok(vt->kind, KeanonDatumToNum(vt, KeanonSpiColumn(relid, t, d, 6, vt->typid)),
							  KeanonDatumToNum(vt, KeanonSpiColumn(relid, t, d, 7, vt->typid)), ki->e)))
			check_failed(relid, "a released partition adds a set of rows that is not (k,e)-anonymous",
						 psprintf("It adds %lld rows to the previous release.", (long long) added));
		for (size_t j = sorted ? first_above(vt->kind, ohi, nold, lo) : 0; j < nold; j++)
		{
			/* sorted, none of the ranges from here on reaches below hi */
			if (sorted && ke_num_cmp(vt->kind, olo[j], hi) >= 0)
				break;
			if (ke_num_cmp(vt->kind, lo, ohi[j]) < 0 && ke_num_cmp(vt->kind, hi, olo[j]) > 0 &&
				(ke_num_cmp(vt->kind, lo, olo[j]) > 0 || ke_num_cmp(vt->kind, hi, ohi[j]) < 0))
				check_failed(relid, "a released partition takes part of a previous partition", NULL);
		}
		kept += DatumGetInt64(KeanonSpiColumn(relid, t, d, 8, INT8OID));
	}
	if (kept != prev_rows)
		check_failed(relid, "the last release does not keep every row of the one before",
					 psprintf("It keeps %lld of %lld rows.", (long long) kept, (long long) prev_rows));
	check_permutations(relid, w, w->release, false);
}

/*
 * Release mode: the first release is the optimum of the rows it was made
 * from (its own table); a later one reveals nothing by subtraction from
 * the one before (check_later_release).  Each publishes a permutation
 * within each partition.
 */
static void
check_release(Oid relid, const Watch *w, KeanonIndex *ki)
{
	const KeanonValueType *vt = &ki->vt;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	KeNum	   *vals,
			   *olo = NULL,
			   *ohi = NULL,
			   *E,
			   *best,
			   *argmin;
	int64	   *counts,
			   *frontier;
	int		   *argmin_last,
			   *end;
	bool	   *cut_after,
			   *cut_in;
	size_t		m,
				nold = 0;
	KeanonPartList pl = {0};
	char	   *sql;
	bool		isnull;

	check_release_nulls(relid, w);
	if (SPI_execute_with_args("SELECT lo, hi, release_no, rows_published FROM keanon.releases "
							  "WHERE relid = $1::oid::regclass "
							  "ORDER BY release_no DESC LIMIT 2", 1, types, values, NULL, false, 0)
		!= SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read the releases of %s", get_rel_name(relid));
	if (SPI_processed == 0)
	{
		if (count_query(psprintf("SELECT count(*) FROM %s", w->release)) != 0 ||
			count_query(psprintf("SELECT count(*) FROM %s", w->parts)) != 0)
			check_failed(relid, "rows are published before the first release", NULL);
		return;
	}
	if (SPI_processed == 2)
	{
		nold = previous_ranges(relid, vt, SPI_tuptable->vals[1], SPI_tuptable->tupdesc, &olo, &ohi);
		check_later_release(relid, w, ki,
							DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull)),
							DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[1], SPI_tuptable->tupdesc, 4, &isnull)),
							olo, ohi, nold);
		return;
	}

	/* the release's own values, as runs */
	sql = psprintf("SELECT %s, count(*) FROM %s GROUP BY 1 ORDER BY 1", w->s, w->release);
	if (SPI_execute(sql, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: check query failed: %s", sql);
	m = (size_t) SPI_processed;
	if (m == 0)
		check_failed(relid, "the last release publishes no rows", NULL);
	vals = palloc(sizeof(KeNum) * m);
	counts = palloc(sizeof(int64) * m);
	for (size_t r = 0; r < m; r++)
	{
		vals[r] = KeanonDatumToNum(vt, KeanonSpiColumn(relid, SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1,
													   vt->typid));
		counts[r] = DatumGetInt64(KeanonSpiColumn(relid, SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2,
												  INT8OID));
	}
	cut_after = palloc(sizeof(bool) * m);
	cut_in = palloc(sizeof(bool) * m);
	E = palloc(sizeof(KeNum) * m);
	best = palloc(sizeof(KeNum) * m);
	argmin = palloc(sizeof(KeNum) * m);
	frontier = palloc(sizeof(int64) * m);
	argmin_last = palloc(sizeof(int) * m);
	end = palloc(sizeof(int) * m);
	ke_release_cuts(vt->kind, vals, m, olo, ohi, nold, cut_after, cut_in);
	ke_constrained_dp(vt->kind, ki->k, ki->e, vals, counts, m,
					  cut_after, cut_in, E, best, argmin, argmin_last, (int64_t *) frontier, end);
	if (end[m - 1] == KE_END_NONE)
		check_failed(relid, "the last release is not a valid safe partitioning", NULL);
	KeanonPartitionsFromFlags(vt->kind, vals, counts, m, end, &pl);

	sql = psprintf("SELECT lo, lo_last_only, hi, hi_split, n, cardinality(vals) FROM %s "
				   "ORDER BY hi, hi_split", w->parts);
	if (SPI_execute(sql, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: check query failed: %s", sql);
	if ((int) SPI_processed != pl.n)
		check_failed(relid, "the last release differs from the safe optimum",
					 psprintf("%lld partitions are published, the safe optimum has %d.",
							  (long long) SPI_processed, pl.n));
	for (int i = 0; i < pl.n; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		TupleDesc	d = SPI_tuptable->tupdesc;
		KePartition *p = &pl.parts[i];

		if (!ke_num_eq(vt->kind, p->lo, KeanonDatumToNum(vt, KeanonSpiColumn(relid, t, d, 1, vt->typid))) ||
			DatumGetBool(KeanonSpiColumn(relid, t, d, 2, BOOLOID)) != p->lo_last_only ||
			!ke_num_eq(vt->kind, p->hi, KeanonDatumToNum(vt, KeanonSpiColumn(relid, t, d, 3, vt->typid))) ||
			DatumGetBool(KeanonSpiColumn(relid, t, d, 4, BOOLOID)) != p->hi_split ||
			DatumGetInt64(KeanonSpiColumn(relid, t, d, 5, INT8OID)) != p->n)
			check_failed(relid, "the last release differs from the safe optimum",
						 psprintf("Published partition %d differs.", i + 1));
		if (p->ndistinct < ki->k ||
			!ke_num_range_ok(vt->kind, p->lo, p->hi, ki->e))
			check_failed(relid, "a released partition violates k or e", NULL);
	}
	check_permutations(relid, w, w->release, false);
}

/* 2. the rows mirror the table's non-null sensitive values */
static void
check_mirror(Oid relid, const Watch *w)
{
	List	   *all = list_copy(w->qis);
	ListCell   *lc;
	StringInfoData a_cols,
				b_cols;
	/*
	 * rows changed since the flush (their keys pending, in the same
	 * snapshot as the table) are not published yet
	 */
	char	   *not_pending = w->pending == NULL ? "" :
		psprintf(" AND NOT EXISTS (SELECT 1 FROM %s p WHERE %s)", w->pending,
				 KeanonKeysEqual(w, "p.", "x."));
	char	   *sql;
	int64		bad;

	initStringInfo(&a_cols);
	initStringInfo(&b_cols);
	foreach(lc, all)
	{
		appendStringInfo(&a_cols, "%sa.%s", a_cols.len ? ", " : "", (char *) lfirst(lc));
		appendStringInfo(&b_cols, "%sb.%s", b_cols.len ? ", " : "", (char *) lfirst(lc));
	}
	/*
	 * the quasi-identifiers as stored; the value as a value (an UPDATE to
	 * 1.50 from 1.5, or to -0 from 0, changes no value: its row stays)
	 */
	sql = psprintf("SELECT count(*) FROM (SELECT * FROM %s x WHERE x.%s IS NOT NULL%s) a "
				   "FULL JOIN (SELECT * FROM %s x WHERE true%s) b ON %s "
				   "WHERE NOT (pg_catalog.record_image_eq(ROW(%s), ROW(%s)) AND a.%s IS NOT DISTINCT FROM b.%s)",
				   quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
											  get_rel_name(relid)),
				   w->s, not_pending, w->rows, not_pending, KeanonKeysEqual(w, "a.", "b."),
				   a_cols.data, b_cols.data, w->s, w->s);
	bad = count_query(sql);
	if (bad != 0)
		check_failed(relid, "the published rows do not mirror the table",
					 psprintf("%lld rows differ or are missing.", (long long) bad));
}

/*
 * 3. the published partitions are the engine's, and valid; returns their
 * ids in (value) order
 */
/*
 * An index laid out afresh from its table flags the report's optimum, and
 * its first writer takes the publication's back (KeanonBeginWrite): until
 * then the published partitions must be an optimum of the index's runs,
 * and they are the partitions to check the rows against.
 */
static void
published_optimum(Oid relid, const Watch *w, KeanonIndex *ki, KeanonPartList *pc)
{
	KeBoundary *bounds;
	int64		n = KeanonPublishedBoundaries(w, &ki->vt, &bounds);
	char	   *sql;

	if (!KeanonIndexAdoptBoundaries(ki, bounds, (size_t) n, false))
		check_failed(relid, "the published partitions differ from the optimum",
					 "They are not an optimal partitioning of the rows.");
	sql = psprintf("SELECT lo, lo_last_only, hi, hi_split, n, pg_catalog.cardinality(vals) FROM %s "
				   "ORDER BY hi, hi_split", w->parts);
	if (SPI_execute(sql, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: check query failed: %s", sql);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		TupleDesc	d = SPI_tuptable->tupdesc;
		KePartition p;

		memset(&p, 0, sizeof(p));
		p.lo = KeanonDatumToNum(&ki->vt, KeanonSpiColumn(relid, t, d, 1, ki->vt.typid));
		p.lo_last_only = DatumGetBool(KeanonSpiColumn(relid, t, d, 2, BOOLOID));
		p.hi = KeanonDatumToNum(&ki->vt, KeanonSpiColumn(relid, t, d, 3, ki->vt.typid));
		p.hi_split = DatumGetBool(KeanonSpiColumn(relid, t, d, 4, BOOLOID));
		p.n = DatumGetInt64(KeanonSpiColumn(relid, t, d, 5, INT8OID));
		p.ndistinct = DatumGetInt32(KeanonSpiColumn(relid, t, d, 6, INT4OID));
		p.error = ke_num_sub(ki->vt.kind, p.hi, p.lo);
		KeanonCollectPartition(&p, pc);
	}
	pfree(bounds);
}

static int64 *
check_partitions(Oid relid, const Watch *w, KeanonIndex *ki, KeanonPartList *pc)
{
	const KeanonValueType *vt = &ki->vt;
	char	   *sql;
	int64	   *pids;

	if (ki->flags_built)
		published_optimum(relid, w, ki, pc);
	else if (ki->engine != NULL)
		ke_foreach_partition(ki->engine, KeanonCollectPartition, pc);
	sql = psprintf("SELECT keanon_pid, lo, lo_last_only, hi, hi_split, n FROM %s "
				   "ORDER BY hi, hi_split", w->parts);
	if (SPI_execute(sql, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: check query failed: %s", sql);
	if ((int64) SPI_processed != pc->n)
		check_failed(relid, "the published partitions differ from the optimum",
					 psprintf("%lld partitions are published, the optimum has %d.",
							  (long long) SPI_processed, pc->n));
	pids = palloc(sizeof(int64) * Max(pc->n, 1));
	for (int i = 0; i < pc->n; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		TupleDesc	d = SPI_tuptable->tupdesc;
		KePartition *p = &pc->parts[i];

		pids[i] = DatumGetInt64(KeanonSpiColumn(relid, t, d, 1, INT8OID));
		if (!ke_num_eq(vt->kind, p->lo, KeanonDatumToNum(vt, KeanonSpiColumn(relid, t, d, 2, vt->typid))) ||
			DatumGetBool(KeanonSpiColumn(relid, t, d, 3, BOOLOID)) != p->lo_last_only ||
			!ke_num_eq(vt->kind, p->hi, KeanonDatumToNum(vt, KeanonSpiColumn(relid, t, d, 4, vt->typid))) ||
			DatumGetBool(KeanonSpiColumn(relid, t, d, 5, BOOLOID)) != p->hi_split ||
			DatumGetInt64(KeanonSpiColumn(relid, t, d, 6, INT8OID)) != p->n)
			check_failed(relid, "the published partitions differ from the optimum",
						 psprintf("Published partition %lld differs from optimal partition %d.",
								  (long long) pids[i], i + 1));
		if (p->ndistinct < ki->k ||
			!ke_num_range_ok(vt->kind, p->lo, p->hi, ki->e))
			check_failed(relid, "a published partition violates k or e",
						 psprintf("Partition %lld has %lld distinct values.",
								  (long long) pids[i], (long long) p->ndistinct));
	}
	return pids;
}

/* 5. rows belong to partitions by (value, arrival) order */
static void
check_row_order(Oid relid, const Watch *w, const KeanonPartList *pc, const int64 *pids)
{
	char	   *sql = psprintf("SELECT keanon_pid FROM %s ORDER BY %s, keanon_arrival", w->rows, w->s);
	int64		pos = 0;

	if (SPI_execute(sql, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: check query failed: %s", sql);
	for (int i = 0; i < pc->n; i++)
	{
		for (int64 j = 0; j < pc->parts[i].n; j++, pos++)
		{
			bool		isnull;
			Datum		d;

			if (pos >= (int64) SPI_processed)
				check_failed(relid, "the partitions hold more rows than are published", NULL);
			d = KeanonSpiColumnOrNull(relid, SPI_tuptable->vals[pos], SPI_tuptable->tupdesc, 1, INT8OID,
									  &isnull);

			if (isnull || DatumGetInt64(d) != pids[i])
				check_failed(relid, "a row is published in the wrong partition",
							 psprintf("Row %lld in (value, arrival) order should be in partition %lld.",
									  (long long) pos + 1, (long long) pids[i]));
		}
	}
	for (; pos < (int64) SPI_processed; pos++)
	{
		bool		isnull;

		(void) SPI_getbinval(SPI_tuptable->vals[pos], SPI_tuptable->tupdesc, 1, &isnull);
		if (!isnull)
			check_failed(relid, "a row is published though no valid partitioning exists", NULL);
	}
}

/*
 * keanon.check(tab): the index agrees with a recomputation over the rows,
 * the rows mirror the table, the published partitions are the engine's,
 * every partition is valid, publishes a permutation of its true values and
 * holds the right rows.
 */
Datum
keanon_check(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	KeanonOwnerScope os;
	Watch		w;
	KeanonIndex *ki;
	KeanonPartList pc = {0};
	int64	   *pids;

	/* what it finds is about every row: for those who may read them all */
	if (!KeanonMayReadWhole(relid))
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(relid));
	KeanonOwnerBegin(relid, &os);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	KeanonWatchLoad(relid, &w, false);
	/*
	 * a deferred watch is checked as of its latest flush, made here by the
	 * owner unless nothing may be written (a standby checks what its
	 * primary flushed); a reader's check flushes nothing, so that it cannot
	 * hold the writers' lock of the watch to the end of its transaction
	 */
	if (!RecoveryInProgress() && !XactReadOnly && keanon_owns_relation(relid, os.save_user))
		KeanonFlush(relid);

	/*
	 * 1. the index against a recomputation over the rows.  The index holds
	 * the latest committed state: the tables must be read in a snapshot that
	 * sees it (a fresh one for each query under READ COMMITTED, and under a
	 * transaction snapshot a serialization failure if a writer came since).
	 */
	/* the table before the watch's lock, as TRUNCATE and a flush take them */
	LockRelationOid(relid, AccessShareLock);
	/* as the caller: a reader's check does not repair the index */
	ki = KeanonIndexOpenFor(w.index_oid, false, os.save_user);
	KeanonCheckSnapshot(&w);
	KeanonIndexVerify(ki);

	check_mirror(relid, &w);
	if (w.release_mode)
		check_release(relid, &w, ki);
	else
	{
		pids = check_partitions(relid, &w, ki, &pc);
		/* 4. each partition publishes a permutation of its rows' true values */
		check_permutations(relid, &w, w.rows, true);
		check_row_order(relid, &w, &pc, pids);
	}
	/* 5. the groups of a generalized watch, recomputed in SQL */
	if (w.generalize > 0)
	{
		Oid			types[1] = {OIDOID};
		Datum		values[1] = {ObjectIdGetDatum(relid)};

		KeanonSpiRun(relid, "SELECT keanon.check_groups($1::pg_catalog.regclass)", 1, types, values,
					 NULL, SPI_OK_SELECT);
	}
	KeanonIndexClose(ki);
	SPI_finish();
	KeanonOwnerEnd(&os);
	PG_RETURN_BOOL(true);
}

/*
 * keanon.check_layout(tab): part of keanon.on_alter, load the watch of tab
 * afresh, which checks that its internal tables are laid out as it needs
 * (layout.c), as the table's owner
 */
Datum
keanon_check_layout(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	KeanonOwnerScope os;
	Watch		w;

	if (!keanon_owns_relation(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	KeanonWatchForget(relid);
	KeanonOwnerBegin(relid, &os);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	KeanonWatchLoad(relid, &w, false);
	SPI_finish();
	KeanonOwnerEnd(&os);
	PG_RETURN_VOID();
}

/*
 * maintain.c
 *		Keeping a watched table's partitioning and published view current:
 *		the flow of one statement.
 *
 * One call per statement (see watch.c for the trigger entry points), run
 * as the watched table's owner, sandboxed (owner.c), inside the user's
 * transaction:
 *
 *	1. take the keanon lock of the watch's index (serializes writers) and
 *	   bump the watch's generation; under REPEATABLE READ or SERIALIZABLE,
 *	   a writer that committed after this transaction's snapshot means a
 *	   serialization failure, since this transaction cannot see its rows;
 *	2. mirror the statement's transition tables into the internal rows
 *	   table (deleted rows out, quasi-identifier updates in place) and
 *	   collect the value changes and the statement's fresh rows;
 *	3. apply the changes to the engine as one batch;
 *	4. republish only what changed: the O(1) steps of permute.c for one
 *	   row joining, leaving or being replaced in a partition whose bounds
 *	   stay put, the reassignment of reassign.c otherwise;
 *	5. write the fresh rows, already placed, in (partition, slot) order.
 *
 * Rows are only ever touched through the internal tables, which are MVCC:
 * a rollback undoes them, and the index repairs itself from the rows table
 * (see am_index.c), so the two always agree after an abort or a crash.
 * The statements go through the plans kept per watched table
 * (spi_plans.c); the watch comes from the cache of watch_cache.c, its
 * counters read again under the lock.
 */
#include "postgres.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/portal.h"
#include "utils/queryenvironment.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "catalog/pg_class.h"
#include "access/htup_details.h"

#include "keanon_gen.h"
#include "maintain_int.h"

/*
 * A release watch's last release keeps rows the index no longer holds
 * (deleted or changed since): before an unconstrained column's scale rises
 * to scale, they must fit it too, or the next release could not read them
 * (a writer's 1e-20 after released rows of 1e22 were deleted stopped every
 * release, check and bound aggregate).  One read of the release, each time
 * the scale rises.
 */
static void
released_fit_scale(Watch *w, int scale)
{
	bool		isnull;
	Datum		largest;
	Datum		limit;

	if (!w->release_mode || !w->ki->vt.grows || scale <= w->ki->vt.scale)
		return;
	KeanonSpiRun(w->relid, psprintf("SELECT pg_catalog.max(pg_catalog.abs(%s)) FROM %s",
									w->s, w->release),
				 0, NULL, NULL, NULL, SPI_OK_SELECT);
	largest = KeanonSpiColumnOrNull(w->relid, SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
									NUMERICOID, &isnull);
	if (isnull)
		return;
	limit = DirectFunctionCall3(numeric_in, CStringGetDatum(psprintf("1e%d", 34 - scale)),
								ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, largest, limit)) >= 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("keanon index \"%s\" cannot keep %d decimal places",
						get_rel_name(w->index_oid), scale),
				 errdetail("Values its last release keeps would take more than 34 significant digits.")));
}

/*
 * An unconstrained numeric column's index keeps as many decimal places as
 * the finest value needs: raise its scale, before any value of the
 * statement is converted, to that of the finest value of src
 */
static void
fit_scale(Watch *w, const char *src)
{
	bool		isnull;
	Datum		need;

	if (!w->ki->vt.grows)
		return;
	KeanonSpiRun(w->relid, psprintf("SELECT pg_catalog.max(pg_catalog.min_scale(n.%s)) FROM %s n",
									w->s, src),
				 0, NULL, NULL, NULL, SPI_OK_SELECT);
	need = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		return;
	released_fit_scale(w, DatumGetInt32(need));
	KeanonIndexFitScale(w->ki, DatumGetInt32(need));
}

/* The decimal places a numeric value needs; -1 for NaN and infinities */
static int32
numeric_places(Datum d)
{
	Numeric		x = DatumGetNumeric(d);
	int32		places = -1;

	if (!numeric_is_nan(x) && !numeric_is_inf(x))
		places = DatumGetInt32(DirectFunctionCall1(numeric_min_scale, NumericGetDatum(x)));
	if ((Pointer) x != DatumGetPointer(d))
		pfree(x);
	return places;
}

/* The same as fit_scale, for values already read */
static void
fit_scale_values(Watch *w, const Datum *values, int64 n)
{
	int32		need = -1;

	if (!w->ki->vt.grows)
		return;
	for (int64 i = 0; i < n; i++)
		need = Max(need, numeric_places(values[i]));
	if (need < 0)
		return;
	released_fit_scale(w, need);
	KeanonIndexFitScale(w->ki, need);
}

/*
 * Keep the rows of a query in a tuplestore registered as relation name
 * (SPI connected), run in snapshot snap if given: later statements read
 * the very rows, with the very values of any row_number() in them, that
 * the query returned once, whatever plan they get.  Returns how many; the
 * caller ends *store (tuplestore_end) once it unregisters the name.
 */
int64
KeanonMaterialize(Oid relid, const char *sql, Snapshot snap, const char *name,
				  Tuplestorestate **store)
{
	SPIPlanPtr	plan = KeanonPlan(relid, sql, 0, NULL, false);
	EphemeralNamedRelation enr = palloc0(sizeof(EphemeralNamedRelationData));
	Tuplestorestate *ts = tuplestore_begin_heap(false, false, work_mem);
	TupleDesc	desc = NULL;
	int64		n = 0;

	if (snap != InvalidSnapshot)
	{
		int			rc = SPI_execute_snapshot(plan, NULL, NULL, snap, InvalidSnapshot,
											  false, false, 0);

		if (rc != SPI_OK_SELECT && rc != SPI_OK_DELETE_RETURNING)
			elog(ERROR, "keanon: SPI error %s running \"%s\"", SPI_result_code_string(rc), sql);
		for (uint64 i = 0; i < SPI_processed; i++)
			tuplestore_puttuple(ts, SPI_tuptable->vals[i]);
		n = (int64) SPI_processed;
		desc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
		SPI_freetuptable(SPI_tuptable);
	}
	else
	{
		/* a batch at a time: the tuplestore, not memory, holds many rows */
		Portal		portal = SPI_cursor_open(NULL, plan, NULL, NULL, false);

		for (;;)
		{
			SPI_cursor_fetch(portal, true, 10000);
			if (desc == NULL)
				desc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
			if (SPI_processed == 0)
				break;
			for (uint64 i = 0; i < SPI_processed; i++)
				tuplestore_puttuple(ts, SPI_tuptable->vals[i]);
			n += (int64) SPI_processed;
			SPI_freetuptable(SPI_tuptable);
		}
		SPI_cursor_close(portal);
	}
	enr->md.name = pstrdup(name);
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = desc;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = (double) n;
	enr->reldata = ts;
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "keanon: could not register %s", name);
	*store = ts;
	return n;
}

/* Order engine numbers (qsort_arg comparator; arg is the KeKind) */
static int
num_cmp_arg(const void *a, const void *b, void *arg)
{
	return ke_num_cmp(*(const KeKind *) arg, *(const KeNum *) a, *(const KeNum *) b);
}

/*
 * a batch this many times smaller than the table is applied change by
 * change (see apply_changes)
 */
#define KEANON_SCATTERED_BATCH 16

/* Note the range where the last change may have moved partitions */
static void
note_range(Watch *w, KeNum v)
{
	const KeChangeInfo *ci = ke_last_change(w->ki->engine);
	KeanonRange *r = &w->ranges[w->nranges++];

	r->lo_unb = r->hi_unb = false;
	r->lo = r->hi = v;
	if (ci->any)
	{
		KeKind		kind = w->ki->vt.kind;

		if (ci->lo_unbounded)
			r->lo_unb = true;
		else if (ke_num_cmp(kind, ci->lo, v) < 0)
			r->lo = ci->lo;
		if (ci->hi_unbounded)
			r->hi_unb = true;
		else if (ke_num_cmp(kind, ci->hi, v) > 0)
			r->hi = ci->hi;
	}
}

/*
 * Apply the batch of changes to the engine.  A batch much smaller than
 * the table (a deferred watch's flush, a multi-row statement, the old and
 * new value of a single-row UPDATE) is applied change by change, its
 * arrivals first, noting where each may have moved partitions:
 * republication then reads the rows of those ranges alone, not of the
 * whole span between the smallest and the largest value, which for an
 * UPDATE moving a value across the table is most of it.  While rows wait
 * unplaced (outside release mode) republication covers that span anyway.
 */
static void
apply_changes(Watch *w, KeChange *changes, int n)
{
	w->ranges = NULL;
	w->nranges = 0;
	w->ranges_moved = false;
	if (n == 0)
		return;
	if (n == 1 || (int64) n * KEANON_SCATTERED_BATCH > ke_nrows(w->ki->engine) ||
		(!w->all_placed && !w->release_mode))
	{
		KeanonIndexApply(w->ki, changes, n);
		return;
	}
	if (w->release_mode)
	{
		/* nothing is republished before keanon.release: the engine alone */
		for (int i = 0; i < n; i++)
			KeanonIndexApply(w->ki, &changes[i], 1);
		return;
	}
	w->ranges = palloc(sizeof(KeanonRange) * n);
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++)
		{
			if ((changes[i].delta > 0) != (pass == 0))
				continue;
			KeanonIndexApply(w->ki, &changes[i], 1);
			w->ranges_moved |= ke_last_change(w->ki->engine)->boundaries_changed;
			note_range(w, changes[i].value);
		}
}

/* Collect the value column of a RETURNING result into changes */
static int
returned_changes(Watch *w, KeChange *changes, int at, int64 delta)
{
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = KeanonSpiColumnOrNull(w->relid, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
											  w->ki->vt.typid, &isnull);

		if (isnull)
			continue;
		changes[at].value = KeanonDatumToNum(&w->ki->vt, d);
		changes[at].delta = delta;
		at++;
	}
	return at;
}

/* Append a deleted row's place to *gone (of *ngone; -1 once past the most kept) */
static void
add_gone(GoneRow **gone, int *ngone, int64 pid, int32 slot, Datum pub, KeNum num)
{
	if (*ngone < 0)
		return;
	if (*ngone >= KEANON_GONE_MAX)
	{
		*ngone = -1;
		return;
	}
	/* room doubling at each power of two */
	if (*gone == NULL)
		*gone = palloc(sizeof(GoneRow) * 16);
	else if (*ngone >= 16 && (*ngone & (*ngone - 1)) == 0)
		*gone = repalloc(*gone, sizeof(GoneRow) * *ngone * 2);
	(*gone)[*ngone].pid = pid;
	(*gone)[*ngone].slot = slot;
	(*gone)[*ngone].pub = pub;
	(*gone)[*ngone].num = num;
	(*ngone)++;
}

/*
 * Run a DELETE ... RETURNING of the rows table (value, pid, slot, pub)
 * through a cursor, a batch at a time: a statement deleting millions of
 * rows holds their values as changes, not their tuples (the portal keeps
 * the returned rows in a tuplestore bounded by work_mem).  The places of
 * the published ones go to *gone (*ngone of them, or -1 past
 * KEANON_GONE_MAX), and the first row's value to *first_d: what the O(1)
 * paths need when it is the only one.
 */
static KeChange *
departed_rows(Watch *w, const char *sql, int *nchanges, GoneRow **gone, int *ngone,
			  Datum *first_d)
{
	Portal		portal;
	KeChange   *changes;
	int64		cap = 1024;
	int64		n = 0;
	int16		typlen;
	bool		typbyval;

	get_typlenbyval(w->ki->vt.typid, &typlen, &typbyval);
	changes = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(KeChange) * cap);
	*ngone = 0;
	portal = SPI_cursor_open(NULL, KeanonPlan(w->relid, sql, 0, NULL, false), NULL, NULL, false);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, 10000);
		if (SPI_processed == 0)
			break;
		if (n + (int64) SPI_processed >= INT_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many rows changed in %s by one statement", get_rel_name(w->relid))));
		if (n + (int64) SPI_processed + 1 > cap)
		{
			cap = (n + (int64) SPI_processed + 1) * 2;
			changes = repalloc_huge(changes, sizeof(KeChange) * cap);
		}
		for (uint64 i = 0; i < SPI_processed && *ngone >= 0; i++)
		{
			HeapTuple	t = SPI_tuptable->vals[i];
			TupleDesc	d = SPI_tuptable->tupdesc;
			bool		vnull,
						pidnull,
						slotnull,
						pubnull;
			Datum		v = KeanonSpiColumnOrNull(w->relid, t, d, 1, w->ki->vt.typid, &vnull);
			Datum		pid = KeanonSpiColumnOrNull(w->relid, t, d, 2, INT8OID, &pidnull);
			Datum		slot = KeanonSpiColumnOrNull(w->relid, t, d, 3, INT4OID, &slotnull);
			Datum		pub = KeanonSpiColumnOrNull(w->relid, t, d, 4, w->ki->vt.typid, &pubnull);

			if (n == 0 && i == 0)
				*first_d = vnull ? (Datum) 0 : datumCopy(v, typbyval, typlen);
			if (vnull || pidnull || slotnull || pubnull)
				continue;
			add_gone(gone, ngone, DatumGetInt64(pid), DatumGetInt32(slot),
					 datumCopy(pub, typbyval, typlen), KeanonDatumToNum(&w->ki->vt, v));
		}
		n = returned_changes(w, changes, (int) n, -1);
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	if (*ngone < 0)
		*ngone = 0;
	*nchanges = (int) n;
	return changes;
}

/*
 * The one row of a trigger's transition table store (of the table's
 * descriptor desc), read with a read pointer of its own as a scan of it by
 * name would
 */
static TupleTableSlot *
store_row(Watch *w, Tuplestorestate *store, TupleDesc desc)
{
	TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	int			ptr = tuplestore_alloc_read_pointer(store, EXEC_FLAG_REWIND);

	tuplestore_select_read_pointer(store, ptr);
	tuplestore_rescan(store);
	if (!tuplestore_gettupleslot(store, true, true, slot))
		elog(ERROR, "keanon: the changed row of %s is missing", get_rel_name(w->relid));
	tuplestore_select_read_pointer(store, 0);
	return slot;
}

/*
 * The same for one departing row of the watched table (in slot), its row
 * deleted from the rows table directly.  NULL when the rows table has no
 * primary key to find it by.
 */
static KeChange *
departed_one(Watch *w, TupleTableSlot *slot, int *nchanges, GoneRow **gone, int *ngone,
			 Datum *first_d)
{
	KeChange   *changes = palloc(sizeof(KeChange) * 3);
	PlacedRow	row;
	int			found = KeanonRowDelete(w, slot, &row);

	if (found < 0)
	{
		pfree(changes);
		return NULL;
	}
	*ngone = 0;
	*nchanges = found;
	if (found == 0)
		return changes;
	*first_d = row.value;
	if (row.pid != 0)
		add_gone(gone, ngone, row.pid, row.slot, row.pub, row.num);
	changes[0].value = row.num;
	changes[0].delta = -1;
	return changes;
}

/*
 * The fresh rows f, their values and numbers read, become the statement's:
 * room for their places, their arrivals after the table's, one change
 * each after the *nchanges in changes (grown; *nchanges updated)
 */
static KeChange *
fresh_collected(Watch *w, FreshRows *f, KeChange *changes, int *nchanges)
{
	int64		at = *nchanges;

	f->arrival0 = w->next_arrival;
	f->pid = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(f->n, 1));
	f->slot = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(f->n, 1));
	f->pub = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(f->n, 1));
	changes = changes ? repalloc_huge(changes, sizeof(KeChange) * (at + f->n + 1))
		: MemoryContextAllocHuge(CurrentMemoryContext, sizeof(KeChange) * (f->n + 1));
	for (int64 i = 0; i < f->n; i++)
	{
		changes[at + i].value = f->num[i];
		changes[at + i].delta = 1;
	}
	w->next_arrival += f->n;
	w->fresh = f;
	*nchanges = (int) (at + f->n);
	return changes;
}

/*
 * Read the values of the fresh rows of a source query (a subquery with the
 * watched table's columns and keanon_ordinal numbering the rows from 1),
 * and add them to the changes (grown as needed; *nchanges updated).
 */
static KeChange *
fresh_collect(Watch *w, FreshRows *f, const char *src, KeChange *changes, int *nchanges)
{
	const KeanonValueType *vt = &w->ki->vt;
	int16		typlen;
	bool		typbyval;
	bool		isnull;
	int64		at = *nchanges;

	get_typlenbyval(vt->typid, &typlen, &typbyval);
	KeanonSpiRun(w->relid, psprintf("SELECT n.keanon_ordinal, n.%s FROM %s n", w->s, src),
			0, NULL, NULL, NULL, SPI_OK_SELECT);
	if (at + (int64) SPI_processed >= INT_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many rows changed in %s by one statement", get_rel_name(w->relid))));
	/* the value's type, checked once: the owner's code may have retyped it */
	if (SPI_processed > 0)
		(void) KeanonSpiColumnOrNull(w->relid, SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
									 vt->typid, &isnull);
	memset(f, 0, sizeof(FreshRows));
	f->n = (int64) SPI_processed;
	f->value = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(f->n, 1));
	f->num = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(KeNum) * Max(f->n, 1));
	for (int64 r = 0; r < f->n; r++)
	{
		int64		i = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc,
													1, &isnull)) - 1;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull);

		if (i < 0 || i >= f->n)
			elog(ERROR, "keanon: new row %lld of %s out of range", (long long) i + 1,
				 get_rel_name(w->relid));
		f->value[i] = datumCopy(d, typbyval, typlen);
		f->num[i] = KeanonDatumToNum(vt, f->value[i]);
	}
	SPI_freetuptable(SPI_tuptable);
	return fresh_collected(w, f, changes, nchanges);
}

/*
 * Fresh rows read directly, without SQL: the watched table scanned in
 * physical order from its first block (a watch's fill), or a statement's
 * transition table.  Rows without a value are skipped, as the SQL sources'
 * filter does.  A source is read twice, the same rows in the same order
 * both times: the values, then the rows to write.
 */
typedef struct FreshSource
{
	AttrNumber	att;			/* the value's column */
	TupleTableSlot *slot;
	Relation	rel;			/* a table, scanned under snap */
	Snapshot	snap;
	TableScanDesc scan;
	Tuplestorestate *store;		/* or a transition table, read by ptr */
	int			ptr;
} FreshSource;

static void
source_open_table(FreshSource *s, Watch *w, Snapshot snap)
{
	memset(s, 0, sizeof(FreshSource));
	s->att = KeanonSourceValueAtt(w);
	s->rel = table_open(w->relid, AccessShareLock);
	s->snap = snap;
	s->slot = table_slot_create(s->rel, NULL);
}

static void
source_open_store(FreshSource *s, Watch *w, Tuplestorestate *store, TupleDesc desc)
{
	memset(s, 0, sizeof(FreshSource));
	s->att = KeanonSourceValueAtt(w);
	s->store = store;
	s->ptr = tuplestore_alloc_read_pointer(store, EXEC_FLAG_REWIND);
	s->slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
}

/* Back to the first row */
static void
source_rewind(FreshSource *s)
{
	if (s->rel != NULL)
	{
		if (s->scan != NULL)
			table_endscan(s->scan);
		/* no synchronized scan: both reads start at block 0 */
		s->scan = table_beginscan_strat(s->rel, s->snap, 0, NULL, true, false);
	}
	else
	{
		tuplestore_select_read_pointer(s->store, s->ptr);
		tuplestore_rescan(s->store);
		tuplestore_select_read_pointer(s->store, 0);
	}
}

/* The next row with a value, or NULL */
static TupleTableSlot *
source_next(void *arg)
{
	FreshSource *s = arg;
	bool		isnull;

	for (;;)
	{
		bool		got;

		CHECK_FOR_INTERRUPTS();
		if (s->rel != NULL)
			got = table_scan_getnextslot(s->scan, ForwardScanDirection, s->slot);
		else
		{
			tuplestore_select_read_pointer(s->store, s->ptr);
			got = tuplestore_gettupleslot(s->store, true, false, s->slot);
			tuplestore_select_read_pointer(s->store, 0);
		}
		if (!got)
			return NULL;
		(void) slot_getattr(s->slot, s->att, &isnull);
		if (!isnull)
			return s->slot;
	}
}

static void
source_close(FreshSource *s)
{
	if (s->scan != NULL)
		table_endscan(s->scan);
	ExecDropSingleTupleTableSlot(s->slot);
	if (s->rel != NULL)
		table_close(s->rel, NoLock);
}

/*
 * A multi-row UPDATE's new rows (the trigger's transition table store, of
 * the table's descriptor desc), read directly: a row whose key and value
 * stayed keeps its place in the rows table and takes its new
 * quasi-identifiers there (*qi_changed tells whether any did), and the
 * others with a value are copied, in the statement's order, into the
 * returned store of fresh rows.  NULL, with nothing done, when the rows
 * table has no primary key to find rows by (the SQL statements run
 * instead).
 */
static Tuplestorestate *
update_fresh_rows(Watch *w, Tuplestorestate *newstore, TupleDesc desc, bool *qi_changed)
{
	Tuplestorestate *fresh = tuplestore_begin_heap(false, false, work_mem);
	FreshSource s;
	TupleTableSlot *slot;

	source_open_store(&s, w, newstore, desc);
	source_rewind(&s);
	while ((slot = source_next(&s)) != NULL)
	{
		bool		changed;
		int			found = KeanonRowSetQis(w, slot, &changed);

		if (found < 0)
		{
			source_close(&s);
			tuplestore_end(fresh);
			return NULL;
		}
		*qi_changed |= changed;
		if (found == 0)
			tuplestore_puttupleslot(fresh, slot);
	}
	source_close(&s);
	return fresh;
}

/* The same as fit_scale, for the values of a transition table */
static void
fit_scale_store(Watch *w, Tuplestorestate *store, TupleDesc desc)
{
	FreshSource s;
	TupleTableSlot *slot;
	int32		need = -1;

	if (!w->ki->vt.grows)
		return;
	source_open_store(&s, w, store, desc);
	source_rewind(&s);
	while ((slot = source_next(&s)) != NULL)
	{
		bool		isnull;

		need = Max(need, numeric_places(slot_getattr(slot, s.att, &isnull)));
	}
	source_close(&s);
	if (need < 0)
		return;
	released_fit_scale(w, need);
	KeanonIndexFitScale(w->ki, need);
}

/* The same as fresh_collect, for rows read directly from a source */
static KeChange *
fresh_collect_source(Watch *w, FreshRows *f, FreshSource *s, KeChange *changes, int *nchanges)
{
	const KeanonValueType *vt = &w->ki->vt;
	int16		typlen;
	bool		typbyval;
	int64		at = *nchanges;
	int64		cap = 1024;
	TupleTableSlot *slot;

	get_typlenbyval(vt->typid, &typlen, &typbyval);
	memset(f, 0, sizeof(FreshRows));
	f->value = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * cap);
	f->num = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(KeNum) * cap);
	source_rewind(s);
	while ((slot = source_next(s)) != NULL)
	{
		bool		isnull;

		if (at + f->n + 1 >= INT_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many rows changed in %s by one statement", get_rel_name(w->relid))));
		if (f->n == cap)
		{
			cap *= 2;
			f->value = repalloc_huge(f->value, sizeof(Datum) * cap);
			f->num = repalloc_huge(f->num, sizeof(KeNum) * cap);
		}
		f->value[f->n++] = datumCopy(slot_getattr(slot, s->att, &isnull), typbyval, typlen);
	}
	/* the finest value sets an unconstrained numeric's scale first */
	fit_scale_values(w, f->value, f->n);
	for (int64 i = 0; i < f->n; i++)
		f->num[i] = KeanonDatumToNum(vt, f->value[i]);
	return fresh_collected(w, f, changes, nchanges);
}

/*
 * The same for one new row of the watched table (in slot, which the fresh
 * rows keep for fresh_write, or which is dropped for a row without a value)
 */
static KeChange *
fresh_collect_one(Watch *w, FreshRows *f, TupleTableSlot *slot, KeChange *changes, int *nchanges)
{
	const KeanonValueType *vt = &w->ki->vt;
	bool		isnull;
	Datum		d;
	int16		typlen;
	bool		typbyval;

	d = slot_getattr(slot, KeanonSourceValueAtt(w), &isnull);
	memset(f, 0, sizeof(FreshRows));
	f->arrival0 = w->next_arrival;
	w->fresh = f;
	if (isnull)
	{
		/* a row without a value is not watched (as src's filter says) */
		ExecDropSingleTupleTableSlot(slot);
		return changes;
	}
	get_typlenbyval(vt->typid, &typlen, &typbyval);
	f->n = 1;
	f->one = slot;
	f->value = palloc(sizeof(Datum));
	f->num = palloc(sizeof(KeNum));
	f->value[0] = datumCopy(d, typbyval, typlen);
	fit_scale_values(w, f->value, 1);
	f->num[0] = KeanonDatumToNum(vt, f->value[0]);
	return fresh_collected(w, f, changes, nchanges);
}

/*
 * A uniformly random order of n rows: element i is row i's rank.  The
 * rows a statement adds unplaced are written in this order, so that where
 * a row lands in the rows table, hence where the view returns it, says
 * nothing about its value, whatever order the statement or the watched
 * table had (a table loaded in value order, say).
 */
static int64 *
shuffled_ranks(int64 n)
{
	int64	   *rank = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * Max(n, 1));

	for (int64 i = 0; i < n; i++)
		rank[i] = i;
	for (int64 i = n - 1; i > 0; i--)
	{
		int64		r = (int64) KeanonRandomBelow((uint64) i + 1);
		int64		t = rank[i];

		rank[i] = rank[r];
		rank[r] = t;
	}
	return rank;
}

/* Order row indexes by the (partition, slot) of fresh rows (qsort_arg) */
static int
place_cmp(const void *a, const void *b, void *arg)
{
	const FreshRows *f = arg;
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;
	int64		xp = DatumGetInt64(f->pid[x]);
	int64		yp = DatumGetInt64(f->pid[y]);

	if (xp != yp)
		return xp < yp ? -1 : 1;
	return DatumGetInt32(f->slot[x]) - DatumGetInt32(f->slot[y]);
}

/*
 * The order of placed fresh rows by (partition, slot), as shuffled_ranks
 * gives one.  A row's place in it tells its partition, which the view shows,
 * and its slot, a uniformly random order within the partition drawn
 * independently of the values: nothing about its true value.  New
 * partitions take increasing ids, so the rows table's (keanon_pid, ...)
 * btrees then take most entries at their right edge.
 */
static int64 *
placed_ranks(FreshRows *f)
{
	int64	   *order = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * Max(f->n, 1));
	int64	   *rank = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * Max(f->n, 1));

	for (int64 i = 0; i < f->n; i++)
		order[i] = i;
	qsort_arg(order, f->n, sizeof(int64), place_cmp, f);
	for (int64 i = 0; i < f->n; i++)
		rank[order[i]] = i;
	pfree(order);
	return rank;
}

/* Ranks as an int8[] whose element i (from 1) is row i's, for SQL */
static Datum
ranks_array(int64 *rank, int64 n)
{
	Datum	   *d = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(n, 1));

	for (int64 i = 0; i < n; i++)
		d[i] = Int64GetDatum(rank[i]);
	pfree(rank);
	return PointerGetDatum(construct_array(d, (int) n, INT8OID, 8, FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

/*
 * Write the fresh rows of the source (read directly, or the source query
 * src) into the rows table, placed when republication placed them (it
 * places all or none).
 */
static void
fresh_write(Watch *w, const char *src, FreshSource *source)
{
	FreshRows  *f = w->fresh;
	const KeanonValueType *vt = &w->ki->vt;
	List	   *all = KeanonUnionNames(KeanonUnionNames(w->keys, w->qis), list_make1(w->s));
	Oid			types[5] = {INT8OID, INT8ARRAYOID, INT4ARRAYOID, get_array_type(vt->typid),
	INT8ARRAYOID};
	Datum		values[5];
	char	   *sql;

	if (f == NULL || f->n == 0)
		return;
	if (f->one != NULL)
	{
		/* one row read directly, written directly, placed or not */
		KeanonRowInsert(w, f->one, f->arrival0 + 1, f->placed ? &f->pid[0] : NULL,
						f->placed ? &f->slot[0] : NULL, f->placed ? &f->pub[0] : NULL);
		ExecDropSingleTupleTableSlot(f->one);
		w->fresh = NULL;
		return;
	}
	if (source != NULL)
	{
		source_rewind(source);
		KeanonRowsInsertMany(w, f, f->placed ? NULL : shuffled_ranks(f->n), source_next, source);
		w->fresh = NULL;
		return;
	}
	values[0] = Int64GetDatum(f->arrival0);
	values[4] = f->n == 1 && f->placed ? (Datum) 0 :
		ranks_array(f->placed ? placed_ranks(f) : shuffled_ranks(f->n), f->n);
	if (f->placed)
	{
		int16		typlen;
		bool		typbyval;
		char		typalign;

		get_typlenbyvalalign(vt->typid, &typlen, &typbyval, &typalign);
		if (f->n == 1)
		{
			/* the common single row, without a join */
			types[1] = INT8OID;
			types[2] = INT4OID;
			types[3] = vt->typid;
			values[1] = f->pid[0];
			values[2] = f->slot[0];
			values[3] = f->pub[0];
			sql = psprintf("INSERT INTO %s (%s, keanon_arrival, keanon_pid, keanon_slot, keanon_pub) "
						   "SELECT %s, $1 + n.keanon_ordinal, $2, $3, $4 FROM %s n",
						   w->rows, KeanonNameList(all, ""), KeanonNameList(all, "n."), src);
			KeanonSpiRun(w->relid, sql, 4, types, values, NULL, SPI_OK_INSERT);
		}
		else
		{
			SPIPlanPtr	plan;

			values[1] = PointerGetDatum(construct_array(f->pid, (int) f->n, INT8OID, 8,
														FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
			values[2] = PointerGetDatum(construct_array(f->slot, (int) f->n, INT4OID, 4, true,
														TYPALIGN_INT));
			values[3] = PointerGetDatum(construct_array(f->pub, (int) f->n, vt->typid, typlen,
														typbyval, typalign));
			/* subscripts are O(1) into arrays of fixed-width values */
			if (typlen > 0)
				sql = psprintf("INSERT INTO %s (%s, keanon_arrival, keanon_pid, keanon_slot, keanon_pub) "
							   "SELECT %s, $1 + n.keanon_ordinal, ($2)[n.keanon_ordinal], "
							   "($3)[n.keanon_ordinal], ($4)[n.keanon_ordinal] FROM %s n "
							   "ORDER BY ($5)[n.keanon_ordinal]",
							   w->rows, KeanonNameList(all, ""), KeanonNameList(all, "n."), src);
			else
				sql = psprintf("INSERT INTO %s (%s, keanon_arrival, keanon_pid, keanon_slot, keanon_pub) "
							   "SELECT %s, $1 + n.keanon_ordinal, u.p, u.s, u.v FROM %s n "
							   "JOIN unnest($2, $3, $4) WITH ORDINALITY AS u(p, s, v, o) "
							   "ON u.o = n.keanon_ordinal ORDER BY ($5)[n.keanon_ordinal]",
							   w->rows, KeanonNameList(all, ""), KeanonNameList(all, "n."), src);
			/* a hash join for many rows: planned for the arrays at hand */
			plan = KeanonPlan(w->relid, sql, 5, types, true);
			if (SPI_execute_plan(plan, values, NULL, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "keanon: could not write the new rows of %s", get_rel_name(w->relid));
		}
	}
	else
	{
		types[1] = INT8ARRAYOID;
		values[1] = values[4];
		sql = psprintf("INSERT INTO %s (%s, keanon_arrival) SELECT %s, $1 + n.keanon_ordinal "
					   "FROM %s n ORDER BY ($2)[n.keanon_ordinal]",
					   w->rows, KeanonNameList(all, ""), KeanonNameList(all, "n."), src);
		KeanonSpiRun(w->relid, sql, 2, types, values, NULL, SPI_OK_INSERT);
	}
	if ((int64) SPI_processed != f->n)
		elog(ERROR, "keanon: wrote %lld new rows of %s, expected %lld",
			 (long long) SPI_processed, get_rel_name(w->relid), (long long) f->n);
	w->fresh = NULL;
}

/*
 * The fresh rows into an empty index and table: the tree is laid out in one
 * pass, as CREATE INDEX would, and every partition drawn afresh.  One sort
 * by (value, arrival) serves both: its values lay the tree out, and its
 * order is the one the reassignment places the rows in.
 */
static void
publish_into_empty(Watch *w)
{
	FreshRows  *f = w->fresh;
	KeNum	   *sorted = MemoryContextAllocHuge(CurrentMemoryContext,
												sizeof(KeNum) * Max(f->n, 1));
	KeNum		dummy;

	KeanonFreshOrder(f, w->ki->vt.kind);
	for (int64 i = 0; i < f->n; i++)
		sorted[i] = f->num[f->order[i]];
	KeanonIndexBuildSorted(w->ki, sorted, (size_t) f->n);
	pfree(sorted);
	if (f->n == 0 || w->release_mode)
		return;
	if (!ke_sum_error(w->ki->engine, &dummy))
		KeanonSuppressAll(w);
	else
		KeanonReassign(w, true, dummy, true, dummy, NULL, 0);
}

/*
 * Maintenance for one statement on a watched table (SPI connected): the
 * trigger's transition tables are registered under their own names
 */
void
KeanonMaintain(TriggerData *trigdata)
{
	TriggerEvent ev = trigdata->tg_event;
	Watch		w;

	/* a statement that changed no row changes nothing, not even the generation */
	if (!TRIGGER_FIRED_BY_TRUNCATE(ev) &&
		(trigdata->tg_newtable == NULL || tuplestore_tuple_count(trigdata->tg_newtable) == 0) &&
		(trigdata->tg_oldtable == NULL || tuplestore_tuple_count(trigdata->tg_oldtable) == 0))
		return;

	/*
	 * TRUNCATE empties the internal tables alike: the keanon index, being on
	 * the rows table, is rebuilt empty with it, and an abort brings all
	 * three back together.  No row is read, whatever the table's size.  A
	 * release watch keeps publishing its last release; a deferred watch's
	 * pending changes go too.
	 */
	if (TRIGGER_FIRED_BY_TRUNCATE(ev))
	{
		StringInfoData sql;

		KeanonWatchLoad(RelationGetRelid(trigdata->tg_relation), &w, false);
		KeanonBeginWrite(&w, false);
		initStringInfo(&sql);
		appendStringInfo(&sql, "TRUNCATE %s", w.rows);
		if (w.pending)
			appendStringInfo(&sql, ", %s", w.pending);
		/* a release watch's partitions and groups are those it published */
		if (!w.release_mode)
		{
			appendStringInfo(&sql, ", %s", w.parts);
			if (w.generalize > 0)
			{
				KeanonGen	g;

				KeanonGenLoad(&w, &g);
				appendStringInfo(&sql, ", %s, %s", g.groups, g.members);
			}
		}
		KeanonSpiRun(w.relid, sql.data, 0, NULL, NULL, NULL, SPI_OK_UTILITY);
		KeanonSaveWatch(&w);
		KeanonEndWrite(&w);
		return;
	}

	if (SPI_register_trigger_data(trigdata) != SPI_OK_TD_REGISTER)
		elog(ERROR, "keanon: could not register transition tables");
	KeanonMaintainDelta(RelationGetRelid(trigdata->tg_relation),
						TRIGGER_FIRED_BY_INSERT(ev), TRIGGER_FIRED_BY_UPDATE(ev),
						TRIGGER_FIRED_BY_DELETE(ev), "keanon_old", "keanon_new",
						trigdata->tg_oldtable, trigdata->tg_newtable,
						RelationGetDescr(trigdata->tg_relation));
}

/* What one change of a watched table collects as it goes */
typedef struct StatementChange
{
	bool		by_insert;
	bool		by_update;
	bool		by_delete;
	const char *oldrel;			/* the transition tables' names */
	const char *newrel;
	Tuplestorestate *oldstore;	/* and stores, when a trigger has them */
	Tuplestorestate *newstore;
	TupleDesc	desc;
	KeChange   *changes;		/* the engine's changes: departures first */
	int			nchanges;
	int			nins;
	int			ndel;
	KeNum		ins_v;			/* the one arrival's or departure's value */
	KeNum		del_v;
	Datum		ins_d;
	Datum		del_d;
	Datum		del_pub;		/* the one departure's place */
	int64		del_pid;
	int32		del_slot;
	bool		del_had_pid;
	FreshRows	fresh;			/* the arrivals */
	GoneRow    *gone;			/* the published rows that left */
	int			ngone;
	TupleTableSlot *new_one;	/* an UPDATE of one row: its new row */
	bool		update_one;
	bool		same_key;
	bool		same_value;
	bool		qi_changed;
	char	   *src;			/* arrivals by SQL: their relation */
	char	   *fresh_name;
	Tuplestorestate *fresh_store;
	Tuplestorestate *update_store;
	FreshSource source;			/* arrivals read directly */
} StatementChange;

/*
 * The rows that leave: a DELETE's, or an UPDATE's whose key or value
 * changed, read from the transition table when it holds one row, by SQL
 * otherwise
 */
static void
collect_departures(Watch *w, StatementChange *sc)
{
	TupleTableSlot *old_one = NULL;
	char	   *sql;

	if (sc->by_delete && sc->oldstore != NULL && tuplestore_tuple_count(sc->oldstore) == 1)
	{
		/* the common single row, read from the transition table directly */
		old_one = store_row(w, sc->oldstore, sc->desc);
		sc->changes = departed_one(w, old_one, &sc->nchanges, &sc->gone, &sc->ngone, &sc->del_d);
	}
	else if (sc->by_update && sc->oldstore != NULL && sc->newstore != NULL &&
			 tuplestore_tuple_count(sc->oldstore) == 1 && tuplestore_tuple_count(sc->newstore) == 1)
	{
		/*
		 * the same for an UPDATE of one row: its row leaves unless the key
		 * and the value stay (as the SQL's anti-join decides below)
		 */
		old_one = store_row(w, sc->oldstore, sc->desc);
		sc->new_one = store_row(w, sc->newstore, sc->desc);
		sc->update_one = KeanonSameKeyAndValue(w, old_one, sc->new_one, &sc->same_key,
											   &sc->same_value);
		if (!sc->update_one)
			ExecDropSingleTupleTableSlot(sc->new_one);	/* no primary key: SQL */
		else if (sc->same_key && sc->same_value)
			sc->changes = palloc(sizeof(KeChange) * 2);
		else
			sc->changes = departed_one(w, old_one, &sc->nchanges, &sc->gone, &sc->ngone,
									   &sc->del_d);
	}
	if (old_one != NULL)
		ExecDropSingleTupleTableSlot(old_one);
	if (sc->changes == NULL && (sc->by_delete || sc->by_update))
	{
		if (sc->by_delete)
			sql = psprintf("DELETE FROM %s r USING %s o WHERE %s "
						   "RETURNING r.%s, r.keanon_pid, r.keanon_slot, r.keanon_pub",
						   w->rows, sc->oldrel, KeanonKeysEqual(w, "r.", "o."), w->s);
		else
			sql = psprintf("DELETE FROM %s r USING %s o WHERE %s "
						   "AND NOT EXISTS (SELECT 1 FROM %s n WHERE %s "
						   "AND n.%s IS NOT DISTINCT FROM o.%s) "
						   "RETURNING r.%s, r.keanon_pid, r.keanon_slot, r.keanon_pub",
						   w->rows, sc->oldrel, KeanonKeysEqual(w, "r.", "o."), sc->newrel, KeanonKeysEqual(w, "n.", "o."), w->s, w->s, w->s);
		sc->changes = departed_rows(w, sql, &sc->nchanges, &sc->gone, &sc->ngone, &sc->del_d);
	}
	if (sc->by_delete || sc->by_update)
	{
		sc->ndel = sc->nchanges;
		if (sc->ndel == 1)
		{
			sc->del_v = sc->changes[0].value;
			sc->del_had_pid = sc->ngone == 1;
			if (sc->del_had_pid)
			{
				sc->del_pid = sc->gone[0].pid;
				sc->del_slot = sc->gone[0].slot;
				sc->del_pub = sc->gone[0].pub;
			}
		}
		/* the published rows that left, for their partitions' carry-over */
		w->gone = sc->gone;
		w->ngone = sc->ngone;
	}
}

/*
 * The rows that arrive: an INSERT's, or an UPDATE's whose key or value
 * changed, read directly where the trigger's store allows, by SQL
 * otherwise
 */
static void
collect_arrivals(Watch *w, StatementChange *sc)
{
	if (sc->by_insert && sc->newstore != NULL && tuplestore_tuple_count(sc->newstore) == 1)
	{
		/* the common single row, read from the transition table directly */
		sc->changes = fresh_collect_one(w, &sc->fresh, store_row(w, sc->newstore, sc->desc),
										sc->changes, &sc->nchanges);
	}
	else if (sc->update_one)
	{
		/*
		 * an UPDATE's one row: a row left with its key takes the new
		 * quasi-identifiers, as the SQL below would; with none, the new
		 * row is fresh (no lookup needed when its key's row just left)
		 */
		if ((sc->same_key && !sc->same_value) || KeanonRowSetQis(w, sc->new_one, &sc->qi_changed) == 0)
			sc->changes = fresh_collect_one(w, &sc->fresh, sc->new_one, sc->changes, &sc->nchanges);
		else
			ExecDropSingleTupleTableSlot(sc->new_one);
	}
	else if (sc->by_insert && sc->newstore != NULL)
	{
		/* the new rows, read from the transition table directly */
		source_open_store(&sc->source, w, sc->newstore, sc->desc);
		sc->changes = fresh_collect_source(w, &sc->fresh, &sc->source, sc->changes, &sc->nchanges);
	}
	else if (sc->by_insert)
	{
		/* scanned alone, the new rows come in the same order every time */
		sc->src = psprintf("(SELECT n.*, row_number() OVER () AS keanon_ordinal FROM %s n "
						   "WHERE n.%s IS NOT NULL)", sc->newrel, w->s);
		sc->changes = fresh_collect(w, &sc->fresh, sc->src, sc->changes, &sc->nchanges);
	}
	else if (sc->by_update && sc->newstore != NULL &&
			 (sc->update_store = update_fresh_rows(w, sc->newstore, sc->desc, &sc->qi_changed)) != NULL)
	{
		/* read directly, as an INSERT's are */
		source_open_store(&sc->source, w, sc->update_store, sc->desc);
		sc->changes = fresh_collect_source(w, &sc->fresh, &sc->source, sc->changes, &sc->nchanges);
	}
	else if (sc->by_update)
	{
		/*
		 * an UPDATE's rows that kept their key and value stay as they are;
		 * the others are numbered once and kept, since two runs of the
		 * anti-join could return them in two orders
		 */
		sc->fresh_name = psprintf("%s_fresh", sc->newrel);
		KeanonMaterialize(w->relid,
						  psprintf("SELECT n.*, row_number() OVER () AS keanon_ordinal FROM %s n "
								   "WHERE n.%s IS NOT NULL AND NOT EXISTS "
								   "(SELECT 1 FROM %s x WHERE %s)",
								   sc->newrel, w->s, w->rows, KeanonKeysEqual(w, "x.", "n.")),
						  InvalidSnapshot, sc->fresh_name, &sc->fresh_store);
		sc->src = sc->fresh_name;
		sc->changes = fresh_collect(w, &sc->fresh, sc->src, sc->changes, &sc->nchanges);
	}
	if (sc->by_insert || sc->by_update)
	{
		sc->nins = (int) Min(sc->fresh.n, INT_MAX);
		if (sc->nins == 1)
		{
			sc->ins_v = sc->fresh.num[0];
			sc->ins_d = sc->fresh.value[0];
		}
	}
}

/* An UPDATE's rows that stay take their new quasi-identifiers, by SQL */
static void
update_stayers_qis(Watch *w, StatementChange *sc)
{
	char	   *sql;

	if (!sc->by_update || w->qis == NIL || sc->update_one || sc->update_store != NULL)
		return;
	sql = psprintf("UPDATE %s r SET (%s) = ROW(%s) FROM %s n WHERE %s "
				   "AND NOT pg_catalog.record_image_eq(ROW(%s), ROW(%s))",
				   w->rows, KeanonNameList(w->qis, ""), KeanonNameList(w->qis, "n."), sc->newrel,
				   KeanonKeysEqual(w, "r.", "n."),
				   KeanonNameList(w->qis, "r."), KeanonNameList(w->qis, "n."));
	KeanonSpiRun(w->relid, sql, 0, NULL, NULL, NULL, SPI_OK_UPDATE);
	sc->qi_changed = SPI_processed > 0;
}

/* The changes to the engine, and the partitions they moved republished */
static void
apply_and_republish(Watch *w, StatementChange *sc)
{
	KeNum		dummy;

	/*
	 * Rows of the table wait unplaced only while no valid partitioning
	 * exists (and in release mode): with one, none but the fresh do.
	 */
	w->all_placed = !w->release_mode && w->ki->engine != NULL && ke_sum_error(w->ki->engine, &dummy);
	if (sc->ndel == 0 && sc->nins > 1 && ke_nrows(w->ki->engine) == 0)
	{
		/* a load into an empty table, as when a watch begins */
		publish_into_empty(w);
		return;
	}
	apply_changes(w, sc->changes, sc->nchanges);
	/* a release watch only tracks changes: its view moves at keanon.release */
	if (sc->nchanges > 0 && !w->release_mode)
	{
		/* the changed values, sorted */
		KeNum	   *cv = palloc(sizeof(KeNum) * sc->nchanges);

		for (int i = 0; i < sc->nchanges; i++)
			cv[i] = sc->changes[i].value;
		qsort_arg(cv, sc->nchanges, sizeof(KeNum), num_cmp_arg, &w->ki->vt.kind);
		KeanonRepublishChanges(w, cv, sc->nchanges, sc->nins, sc->ins_v, sc->ins_d, sc->ndel,
							   sc->del_v, sc->del_d, sc->del_pid, sc->del_slot, sc->del_pub,
							   sc->del_had_pid);
	}
}

/* The arrivals written, placed; what the change kept released */
static void
write_arrivals(Watch *w, StatementChange *sc)
{
	if (sc->source.slot != NULL)
	{
		fresh_write(w, NULL, &sc->source);
		source_close(&sc->source);
	}
	else if (sc->src != NULL || sc->fresh.one != NULL)
		fresh_write(w, sc->src, NULL);
	if (sc->fresh_name != NULL)
	{
		SPI_unregister_relation(sc->fresh_name);
		tuplestore_end(sc->fresh_store);
	}
	if (sc->update_store != NULL)
		tuplestore_end(sc->update_store);
}

/*
 * Apply one change of a watched table (SPI connected, the relations named
 * oldrel and newrel registered as the rows before and after, with the
 * table's key, quasi-identifier and sensitive columns): an INSERT's new
 * rows, a DELETE's old ones, or an UPDATE's both, which is also how a
 * deferred watch applies its pending changes (deferred.c).  A trigger
 * also passes its transition tables' stores (of the table's descriptor
 * desc), from which a statement of one row is read directly.
 */
void
KeanonMaintainDelta(Oid relid, bool by_insert, bool by_update, bool by_delete,
					const char *oldrel, const char *newrel, Tuplestorestate *oldstore,
					Tuplestorestate *newstore, TupleDesc desc)
{
	Watch		w;
	StatementChange sc;

	memset(&sc, 0, sizeof(sc));
	sc.by_insert = by_insert;
	sc.by_update = by_update;
	sc.by_delete = by_delete;
	sc.oldrel = oldrel;
	sc.newrel = newrel;
	sc.oldstore = oldstore;
	sc.newstore = newstore;
	sc.desc = desc;

	KeanonWatchLoad(relid, &w, false);
	KeanonBeginWrite(&w, true);
	/*
	 * The statement's finest value sets the scale before any is converted.
	 * The direct collectors see to it for an INSERT, which converts nothing
	 * before its new values; an UPDATE converts its departing rows first.
	 */
	if (by_update && newstore != NULL)
		fit_scale_store(&w, newstore, desc);
	else if ((by_insert || by_update) && newstore == NULL)
		fit_scale(&w, newrel);

	collect_departures(&w, &sc);
	collect_arrivals(&w, &sc);
	update_stayers_qis(&w, &sc);
	apply_and_republish(&w, &sc);
	write_arrivals(&w, &sc);
	if (w.generalize > 0)
		KeanonGeneralizeDelta(&w, by_insert, by_update, by_delete, oldrel, newrel);
	/* no generation bump, hence no serialization failure, for no change */
	if (sc.ndel > 0 || sc.fresh.n > 0 || sc.qi_changed)
		KeanonSaveWatch(&w);
	KeanonEndWrite(&w);
}

/* a watch of this many rows or more reports each phase of its fill */
#define KEANON_PROGRESS_ROWS	100000

/* Assign every row anew; returns the rows published (SPI connected) */
int64
KeanonRepublish(Oid relid)
{
	Watch		w;
	KeNum		dummy;
	int64		published = 0;

	KeanonWatchLoad(relid, &w, false);
	if (w.release_mode)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is watched in release mode", get_rel_name(relid)),
				 errhint("Publish with keanon.release().")));
	w.republishing = true;
	KeanonBeginWrite(&w, true);
	if (!ke_sum_error(w.ki->engine, &dummy))
		KeanonSuppressAll(&w);
	else
	{
		KeanonReassign(&w, true, dummy, true, dummy, NULL, 0);
		published = ke_nrows(w.ki->engine);
	}
	KeanonSaveWatch(&w);
	KeanonEndWrite(&w);
	return published;
}

/*
 * Fill the empty rows table of a new watch from the watched table, each
 * row written once and, in live mode, already placed; arrival follows the
 * table's physical order.  Returns the rows written (SPI connected).
 */
int64
KeanonFill(Oid relid)
{
	Watch		w;
	FreshRows	fresh = {0};
	KeChange   *changes;
	int			nchanges = 0;
	FreshSource source;
	Snapshot	snap;
	int64		first_pid;

	KeanonWatchLoad(relid, &w, false);
	KeanonBeginWrite(&w, true);
	KeanonSpiRun(w.relid, psprintf("SELECT 1 FROM %s LIMIT 1", w.rows), 0, NULL, NULL, NULL, SPI_OK_SELECT);
	if (SPI_processed != 0 || (w.ki->engine != NULL && ke_nrows(w.ki->engine) != 0))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the watch of %s is already filled", get_rel_name(relid))));
	/*
	 * Arrival follows the table's physical order, read twice (for the
	 * values, then to write the rows) by plain sequential scans from its
	 * first block, under one snapshot taken under the table's lock: every
	 * committed row, even under a transaction snapshot that predates some
	 * (the triggers will never see those rows arrive), and this
	 * transaction's own.
	 */
	CommandCounterIncrement();
	snap = RegisterSnapshot(GetLatestSnapshot());
	source_open_table(&source, &w, snap);
	changes = fresh_collect_source(&w, &fresh, &source, NULL, &nchanges);
	pfree(changes);
	if (fresh.n >= KEANON_PROGRESS_ROWS)
		ereport(NOTICE,
				(errmsg("keanon: read %lld values of %s; placing them",
						(long long) fresh.n, get_rel_name(relid))));
	first_pid = w.next_pid;
	publish_into_empty(&w);
	if (fresh.n >= KEANON_PROGRESS_ROWS && !w.release_mode)
		ereport(NOTICE,
				(errmsg("keanon: placed the rows of %s in %lld partitions; writing them",
						get_rel_name(relid), (long long) (w.next_pid - first_pid))));
	fresh_write(&w, NULL, &source);
	source_close(&source);
	UnregisterSnapshot(snap);
	if (w.generalize > 0)
		KeanonGeneralizeBuild(&w);
	KeanonSaveWatch(&w);
	KeanonEndWrite(&w);
	return fresh.n;
}

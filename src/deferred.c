/*
 * deferred.c
 *		Deferred watches: writers note what they changed, a flush applies it.
 *
 * A live watch maintains the partitioning inside every writer's statement,
 * under a lock that serializes the writers of the table to their commits.
 * A deferred watch (mode => 'deferred') takes that work out of the
 * writers' way:
 *
 *	- a writer's row trigger (keanon.note_change) only appends the key of
 *	  each row it inserts, deletes or changes in a watched column to the
 *	  watch's pending list (<table>_keanon_pending), a plain heap insert in
 *	  the writer's own transaction: no watch-wide lock, no statement run, so
 *	  writers of one table run side by side as they would unwatched;
 *	- a flush (keanon.flush, the background worker of worker.c, and
 *	  keanon.check first of all) takes the watch's lock, then one snapshot
 *	  S, and in S reads the pending keys, deletes those entries and reads
 *	  the table's rows of those keys.  Every change committed before S has
 *	  its entry visible in S (the same transaction wrote both), and no
 *	  change committed after S or still in progress does, so the rows table
 *	  becomes the table as of S: the publication is always that of a
 *	  committed state of the table, never of uncommitted data.  The change
 *	  itself is applied as one batch, exactly as a live watch applies an
 *	  UPDATE statement (KeanonMaintainDelta): rows whose key went or whose
 *	  value changed leave, rows whose key came or whose value changed
 *	  arrive, in the order their entries were written, and quasi-identifier
 *	  changes are copied.
 *
 * A flush is one transaction: the pending entries it deletes, the rows it
 * writes and the index it changes commit or vanish together (the index
 * repairs itself after an abort, see am_index.c), so after a crash nothing
 * is applied twice and nothing is lost.  Applying a key twice would do no
 * harm anyway: a flush copies the key's current state.
 *
 * Lock order: the watched table (AccessShareLock: a TRUNCATE, which takes
 * the table and then, by its trigger, the keanon lock, waits for a flush or
 * a flush for it, never both for each other), the keanon lock of the
 * watch's index (as every live writer), then the internal tables.  Writers
 * of a deferred watch take only RowExclusiveLock on the pending list.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/queryenvironment.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "keanon_gen.h"
#include "maintain_int.h"

PG_FUNCTION_INFO_V1(keanon_note_change);
PG_FUNCTION_INFO_V1(keanon_flush);
PG_FUNCTION_INFO_V1(keanon_status);

/* the names under which a flush shows its change to KeanonMaintainDelta */
#define KEANON_PENDING_OLD "keanon_pending_old"
#define KEANON_PENDING_NEW "keanon_pending_new"

/* What the row trigger keeps for the rest of its statement */
typedef struct NoteState
{
	Oid			relid;
	Oid			pending_oid;
	int			nkeys;
	AttrNumber	s_attnum;		/* the sensitive column */
	KeanonValueType vt;			/* how the keanon index keeps its values */
	struct KeanonGen *gen;		/* a generalized watch's, or NULL */
	int			nwatched;
	AttrNumber	attnums[FLEXIBLE_ARRAY_MEMBER];
} NoteState;

/* The state of the row trigger for relid, from the watch */
static NoteState *
note_state(FunctionCallInfo fcinfo, Oid relid)
{
	Watch		w;
	NoteState  *st;
	KeanonOwnerScope os;
	bool		loaded = !KeanonWatchCached(relid, &w) || w.generalize > 0;

	/* loading checks the watch's objects, the pending list's shape too */
	if (loaded)
	{
		KeanonOwnerBegin(relid, &os);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "keanon: SPI_connect failed");
		KeanonWatchLoad(relid, &w, false);
	}
	if (!w.deferred)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("keanon.note_change() fires only on tables watched in deferred mode")));
	/* a copy for the statement: what w points to lives in SPI or the cache */
	st = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt,
							offsetof(NoteState, attnums) + sizeof(AttrNumber) * w.nwatched);
	memcpy(st->attnums, w.watched_attnums, sizeof(AttrNumber) * w.nwatched);
	st->relid = relid;
	st->pending_oid = w.pending_oid;
	st->nkeys = list_length(w.keys);
	st->nwatched = w.nwatched;
	st->s_attnum = w.s_attnum;
	KeanonIndexValueType(w.index_oid, &st->vt);
	st->gen = NULL;
	if (w.generalize > 0)
	{
		KeanonGen	g;
		MemoryContext old;

		/* what the row check needs, kept with the statement's trigger */
		KeanonGenLoad(&w, &g);
		old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
		st->gen = palloc(sizeof(KeanonGen));
		KeanonGenCopy(&g, st->gen);
		MemoryContextSwitchTo(old);
	}
	if (loaded)
	{
		SPI_finish();
		KeanonOwnerEnd(&os);
	}
	fcinfo->flinfo->fn_extra = st;
	/* once committed, the transaction makes sure a worker will apply it */
	KeanonWorkerNoteWrite();
	return st;
}

/* Whether columns from..to of the watched ones are alike in both rows */
static bool
columns_alike(const NoteState *st, TupleTableSlot *a, TupleTableSlot *b, int from, int to)
{
	TupleDesc	desc = a->tts_tupleDescriptor;

	for (int i = from; i < to; i++)
	{
		AttrNumber	att = st->attnums[i];
		Form_pg_attribute attr = TupleDescAttr(desc, att - 1);
		bool		an,
					bn;
		Datum		ad = slot_getattr(a, att, &an);
		Datum		bd = slot_getattr(b, att, &bn);

		if (an != bn)
			return false;
		if (!an && !datum_image_eq(ad, bd, attr->attbyval, attr->attlen))
			return false;
	}
	return true;
}

/* Whether an UPDATE's SET list names a watched column */
static bool
watched_written(const NoteState *st, const TriggerData *td)
{
	for (int i = 0; i < st->nwatched; i++)
		if (bms_is_member(st->attnums[i] - FirstLowInvalidHeapAttributeNumber, td->tg_updatedcols))
			return true;
	return false;
}

/*
 * Refuse, in the writer's own statement, a sensitive value that a live
 * watch would refuse (NaN, an infinity, more digits than the keanon index
 * keeps): noted and refused only by the flush, it would stop every flush
 * of the watch.  An unconstrained numeric column's index keeps its scale:
 * a finer value is refused (KeanonRefuseFinerValue says why).
 */
static void
check_publishable(const NoteState *st, TupleTableSlot *slot)
{
	bool		isnull;
	Datum		d = slot_getattr(slot, st->s_attnum, &isnull);

	if (isnull)
		return;
	if (st->vt.grows)
	{
		Numeric		x = DatumGetNumeric(d);

		if (!numeric_is_nan(x) && !numeric_is_inf(x))
			KeanonRefuseFinerValue(&st->vt, KeanonNumericMinScale(d));
	}
	(void) KeanonDatumToNum(&st->vt, d);
}

/*
 * The pending list as keanon made it, checked for every row since the
 * statement's state is kept across rows: the keys' types in order, then
 * keanon_at, no other column (an owner's ALTER between two rows of one
 * statement would have keanon form a tuple of the wrong types)
 */
static void
check_pending_shape(const NoteState *st, Relation pending, TupleDesc table_desc)
{
	TupleDesc	pd = RelationGetDescr(pending);
	bool		ok = pd->natts == st->nkeys + 1;

	for (int i = 0; ok && i < pd->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(pd, i);
		Oid			want = i < st->nkeys ?
			TupleDescAttr(table_desc, st->attnums[i] - 1)->atttypid : TIMESTAMPTZOID;

		ok = !a->attisdropped && a->atttypid == want;
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the layout of %s does not match the watch of %s",
						RelationGetRelationName(pending), get_rel_name(st->relid)),
				 errdetail("It must hold the table's key columns, of their types, then keanon_at, and no other column."),
				 errhint("Undo the change to the internal table, or call keanon.unwatch and watch the table again.")));
}

/* Append the key of a row to the pending list */
static void
note_key(const NoteState *st, Relation pending, TupleTableSlot *slot)
{
	Datum		values[INDEX_MAX_KEYS + 1];
	bool		nulls[INDEX_MAX_KEYS + 1];
	HeapTuple	tup;

	for (int i = 0; i < st->nkeys; i++)
		values[i] = slot_getattr(slot, st->attnums[i], &nulls[i]);
	values[st->nkeys] = TimestampTzGetDatum(GetCurrentStatementStartTimestamp());
	nulls[st->nkeys] = false;
	tup = heap_form_tuple(RelationGetDescr(pending), values, nulls);
	simple_heap_insert(pending, tup);
	heap_freetuple(tup);
}

/*
 * The row trigger of deferred watches: note the key of each row inserted,
 * deleted, or updated in a watched column (both keys when the key changed)
 */
Datum
keanon_note_change(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	NoteState  *st;
	Relation	pending;
	Oid			relid;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("keanon.note_change() must be called as a trigger")));
	if (!TRIGGER_FIRED_AFTER(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
		TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("keanon.note_change() must be fired AFTER INSERT, UPDATE or DELETE, FOR EACH ROW")));
	relid = RelationGetRelid(td->tg_relation);
	st = (NoteState *) fcinfo->flinfo->fn_extra;
	if (st == NULL || st->relid != relid)
		st = note_state(fcinfo, relid);

	/*
	 * A row whose watched columns kept their values is noted all the same
	 * when the UPDATE wrote one of them: a writer who sets a value it may
	 * not read would otherwise learn, by what its statement wrote
	 * (pg_stat_xact_user_tables), whether it had guessed the row's value
	 */
	if (TRIGGER_FIRED_BY_UPDATE(td->tg_event) && !watched_written(st, td) &&
		columns_alike(st, td->tg_trigslot, td->tg_newslot, 0, st->nwatched))
		return PointerGetDatum(NULL);

	if (!TRIGGER_FIRED_BY_DELETE(td->tg_event))
	{
		TupleTableSlot *slot = TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? td->tg_newslot : td->tg_trigslot;

		check_publishable(st, slot);
		if (st->gen != NULL)
			KeanonGenCheckRow(st->gen, slot, st->s_attnum);
	}

	/* no privilege on the list is asked of the writer: keanon writes it */
	pending = table_open(st->pending_oid, RowExclusiveLock);
	check_pending_shape(st, pending, RelationGetDescr(td->tg_relation));
	if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
	{
		note_key(st, pending, td->tg_newslot);
		if (!columns_alike(st, td->tg_trigslot, td->tg_newslot, 0, st->nkeys))
			note_key(st, pending, td->tg_trigslot);
	}
	else
		note_key(st, pending, td->tg_trigslot);
	table_close(pending, NoLock);
	return PointerGetDatum(NULL);
}

/*
 * Apply the committed pending changes of a deferred watch (SPI connected,
 * as the table's owner); returns the pending entries applied, 0 for a watch
 * of another mode
 */
int64
KeanonFlush(Oid relid)
{
	Watch		w;
	Relation	rel;
	Snapshot	snap;
	List	   *cols;
	char	   *table;
	int64		entries;
	int64		nold,
				nnew;
	Tuplestorestate *old_store;
	Tuplestorestate *new_store;
	int			rc;
	bool		isnull;

	KeanonWatchLoad(relid, &w, false);
	if (!w.deferred)
		return 0;
	/*
	 * the table before the watch, as TRUNCATE takes them (see the lock
	 * order), and held open to the end: the owner's code that the flush's
	 * statements run (a policy or trigger on an internal table) cannot then
	 * retype its columns between the rows read and their use
	 */
	rel = table_open(relid, AccessShareLock);
	KeanonIndexLockForWrite(w.index_oid);

	/* one snapshot, taken under the lock, for the list and the table */
	snap = RegisterSnapshot(GetLatestSnapshot());
	rc = SPI_execute_snapshot(KeanonPlan(relid, psprintf("SELECT pg_catalog.count(*) FROM %s", w.pending),
										 0, NULL, false),
							  NULL, NULL, snap, InvalidSnapshot, true, false, 0);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "keanon: could not count the pending changes of %s", get_rel_name(relid));
	entries = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (entries == 0)
	{
		UnregisterSnapshot(snap);
		table_close(rel, NoLock);
		return 0;
	}

	/* the rows after: the table's rows of the pending keys, oldest entry first */
	table = KeanonQualifiedName(relid);
	cols = KeanonUnionNames(KeanonUnionNames(w.keys, w.qis), list_make1(w.s));
	nnew = KeanonMaterialize(relid,
						   psprintf("SELECT %s FROM (SELECT %s, pg_catalog.min(keanon_at) AS keanon_at "
									"FROM %s GROUP BY %s) p JOIN %s t ON %s ORDER BY p.keanon_at",
									KeanonNameList(cols, "t."), KeanonNameList(w.keys, ""), w.pending,
									KeanonNameList(w.keys, ""), table,
									KeanonKeysEqual(&w, "t.", "p.")),
						   snap, KEANON_PENDING_NEW, &new_store);
	/* the rows before, from the rows table; the entries go in the same snapshot */
	/*
	 * (the keys compared by their types' own equality, as everywhere: an IN
	 * would look its = up by name, which pg_catalog lacks for an
	 * extension's type and where citext's is text's)
	 */
	nold = KeanonMaterialize(relid,
						   psprintf("WITH p AS (DELETE FROM %s RETURNING %s) "
									"SELECT %s, r.%s FROM %s r WHERE EXISTS (SELECT 1 FROM p WHERE %s)",
									w.pending, KeanonNameList(w.keys, ""),
									KeanonNameList(KeanonUnionNames(w.keys, w.qis), "r."), w.s, w.rows,
									KeanonKeysEqual(&w, "r.", "p.")),
						   snap, KEANON_PENDING_OLD, &old_store);
	UnregisterSnapshot(snap);

	/*
	 * keys none of which is published yet only arrive (as an INSERT's), and
	 * keys none of which is in the table only leave (as a DELETE's)
	 */
	if (nold == 0 && nnew > 0)
		KeanonMaintainDelta(relid, true, false, false, KEANON_PENDING_OLD, KEANON_PENDING_NEW,
							NULL, NULL, NULL);
	else if (nnew == 0 && nold > 0)
		KeanonMaintainDelta(relid, false, false, true, KEANON_PENDING_OLD, KEANON_PENDING_NEW,
							NULL, NULL, NULL);
	else if (nold > 0 || nnew > 0)
		KeanonMaintainDelta(relid, false, true, false, KEANON_PENDING_OLD, KEANON_PENDING_NEW,
							NULL, NULL, NULL);
	SPI_unregister_relation(KEANON_PENDING_OLD);
	SPI_unregister_relation(KEANON_PENDING_NEW);
	tuplestore_end(old_store);
	tuplestore_end(new_store);
	table_close(rel, NoLock);
	return entries;
}

/* keanon.flush(tab): apply a deferred watch's committed changes now */
Datum
keanon_flush(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot flush a watch during recovery"),
				 errdetail("A standby publishes what its primary flushed.")));
	KeanonWorkerPoke();
	PG_RETURN_INT64(KeanonOwnerAction(relid, KeanonFlush));
}

/*
 * keanon.status(tab): mode, pending changes, the oldest one's time and age,
 * rows published.  Whoever may read the view may ask.
 */
Datum
keanon_status(PG_FUNCTION_ARGS)
{
	bool		shows;
	Oid			relid = PG_GETARG_OID(0);
	KeanonOwnerScope os;
	Watch		w;
	TupleDesc	desc;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	char	   *sql;
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext spi;
	Datum		result;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "keanon: keanon.status must return a record");
	KeanonWatchForReader(relid, &w, "The status of a watched table requires SELECT on its view.");
	KeanonOwnerBegin(relid, &os);
	/* a generalized view that shows nothing yet tells no count either */
	shows = KeanonGenPublishesAny(&w);
	if (w.deferred)
		sql = psprintf("SELECT (SELECT pg_catalog.count(*) FROM (SELECT DISTINCT %s FROM %s) d), "
					   "(SELECT pg_catalog.min(keanon_at) FROM %s), "
					   "(SELECT pg_catalog.sum(n)::pg_catalog.int8 FROM %s)",
					   KeanonNameList(w.keys, ""), w.pending, w.pending, w.parts);
	else
		sql = psprintf("SELECT 0::pg_catalog.int8, NULL::pg_catalog.timestamptz, "
					   "(SELECT pg_catalog.sum(n)::pg_catalog.int8 FROM %s)", w.parts);
	if (SPI_execute(sql, true, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "keanon: could not read the status of %s", get_rel_name(relid));
	values[1] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &nulls[1]);
	/* changes pending with no worker (after a crash, say) find one */
	if (w.deferred && DatumGetInt64(values[1]) > 0)
		KeanonWorkerPoke();
	/* the result outlives SPI */
	spi = MemoryContextSwitchTo(caller);
	values[0] = CStringGetTextDatum(w.deferred ? "deferred" : w.release_mode ? "release" : "live");
	/* the owner may have retyped keanon_at: what a reader gets is a time */
	values[2] = KeanonSpiColumnOrNull(relid, SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
									  TIMESTAMPTZOID, &nulls[2]);
	nulls[3] = nulls[2];
	if (!nulls[2])
		values[3] = DirectFunctionCall2(timestamp_mi,
										TimestampTzGetDatum(GetCurrentTimestamp()), values[2]);
	values[4] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &nulls[4]);
	if (nulls[4] || !shows)
	{
		values[4] = Int64GetDatum(0);
		nulls[4] = false;
	}
	/* nor what waits to be published, which counts the rows written */
	if (!shows)
	{
		values[1] = Int64GetDatum(0);
		nulls[1] = false;
		nulls[2] = nulls[3] = true;
	}
	result = HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
	MemoryContextSwitchTo(spi);
	SPI_finish();
	KeanonOwnerEnd(&os);
	PG_RETURN_DATUM(result);
}

/*
 * write.c
 *		Taking a watch for writing: the writers' lock, the snapshot check
 *		and the watch's counters, for every statement that changes a
 *		publication (maintenance, a flush, a release, republish).
 *
 * Lock order (see keanon_watch.h): the keanon lock of the index first, at
 * the statement's start (KeanonLockWatch, from the BEFORE STATEMENT
 * trigger), then the watch's row in keanon.watches, whose counters are
 * read under it (KeanonBeginWrite) and written back by KeanonSaveWatch.
 * A transaction snapshot older than the last writer's commit cannot see
 * the rows the index already holds: such a writer gets a serialization
 * failure before it changes anything.
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "maintain_int.h"

/*
 * Under a transaction snapshot (REPEATABLE READ, SERIALIZABLE), refuse to go
 * on when another writer committed after the snapshot: this transaction
 * cannot see its rows, while the index already holds its values.  Call with
 * the keanon lock held.
 */
void
KeanonCheckSnapshot(Watch *w)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(w->relid)};
	const char *sel = "SELECT generation FROM keanon.watches WHERE relid = $1::oid::regclass";
	SPIPlanPtr	plan;
	int64		mine,
				latest;
	bool		isnull;

	if (!IsolationUsesXactSnapshot())
		return;
	if (SPI_execute_with_args(sel, 1, types, values, NULL, true, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "keanon: could not read the watch of %s", get_rel_name(w->relid));
	mine = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	plan = SPI_prepare(sel, 1, types);
	if (SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "keanon: could not read the watch of %s", get_rel_name(w->relid));
	latest = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freeplan(plan);
	if (latest != mine)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access to watched table %s",
						get_rel_name(w->relid)),
				 errdetail("Another transaction changed it after this transaction's snapshot was taken."),
				 errhint("Retry the transaction.")));
}

/*
 * Before a statement changes a watched table: take the keanon lock first,
 * so that every writer takes it before any row lock (see the lock order in
 * keanon_watch.h), and refuse a stale snapshot before any row changes.
 */
void
KeanonLockWatch(Oid relid)
{
	Watch		w;

	KeanonWatchLoad(relid, &w, false);
	KeanonIndexLockForWrite(w.index_oid);
	KeanonCheckSnapshot(&w);
}

/*
 * The published partitions' ends, ascending (SPI connected, as the owner),
 * in *bounds; returns how many
 */
int64
KeanonPublishedBoundaries(const Watch *w, const KeanonValueType *vt, KeBoundary **bounds)
{
	int64		n;

	KeanonSpiRun(w->relid, psprintf("SELECT hi, hi_split FROM %s ORDER BY hi, hi_split", w->parts),
				 0, NULL, NULL, NULL, SPI_OK_SELECT);
	n = (int64) SPI_processed;
	*bounds = palloc(sizeof(KeBoundary) * Max(n, 1));
	for (int64 i = 0; i < n; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];

		(*bounds)[i].value = KeanonDatumToNum(vt, KeanonSpiColumn(w->relid, t, SPI_tuptable->tupdesc, 1,
																  vt->typid));
		(*bounds)[i].split = DatumGetBool(KeanonSpiColumn(w->relid, t, SPI_tuptable->tupdesc, 2, BOOLOID));
	}
	SPI_freetuptable(SPI_tuptable);
	return n;
}

/*
 * After the keanon index was laid out from its table (a repair after an
 * abort or a crash, REINDEX, a restore), its partition ends are the
 * report's optimum, while the publication may keep another optimum (the
 * engine keeps boundaries across changes): the index takes the published
 * partitioning back, which must be an optimum of the same rows.
 */
static void
adopt_publication(Watch *w)
{
	KeBoundary *bounds;
	int64		n = KeanonPublishedBoundaries(w, &w->ki->vt, &bounds);

	if (!KeanonIndexAdoptBoundaries(w->ki, bounds, (size_t) n, true))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("keanon watch of %s is inconsistent: its published partitions are not an optimum of its rows",
						get_rel_name(w->relid)),
				 errhint("keanon.republish() rebuilds the publication from the table.")));
	pfree(bounds);
}

/*
 * Take the watch for writing: the keanon lock (normally held already since
 * the statement began), then the watch's row, whose counters are read as
 * the last writer left them; an index laid out afresh takes the published
 * partitioning back (except for keanon.republish, which publishes the
 * index's anew, and release mode, which publishes releases).
 */
void
KeanonBeginWrite(Watch *w, bool open_index)
{
	w->ki = open_index ? KeanonIndexOpen(w->index_oid, true) : NULL;
	KeanonCheckSnapshot(w);
	if (w->ki != NULL)
		KeanonIndexKeepBoundaries(w->ki);
	if (w->ki != NULL && w->ki->flags_built)
	{
		if (w->republishing || w->release_mode)
			KeanonIndexForgetBuilt(w->ki);
		else
			adopt_publication(w);
	}
	/*
	 * Under the lock, the last writer has committed: a READ COMMITTED query
	 * sees its counters, and a transaction snapshot does too once
	 * KeanonCheckSnapshot passed.
	 */
	KeanonWatchCountersRead(w);
}

/* End a write begun by KeanonBeginWrite: close what it opened */
void
KeanonEndWrite(Watch *w)
{
	KeanonDirectClose(w);
	if (w->ki != NULL)
		KeanonIndexClose(w->ki);
	w->ki = NULL;
}

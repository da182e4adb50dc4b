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
 * Take the watch for writing: the keanon lock (normally held already since
 * the statement began), then the watch's row, whose counters are read as
 * the last writer left them.
 */
void
KeanonBeginWrite(Watch *w, bool open_index)
{
	w->ki = open_index ? KeanonIndexOpen(w->index_oid, true) : NULL;
	KeanonCheckSnapshot(w);
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

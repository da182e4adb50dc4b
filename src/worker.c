/*
 * worker.c
 *		The background worker that applies the pending changes of deferred
 *		watches, one per database, started on demand.
 *
 * keanon is not preloaded, so its worker is a dynamic background worker:
 * a transaction that wrote to a deferred watch makes sure, once committed,
 * that one runs in the database, and starts it otherwise; so do
 * keanon.status (when changes are pending) and keanon.flush, for changes
 * left pending by a crash.  A backend that started a worker less than a
 * second ago relies on it rather than start another before it locks.  The worker connects as the bootstrap
 * superuser, not as the writer that started it, and does nothing but
 * flush: every flush runs as the watched table's owner, sandboxed
 * (owner.c), like any other maintenance.
 *
 * The worker flushes each deferred watch of its database, each in a
 * transaction of its own (an error in one is logged and the others go on),
 * and starts again after a quarter of keanon.flush_naptime when a round
 * found changes, or after the whole nap when none did: under a steady
 * stream of writes each round applies what came during the last and the
 * short nap, so the lag stays near two rounds' time.  It exits when it
 * has found nothing to apply for 10 seconds (so that it does not keep DROP
 * DATABASE, or CREATE DATABASE from it as a template, waiting for long),
 * when its database has no deferred watch left (or no keanon), when
 * keanon.worker is turned off, or when asked to (SIGTERM); a crash ends it
 * with the server, and the next writer starts a new one.
 *
 * One worker per database: it holds a session lock that SQL cannot take
 * (an advisory lock tag whose last field no SQL function produces) for
 * its life.  A second worker started in a race finds it taken and exits;
 * a writer that can take it for a moment knows none runs.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "keanon_watch.h"

PGDLLEXPORT void keanon_worker_main(Datum arg);

/* the worker's lock: advisory locks taken by SQL carry 1 or 2 in field 4 */
#define KEANON_WORKER_KEY1 0x6b65616e
#define KEANON_WORKER_KEY2 0x776f726b
#define KEANON_WORKER_KIND 3

/* how long a backend relies on a worker it started, in milliseconds */
#define KEANON_POKE_INTERVAL 1000

/* a worker that found nothing to apply this long exits, in milliseconds */
#define KEANON_WORKER_IDLE_EXIT 10000

/* how long a flush of the worker waits for a lock, and for a broken watch */
#define KEANON_WORKER_LOCK_TIMEOUT "200ms"
#define KEANON_WORKER_MAX_BACKOFF 60000

static int	flush_naptime = 200;
static bool worker_enabled = true;

/* The tag of the lock the worker of a database holds */
static void
worker_locktag(LOCKTAG *tag, Oid dboid)
{
	SET_LOCKTAG_ADVISORY(*tag, dboid, KEANON_WORKER_KEY1, KEANON_WORKER_KEY2,
						 KEANON_WORKER_KIND);
}

/* The worker's settings (from _PG_init) */
void
KeanonWorkerInit(void)
{
	DefineCustomIntVariable("keanon.flush_naptime",
							"Time between the rounds of keanon's background worker.",
							"Each round applies the committed pending changes of every deferred watch of the database.",
							&flush_naptime, 200, 10, 3600 * 1000, PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("keanon.worker",
							 "Whether deferred watches are applied by keanon's background worker.",
							 "When off, no worker starts and a running one exits; keanon.flush applies the pending changes.",
							 &worker_enabled, true, PGC_SIGHUP, 0, NULL, NULL, NULL);
	MarkGUCPrefixReserved("keanon");
}

/*
 * Start a worker in this database unless one runs.  Nothing here raises an
 * error, so that it may run once a transaction has committed.
 */
static void
start_worker(void)
{
	static TimestampTz launched = 0;
	TimestampTz now = GetCurrentTimestamp();
	LOCKTAG		tag;
	BackgroundWorker bgw;

	/*
	 * a worker this backend started less than a second ago is starting or
	 * running (it exits only after 10 idle seconds), and its next round
	 * sees what committed since: do not start one more before it locks
	 */
	if (launched != 0 && !TimestampDifferenceExceeds(launched, now, KEANON_POKE_INTERVAL))
		return;
	worker_locktag(&tag, MyDatabaseId);
	if (LockAcquireExtended(&tag, ExclusiveLock, true, true, false, NULL)
		!= LOCKACQUIRE_OK)
		return;
	LockRelease(&tag, ExclusiveLock, true);

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "keanon");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "keanon_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "keanon worker for database %u", MyDatabaseId);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "keanon worker");
	bgw.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
	bgw.bgw_notify_pid = 0;
	if (RegisterDynamicBackgroundWorker(&bgw, NULL))
		launched = now;
	else
		ereport(LOG,
				(errmsg("keanon could not start its background worker for database %u",
						MyDatabaseId),
				 errhint("Raise max_worker_processes, or apply deferred watches with keanon.flush().")));
}

/*
 * Make sure a worker runs in this database, starting one if none does
 * (keanon.status and keanon.flush ask, so that a list left pending by a
 * crash finds a worker)
 */
void
KeanonWorkerPoke(void)
{
	if (worker_enabled && !RecoveryInProgress())
		start_worker();
}

static bool wrote_deferred = false;

/*
 * After the commit of a transaction that noted changes: a worker that
 * held its lock then will see them (it flushes once more after letting the
 * lock go), and when none held it, one starts
 */
static void
worker_xact_callback(XactEvent event, void *arg)
{
	if (!wrote_deferred)
		return;
	/*
	 * a prepared transaction's notes wait for COMMIT PREPARED, perhaps in
	 * another session: a worker starts now and stays while any prepared
	 * transaction of the database does
	 */
	if ((event == XACT_EVENT_COMMIT || event == XACT_EVENT_PREPARE) && worker_enabled)
		start_worker();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		wrote_deferred = false;
}

/* This transaction noted changes of a deferred watch */
void
KeanonWorkerNoteWrite(void)
{
	static bool registered = false;

	if (!registered)
	{
		RegisterXactCallback(worker_xact_callback, NULL);
		registered = true;
	}
	wrote_deferred = true;
}

/*
 * Whether keanon is installed here, its catalog tables locked: the tables
 * keanon.watches and keanon.releases must be the extension's own.  The
 * worker reads them as the bootstrap superuser, and after a DROP SCHEMA
 * keanon CASCADE, a role that may create schemas could name one keanon
 * and make watches a view calling its function, run with that superuser.
 * The names are looked up again once locked, so that a rename in between
 * is seen.
 */
static bool
keanon_catalog(void)
{
	Oid			ext = get_extension_oid("keanon", true);
	Oid			nsp = get_namespace_oid("keanon", true);
	const char *names[2] = {"watches", "releases"};
	Oid			rels[2];

	if (!OidIsValid(ext) || !OidIsValid(nsp))
		return false;
	for (int i = 0; i < 2; i++)
	{
		rels[i] = get_relname_relid(names[i], nsp);
		if (!OidIsValid(rels[i]) || getExtensionOfObject(RelationRelationId, rels[i]) != ext)
			return false;
		LockRelationOid(rels[i], AccessShareLock);
	}
	nsp = get_namespace_oid("keanon", true);
	for (int i = 0; i < 2; i++)
		if (!OidIsValid(nsp) || get_relname_relid(names[i], nsp) != rels[i])
			return false;
	return true;
}

/*
 * The watches the worker serves, in cxt: the deferred ones (*relids), the
 * release-mode ones whose scheduled release is due (*due), and whether the
 * worker must stay on though idle (*scheduled: a release is scheduled, or
 * a prepared transaction may yet commit a deferred watch's notes);
 * false when keanon is not (or no longer) installed
 */
static bool
deferred_watches(MemoryContext cxt, List **relids, List **due, bool *scheduled)
{
	bool		installed;

	*relids = NIL;
	*due = NIL;
	*scheduled = false;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	installed = keanon_catalog();
	if (installed)
	{
		/*
		 * a release is due when its interval has passed since the last, by
		 * the calendar; an interval of 100,000 years or more never passes
		 * (the last release plus a huge interval overflowed, and the error
		 * ended the worker at every start)
		 */
		if (SPI_execute("SELECT w.relid::pg_catalog.oid, w.mode OPERATOR(pg_catalog.=) 'release', "
						"CASE WHEN w.release_every OPERATOR(pg_catalog.>=) '100000 years'::pg_catalog.interval "
						"THEN false ELSE coalesce((SELECT pg_catalog.max(r.released_at) FROM keanon.releases r "
						"WHERE r.relid OPERATOR(pg_catalog.=) w.relid) "
						"OPERATOR(pg_catalog.+) w.release_every OPERATOR(pg_catalog.<=) pg_catalog.now(), true) END "
						"FROM keanon.watches w WHERE w.mode OPERATOR(pg_catalog.=) 'deferred' "
						"OR w.release_every IS NOT NULL ORDER BY w.watch_no",
						true, 0) != SPI_OK_SELECT)
			elog(ERROR, "keanon: could not read keanon.watches");
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	t = SPI_tuptable->vals[i];
			bool		isnull;
			Oid			relid = DatumGetObjectId(SPI_getbinval(t, SPI_tuptable->tupdesc, 1, &isnull));
			bool		release = DatumGetBool(SPI_getbinval(t, SPI_tuptable->tupdesc, 2, &isnull));
			Datum		is_due = SPI_getbinval(t, SPI_tuptable->tupdesc, 3, &isnull);
			MemoryContext old = MemoryContextSwitchTo(cxt);

			if (!release)
				*relids = lappend_oid(*relids, relid);
			else
			{
				*scheduled = true;
				if (!isnull && DatumGetBool(is_due))
					*due = lappend_oid(*due, relid);
			}
			MemoryContextSwitchTo(old);
		}
		/* a prepared transaction may yet commit notes: stay for it */
		if (*relids != NIL &&
			SPI_execute("SELECT 1 FROM pg_catalog.pg_prepared_xacts "
						"WHERE database OPERATOR(pg_catalog.=) pg_catalog.current_database()",
						true, 1) == SPI_OK_SELECT && SPI_processed > 0)
			*scheduled = true;
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	return installed;
}

/*
 * A watch whose flush failed is passed over for a while: a lock it could
 * not take within KEANON_WORKER_LOCK_TIMEOUT, until the next round; any
 * other error, for a second, doubled at each failure up to a minute, so
 * that one broken watch neither floods the log nor slows the others.
 */
typedef struct Backoff
{
	Oid			relid;			/* hash key */
	TimestampTz next_try;
	int			delay_ms;
} Backoff;

static HTAB *backoffs = NULL;

/* Whether relid's watch waits out a failure now */
static bool
backing_off(Oid relid)
{
	Backoff    *b;

	if (backoffs == NULL)
		return false;
	b = hash_search(backoffs, &relid, HASH_FIND, NULL);
	return b != NULL && GetCurrentTimestamp() < b->next_try;
}

/* Record the outcome of a flush of relid's watch */
static void
note_outcome(Oid relid, bool failed, bool busy)
{
	Backoff    *b;
	bool		found;

	if (backoffs == NULL)
	{
		HASHCTL		ctl;

		if (!failed)
			return;
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(Backoff);
		backoffs = hash_create("keanon worker backoffs", 16, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	if (!failed)
	{
		(void) hash_search(backoffs, &relid, HASH_REMOVE, NULL);
		return;
	}
	b = hash_search(backoffs, &relid, HASH_ENTER, &found);
	if (busy)
		b->delay_ms = flush_naptime;
	else
		b->delay_ms = found ? Min(Max(b->delay_ms, 500) * 2, KEANON_WORKER_MAX_BACKOFF) : 1000;
	b->next_try = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), b->delay_ms);
}

/*
 * Run an owner's action (a flush, a release) on one watch in a transaction
 * of its own; an error is logged, but a lock not taken in time only at
 * DEBUG1 (a reader's or a DDL's, which the next round waits out).
 * Returns what the action returned, or -1.
 */
static int64
run_one(Oid relid, int64 (*action) (Oid relid), const char *what, MemoryContext cxt)
{
	volatile int64 applied = 0;

	if (backing_off(relid))
		return 0;
	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		/* a busy watch is passed over rather than waited for */
		(void) set_config_option("lock_timeout", KEANON_WORKER_LOCK_TIMEOUT,
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
								 true, 0, false);
		pgstat_report_activity(STATE_RUNNING, what);
		/*
		 * The table first (the action's lock order), then the snapshot: an
		 * unwatch, which drops triggers on the table, commits either before
		 * the snapshot, whose catalogs then show no watch, or after the
		 * action.  A watch ended since the list was read is passed over.
		 */
		LockRelationOid(relid, AccessShareLock);
		PushActiveSnapshot(GetTransactionSnapshot());
		if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
			applied = KeanonOwnerAction(relid, action);
		PopActiveSnapshot();
		CommitTransactionCommand();
		note_outcome(relid, false, false);
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		bool		busy;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		busy = edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE;
		if (!busy)
			EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
		if (busy)
			elog(DEBUG1, "keanon: the watch of relation %u is busy: %s", relid, edata->message);
		note_outcome(relid, true, busy);
		applied = -1;
	}
	PG_END_TRY();
	pgstat_report_activity(STATE_IDLE, NULL);
	return applied;
}

/* Main of the worker of one database (the argument is its OID) */
void
keanon_worker_main(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	LOCKTAG		tag;
	MemoryContext round_cxt;
	TimestampTz idle_since;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("keanon worker");
	/* superuser: nothing it runs may be found in a schema others can write */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);

	worker_locktag(&tag, dboid);
	if (LockAcquire(&tag, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		proc_exit(0);

	round_cxt = AllocSetContextCreate(TopMemoryContext, "keanon worker round",
									  ALLOCSET_DEFAULT_SIZES);
	idle_since = GetCurrentTimestamp();
	for (;;)
	{
		List	   *relids;
		List	   *due;
		ListCell   *lc;
		bool		busy = false;
		bool		scheduled;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (!worker_enabled)
			break;
		MemoryContextReset(round_cxt);
		MemoryContextSwitchTo(round_cxt);
		if (!deferred_watches(round_cxt, &relids, &due, &scheduled) ||
			(relids == NIL && !scheduled))
			break;
		foreach(lc, relids)
			busy |= run_one(lfirst_oid(lc), KeanonFlush, "keanon: flushing a deferred watch",
							round_cxt) > 0;
		foreach(lc, due)
			(void) run_one(lfirst_oid(lc), KeanonRelease, "keanon: releasing a watch", round_cxt);
		/* autovacuum must see the dead rows each round leaves behind */
		pgstat_report_stat(false);
		/* a schedule keeps the worker on */
		if (busy || scheduled)
			idle_since = GetCurrentTimestamp();
		else if (TimestampDifferenceExceeds(idle_since, GetCurrentTimestamp(),
											KEANON_WORKER_IDLE_EXIT))
		{
			/*
			 * Idle: let the lock go, then flush once more.  A writer that
			 * committed before it went found it taken and relies on this
			 * round; one that commits after starts a new worker.
			 */
			LockRelease(&tag, ExclusiveLock, true);
			MemoryContextReset(round_cxt);
			if (deferred_watches(round_cxt, &relids, &due, &scheduled))
				foreach(lc, relids)
					(void) run_one(lfirst_oid(lc), KeanonFlush, "keanon: flushing a deferred watch",
								   round_cxt);
			break;
		}
		/*
		 * while changes keep coming, the next round starts soon: a quarter
		 * of the nap lets a round gather enough to be worth its commit
		 */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 busy ? flush_naptime / 4 : flush_naptime, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	proc_exit(0);
}

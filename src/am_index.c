/*
 * am_index.c
 *		Opening a keanon index for the engine: the keanon lock, the
 *		metapage's list of unconfirmed transactions, repair after aborts
 *		and crashes, and applying a batch of changes.
 *
 * Every writer first records its top-level transaction id in the metapage
 * (one small WAL record, flushed before any node page changes) unless it is
 * already there.  Whoever next opens the index looks at that list: ids that
 * committed are dropped, ids of the current transaction stay, and any id
 * that aborted or was cut short by a crash means the pages may hold changes
 * the table does not: the state is rebuilt from the table before anything
 * else happens.  Readers do the same check; they can repair only on a
 * primary.  Ids are looked up under XactTruncationLock, after checking that
 * the oldest listed one is still within the commit log (see keanon_am.h).
 *
 * Subtransactions.  A writer's keanon lock belongs to its top-level
 * transaction (taken under TopTransactionResourceOwner), so that a
 * subtransaction's abort releases it to no one: what the subtransaction
 * wrote is in the pages but not in the table, and only this backend can
 * open the index until its transaction ends.  am_undo.c puts the pages
 * back from their images at the next open (or at COMMIT), or has the state
 * rebuilt.  The metapage thus lists one id per writing transaction,
 * whatever the number of its savepoints or exception blocks.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/resowner.h"

#include "keanon_am.h"
#include "pg_compat.h"

typedef enum FluxState
{
	FLUX_CLEAN,					/* every listed transaction committed */
	FLUX_OURS,					/* some are the current transaction's */
	FLUX_BUSY,					/* a standby: the primary is changing it */
	FLUX_BROKEN					/* one aborted or crashed */
} FluxState;

/*
 * May the current role read every row of relation relid: its owner, or
 * SELECT on it, USAGE on its schema, and no row security policy hiding
 * rows from it?
 * What keanon derives from a table (its partitions, an index's state, a
 * check's findings) is about all of its rows.
 */
bool
KeanonMayReadWhole(Oid relid)
{
	return KeanonRoleMayReadWhole(relid, GetUserId());
}

/* The same, for a given role */
bool
KeanonRoleMayReadWhole(Oid relid, Oid role)
{
	if (keanon_owns_relation(relid, role))
		return true;			/* trusted, row security or not */
	return pg_class_aclcheck(relid, role, ACL_SELECT) == ACLCHECK_OK &&
		keanon_schema_usage(get_rel_namespace(relid), role) &&
		check_enable_rls(relid, role, true) != RLS_ENABLED;
}

/* Readers of a keanon index must be allowed to read its whole table */
void
KeanonCheckReadable(Relation heap)
{
	if (!KeanonMayReadWhole(RelationGetRelid(heap)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s",
						RelationGetRelationName(heap)),
				 errdetail("Reading a keanon index requires SELECT on its table, USAGE on its schema, and no row security policy on it that applies to the reader.")));
}

/*
 * The full id of a transaction id no older than 2^31 ids before the next
 * one: a listed id that is current, in progress or just written.
 */
static FullTransactionId
full_xid_recent(TransactionId xid)
{
	FullTransactionId next = ReadNextFullTransactionId();
	uint32		behind = XidFromFullTransactionId(next) - xid;

	return FullTransactionIdFromU64(U64FromFullTransactionId(next) - behind);
}

/*
 * Recompute flux_oldest from the listed ids, every one of which must be
 * recent (current, in progress or just decided): call after rewriting the
 * list.
 */
void
KeanonFluxSetOldest(KeanonMetaPageData *meta)
{
	FullTransactionId oldest = InvalidFullTransactionId;

	for (uint32 i = 0; i < meta->nflux; i++)
	{
		FullTransactionId f = full_xid_recent(meta->flux[i]);

		if (!FullTransactionIdIsValid(oldest) || FullTransactionIdPrecedes(f, oldest))
			oldest = f;
	}
	meta->flux_oldest = oldest;
}

/*
 * Is some listed id older than the commit log reaches, so that its fate
 * can no longer be asked?  The caller holds XactTruncationLock.
 */
bool
KeanonFluxBeyondClog(const KeanonMetaPageData *meta)
{
	FullTransactionId next = ReadNextFullTransactionId();
	TransactionId oldest_clog = keanon_oldest_clog_xid();
	uint32		behind = XidFromFullTransactionId(next) - oldest_clog;
	FullTransactionId clog_full;

	Assert(LWLockHeldByMe(XactTruncationLock));
	if (meta->nflux == 0)
		return false;
	/* entries of an older build carry no full id: treat them as gone */
	if (!FullTransactionIdIsValid(meta->flux_oldest))
		return true;
	clog_full = FullTransactionIdFromU64(U64FromFullTransactionId(next) - behind);
	return FullTransactionIdPrecedes(meta->flux_oldest, clog_full);
}

/* Classify the metapage's transaction list; hold XactTruncationLock */
static FluxState
flux_state_locked(const KeanonMetaPageData *meta)
{
	FluxState	st = FLUX_CLEAN;

	if (KeanonFluxBeyondClog(meta))
		return FLUX_BROKEN;
	for (uint32 i = 0; i < meta->nflux; i++)
	{
		TransactionId xid = meta->flux[i];

		if (TransactionIdIsCurrentTransactionId(xid))
			st = FLUX_OURS;
		else if (TransactionIdDidCommit(xid))
			continue;
		else if (TransactionIdIsInProgress(xid))
		{
			/* only a standby sees this: on a primary the keanon lock waits */
			if (!RecoveryInProgress())
				elog(ERROR, "keanon index changed by transaction %u still in progress", xid);
			st = FLUX_BUSY;
		}
		else
			return FLUX_BROKEN;
	}
	return st;
}

/* Classify the metapage's transaction list */
static FluxState
flux_state(const KeanonMetaPageData *meta)
{
	FluxState	st;

	/* as pg_xact_status does: the commit log cannot shrink meanwhile */
	LWLockAcquire(XactTruncationLock, LW_SHARED);
	st = flux_state_locked(meta);
	LWLockRelease(XactTruncationLock);
	return st;
}

/* Is the index's state trustworthy as it stands? */
static bool
state_ok(const KeanonMetaPageData *meta)
{
	return !meta->needs_rebuild && flux_state(meta) != FLUX_BROKEN;
}

/* Read and check the metapage into *out; *lsn gets its LSN */
void
KeanonIndexReadMeta(Relation index, KeanonMetaPageData *out, XLogRecPtr *lsn)
{
	Buffer		buf = ReadBuffer(index, KEANON_METAPAGE_BLKNO);
	Page		page;
	KeanonMetaPageData *meta;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	meta = KeanonPageGetMeta(page);
	if (KeanonPageGetOpaque(page)->page_id != KEANON_PAGE_ID ||
		meta->magic != KEANON_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a keanon index",
						RelationGetRelationName(index))));
	if (meta->version != KEANON_LAYOUT_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("keanon index \"%s\" has layout version %u, this build reads %u",
						RelationGetRelationName(index), meta->version,
						KEANON_LAYOUT_VERSION),
				 errhint("REINDEX the index.")));
	memcpy(out, meta, sizeof(KeanonMetaPageData));
	*lsn = PageGetLSN(page);
	UnlockReleaseBuffer(buf);
}

/* A standby reader met a change of the primary: it must try again */
static void
changing_on_primary(Relation index)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("keanon index \"%s\" is being changed on the primary",
					RelationGetRelationName(index)),
			 errhint("Retry once the primary's transaction has finished.")));
}

/*
 * Record the current (sub)transaction in the metapage, dropping committed
 * ones, and make that durable before any node page changes.
 */
static void
register_writer(Relation index, bool rebuilding)
{
	TransactionId xid = GetTopTransactionId();
	GenericXLogState *state;
	Buffer		buf;
	Page		page;
	KeanonMetaPageData *meta;
	uint32		n = 0;
	bool		present = false;
	XLogRecPtr	lsn;

	buf = ReadBuffer(index, KEANON_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	meta = KeanonPageGetMeta(BufferGetPage(buf));
	for (uint32 i = 0; i < meta->nflux; i++)
		if (TransactionIdEquals(meta->flux[i], xid))
			present = true;
	if (present && !rebuilding && !meta->needs_rebuild)
	{
		UnlockReleaseBuffer(buf);
		return;
	}

	state = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(state, buf, 0);
	meta = KeanonPageGetMeta(page);
	/*
	 * Opening the index settled every listed id but the current
	 * transaction's: the others committed (a broken list was rebuilt), and
	 * are dropped without asking the commit log again.
	 */
	for (uint32 i = 0; i < meta->nflux; i++)
	{
		TransactionId x = meta->flux[i];

		if (TransactionIdIsCurrentTransactionId(x))
			meta->flux[n++] = x;
	}
	if (!present)
	{
		if (n >= KEANON_MAX_FLUX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many unfinished transactions are listed in keanon index \"%s\"",
							RelationGetRelationName(index)),
					 errhint("REINDEX the index.")));
		meta->flux[n++] = xid;
	}
	meta->nflux = n;
	KeanonFluxSetOldest(meta);
	if (rebuilding)
		meta->needs_rebuild = true;
	lsn = GenericXLogFinish(state);
	/* pages written in place, without images: no subtransaction can undo them */
	if (rebuilding)
		KeanonUndoGiveUp(RelationGetRelid(index));
	UnlockReleaseBuffer(buf);

	/*
	 * A rebuild writes node pages without WAL next: this record must be on
	 * disk before any of them can be.  An ordinary change logs its pages
	 * after this record, so WAL order alone protects it.
	 */
	if (rebuilding && !XLogRecPtrIsInvalid(lsn))
		XLogFlush(lsn);
}

/* The value type a metapage records, for index `index` */
void
KeanonMetaValueType(const KeanonMetaPageData *meta, Oid index, KeanonValueType *vt)
{
	vt->typid = meta->typid;
	vt->kind = (KeKind) meta->kind;
	vt->scale = meta->scale;
	vt->grows = meta->scale_grows;
	vt->display_scale = meta->display_scale;
	vt->index = index;
}

/*
 * The value type of a keanon index, from its metapage, without the keanon
 * lock: bound aggregates need no more and must not wait for writers.
 */
void
KeanonIndexValueType(Oid indexoid, KeanonValueType *vt)
{
	Relation	index = index_open(indexoid, AccessShareLock);
	KeanonMetaPageData *meta = palloc(sizeof(KeanonMetaPageData));
	XLogRecPtr	lsn;

	if (index->rd_indam == NULL || index->rd_indam->ambuild != keanonbuild)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a keanon index", RelationGetRelationName(index))));
	KeanonIndexReadMeta(index, meta, &lsn);
	KeanonMetaValueType(meta, indexoid, vt);
	pfree(meta);
	index_close(index, AccessShareLock);
}

/* What a wait for keanon's lock adds to an error raised while waiting */
typedef struct LockWait
{
	Oid			indexoid;
	const char *index;
	const char *table;
	bool		writer;
} LockWait;

static void
lock_wait_context(void *arg)
{
	LockWait   *lw = arg;

	if (lw->writer)
		errcontext("waiting for the writers' lock of keanon index \"%s\" on table \"%s\" (object %u of class %u)",
				   lw->index, lw->table, lw->indexoid, RelationRelationId);
	else
		errcontext("waiting for the readers' lock of keanon index \"%s\" on table \"%s\" (object %u of class %u)",
				   lw->index, lw->table, lw->indexoid, RelationRelationId);
}

/*
 * Take keanon's lock of an index, at once if it is free; otherwise wait
 * with a context line naming it, since PostgreSQL's own reports (a
 * deadlock, a lock timeout) call it only "object N of class 1259"
 */
static void
lock_or_wait(Oid indexoid, LOCKMODE mode)
{
	ErrorContextCallback cb;
	LockWait	lw;
	char	   *index;
	Oid			heapoid;

	if (ConditionalLockDatabaseObject(RelationRelationId, indexoid, KEANON_LOCK_SUBID, mode))
		return;
	index = get_rel_name(indexoid);
	heapoid = IndexGetRelation(indexoid, true);
	lw.indexoid = indexoid;
	lw.index = index ? index : "?";
	lw.table = OidIsValid(heapoid) && get_rel_name(heapoid) ? get_rel_name(heapoid) : "?";
	lw.writer = mode == ExclusiveLock;
	cb.callback = lock_wait_context;
	cb.arg = &lw;
	cb.previous = error_context_stack;
	error_context_stack = &cb;
	LockDatabaseObject(RelationRelationId, indexoid, KEANON_LOCK_SUBID, mode);
	error_context_stack = cb.previous;
}

/*
 * Take the keanon lock of an index; the writer's (ExclusiveLock) is held
 * by the top-level transaction, whatever subtransaction takes it
 */
/*
 * Whether this transaction holds a writers' lock (taken by a live or
 * release watch's writers, and by a flush, check or repair of any watch).
 * It may not be prepared:
 * the lock would be held until COMMIT PREPARED, however long that comes,
 * and every other writer of the table, keanon.release and keanon.check
 * would wait for it (a writer with INSERT alone could so stop them all).
 */
static bool holds_writers_lock = false;

static void
refuse_prepare(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PRE_PREPARE && holds_writers_lock)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot PREPARE a transaction that holds the writers' lock of a table keanon watches"),
				 errdetail("It wrote to a live or release watch, or flushed, checked or repaired a watch: the lock would be held until COMMIT PREPARED, and every other writer would wait for it."),
				 errhint("Watch the table in deferred mode to write it in prepared transactions.")));
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		holds_writers_lock = false;
}

static void
keanon_lock(Oid indexoid, LOCKMODE mode)
{
	ResourceOwner save = CurrentResourceOwner;
	static bool registered = false;

	if (mode != ExclusiveLock)
	{
		lock_or_wait(indexoid, mode);
		return;
	}
	if (!registered)
	{
		RegisterXactCallback(refuse_prepare, NULL);
		registered = true;
	}
	CurrentResourceOwner = TopTransactionResourceOwner;
	PG_TRY();
	{
		lock_or_wait(indexoid, mode);
		/* held to the end of the transaction, whatever subtransaction took it */
		holds_writers_lock = true;
	}
	PG_FINALLY();
	{
		CurrentResourceOwner = save;
	}
	PG_END_TRY();
}

/* Take a keanon index's writer lock, to the end of the transaction */
void
KeanonIndexLockForWrite(Oid indexoid)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot change a keanon index during recovery")));
	keanon_lock(indexoid, ExclusiveLock);
}

static void
keanon_unlock(Oid indexoid, LOCKMODE mode)
{
	UnlockDatabaseObject(RelationRelationId, indexoid, KEANON_LOCK_SUBID, mode);
}

/* Attach a store and the engine to an opened index */
static void
attach_engine(KeanonIndex *ki, KeanonStoreMode mode)
{
	KeStatus	st;

	ki->mode = mode;
	ki->store = KeanonStoreCreate(ki->index, mode);
	if (mode == KEANON_STORE_WRITE)
		KeanonStoreOnOverwrite(ki->store, KeanonUndoSave);
	if (ki->store->meta(ki->store, false)->magic == 0)
	{
		/* an empty index from ambuildempty: create the tree on first write */
		if (mode == KEANON_STORE_READ)
		{
			ki->engine = NULL;
			return;
		}
		st = ke_create(&ki->engine, ki->store, ki->vt.kind, ki->k, ki->e);
	}
	else
		st = ke_open(&ki->engine, ki->store);
	KeanonCheckStatus(st, ki->index);
	ke_keep_boundaries(ki->engine, ki->keep_boundaries);
}

/*
 * Open a keanon index by OID, for reading or for changing, taking the
 * keanon lock and repairing the state first if an aborted or crashed
 * transaction left it untrustworthy.
 */
KeanonIndex *
KeanonIndexOpen(Oid indexoid, bool for_write)
{
	return KeanonIndexOpenFor(indexoid, for_write, GetUserId());
}

/*
 * The keanon indexes this backend has open for writing, with the
 * subtransaction that opened each.  A write of a watch from inside its own
 * maintenance (an owner's trigger on an internal table that writes the
 * watched table) would open the index a second time and install pages the
 * outer write then overwrote with its older copies: the nested change was
 * lost without a word.  It is refused instead.
 */
typedef struct OpenWrite
{
	Oid			indexoid;
	SubTransactionId subid;
} OpenWrite;

static OpenWrite open_writes[8];
static int	n_open_writes = 0;

/* Forget the writes opened in a subtransaction that aborted, or at the end */
static void
open_writes_subxact(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	int			kept = 0;

	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	for (int i = 0; i < n_open_writes; i++)
		if (open_writes[i].subid < mySubid)
			open_writes[kept++] = open_writes[i];
	n_open_writes = kept;
}

static void
open_writes_xact(XactEvent event, void *arg)
{
	n_open_writes = 0;
}

static void
note_open_write(Relation index)
{
	static bool registered = false;
	Oid			indexoid = RelationGetRelid(index);

	if (!registered)
	{
		RegisterXactCallback(open_writes_xact, NULL);
		RegisterSubXactCallback(open_writes_subxact, NULL);
		registered = true;
	}
	for (int i = 0; i < n_open_writes; i++)
		if (open_writes[i].indexoid == indexoid)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("keanon index \"%s\" is being written by this session already",
							RelationGetRelationName(index)),
					 errdetail("A write of a watched table from inside its own maintenance (a trigger on a keanon table, say) is refused.")));
	if (n_open_writes == lengthof(open_writes))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many keanon indexes are being written at once by this session")));
	open_writes[n_open_writes].indexoid = indexoid;
	open_writes[n_open_writes].subid = GetCurrentSubTransactionId();
	n_open_writes++;
}

static void
forget_open_write(Oid indexoid)
{
	for (int i = n_open_writes - 1; i >= 0; i--)
		if (open_writes[i].indexoid == indexoid)
		{
			memmove(&open_writes[i], &open_writes[i + 1], sizeof(OpenWrite) * (n_open_writes - i - 1));
			n_open_writes--;
			return;
		}
}

/*
 * The same, for role reader: a read that finds the state to repair repairs
 * it only for the table's owner (a repair holds the writers' lock to the
 * end of the transaction, which no mere reader may)
 */
KeanonIndex *
KeanonIndexOpenFor(Oid indexoid, bool for_write, Oid reader)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "keanon index",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	KeanonIndex *ki = palloc0(sizeof(KeanonIndex));
	KeanonMetaPageData *meta = palloc(sizeof(KeanonMetaPageData));
	LOCKMODE	lockmode = for_write ? ExclusiveLock : ShareLock;
	Oid			heapoid;

	/*
	 * A standby can only take weak object locks, and its readers cannot keep
	 * replay out anyway: they check the metapage instead (below, and again
	 * at close).
	 */
	if (RecoveryInProgress())
	{
		if (for_write)
			ereport(ERROR,
					(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
					 errmsg("cannot change a keanon index during recovery")));
		lockmode = AccessShareLock;
	}

	ki->cxt = cxt;
	KeanonEngineAllocator();

	/*
	 * The table before its index, as VACUUM FULL, CLUSTER and REINDEX TABLE
	 * lock them: a writer holding the index while it waited for the table
	 * deadlocked with them.
	 */
	heapoid = IndexGetRelation(indexoid, true);
	if (OidIsValid(heapoid))
		ki->heap = table_open(heapoid, AccessShareLock);
	ki->index = index_open(indexoid, for_write ? RowExclusiveLock : AccessShareLock);
	if (ki->index->rd_rel->relkind != RELKIND_INDEX ||
		ki->index->rd_indam == NULL ||
		ki->index->rd_indam->ambuild != keanonbuild ||
		ki->index->rd_index->indrelid != heapoid)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a keanon index",
						RelationGetRelationName(ki->index))));
	KeanonCheckReadable(ki->heap);
	if (for_write)
		note_open_write(ki->index);

	keanon_lock(indexoid, lockmode);
	ki->lockmode = lockmode;
	if (for_write)
		KeanonUndoNoteWriter(indexoid);
	KeanonIndexReadMeta(ki->index, meta, &ki->meta_lsn);
	if (RecoveryInProgress() && flux_state(meta) == FLUX_BUSY)
		changing_on_primary(ki->index);
	if (!state_ok(meta) || KeanonUndoPending(indexoid))
	{
		if (!for_write)
		{
			if (RecoveryInProgress())
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("keanon index \"%s\" is waiting to be repaired on the primary",
								RelationGetRelationName(ki->index)),
						 errdetail("A transaction that changed it did not commit.")));
			/*
			 * repair needs the writers' lock, kept to the end of the
			 * transaction: a reader who does not own the table may not take
			 * it (a transaction left open would stop every writer)
			 */
			if (!keanon_owns_relation(RelationGetRelid(ki->heap), reader))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("keanon index \"%s\" must be repaired before it is read",
								RelationGetRelationName(ki->index)),
						 errdetail("A transaction that changed it did not commit."),
						 errhint("The table's next write repairs it, as does keanon.check called by its owner.")));
			/* repair needs the writer's lock, kept to the end of the transaction */
			keanon_unlock(indexoid, ShareLock);
			keanon_lock(indexoid, ExclusiveLock);
			ki->lockmode = ExclusiveLock;
			KeanonIndexReadMeta(ki->index, meta, &ki->meta_lsn);
		}
		/* what an aborted subtransaction wrote: undone from its page images */
		if (state_ok(meta) && KeanonUndoRestore(ki->index))
			KeanonIndexReadMeta(ki->index, meta, &ki->meta_lsn);
		if (!state_ok(meta) || KeanonUndoPending(indexoid))
		{
			KeanonMetaValueType(meta, indexoid, &ki->vt);
			ki->k = meta->k;
			ki->e = meta->e;
			register_writer(ki->index, true);
			KeanonRebuild(ki);
			KeanonSetRebuildMark(ki->index, false);
			KeanonUndoForget(indexoid);
			meta->flags_built = true;	/* as KeanonRebuild marked it */
		}
	}
	KeanonMetaValueType(meta, indexoid, &ki->vt);
	ki->k = meta->k;
	ki->e = meta->e;
	ki->flags_built = meta->flags_built;
	if (for_write)
		register_writer(ki->index, false);
	attach_engine(ki, for_write ? KEANON_STORE_WRITE : KEANON_STORE_READ);
	MemoryContextSwitchTo(old);
	return ki;
}

/*
 * Close: a writer's pages are logged and installed, a reader's released.
 * A writer keeps the keanon lock to the end of its transaction.
 */
void
KeanonIndexClose(KeanonIndex *ki)
{
	Oid			indexoid = RelationGetRelid(ki->index);

	if (ki->engine)
		ke_close(ki->engine);
	if (ki->mode == KEANON_STORE_WRITE)
	{
		KeanonStoreFinish(ki->store);
		forget_open_write(indexoid);
	}
	else
	{
		KeanonStoreRelease(ki->store);
		if (RecoveryInProgress())
		{
			KeanonMetaPageData *meta = palloc(sizeof(KeanonMetaPageData));
			XLogRecPtr	lsn;

			/* replay changed the pages under this reader: its view may be torn */
			KeanonIndexReadMeta(ki->index, meta, &lsn);
			if (lsn != ki->meta_lsn)
				changing_on_primary(ki->index);
		}
		if (ki->lockmode != ExclusiveLock)
			keanon_unlock(indexoid, ki->lockmode);
	}
	table_close(ki->heap, AccessShareLock);
	index_close(ki->index, NoLock);
	MemoryContextDelete(ki->cxt);
}

/* Collect the runs of an engine into arrays (a KeRunFn) */
bool
KeanonCollectRunArrays(const KeRunInfo *r, void *arg)
{
	KeanonRunArrays *ra = arg;

	if (ra->n == ra->cap)
	{
		ra->cap = ra->cap * 2 + 64;
		ra->vals = ra->vals ? repalloc_huge(ra->vals, sizeof(KeNum) * ra->cap)
			: MemoryContextAllocHuge(CurrentMemoryContext, sizeof(KeNum) * ra->cap);
		ra->counts = ra->counts ? repalloc_huge(ra->counts, sizeof(int64) * ra->cap)
			: MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * ra->cap);
	}
	ra->vals[ra->n] = r->value;
	ra->counts[ra->n] = r->count;
	ra->n++;
	return true;
}

/*
 * Replace the state of an index opened for writing by the given runs (see
 * KeanonWriteRuns), at value type vt and extent e, as a rebuild writes
 * them: the rebuild mark durable first, the pages in place without WAL,
 * then logged whole, the mark cleared.  The write store's private copies
 * are dropped: the runs replace them.
 */
static void
rewrite_state(KeanonIndex *ki, const KeanonValueType *vt, KeNum e,
			  const KeNum *vals, const int64 *counts, size_t n)
{
	if (ki->engine != NULL)
		ke_close(ki->engine);
	ki->engine = NULL;
	KeanonStoreRelease(ki->store);
	register_writer(ki->index, true);
	KeanonWriteRuns(ki->index, vt, ki->k, e, vals, counts, n);
	KeanonSetRebuildMark(ki->index, false);
	ki->vt = *vt;
	ki->e = e;
	attach_engine(ki, KEANON_STORE_WRITE);
}

/* The ends of an engine's partitions (a KePartitionFn) */
typedef struct BoundaryList
{
	KeBoundary *b;
	int			n;
	int			cap;
} BoundaryList;

static bool
collect_boundary(const KePartition *p, void *arg)
{
	BoundaryList *bl = arg;

	if (bl->n == bl->cap)
	{
		bl->cap = bl->cap * 2 + 16;
		bl->b = bl->b ? repalloc_huge(bl->b, sizeof(KeBoundary) * bl->cap)
			: palloc(sizeof(KeBoundary) * bl->cap);
	}
	bl->b[bl->n].value = p->hi;
	bl->b[bl->n].split = p->hi_split;
	bl->n++;
	return true;
}

/*
 * Let an unconstrained numeric index opened for writing keep at least
 * `scale` decimal places.  Values with more decimal places than the index
 * keeps are refused on conversion, and converting never changes the
 * scale; a caller about to convert a change's values asks for the most
 * decimal places among them first (KeanonNumericMinScale), before it
 * converts any value, since numbers converted earlier would be in the old
 * units.
 *
 * The state is laid out again from its own runs (not from the table, which
 * may be mid-statement), every value multiplied by the power of ten, and e
 * read again from its option at the new scale: in this transaction, as a
 * repair is, so the rebuild mark is durable before the pages are written
 * without WAL and logged whole, and a crash or abort in between leaves a
 * state the next user rebuilds from the table at the new scale.  Indexes of
 * other types, or with a declared or given scale, are left as they are.
 */
void
KeanonIndexFitScale(KeanonIndex *ki, int scale)
{
	MemoryContext old;
	KeanonRunArrays ra = {0};
	BoundaryList bl = {0};
	KeanonValueType vt = ki->vt;
	const char *name = RelationGetRelationName(ki->index);
	ke_int128	factor = 1;
	ke_int128	limit = 1;
	KeNum		e;

	if (ki->vt.typid != NUMERICOID || !ki->vt.grows || scale <= ki->vt.scale)
		return;
	Assert(ki->mode == KEANON_STORE_WRITE);
	if (scale > KEANON_MAX_SCALE)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("values with %d decimal places are too precise for keanon index \"%s\"",
						scale, name),
				 errdetail("A keanon index keeps at most %d decimal places.", KEANON_MAX_SCALE),
				 errhint("Round the values.")));
	old = MemoryContextSwitchTo(ki->cxt);
	for (int i = ki->vt.scale; i < scale; i++)
		factor *= 10;
	for (int i = 0; i < 34; i++)
		limit *= 10;
	if (ki->engine != NULL)
		ke_foreach_run(ki->engine, KeanonCollectRunArrays, &ra);
	for (size_t i = 0; i < ra.n; i++)
	{
		ke_int128	v = ra.vals[i].i;

		if ((v < 0 ? -v : v) >= limit / factor)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("keanon index \"%s\" cannot keep %d decimal places", name, scale),
					 errdetail("Its values would take more than 34 significant digits.")));
		ra.vals[i].i = v * factor;
	}
	vt.scale = scale;
	e = KeanonENum(&vt, KeanonOptionsE((KeanonOptions *) ki->index->rd_options));
	if (ki->engine != NULL)
		ke_foreach_partition(ki->engine, collect_boundary, &bl);
	for (int i = 0; i < bl.n; i++)
		bl.b[i].value.i *= factor;

	/* the private copies of this change are in the runs */
	rewrite_state(ki, &vt, e, ra.vals, ra.counts, ra.n);
	/* the same partitioning, at the new scale: still an optimum */
	if (!KeanonIndexAdoptBoundaries(ki, bl.b, (size_t) bl.n, true))
		elog(ERROR, "keanon index \"%s\" lost its partitioning at scale %d", name, scale);
	MemoryContextSwitchTo(old);
}

/* Apply a batch of value changes to an index opened for writing */
void
KeanonIndexApply(KeanonIndex *ki, const KeChange *changes, size_t n)
{
	MemoryContext old = MemoryContextSwitchTo(ki->cxt);

	Assert(ki->mode == KEANON_STORE_WRITE);
	KeanonCheckStatus(ke_apply(ki->engine, changes, n), ki->index);
	MemoryContextSwitchTo(old);
}

/*
 * Lay sorted values into an index opened for writing whose tree is empty.
 * The pages are written as a rebuild writes them (rewrite_state).  Through the write store every new page would take a private copy until
 * the end, the whole index's size in memory (about 120 bytes a row).
 */
void
KeanonIndexBuildSorted(KeanonIndex *ki, const KeNum *sorted, size_t n)
{
	MemoryContext old = MemoryContextSwitchTo(ki->cxt);

	Assert(ki->mode == KEANON_STORE_WRITE);
	Assert(ke_nrows(ki->engine) == 0);
	rewrite_state(ki, &ki->vt, ki->e, sorted, NULL, n);
	MemoryContextSwitchTo(old);
}

/*
 * Whether the partitioning ending at bounds (ascending; see
 * ke_adopt_boundaries) is an optimum of the index's runs; when write (the
 * index open for writing), the runs are flagged to it and the metapage's
 * flags_built mark cleared.
 */
bool
KeanonIndexAdoptBoundaries(KeanonIndex *ki, const KeBoundary *bounds, size_t n, bool write)
{
	MemoryContext old = MemoryContextSwitchTo(ki->cxt);
	bool		optimal;

	Assert(!write || ki->mode == KEANON_STORE_WRITE);
	if (ki->engine == NULL)
		optimal = n == 0;
	else
		KeanonCheckStatus(ke_adopt_boundaries(ki->engine, bounds, n, write, &optimal), ki->index);
	if (optimal && write)
		KeanonIndexForgetBuilt(ki);
	MemoryContextSwitchTo(old);
	return optimal;
}

/*
 * Clear the flags_built mark of an index open for writing whose flags are
 * about to be published as they are (keanon.republish)
 */
void
KeanonIndexForgetBuilt(KeanonIndex *ki)
{
	Assert(ki->mode == KEANON_STORE_WRITE);
	if (!ki->flags_built)
		return;
	KeanonStoreMetaPage(ki->store)->flags_built = false;
	ki->flags_built = false;
}

/*
 * Let changes keep the previous optimum's boundaries where they can
 * (ke_keep_boundaries), as a watch's index does: its publication holds
 * them.  An index of no watch keeps the report's optimum, which a REINDEX
 * or a restore lays out again.
 */
void
KeanonIndexKeepBoundaries(KeanonIndex *ki)
{
	ki->keep_boundaries = true;
	if (ki->engine != NULL)
		ke_keep_boundaries(ki->engine, true);
}

/*
 * am_vacuum.c
 *		VACUUM for keanon indexes.
 *
 * A keanon index holds values and counts, never row pointers, so there is
 * nothing for bulk delete to remove: dead rows already left the state when
 * the change that killed them was applied.  Cleanup reports free pages to
 * the free space map and, if no writer holds the keanon lock, settles the
 * metapage's list of unconfirmed transactions: committed ones are forgotten,
 * and aborted or crashed ones are replaced by the needs_rebuild mark, so
 * that the next user still rebuilds the state but no 32-bit id outlives
 * the commit log (it is truncated once every table of the database has
 * been vacuumed past it, this index's table included).  One generic WAL
 * record, only when the list changes.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/transam.h"
#include "catalog/pg_class.h"
#include "commands/vacuum.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "utils/rel.h"

#include "keanon_am.h"

/* ambulkdelete: nothing points at heap rows */
IndexBulkDeleteResult *
keanonbulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				 IndexBulkDeleteCallback callback, void *callback_state)
{
	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));
	return stats;
}

/*
 * Settle the metapage's list of transactions: drop those known to have
 * committed, and turn those known to be undone into the rebuild mark.
 */
static void
settle_flux(Relation index)
{
	Buffer		buf;
	KeanonMetaPageData *meta;
	bool		keep[KEANON_MAX_FLUX];
	bool		any_gone = false;
	bool		any_undone = false;

	if (!ConditionalLockDatabaseObject(RelationRelationId, RelationGetRelid(index),
									   KEANON_LOCK_SUBID, ExclusiveLock))
		return;
	buf = ReadBuffer(index, KEANON_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	meta = KeanonPageGetMeta(BufferGetPage(buf));
	/* an index of another layout is left alone until it is rebuilt */
	if (KeanonMetaPageIsCurrent(BufferGetPage(buf)) && meta->nflux > 0)
	{
		bool		beyond;

		LWLockAcquire(XactTruncationLock, LW_SHARED);
		beyond = KeanonFluxBeyondClog(meta);
		for (uint32 i = 0; i < meta->nflux; i++)
		{
			TransactionId xid = meta->flux[i];

			/* a prepared transaction holds the keanon lock: none is running */
			keep[i] = !beyond && TransactionIdIsInProgress(xid);
			if (keep[i])
				continue;
			any_gone = true;
			if (beyond || !TransactionIdDidCommit(xid))
				any_undone = true;
		}
		LWLockRelease(XactTruncationLock);
	}
	if (any_gone)
	{
		GenericXLogState *state = GenericXLogStart(index);
		Page		page = GenericXLogRegisterBuffer(state, buf, 0);
		uint32		n = 0;

		meta = KeanonPageGetMeta(page);
		for (uint32 i = 0; i < meta->nflux; i++)
			if (keep[i])
				meta->flux[n++] = meta->flux[i];
		meta->nflux = n;
		KeanonFluxSetOldest(meta);
		if (any_undone)
			meta->needs_rebuild = true;
		GenericXLogFinish(state);
	}
	UnlockReleaseBuffer(buf);
	UnlockDatabaseObject(RelationRelationId, RelationGetRelid(index),
						 KEANON_LOCK_SUBID, ExclusiveLock);
}

/* amvacuumcleanup: free pages to the FSM, page and value counts */
IndexBulkDeleteResult *
keanonvacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	Relation	index = info->index;
	BlockNumber npages;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));

	npages = RelationGetNumberOfBlocks(index);
	for (BlockNumber blkno = KEANON_METAPAGE_BLKNO; blkno < npages; blkno++)
	{
		Buffer		buf;
		Page		page;

		vacuum_delay_point();
		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL,
								 info->strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (blkno == KEANON_METAPAGE_BLKNO)
		{
			if (KeanonMetaPageIsCurrent(page))
				stats->num_index_tuples = KeanonPageGetMeta(page)->engine.nrows;
		}
		else if (PageIsNew(page) ||
				 (KeanonPageGetOpaque(page)->flags & KEANON_PAGE_FREE) != 0)
		{
			RecordFreeIndexPage(index, blkno);
			stats->pages_free++;
		}
		UnlockReleaseBuffer(buf);
	}
	IndexFreeSpaceMapVacuum(index);
	if (!RecoveryInProgress())
		settle_flux(index);
	stats->num_pages = npages;
	stats->estimated_count = false;
	return stats;
}

/*
 * am_vacuum.c
 *		VACUUM for keanon indexes.
 *
 * A keanon index holds values and counts, never row pointers, so there is
 * nothing for bulk delete to remove: dead rows already left the state when
 * the change that killed them was applied.  Cleanup reports free pages to
 * the free space map and, if no writer holds the keanon lock, forgets
 * transactions in the metapage that are known to have committed, so none
 * outlives the commit log.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/transam.h"
#include "catalog/pg_class.h"
#include "commands/vacuum.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
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

/* Drop committed transactions from the metapage's list */
static void
forget_committed(Relation index)
{
	Buffer		buf;
	KeanonMetaPageData *meta;
	bool		any = false;

	if (!ConditionalLockDatabaseObject(RelationRelationId, RelationGetRelid(index),
									   KEANON_LOCK_SUBID, ExclusiveLock))
		return;
	buf = ReadBuffer(index, KEANON_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	meta = KeanonPageGetMeta(BufferGetPage(buf));
	/* an index of another layout is left alone until it is rebuilt */
	if (KeanonMetaPageIsCurrent(BufferGetPage(buf)))
	{
		for (uint32 i = 0; i < meta->nflux; i++)
			if (TransactionIdDidCommit(meta->flux[i]))
				any = true;
	}
	if (any)
	{
		GenericXLogState *state = GenericXLogStart(index);
		Page		page = GenericXLogRegisterBuffer(state, buf, 0);
		uint32		n = 0;

		meta = KeanonPageGetMeta(page);
		for (uint32 i = 0; i < meta->nflux; i++)
			if (!TransactionIdDidCommit(meta->flux[i]))
				meta->flux[n++] = meta->flux[i];
		meta->nflux = n;
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
		forget_committed(index);
	stats->num_pages = npages;
	stats->estimated_count = false;
	return stats;
}

/*
 * am_vacuum.c
 *		VACUUM for keanon indexes.
 *
 * A keanon index holds values and counts, never row pointers, so there is
 * nothing for bulk delete to remove: dead rows already left the state when
 * the change that killed them was applied.  Cleanup reports free pages to
 * the free space map (reading a window of a large index, see below) and,
 * if no writer holds the keanon lock, settles the
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
#include "common/pg_prng.h"
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

/*
 * How many node pages one cleanup reads: all of a small index, a sixteenth
 * of a larger one (at least CLEANUP_MIN_WINDOW pages)
 */
#define CLEANUP_SMALL_INDEX		128
#define CLEANUP_MIN_WINDOW		128

/* Record one page as free in the free space map if it is */
static void
record_if_free(IndexVacuumInfo *info, BlockNumber blkno, IndexBulkDeleteResult *stats)
{
	Buffer		buf;
	Page		page;

	vacuum_delay_point();
	buf = ReadBufferExtended(info->index, MAIN_FORKNUM, blkno, RBM_NORMAL, info->strategy);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (PageIsNew(page) || (KeanonPageGetOpaque(page)->flags & KEANON_PAGE_FREE) != 0)
	{
		RecordFreeIndexPage(info->index, blkno);
		stats->pages_free++;
	}
	UnlockReleaseBuffer(buf);
}

/*
 * amvacuumcleanup: free pages to the FSM, page and value counts.
 *
 * A page the engine frees goes to the free space map when its change is
 * installed, so the map misses one only where an update of it was lost (a
 * crash before the map's page was written).  Cleanup finds such pages
 * again without reading the whole index each time: a small index whole,
 * a large one a window of a sixteenth from a random block, so that a page
 * left out is found within a few VACUUMs.  Nothing here depends on the
 * values in the pages.
 */
IndexBulkDeleteResult *
keanonvacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	Relation	index = info->index;
	BlockNumber npages;
	BlockNumber nnodes;
	BlockNumber window;
	BlockNumber start = 0;
	Buffer		buf;
	Page		page;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));

	npages = RelationGetNumberOfBlocks(index);
	buf = ReadBufferExtended(index, MAIN_FORKNUM, KEANON_METAPAGE_BLKNO, RBM_NORMAL, info->strategy);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (KeanonMetaPageIsCurrent(page))
		stats->num_index_tuples = KeanonPageGetMeta(page)->engine.nrows;
	UnlockReleaseBuffer(buf);

	nnodes = npages > KEANON_METAPAGE_BLKNO + 1 ? npages - KEANON_METAPAGE_BLKNO - 1 : 0;
	window = nnodes <= CLEANUP_SMALL_INDEX ? nnodes : Max(nnodes / 16, CLEANUP_MIN_WINDOW);
	if (window < nnodes)
		start = (BlockNumber) (pg_prng_uint64(&pg_global_prng_state) % nnodes);
	for (BlockNumber i = 0; i < window; i++)
		record_if_free(info, KEANON_METAPAGE_BLKNO + 1 + (start + i) % nnodes, stats);
	IndexFreeSpaceMapVacuum(index);
	if (!RecoveryInProgress())
		settle_flux(index);
	stats->num_pages = npages;
	stats->estimated_count = false;
	return stats;
}

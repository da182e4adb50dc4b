/*
 * am_undo.c
 *		Undoing what an aborted subtransaction wrote into a keanon index,
 *		from images of the pages it changed.
 *
 * The pages of a keanon index are not transactional.  A transaction that
 * aborts is caught by the metapage's list of writers (am_index.c) and the
 * state rebuilt from the table.  A subtransaction that aborts (ROLLBACK TO
 * SAVEPOINT, an exception block, a failed statement inside one) leaves its
 * transaction running: its writes are in the pages, not in the table, and
 * its transaction still holds the keanon lock (it belongs to the top-level
 * transaction), so no other backend can see them.  This backend puts them
 * right before anyone reads the index again:
 *
 *	- while a subtransaction other than the top level writes, every page it
 *	  is the first to change gets its image as it was before, kept in the
 *	  transaction's memory (KeanonUndoSave, which the index's write store
 *	  calls before it overwrites a page);
 *	- when it commits, its images go to its parent, which keeps its own for
 *	  pages it changed first; at the top level they are dropped;
 *	- when it aborts, it is only marked (nothing is allocated while
 *	  aborting); the next open of the index in this transaction, or the
 *	  COMMIT or PREPARE if none comes, writes the images back, with generic
 *	  WAL as full images, and a block the subtransaction added becomes a
 *	  free page again.
 *
 * Aborted subtransactions pending together are nested (any open in between
 * would have undone the first), so for each block the image of the
 * earliest one, the outermost, is the state to go back to.  The images are
 * bounded by work_mem per transaction; past it, or when pages were written
 * in place without images (a rebuild or a rescale inside the
 * subtransaction, KeanonUndoGiveUp), the index is rebuilt from the table
 * instead, as after an aborted transaction, or marked for its next opener
 * at COMMIT.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/relation.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "keanon_am.h"

/* The image of a page before a subtransaction first changed it */
typedef struct UndoPage
{
	BlockNumber blkno;
	bool		isnew;			/* the subtransaction added the block */
	char	   *image;			/* BLCKSZ bytes, NULL when isnew */
} UndoPage;

/* An index a subtransaction of this backend wrote */
typedef struct SubWriter
{
	Oid			indexoid;		/* InvalidOid once settled */
	SubTransactionId subid;		/* the writer, or its committed ancestor */
	bool		aborted;		/* it aborted: the pages need undoing */
	bool		no_images;		/* some change has no image: rebuild */
	List	   *images;			/* UndoPage, in TopTransactionContext */
} SubWriter;

/* this transaction's writers, in TopTransactionContext; NIL between */
static List *sub_writers = NIL;
static Size undo_bytes = 0;
static bool callbacks_registered = false;

/* The live entry of an index for a subtransaction, or NULL */
static SubWriter *
entry_of(Oid indexoid, SubTransactionId subid)
{
	ListCell   *lc;

	foreach(lc, sub_writers)
	{
		SubWriter  *sw = lfirst(lc);

		if (sw->indexoid == indexoid && sw->subid == subid && !sw->aborted)
			return sw;
	}
	return NULL;
}

/* Drop an entry's images */
static void
drop_images(SubWriter *sw)
{
	ListCell   *lc;

	foreach(lc, sw->images)
	{
		UndoPage   *up = lfirst(lc);

		if (up->image != NULL)
		{
			pfree(up->image);
			undo_bytes -= BLCKSZ;
		}
		pfree(up);
	}
	list_free(sw->images);
	sw->images = NIL;
}

/* Does an entry hold an image of blkno? */
static bool
has_image(const SubWriter *sw, BlockNumber blkno)
{
	ListCell   *lc;

	foreach(lc, sw->images)
		if (((UndoPage *) lfirst(lc))->blkno == blkno)
			return true;
	return false;
}

/* A committed subtransaction's images pass to its parent's entry */
static void
merge_into_parent(SubWriter *child, SubTransactionId parentSubid)
{
	SubWriter  *parent = entry_of(child->indexoid, parentSubid);
	ListCell   *lc;

	if (parentSubid == TopSubTransactionId)
	{
		/* the top level's writes are the metapage's to catch, not ours */
		drop_images(child);
		child->indexoid = InvalidOid;
		return;
	}
	if (parent == NULL)
	{
		child->subid = parentSubid;
		return;
	}
	parent->no_images |= child->no_images;
	foreach(lc, child->images)
	{
		UndoPage   *up = lfirst(lc);

		if (!parent->no_images && !has_image(parent, up->blkno))
		{
			MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

			parent->images = lappend(parent->images, up);
			MemoryContextSwitchTo(old);
			continue;
		}
		if (up->image != NULL)
		{
			pfree(up->image);
			undo_bytes -= BLCKSZ;
		}
		pfree(up);
	}
	list_free(child->images);
	child->images = NIL;
	child->indexoid = InvalidOid;
}

/* At a subtransaction's end, pass its images to its parent or mark them */
static void
undo_subxact(SubXactEvent event, SubTransactionId mySubid,
			 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB)
		return;
	foreach(lc, sub_writers)
	{
		SubWriter  *sw = lfirst(lc);

		if (sw->subid != mySubid || sw->aborted || !OidIsValid(sw->indexoid))
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
			merge_into_parent(sw, parentSubid);
		else
			sw->aborted = true;
	}
}

/*
 * Before COMMIT or PREPARE, an index left written by an aborted
 * subtransaction is undone from its images, or marked for a rebuild;
 * after the end, everything is forgotten
 */
static void
undo_xact(XactEvent event, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			foreach(lc, sub_writers)
			{
				SubWriter  *sw = lfirst(lc);
				Relation	index;

				if (!sw->aborted || !OidIsValid(sw->indexoid))
					continue;
				index = try_relation_open(sw->indexoid, RowExclusiveLock);
				if (index == NULL)
				{
					KeanonUndoForget(sw->indexoid);		/* dropped since */
					continue;
				}
				if (!KeanonUndoRestore(index))
				{
					KeanonSetRebuildMark(index, true);
					KeanonUndoForget(RelationGetRelid(index));
				}
				relation_close(index, NoLock);
			}
			break;
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			break;
		default:
			/* the memory went with the transaction */
			sub_writers = NIL;
			undo_bytes = 0;
			break;
	}
}

/*
 * Remember that the current subtransaction (not the top level, whose
 * writes the metapage's list catches) writes the index; settled entries
 * are dropped first, so the list stays as long as the open nesting
 */
void
KeanonUndoNoteWriter(Oid indexoid)
{
	SubTransactionId subid = GetCurrentSubTransactionId();
	MemoryContext old;
	SubWriter  *sw;
	ListCell   *lc;

	if (!callbacks_registered)
	{
		RegisterXactCallback(undo_xact, NULL);
		RegisterSubXactCallback(undo_subxact, NULL);
		callbacks_registered = true;
	}
	if (subid == TopSubTransactionId || entry_of(indexoid, subid) != NULL)
		return;
	foreach(lc, sub_writers)
	{
		if (!OidIsValid(((SubWriter *) lfirst(lc))->indexoid))
		{
			pfree(lfirst(lc));
			sub_writers = foreach_delete_current(sub_writers, lc);
		}
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	sw = palloc0(sizeof(SubWriter));
	sw->indexoid = indexoid;
	sw->subid = subid;
	sub_writers = lappend(sub_writers, sw);
	MemoryContextSwitchTo(old);
}

/*
 * Keep the image of a page the current subtransaction is about to change
 * (page: its content now), unless it has one already or is the top level
 */
void
KeanonUndoSave(Relation index, BlockNumber blkno, Page page, bool isnew)
{
	SubTransactionId subid = GetCurrentSubTransactionId();
	SubWriter  *sw;
	UndoPage   *up;
	MemoryContext old;

	if (subid == TopSubTransactionId)
		return;
	sw = entry_of(RelationGetRelid(index), subid);
	if (sw == NULL || sw->no_images || has_image(sw, blkno))
		return;
	if (!isnew && undo_bytes + BLCKSZ > (Size) work_mem * 1024)
	{
		/* past work_mem: this subtransaction's abort rebuilds instead */
		drop_images(sw);
		sw->no_images = true;
		return;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	up = palloc(sizeof(UndoPage));
	up->blkno = blkno;
	up->isnew = isnew;
	up->image = NULL;
	if (!isnew)
	{
		up->image = palloc(BLCKSZ);
		memcpy(up->image, page, BLCKSZ);
		undo_bytes += BLCKSZ;
	}
	sw->images = lappend(sw->images, up);
	MemoryContextSwitchTo(old);
}

/*
 * Pages were written in place, without images (a rebuild or a rescale):
 * no subtransaction now writing the index can undo its changes from images
 */
void
KeanonUndoGiveUp(Oid indexoid)
{
	ListCell   *lc;

	foreach(lc, sub_writers)
	{
		SubWriter  *sw = lfirst(lc);

		if (sw->indexoid == indexoid && !sw->aborted)
		{
			drop_images(sw);
			sw->no_images = true;
		}
	}
}

/* Did an aborted subtransaction of this transaction write the index? */
bool
KeanonUndoPending(Oid indexoid)
{
	ListCell   *lc;

	foreach(lc, sub_writers)
	{
		SubWriter  *sw = lfirst(lc);

		if (sw->indexoid == indexoid && sw->aborted)
			return true;
	}
	return false;
}

/* The index was rebuilt, or is gone: what aborted subtransactions wrote is too */
void
KeanonUndoForget(Oid indexoid)
{
	ListCell   *lc;

	foreach(lc, sub_writers)
	{
		SubWriter  *sw = lfirst(lc);

		if (sw->indexoid == indexoid && sw->aborted)
		{
			drop_images(sw);
			sw->indexoid = InvalidOid;
		}
	}
}

/* The pages to write back: each block's image from the earliest entry */
static List *
pages_to_restore(Oid indexoid, bool *complete)
{
	List	   *out = NIL;
	ListCell   *lc;

	*complete = true;
	foreach(lc, sub_writers)
	{
		SubWriter  *sw = lfirst(lc);
		ListCell   *lp;

		if (sw->indexoid != indexoid || !sw->aborted)
			continue;
		if (sw->no_images)
			*complete = false;
		foreach(lp, sw->images)
		{
			UndoPage   *up = lfirst(lp);
			ListCell   *lo;
			bool		seen = false;

			foreach(lo, out)
				if (((UndoPage *) lfirst(lo))->blkno == up->blkno)
					seen = true;
			if (!seen)
				out = lappend(out, up);
		}
	}
	return out;
}

/*
 * Write back the images of what aborted subtransactions changed in the
 * index (under its keanon lock, held by this transaction); false when
 * some change has no image, and the state must be rebuilt instead
 */
bool
KeanonUndoRestore(Relation index)
{
	bool		complete;
	List	   *pages = pages_to_restore(RelationGetRelid(index), &complete);
	List	   *freed = NIL;
	int			n = list_length(pages);
	ListCell   *lc;

	if (!KeanonUndoPending(RelationGetRelid(index)) || !complete)
		return false;
	for (int i = 0; i < n; i += MAX_GENERIC_XLOG_PAGES)
	{
		GenericXLogState *state = GenericXLogStart(index);
		Buffer		bufs[MAX_GENERIC_XLOG_PAGES];
		int			m = Min(MAX_GENERIC_XLOG_PAGES, n - i);

		for (int j = 0; j < m; j++)
		{
			UndoPage   *up = list_nth(pages, i + j);
			Page		page;

			bufs[j] = ReadBuffer(index, up->blkno);
			LockBuffer(bufs[j], BUFFER_LOCK_EXCLUSIVE);
			page = GenericXLogRegisterBuffer(state, bufs[j], GENERIC_XLOG_FULL_IMAGE);
			if (up->isnew)
			{
				KeanonInitFreePage(page);
				freed = lappend_int(freed, (int) up->blkno);
			}
			else
			{
				memcpy(page, up->image, BLCKSZ);
				/* a free page taken from the free space map goes back to it */
				if (KeanonPageGetOpaque(page)->flags & KEANON_PAGE_FREE)
					freed = lappend_int(freed, (int) up->blkno);
			}
		}
		GenericXLogFinish(state);
		for (int j = 0; j < m; j++)
			UnlockReleaseBuffer(bufs[j]);
	}
	foreach(lc, freed)
		RecordFreeIndexPage(index, (BlockNumber) lfirst_int(lc));
	list_free(freed);
	list_free(pages);
	KeanonUndoForget(RelationGetRelid(index));
	return true;
}

/*
 * am_store.c
 *		The engine's page home: engine nodes in index pages.
 *
 * One node per block, in the page's contents area; node ids are block
 * numbers.  Three modes (see keanon_am.h for the lock and WAL plan):
 *
 *	READ	each page is copied under a share lock, then released: the
 *			caller runs SQL between its reads, and nothing that SQL runs
 *			(a function with an exception block releases every lightweight
 *			lock; one that writes the watch would wait for the page's lock
 *			on itself) can meet a lock held here.  The cache keeps the most
 *			recently used copies and frees the rest.
 *	WRITE	the first write to a page copies it into private memory (and
 *			drops the pin) and the engine works on the copy;
 *			KeanonStoreFinish() reads each buffer again, logs the copies with
 *			generic WAL, four pages a record, and installs them.  Copies past
 *			work_mem are installed the same way before the finish, the least
 *			recently used first, never one of the last KEEP_RECENT pages used
 *			(the engine keeps a node pointer for at most 16 store calls):
 *			readers wait for the writer's keanon lock, a standby's readers
 *			see the writer in the metapage, and an aborted writer is undone
 *			or rebuilt whether its pages went in early or not.  Pages only
 *			read stay pinned (the most recent few) and are not locked: the
 *			keanon lock keeps every other writer out, and readers only read.
 *	BUILD	pages are built in private copies, each written into its
 *			buffer, in place, as the cache lets it go (the metapage last),
 *			so that no lock is held between the engine's calls and a cancel
 *			is heard; new nodes are taken sequentially from block 1; no WAL
 *			(the caller logs the whole relation once).  Blocks left over at
 *			the end are
 *			marked free.  Only ke_create() and ke_build_sorted() run in this
 *			mode, and they never hold more than two node pointers.
 *
 * Freed pages are flagged KEANON_PAGE_FREE and reported to the free space
 * map when the store finishes; alloc() takes pages from the free space map
 * and re-checks the flag, since the map is only a hint.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "keanon_am.h"

#define READ_CACHE_PAGES	64
#define KEEP_RECENT			64	/* pages too recently used to install early */

typedef struct PageEntry
{
	BlockNumber blkno;			/* hash key */
	Buffer		buf;
	char	   *copy;			/* READ: the page as read; BUILD: as written */
	bool		isnew;			/* extended by this store: log a full image */
	char	   *shadow;			/* WRITE: private copy, once written */
	uint64		stamp;			/* last use */
} PageEntry;

typedef struct PageStore
{
	KeStore		pub;			/* must be first */
	Relation	index;
	KeanonStoreMode mode;
	MemoryContext cxt;
	HTAB	   *pages;
	int			nclean;			/* cached entries without a shadow */
	int			nshadow;		/* WRITE: private copies held */
	int			max_shadows;	/* WRITE: copies past work_mem go in early */
	uint64		clock;
	BlockNumber next_block;		/* BUILD: next block to hand out */
	List	   *freed;			/* blocks to report to the FSM */
	KeanonPageSaver saver;		/* WRITE: told of each page before it is overwritten */
	char	   *meta_copy;		/* BUILD: the metapage, installed at the finish */
} PageStore;

static void evict_clean(PageStore *ps);

/*
 * BUILD: write a page as built into its buffer, in place and without WAL,
 * without reading it (a crash may have torn it in an earlier rebuild)
 */
static void
install_build_copy(PageStore *ps, PageEntry *e)
{
	Buffer		buf = ReadBufferExtended(ps->index, MAIN_FORKNUM, e->blkno,
										 RBM_ZERO_AND_LOCK, NULL);

	memcpy(BufferGetPage(buf), e->copy, BLCKSZ);
	MarkBufferDirty(buf);
	UnlockReleaseBuffer(buf);
}

/* Release one cached page (never a dirty copy): BUILD writes it first */
static void
drop_entry(PageStore *ps, PageEntry *e)
{
	if (ps->mode == KEANON_STORE_BUILD)
		install_build_copy(ps, e);
	else if (BufferIsValid(e->buf))
		ReleaseBuffer(e->buf);
	if (e->copy != NULL)
		pfree(e->copy);
	if (e->shadow == NULL)
		ps->nclean--;
	hash_search(ps->pages, &e->blkno, HASH_REMOVE, NULL);
}

/* Keep at most READ_CACHE_PAGES pages without private copies */
static void
evict_clean(PageStore *ps)
{
	while (ps->nclean > READ_CACHE_PAGES)
	{
		HASH_SEQ_STATUS seq;
		PageEntry  *e,
				   *victim = NULL;

		hash_seq_init(&seq, ps->pages);
		while ((e = hash_seq_search(&seq)) != NULL)
		{
			if (e->shadow == NULL && (victim == NULL || e->stamp < victim->stamp))
				victim = e;
		}
		if (victim == NULL)
			return;
		drop_entry(ps, victim);
	}
}

/* Initialize an empty node page image */
static void
init_node_page(Page page)
{
	KeanonPageOpaque op;

	PageInit(page, BLCKSZ, sizeof(KeanonPageOpaqueData));
	op = KeanonPageGetOpaque(page);
	op->flags = KEANON_PAGE_NODE;
	op->page_id = KEANON_PAGE_ID;
	/* the node fills the page: nothing between pd_lower and pd_upper */
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + KEANON_NODE_SIZE;
}

/*
 * Have a WRITE store tell saver of each page it is about to overwrite, as
 * the page is then (am_undo.c keeps a subtransaction's images that way)
 */
void
KeanonStoreOnOverwrite(KeStore *store, KeanonPageSaver saver)
{
	((PageStore *) store)->saver = saver;
}

/* Set or clear the metapage's rebuild mark */
void
KeanonSetRebuildMark(Relation index, bool needs_rebuild)
{
	GenericXLogState *state;
	Buffer		buf;
	Page		page;

	buf = ReadBuffer(index, KEANON_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(state, buf, 0);
	KeanonPageGetMeta(page)->needs_rebuild = needs_rebuild;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
}

/* Initialize a free page image, as a store marks a page it no longer uses */
void
KeanonInitFreePage(Page page)
{
	init_node_page(page);
	KeanonPageGetOpaque(page)->flags = KEANON_PAGE_FREE;
}

/*
 * The cache entry of a block, reading it in if needed.  A BUILD store
 * about to overwrite the block whole (overwrite) takes a zeroed copy
 * without reading it: a rebuild must not trip over a page a crash tore
 * while an earlier rebuild wrote it in place, without WAL.
 */
static PageEntry *
get_entry(PageStore *ps, BlockNumber blkno, bool overwrite)
{
	PageEntry  *e;
	bool		found;

	e = hash_search(ps->pages, &blkno, HASH_ENTER, &found);
	if (!found)
	{
		e->buf = InvalidBuffer;
		e->shadow = NULL;
		e->isnew = false;
		e->copy = NULL;
		if (overwrite && ps->mode == KEANON_STORE_BUILD)
		{
			e->copy = MemoryContextAllocZero(ps->cxt, BLCKSZ);
			ps->nclean++;
			e->stamp = ++ps->clock;
			return e;
		}
		e->buf = ReadBuffer(ps->index, blkno);
		if (ps->mode != KEANON_STORE_WRITE)
		{
			/*
			 * a copy, and no lock nor pin kept: the caller runs SQL between
			 * its reads, and the code SQL runs (an owner's cast, a
			 * function with an exception block) may release every
			 * lightweight lock or wait for this page's; a build held its
			 * pages locked, deaf to cancels, until it ended.  The watch's
			 * own lock keeps writers out meanwhile (a standby's reader
			 * checks the metapage at the end).
			 */
			LockBuffer(e->buf, BUFFER_LOCK_SHARE);
			e->copy = MemoryContextAlloc(ps->cxt, BLCKSZ);
			memcpy(e->copy, BufferGetPage(e->buf), BLCKSZ);
			UnlockReleaseBuffer(e->buf);
			e->buf = InvalidBuffer;
		}
		ps->nclean++;
	}
	e->stamp = ++ps->clock;
	return e;
}

/*
 * Log and install the private copies of n blocks (ascending), four pages a
 * WAL record, and forget them
 */
static void
install_shadows(PageStore *ps, const BlockNumber *blks, int n)
{
	for (int i = 0; i < n; i += MAX_GENERIC_XLOG_PAGES)
	{
		GenericXLogState *state;
		int			m = Min(MAX_GENERIC_XLOG_PAGES, n - i);
		PageEntry  *e;

		state = GenericXLogStart(ps->index);
		for (int j = 0; j < m; j++)
		{
			Page		page;

			e = hash_search(ps->pages, &blks[i + j], HASH_FIND, NULL);
			e->buf = ReadBuffer(ps->index, e->blkno);
			LockBuffer(e->buf, BUFFER_LOCK_EXCLUSIVE);
			if (ps->saver != NULL)
				ps->saver(ps->index, e->blkno, BufferGetPage(e->buf), e->isnew);
			page = GenericXLogRegisterBuffer(state, e->buf,
											 e->isnew ? GENERIC_XLOG_FULL_IMAGE : 0);
			memcpy(page, e->shadow, BLCKSZ);
		}
		GenericXLogFinish(state);
		for (int j = 0; j < m; j++)
		{
			e = hash_search(ps->pages, &blks[i + j], HASH_FIND, NULL);
			UnlockReleaseBuffer(e->buf);
			pfree(e->shadow);
			ps->nshadow--;
			hash_search(ps->pages, &blks[i + j], HASH_REMOVE, NULL);
		}
	}
}

static int
blkno_cmp(const void *a, const void *b)
{
	BlockNumber x = *(const BlockNumber *) a;
	BlockNumber y = *(const BlockNumber *) b;

	return (x > y) - (x < y);
}

typedef struct StampedBlock
{
	uint64		stamp;
	BlockNumber blkno;
} StampedBlock;

static int
stamp_cmp(const void *a, const void *b)
{
	uint64		x = ((const StampedBlock *) a)->stamp;
	uint64		y = ((const StampedBlock *) b)->stamp;

	return (x > y) - (x < y);
}

/*
 * WRITE: past work_mem, install the least recently used copies (not the
 * metapage, not the last KEEP_RECENT pages used) until half the budget is
 * left
 */
static void
install_early(PageStore *ps)
{
	HASH_SEQ_STATUS seq;
	PageEntry  *e;
	StampedBlock *old;
	BlockNumber *blks;
	int			nold = 0;
	int			n;

	old = palloc(sizeof(StampedBlock) * ps->nshadow);
	hash_seq_init(&seq, ps->pages);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (e->shadow != NULL && e->blkno != KEANON_METAPAGE_BLKNO &&
			e->stamp + KEEP_RECENT <= ps->clock)
		{
			old[nold].stamp = e->stamp;
			old[nold++].blkno = e->blkno;
		}
	}
	qsort(old, nold, sizeof(StampedBlock), stamp_cmp);
	n = Min(nold, ps->nshadow - ps->max_shadows / 2);
	blks = palloc(sizeof(BlockNumber) * Max(n, 1));
	for (int i = 0; i < n; i++)
		blks[i] = old[i].blkno;
	qsort(blks, n, sizeof(BlockNumber), blkno_cmp);
	install_shadows(ps, blks, n);
	pfree(blks);
	pfree(old);
}

/* A private copy of the page an entry holds, for writing */
static Page
make_shadow(PageStore *ps, PageEntry *e)
{
	/*
	 * The copy needs no pin: the buffer is read again when the change is
	 * installed, so a large batch never holds many buffers.
	 */
	e->shadow = MemoryContextAlloc(ps->cxt, BLCKSZ);
	memcpy(e->shadow, BufferGetPage(e->buf), BLCKSZ);
	ReleaseBuffer(e->buf);
	e->buf = InvalidBuffer;
	ps->nclean--;
	ps->nshadow++;
	if (ps->nshadow > ps->max_shadows)
		install_early(ps);
	return (Page) e->shadow;
}

/*
 * BUILD: the metapage the build writes, a private copy.  Held locked
 * through the build (its first use comes before the partitioning is
 * computed), it kept every reader of the metapage (bound aggregates,
 * VACUUM, the checkpointer) waiting, past any cancel, and the build
 * itself deaf to one, for as long as a large table's build took.
 */
static Page
build_meta(PageStore *ps)
{
	if (ps->meta_copy == NULL)
	{
		Buffer		buf = ReadBuffer(ps->index, KEANON_METAPAGE_BLKNO);

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		ps->meta_copy = MemoryContextAlloc(ps->cxt, BLCKSZ);
		memcpy(ps->meta_copy, BufferGetPage(buf), BLCKSZ);
		UnlockReleaseBuffer(buf);
	}
	return (Page) ps->meta_copy;
}

/* BUILD: install the metapage, last, once every node page is in place */
static void
install_build_meta(PageStore *ps)
{
	Buffer		buf;

	if (ps->meta_copy == NULL)
		return;
	buf = ReadBuffer(ps->index, KEANON_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	memcpy(BufferGetPage(buf), ps->meta_copy, BLCKSZ);
	MarkBufferDirty(buf);
	UnlockReleaseBuffer(buf);
	pfree(ps->meta_copy);
	ps->meta_copy = NULL;
}

/* The page image the engine should see for a block */
static Page
page_for(PageStore *ps, BlockNumber blkno, bool for_write)
{
	PageEntry  *e;
	Page		page;

	if (ps->mode == KEANON_STORE_BUILD && blkno == KEANON_METAPAGE_BLKNO)
		return build_meta(ps);
	e = get_entry(ps, blkno, false);

	if (e->shadow != NULL)
		return (Page) e->shadow;
	if (for_write && ps->mode == KEANON_STORE_WRITE)
		return make_shadow(ps, e);
	if (for_write && ps->mode == KEANON_STORE_READ)
		elog(ERROR, "keanon index \"%s\" opened read-only was written",
			 RelationGetRelationName(ps->index));
	page = e->copy != NULL ? (Page) e->copy : BufferGetPage(e->buf);
	evict_clean(ps);
	return page;
}

/* Check that a block the engine names is one of its nodes */
static Page
node_page(PageStore *ps, KeNodeId id, bool for_write)
{
	Page		page;

	if (id == KEANON_METAPAGE_BLKNO || id == InvalidBlockNumber)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("keanon index \"%s\" refers to invalid block %u",
						RelationGetRelationName(ps->index), id)));
	page = page_for(ps, id, for_write);
	if (KeanonPageGetOpaque(page)->page_id != KEANON_PAGE_ID ||
		(KeanonPageGetOpaque(page)->flags & KEANON_PAGE_NODE) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("block %u of keanon index \"%s\" is not a node page",
						id, RelationGetRelationName(ps->index))));
	return page;
}

static const void *
store_read(KeStore *store, KeNodeId id)
{
	return PageGetContents(node_page((PageStore *) store, id, false));
}

static void *
store_write(KeStore *store, KeNodeId id)
{
	return PageGetContents(node_page((PageStore *) store, id, true));
}

/* A fresh node page: a free one, the next one in BUILD mode, or a new block */
static KeNodeId
store_alloc(KeStore *store)
{
	PageStore  *ps = (PageStore *) store;
	PageEntry  *e;
	BlockNumber blkno;
	Buffer		buf;
	Page		page;

	if (ps->mode == KEANON_STORE_BUILD)
	{
		blkno = ps->next_block++;
		if (blkno < RelationGetNumberOfBlocks(ps->index))
		{
			e = get_entry(ps, blkno, true);
			init_node_page((Page) e->copy);
			return blkno;
		}
		/* the new block stays zero until its copy is written in */
		LockRelationForExtension(ps->index, ExclusiveLock);
		buf = ReadBuffer(ps->index, P_NEW);
		UnlockRelationForExtension(ps->index, ExclusiveLock);
		blkno = BufferGetBlockNumber(buf);
		ReleaseBuffer(buf);
		Assert(blkno + 1 == ps->next_block);
		e = hash_search(ps->pages, &blkno, HASH_ENTER, NULL);
		e->buf = InvalidBuffer;
		e->isnew = true;
		e->shadow = NULL;
		e->copy = MemoryContextAllocZero(ps->cxt, BLCKSZ);
		e->stamp = ++ps->clock;
		ps->nclean++;
		init_node_page((Page) e->copy);
		return blkno;
	}

	/* reuse a page the free space map offers, if it really is free */
	while ((blkno = GetFreeIndexPage(ps->index)) != InvalidBlockNumber)
	{
		page = page_for(ps, blkno, false);
		if (PageIsNew(page) ||
			(KeanonPageGetOpaque(page)->page_id == KEANON_PAGE_ID &&
			 (KeanonPageGetOpaque(page)->flags & KEANON_PAGE_FREE) != 0))
		{
			page = page_for(ps, blkno, true);
			init_node_page(page);
			return blkno;
		}
	}

	LockRelationForExtension(ps->index, ExclusiveLock);
	buf = ReadBuffer(ps->index, P_NEW);
	UnlockRelationForExtension(ps->index, ExclusiveLock);
	blkno = BufferGetBlockNumber(buf);
	ReleaseBuffer(buf);
	e = hash_search(ps->pages, &blkno, HASH_ENTER, NULL);
	e->buf = InvalidBuffer;
	e->copy = NULL;
	e->isnew = true;
	e->stamp = ++ps->clock;
	e->shadow = MemoryContextAllocZero(ps->cxt, BLCKSZ);
	init_node_page((Page) e->shadow);
	ps->nshadow++;
	if (ps->nshadow > ps->max_shadows)
		install_early(ps);
	return blkno;
}

/* Give a node page back */
static void
store_release(KeStore *store, KeNodeId id)
{
	PageStore  *ps = (PageStore *) store;
	Page		page = node_page(ps, id, true);
	MemoryContext old;

	KeanonPageGetOpaque(page)->flags = KEANON_PAGE_FREE;
	old = MemoryContextSwitchTo(ps->cxt);
	ps->freed = lappend_int(ps->freed, (int) id);
	MemoryContextSwitchTo(old);
}

/* The engine's root record in the metapage */
static KeMeta *
store_meta(KeStore *store, bool for_write)
{
	PageStore  *ps = (PageStore *) store;
	Page		page = page_for(ps, KEANON_METAPAGE_BLKNO, for_write);

	return &KeanonPageGetMeta(page)->engine;
}

/* Open a page home on an index */
KeStore *
KeanonStoreCreate(Relation index, KeanonStoreMode mode)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "keanon page store",
											  ALLOCSET_DEFAULT_SIZES);
	PageStore  *ps = MemoryContextAllocZero(cxt, sizeof(PageStore));
	HASHCTL		ctl;

	ps->cxt = cxt;
	ps->index = index;
	ps->mode = mode;
	ps->next_block = KEANON_METAPAGE_BLKNO + 1;
	ps->max_shadows = Max((int) Min((Size) work_mem * 1024 / BLCKSZ, (Size) INT_MAX / 2),
						  4 * KEEP_RECENT);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(BlockNumber);
	ctl.entrysize = sizeof(PageEntry);
	ctl.hcxt = cxt;
	ps->pages = hash_create("keanon pages", 256, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	ps->pub.node_size = KEANON_NODE_SIZE;
	ps->pub.read = store_read;
	ps->pub.write = store_write;
	ps->pub.alloc = store_alloc;
	ps->pub.release = store_release;
	ps->pub.meta = store_meta;
	return &ps->pub;
}

/* BUILD mode: forget the old tree; nodes are laid out again from block 1 */
void
KeanonStoreReset(KeStore *store)
{
	PageStore  *ps = (PageStore *) store;
	KeMeta	   *m = store_meta(store, true);

	Assert(ps->mode == KEANON_STORE_BUILD);
	m->root = 0;
	ps->next_block = KEANON_METAPAGE_BLKNO + 1;
}

/* BUILD or WRITE mode: the metapage itself, for writing */
KeanonMetaPageData *
KeanonStoreMetaPage(KeStore *store)
{
	PageStore  *ps = (PageStore *) store;

	Assert(ps->mode != KEANON_STORE_READ);
	return KeanonPageGetMeta(page_for(ps, KEANON_METAPAGE_BLKNO, true));
}

/*
 * Finish an operation: WRITE logs and installs the private copies, BUILD
 * marks leftover blocks free; then every page is released.
 */
void
KeanonStoreFinish(KeStore *store)
{
	PageStore  *ps = (PageStore *) store;
	HASH_SEQ_STATUS seq;
	PageEntry  *e;
	BlockNumber *dirty;
	int			ndirty = 0;
	ListCell   *lc;

	if (ps->mode == KEANON_STORE_BUILD)
	{
		BlockNumber nblocks = RelationGetNumberOfBlocks(ps->index);

		for (BlockNumber b = ps->next_block; b < nblocks; b++)
		{
			PageEntry  *fe = get_entry(ps, b, true);
			Page		page = (Page) fe->copy;

			init_node_page(page);
			KeanonPageGetOpaque(page)->flags = KEANON_PAGE_FREE;
			ps->freed = lappend_int(ps->freed, (int) b);
			if (ps->nclean > READ_CACHE_PAGES)
				evict_clean(ps);
		}
	}

	dirty = MemoryContextAlloc(ps->cxt, sizeof(BlockNumber) * (hash_get_num_entries(ps->pages) + 1));
	hash_seq_init(&seq, ps->pages);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (e->shadow != NULL)
			dirty[ndirty++] = e->blkno;
	}
	qsort(dirty, ndirty, sizeof(BlockNumber), blkno_cmp);
	install_shadows(ps, dirty, ndirty);

	KeanonStoreRelease(store);
	install_build_meta(ps);
	foreach(lc, ps->freed)
		RecordFreeIndexPage(ps->index, (BlockNumber) lfirst_int(lc));
	list_free(ps->freed);
	ps->freed = NIL;
}

/* Release every page without installing anything (also after errors) */
void
KeanonStoreRelease(KeStore *store)
{
	PageStore  *ps = (PageStore *) store;
	HASH_SEQ_STATUS seq;
	PageEntry  *e;

	hash_seq_init(&seq, ps->pages);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (e->shadow != NULL)
		{
			/* an abandoned private copy holds no pin */
			pfree(e->shadow);
			ps->nshadow--;
			hash_search(ps->pages, &e->blkno, HASH_REMOVE, NULL);
			continue;
		}
		drop_entry(ps, e);
	}
}

/*
 * Write a fresh metapage into block 0 of a fork: for the main fork through
 * the buffer manager without WAL (a build logs the relation afterwards), for
 * the init fork of an unlogged index straight to storage with WAL.
 */
void
KeanonInitMetaPage(Relation index, ForkNumber fork, const KeanonValueType *vt,
				   int k, KeNum e)
{
	Buffer		buf;
	Page		page;
	KeanonMetaPageData *meta;
	KeanonPageOpaque op;

	buf = ReadBufferExtended(index, fork, P_NEW, RBM_NORMAL, NULL);
	Assert(BufferGetBlockNumber(buf) == KEANON_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	page = BufferGetPage(buf);
	PageInit(page, BLCKSZ, sizeof(KeanonPageOpaqueData));
	op = KeanonPageGetOpaque(page);
	op->flags = KEANON_PAGE_META;
	op->page_id = KEANON_PAGE_ID;
	meta = KeanonPageGetMeta(page);
	memset(meta, 0, sizeof(KeanonMetaPageData));
	meta->magic = KEANON_MAGIC;
	meta->version = KEANON_LAYOUT_VERSION;
	meta->typid = vt->typid;
	meta->kind = vt->kind;
	meta->scale = vt->scale;
	meta->scale_grows = vt->grows;
	meta->display_scale = vt->display_scale;
	meta->k = k;
	meta->e = e;
	((PageHeader) page)->pd_lower = ((char *) meta + sizeof(KeanonMetaPageData)) - (char *) page;
	Assert(((PageHeader) page)->pd_lower <= ((PageHeader) page)->pd_upper);

	START_CRIT_SECTION();
	MarkBufferDirty(buf);
	if (fork == INIT_FORKNUM)
		log_newpage_buffer(buf, true);
	END_CRIT_SECTION();
	UnlockReleaseBuffer(buf);
}

/* palloc for the engine: huge allocations allowed, in the current context */
static void *
engine_alloc(size_t size)
{
	return MemoryContextAllocExtended(CurrentMemoryContext, size, MCXT_ALLOC_HUGE);
}

static void *
engine_realloc(void *ptr, size_t size)
{
	return repalloc_huge(ptr, size);
}

static void
engine_free(void *ptr)
{
	pfree(ptr);
}

/* A cancel or a shutdown stops the rooms' long loops with an error */
static void
engine_interrupts(void)
{
	CHECK_FOR_INTERRUPTS();
}

/* Route the engine's memory through palloc, and its loops' interrupt checks here */
void
KeanonEngineAllocator(void)
{
	ke_set_allocator(engine_alloc, engine_realloc, engine_free);
	ke_set_interrupt_check(engine_interrupts);
}

/* Raise an error for an engine status other than KE_OK */
void
KeanonCheckStatus(KeStatus st, Relation index)
{
	if (st == KE_OK)
		return;
	if (st == KE_ERR_NOMEM)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory in keanon index \"%s\"",
						RelationGetRelationName(index))));
	if (st == KE_ERR_NOTFOUND)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("keanon index \"%s\" does not hold a value being removed",
						RelationGetRelationName(index)),
				 errhint("REINDEX the index.")));
	if (st == KE_ERR_ARG)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for keanon index \"%s\"",
						RelationGetRelationName(index))));
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("keanon index \"%s\" is corrupted: %s",
					RelationGetRelationName(index), ke_status_message(st)),
			 errhint("REINDEX the index.")));
}

/*
 * keanon_am.h
 *		The keanon index access method: the (k,e) engine's state in index
 *		pages.
 *
 * Layout.  Block 0 is the metapage: magic, layout version, the options
 * frozen at build (k, e exactly in the engine's units, the value kind and
 * decimal scale), the engine's root record and the list of transactions
 * whose changes are not yet known to have committed.  Every other block
 * holds one engine node in its contents area, or is free (KEANON_PAGE_FREE,
 * listed in the free space map).  The scale of an unconstrained numeric
 * column is the one exception to "frozen": it may rise, which lays the
 * state out again at the new scale (KeanonIndexFitScale).
 *
 * Locks.  The state is not MVCC: one writer at a time, readers excluded
 * while it writes.  Writers take the keanon lock of the index (an object
 * lock on the index OID, so it never conflicts with ordinary relation locks)
 * in ExclusiveLock mode and hold it to the end of the transaction; readers
 * take it in ShareLock mode for the duration of one read.  Under that lock,
 * buffers are pinned and content-locked one at a time; the only other
 * processes touching the pages are the checkpointer and bgwriter, which
 * never wait for a second page, so no page lock order is needed.
 *
 * WAL.  A change is made in private copies of the pages it touches (the
 * engine never sees a shared buffer while it works), then logged with
 * generic WAL, four pages per record.  An error before that leaves the
 * pages untouched.  A crash between two records leaves a partial change,
 * but its transaction is in the metapage's list and did not commit, so the
 * next user of the index finds it aborted and rebuilds the state from the
 * table.  The same holds for rolled-back transactions and savepoints.
 * Builds write pages without WAL and log the whole relation once.
 *
 * The list holds 32-bit ids, which the commit log answers for only until
 * it is truncated.  VACUUM settles every listed id whose fate is known
 * (committed ones go, undone ones become the needs_rebuild mark); should an
 * id outlive that anyway (VACUUM skipping index cleanup, say), the full id
 * of the oldest entry, kept beside the list, shows it is older than the
 * commit log reaches, and the state is rebuilt without asking.
 */
#ifndef KEANON_AM_H
#define KEANON_AM_H

#include "postgres.h"

#include "access/amapi.h"
#include "access/reloptions.h"
#include "access/xact.h"
#include "fmgr.h"
#include "nodes/pathnodes.h"
#include "storage/bufmgr.h"
#include "storage/lockdefs.h"
#include "utils/numeric.h"
#include "utils/relcache.h"

#include "ke_engine.h"

/* ----------------------------------------------------------------
 * Constants
 * ----------------------------------------------------------------
 */
#define KEANON_METAPAGE_BLKNO	0
#define KEANON_MAGIC			0x4b45414eU
#define KEANON_LAYOUT_VERSION	3

#define KEANON_PAGE_META		0x0001
#define KEANON_PAGE_NODE		0x0002
#define KEANON_PAGE_FREE		0x0004

#define KEANON_PAGE_ID			0xFE4E	/* marks our pages, as bloom does */

/* support functions of the operator classes */
#define KEANON_CMP_PROC			1
#define KEANON_DIFF_PROC		2
#define KEANON_NPROCS			2

/* objsubid of the object lock guarding one index's state */
#define KEANON_LOCK_SUBID		0x4b45

/* transactions remembered in the metapage before a change must commit */
#define KEANON_MAX_FLUX			1024

/* the largest decimal scale of a numeric column */
#define KEANON_MAX_SCALE		30

/*
 * The least scale of an unconstrained numeric index: finer values raise it
 * (KeanonIndexFitScale), up to KEANON_MAX_SCALE, at the cost of digits
 * before the point (34 significant digits in all).
 */
#define KEANON_GROWING_SCALE	10

/* ----------------------------------------------------------------
 * On-disk structures
 * ----------------------------------------------------------------
 */
typedef struct KeanonPageOpaqueData
{
	uint16		flags;
	uint16		page_id;
} KeanonPageOpaqueData;

typedef KeanonPageOpaqueData *KeanonPageOpaque;

#define KeanonPageGetOpaque(page) \
	((KeanonPageOpaque) PageGetSpecialPointer(page))

/* bytes of a page available to one engine node, a multiple of 16 */
#define KEANON_NODE_SIZE \
	((BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - \
	  MAXALIGN(sizeof(KeanonPageOpaqueData))) & ~15)

typedef struct KeanonMetaPageData
{
	uint32		magic;
	uint32		version;
	Oid			typid;			/* the indexed column's type */
	int32		kind;			/* KeKind */
	int32		scale;			/* numeric: values are scaled by 10^scale */
	bool		scale_grows;	/* unconstrained numeric: scale rises with the values */
	int32		display_scale;	/* decimal places shown at least */
	int32		k;
	KeNum		e;				/* exact, in the engine's units (am_values.c) */
	KeMeta		engine;			/* the engine's root record */
	bool		needs_rebuild;	/* a build could not finish, or a change was undone */
	/*
	 * Laid out from the table (a build or a repair): the end flags are the
	 * report's optimum, and a watch's publication may keep another one
	 * (ke_keep_boundaries), which its first writer takes back.  In what was
	 * padding, zero in indexes of earlier builds, whose flags always were
	 * the report's optimum.
	 */
	bool		flags_built;
	uint32		nflux;
	/* the oldest of flux[] as a full id: older than the commit log reaches means undone */
	FullTransactionId flux_oldest;
	TransactionId flux[KEANON_MAX_FLUX];
} KeanonMetaPageData;

#define KeanonPageGetMeta(page) ((KeanonMetaPageData *) PageGetContents(page))

/* Is page a metapage of the layout this build reads? */
#define KeanonMetaPageIsCurrent(page) \
	(KeanonPageGetOpaque(page)->page_id == KEANON_PAGE_ID && \
	 KeanonPageGetMeta(page)->magic == KEANON_MAGIC && \
	 KeanonPageGetMeta(page)->version == KEANON_LAYOUT_VERSION)

/* ----------------------------------------------------------------
 * State
 * ----------------------------------------------------------------
 */

/* reloptions */
typedef struct KeanonOptions
{
	int32		vl_len_;
	int			k;				/* -1 when not given */
	int			e_offset;		/* of the e option's text, as given */
	int			scale;			/* -1: the column's, or chosen at build */
} KeanonOptions;

/* how values of the indexed type become engine numbers */
typedef struct KeanonValueType
{
	Oid			typid;
	KeKind		kind;
	int			scale;			/* numeric: values are scaled by 10^scale */
	bool		grows;			/* unconstrained numeric: the scale may rise */
	int			display_scale;	/* decimal places shown at least */
	Oid			index;			/* the index, for messages, or InvalidOid */
} KeanonValueType;

typedef enum KeanonStoreMode
{
	KEANON_STORE_READ,			/* read only */
	KEANON_STORE_WRITE,			/* private copies, generic WAL at the end */
	KEANON_STORE_BUILD			/* direct writes without WAL */
} KeanonStoreMode;

/* an index opened for the engine */
typedef struct KeanonIndex
{
	Relation	index;
	Relation	heap;
	KeStore    *store;
	KeEngine   *engine;
	KeanonValueType vt;
	int			k;
	KeNum		e;				/* exact, in the engine's units */
	KeanonStoreMode mode;
	LOCKMODE	lockmode;		/* keanon lock held */
	XLogRecPtr	meta_lsn;		/* of the metapage when opened */
	bool		flags_built;	/* the metapage's flags_built when opened */
	bool		keep_boundaries;	/* a watch's: ke_keep_boundaries() */
	MemoryContext cxt;
} KeanonIndex;

/* the values of a table's indexed column, sorted */
typedef struct KeanonValues
{
	KeNum	   *vals;
	int64		n;
	double		heap_tuples;
} KeanonValues;

/* the runs of an engine, collected by KeanonCollectRunArrays */
typedef struct KeanonRunArrays
{
	KeNum	   *vals;
	int64	   *counts;
	size_t		n;
	size_t		cap;
} KeanonRunArrays;

/* ----------------------------------------------------------------
 * Prototypes
 * ----------------------------------------------------------------
 */

/* am_handler.c */
extern bytea *keanonoptions(Datum reloptions, bool validate);
extern const char *KeanonOptionsE(const KeanonOptions *opts);
extern void KeanonInitReloptions(void);

/* am_validate.c */
extern bool keanonvalidate(Oid opclassoid);

/* am_build.c */
extern IndexBuildResult *keanonbuild(Relation heap, Relation index,
									 struct IndexInfo *indexInfo);
extern void keanonbuildempty(Relation index);
extern void KeanonRebuild(KeanonIndex *ki);
extern void KeanonWriteRuns(Relation index, const KeanonValueType *vt, int k, KeNum e,
							const KeNum *vals, const int64 *counts, size_t m);
extern void KeanonTableValues(Relation heap, Relation index,
							  const KeanonValueType *vt, KeanonValues *out);
extern char *keanonbuildphasename(int64 phasenum);

/* am_vacuum.c */
extern IndexBulkDeleteResult *keanonbulkdelete(IndexVacuumInfo *info,
											   IndexBulkDeleteResult *stats,
											   IndexBulkDeleteCallback callback,
											   void *callback_state);
extern IndexBulkDeleteResult *keanonvacuumcleanup(IndexVacuumInfo *info,
												  IndexBulkDeleteResult *stats);

/* am_store.c */
/* told of a page, as it is, before a WRITE store overwrites it */
typedef void (*KeanonPageSaver) (Relation index, BlockNumber blkno, Page page, bool isnew);

extern KeStore *KeanonStoreCreate(Relation index, KeanonStoreMode mode);
extern void KeanonStoreFinish(KeStore *store);
extern void KeanonStoreRelease(KeStore *store);
extern void KeanonStoreReset(KeStore *store);
extern KeanonMetaPageData *KeanonStoreMetaPage(KeStore *store);
extern void KeanonInitMetaPage(Relation index, ForkNumber fork,
							   const KeanonValueType *vt, int k, KeNum e);
extern void KeanonEngineAllocator(void);
extern void KeanonInitFreePage(Page page);
extern void KeanonStoreOnOverwrite(KeStore *store, KeanonPageSaver saver);
extern void KeanonSetRebuildMark(Relation index, bool needs_rebuild);

/* am_undo.c */
extern void KeanonUndoNoteWriter(Oid indexoid);
extern void KeanonUndoSave(Relation index, BlockNumber blkno, Page page, bool isnew);
extern void KeanonUndoGiveUp(Oid indexoid);
extern bool KeanonUndoPending(Oid indexoid);
extern void KeanonUndoForget(Oid indexoid);
extern bool KeanonUndoRestore(Relation index);

/* am_index.c */
extern KeanonIndex *KeanonIndexOpen(Oid indexoid, bool for_write);
extern KeanonIndex *KeanonIndexOpenFor(Oid indexoid, bool for_write, Oid reader);
extern void KeanonIndexValueType(Oid indexoid, KeanonValueType *vt);
extern void KeanonIndexReadMeta(Relation index, KeanonMetaPageData *out, XLogRecPtr *lsn);
extern void KeanonIndexLockForWrite(Oid indexoid);
extern bool KeanonMayReadWhole(Oid relid);
extern bool KeanonRoleMayReadWhole(Oid relid, Oid role);
extern void KeanonCheckReadable(Relation heap);
extern void KeanonIndexClose(KeanonIndex *ki);
extern void KeanonIndexApply(KeanonIndex *ki, const KeChange *changes, size_t n);
extern void KeanonIndexBuildSorted(KeanonIndex *ki, const KeNum *sorted, size_t n);
extern bool KeanonIndexAdoptBoundaries(KeanonIndex *ki, const KeBoundary *bounds, size_t n,
									   bool write);
extern void KeanonIndexForgetBuilt(KeanonIndex *ki);
extern void KeanonIndexKeepBoundaries(KeanonIndex *ki);
extern void KeanonCheckStatus(KeStatus st, Relation index);
extern bool KeanonFluxBeyondClog(const KeanonMetaPageData *meta);
extern void KeanonIndexFitScale(KeanonIndex *ki, int scale);
extern bool KeanonCollectRunArrays(const KeRunInfo *r, void *arg);
extern void KeanonMetaValueType(const KeanonMetaPageData *meta, Oid index,
								KeanonValueType *vt);
extern void KeanonFluxSetOldest(KeanonMetaPageData *meta);

/* am_funcs.c */
extern void KeanonIndexVerify(KeanonIndex *ki);
extern void KeanonCheckIsKeanon(Relation index);

/* am_values.c */
extern void KeanonValueTypeFor(Oid typid, int32 typmod, int scale_option,
							   KeanonValueType *vt);
extern bool KeanonTypeSupported(Oid typid);
extern KeNum KeanonDatumToNum(const KeanonValueType *vt, Datum d);
extern void KeanonRefuseNonFinite(Oid typid, Datum d);
extern Datum KeanonNumToDatum(const KeanonValueType *vt, KeNum x);
extern Datum KeanonFloatToNumeric(double f);
extern Datum KeanonNumToNumeric(const KeanonValueType *vt, KeNum x);
extern Numeric KeanonParseE(const char *text);
extern KeNum KeanonENum(const KeanonValueType *vt, const char *text);
extern double KeanonNumericToDouble(Numeric x);
extern int	KeanonNumericScale(Datum num);
extern int	KeanonNumericMinScale(Datum num);
extern void KeanonRefuseFinerValue(const KeanonValueType *vt, int places);

#endif							/* KEANON_AM_H */

/*
 * maintain_int.h
 *		Private declarations of the maintenance module: the statement flow
 *		(maintain.c), the O(1) permutation steps (permute.c), reassignment
 *		and carry-over (reassign.c) and releases (release.c).
 */
#ifndef KEANON_MAINTAIN_INT_H
#define KEANON_MAINTAIN_INT_H

#include "utils/tuplestore.h"

#include "keanon_watch.h"
#include "random.h"

/* a range of values, either end unbounded */
typedef struct KeanonRange
{
	bool		lo_unb;
	KeNum		lo;
	bool		hi_unb;
	KeNum		hi;
} KeanonRange;

/* a row of the rows table being placed */
typedef struct PlacedRow
{
	ItemPointerData tid;
	Datum		value;
	KeNum		num;
	int64		fresh;			/* index among the fresh rows, or -1 */
	int64		arrival;		/* keanon_arrival (table rows read directly) */
	int64		pid;			/* its partition before, or 0 */
	int32		slot;			/* its slot and published value before */
	Datum		pub;
} PlacedRow;

/*
 * A published row a statement deleted, where it was (see OldParts).  A
 * statement keeps up to KEANON_GONE_MAX of them, so that the partitions
 * they left can be carried over; past that its partitions are drawn
 * afresh.
 */
#define KEANON_GONE_MAX	65536
typedef struct GoneRow
{
	int64		pid;
	int32		slot;
	Datum		pub;
	KeNum		num;
} GoneRow;

/*
 * The rows a statement adds (an INSERT's, or an UPDATE's that changed a key
 * or a value, or a new watch's existing rows).  They are written to the
 * rows table once, already placed: the engine sees their values first, and
 * republication decides their partitions, slots and published values in
 * memory.  Row i (from 0) is the (i+1)-th of the source query by
 * keanon_ordinal and arrives as arrival0 + i + 1.
 */
typedef struct FreshRows
{
	int64		n;
	Datum	   *value;
	KeNum	   *num;
	int64		arrival0;
	bool		placed;			/* pid, slot and pub hold every row's place */
	Datum	   *pid;
	Datum	   *slot;
	Datum	   *pub;
	TupleTableSlot *one;		/* a single row read from the trigger's
								 * transition table, written directly */
	int64	   *order;			/* if set, the rows' indexes in (value,
								 * arrival) order */
	bool	   *joined;			/* if set, by row: placed already by join
								 * steps (reassign.c's join_many) */
	int64		njoined;
} FreshRows;

/*
 * The old partitions a reassignment replaces, for carrying each over to the
 * new partition that shares most of its rows.  A row of one that left by
 * this statement (one deleted row, known from the trigger) is counted too.
 */
typedef struct OldParts
{
	int			n;
	int64	   *pid;			/* sorted */
	int64	   *size;			/* rows before the statement */
	bool	   *taken;
	int64	   *first;			/* the range of its rows among those placed */
	int64	   *last;
	GoneRow    *gone;			/* the departed rows of these, by pid */
	int			ngone;
} OldParts;

/* maintain.c */
extern void KeanonBeginWrite(Watch *w, bool open_index);
extern void KeanonEndWrite(Watch *w);
extern int64 KeanonMaterialize(Oid relid, const char *sql, Snapshot snap, const char *name,
							   Tuplestorestate **store);

/* permute.c */
extern void KeanonRepublishChanges(Watch *w, const KeNum *cv, int ncv, int nins, KeNum ins_v,
								   Datum ins_d, int ndel, KeNum del_v, Datum del_d, int64 del_pid,
								   int32 del_slot, Datum del_pub, bool del_had_pid);

/* reassign.c */
extern PlacedRow *KeanonFetchedRows(Oid relid, const KeanonValueType *vt, int64 *nrows);
extern void KeanonReassign(Watch *w, bool lo_unb, KeNum lo, bool hi_unb, KeNum hi,
						   const KeNum *cv, int ncv);
extern void KeanonReassignRanges(Watch *w, KeanonRange *ranges, int nranges, const KeNum *cv,
								 int ncv);
extern void KeanonSuppressAll(Watch *w);
extern void KeanonFreshOrder(FreshRows *f, KeKind kind);
extern void KeanonPlaceRows(Watch *w, KeanonPartList *pl, PlacedRow *rows, int64 nrows,
							OldParts *op);

/* direct.c */
typedef struct KeanonDirect KeanonDirect;
extern bool KeanonRowAtSlot(Watch *w, int64 pid, int32 slot, ItemPointer tid, Datum *pub,
							bool *pubnull);
extern int	KeanonRowDelete(Watch *w, TupleTableSlot *src, PlacedRow *out);
extern bool KeanonSameKeyAndValue(Watch *w, TupleTableSlot *a, TupleTableSlot *b,
								  bool *same_key, bool *same_value);
extern int	KeanonRowSetQis(Watch *w, TupleTableSlot *src, bool *changed);
extern void KeanonRowMove(Watch *w, ItemPointer tid, const int64 *pid, const int32 *slot,
						  const Datum *pub);
extern void KeanonRowMoveBatch(Watch *w, ItemPointer tid, const int64 *pid, const int32 *slot,
							   const Datum *pub);
extern void KeanonPartChanged(Watch *w, int64 pid, KeNum lo, const Datum *remove_d,
							  const Datum *add_d);
extern void KeanonPartJoined(Watch *w, int64 pid, KeNum lo, const Datum *adds, int nadds);
extern void KeanonDirectClose(Watch *w);
extern AttrNumber KeanonSourceValueAtt(Watch *w);
extern void KeanonRowInsert(Watch *w, TupleTableSlot *src, int64 arrival, const Datum *pid,
							const Datum *slot, const Datum *pub);
extern void KeanonRowsInsertMany(Watch *w, FreshRows *f, const int64 *rank,
								 TupleTableSlot *(*next) (void *arg), void *arg);
extern void KeanonWatchCountersRead(Watch *w);
extern void KeanonSaveWatch(Watch *w);
/* a published partition: its id and bounds */
typedef struct KeanonOldPart
{
	int64		pid;
	KePartition part;
	int32		lo_slot;		/* slot of its lowest value's row when placed, or -1 */
} KeanonOldPart;
extern int	KeanonValueArrivalCmp(const void *a, const void *b, void *arg);
extern PlacedRow *KeanonRowsOfPartitions(Watch *w, const int64 *pids, int npids,
										 int64 *nrows);
extern int	KeanonPartsInRange(Watch *w, const KeanonRange *r, KeanonOldPart **out);
extern bool KeanonPartById(Watch *w, int64 pid, KeanonOldPart *out);
extern bool KeanonPartEndingAt(Watch *w, KeNum v, bool past, KeanonOldPart *out);
extern bool KeanonPlacedRowAt(Watch *w, int64 pid, int32 slot, PlacedRow *out);
extern int64 KeanonSlotsShowing(Watch *w, int64 pid, Datum pub, int32 **slots);
extern void KeanonPartsDelete(Watch *w, const int64 *pids, int npids);
extern void KeanonPartInsert(Watch *w, int64 pid, const KePartition *p, int64 n,
							 const Datum *vals, const Datum *cnts, int nvals, int32 lo_slot);

#endif							/* KEANON_MAINTAIN_INT_H */

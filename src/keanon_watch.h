/*
 * keanon_watch.h
 *		Watched tables: the maintenance that keeps the partitioning and the
 *		published view current.
 *
 * Objects of a watch (all in the watched table's schema, owned by its
 * owner, recorded in keanon.watches):
 *
 *	<table>_keanon_rows		one row per source row with a non-null sensitive
 *							value: the primary key (the link), the
 *							quasi-identifiers, the true value, the published
 *							value, the partition id, the row's slot in its
 *							partition and its arrival number
 *	<table>_keanon_idx		the keanon index on the true values: the engine
 *	<table>_keanon_parts	one row per published partition: its bounds, its
 *							row count and its distinct values with counts
 *	<table>_anon			the published view: quasi-identifiers, published
 *							value, keanon_pid
 *	<table>_keanon_pending	deferred mode: the keys of rows changed and not
 *							yet published, with their statements' times
 *
 * Rows belong to partitions by (true value, arrival) order: the engine's
 * partitions are consecutive ranges of that order, so a run of equal values
 * that the optimum splits sends its latest row to the later partition.
 *
 * Lock order: the keanon lock of the index (ExclusiveLock, to the end of
 * the transaction, taken by a BEFORE STATEMENT trigger so that it comes
 * before any row lock of the statement), then the watch's row in
 * keanon.watches (updated, so row-locked), then the internal tables.  Every
 * writer takes them in this order.  Readers of the view take nothing;
 * keanon.check takes a brief ShareLock; bound aggregates take nothing.
 * Writers of a deferred watch take none of these: their row trigger only
 * appends to the pending list; a flush takes the watched table
 * (AccessShareLock), then the keanon lock, then the internal tables.
 */
#ifndef KEANON_WATCH_H
#define KEANON_WATCH_H

#include "postgres.h"

#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/rel.h"

#include "keanon_am.h"

/* partition ids are a watch's number times this, plus a counter */
#define KEANON_PIDS_PER_WATCH INT64CONST(1000000000000)

typedef struct Watch
{
	Oid			relid;
	Oid			owner;
	Oid			rows_oid;
	Oid			parts_oid;
	Oid			view_oid;
	Oid			index_oid;
	char	   *rows;			/* qualified, quoted names */
	char	   *parts;
	char	   *s;				/* quoted sensitive column */
	List	   *keys;			/* quoted key columns */
	List	   *qis;			/* quoted quasi-identifiers */
	int			k;
	int			generalize;		/* the groups' k, 0 when not generalized */
	bool		release_mode;	/* publishes only at keanon.release() */
	bool		republishing;	/* keanon.republish: the index's partitions go as they are */
	bool		deferred;		/* writers append to the pending list */
	Oid			pending_oid;	/* the pending list (deferred mode) */
	char	   *pending;
	AttrNumber	s_attnum;		/* the sensitive column's number in the table */
	int			nwatched;		/* the watched columns' numbers in the table, */
	AttrNumber *watched_attnums;	/* the keys first (list_length(keys)) */
	Oid			release_oid;	/* the last release's rows (release mode) */
	char	   *release;
	int64		next_pid;
	int64		next_arrival;
	KeanonIndex *ki;			/* open for writing during maintenance */
	struct FreshRows *fresh;	/* a statement's rows not yet written */
	struct KeanonDirect *rt;	/* internal tables open for direct access */
	struct GoneRow *gone;		/* the published rows a statement deleted */
	int			ngone;
	bool		all_placed;		/* no table row waits unplaced */
	struct KeanonRange *ranges; /* where a batch applied change by change */
	int			nranges;		/* may have moved partitions */
	bool		ranges_moved;	/* some change of theirs moved a boundary */
} Watch;

/* partitions collected from the engine */
typedef struct KeanonPartList
{
	KePartition *parts;
	int			n;
	int			cap;
} KeanonPartList;

/* a switch to a watched table's owner (owner.c) */
typedef struct KeanonOwnerScope
{
	Oid			save_user;
	int			save_sec;
	int			nest_level;
} KeanonOwnerScope;

/* anonymize.c */
extern void KeanonAnonymizeInit(void);

/* entry.c */
/* PostgreSQL 18 replaced pg_attribute_noreturn() by pg_noreturn, in front */
#ifdef pg_noreturn
pg_noreturn extern void KeanonRethrowWithoutContext(MemoryContext cxt);
#else
extern void KeanonRethrowWithoutContext(MemoryContext cxt) pg_attribute_noreturn();
#endif

/* owner.c */
extern void KeanonOwnerBegin(Oid relid, KeanonOwnerScope *scope);
extern void KeanonCatalogBegin(KeanonOwnerScope *scope);
extern void KeanonRoleBegin(Oid role, KeanonOwnerScope *scope);
extern void KeanonPinFloatOutput(void);
extern void KeanonOwnerEnd(KeanonOwnerScope *scope);

/* spi_plans.c */
extern void KeanonPlansInit(void);
extern SPIPlanPtr KeanonPlan(Oid relid, const char *sql, int nargs, Oid *types, bool custom);
extern int	KeanonSpiExec(Oid relid, const char *sql, int nargs, Oid *types, Datum *values,
						  const char *nulls, bool read_only);
extern int	KeanonSpiRun(Oid relid, const char *sql, int nargs, Oid *types, Datum *values,
						 const char *nulls, int expect);

/* watch_cache.c */
extern void KeanonWatchCacheInit(void);
extern void KeanonWatchLoad(Oid relid, Watch *w, bool missing_ok_quiet);
extern bool KeanonWatchCached(Oid relid, Watch *w);
extern bool KeanonWatchExistsNow(Oid relid);
extern void KeanonWatchForget(Oid relid);
extern void KeanonRetireMemory(MemoryContext cxt);
extern bool KeanonWatchReadable(Oid relid, Watch *w);
extern void KeanonWatchForReader(Oid relid, Watch *w, const char *what);
extern char *KeanonQualifiedName(Oid relid);
extern char *KeanonNameList(List *names, const char *prefix);
extern char *KeanonTypeEqualSql(Oid typid, const char *a, const char *b);
extern char *KeanonKeysEqual(const Watch *w, const char *a, const char *b);
extern List *KeanonUnionNames(List *a, List *b);
extern Oid	KeanonRelOwner(Oid relid);

/* layout.c */
extern void KeanonLayoutInit(void);
extern void KeanonCheckRowsLayout(const Watch *w, Relation rel);
extern void KeanonCheckPartsLayout(const Watch *w, Relation rel);
extern Datum KeanonSpiColumn(Oid relid, HeapTuple tup, TupleDesc desc, int col, Oid typid);
extern Datum KeanonSpiColumnOrNull(Oid relid, HeapTuple tup, TupleDesc desc, int col, Oid typid,
								   bool *isnull);
extern void KeanonPartArrays(Oid relid, Datum vals, bool vals_null, Datum cnts, bool cnts_null,
							 Oid elemtype, bool copy, Datum **v, Datum **c, int *n);
extern void KeanonArrayElements(ArrayType *arr, Oid elemtype, Datum **elems, bool **nulls,
								int *n);

/* watch.c */
extern int64 KeanonOwnerAction(Oid relid, int64 (*action) (Oid relid));

/* maintain.c */
extern void KeanonMaintain(TriggerData *trigdata);
extern void KeanonMaintainDelta(Oid relid, bool by_insert, bool by_update, bool by_delete,
								const char *oldrel, const char *newrel,
								struct Tuplestorestate *oldstore,
								struct Tuplestorestate *newstore,
								struct TupleDescData *desc);
extern void KeanonLockWatch(Oid relid);
extern void KeanonCheckSnapshot(Watch *w);
extern int64 KeanonPublishedBoundaries(const Watch *w, const KeanonValueType *vt,
									   KeBoundary **bounds);
extern int64 KeanonRepublish(Oid relid);
extern int64 KeanonFill(Oid relid);

/* deferred.c */
extern int64 KeanonFlush(Oid relid);

/* worker.c */
extern void KeanonWorkerInit(void);
extern void KeanonWorkerPoke(void);
extern void KeanonWorkerNoteWrite(void);

/* reassign.c */
extern bool KeanonCollectPartition(const KePartition *p, void *arg);

/* release.c */
extern int64 KeanonRelease(Oid relid);
extern void KeanonPartitionsFromFlags(KeKind kind, const KeNum *vals, const int64 *counts,
									  size_t m, const int *end, KeanonPartList *pl);
extern KeNum KeanonNumFromText(const KeanonValueType *vt, const char *text);

#endif							/* KEANON_WATCH_H */

/*
 * direct.c
 *		The internal tables read and written without the executor: a row's
 *		place in the rows table, a partition's summary, a watch's counters.
 *
 * The O(1) permutation steps and the writing of a reassignment's placements
 * touch a handful of rows each, found by (partition, slot), by partition or
 * by tuple id.  Run as SQL statements, each costs an executor start-up, a
 * plan's expression set-up and a statement snapshot, several times the heap
 * and index work itself.  This module does that work directly:
 *
 *	lookup	an index scan of a btree on exactly the key columns, of the
 *			integer (or oid) operator family, with those operators' own
 *			support functions (a heap scan with the same keys should no such
 *			index exist), under SnapshotSelf;
 *	update	heap_modify_tuple and simple_heap_update of the named columns at
 *			a tuple id, and, for a non-HOT update, insertion into every index
 *			of the table (the executor's own ExecInsertIndexTuples, so unique
 *			checks, partial and expression indexes an owner added behave as
 *			under SQL; the updated columns are declared, so that the
 *			"unchanged" hint goes only to the other indexes).
 *
 * Why SnapshotSelf: every writer of a watch holds its keanon lock, so no
 * other transaction has an uncommitted change in its internal tables, and
 * under a transaction snapshot KeanonCheckSnapshot has refused any writer
 * that committed after it.  What SnapshotSelf adds is this transaction's
 * own changes, including those of the current command, which a step needs
 * when it reads a row it just moved.  heap_update, though, refuses a
 * version made by the current command, so writes end with a command
 * counter increment; the SQL statements that follow (SPI advances the
 * counter before each) see these writes as they would any earlier
 * statement's.
 *
 * Nothing here runs user code or looks up an operator by name, and every
 * value written is formed here.  Triggers and rules on the internal
 * tables, which only their owner could add, do not fire for these writes.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/sysattr.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "maintain_int.h"

/* the btree operator families of int2/int4/int8 and of oid (pg_opfamily.dat) */
#define KEANON_INTEGER_BTREE_FAM 1976
#define KEANON_OID_BTREE_FAM 1989

/* a table open for direct reads and writes */
typedef struct DirectTable
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *tslot;		/* a new version, for its index entries */
	TupleTableSlot *scan_slot;	/* a row found by a scan */
	Datum	   *values;			/* heap_modify_tuple's arrays */
	bool	   *nulls;
	bool	   *replace;
} DirectTable;

/* one key column of a lookup */
typedef struct DirectKey
{
	AttrNumber	att;
	Oid			opfamily;		/* the btree family an index must have */
	RegProcedure eqproc;
	Datum		value;
} DirectKey;

/* what a watch's write opened (Watch.rt) */
struct KeanonRowsTable
{
	DirectTable rows;
	Relation	slot_index;		/* (keanon_pid, keanon_slot), or NULL */
	AttrNumber	att_pid;
	AttrNumber	att_slot;
	AttrNumber	att_pub;
	bool		parts_open;
	DirectTable parts;
	Relation	part_index;		/* (keanon_pid), or NULL */
	AttrNumber	att_part_pid;
	AttrNumber	att_n;
	AttrNumber	att_lo;
	AttrNumber	att_vals;
	AttrNumber	att_cnts;
};

/* A column's number, which the watch's loading checked exists */
static AttrNumber
column_number(Oid relid, const char *name)
{
	AttrNumber	att = get_attnum(relid, name);

	if (att == InvalidAttrNumber)
		elog(ERROR, "keanon: column %s of %s is missing", name, get_rel_name(relid));
	return att;
}

/* Open a table to read and to update the columns updated[] of */
static void
direct_open(DirectTable *d, Oid relid, const AttrNumber *updated, int nupdated)
{
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	int			natts;

	d->rel = table_open(relid, RowExclusiveLock);
	d->estate = CreateExecutorState();
	rte->rtekind = RTE_RELATION;
	rte->relid = relid;
	rte->relkind = d->rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	for (int i = 0; i < nupdated; i++)
		rte->updatedCols = bms_add_member(rte->updatedCols,
										  updated[i] - FirstLowInvalidHeapAttributeNumber);
	ExecInitRangeTable(d->estate, list_make1(rte));
	d->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(d->rri, d->rel, 1, NULL, 0);
	ExecOpenIndices(d->rri, false);
	d->tslot = MakeSingleTupleTableSlot(RelationGetDescr(d->rel), &TTSOpsHeapTuple);
	d->scan_slot = table_slot_create(d->rel, NULL);
	natts = RelationGetDescr(d->rel)->natts;
	d->values = palloc0(sizeof(Datum) * natts);
	d->nulls = palloc0(sizeof(bool) * natts);
	d->replace = palloc0(sizeof(bool) * natts);
	/* rows written by the statement's SQL so far become updatable */
	CommandCounterIncrement();
}

static void
direct_close(DirectTable *d)
{
	ExecDropSingleTupleTableSlot(d->tslot);
	ExecDropSingleTupleTableSlot(d->scan_slot);
	ExecCloseIndices(d->rri);
	FreeExecutorState(d->estate);
	table_close(d->rel, NoLock);
}

/* A plain btree of the table on exactly the key columns, or NULL */
static Relation
direct_index(DirectTable *d, int nkeys, const DirectKey *keys)
{
	for (int i = 0; i < d->rri->ri_NumIndices; i++)
	{
		Relation	index = d->rri->ri_IndexRelationDescs[i];
		Form_pg_index ix = index->rd_index;
		bool		match;

		if (index->rd_rel->relam != BTREE_AM_OID || !ix->indisvalid || !ix->indisready ||
			ix->indnkeyatts != nkeys ||
			!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) ||
			!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
			continue;
		match = true;
		for (int k = 0; k < nkeys; k++)
			if (ix->indkey.values[k] != keys[k].att || index->rd_opfamily[k] != keys[k].opfamily)
				match = false;
		if (match)
			return index;
	}
	return NULL;
}

/* The first row (under SnapshotSelf) with the keys' values, into scan_slot */
static bool
direct_fetch(DirectTable *d, Relation index, int nkeys, const DirectKey *keys)
{
	ScanKeyData sk[4];
	bool		found;

	Assert(nkeys <= lengthof(sk));
	for (int k = 0; k < nkeys; k++)
		ScanKeyInit(&sk[k], index != NULL ? k + 1 : keys[k].att, BTEqualStrategyNumber,
					keys[k].eqproc, keys[k].value);
	if (index != NULL)
	{
		IndexScanDesc scan = index_beginscan(d->rel, index, SnapshotSelf, nkeys, 0);

		index_rescan(scan, sk, nkeys, NULL, 0);
		found = index_getnext_slot(scan, ForwardScanDirection, d->scan_slot);
		index_endscan(scan);
	}
	else
	{
		TableScanDesc scan = table_beginscan(d->rel, SnapshotSelf, nkeys, sk);

		found = table_scan_getnextslot(scan, ForwardScanDirection, d->scan_slot);
		table_endscan(scan);
	}
	return found;
}

/*
 * Update the row at tid: the columns marked in d->replace take d->values
 * and d->nulls (the marks are cleared)
 */
static void
direct_update(DirectTable *d, ItemPointer tid)
{
	HeapTupleData old;
	HeapTuple	newtup;
	Buffer		buf;
	TupleDesc	desc = RelationGetDescr(d->rel);

	old.t_self = *tid;
	if (!heap_fetch(d->rel, SnapshotSelf, &old, &buf, true))
		elog(ERROR, "keanon: row (%u,%u) of %s is missing",
			 ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid),
			 RelationGetRelationName(d->rel));
	newtup = heap_modify_tuple(&old, desc, d->values, d->nulls, d->replace);
	ReleaseBuffer(buf);
	memset(d->replace, 0, sizeof(bool) * desc->natts);
	memset(d->nulls, 0, sizeof(bool) * desc->natts);
	simple_heap_update(d->rel, tid, newtup);
	if (!HeapTupleIsHeapOnly(newtup))
	{
		ExecStoreHeapTuple(newtup, d->tslot, false);
		(void) ExecInsertIndexTuples(d->rri, d->tslot, d->estate, true, false, NULL, NIL);
		ExecClearTuple(d->tslot);
		ResetPerTupleExprContext(d->estate);
	}
	heap_freetuple(newtup);
}

/* What the watch's write opened for direct access, opened at first use */
static KeanonRowsTable *
rows_table(Watch *w)
{
	KeanonRowsTable *rt = w->rt;
	AttrNumber	updated[3];
	DirectKey	keys[2];

	if (rt != NULL)
		return rt;
	rt = palloc0(sizeof(KeanonRowsTable));
	rt->att_pid = updated[0] = column_number(w->rows_oid, "keanon_pid");
	rt->att_slot = updated[1] = column_number(w->rows_oid, "keanon_slot");
	rt->att_pub = updated[2] = column_number(w->rows_oid, "keanon_pub");
	direct_open(&rt->rows, w->rows_oid, updated, 3);
	keys[0].att = rt->att_pid;
	keys[0].opfamily = KEANON_INTEGER_BTREE_FAM;
	keys[1].att = rt->att_slot;
	keys[1].opfamily = KEANON_INTEGER_BTREE_FAM;
	rt->slot_index = direct_index(&rt->rows, 2, keys);
	w->rt = rt;
	return rt;
}

/* The same with the parts table open too */
static KeanonRowsTable *
parts_table(Watch *w)
{
	KeanonRowsTable *rt = rows_table(w);
	AttrNumber	updated[4];
	DirectKey	key;

	if (rt->parts_open)
		return rt;
	rt->att_part_pid = column_number(w->parts_oid, "keanon_pid");
	rt->att_n = updated[0] = column_number(w->parts_oid, "n");
	rt->att_lo = updated[1] = column_number(w->parts_oid, "lo");
	rt->att_vals = updated[2] = column_number(w->parts_oid, "vals");
	rt->att_cnts = updated[3] = column_number(w->parts_oid, "cnts");
	direct_open(&rt->parts, w->parts_oid, updated, 4);
	key.att = rt->att_part_pid;
	key.opfamily = KEANON_INTEGER_BTREE_FAM;
	rt->part_index = direct_index(&rt->parts, 1, &key);
	rt->parts_open = true;
	return rt;
}

/* Close what the watch's write opened for direct access */
void
KeanonRowsTableClose(Watch *w)
{
	KeanonRowsTable *rt = w->rt;

	if (rt == NULL)
		return;
	if (rt->parts_open)
		direct_close(&rt->parts);
	direct_close(&rt->rows);
	w->rt = NULL;
}

/*
 * The row at slot of partition pid: its tuple id into *tid and, if pub is
 * not NULL, its published value into *pub (copied; a null as (Datum) 0
 * with *pubnull).  False when no row sits there.
 */
bool
KeanonRowAtSlot(Watch *w, int64 pid, int32 slot, ItemPointer tid, Datum *pub, bool *pubnull)
{
	KeanonRowsTable *rt = rows_table(w);
	DirectKey	keys[2];

	keys[0].att = rt->att_pid;
	keys[0].eqproc = F_INT8EQ;
	keys[0].value = Int64GetDatum(pid);
	keys[1].att = rt->att_slot;
	keys[1].eqproc = F_INT4EQ;
	keys[1].value = Int32GetDatum(slot);
	if (!direct_fetch(&rt->rows, rt->slot_index, 2, keys))
		return false;
	*tid = rt->rows.scan_slot->tts_tid;
	if (pub != NULL)
	{
		int16		typlen;
		bool		typbyval;
		Datum		d = slot_getattr(rt->rows.scan_slot, rt->att_pub, pubnull);

		get_typlenbyval(w->ki->vt.typid, &typlen, &typbyval);
		*pub = *pubnull ? (Datum) 0 : datumCopy(d, typbyval, typlen);
	}
	ExecClearTuple(rt->rows.scan_slot);
	return true;
}

/*
 * Give the row at tid a partition, a slot and a published value, each
 * only when its pointer is not NULL (the others stay).  Ends with a
 * command counter increment, so the row may be read or moved again.
 */
void
KeanonRowMove(Watch *w, ItemPointer tid, const int64 *pid, const int32 *slot, const Datum *pub)
{
	KeanonRowMoveBatch(w, tid, pid, slot, pub);
	CommandCounterIncrement();
}

/*
 * As KeanonRowMove, without the command counter increment: for a batch
 * that moves each row once and then increments once (one command id for
 * all keeps one combo command id for all rows the transaction inserted).
 */
void
KeanonRowMoveBatch(Watch *w, ItemPointer tid, const int64 *pid, const int32 *slot,
				   const Datum *pub)
{
	KeanonRowsTable *rt = rows_table(w);
	DirectTable *d = &rt->rows;

	if (pid != NULL)
	{
		d->replace[rt->att_pid - 1] = true;
		d->values[rt->att_pid - 1] = Int64GetDatum(*pid);
	}
	if (slot != NULL)
	{
		d->replace[rt->att_slot - 1] = true;
		d->values[rt->att_slot - 1] = Int32GetDatum(*slot);
	}
	if (pub != NULL)
	{
		d->replace[rt->att_pub - 1] = true;
		d->values[rt->att_pub - 1] = *pub;
	}
	direct_update(d, tid);
}

/*
 * A partition's summary after one row of value remove_d left it and one of
 * value add_d joined (either may be absent, as a NULL pointer), with its
 * new lowest value lo: its row count, its lowest value and its distinct
 * values (sorted) with their counts.
 */
void
KeanonPartChanged(Watch *w, int64 pid, KeNum lo, const Datum *remove_d, const Datum *add_d)
{
	KeanonRowsTable *rt = parts_table(w);
	DirectTable *d = &rt->parts;
	const KeanonValueType *vt = &w->ki->vt;
	DirectKey	key;
	bool		isnull;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *vals,
			   *cnts;
	int			nvals,
				ncnts;
	Datum	   *nv,
			   *nc;
	int			m = 0;
	ItemPointerData tid;
	int64		n;

	key.att = rt->att_part_pid;
	key.eqproc = F_INT8EQ;
	key.value = Int64GetDatum(pid);
	if (!direct_fetch(d, rt->part_index, 1, &key))
		elog(ERROR, "keanon: partition %lld of %s is missing", (long long) pid,
			 get_rel_name(w->relid));
	tid = d->scan_slot->tts_tid;
	get_typlenbyvalalign(vt->typid, &typlen, &typbyval, &typalign);
	n = DatumGetInt64(slot_getattr(d->scan_slot, rt->att_n, &isnull));
	deconstruct_array(DatumGetArrayTypePCopy(slot_getattr(d->scan_slot, rt->att_vals, &isnull)),
					  vt->typid, typlen, typbyval, typalign, &vals, NULL, &nvals);
	deconstruct_array(DatumGetArrayTypePCopy(slot_getattr(d->scan_slot, rt->att_cnts, &isnull)),
					  INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &cnts, NULL, &ncnts);
	ExecClearTuple(d->scan_slot);
	if (nvals != ncnts)
		elog(ERROR, "keanon: partition %lld of %s has %d values and %d counts",
			 (long long) pid, get_rel_name(w->relid), nvals, ncnts);

	/* merge: the values stay sorted, a count that falls to zero goes */
	nv = palloc(sizeof(Datum) * (nvals + 1));
	nc = palloc(sizeof(Datum) * (nvals + 1));
	{
		KeNum		rnum = remove_d ? KeanonDatumToNum(vt, *remove_d) : (KeNum) {0};
		KeNum		anum = add_d ? KeanonDatumToNum(vt, *add_d) : (KeNum) {0};
		bool		added = add_d == NULL;

		for (int i = 0; i <= nvals; i++)
		{
			KeNum		x = {0};
			int64		c = 0;
			int			cmp = 1;

			if (i < nvals)
			{
				x = KeanonDatumToNum(vt, vals[i]);
				c = DatumGetInt64(cnts[i]);
				if (remove_d && ke_num_eq(vt->kind, x, rnum))
					c--;
			}
			if (!added)
				cmp = i < nvals ? ke_num_cmp(vt->kind, anum, x) : -1;
			if (!added && cmp < 0)
			{
				nv[m] = *add_d;
				nc[m++] = Int64GetDatum(1);
				added = true;
			}
			else if (!added && cmp == 0)
			{
				c++;
				added = true;
			}
			if (i < nvals && c > 0)
			{
				nv[m] = vals[i];
				nc[m++] = Int64GetDatum(c);
			}
		}
	}
	n += (add_d ? 1 : 0) - (remove_d ? 1 : 0);
	d->replace[rt->att_n - 1] = true;
	d->values[rt->att_n - 1] = Int64GetDatum(n);
	d->replace[rt->att_lo - 1] = true;
	d->values[rt->att_lo - 1] = KeanonNumToDatum(vt, lo);
	d->replace[rt->att_vals - 1] = true;
	d->values[rt->att_vals - 1] =
		PointerGetDatum(construct_array(nv, m, vt->typid, typlen, typbyval, typalign));
	d->replace[rt->att_cnts - 1] = true;
	d->values[rt->att_cnts - 1] =
		PointerGetDatum(construct_array(nc, m, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	direct_update(d, &tid);
	CommandCounterIncrement();
}

/*
 * direct.c
 *		The internal tables read and written without the executor: a row's
 *		place in the rows table, a reassignment's partitions and rows, a
 *		partition's summary, a single-row statement's row, a watch's
 *		counters.
 *
 * The O(1) permutation steps, a reassignment and a single-row INSERT,
 * UPDATE or DELETE touch a handful of rows each, found by (partition,
 * slot), by partition, by a partition's high end, by the watched table's
 * key, by tuple id or by a watch's table.  Run as SQL
 * statements, each costs an executor start-up, a plan's expression set-up
 * and a statement snapshot, several times the heap and index work itself.
 * This module does that work directly:
 *
 *	lookup	an index scan of an ascending btree on exactly the key columns,
 *			of the integer (or oid) operator family, with those operators'
 *			own support functions (a heap scan with the same keys should no
 *			such index exist), under SnapshotSelf; a range of partitions by
 *			their (hi) btree, and the rows showing a value by the
 *			(keanon_pid, keanon_pub) btree, in the value type's default
 *			order, its = taken from that family by OID (by the partition's
 *			slots should it be gone); a row by the
 *			watched table's key through the rows table's primary key, with
 *			the = of each column's family and the index's collation (the SQL
 *			statements run instead should that key be gone);
 *	update	heap_modify_tuple and simple_heap_update of the named columns at
 *			a tuple id, and, for a non-HOT update, insertion into every index
 *			of the table (the executor's own ExecInsertIndexTuples, so unique
 *			checks, partial and expression indexes an owner added behave as
 *			under SQL; the updated columns are declared, so that the
 *			"unchanged" hint goes only to the other indexes); from
 *			PostgreSQL 16, a HOT update that changed a column of a
 *			summarizing index (BRIN) inserts into those indexes only;
 *	insert	heap_form_tuple and simple_heap_insert, then the same index
 *			insertion (toasting as any heap insert does); the many rows of
 *			a watch's fill or of a multi-row INSERT are sorted into the
 *			order they are written in, then written with a bulk-insert
 *			state;
 *	delete	simple_heap_delete of a partition found by its id, or of a
 *			row found by its key.
 *
 * Why SnapshotSelf: every writer of a watch holds its keanon lock, so no
 * other transaction has an uncommitted change in its internal tables or in
 * its row of keanon.watches (a column rename, the one other writer of that
 * row, holds the watched table's exclusive lock until it commits), and
 * under a transaction snapshot KeanonCheckSnapshot has refused any writer
 * that committed after it.  What SnapshotSelf adds is this transaction's
 * own changes, including those of the current command, which a step needs
 * when it reads a row it just moved.  heap_update, though, refuses a
 * version made by the current command, so writes end with a command
 * counter increment; the SQL statements that follow (SPI advances the
 * counter before each) see these writes as they would any earlier
 * statement's.
 *
 * Nothing here looks up an operator by name.  The only functions called
 * are the support functions of the internal tables' indexes (built-in for
 * keanon's own columns; for the key, those of the operator classes the
 * rows table's primary key was built with, which only the table's owner,
 * as whom all maintenance runs, could have chosen).  Every value written
 * is formed here or copied from the watched table's row into the column of
 * the same name.  Triggers and rules on the internal tables, which only
 * their owner could add, do not fire for these writes.
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
#include "catalog/pg_index.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplesort.h"
#include "utils/typcache.h"

#include "maintain_int.h"
#include "pg_compat.h"

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
struct KeanonDirect
{
	bool		rows_open;
	DirectTable rows;
	Relation	slot_index;		/* (keanon_pid, keanon_slot), or NULL */
	Relation	pub_index;		/* (keanon_pid, keanon_pub), or NULL */
	int32		pub_from;		/* the least slot it holds (its predicate) */
	RegProcedure pub_eq;		/* its = for the values */
	AttrNumber	att_pid;
	AttrNumber	att_slot;
	AttrNumber	att_pub;
	AttrNumber	att_value;		/* the true value (the keanon index's column) */
	AttrNumber *src_att;		/* per column, the watched table's, or 0 */
	AttrNumber	src_value;		/* the watched table's sensitive column */
	AttrNumber	att_arrival;
	bool	   *is_qi;			/* per column: a quasi-identifier */
	bool		key_ready;		/* the key lookup below was looked for */
	Relation	key_index;		/* the primary key, or NULL */
	RegProcedure *key_eq;		/* per key column: its = in the index's family */
	AttrNumber *key_src;		/* per key column: the watched table's column */
	int16		typlen;			/* of the values */
	bool		typbyval;
	char		typalign;
	bool		parts_open;
	DirectTable parts;
	Relation	part_index;		/* (keanon_pid), or NULL */
	Relation	hi_index;		/* (hi) in the type's default order, or NULL */
	RegProcedure hi_ge;			/* its >= */
	AttrNumber	att_part_pid;
	AttrNumber	att_n;
	AttrNumber	att_lo;
	AttrNumber	att_lo_last_only;
	AttrNumber	att_hi;
	AttrNumber	att_hi_split;
	AttrNumber	att_vals;
	AttrNumber	att_cnts;
	AttrNumber	att_lo_slot;
	bool		watches_open;	/* keanon.watches, for the counters */
	DirectTable watches;
	Relation	watch_index;	/* (relid), or NULL */
	AttrNumber	att_relid;
	AttrNumber	att_generation;
	AttrNumber	att_next_pid;
	AttrNumber	att_next_arrival;
};

static void add_placed_row(KeanonDirect *rt, const KeanonValueType *vt, PlacedRow **rows,
						   int64 *n, int64 *cap);
static void part_rewrite(Watch *w, int64 pid, KeNum lo, const Datum *remove_d,
						 const Datum *adds, int nadds);

/* A column's number, which the watch's loading checked exists */
static AttrNumber
column_number(Oid relid, const char *name)
{
	AttrNumber	att = get_attnum(relid, name);

	if (att == InvalidAttrNumber)
		elog(ERROR, "keanon: column %s of %s is missing", name, get_rel_name(relid));
	return att;
}

/* The table column a single-column index is on */
static AttrNumber
index_column(Oid indexoid)
{
	HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	AttrNumber	att;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "keanon: cache lookup failed for index %u", indexoid);
	att = ((Form_pg_index) GETSTRUCT(tup))->indkey.values[0];
	ReleaseSysCache(tup);
	if (att == InvalidAttrNumber)
		elog(ERROR, "keanon: index %u is not on a column", indexoid);
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
	keanon_init_range_table(d->estate, rte);
	for (int i = 0; i < nupdated; i++)
		keanon_mark_column_updated(d->estate, updated[i]);
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

/*
 * The support function of a btree strategy of the value type's default
 * operator family (the type cache's), by OIDs, never by name; InvalidOid
 * when the type has none.  *opfamily is set to that family.
 */
static RegProcedure
default_btree_proc(Oid typid, int16 strategy, Oid *opfamily)
{
	Oid			op = InvalidOid;

	*opfamily = lookup_type_cache(typid, TYPECACHE_BTREE_OPFAMILY)->btree_opf;
	if (OidIsValid(*opfamily))
		op = get_opfamily_member(*opfamily, typid, typid, strategy);
	return OidIsValid(op) ? get_opcode(op) : InvalidOid;
}

/*
 * The least slot a partial index's predicate keeps, should it be exactly
 * "att >= c" for an integer constant c (the built-in int4 >=, by OID);
 * else -1
 */
static int32
slot_predicate(Relation index, AttrNumber att)
{
	List	   *pred = RelationGetIndexPredicate(index);
	OpExpr	   *op;
	Var		   *var;
	Const	   *c;

	if (list_length(pred) != 1 || !IsA(linitial(pred), OpExpr))
		return -1;
	op = linitial(pred);
	if (get_opcode(op->opno) != F_INT4GE || list_length(op->args) != 2 ||
		!IsA(linitial(op->args), Var) || !IsA(lsecond(op->args), Const))
		return -1;
	var = linitial(op->args);
	c = lsecond(op->args);
	if (var->varattno != att || c->constisnull || c->consttype != INT4OID)
		return -1;
	/* slots start at 0: a lower least slot keeps them all */
	return Max(DatumGetInt32(c->constvalue), 0);
}

/*
 * A plain ascending btree of the table on exactly the key columns, or NULL.
 * With from_att, also one whose predicate is "from_att >= c" (see
 * slot_predicate), c into *from (0 for an index without a predicate).
 */
static Relation
direct_index_from(DirectTable *d, int nkeys, const DirectKey *keys, AttrNumber from_att,
				  int32 *from)
{
	for (int i = 0; i < d->rri->ri_NumIndices; i++)
	{
		Relation	index = d->rri->ri_IndexRelationDescs[i];
		Form_pg_index ix = index->rd_index;
		bool		match;
		int32		least = 0;

		if (index->rd_rel->relam != BTREE_AM_OID || !ix->indisvalid || !ix->indisready ||
			ix->indnkeyatts != nkeys ||
			!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL))
			continue;
		if (!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			(from_att == InvalidAttrNumber || (least = slot_predicate(index, from_att)) < 0))
			continue;
		match = true;
		for (int k = 0; k < nkeys; k++)
			if (ix->indkey.values[k] != keys[k].att || index->rd_opfamily[k] != keys[k].opfamily ||
				index->rd_indoption[k] != 0)
				match = false;
		if (match)
		{
			if (from != NULL)
				*from = least;
			return index;
		}
	}
	return NULL;
}

/* A plain ascending btree of the table on exactly the key columns, or NULL */
static Relation
direct_index(DirectTable *d, int nkeys, const DirectKey *keys)
{
	return direct_index_from(d, nkeys, keys, InvalidAttrNumber, NULL);
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
		/* the slot's tuple header lives in the scan, which ends here */
		if (found)
			ExecMaterializeSlot(d->scan_slot);
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
	KeanonIndexUpdate which;

	old.t_self = *tid;
	if (!heap_fetch(d->rel, SnapshotSelf, &old, &buf, true))
		elog(ERROR, "keanon: row (%u,%u) of %s is missing",
			 ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid),
			 RelationGetRelationName(d->rel));
	newtup = heap_modify_tuple(&old, desc, d->values, d->nulls, d->replace);
	ReleaseBuffer(buf);
	memset(d->replace, 0, sizeof(bool) * desc->natts);
	memset(d->nulls, 0, sizeof(bool) * desc->natts);
	which = keanon_simple_heap_update(d->rel, tid, newtup);
	if (which != KEANON_INDEX_NONE)
	{
		ExecStoreHeapTuple(newtup, d->tslot, false);
		(void) keanon_insert_index_tuples(d->rri, d->tslot, d->estate, true, which);
		ExecClearTuple(d->tslot);
		ResetPerTupleExprContext(d->estate);
	}
	heap_freetuple(newtup);
}

/*
 * Insert a row of d->values and d->nulls (the nulls are cleared), with its
 * entry in every index of the table
 */
static void
direct_insert(DirectTable *d)
{
	TupleDesc	desc = RelationGetDescr(d->rel);
	HeapTuple	tup = heap_form_tuple(desc, d->values, d->nulls);

	memset(d->nulls, 0, sizeof(bool) * desc->natts);
	simple_heap_insert(d->rel, tup);
	ExecStoreHeapTuple(tup, d->tslot, false);
	(void) keanon_insert_index_tuples(d->rri, d->tslot, d->estate, false, KEANON_INDEX_ALL);
	ExecClearTuple(d->tslot);
	ResetPerTupleExprContext(d->estate);
	heap_freetuple(tup);
}

/* What the watch's write opened for direct access: each table at first use */
static KeanonDirect *
direct_state(Watch *w)
{
	if (w->rt == NULL)
		w->rt = palloc0(sizeof(KeanonDirect));
	return w->rt;
}

/* The state with the rows table open */
static KeanonDirect *
rows_table(Watch *w)
{
	KeanonDirect *rt = direct_state(w);
	AttrNumber	updated[3];
	DirectKey	keys[2];

	if (rt->rows_open)
		return rt;
	rt->att_pid = updated[0] = column_number(w->rows_oid, "keanon_pid");
	rt->att_slot = updated[1] = column_number(w->rows_oid, "keanon_slot");
	rt->att_pub = updated[2] = column_number(w->rows_oid, "keanon_pub");
	rt->att_arrival = column_number(w->rows_oid, "keanon_arrival");
	rt->att_value = index_column(w->index_oid);
	get_typlenbyvalalign(w->ki->vt.typid, &rt->typlen, &rt->typbyval, &rt->typalign);
	direct_open(&rt->rows, w->rows_oid, updated, 3);
	KeanonCheckRowsLayout(w, rt->rows.rel);
	keys[0].att = rt->att_pid;
	keys[0].opfamily = KEANON_INTEGER_BTREE_FAM;
	keys[1].att = rt->att_slot;
	keys[1].opfamily = KEANON_INTEGER_BTREE_FAM;
	rt->slot_index = direct_index(&rt->rows, 2, keys);
	/* (keanon_pid, keanon_pub), the second column in the values' default order */
	keys[1].att = rt->att_pub;
	rt->pub_eq = default_btree_proc(w->ki->vt.typid, BTEqualStrategyNumber, &keys[1].opfamily);
	if (OidIsValid(rt->pub_eq))
	{
		rt->pub_index = direct_index_from(&rt->rows, 2, keys, rt->att_slot, &rt->pub_from);
		if (rt->pub_index != NULL && rt->pub_index->rd_opcintype[1] != w->ki->vt.typid)
			rt->pub_index = NULL;
	}

	/* the watched table's columns copied into the rows table, by name */
	{
		TupleDesc	desc = RelationGetDescr(rt->rows.rel);
		ListCell   *lc;

		rt->src_att = palloc0(sizeof(AttrNumber) * desc->natts);
		rt->is_qi = palloc0(sizeof(bool) * desc->natts);
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute a = TupleDescAttr(desc, i);

			if (a->attisdropped || strncmp(NameStr(a->attname), "keanon_", 7) == 0)
				continue;
			/* (a column only the rows table has stays null) */
			rt->src_att[i] = get_attnum(w->relid, NameStr(a->attname));
			/* an UPDATE copies the quasi-identifiers, so they are declared updated too */
			foreach(lc, w->qis)
				if (strcmp(lfirst(lc), quote_identifier(NameStr(a->attname))) == 0)
					rt->is_qi[i] = rt->src_att[i] > 0;
			if (rt->is_qi[i])
				keanon_mark_column_updated(rt->rows.estate, i + 1);
			if (i + 1 == rt->att_value)
				rt->src_value = rt->src_att[i];
		}
		if (rt->src_value == InvalidAttrNumber)
			elog(ERROR, "keanon: the sensitive column of %s is missing", get_rel_name(w->relid));
	}
	rt->rows_open = true;
	return rt;
}

/* The state with the parts table open too */
static KeanonDirect *
parts_table(Watch *w)
{
	KeanonDirect *rt = rows_table(w);
	AttrNumber	updated[4];
	DirectKey	key;

	if (rt->parts_open)
		return rt;
	rt->att_part_pid = column_number(w->parts_oid, "keanon_pid");
	rt->att_n = updated[0] = column_number(w->parts_oid, "n");
	rt->att_lo = updated[1] = column_number(w->parts_oid, "lo");
	rt->att_vals = updated[2] = column_number(w->parts_oid, "vals");
	rt->att_cnts = updated[3] = column_number(w->parts_oid, "cnts");
	rt->att_lo_last_only = column_number(w->parts_oid, "lo_last_only");
	rt->att_hi = column_number(w->parts_oid, "hi");
	rt->att_hi_split = column_number(w->parts_oid, "hi_split");
	rt->att_lo_slot = column_number(w->parts_oid, "lo_slot");
	direct_open(&rt->parts, w->parts_oid, updated, 4);
	KeanonCheckPartsLayout(w, rt->parts.rel);
	key.att = rt->att_part_pid;
	key.opfamily = KEANON_INTEGER_BTREE_FAM;
	rt->part_index = direct_index(&rt->parts, 1, &key);

	/*
	 * (hi): an ascending btree in the default order of the value type,
	 * whose >= comes from that operator family (the type cache's), by OIDs,
	 * never by name
	 */
	key.att = rt->att_hi;
	rt->hi_ge = default_btree_proc(w->ki->vt.typid, BTGreaterEqualStrategyNumber, &key.opfamily);
	if (OidIsValid(rt->hi_ge))
	{
		rt->hi_index = direct_index(&rt->parts, 1, &key);
		if (rt->hi_index != NULL && rt->hi_index->rd_opcintype[0] != w->ki->vt.typid)
			rt->hi_index = NULL;
	}
	rt->parts_open = true;
	return rt;
}

/* Close what the watch's write opened for direct access */
void
KeanonDirectClose(Watch *w)
{
	KeanonDirect *rt = w->rt;

	if (rt == NULL)
		return;
	if (rt->watches_open)
		direct_close(&rt->watches);
	if (rt->parts_open)
		direct_close(&rt->parts);
	if (rt->rows_open)
		direct_close(&rt->rows);
	pfree(rt);
	w->rt = NULL;
}

/* The state with keanon.watches open, its row of the watch into scan_slot */
static KeanonDirect *
watch_row(Watch *w)
{
	KeanonDirect *rt = direct_state(w);
	DirectKey	key;

	if (!rt->watches_open)
	{
		Oid			relid = get_relname_relid("watches", get_namespace_oid("keanon", false));
		AttrNumber	updated[3];

		if (!OidIsValid(relid))
			elog(ERROR, "keanon: keanon.watches is missing");
		rt->att_relid = column_number(relid, "relid");
		rt->att_generation = updated[0] = column_number(relid, "generation");
		rt->att_next_pid = updated[1] = column_number(relid, "next_pid");
		rt->att_next_arrival = updated[2] = column_number(relid, "next_arrival");
		direct_open(&rt->watches, relid, updated, 3);
		key.att = rt->att_relid;
		key.opfamily = KEANON_OID_BTREE_FAM;
		rt->watch_index = direct_index(&rt->watches, 1, &key);
		rt->watches_open = true;
	}
	key.att = rt->att_relid;
	key.eqproc = F_OIDEQ;
	key.value = ObjectIdGetDatum(w->relid);
	if (!direct_fetch(&rt->watches, rt->watch_index, 1, &key))
		elog(ERROR, "keanon: the watch of %s vanished", get_rel_name(w->relid));
	return rt;
}

/*
 * Read the watch's counters (next_pid, next_arrival) as the last writer
 * left them: under the keanon lock that writer has committed.
 */
void
KeanonWatchCountersRead(Watch *w)
{
	KeanonDirect *rt = watch_row(w);
	TupleTableSlot *slot = rt->watches.scan_slot;
	bool		isnull;

	w->next_pid = DatumGetInt64(slot_getattr(slot, rt->att_next_pid, &isnull));
	w->next_arrival = DatumGetInt64(slot_getattr(slot, rt->att_next_arrival, &isnull));
	ExecClearTuple(slot);
}

/*
 * Record the counters of the watch, and bump its generation: a REPEATABLE
 * READ or SERIALIZABLE writer whose snapshot predates this transaction's
 * commit will see the change (KeanonCheckSnapshot).
 */
void
KeanonSaveWatch(Watch *w)
{
	KeanonDirect *rt = watch_row(w);
	DirectTable *d = &rt->watches;
	ItemPointerData tid = d->scan_slot->tts_tid;
	bool		isnull;
	int64		generation = DatumGetInt64(slot_getattr(d->scan_slot, rt->att_generation,
														 &isnull));
	int64		saved_pid = DatumGetInt64(slot_getattr(d->scan_slot, rt->att_next_pid, &isnull));

	/* partition ids are the watch's number times 10^12 plus a counter */
	if (saved_pid / KEANON_PIDS_PER_WATCH != w->next_pid / KEANON_PIDS_PER_WATCH)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the watch of %s has used all its partition ids", get_rel_name(w->relid)),
				 errhint("Call keanon.unwatch and watch the table again.")));
	ExecClearTuple(d->scan_slot);
	d->replace[rt->att_generation - 1] = true;
	d->values[rt->att_generation - 1] = Int64GetDatum(generation + 1);
	d->replace[rt->att_next_pid - 1] = true;
	d->values[rt->att_next_pid - 1] = Int64GetDatum(w->next_pid);
	d->replace[rt->att_next_arrival - 1] = true;
	d->values[rt->att_next_arrival - 1] = Int64GetDatum(w->next_arrival);
	direct_update(d, &tid);
	CommandCounterIncrement();
}

/* The row at slot of partition pid into the rows table's scan slot */
static bool
fetch_at_slot(KeanonDirect *rt, int64 pid, int32 slot)
{
	DirectKey	keys[2];

	keys[0].att = rt->att_pid;
	keys[0].eqproc = F_INT8EQ;
	keys[0].value = Int64GetDatum(pid);
	keys[1].att = rt->att_slot;
	keys[1].eqproc = F_INT4EQ;
	keys[1].value = Int32GetDatum(slot);
	return direct_fetch(&rt->rows, rt->slot_index, 2, keys);
}

/*
 * The row at slot of partition pid: its tuple id into *tid and, if pub is
 * not NULL, its published value into *pub (copied; a null as (Datum) 0
 * with *pubnull).  False when no row sits there.
 */
bool
KeanonRowAtSlot(Watch *w, int64 pid, int32 slot, ItemPointer tid, Datum *pub, bool *pubnull)
{
	KeanonDirect *rt = rows_table(w);

	if (!fetch_at_slot(rt, pid, slot))
		return false;
	*tid = rt->rows.scan_slot->tts_tid;
	if (pub != NULL)
	{
		Datum		d = slot_getattr(rt->rows.scan_slot, rt->att_pub, pubnull);

		*pub = *pubnull ? (Datum) 0 : datumCopy(d, rt->typbyval, rt->typlen);
	}
	ExecClearTuple(rt->rows.scan_slot);
	return true;
}

/* The watched table's column that holds the sensitive value */
AttrNumber
KeanonSourceValueAtt(Watch *w)
{
	return rows_table(w)->src_value;
}

/*
 * Insert into the rows table the watched table's row in src (a slot of the
 * table's descriptor), arriving as arrival, and, if pid is not NULL,
 * placed at slot showing pub.  Ends with a command counter increment.
 */
void
KeanonRowInsert(Watch *w, TupleTableSlot *src, int64 arrival, const Datum *pid,
				const Datum *slot, const Datum *pub)
{
	KeanonDirect *rt = rows_table(w);
	DirectTable *d = &rt->rows;
	TupleDesc	desc = RelationGetDescr(d->rel);

	slot_getallattrs(src);
	for (int i = 0; i < desc->natts; i++)
	{
		AttrNumber	a = rt->src_att[i];

		d->values[i] = a > 0 ? src->tts_values[a - 1] : (Datum) 0;
		d->nulls[i] = a > 0 ? src->tts_isnull[a - 1] : true;
	}
	d->values[rt->att_arrival - 1] = Int64GetDatum(arrival);
	d->nulls[rt->att_arrival - 1] = false;
	if (pid != NULL)
	{
		d->values[rt->att_pid - 1] = *pid;
		d->nulls[rt->att_pid - 1] = false;
		d->values[rt->att_slot - 1] = *slot;
		d->nulls[rt->att_slot - 1] = false;
		d->values[rt->att_pub - 1] = *pub;
		d->nulls[rt->att_pub - 1] = false;
	}
	direct_insert(d);
	CommandCounterIncrement();
}

/* rows written by one multi-insert, at most, as COPY batches them */
#define KEANON_INSERT_BATCH			1000
#define KEANON_INSERT_BATCH_BYTES	65536

/*
 * Sort the fresh rows f into writing order: each as a row of the rows
 * table (sdesc, with a rank column after its own when f is not placed)
 */
static Tuplesortstate *
sort_fresh_rows(Watch *w, FreshRows *f, const int64 *rank, TupleDesc sdesc,
				TupleTableSlot *(*next) (void *arg), void *arg)
{
	KeanonDirect *rt = rows_table(w);
	int			natts = RelationGetDescr(rt->rows.rel)->natts;
	AttrNumber	keys[2] = {rt->att_pid, rt->att_slot};
	Oid			lt[2] = {Int8LessOperator, Int4LessOperator};
	Oid			colls[2] = {InvalidOid, InvalidOid};
	bool		nulls_first[2] = {false, false};
	int			nkeys = 2;
	Tuplesortstate *sort;
	TupleTableSlot *in;

	if (!f->placed)
	{
		keys[0] = natts + 1;
		nkeys = 1;
	}
	sort = tuplesort_begin_heap(sdesc, nkeys, keys, lt, colls, nulls_first,
								maintenance_work_mem, NULL, TUPLESORT_NONE);
	in = MakeSingleTupleTableSlot(sdesc, &TTSOpsVirtual);
	for (int64 i = 0; i < f->n; i++)
	{
		TupleTableSlot *src = next(arg);

		if (src == NULL)
			elog(ERROR, "keanon: read %lld new rows of %s, expected %lld",
				 (long long) i, get_rel_name(w->relid), (long long) f->n);
		slot_getallattrs(src);
		ExecClearTuple(in);
		for (int j = 0; j < natts; j++)
		{
			AttrNumber	a = rt->src_att[j];

			in->tts_values[j] = a > 0 ? src->tts_values[a - 1] : (Datum) 0;
			in->tts_isnull[j] = a > 0 ? src->tts_isnull[a - 1] : true;
		}
		in->tts_values[rt->att_arrival - 1] = Int64GetDatum(f->arrival0 + i + 1);
		in->tts_isnull[rt->att_arrival - 1] = false;
		if (f->placed)
		{
			in->tts_values[rt->att_pid - 1] = f->pid[i];
			in->tts_isnull[rt->att_pid - 1] = false;
			in->tts_values[rt->att_slot - 1] = f->slot[i];
			in->tts_isnull[rt->att_slot - 1] = false;
			in->tts_values[rt->att_pub - 1] = f->pub[i];
			in->tts_isnull[rt->att_pub - 1] = false;
		}
		else
		{
			in->tts_values[natts] = Int64GetDatum(rank[i]);
			in->tts_isnull[natts] = false;
		}
		ExecStoreVirtualTuple(in);
		tuplesort_puttupleslot(sort, in);
		CHECK_FOR_INTERRUPTS();
	}
	if (next(arg) != NULL)
		elog(ERROR, "keanon: more new rows of %s than the %lld read before",
			 get_rel_name(w->relid), (long long) f->n);
	ExecDropSingleTupleTableSlot(in);
	tuplesort_performsort(sort);
	return sort;
}

/*
 * Write the sorted rows into the rows table by multi-inserts with a
 * bulk-insert state, and into every index but keanon's own
 */
static void
write_sorted_rows(Watch *w, Tuplesortstate *sort, TupleDesc sdesc)
{
	DirectTable *d = &rows_table(w)->rows;
	TupleDesc	desc = RelationGetDescr(d->rel);
	CommandId	cid = GetCurrentCommandId(true);
	bool		btrees = false;
	TupleTableSlot *out = MakeSingleTupleTableSlot(sdesc, &TTSOpsMinimalTuple);
	BulkInsertState bistate = GetBulkInsertState();
	TupleTableSlot **batch = palloc0(sizeof(TupleTableSlot *) * KEANON_INSERT_BATCH);
	int			nbatch = 0;
	Size		batch_bytes = 0;

	for (int i = 0; i < d->rri->ri_NumIndices; i++)
		if (RelationGetRelid(d->rri->ri_IndexRelationDescs[i]) != w->index_oid)
			btrees = true;
	for (;;)
	{
		bool		more = tuplesort_gettupleslot(sort, true, false, out, NULL);

		if (more)
		{
			HeapTuple	tup;

			/* the rows table's columns (without the ranks), copied */
			slot_getallattrs(out);
			tup = heap_form_tuple(desc, out->tts_values, out->tts_isnull);
			batch_bytes += tup->t_len;
			if (batch[nbatch] == NULL)
				batch[nbatch] = MakeSingleTupleTableSlot(desc, &TTSOpsHeapTuple);
			ExecStoreHeapTuple(tup, batch[nbatch++], true);
		}
		if (nbatch > 0 &&
			(!more || nbatch == KEANON_INSERT_BATCH || batch_bytes >= KEANON_INSERT_BATCH_BYTES))
		{
			/* a page's tuples in one WAL record, as COPY writes them */
			table_multi_insert(d->rel, batch, nbatch, cid, 0, bistate);
			for (int i = 0; i < nbatch && btrees; i++)
			{
				(void) keanon_insert_index_tuples(d->rri, batch[i], d->estate, false,
												  KEANON_INDEX_ALL);
				ResetPerTupleExprContext(d->estate);
			}
			nbatch = 0;
			batch_bytes = 0;
		}
		if (!more)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	for (int i = 0; i < KEANON_INSERT_BATCH && batch[i] != NULL; i++)
		ExecDropSingleTupleTableSlot(batch[i]);
	pfree(batch);
	FreeBulkInsertState(bistate);
	ExecDropSingleTupleTableSlot(out);
}

/*
 * Insert into the rows table the fresh rows f of the watched table: row i
 * (from 0) is what the i-th call of next(arg) returns (a slot of the
 * table's descriptor) and arrives as f->arrival0 + i + 1.  Placed rows
 * (f->placed) are written in (partition, slot) order, the others in the
 * order of rank[] (row i rank[i]-th).  The rows go through a sort (in
 * maintenance_work_mem, spilling as CREATE INDEX's does), then into the
 * heap by multi-inserts with a bulk-insert state, as COPY writes them, and
 * into every index but keanon's own, whose changes come from the
 * triggers.  Ends with a command counter increment.
 */
void
KeanonRowsInsertMany(Watch *w, FreshRows *f, const int64 *rank,
					 TupleTableSlot *(*next) (void *arg), void *arg)
{
	KeanonDirect *rt = rows_table(w);
	TupleDesc	desc = RelationGetDescr(rt->rows.rel);
	int			natts = desc->natts;
	TupleDesc	sdesc = desc;
	Tuplesortstate *sort;

	if (!f->placed)
	{
		/* a column of ranks after the rows table's own, sorted on */
		sdesc = CreateTemplateTupleDesc(natts + 1);
		for (AttrNumber a = 1; a <= natts; a++)
			TupleDescCopyEntry(sdesc, a, desc, a);
		TupleDescInitEntry(sdesc, natts + 1, "keanon_rank", INT8OID, -1, 0);
	}
	sort = sort_fresh_rows(w, f, rank, sdesc, next, arg);
	write_sorted_rows(w, sort, sdesc);
	tuplesort_end(sort);
	CommandCounterIncrement();
}

/*
 * The rows table's primary key, for a row found by the watched table's key:
 * a plain btree on the watch's key columns, each with the = of its operator
 * family for its input type.  NULL when there is none.
 */
static Relation
key_index(Watch *w, KeanonDirect *rt)
{
	DirectTable *d = &rt->rows;
	int			nwatchkeys = list_length(w->keys);

	if (rt->key_ready)
		return rt->key_index;
	rt->key_ready = true;
	for (int i = 0; i < d->rri->ri_NumIndices; i++)
	{
		Relation	index = d->rri->ri_IndexRelationDescs[i];
		Form_pg_index ix = index->rd_index;
		int			nkeys = ix->indnkeyatts;

		if (!ix->indisprimary || index->rd_rel->relam != BTREE_AM_OID || !ix->indisvalid ||
			!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) ||
			!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
			continue;
		if (nkeys != nwatchkeys)
			return NULL;
		rt->key_eq = palloc(sizeof(RegProcedure) * nkeys);
		rt->key_src = palloc(sizeof(AttrNumber) * nkeys);
		for (int k = 0; k < nkeys; k++)
		{
			AttrNumber	att = ix->indkey.values[k];
			Oid			op = get_opfamily_member(index->rd_opfamily[k], index->rd_opcintype[k],
												 index->rd_opcintype[k], BTEqualStrategyNumber);

			bool		is_key = false;

			if (att <= 0 || rt->src_att[att - 1] <= 0 || !OidIsValid(op))
				return NULL;
			/* on the watch's own key columns, or a key change could go unseen */
			for (int j = 0; j < nwatchkeys; j++)
				is_key |= w->watched_attnums[j] == rt->src_att[att - 1];
			if (!is_key)
				return NULL;
			rt->key_eq[k] = get_opcode(op);
			rt->key_src[k] = rt->src_att[att - 1];
		}
		rt->key_index = index;
		break;
	}
	return rt->key_index;
}

/*
 * The rows table's row of the watched table's row in src, found by its key
 * under SnapshotSelf, into the rows table's scan slot: 1, or 0 when no row
 * has that key (a row without a value is not watched), or -1 when the rows
 * table has no primary key to find it by.
 */
static int
find_by_key(Watch *w, KeanonDirect *rt, TupleTableSlot *src)
{
	Relation	index = key_index(w, rt);
	ScanKeyData sk[INDEX_MAX_KEYS];
	IndexScanDesc scan;
	int			nkeys;
	bool		found;

	if (index == NULL)
		return -1;
	nkeys = index->rd_index->indnkeyatts;
	for (int k = 0; k < nkeys; k++)
	{
		bool		isnull;
		Datum		v = slot_getattr(src, rt->key_src[k], &isnull);

		if (isnull)
			return 0;			/* (no key is null in a primary key) */
		ScanKeyInit(&sk[k], k + 1, BTEqualStrategyNumber, rt->key_eq[k], v);
		sk[k].sk_collation = index->rd_indcollation[k];
	}
	scan = index_beginscan(rt->rows.rel, index, SnapshotSelf, nkeys, 0);
	index_rescan(scan, sk, nkeys, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, rt->rows.scan_slot);
	index_endscan(scan);
	return found ? 1 : 0;
}

/*
 * Whether the watched table's rows in a and b have the same key, by the
 * equality of the rows table's primary key, into *same_key, and the same
 * value (both null, or equal by the = of the value type's default btree
 * family) into *same_value.  False when the rows table has no primary key.
 */
bool
KeanonSameKeyAndValue(Watch *w, TupleTableSlot *a, TupleTableSlot *b, bool *same_key,
					  bool *same_value)
{
	KeanonDirect *rt = rows_table(w);
	Relation	index = key_index(w, rt);
	bool		anull,
				bnull;
	Datum		av,
				bv;

	if (index == NULL || !OidIsValid(rt->pub_eq))
		return false;
	*same_key = true;
	for (int k = 0; k < index->rd_index->indnkeyatts && *same_key; k++)
	{
		av = slot_getattr(a, rt->key_src[k], &anull);
		bv = slot_getattr(b, rt->key_src[k], &bnull);
		*same_key = !anull && !bnull &&
			DatumGetBool(OidFunctionCall2Coll(rt->key_eq[k], index->rd_indcollation[k], av, bv));
	}
	av = slot_getattr(a, rt->src_value, &anull);
	bv = slot_getattr(b, rt->src_value, &bnull);
	*same_value = anull || bnull ? anull == bnull :
		DatumGetBool(OidFunctionCall2Coll(rt->pub_eq, InvalidOid, av, bv));
	return true;
}

/*
 * Delete the rows table's row of the watched table's row in src (found by
 * its key through the rows table's primary key), its value, partition,
 * slot and published value into *out (pid 0 when unplaced).  Returns 1,
 * or 0 when no row has that key, or -1 when the rows table has no primary
 * key to find it by.  Ends with a command counter increment.
 */
int
KeanonRowDelete(Watch *w, TupleTableSlot *src, PlacedRow *out)
{
	KeanonDirect *rt = rows_table(w);
	TupleTableSlot *slot = rt->rows.scan_slot;
	int			found = find_by_key(w, rt, src);
	ItemPointerData tid;
	int64		n = 0,
				cap = 1;

	if (found <= 0)
		return found;
	tid = slot->tts_tid;
	/* (an unplaced row comes out with partition 0) */
	add_placed_row(rt, &w->ki->vt, &out, &n, &cap);
	simple_heap_delete(rt->rows.rel, &tid);
	CommandCounterIncrement();
	return 1;
}

/*
 * Give the rows table's row of the watched table's row in src that row's
 * quasi-identifiers, where their binary images differ (as the SQL's
 * record_image_eq did); *changed tells whether it was updated.  Returns
 * 1, or 0 when no row has that key, or -1 without a primary key.  Ends
 * with a command counter increment when it updates.
 */
int
KeanonRowSetQis(Watch *w, TupleTableSlot *src, bool *changed)
{
	KeanonDirect *rt = rows_table(w);
	DirectTable *d = &rt->rows;
	TupleTableSlot *slot = d->scan_slot;
	TupleDesc	desc = RelationGetDescr(d->rel);
	int			found = find_by_key(w, rt, src);
	ItemPointerData tid;

	*changed = false;
	if (found <= 0)
		return found;
	tid = slot->tts_tid;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);
		bool		oldnull,
					newnull;
		Datum		oldv,
					newv;

		if (!rt->is_qi[i])
			continue;
		oldv = slot_getattr(slot, i + 1, &oldnull);
		newv = slot_getattr(src, rt->src_att[i], &newnull);
		if (oldnull == newnull &&
			(oldnull || datum_image_eq(oldv, newv, a->attbyval, a->attlen)))
			continue;
		d->replace[i] = true;
		d->values[i] = newv;
		d->nulls[i] = newnull;
		*changed = true;
	}
	ExecClearTuple(slot);
	if (*changed)
	{
		direct_update(d, &tid);
		CommandCounterIncrement();
	}
	return 1;
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
	KeanonDirect *rt = rows_table(w);
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
	part_rewrite(w, pid, lo, remove_d, add_d, add_d != NULL ? 1 : 0);
}

/* The same after the rows of values adds[] (nadds of them, sorted) joined */
void
KeanonPartJoined(Watch *w, int64 pid, KeNum lo, const Datum *adds, int nadds)
{
	part_rewrite(w, pid, lo, NULL, adds, nadds);
}

/*
 * Rewrite partition pid's row: one row of value remove_d (or none, NULL)
 * left, the rows of values adds[] (sorted) joined, lo its lowest value
 */
static void
part_rewrite(Watch *w, int64 pid, KeNum lo, const Datum *remove_d, const Datum *adds, int nadds)
{
	KeanonDirect *rt = parts_table(w);
	DirectTable *d = &rt->parts;
	const KeanonValueType *vt = &w->ki->vt;
	DirectKey	key;
	bool		isnull;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *vals,
			   *cnts;
	int			nvals;
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
	{
		bool		cnull;
		Datum		vd = slot_getattr(d->scan_slot, rt->att_vals, &isnull);
		Datum		cd = slot_getattr(d->scan_slot, rt->att_cnts, &cnull);

		KeanonPartArrays(w->relid, vd, isnull, cd, cnull, vt->typid, true, &vals, &cnts, &nvals);
	}
	ExecClearTuple(d->scan_slot);

	/* merge: the values stay sorted, a count that falls to zero goes */
	nv = palloc(sizeof(Datum) * (nvals + nadds));
	nc = palloc(sizeof(Datum) * (nvals + nadds));
	{
		KeNum		rnum = remove_d ? KeanonDatumToNum(vt, *remove_d) : (KeNum) {0};
		int			a = 0;

		for (int i = 0; i <= nvals; i++)
		{
			KeNum		x = {0};
			int64		c = 0;

			if (i < nvals)
			{
				x = KeanonDatumToNum(vt, vals[i]);
				c = DatumGetInt64(cnts[i]);
				if (remove_d && ke_num_eq(vt->kind, x, rnum))
					c--;
			}
			/* the added values below this one, then those equal to it */
			while (a < nadds && (i == nvals || ke_num_cmp(vt->kind, KeanonDatumToNum(vt, adds[a]), x) < 0))
			{
				if (m > 0 && ke_num_eq(vt->kind, KeanonDatumToNum(vt, nv[m - 1]),
									   KeanonDatumToNum(vt, adds[a])))
					nc[m - 1] = Int64GetDatum(DatumGetInt64(nc[m - 1]) + 1);
				else
				{
					nv[m] = adds[a];
					nc[m++] = Int64GetDatum(1);
				}
				a++;
			}
			for (; i < nvals && a < nadds && ke_num_eq(vt->kind, KeanonDatumToNum(vt, adds[a]), x); a++)
				c++;
			if (i < nvals && c > 0)
			{
				nv[m] = vals[i];
				nc[m++] = Int64GetDatum(c);
			}
		}
	}
	n += nadds - (remove_d ? 1 : 0);
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

/* Order rows by (value, arrival), as a split run is decided (qsort_arg) */
int
KeanonValueArrivalCmp(const void *a, const void *b, void *arg)
{
	const PlacedRow *x = a;
	const PlacedRow *y = b;
	int			c = ke_num_cmp(*(const KeKind *) arg, x->num, y->num);

	if (c != 0)
		return c;
	return x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
}

static int
int64_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

/* Append the row in the rows table's scan slot to rows[] */
static void
add_placed_row(KeanonDirect *rt, const KeanonValueType *vt, PlacedRow **rows,
			   int64 *n, int64 *cap)
{
	TupleTableSlot *slot = rt->rows.scan_slot;
	PlacedRow  *r;
	bool		isnull;
	Datum		d;

	if (*n == *cap)
	{
		*cap = *cap * 2 + 64;
		*rows = *rows ? repalloc_huge(*rows, sizeof(PlacedRow) * *cap)
			: MemoryContextAllocHuge(CurrentMemoryContext, sizeof(PlacedRow) * *cap);
	}
	r = &(*rows)[(*n)++];
	r->tid = slot->tts_tid;
	d = slot_getattr(slot, rt->att_value, &isnull);
	if (isnull)
		elog(ERROR, "keanon: a placed row of %s has no value",
			 RelationGetRelationName(rt->rows.rel));
	r->value = datumCopy(d, rt->typbyval, rt->typlen);
	r->num = KeanonDatumToNum(vt, r->value);
	r->arrival = DatumGetInt64(slot_getattr(slot, rt->att_arrival, &isnull));
	r->fresh = -1;
	r->pid = DatumGetInt64(slot_getattr(slot, rt->att_pid, &isnull));
	r->slot = 0;
	r->pub = (Datum) 0;
	/* a row with a partition has its slot and published value: keanon writes no other */
	if (!isnull)
	{
		bool		slotnull,
					pubnull;

		r->slot = DatumGetInt32(slot_getattr(slot, rt->att_slot, &slotnull));
		d = slot_getattr(slot, rt->att_pub, &pubnull);
		if (slotnull || pubnull)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("a placed row of %s lacks its slot or published value",
							RelationGetRelationName(rt->rows.rel)),
					 errhint("Undo the change to the internal table, or call keanon.republish.")));
		r->pub = datumCopy(d, rt->typbyval, rt->typlen);
	}
	ExecClearTuple(slot);
}

/*
 * The rows of the partitions pids[0 .. npids) (distinct), in (value,
 * arrival) order: one index range scan per partition, or one heap scan
 * should the (keanon_pid, keanon_slot) index be gone.
 */
PlacedRow *
KeanonRowsOfPartitions(Watch *w, const int64 *pids, int npids, int64 *nrows)
{
	KeanonDirect *rt = rows_table(w);
	const KeanonValueType *vt = &w->ki->vt;
	KeKind		kind = vt->kind;
	PlacedRow  *rows = NULL;
	int64		n = 0,
				cap = 0;
	TupleTableSlot *slot = rt->rows.scan_slot;

	if (rt->slot_index != NULL)
	{
		IndexScanDesc scan = index_beginscan(rt->rows.rel, rt->slot_index, SnapshotSelf, 1, 0);
		ScanKeyData sk;

		for (int i = 0; i < npids; i++)
		{
			ScanKeyInit(&sk, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(pids[i]));
			index_rescan(scan, &sk, 1, NULL, 0);
			while (index_getnext_slot(scan, ForwardScanDirection, slot))
				add_placed_row(rt, vt, &rows, &n, &cap);
		}
		index_endscan(scan);
	}
	else if (npids > 0)
	{
		int64	   *sorted = palloc(sizeof(int64) * npids);
		TableScanDesc scan;

		memcpy(sorted, pids, sizeof(int64) * npids);
		qsort(sorted, npids, sizeof(int64), int64_cmp);
		scan = table_beginscan(rt->rows.rel, SnapshotSelf, 0, NULL);
		while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
		{
			bool		isnull;
			int64		p = DatumGetInt64(slot_getattr(slot, rt->att_pid, &isnull));

			if (!isnull && bsearch(&p, sorted, npids, sizeof(int64), int64_cmp) != NULL)
				add_placed_row(rt, vt, &rows, &n, &cap);
			else
				ExecClearTuple(slot);
		}
		table_endscan(scan);
		pfree(sorted);
	}
	if (rows == NULL)
		rows = palloc(sizeof(PlacedRow));
	qsort_arg(rows, n, sizeof(PlacedRow), KeanonValueArrivalCmp, &kind);
	*nrows = n;
	return rows;
}

/*
 * The row at slot of partition pid, with its value, arrival and published
 * value, into *out.  False when no row sits there.
 */
bool
KeanonPlacedRowAt(Watch *w, int64 pid, int32 slot, PlacedRow *out)
{
	KeanonDirect *rt = rows_table(w);
	int64		n = 0,
				cap = 1;

	if (!fetch_at_slot(rt, pid, slot))
		return false;
	add_placed_row(rt, &w->ki->vt, &out, &n, &cap);
	return true;
}

/* Append a slot to the growing array *slots of *n (capacity *cap) */
static void
add_slot(int32 **slots, int64 *n, int64 *cap, int32 slot)
{
	if (*n == *cap)
	{
		*cap *= 2;
		*slots = repalloc_huge(*slots, sizeof(int32) * *cap);
	}
	(*slots)[(*n)++] = slot;
}

/*
 * The slots of partition pid whose rows show the value pub: one scan of the
 * (keanon_pid, keanon_pub) index and, when that index holds only the slots
 * from some least one up (a partial index, as keanon.watch builds it, so
 * that the many small partitions' rows cost no entry there), one of the
 * (keanon_pid, keanon_slot) index below it.  Without the first (an owner
 * may drop it, so that a change of a published value alone is a HOT
 * update), one scan of the partition's slots; without either, of its rows.
 * Returns their number, the slots into *slots.
 */
int64
KeanonSlotsShowing(Watch *w, int64 pid, Datum pub, int32 **slots)
{
	KeanonDirect *rt = rows_table(w);
	const KeanonValueType *vt = &w->ki->vt;
	KeNum		target = KeanonDatumToNum(vt, pub);
	int64		n = 0;
	bool		by_pub = rt->pub_index != NULL && (rt->pub_from == 0 || rt->slot_index != NULL);

	if (by_pub || rt->slot_index != NULL)
	{
		TupleTableSlot *slot = rt->rows.scan_slot;
		IndexScanDesc scan;
		ScanKeyData sk[2];
		int64		cap = 16;
		bool		isnull;

		*slots = palloc(sizeof(int32) * cap);
		if (by_pub)
		{
			scan = index_beginscan(rt->rows.rel, rt->pub_index, SnapshotSelf, 2, 0);
			ScanKeyInit(&sk[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(pid));
			ScanKeyInit(&sk[1], 2, BTEqualStrategyNumber, rt->pub_eq, pub);
			sk[1].sk_collation = rt->pub_index->rd_indcollation[1];
			index_rescan(scan, sk, 2, NULL, 0);
			while (index_getnext_slot(scan, ForwardScanDirection, slot))
			{
				add_slot(slots, &n, &cap, DatumGetInt32(slot_getattr(slot, rt->att_slot, &isnull)));
				ExecClearTuple(slot);
			}
			index_endscan(scan);
		}
		if (!by_pub || rt->pub_from > 0)
		{
			/* the slots the (keanon_pid, keanon_pub) index does not hold */
			int			nkeys = by_pub ? 2 : 1;

			scan = index_beginscan(rt->rows.rel, rt->slot_index, SnapshotSelf, nkeys, 0);
			ScanKeyInit(&sk[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(pid));
			ScanKeyInit(&sk[1], 2, BTLessStrategyNumber, F_INT4LT, Int32GetDatum(rt->pub_from));
			index_rescan(scan, sk, nkeys, NULL, 0);
			while (index_getnext_slot(scan, ForwardScanDirection, slot))
			{
				Datum		d = slot_getattr(slot, rt->att_pub, &isnull);

				if (!isnull && ke_num_eq(vt->kind, target, KeanonDatumToNum(vt, d)))
					add_slot(slots, &n, &cap, DatumGetInt32(slot_getattr(slot, rt->att_slot, &isnull)));
				ExecClearTuple(slot);
			}
			index_endscan(scan);
		}
	}
	else
	{
		int64		nrows;
		PlacedRow  *rows = KeanonRowsOfPartitions(w, &pid, 1, &nrows);

		*slots = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * Max(nrows, 1));
		/* (the rows of a partition are placed: each shows a value) */
		for (int64 i = 0; i < nrows; i++)
			if (ke_num_eq(vt->kind, target, KeanonDatumToNum(vt, rows[i].pub)))
				(*slots)[n++] = rows[i].slot;
		pfree(rows);
	}
	return n;
}

/* Append a partition, from the parts table's scan slot, to out[] */
static void
add_old_part(KeanonDirect *rt, const KeanonValueType *vt, KeanonOldPart **out,
			 int *n, int *cap)
{
	TupleTableSlot *slot = rt->parts.scan_slot;
	KeanonOldPart *o;
	bool		isnull;

	if (*n == *cap)
	{
		*cap = *cap * 2 + 16;
		*out = *out ? repalloc(*out, sizeof(KeanonOldPart) * *cap)
			: palloc(sizeof(KeanonOldPart) * *cap);
	}
	o = &(*out)[(*n)++];
	memset(&o->part, 0, sizeof(KePartition));
	o->pid = DatumGetInt64(slot_getattr(slot, rt->att_part_pid, &isnull));
	o->part.lo = KeanonDatumToNum(vt, slot_getattr(slot, rt->att_lo, &isnull));
	o->part.hi = KeanonDatumToNum(vt, slot_getattr(slot, rt->att_hi, &isnull));
	o->part.lo_last_only = DatumGetBool(slot_getattr(slot, rt->att_lo_last_only, &isnull));
	o->part.hi_split = DatumGetBool(slot_getattr(slot, rt->att_hi_split, &isnull));
	o->part.n = DatumGetInt64(slot_getattr(slot, rt->att_n, &isnull));
	o->lo_slot = DatumGetInt32(slot_getattr(slot, rt->att_lo_slot, &isnull));
	if (isnull)
		o->lo_slot = -1;
}

/*
 * The published partitions that overlap the range r.  Partitions are
 * disjoint with distinct ends, so these are the ones ending inside it and,
 * past its high end, the first one should it start inside.  One forward
 * scan of the (hi) index from the low end, or a heap scan should that
 * index be gone.  Returns their number, the partitions into *out.
 */
int
KeanonPartsInRange(Watch *w, const KeanonRange *r, KeanonOldPart **out)
{
	KeanonDirect *rt = parts_table(w);
	const KeanonValueType *vt = &w->ki->vt;
	KeKind		kind = vt->kind;
	int			n = 0,
				cap = 0;
	TupleTableSlot *slot = rt->parts.scan_slot;
	bool		isnull;

	*out = NULL;
	if (rt->hi_index != NULL)
	{
		ScanKeyData sk;
		int			nkeys = 0;
		IndexScanDesc scan;

		if (!r->lo_unb)
		{
			ScanKeyInit(&sk, 1, BTGreaterEqualStrategyNumber, rt->hi_ge,
						KeanonNumToDatum(vt, r->lo));
			nkeys = 1;
		}
		scan = index_beginscan(rt->parts.rel, rt->hi_index, SnapshotSelf, nkeys, 0);
		index_rescan(scan, &sk, nkeys, NULL, 0);
		while (index_getnext_slot(scan, ForwardScanDirection, slot))
		{
			KeNum		hi = KeanonDatumToNum(vt, slot_getattr(slot, rt->att_hi, &isnull));
			bool		past = !r->hi_unb && !ke_num_le(kind, hi, r->hi);

			/* the first past the high end counts if it starts inside */
			if (!past ||
				ke_num_le(kind, KeanonDatumToNum(vt, slot_getattr(slot, rt->att_lo, &isnull)),
						  r->hi))
				add_old_part(rt, vt, out, &n, &cap);
			ExecClearTuple(slot);
			if (past)
				break;
		}
		index_endscan(scan);
	}
	else
	{
		TableScanDesc scan = table_beginscan(rt->parts.rel, SnapshotSelf, 0, NULL);
		KeanonOldPart *next = NULL;
		int			nnext = 0,
					capnext = 0;

		while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
		{
			KeNum		hi = KeanonDatumToNum(vt, slot_getattr(slot, rt->att_hi, &isnull));

			if (!r->lo_unb && ke_num_cmp(kind, hi, r->lo) < 0)
				;
			else if (r->hi_unb || ke_num_le(kind, hi, r->hi))
				add_old_part(rt, vt, out, &n, &cap);
			else if (nnext == 0 || ke_num_cmp(kind, hi, next[0].part.hi) < 0)
			{
				/* the lowest end past the range so far */
				nnext = 0;
				add_old_part(rt, vt, &next, &nnext, &capnext);
			}
			ExecClearTuple(slot);
		}
		table_endscan(scan);
		if (nnext > 0 && ke_num_le(kind, next[0].part.lo, r->hi))
		{
			if (n == cap)
				*out = *out ? repalloc(*out, sizeof(KeanonOldPart) * ++cap)
					: palloc(sizeof(KeanonOldPart) * ++cap);
			(*out)[n++] = next[0];
		}
	}
	return n;
}

/* A stored partition by its id into *out; false when there is none */
bool
KeanonPartById(Watch *w, int64 pid, KeanonOldPart *out)
{
	KeanonDirect *rt = parts_table(w);
	DirectKey	key;
	int			n = 0,
				cap = 1;

	key.att = rt->att_part_pid;
	key.eqproc = F_INT8EQ;
	key.value = Int64GetDatum(pid);
	if (!direct_fetch(&rt->parts, rt->part_index, 1, &key))
		return false;
	add_old_part(rt, &w->ki->vt, &out, &n, &cap);
	ExecClearTuple(rt->parts.scan_slot);
	return true;
}

/*
 * The stored partition whose high end is v (past false), or the first one
 * ending past v (past true), into *out; false when there is none.  Ends
 * are distinct: the first partition of a forward scan of the (hi) index
 * from v, or the second should the first end at v and past be asked; the
 * lowest such end in a heap scan should that index be gone.
 */
bool
KeanonPartEndingAt(Watch *w, KeNum v, bool past, KeanonOldPart *out)
{
	KeanonDirect *rt = parts_table(w);
	const KeanonValueType *vt = &w->ki->vt;
	TupleTableSlot *slot = rt->parts.scan_slot;
	KeanonOldPart *best = NULL;
	int			n = 0,
				cap = 0;
	bool		isnull;

	if (rt->hi_index != NULL)
	{
		ScanKeyData sk;
		IndexScanDesc scan = index_beginscan(rt->parts.rel, rt->hi_index, SnapshotSelf, 1, 0);

		ScanKeyInit(&sk, 1, BTGreaterEqualStrategyNumber, rt->hi_ge, KeanonNumToDatum(vt, v));
		index_rescan(scan, &sk, 1, NULL, 0);
		while (n == 0 && index_getnext_slot(scan, ForwardScanDirection, slot))
		{
			KeNum		hi = KeanonDatumToNum(vt, slot_getattr(slot, rt->att_hi, &isnull));

			if (!past || !ke_num_eq(vt->kind, hi, v))
				add_old_part(rt, vt, &best, &n, &cap);
			ExecClearTuple(slot);
		}
		index_endscan(scan);
	}
	else
	{
		TableScanDesc scan = table_beginscan(rt->parts.rel, SnapshotSelf, 0, NULL);

		while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
		{
			KeNum		hi = KeanonDatumToNum(vt, slot_getattr(slot, rt->att_hi, &isnull));
			int			c = ke_num_cmp(vt->kind, hi, v);

			/* the lowest end from v so far */
			if (c > 0 || (c == 0 && !past))
				if (n == 0 || ke_num_cmp(vt->kind, hi, best[0].part.hi) < 0)
				{
					n = 0;
					add_old_part(rt, vt, &best, &n, &cap);
				}
			ExecClearTuple(slot);
		}
		table_endscan(scan);
	}
	if (n == 0 || (!past && !ke_num_eq(vt->kind, best[0].part.hi, v)))
		return false;
	*out = best[0];
	pfree(best);
	return true;
}

/* Delete the partitions pids[0 .. npids) from the parts table */
void
KeanonPartsDelete(Watch *w, const int64 *pids, int npids)
{
	KeanonDirect *rt = parts_table(w);
	DirectKey	key;

	key.att = rt->att_part_pid;
	key.eqproc = F_INT8EQ;
	for (int i = 0; i < npids; i++)
	{
		ItemPointerData tid;

		key.value = Int64GetDatum(pids[i]);
		if (!direct_fetch(&rt->parts, rt->part_index, 1, &key))
			continue;
		tid = rt->parts.scan_slot->tts_tid;
		ExecClearTuple(rt->parts.scan_slot);
		simple_heap_delete(rt->parts.rel, &tid);
	}
	CommandCounterIncrement();
}

/*
 * Insert a partition into the parts table, with its distinct values
 * vals[0 .. nvals) and their counts; lo_slot < 0 is stored as null.  The
 * caller increments the command counter once all are in.
 */
void
KeanonPartInsert(Watch *w, int64 pid, const KePartition *p, int64 n, const Datum *vals,
				 const Datum *cnts, int nvals, int32 lo_slot)
{
	KeanonDirect *rt = parts_table(w);
	DirectTable *d = &rt->parts;
	const KeanonValueType *vt = &w->ki->vt;
	TupleDesc	desc = RelationGetDescr(d->rel);

	for (int i = 0; i < desc->natts; i++)
	{
		d->values[i] = (Datum) 0;
		d->nulls[i] = true;
	}
#define SET_ATT(att, v) (d->values[(att) - 1] = (v), d->nulls[(att) - 1] = false)
	SET_ATT(rt->att_part_pid, Int64GetDatum(pid));
	SET_ATT(rt->att_lo, KeanonNumToDatum(vt, p->lo));
	SET_ATT(rt->att_lo_last_only, BoolGetDatum(p->lo_last_only));
	SET_ATT(rt->att_hi, KeanonNumToDatum(vt, p->hi));
	SET_ATT(rt->att_hi_split, BoolGetDatum(p->hi_split));
	SET_ATT(rt->att_n, Int64GetDatum(n));
	SET_ATT(rt->att_vals, PointerGetDatum(construct_array((Datum *) vals, nvals, vt->typid,
														  rt->typlen, rt->typbyval,
														  rt->typalign)));
	SET_ATT(rt->att_cnts, PointerGetDatum(construct_array((Datum *) cnts, nvals, INT8OID, 8,
														  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE)));
	if (lo_slot >= 0)
		SET_ATT(rt->att_lo_slot, Int32GetDatum(lo_slot));
#undef SET_ATT
	direct_insert(d);
}

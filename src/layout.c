/*
 * layout.c
 *		The layouts of a watch's internal tables, checked before keanon
 *		reads or writes them by column number.
 *
 * keanon writes the rows and partitions tables directly (direct.c): it
 * forms heap tuples from the watched table's values and deconstructs the
 * partitions' arrays, trusting each column's type.  Those tables belong
 * to the watched table's owner, who may ALTER them, and any role that can
 * create a table can own a watched one.  A column retyped under keanon
 * would make it write a pointer as an integer or read an integer as a
 * pointer: server memory read or written, or a crash.  So every layout is
 * checked against the watch, from the relation's own descriptor, each time
 * a watch is loaded and each time a table is opened for direct access
 * (under its lock, so no ALTER can slip in between):
 *
 *	rows table	a heap table; each watched column under its name, of the
 *				watched table's type and typmod; keanon_pub of the
 *				sensitive column's; keanon_pid and keanon_arrival bigint,
 *				keanon_slot integer; no other keanon_ column.  A column of
 *				the owner's own is allowed (keanon leaves it null) unless
 *				it shares a name with a column of the watched table of
 *				another type.
 *	parts table	a heap table of exactly keanon_pid bigint, lo and hi of
 *				the sensitive column's type, lo_last_only and hi_split
 *				boolean, n bigint, vals an array of the sensitive type,
 *				cnts bigint[] and lo_slot integer, all but lo_slot NOT
 *				NULL.
 *
 * Neither may have a deferrable constraint: keanon inserts their index
 * entries itself, and a deferred uniqueness check would never run.
 *
 * A mismatch is an error naming the table, before anything is written.
 * Arrays read back from any internal table are deconstructed only after
 * their element type is checked (KeanonArrayElements): PostgreSQL itself
 * only asserts it.  What keanon reads back by SQL is checked as it is
 * read: its type, no NULL where keanon writes none, arrays free of NULLs
 * and as long as they must be (KeanonSpiColumn, KeanonPartArrays).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "keanon_watch.h"

/*
 * On while keanon.on_alter follows a change with changes of its own, which
 * its nested calls then leave alone: a rename reaches the rows table before
 * keanon.watches.  Setting it only spares an ALTER the check at its end;
 * every write still checks the layouts it relies on.
 */
static bool following_ddl = false;

/* Define keanon.following_ddl (from _PG_init) */
void
KeanonLayoutInit(void)
{
	DefineCustomBoolVariable("keanon.following_ddl",
							 "Set by keanon.on_alter while it follows a schema change.",
							 NULL, &following_ddl, false, PGC_USERSET,
							 GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
}

/* An internal table's layout does not match its watch */
static void
layout_error(const Watch *w, Relation rel, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the layout of %s does not match the watch of %s",
					RelationGetRelationName(rel), get_rel_name(w->relid)),
			 errdetail("%s", detail),
			 errhint("Undo the change to the internal table, or call keanon.unwatch and watch the table again.")));
}

/*
 * A heap table, as keanon's direct writes need, with no deferrable
 * constraint: those writes insert index entries as they go, and a
 * deferred uniqueness check would never run
 */
static void
check_heap(const Watch *w, Relation rel)
{
	List	   *indexes;
	ListCell   *lc;

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relam != HEAP_TABLE_AM_OID)
		layout_error(w, rel, "It must be an ordinary heap table.");
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		bool		deferrable;

		if (!HeapTupleIsValid(tup))
			continue;
		deferrable = !((Form_pg_index) GETSTRUCT(tup))->indimmediate;
		ReleaseSysCache(tup);
		if (deferrable)
			layout_error(w, rel, "It has a deferrable constraint, which keanon's writes cannot honour.");
	}
	list_free(indexes);
}

/* The live column named name in desc, or NULL */
static Form_pg_attribute
find_column(TupleDesc desc, const char *name)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		if (!a->attisdropped && strcmp(NameStr(a->attname), name) == 0)
			return a;
	}
	return NULL;
}

/* Column name of rel must be of type typid (and typmod, unless -2) */
static void
check_column(const Watch *w, Relation rel, const char *name, Oid typid, int32 typmod)
{
	Form_pg_attribute a = find_column(RelationGetDescr(rel), name);

	if (a == NULL)
		layout_error(w, rel, psprintf("Its column \"%s\" is missing.", name));
	if (a->atttypid != typid || (typmod != -2 && a->atttypmod != typmod))
		layout_error(w, rel, psprintf("Its column \"%s\" must be of type %s.", name,
									  format_type_with_typemod(typid, typmod == -2 ? -1 : typmod)));
}

/* Column name of rel must be NOT NULL, as keanon made it */
static void
check_not_null(const Watch *w, Relation rel, const char *name)
{
	Form_pg_attribute a = find_column(RelationGetDescr(rel), name);

	if (a == NULL)
		layout_error(w, rel, psprintf("Its column \"%s\" is missing.", name));
	if (!a->attnotnull)
		layout_error(w, rel, psprintf("Its column \"%s\" must be NOT NULL.", name));
}

/* the partitions table's columns that keanon made NOT NULL */
static const char *const parts_not_null[] = {
	"keanon_pid", "lo", "lo_last_only", "hi", "hi_split", "n", "vals", "cnts"
};

/* The type and typmod of column attnum of the watched table */
static void
table_column_type(const Watch *w, AttrNumber attnum, Oid *typid, int32 *typmod)
{
	Oid			coll;

	get_atttypetypmodcoll(w->relid, attnum, typid, typmod, &coll);
}

/* Check the rows table's layout (rel open and locked) against the watch */
void
KeanonCheckRowsLayout(const Watch *w, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Oid			s_typid;
	int32		s_typmod;

	check_heap(w, rel);
	for (int i = 0; i < w->nwatched; i++)
	{
		Oid			typid;
		int32		typmod;

		table_column_type(w, w->watched_attnums[i], &typid, &typmod);
		check_column(w, rel, get_attname(w->relid, w->watched_attnums[i], false), typid, typmod);
	}
	table_column_type(w, w->s_attnum, &s_typid, &s_typmod);
	check_column(w, rel, "keanon_pub", s_typid, s_typmod);
	check_column(w, rel, "keanon_pid", INT8OID, -1);
	check_column(w, rel, "keanon_slot", INT4OID, -1);
	check_column(w, rel, "keanon_arrival", INT8OID, -1);
	check_not_null(w, rel, "keanon_arrival");
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);
		const char *name = NameStr(a->attname);
		AttrNumber	src;

		if (a->attisdropped)
			continue;
		if (strncmp(name, "keanon_", 7) == 0)
		{
			if (strcmp(name, "keanon_pub") != 0 && strcmp(name, "keanon_pid") != 0 &&
				strcmp(name, "keanon_slot") != 0 && strcmp(name, "keanon_arrival") != 0)
				layout_error(w, rel, psprintf("Its column \"%s\" has a name reserved for keanon.", name));
			continue;
		}
		/* a column of the owner's own, copied from the table when it has it */
		src = get_attnum(w->relid, name);
		if (src != InvalidAttrNumber)
		{
			Oid			typid;
			int32		typmod;

			table_column_type(w, src, &typid, &typmod);
			check_column(w, rel, name, typid, typmod);
		}
	}
}

/* Check the partitions table's layout (rel open and locked) */
void
KeanonCheckPartsLayout(const Watch *w, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Oid			s_typid;
	int32		s_typmod;
	Oid			s_array;
	int			live = 0;

	check_heap(w, rel);
	table_column_type(w, w->s_attnum, &s_typid, &s_typmod);
	s_array = get_array_type(s_typid);
	check_column(w, rel, "keanon_pid", INT8OID, -1);
	check_column(w, rel, "lo", s_typid, s_typmod);
	check_column(w, rel, "lo_last_only", BOOLOID, -1);
	check_column(w, rel, "hi", s_typid, s_typmod);
	check_column(w, rel, "hi_split", BOOLOID, -1);
	check_column(w, rel, "n", INT8OID, -1);
	check_column(w, rel, "vals", s_array, -2);
	check_column(w, rel, "cnts", INT8ARRAYOID, -2);
	check_column(w, rel, "lo_slot", INT4OID, -1);
	for (int i = 0; i < lengthof(parts_not_null); i++)
		check_not_null(w, rel, parts_not_null[i]);
	for (int i = 0; i < desc->natts; i++)
		live += TupleDescAttr(desc, i)->attisdropped ? 0 : 1;
	if (live != 9)
		layout_error(w, rel, "It must have keanon's nine columns and no other.");
}

/* An internal table of relid's watch holds what keanon never wrote there */
static void
content_error(Oid relid, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("an internal table of the watch of %s holds what keanon never wrote",
					get_rel_name(relid)),
			 errdetail("%s", detail),
			 errhint("Undo the change to the internal table, or call keanon.unwatch and watch the table again.")));
}

/*
 * Column col of a row read by SQL from an internal table of relid's
 * watch, where keanon writes values of type typid and never a NULL
 */
Datum
KeanonSpiColumn(Oid relid, HeapTuple tup, TupleDesc desc, int col, Oid typid)
{
	bool		isnull;
	Datum		d = KeanonSpiColumnOrNull(relid, tup, desc, col, typid, &isnull);

	if (isnull)
		content_error(relid, psprintf("Its column \"%s\" holds a NULL.", SPI_fname(desc, col)));
	return d;
}

/* The same, where a NULL may be read (*isnull tells) */
Datum
KeanonSpiColumnOrNull(Oid relid, HeapTuple tup, TupleDesc desc, int col, Oid typid, bool *isnull)
{
	if (SPI_gettypeid(desc, col) != typid)
		content_error(relid, psprintf("Its column \"%s\" is of type %s, not %s.", SPI_fname(desc, col),
									  format_type_be(SPI_gettypeid(desc, col)), format_type_be(typid)));
	return SPI_getbinval(tup, desc, col, isnull);
}

/*
 * The values (of elemtype) and counts of a partition of relid's watch, read
 * back from its partitions table: both present, free of NULLs and as long
 * as each other, or an error.  copy: detoast into fresh memory, for a
 * tuple about to be freed.
 */
void
KeanonPartArrays(Oid relid, Datum vals, bool vals_null, Datum cnts, bool cnts_null,
				 Oid elemtype, bool copy, Datum **v, Datum **c, int *n)
{
	bool	   *vn,
			   *cn;
	int			nv,
				nc;

	if (vals_null || cnts_null)
		content_error(relid, "A partition has no list of values or of counts.");
	KeanonArrayElements(copy ? DatumGetArrayTypePCopy(vals) : DatumGetArrayTypeP(vals),
						elemtype, v, &vn, &nv);
	KeanonArrayElements(copy ? DatumGetArrayTypePCopy(cnts) : DatumGetArrayTypeP(cnts),
						INT8OID, c, &cn, &nc);
	if (nv != nc)
		content_error(relid, psprintf("A partition has %d values and %d counts.", nv, nc));
	for (int i = 0; i < nv; i++)
		if (vn[i] || cn[i])
			content_error(relid, "A partition's values or counts hold a NULL.");
	*n = nv;
}

/*
 * Deconstruct an array read from an internal table, after checking that
 * its elements are of type elemtype (what keanon wrote there)
 */
void
KeanonArrayElements(ArrayType *arr, Oid elemtype, Datum **elems, bool **nulls, int *n)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;

	if (ARR_ELEMTYPE(arr) != elemtype)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("an array of keanon's internal tables holds %s, not %s",
						format_type_be(ARR_ELEMTYPE(arr)), format_type_be(elemtype)),
				 errhint("Undo the change to the internal table, or call keanon.unwatch and watch the table again.")));
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign, elems, nulls, n);
}

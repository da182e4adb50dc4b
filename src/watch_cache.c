/*
 * watch_cache.c
 *		Loading a watch from keanon.watches, and the backend's cache of
 *		loaded watches.
 *
 * A loaded watch holds its relations' OIDs and their qualified, quoted
 * names, for the statements of maintenance.  Entries are keyed by the
 * watched table's OID and kept for the backend's life, but a relcache
 * invalidation of any relation a watch names (watching or unwatching
 * changes the table's triggers; a rename, ALTER or DROP of any of its
 * relations; every change catalog.c records) forgets that watch, and any
 * change to a schema (a renamed schema changes the qualified names)
 * forgets them all.  A forgotten entry's memory lives on until the
 * transaction ends, since a loaded watch, a shallow copy, may still be in
 * use.  The counters are not trusted from here: maintenance reads them
 * again under the watch's lock.
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "access/htup_details.h"
#include "access/xact.h"

#include "keanon_watch.h"
#include "pg_compat.h"
PG_FUNCTION_INFO_V1(keanon_key_equal);


/*
 * The elements of a name[] of keanon.watches, refused when it is not a
 * list of names (keanon.register_watch refuses such arrays; a row written
 * otherwise is not trusted)
 */
static void
name_elements(Datum arr, Datum **elems, int *n)
{
	ArrayType  *a = DatumGetArrayTypeP(arr);
	bool	   *nulls;

	if (ARR_NDIM(a) > 1 || ARR_ELEMTYPE(a) != NAMEOID || array_contains_nulls(a))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("keanon.watches holds a list of column names that is not one")));
	deconstruct_array(a, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR, elems, &nulls, n);
}

/* Quoted names from a name[] datum */
static List *
quoted_names(Datum arr)
{
	Datum	   *elems;
	int			n;
	List	   *out = NIL;

	name_elements(arr, &elems, &n);
	for (int i = 0; i < n; i++)
		out = lappend(out, pstrdup(quote_identifier(pstrdup(NameStr(*DatumGetName(elems[i]))))));
	return out;
}

/* A comma-separated list of quoted names, optionally prefixed */
char *
KeanonNameList(List *names, const char *prefix)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, names)
	{
		if (buf.len > 0)
			appendStringInfoString(&buf, ", ");
		appendStringInfo(&buf, "%s%s", prefix, (char *) lfirst(lc));
	}
	return buf.data;
}

/*
 * "(a)::T OPERATOR(schema.op) (b)::T": two values of type typid equal by
 * its type's default equality (btree, else hash), schema-qualified, with
 * both sides cast to the operator's own input types.  Named alone, the
 * operator's schema may hold another of that name whose input types match
 * better (a domain's: anyone who may create in citext's schema could add
 * "="(email, email) for a domain email over citext, and have keanon run
 * it as the table's owner); cast, the operator's own types are an exact
 * match, which no other operator of its schema can have.  The types are
 * written with typmod -1 given ("bpchar", "bit" quoted), never as
 * "character" or bit, which a cast reads as length 1.
 */
char *
KeanonTypeEqualSql(Oid typid, const char *a, const char *b)
{
	TypeCacheEntry *tc = lookup_type_cache(typid, TYPECACHE_EQ_OPR);
	HeapTuple	tup;
	Form_pg_operator op;
	char	   *sql;
	bits16		flags = FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY;

	if (!OidIsValid(tc->eq_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("type %s has no default equality operator", format_type_be(typid))));
	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(tc->eq_opr));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "keanon: cache lookup failed for operator %u", tc->eq_opr);
	op = (Form_pg_operator) GETSTRUCT(tup);
	if (get_typtype(op->oprleft) == TYPTYPE_PSEUDO || get_typtype(op->oprright) == TYPTYPE_PSEUDO)
	{
		/*
		 * a polymorphic equality (arrays, enums, ranges, records): cast to
		 * "anyarray" a value of a typmod is taken for no array at all, so
		 * both sides are the column's base type, and the operator must be
		 * one no role can add a better match beside
		 */
		if (op->oprnamespace != PG_CATALOG_NAMESPACE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the equality of type %s is a polymorphic operator outside pg_catalog",
							format_type_be(typid))));
		sql = psprintf("(%s)::%s OPERATOR(pg_catalog.%s) (%s)::%s", a,
					   format_type_extended(getBaseType(typid), -1, flags), NameStr(op->oprname), b,
					   format_type_extended(getBaseType(typid), -1, flags));
	}
	else
		sql = psprintf("(%s)::%s OPERATOR(%s.%s) (%s)::%s", a, format_type_extended(op->oprleft, -1, flags),
					   quote_identifier(get_namespace_name(op->oprnamespace)), NameStr(op->oprname), b,
					   format_type_extended(op->oprright, -1, flags));
	ReleaseSysCache(tup);
	return sql;
}

/*
 * The key columns of two relations (prefixed a and b) equal, each by its
 * type's default equality (KeanonTypeEqualSql): under the pinned
 * search_path no operator of an extension's type (citext, ltree) is found
 * by name
 */
char *
KeanonKeysEqual(const Watch *w, const char *a, const char *b)
{
	StringInfoData buf;
	ListCell   *lc;
	int			i = 0;

	initStringInfo(&buf);
	foreach(lc, w->keys)
	{
		Oid			typid = get_atttype(w->relid, w->watched_attnums[i++]);
		const char *col = (const char *) lfirst(lc);

		appendStringInfo(&buf, "%s%s", buf.len > 0 ? " AND " : "",
						 KeanonTypeEqualSql(typid, psprintf("%s%s", a, col), psprintf("%s%s", b, col)));
	}
	return buf.data;
}

/*
 * keanon.key_equal(tab regclass, col name, a text, b text) → text: column
 * col of relations a and b equal, as KeanonTypeEqualSql writes it
 */
Datum
keanon_key_equal(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *col = NameStr(*PG_GETARG_NAME(1));
	char	   *a = text_to_cstring(PG_GETARG_TEXT_PP(2));
	char	   *b = text_to_cstring(PG_GETARG_TEXT_PP(3));
	AttrNumber	attnum = get_attnum(relid, col);
	const char *qcol = quote_identifier(col);

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist", col, get_rel_name(relid))));
	PG_RETURN_TEXT_P(cstring_to_text(KeanonTypeEqualSql(get_atttype(relid, attnum),
														psprintf("%s.%s", a, qcol), psprintf("%s.%s", b, qcol))));
}

/* The names of a and then those of b not already in a */
List *
KeanonUnionNames(List *a, List *b)
{
	List	   *out = list_copy(a);
	ListCell   *lb;

	foreach(lb, b)
	{
		ListCell   *la;
		bool		found = false;

		foreach(la, out)
			if (strcmp((char *) lfirst(la), (char *) lfirst(lb)) == 0)
				found = true;
		if (!found)
			out = lappend(out, lfirst(lb));
	}
	return out;
}

/*
 * The qualified, quoted name of a relation.  One a watch names may have
 * been dropped since the watch's row was read (an unwatch committing while
 * the worker loads the watch): that is an error, never a NULL name.
 */
char *
KeanonQualifiedName(Oid relid)
{
	char	   *rel = get_rel_name(relid);
	char	   *nsp = rel != NULL ? get_namespace_name(get_rel_namespace(relid)) : NULL;

	if (rel == NULL || nsp == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u of a keanon watch no longer exists", relid),
				 errdetail("The watch was ended or changed while it was being read.")));
	return quote_qualified_identifier(nsp, rel);
}

typedef struct WatchCacheEntry
{
	Oid			relid;			/* hash key */
	MemoryContext cxt;			/* the entry's strings and lists */
	Watch		w;
} WatchCacheEntry;

/* the most watches one backend keeps loaded */
#define KEANON_MAX_CACHED_WATCHES 1024

static HTAB *watch_cache = NULL;
static MemoryContext watch_cache_cxt = NULL;

/*
 * The memory of forgotten entries, deleted at the end of the transaction.
 * A loaded watch is a shallow copy of its entry, and an invalidation can
 * arrive while it is in use (whenever a lock is taken), so an entry's
 * memory outlives its place in the cache until no statement can use it.
 */
static MemoryContext watch_cache_retired = NULL;
static bool watch_cache_xact_cb = false;

/*
 * Keep a forgotten cache entry's memory until the transaction ends (also
 * the generalizations' cache, generalize.c)
 */
void
KeanonRetireMemory(MemoryContext cxt)
{
	if (watch_cache_retired == NULL)
		watch_cache_retired = AllocSetContextCreate(TopMemoryContext, "keanon retired watches",
													ALLOCSET_SMALL_SIZES);
	MemoryContextSetParent(cxt, watch_cache_retired);
}

/* Forget one entry: out of the hash, its memory kept until transaction end */
static void
watch_cache_retire(WatchCacheEntry *e)
{
	KeanonRetireMemory(e->cxt);
	(void) hash_search(watch_cache, &e->relid, HASH_REMOVE, NULL);
}

/* Whether a cached watch depends on relation relid */
static bool
watch_depends_on(const Watch *w, Oid relid)
{
	return relid == w->relid || relid == w->rows_oid || relid == w->parts_oid ||
		relid == w->view_oid || relid == w->index_oid || relid == w->release_oid ||
		relid == w->pending_oid;
}

/*
 * Relcache invalidation callback: forget the watches that depend on relid
 * (all of them for InvalidOid).  Every change keanon's catalog records for
 * a watch is also a relcache invalidation of its table (see catalog.c).
 */
static void
watch_cache_inval(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS seq;
	WatchCacheEntry *e;

	if (watch_cache == NULL)
		return;
	hash_seq_init(&seq, watch_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (!OidIsValid(relid) || watch_depends_on(&e->w, relid))
			watch_cache_retire(e);
}

/* Forget the cached watch of relid, so that its next load reads it afresh */
void
KeanonWatchForget(Oid relid)
{
	watch_cache_inval((Datum) 0, relid);
}

/* A renamed schema changes the qualified names kept */
static void
watch_cache_nsp_inval(Datum arg, int cacheid, uint32 hashvalue)
{
	watch_cache_inval(arg, InvalidOid);
}

/* At the end of a transaction no loaded copy is in use any more */
static void
watch_cache_xact(XactEvent event, void *arg)
{
	if (watch_cache_retired != NULL &&
		(event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		 event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		 event == XACT_EVENT_PARALLEL_ABORT))
		MemoryContextReset(watch_cache_retired);
}

/* Register the cache's invalidation (from _PG_init) */
void
KeanonWatchCacheInit(void)
{
	CacheRegisterRelcacheCallback(watch_cache_inval, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, watch_cache_nsp_inval, (Datum) 0);
	if (!watch_cache_xact_cb)
	{
		RegisterXactCallback(watch_cache_xact, NULL);
		watch_cache_xact_cb = true;
	}
}

/* A deep copy of a list of strings in cxt */
static List *
copy_names(List *names, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	List	   *out = NIL;
	ListCell   *lc;

	foreach(lc, names)
		out = lappend(out, pstrdup((char *) lfirst(lc)));
	MemoryContextSwitchTo(old);
	return out;
}

/* The cache, made at first use */
static void
watch_cache_create(void)
{
	HASHCTL		ctl;

	if (watch_cache_cxt == NULL)
		watch_cache_cxt = AllocSetContextCreate(TopMemoryContext, "keanon watch cache",
												ALLOCSET_SMALL_SIZES);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(WatchCacheEntry);
	ctl.hcxt = watch_cache_cxt;
	watch_cache = hash_create("keanon watches", 16, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* Keep a loaded watch in the cache, in memory of the entry's own */
static void
watch_cache_put(const Watch *w)
{
	WatchCacheEntry *e;
	MemoryContext cxt;
	bool		found;

	if (watch_cache == NULL)
		watch_cache_create();
	/* bounded: past the limit, start over (a backend rarely writes so many) */
	if (hash_get_num_entries(watch_cache) >= KEANON_MAX_CACHED_WATCHES)
		watch_cache_inval((Datum) 0, InvalidOid);
	cxt = AllocSetContextCreate(watch_cache_cxt, "keanon watch", ALLOCSET_SMALL_SIZES);
	e = hash_search(watch_cache, &w->relid, HASH_ENTER, &found);
	if (found)
		KeanonRetireMemory(e->cxt);
	e->cxt = cxt;
	e->w = *w;
	e->w.s = MemoryContextStrdup(cxt, w->s);
	e->w.rows = MemoryContextStrdup(cxt, w->rows);
	e->w.parts = MemoryContextStrdup(cxt, w->parts);
	e->w.release = w->release ? MemoryContextStrdup(cxt, w->release) : NULL;
	e->w.pending = w->pending ? MemoryContextStrdup(cxt, w->pending) : NULL;
	e->w.watched_attnums = MemoryContextAlloc(cxt, sizeof(AttrNumber) * w->nwatched);
	memcpy(e->w.watched_attnums, w->watched_attnums, sizeof(AttrNumber) * w->nwatched);
	e->w.keys = copy_names(w->keys, cxt);
	e->w.qis = copy_names(w->qis, cxt);
	e->w.ki = NULL;
	e->w.fresh = NULL;
	e->w.gone = NULL;
	e->w.ngone = 0;
	e->w.all_placed = false;
}

/*
 * The cached watch of relid, if it is cached: no statement runs, so a row
 * trigger can ask on every row.  What it points to stays valid until the
 * transaction ends, whatever invalidations arrive meanwhile.
 */
bool
KeanonWatchCached(Oid relid, Watch *w)
{
	WatchCacheEntry *e;

	if (watch_cache == NULL)
		return false;
	e = hash_search(watch_cache, &relid, HASH_FIND, NULL);
	if (e == NULL)
		return false;
	*w = e->w;
	return true;
}

/*
 * The pending list is a heap table of the key columns' types and a time,
 * as watch() made it: the row trigger forms its tuples by the list's
 * descriptor from the table's key values, so nothing else may stand in
 * for it.  Checked at each load, which any change to it (a relcache
 * invalidation) makes happen again.
 */
static void
check_pending_shape(Oid relid, Oid pending_oid, const AttrNumber *keys, int nkeys)
{
	Relation	pending = table_open(pending_oid, AccessShareLock);
	Relation	rel = table_open(relid, AccessShareLock);
	TupleDesc	pd = RelationGetDescr(pending);
	TupleDesc	td = RelationGetDescr(rel);
	bool		ok;
	bool		indexed = RelationGetIndexList(pending) != NIL;

	ok = pending->rd_rel->relkind == RELKIND_RELATION &&
		pending->rd_rel->relam == HEAP_TABLE_AM_OID && pd->natts == nkeys + 1 &&
		TupleDescAttr(pd, nkeys)->atttypid == TIMESTAMPTZOID &&
		!TupleDescAttr(pd, nkeys)->attisdropped;
	for (int i = 0; ok && i < nkeys; i++)
		ok = !TupleDescAttr(pd, i)->attisdropped &&
			TupleDescAttr(pd, i)->atttypid == TupleDescAttr(td, keys[i] - 1)->atttypid &&
			TupleDescAttr(pd, i)->atttypmod == TupleDescAttr(td, keys[i] - 1)->atttypmod;
	table_close(rel, AccessShareLock);
	table_close(pending, AccessShareLock);
	/* the row trigger inserts heap tuples alone, no index entry */
	if (indexed)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the pending list of the watch of %s has an index, which keanon does not maintain",
						get_rel_name(relid)),
				 errhint("Drop the index.")));
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the pending list of the watch of %s does not match the table's key",
						get_rel_name(relid)),
				 errhint("Call keanon.unwatch and watch the table again.")));
}

/*
 * The rows and partitions tables are laid out as the watch says (layout.c),
 * and the keanon index is on the rows table's true values
 */
static void
check_layouts(const Watch *w)
{
	Relation	rows = table_open(w->rows_oid, AccessShareLock);
	Relation	parts = table_open(w->parts_oid, AccessShareLock);
	HeapTuple	tup;
	bool		ok;

	KeanonCheckRowsLayout(w, rows);
	KeanonCheckPartsLayout(w, parts);
	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(w->index_oid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "keanon: cache lookup failed for index %u", w->index_oid);
	{
		Form_pg_index ix = (Form_pg_index) GETSTRUCT(tup);
		AttrNumber	att = ix->indnatts == 1 ? ix->indkey.values[0] : InvalidAttrNumber;

		ok = att > 0 && att <= RelationGetDescr(rows)->natts &&
			strcmp(NameStr(TupleDescAttr(RelationGetDescr(rows), att - 1)->attname),
				   get_attname(w->relid, w->s_attnum, false)) == 0;
	}
	ReleaseSysCache(tup);
	table_close(parts, AccessShareLock);
	table_close(rows, AccessShareLock);
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the keanon index of the watch of %s is not on its sensitive column",
						get_rel_name(w->relid)),
				 errhint("Call keanon.unwatch and watch the table again.")));
}

/* An internal object of relid's watch must exist and share its owner */
static void
check_owned_by(Oid relid, Oid objid, Oid owner)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(objid));
	bool		ok = HeapTupleIsValid(tup) &&
		((Form_pg_class) GETSTRUCT(tup))->relowner == owner;

	if (HeapTupleIsValid(tup))
		ReleaseSysCache(tup);
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the internal objects of the watch of %s are missing or not owned by its owner",
						get_rel_name(relid)),
				 errhint("Give them back to the table's owner, or call keanon.unwatch and watch the table again.")));
}

/*
 * Whether relid is watched as of a snapshot taken now, whatever the
 * transaction's (SPI connected)
 */
bool
KeanonWatchExistsNow(Oid relid)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	SPIPlanPtr	plan = SPI_prepare("SELECT 1 FROM keanon.watches "
								   "WHERE relid OPERATOR(pg_catalog.=) $1::pg_catalog.oid::pg_catalog.regclass",
								   1, types);
	Snapshot	snap;
	bool		found;

	if (plan == NULL)
		elog(ERROR, "keanon: could not read keanon.watches");
	snap = RegisterSnapshot(GetLatestSnapshot());
	found = SPI_execute_snapshot(plan, values, NULL, snap, InvalidSnapshot, true, false, 1)
		== SPI_OK_SELECT && SPI_processed == 1;
	UnregisterSnapshot(snap);
	SPI_freeplan(plan);
	return found;
}

/* No watch of relid is visible: why, as an error */
static void
watch_not_found(Oid relid)
{
	/* a transaction snapshot may predate the watch: a retry sees it */
	if (IsolationUsesXactSnapshot() && KeanonWatchExistsNow(relid))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access to watched table %s", get_rel_name(relid)),
				 errdetail("The table was watched after this transaction's snapshot was taken."),
				 errhint("Retry the transaction.")));
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("table %s is not watched", get_rel_name(relid)),
			 errhint("Call keanon.watch first.")));
}

/* The watched columns by number, keys first, each once, from a name[] */
static void
watched_columns(Oid relid, Datum names, Watch *w)
{
	Datum	   *elems;
	int			n;

	name_elements(names, &elems, &n);
	w->nwatched = 0;
	w->watched_attnums = palloc(sizeof(AttrNumber) * n);
	for (int i = 0; i < n; i++)
	{
		AttrNumber	att = get_attnum(relid, NameStr(*DatumGetName(elems[i])));
		bool		seen = false;

		if (att == InvalidAttrNumber)
			elog(ERROR, "keanon: watched column \"%s\" of %s is missing",
				 NameStr(*DatumGetName(elems[i])), get_rel_name(relid));
		for (int j = 0; j < w->nwatched; j++)
			seen |= w->watched_attnums[j] == att;
		if (!seen)
			w->watched_attnums[w->nwatched++] = att;
	}
}

/* A watch from its keanon.watches row (the query of KeanonWatchLoad) */
static void
watch_from_row(Oid relid, HeapTuple tup, TupleDesc desc, Watch *w)
{
	bool		isnull;
	char	   *s = pstrdup(NameStr(*DatumGetName(SPI_getbinval(tup, desc, 1, &isnull))));
	char	   *mode;

	w->relid = relid;
	w->owner = InvalidOid;
	w->s = pstrdup(quote_identifier(s));
	w->s_attnum = get_attnum(relid, s);
	if (w->s_attnum == InvalidAttrNumber)
		elog(ERROR, "keanon: watched column \"%s\" of %s is missing", s, get_rel_name(relid));
	w->qis = quoted_names(SPI_getbinval(tup, desc, 2, &isnull));
	w->keys = quoted_names(SPI_getbinval(tup, desc, 3, &isnull));
	w->k = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
	w->rows_oid = DatumGetObjectId(SPI_getbinval(tup, desc, 5, &isnull));
	w->parts_oid = DatumGetObjectId(SPI_getbinval(tup, desc, 6, &isnull));
	w->view_oid = DatumGetObjectId(SPI_getbinval(tup, desc, 7, &isnull));
	w->index_oid = DatumGetObjectId(SPI_getbinval(tup, desc, 8, &isnull));
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the keanon index of the watch of %s is missing", get_rel_name(relid)),
				 errhint("Unwatch and watch the table again.")));
	w->next_pid = DatumGetInt64(SPI_getbinval(tup, desc, 9, &isnull));
	w->next_arrival = DatumGetInt64(SPI_getbinval(tup, desc, 10, &isnull));
	mode = TextDatumGetCString(SPI_getbinval(tup, desc, 11, &isnull));
	w->release_mode = strcmp(mode, "release") == 0;
	w->deferred = strcmp(mode, "deferred") == 0;
	w->release_oid = DatumGetObjectId(SPI_getbinval(tup, desc, 12, &isnull));
	w->release = isnull ? NULL : KeanonQualifiedName(w->release_oid);
	w->pending_oid = DatumGetObjectId(SPI_getbinval(tup, desc, 13, &isnull));
	if (isnull)
		w->pending_oid = InvalidOid;
	if (w->deferred != OidIsValid(w->pending_oid))
		elog(ERROR, "keanon: the watch of %s has a pending list only in deferred mode",
			 get_rel_name(relid));
	w->pending = OidIsValid(w->pending_oid) ? KeanonQualifiedName(w->pending_oid) : NULL;
	watched_columns(relid, SPI_getbinval(tup, desc, 14, &isnull), w);
	w->generalize = DatumGetInt32(SPI_getbinval(tup, desc, 15, &isnull));
}

/* Only keanon writes its catalog, but what it says is checked anyway */
static void
check_watch_objects(const Watch *w)
{
	Oid			owner = KeanonRelOwner(w->relid);

	check_owned_by(w->relid, w->rows_oid, owner);
	check_owned_by(w->relid, w->parts_oid, owner);
	check_owned_by(w->relid, w->view_oid, owner);
	if (OidIsValid(w->release_oid))
		check_owned_by(w->relid, w->release_oid, owner);
	if (OidIsValid(w->pending_oid))
	{
		check_owned_by(w->relid, w->pending_oid, owner);
		check_pending_shape(w->relid, w->pending_oid, w->watched_attnums,
							list_length(w->keys));
	}
	if (IndexGetRelation(w->index_oid, false) != w->rows_oid)
		check_owned_by(w->relid, InvalidOid, owner);
	check_layouts(w);
}

/*
 * Load a watch from keanon.watches (SPI must be connected, and the caller
 * running as the table's owner or a superuser).  Its counters are only
 * current after begin_write().
 */
void
KeanonWatchLoad(Oid relid, Watch *w, bool missing_ok_quiet)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	bool		isnull;

	if (watch_cache != NULL)
	{
		WatchCacheEntry *e = hash_search(watch_cache, &relid, HASH_FIND, NULL);

		if (e != NULL)
		{
			*w = e->w;
			return;
		}
	}

	/* read-only: this also runs in bound aggregates under parallel plans */
	if (KeanonSpiExec(relid, "SELECT sensitive, quasi_identifiers, key_columns, k, "
				 "rows_table::oid, parts_table::oid, view::oid, "
				 "x.idx, "
				 "next_pid, next_arrival, mode, release_table::oid, pending_table::oid, "
				 "key_columns OPERATOR(pg_catalog.||) quasi_identifiers OPERATOR(pg_catalog.||) sensitive, "
				 "COALESCE(generalize, 0), x.n "
				 "FROM keanon.watches w, LATERAL "
				 "(SELECT pg_catalog.min(i.indexrelid) AS idx, pg_catalog.count(*) AS n "
				 " FROM pg_catalog.pg_index i "
				 " JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid "
				 " JOIN pg_catalog.pg_am a ON a.oid OPERATOR(pg_catalog.=) c.relam "
				 " WHERE i.indrelid OPERATOR(pg_catalog.=) w.rows_table::pg_catalog.oid "
				 " AND a.amname OPERATOR(pg_catalog.=) 'keanon'::pg_catalog.name"
				 " AND i.indisvalid AND i.indislive) x "
				 "WHERE w.relid OPERATOR(pg_catalog.=) $1::pg_catalog.oid::pg_catalog.regclass",
				 1, types, values, NULL, true) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read keanon.watches");
	if (SPI_processed != 1)
		watch_not_found(relid);
	memset(w, 0, sizeof(*w));
	watch_from_row(relid, SPI_tuptable->vals[0], SPI_tuptable->tupdesc, w);
	/* a failed REINDEX CONCURRENTLY leaves a copy, which a later rebuild makes valid */
	if (DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 16, &isnull)) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the rows table of the watch of %s has more than one keanon index", get_rel_name(relid)),
				 errdetail("The watch keeps %s; a failed REINDEX CONCURRENTLY leaves a copy (named ..._ccnew), which VACUUM FULL, CLUSTER or REINDEX TABLE then make valid.",
						   get_rel_name(w->index_oid)),
				 errhint("Drop every keanon index of %s but %s.", get_rel_name(w->rows_oid),
						 get_rel_name(w->index_oid))));
	check_watch_objects(w);
	w->rows = KeanonQualifiedName(w->rows_oid);
	w->parts = KeanonQualifiedName(w->parts_oid);
	w->ki = NULL;
	w->fresh = NULL;
	w->gone = NULL;
	w->ngone = 0;
	w->rt = NULL;
	w->all_placed = false;
	w->republishing = false;
	watch_cache_put(w);
}

/*
 * Load the watch of relid for a reader (SPI connected on return, running as
 * the caller); true when the caller may read what it publishes: whoever may
 * read its view (and look in the view's schema), or the whole table
 */
bool
KeanonWatchReadable(Oid relid, Watch *w)
{
	KeanonOwnerScope os;

	/* the watch is visible to its owner only */
	KeanonOwnerBegin(relid, &os);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	KeanonWatchLoad(relid, w, false);
	KeanonOwnerEnd(&os);
	return (pg_class_aclcheck(w->view_oid, GetUserId(), ACL_SELECT) == ACLCHECK_OK &&
			keanon_schema_usage(get_rel_namespace(w->view_oid), GetUserId())) ||
		KeanonMayReadWhole(relid);
}

/* The same, and anyone else gets what (the detail) refused */
void
KeanonWatchForReader(Oid relid, Watch *w, const char *what)
{
	if (!KeanonWatchReadable(relid, w))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for view %s", get_rel_name(w->view_oid)),
				 errdetail("%s", what)));
}


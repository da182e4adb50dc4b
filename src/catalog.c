/*
 * catalog.c
 *		keanon's catalog: the rows of keanon.watches and keanon.releases,
 *		written by keanon's C code alone.
 *
 * keanon trusts what its catalog says: which view, rows table, partitions
 * table and release table belong to a watched table, which of them to
 * drop with it, which index to lock.  So no other role may write it:
 * PUBLIC may read its own watches (row security shows each owner only the
 * rows of its own tables) and nothing else.  The rows are written here,
 * as keanon's own role (the owner of the catalog tables, who created the
 * extension; see KeanonCatalogBegin), after checking:
 *
 *	register_watch	the caller owns the table, it is an ordinary permanent
 *					table not watched yet, and each internal object is a
 *					relation of the right kind in the table's schema, owned
 *					by the table's owner and belonging to no other watch;
 *					each internal object then depends on the table (dropped
 *					with it) and on the extension (dropped with it, never
 *					left behind holding true values);
 *	forget_watch	the caller owns the table, or the table is gone (a DROP
 *					in progress: its objects went with it);
 *	rename_watched_column	the caller owns the table, and the column
 *					carries the new name now.
 *
 * Each of them is also a relcache invalidation of the table, which makes
 * every backend forget its cached watch of it (watch_cache.c).
 *
 * Watch numbers are the least free ones, so there is no counter to
 * exhaust: each number stands for a watched table of its caller's own.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "keanon_watch.h"
#include "pg_compat.h"

PG_FUNCTION_INFO_V1(keanon_register_watch);
PG_FUNCTION_INFO_V1(keanon_forget_watch);
PG_FUNCTION_INFO_V1(keanon_rename_watched_column);
PG_FUNCTION_INFO_V1(keanon_schedule_releases);
PG_FUNCTION_INFO_V1(keanon_register_generalization);

/* the greatest watch number: a partition id is the number times 10^12 */
#define KEANON_MAX_WATCH_NO 9223371

/*
 * Check that relid is a relation of the given kind in namespace nsp owned
 * by owner, fit to be an internal object of a watch (what names it)
 */
static void
check_internal_object(Oid relid, char relkind, Oid nsp, Oid owner, const char *what)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;

	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the %s of a watch does not exist", what)));
	form = (Form_pg_class) GETSTRUCT(tup);
	if (form->relkind != relkind || form->relnamespace != nsp || form->relowner != owner ||
		form->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" cannot be the %s of a watch", NameStr(form->relname), what),
				 errdetail("The internal objects of a watch are relations in the watched table's schema, owned by its owner.")));
	ReleaseSysCache(tup);
}

/* Record that an internal object goes with the table and the extension */
static void
depend_on_table(Oid objid, Oid relid)
{
	ObjectAddress dep;
	ObjectAddress ref;

	ObjectAddressSet(dep, RelationRelationId, objid);
	ObjectAddressSet(ref, RelationRelationId, relid);
	recordDependencyOn(&dep, &ref, DEPENDENCY_AUTO);
	ObjectAddressSet(ref, ExtensionRelationId, get_extension_oid("keanon", false));
	recordDependencyOn(&dep, &ref, DEPENDENCY_NORMAL);
}

/*
 * keanon.register_watch(tab, sensitive, quasi_identifiers, key_columns, k,
 * e, mode, view, rows_table, parts_table, release_table, pending_table): part of
 * keanon.watch, record a new watch; returns its number
 */
/* The arguments of register_watch make sense together */
static void
check_register_args(FunctionCallInfo fcinfo)
{
	char	   *mode;
	bool		deferred,
				release;

	for (int i = 0; i < 10; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("keanon.register_watch needs every argument but the release and pending tables")));
	mode = text_to_cstring(PG_GETARG_TEXT_PP(6));
	deferred = strcmp(mode, "deferred") == 0;
	release = strcmp(mode, "release") == 0;
	if (!deferred && !release && strcmp(mode, "live") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown watch mode \"%s\"", mode)));
	if (release == PG_ARGISNULL(10) || deferred == PG_ARGISNULL(11))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a watch has a release table in release mode alone, and a pending table in deferred mode alone")));
	/* the quasi-identifiers (argument 2) and the key (3): lists of names */
	for (int i = 2; i <= 3; i++)
	{
		ArrayType  *a = PG_GETARG_ARRAYTYPE_P(i);

		if (ARR_NDIM(a) > 1 || array_contains_nulls(a) || (i == 3 && ARR_NDIM(a) == 0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("keanon.register_watch needs its quasi-identifiers and key as one-dimensional lists of names without NULL, the key not empty")));
	}
}

/*
 * The table to watch is an ordinary permanent table the caller owns; its
 * owner and schema are returned
 */
static void
check_register_table(Oid relid, Oid *owner, Oid *nsp)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;

	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	form = (Form_pg_class) GETSTRUCT(tup);
	*owner = form->relowner;
	*nsp = form->relnamespace;
	if (form->relkind != RELKIND_RELATION || form->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an ordinary permanent table", NameStr(form->relname))));
	ReleaseSysCache(tup);
	if (!keanon_owns_relation(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
}

/*
 * The least free watch number (SPI connected, as keanon's role), after
 * checking that neither the table nor any of its objects is watched
 */
static int64
free_watch_number(Oid relid, Oid *types, Datum *values, char *nulls)
{
	bool		isnull;
	int64		wno;

	/*
	 * one registration at a time: the least free number, and no object
	 * twice.  The lock is the extension's, not keanon.watches': held to the
	 * end of the transaction, through the fill of a large table, a lock on
	 * the catalog table would stop every other watch's writers, whose
	 * counters are rows of it.  The reads below take fresh snapshots, so
	 * that they see a registration that committed while this one waited.
	 */
	LockDatabaseObject(ExtensionRelationId, get_extension_oid("keanon", false), 0,
					   ShareUpdateExclusiveLock);
	if (SPI_execute_with_args("SELECT 1 FROM keanon.watches w WHERE w.relid OPERATOR(pg_catalog.=) $1::pg_catalog.regclass "
							  "OR w.relid OPERATOR(pg_catalog.=) ANY (ARRAY[$8, $9, $10, $11, $12]::pg_catalog.regclass[]) "
							  "OR ARRAY[w.view, w.rows_table, w.parts_table, w.release_table, w.pending_table] "
							  "OPERATOR(pg_catalog.&&) ARRAY[$1, $8, $9, $10, $11, $12]::pg_catalog.regclass[]",
							  12, types, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read keanon.watches");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table %s or one of its internal objects is already part of a watch",
						get_rel_name(relid)),
				 errhint("Call keanon.unwatch first to change its parameters.")));
	if (SPI_execute("SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM keanon.watches "
					"WHERE watch_no OPERATOR(pg_catalog.=) 1) THEN 1 "
					"ELSE (SELECT pg_catalog.min(w.watch_no) OPERATOR(pg_catalog.+) 1 FROM keanon.watches w "
					"WHERE NOT EXISTS (SELECT 1 FROM keanon.watches x WHERE x.watch_no "
					"OPERATOR(pg_catalog.=) (w.watch_no OPERATOR(pg_catalog.+) 1))) END::pg_catalog.int8",
					false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "keanon: could not number a watch");
	wno = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (wno > KEANON_MAX_WATCH_NO)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many watched tables"),
				 errdetail("A database holds at most %d watches.", KEANON_MAX_WATCH_NO)));
	return wno;
}

/*
 * Whether keanon.spent_pids exists: it came with the SQL objects of 0.2.0,
 * and this library also serves a database still on 0.1.0's
 */
static bool
have_spent_pids(void)
{
	return OidIsValid(get_relname_relid("spent_pids", get_namespace_oid("keanon", false)));
}

/* Insert the watch's row, numbered wno (SPI connected, as keanon's role) */
static void
insert_watch_row(Oid relid, int64 wno, const Oid *types, const Datum *values, const char *nulls)
{
	Oid			itypes[13];
	Datum		ivalues[13];
	char		inulls[13];

	/* the first partition id: past those the number handed out before */
	const char *first_pid = have_spent_pids()
		? "COALESCE((SELECT s.next_pid FROM keanon.spent_pids s "
		"WHERE s.watch_no OPERATOR(pg_catalog.=) $13::pg_catalog.int4), "
		"$13 OPERATOR(pg_catalog.*) 1000000000000)"
		: "$13 OPERATOR(pg_catalog.*) 1000000000000";

	memcpy(itypes, types, sizeof(Oid) * 12);
	memcpy(ivalues, values, sizeof(Datum) * 12);
	memcpy(inulls, nulls, sizeof(char) * 12);
	itypes[12] = INT8OID;
	ivalues[12] = Int64GetDatum(wno);
	inulls[12] = ' ';
	if (SPI_execute_with_args(psprintf("INSERT INTO keanon.watches (relid, watch_no, sensitive, quasi_identifiers, "
									   "key_columns, k, e, mode, view, rows_table, parts_table, release_table, "
									   "pending_table, next_pid, next_arrival) "
									   "VALUES ($1::pg_catalog.regclass, $13::pg_catalog.int4, $2, $3, $4, $5, $6, $7, "
									   "$8::pg_catalog.regclass, $9::pg_catalog.regclass, $10::pg_catalog.regclass, "
									   "$11::pg_catalog.regclass, $12::pg_catalog.regclass, %s, 0)", first_pid),
							  13, itypes, ivalues, inulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "keanon: could not record the watch of %s", get_rel_name(relid));
}

Datum
keanon_register_watch(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Oid			owner;
	Oid			nsp;
	Oid			objs[5];
	char		kinds[5] = {RELKIND_VIEW, RELKIND_RELATION, RELKIND_RELATION, RELKIND_RELATION,
	RELKIND_RELATION};
	const char *what[5] = {"view", "rows table", "partitions table", "release table",
	"pending table"};
	KeanonOwnerScope cat;
	Oid			types[12] = {OIDOID, NAMEOID, NAMEARRAYOID, NAMEARRAYOID, INT4OID, NUMERICOID,
	TEXTOID, OIDOID, OIDOID, OIDOID, OIDOID, OIDOID};
	Datum		values[12];
	char		nulls[12];
	int64		wno;

	check_register_args(fcinfo);
	relid = PG_GETARG_OID(0);
	check_register_table(relid, &owner, &nsp);
	for (int i = 0; i < 5; i++)
	{
		objs[i] = PG_ARGISNULL(7 + i) ? InvalidOid : PG_GETARG_OID(7 + i);
		if (OidIsValid(objs[i]))
			check_internal_object(objs[i], kinds[i], nsp, owner, what[i]);
	}
	for (int i = 0; i < 12; i++)
	{
		values[i] = PG_ARGISNULL(i) ? (Datum) 0 : PG_GETARG_DATUM(i);
		nulls[i] = PG_ARGISNULL(i) ? 'n' : ' ';
	}

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	KeanonCatalogBegin(&cat);
	wno = free_watch_number(relid, types, values, nulls);
	insert_watch_row(relid, wno, types, values, nulls);
	KeanonOwnerEnd(&cat);
	SPI_finish();

	for (int i = 0; i < 5; i++)
		if (OidIsValid(objs[i]))
			depend_on_table(objs[i], relid);
	/* every backend's cached watches of the table are forgotten */
	CacheInvalidateRelcacheByRelid(relid);
	PG_RETURN_INT32((int32) wno);
}

/*
 * keanon.forget_watch(tab oid): part of keanon.unwatch and of the drop of
 * a watched table, remove its watch and releases from keanon's catalog;
 * returns the internal objects it had (view, rows, partitions, release
 * table), none when it was not watched
 */
Datum
keanon_forget_watch(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KeanonOwnerScope cat;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};

	InitMaterializedSRF(fcinfo, 0);
	if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)) &&
		!keanon_owns_relation(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	KeanonCatalogBegin(&cat);
	if (SPI_execute_with_args("DELETE FROM keanon.releases WHERE relid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
							  1, types, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "keanon: could not forget the releases of a watch");
	/* the partition ids its number handed out stay spent (keanon.spent_pids) */
	if (SPI_execute_with_args(psprintf("WITH gone AS (DELETE FROM keanon.watches "
									   "WHERE relid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 "
									   "RETURNING watch_no, next_pid, view::pg_catalog.oid AS v, "
									   "rows_table::pg_catalog.oid AS r, parts_table::pg_catalog.oid AS p, "
									   "release_table::pg_catalog.oid AS l, pending_table::pg_catalog.oid AS d)%s "
									   "SELECT v, r, p, l, d FROM gone",
									   have_spent_pids()
									   ? ", spent AS (INSERT INTO keanon.spent_pids AS s (watch_no, next_pid) "
									   "SELECT watch_no, next_pid FROM gone ON CONFLICT (watch_no) DO UPDATE "
									   "SET next_pid = pg_catalog.int8larger(s.next_pid, excluded.next_pid))"
									   : ""),
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not forget a watch");
	KeanonOwnerEnd(&cat);
	if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		CacheInvalidateRelcacheByRelid(relid);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		out[5];
		bool		outnull[5];

		for (int c = 0; c < 5; c++)
			out[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c + 1, &outnull[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, outnull);
	}
	SPI_finish();
	return (Datum) 0;
}

/*
 * keanon.rename_watched_column(tab, old, new): part of following the rename
 * of a watched column (keanon.on_alter), record its new name
 */
Datum
keanon_rename_watched_column(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Name		oldname = PG_GETARG_NAME(1);
	Name		newname = PG_GETARG_NAME(2);
	KeanonOwnerScope cat;
	Oid			types[3] = {OIDOID, NAMEOID, NAMEOID};
	Datum		values[3];

	if (!keanon_owns_relation(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	if (get_attnum(relid, NameStr(*newname)) == InvalidAttrNumber ||
		get_attnum(relid, NameStr(*oldname)) != InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("column \"%s\" of table %s was not renamed to \"%s\"",
						NameStr(*oldname), get_rel_name(relid), NameStr(*newname))));
	values[0] = ObjectIdGetDatum(relid);
	values[1] = NameGetDatum(oldname);
	values[2] = NameGetDatum(newname);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	KeanonCatalogBegin(&cat);
	if (SPI_execute_with_args("UPDATE keanon.watches SET "
							  "sensitive = CASE WHEN sensitive OPERATOR(pg_catalog.=) $2 THEN $3 ELSE sensitive END, "
							  "quasi_identifiers = pg_catalog.array_replace(quasi_identifiers, $2, $3), "
							  "key_columns = pg_catalog.array_replace(key_columns, $2, $3) "
							  "WHERE relid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
							  3, types, values, NULL, false, 0) != SPI_OK_UPDATE || SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is not watched", get_rel_name(relid))));
	KeanonOwnerEnd(&cat);
	SPI_finish();
	CacheInvalidateRelcacheByRelid(relid);
	PG_RETURN_VOID();
}

/*
 * keanon.schedule_releases(tab, every): the owner of a release-mode watch
 * has the background worker release it whenever every has passed since
 * the last release; NULL stops it
 */
Datum
keanon_schedule_releases(PG_FUNCTION_ARGS)
{
	Oid			relid;
	KeanonOwnerScope cat;
	Oid			types[2] = {OIDOID, INTERVALOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("keanon.schedule_releases needs a table")));
	relid = PG_GETARG_OID(0);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (!keanon_owns_relation(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	if (!PG_ARGISNULL(1))
	{
		Interval   *every = PG_GETARG_INTERVAL_P(1);
		Interval	zero;

		memset(&zero, 0, sizeof(zero));
		if (DatumGetInt32(DirectFunctionCall2(interval_cmp, IntervalPGetDatum(every),
											  IntervalPGetDatum(&zero))) <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("release_every must be a positive interval")));
	}
	values[0] = ObjectIdGetDatum(relid);
	values[1] = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);
	nulls[1] = PG_ARGISNULL(1) ? 'n' : ' ';
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	KeanonCatalogBegin(&cat);
	if (SPI_execute_with_args("UPDATE keanon.watches SET release_every = $2 "
							  "WHERE relid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 "
							  "AND mode OPERATOR(pg_catalog.=) 'release'",
							  2, types, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "keanon: could not schedule the releases of %s", get_rel_name(relid));
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is not watched in release mode", get_rel_name(relid)),
				 errhint("Watch it with mode => 'release'.")));
	KeanonOwnerEnd(&cat);
	SPI_finish();
	/* a worker keeps the schedule from the commit on */
	KeanonWorkerNoteWrite();
	PG_RETURN_VOID();
}

/*
 * keanon.register_generalization(tab, generalize, method, ranges,
 * hierarchy, groups, members, origins): part of keanon.watch with generalize,
 * record a watch's generalization and its internal tables (after checking,
 * as register_watch does, that each is a table of the table's owner in its
 * schema, not yet part of any watch)
 */
Datum
keanon_register_generalization(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Oid			owner;
	Oid			nsp;
	KeanonOwnerScope cat;
	Oid			types[8] = {OIDOID, INT4OID, TEXTOID, FLOAT8ARRAYOID, OIDOID, OIDOID, OIDOID,
	FLOAT8ARRAYOID};
	Datum		values[8];
	char		nulls[8];
	const char *what[3] = {"hierarchy table", "groups table", "members table"};
	/* a release-mode watch has no members table: its release table says */
	int			ntables = PG_ARGISNULL(6) ? 2 : 3;

	for (int i = 0; i < 8; i++)
	{
		if (PG_ARGISNULL(i) && i != 6)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("keanon.register_generalization needs every argument but the members table")));
		values[i] = PG_ARGISNULL(i) ? (Datum) 0 : PG_GETARG_DATUM(i);
		nulls[i] = PG_ARGISNULL(i) ? 'n' : ' ';
	}
	relid = PG_GETARG_OID(0);
	check_register_table(relid, &owner, &nsp);
	for (int i = 0; i < ntables; i++)
		check_internal_object(PG_GETARG_OID(4 + i), RELKIND_RELATION, nsp, owner, what[i]);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	KeanonCatalogBegin(&cat);
	if (SPI_execute_with_args("SELECT 1 FROM keanon.watches w WHERE "
							  "ARRAY[w.relid, w.view, w.rows_table, w.parts_table, w.release_table, w.pending_table, "
							  "w.qi_hierarchy, w.qi_groups, w.qi_members]::pg_catalog.oid[] "
							  "OPERATOR(pg_catalog.&&) ARRAY[$5, $6, $7]::pg_catalog.oid[]",
							  8, types, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read keanon.watches");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("an internal table of the generalization of %s is already part of a watch",
						get_rel_name(relid))));
	if (SPI_execute_with_args("UPDATE keanon.watches SET generalize = $2, qi_method = $3, "
							  "qi_ranges = $4, qi_hierarchy = $5::pg_catalog.regclass, "
							  "qi_groups = $6::pg_catalog.regclass, qi_members = $7::pg_catalog.regclass, "
							  "qi_origins = $8 "
							  "WHERE relid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 "
							  "AND generalize IS NULL AND ($7 IS NULL) OPERATOR(pg_catalog.=) (release_table IS NOT NULL)",
							  8, types, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "keanon: could not record the generalization of %s", get_rel_name(relid));
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is not watched, or already generalized", get_rel_name(relid)),
				 errdetail("A watch in release mode is generalized without a members table, any other with one.")));
	KeanonOwnerEnd(&cat);
	SPI_finish();
	for (int i = 0; i < ntables; i++)
		depend_on_table(PG_GETARG_OID(4 + i), relid);
	CacheInvalidateRelcacheByRelid(relid);
	PG_RETURN_VOID();
}

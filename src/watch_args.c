/*
 * watch_args.c
 *		keanon.watch: what it is given, refused in keanon's own words before
 *		anything is made.
 *
 * keanon.watch is this C function.  It checks the table and the arguments
 * (the checks below, each an error with its own errcode and nothing
 * changed), has keanon.watch_check_generalized check a generalization, then
 * calls keanon.watch_build, which makes the watch's objects.  Both are
 * called through fmgr, not as SQL statements.  The errors of the checks
 * here, and those of keanon.watch_check_generalized (raised again without
 * its PL/pgSQL context), name none of keanon's internals; an error of
 * keanon.watch_build names its own frames.
 *
 * The function runs with search_path pinned to pg_catalog, pg_temp and
 * row security on (its SET clauses), as the caller: the caller must be a
 * member of the table's owning role.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "keanon_watch.h"
#include "pg_compat.h"

PG_FUNCTION_INFO_V1(keanon_watch);

/* keanon.watch's arguments, in order */
enum
{
	ARG_TAB,
	ARG_SENSITIVE,
	ARG_QIS,
	ARG_K,
	ARG_E,
	ARG_PUBLISH_AS,
	ARG_MODE,
	ARG_RELEASE_EVERY,
	ARG_GENERALIZE,
	ARG_HIERARCHIES,
	ARG_QI_METHOD,
	NUM_WATCH_ARGS
};

/* the table as the pinned search_path prints it */
static char *
table_text(Oid relid)
{
	return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relid)));
}

/* e as numeric's output writes it */
static char *
numeric_text(Numeric e)
{
	return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(e)));
}

/* k, e and the mode alone */
static void
check_parameters(FunctionCallInfo fcinfo)
{
	const char *mode = PG_ARGISNULL(ARG_MODE) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(ARG_MODE));
	int32		k;
	Numeric		e;

	for (int i = ARG_TAB; i <= ARG_E; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("keanon.watch needs a table, a sensitive column, quasi-identifiers, k and e")));
	if (mode == NULL || (strcmp(mode, "live") != 0 && strcmp(mode, "release") != 0 &&
						 strcmp(mode, "deferred") != 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown watch mode \"%s\"", mode ? mode : "<NULL>"),
				 errhint("Use mode => 'live', mode => 'deferred' or mode => 'release'.")));
	if (!PG_ARGISNULL(ARG_RELEASE_EVERY) && strcmp(mode, "release") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("release_every needs mode => 'release'")));
	k = PG_GETARG_INT32(ARG_K);
	if (k < 2 || k > 1000000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be between 2 and 1000000"),
				 errdetail("k = %d was given.", k)));
	e = PG_GETARG_NUMERIC(ARG_E);
	if (numeric_is_nan(e) || numeric_is_inf(e) ||
		DatumGetBool(DirectFunctionCall2(numeric_lt, NumericGetDatum(e),
										 DirectFunctionCall1(int4_numeric, Int32GetDatum(0)))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("e must be a finite number of at least 0"),
				 errdetail("e = %s was given.", numeric_text(e))));
	if (DatumGetBool(DirectFunctionCall2(numeric_ge, NumericGetDatum(e),
										 DirectFunctionCall3(numeric_in, CStringGetDatum("1e28"),
															 ObjectIdGetDatum(InvalidOid),
															 Int32GetDatum(-1)))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("e must be below 10^28"),
				 errdetail("e = %s was given.", numeric_text(e))));
}

/* Whether the table has a deferrable primary key */
static bool
deferrable_primary_key(Oid relid)
{
	Relation	rel = table_open(ConstraintRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		deferrable = false;

	ScanKeyInit(&key, Anum_pg_constraint_conrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, ConstraintRelidTypidNameIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_constraint con = (Form_pg_constraint) GETSTRUCT(tup);

		if (con->contype == CONSTRAINT_PRIMARY && con->condeferrable)
			deferrable = true;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return deferrable;
}

/* A table keanon can watch: an ordinary permanent one, alone */
static void
check_table_kind(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class cls;

	if (HeapTupleIsValid(tup) && ((Form_pg_class) GETSTRUCT(tup))->relkind == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("partitioned table %s cannot be watched", table_text(relid)),
				 errdetail("Statements on its partitions would bypass a watch of the parent."),
				 errhint("Watch an ordinary table; see \"Known limitations\" in keanon's README.")));
	if (!HeapTupleIsValid(tup) || ((Form_pg_class) GETSTRUCT(tup))->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an ordinary table", table_text(relid))));
	cls = (Form_pg_class) GETSTRUCT(tup);
	if (cls->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("temporary table %s cannot be watched", table_text(relid)),
				 errdetail("A watch outlives no session: its catalog row would outlive the table.")));
	/* rows written through a parent would bypass the table's own triggers */
	if (cls->relispartition)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("partition %s cannot be watched", table_text(relid)),
				 errdetail("Rows written through its partitioned parent would bypass the watch."),
				 errhint("Watch an ordinary table that is neither partitioned nor a partition.")));
	ReleaseSysCache(tup);
	if (has_superclass(relid) || find_inheritance_children(relid, NoLock) != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("table %s has inheritance parents or children and cannot be watched",
						table_text(relid)),
				 errdetail("Rows changed through an inheritance parent would bypass the watch, or be missed by it."),
				 errhint("Watch a table without inheritance (ALTER TABLE ... NO INHERIT).")));
	if (deferrable_primary_key(relid))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("the primary key of table %s is deferrable", table_text(relid)),
				 errdetail("keanon links published rows to their source rows by a key that holds at every statement."),
				 errhint("Make the primary key NOT DEFERRABLE.")));
}

/* The caller owns the table (is a member of its owning role) */
static void
check_owner(Oid relid)
{
	if (!keanon_owns_relation(relid, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", table_text(relid))));
}

/*
 * Take the lock keanon.watch_build takes, now: no DDL can change what the
 * checks read before the watch is made, and a second watch of the table
 * waits here, then finds the first.  A transaction whose snapshot is its
 * first statement's cannot see what it waited for: it fails, to be retried.
 */
static void
lock_table(Oid relid)
{
	bool		waited = false;

	if (!ConditionalLockRelationOid(relid, ShareRowExclusiveLock))
	{
		LockRelationOid(relid, ShareRowExclusiveLock);
		waited = true;
	}
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table %s was dropped while it was being watched", table_text(relid))));
	if (waited && IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access to table %s", table_text(relid)),
				 errdetail("keanon.watch waited for another transaction's lock on the table, which may have changed it after this transaction's snapshot."),
				 errhint("Retry the transaction.")));
	check_table_kind(relid);
	check_owner(relid);
}

/* The caller may watch the table: it owns it, and no watch has it yet */
static void
check_table_free(Oid relid, FunctionCallInfo fcinfo)
{
	bool		watched;

	if (!PG_ARGISNULL(ARG_PUBLISH_AS) && NameStr(*PG_GETARG_NAME(ARG_PUBLISH_AS))[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("publish_as must not be empty")));
	check_owner(relid);
	lock_table(relid);
	/*
	 * (as of a snapshot taken now, which sees a watch committed after this
	 * transaction's; row security shows each owner its own tables' watches)
	 */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	watched = KeanonWatchExistsNow(relid);
	SPI_finish();
	if (watched)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table %s is already watched", table_text(relid)),
				 errhint("Call keanon.unwatch first to change its parameters.")));
}

/* A column of the table, by name: its number, or 0 for none */
static AttrNumber
user_column(Oid relid, const char *name)
{
	AttrNumber	att = get_attnum(relid, name);

	return att > 0 ? att : InvalidAttrNumber;
}

/* The sensitive column: there, and of a type keanon partitions */
static void
check_sensitive(Oid relid, const char *sensitive)
{
	AttrNumber	att = user_column(relid, sensitive);
	Oid			typid;
	Oid			collid;
	int32		typmod;

	if (att == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of table %s does not exist", sensitive, table_text(relid))));
	get_atttypetypmodcoll(relid, att, &typid, &typmod, &collid);
	if (typid != INT2OID && typid != INT4OID && typid != INT8OID && typid != NUMERICOID &&
		typid != FLOAT4OID && typid != FLOAT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("sensitive column \"%s\" has type %s, which keanon cannot partition",
						sensitive, format_type_with_typemod(typid, typmod)),
				 errhint("Use smallint, integer, bigint, numeric, real or double precision.")));
}

/* qsort comparator of names */
static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The quasi-identifiers: some, distinct, present, none the sensitive column */
static void
check_quasi_identifiers(Oid relid, const char *sensitive, Datum *qis, bool *nulls, int nqis)
{
	const char **sorted = palloc(sizeof(char *) * Max(nqis, 1));
	bool		bad = false;

	if (nqis == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("at least one quasi-identifier is needed"),
				 errhint("The published view shows the quasi-identifiers next to the permuted values.")));
	for (int i = 0; i < nqis && !bad; i++)
	{
		bad = nulls[i];
		sorted[i] = bad ? NULL : NameStr(*DatumGetName(qis[i]));
	}
	if (!bad)
	{
		qsort(sorted, nqis, sizeof(char *), name_cmp);
		for (int i = 1; i < nqis && !bad; i++)
			bad = strcmp(sorted[i - 1], sorted[i]) == 0;
	}
	if (bad)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("quasi-identifiers must be distinct and not null")));
	pfree(sorted);
	for (int i = 0; i < nqis; i++)
	{
		const char *q = NameStr(*DatumGetName(qis[i]));

		CHECK_FOR_INTERRUPTS();
		if (strcmp(q, sensitive) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the sensitive column \"%s\" cannot also be a quasi-identifier", q),
					 errdetail("Publishing it unpermuted would reveal every value.")));
		if (user_column(relid, q) == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of table %s does not exist", q, table_text(relid))));
	}
}

/* A watched column's name may not be one of keanon's own */
static void
check_not_reserved(Oid relid, const char *name)
{
	if (strncmp(name, "keanon_", 7) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_RESERVED_NAME),
				 errmsg("column \"%s\" of table %s has a name reserved for keanon", name,
						table_text(relid)),
				 errdetail("Columns whose names begin with keanon_ cannot be watched."),
				 errhint("Rename the column.")));
}

/*
 * The primary key index's columns, in its order, as a name[] (a key with
 * INCLUDE columns is refused: keanon.on_alter lists those too)
 */
static Datum
primary_key_columns(Oid relid)
{
	Relation	rel = try_table_open(relid, AccessShareLock);
	Oid			pk;
	HeapTuple	tup;
	Form_pg_index ix;
	Datum	   *names;
	ArrayType  *arr;

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table %s was dropped while it was being watched", table_text(relid))));
	pk = RelationGetPrimaryKeyIndex(rel);
	table_close(rel, AccessShareLock);
	if (!OidIsValid(pk))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("table %s has no primary key", table_text(relid)),
				 errhint("keanon links published rows to their source rows by primary key.")));
	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(pk));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "keanon: cache lookup failed for index %u", pk);
	ix = (Form_pg_index) GETSTRUCT(tup);
	/* an INCLUDE column may be NULL: a row with one would be published by no key */
	if (ix->indnkeyatts != ix->indnatts)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the primary key of table %s has INCLUDE columns", table_text(relid)),
				 errdetail("keanon links published rows to their source rows by the primary key's columns, and an included column may be NULL."),
				 errhint("Make the primary key without INCLUDE columns; a unique index beside it may include them.")));
	names = palloc(sizeof(Datum) * ix->indnatts);
	for (int i = 0; i < ix->indnatts; i++)
	{
		Name		n = palloc0(NAMEDATALEN);
		Oid			typid;
		int32		typmod;
		Oid			coll;
		Oid			typcoll;

		/*
		 * two keys equal under a nondeterministic collation are told apart
		 * by the rows table's own key index: one row's two versions were
		 * both published
		 */
		get_atttypetypmodcoll(relid, ix->indkey.values[i], &typid, &typmod, &coll);
		/* the rows table's key takes its type's collation (a domain's) */
		typcoll = get_typcollation(typid);
		if ((OidIsValid(coll) && !get_collation_isdeterministic(coll)) ||
			(OidIsValid(typcoll) && !get_collation_isdeterministic(typcoll)))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("primary key column %s of table %s has a nondeterministic collation",
							get_attname(relid, ix->indkey.values[i], false), table_text(relid)),
					 errdetail("keanon finds a row's published version by its key, byte for byte."),
					 errhint("Give the key column a deterministic collation; a unique index beside it may use another.")));
		namestrcpy(n, get_attname(relid, ix->indkey.values[i], false));
		check_not_reserved(relid, NameStr(*n));
		names[i] = NameGetDatum(n);
	}
	arr = construct_array(names, ix->indnatts, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR);
	ReleaseSysCache(tup);
	return PointerGetDatum(arr);
}

/*
 * Refuse, with keanon's own words and nothing made, what cannot be watched;
 * returns the primary key's columns as a name[]
 */
static Datum
check_watch(FunctionCallInfo fcinfo)
{
	Oid			relid;
	const char *sensitive;
	Datum	   *qis;
	bool	   *nulls;
	int			nqis;
	Datum		keys;

	check_parameters(fcinfo);
	relid = PG_GETARG_OID(ARG_TAB);
	check_table_kind(relid);
	check_table_free(relid, fcinfo);
	sensitive = NameStr(*PG_GETARG_NAME(ARG_SENSITIVE));
	check_sensitive(relid, sensitive);
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(ARG_QIS), NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
					  &qis, &nulls, &nqis);
	check_quasi_identifiers(relid, sensitive, qis, nulls, nqis);
	/* keanon's own columns beside the user's in the rows table and the view */
	keys = primary_key_columns(relid);
	for (int i = 0; i < nqis; i++)
		check_not_reserved(relid, NameStr(*DatumGetName(qis[i])));
	check_not_reserved(relid, sensitive);
	return keys;
}

/*
 * Call keanon.<name>(argument types) with the given arguments (NULLs
 * allowed) through fmgr; its result into *isnull and the return value
 */
static Datum
call_keanon(const char *name, int nargs, const Oid *types, const Datum *args, const bool *nulls,
			bool *isnull)
{
	Oid			funcid = LookupFuncName(list_make2(makeString("keanon"), makeString(pstrdup(name))),
										nargs, types, false);
	FmgrInfo	flinfo;
	LOCAL_FCINFO(call, FUNC_MAX_ARGS);
	Datum		result;

	fmgr_info(funcid, &flinfo);
	InitFunctionCallInfoData(*call, &flinfo, nargs, InvalidOid, NULL, NULL);
	for (int i = 0; i < nargs; i++)
	{
		call->args[i].value = args[i];
		call->args[i].isnull = nulls[i];
	}
	result = FunctionCallInvoke(call);
	*isnull = call->isnull;
	return result;
}

/*
 * keanon.watch_check_generalized(args): its errors are about the arguments
 * and the hierarchies named alone, so they are raised again without the
 * context lines of its PL/pgSQL, as the checks above are
 */
static void
check_generalization(const Oid *types, const Datum *args, const bool *nulls)
{
	MemoryContext cxt = CurrentMemoryContext;
	bool		isnull;

	PG_TRY();
	{
		(void) call_keanon("watch_check_generalized", 7, types, args, nulls, &isnull);
	}
	PG_CATCH();
	{
		KeanonRethrowWithoutContext(cxt);
	}
	PG_END_TRY();
}

/*
 * keanon.watch(tab, sensitive, quasi_identifiers, k, e, publish_as, mode,
 * release_every, generalize, hierarchies, qi_method) → regclass: the view
 */
Datum
keanon_watch(PG_FUNCTION_ARGS)
{
	static const Oid gen_types[7] = {REGCLASSOID, NAMEARRAYOID, INT4OID, JSONBOID, TEXTOID,
	TEXTOID, INT4OID};
	static const Oid build_types[NUM_WATCH_ARGS + 1] = {REGCLASSOID, NAMEOID, NAMEARRAYOID,
		NAMEARRAYOID, INT4OID, NUMERICOID, NAMEOID, TEXTOID, INTERVALOID, INT4OID, JSONBOID, TEXTOID};
	Datum		keys = check_watch(fcinfo);
	Datum		args[NUM_WATCH_ARGS + 1];
	bool		nulls[NUM_WATCH_ARGS + 1];
	bool		isnull;
	Datum		view;
	int			gen_args[7] = {ARG_TAB, ARG_QIS, ARG_GENERALIZE, ARG_HIERARCHIES, ARG_QI_METHOD,
	ARG_MODE, ARG_K};

	/* a generalization that cannot be is refused before anything is made */
	for (int i = 0; i < 7; i++)
	{
		args[i] = PG_GETARG_DATUM(gen_args[i]);
		nulls[i] = PG_ARGISNULL(gen_args[i]);
	}
	check_generalization(gen_types, args, nulls);

	/* the watch's objects: the arguments, the keys after the quasi-identifiers */
	for (int i = 0, j = 0; i < NUM_WATCH_ARGS + 1; i++)
	{
		if (i == ARG_QIS + 1)
		{
			args[i] = keys;
			nulls[i] = false;
			continue;
		}
		args[i] = PG_GETARG_DATUM(j);
		nulls[i] = PG_ARGISNULL(j);
		j++;
	}
	view = call_keanon("watch_build", NUM_WATCH_ARGS + 1, build_types, args, nulls, &isnull);
	if (isnull)
		elog(ERROR, "keanon: keanon.watch_build returned no view");
	PG_RETURN_DATUM(view);
}

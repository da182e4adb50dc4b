/*
 * owner.c
 *		Running keanon's own statements as a watched table's owner, in a
 *		sandbox that no caller can reach into.
 *
 * Maintenance, the bound aggregates, the partitions, the privacy report,
 * republish and release all read or write the internal tables, which only
 * the table's owner may touch, so they switch to that owner, as foreign-key
 * triggers and REFRESH MATERIALIZED VIEW do.  The caller is not trusted:
 * a role granted only SELECT on a view, or only INSERT on the table, may
 * own a schema full of functions and operators named like the built-in
 * ones.  While switched, therefore:
 *
 *	- search_path is pg_catalog, pg_temp (set in a GUC nest level of its own,
 *	  undone when the switch ends or the transaction aborts), so every
 *	  unqualified operator, function and type of keanon's statements
 *	  resolves to the built-in one: operators and functions are never looked
 *	  up in pg_temp;
 *	- row_security is on, so that keanon.watches filters its rows by owner
 *	  rather than refusing to be read (pg_dump's scripts turn it off);
 *	- floating-point values print exactly (extra_float_digits at least 1),
 *	  so that a generalized quasi-identifier compared as text with its
 *	  hierarchy's leaves is never taken for another value
 *	  (KeanonPinFloatOutput);
 *	- the operation is security-restricted, so nothing it calls can change
 *	  the role, create temporary objects or leave other state behind.
 *
 * Statements keanon runs also qualify the relations they name, so the
 * caller's temporary tables cannot stand in for them either.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/syscache.h"

#include "keanon_watch.h"
#include "pg_compat.h"

/* the search path of every statement keanon runs as an owner */
#define KEANON_SAFE_SEARCH_PATH "pg_catalog, pg_temp"

/*
 * Floating-point values printed exactly, in the current GUC nest level,
 * where the session would round them (extra_float_digits below 1): a
 * generalized quasi-identifier is compared with its hierarchy's leaves as
 * text, and a writer with extra_float_digits = 0 printed 0.1 + 2e-17 as
 * the leaf 0.1, passed its own check, and stopped every later flush, which
 * printed the value exactly.  Any value from 1 up prints every double as
 * its shortest exact text, as the hierarchies were copied by default; the
 * SQL functions that compare such text (the hierarchy checks, the watch's
 * copy of the hierarchies, keanon.check's parts) set it too.  Other
 * settings shape other types' text (DateStyle, TimeZone) but never print
 * two values alike, so they are left to the session.
 */
void
KeanonPinFloatOutput(void)
{
	if (extra_float_digits < 1)
		(void) set_config_option("extra_float_digits", "1", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
}

/* Act as the owner of relid, sandboxed, until KeanonOwnerEnd() */
void
KeanonOwnerBegin(Oid relid, KeanonOwnerScope *scope)
{
	KeanonRoleBegin(KeanonRelOwner(relid), scope);
}

/*
 * Act as keanon's own role, the owner of its catalog tables (the role that
 * created the extension), sandboxed, until KeanonOwnerEnd(): only keanon's
 * C code writes keanon.watches and keanon.releases, after checking the
 * caller's right to what it asks (see catalog.c).
 */
void
KeanonCatalogBegin(KeanonOwnerScope *scope)
{
	Oid			nsp = get_namespace_oid("keanon", false);
	Oid			watches = get_relname_relid("watches", nsp);

	if (!OidIsValid(watches))
		elog(ERROR, "keanon: the catalog table keanon.watches is missing");
	KeanonRoleBegin(KeanonRelOwner(watches), scope);
}

/* Act as role, sandboxed, until KeanonOwnerEnd() */
void
KeanonRoleBegin(Oid role, KeanonOwnerScope *scope)
{
	GetUserIdAndSecContext(&scope->save_user, &scope->save_sec);
	SetUserIdAndSecContext(role, scope->save_sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	scope->nest_level = NewGUCNestLevel();
	(void) set_config_option("search_path", KEANON_SAFE_SEARCH_PATH,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	/* keanon.watches filters by row security; off (as in a restore) it errs */
	(void) set_config_option("row_security", "on",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	KeanonPinFloatOutput();
}

/* Go back to the caller's role and settings */
void
KeanonOwnerEnd(KeanonOwnerScope *scope)
{
	AtEOXact_GUC(false, scope->nest_level);
	SetUserIdAndSecContext(scope->save_user, scope->save_sec);
}

/* The owner of a relation */
Oid
KeanonRelOwner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/* Run an owner's action on a watched table as its owner, inside SPI */
int64
KeanonOwnerAction(Oid relid, int64 (*action) (Oid relid))
{
	KeanonOwnerScope os;
	int64		n;

	if (!keanon_owns_relation(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	KeanonOwnerBegin(relid, &os);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	n = action(relid);
	SPI_finish();
	KeanonOwnerEnd(&os);
	return n;
}

PG_FUNCTION_INFO_V1(keanon_update_as_owner);

/*
 * keanon.update_as_owner(tab regclass, stmt text) → bigint: run one
 * statement of an extension update as tab's owner, sandboxed.  An update
 * rewrites what earlier versions wrote into a watch's internal tables, and
 * those tables, their triggers, indexes and the column types whose casts
 * and checks the statement runs are the owner's to define: run as the
 * superuser who updates, they would make the owner a superuser.  Gives the
 * statement's single bigint result for a query (NULL without rows), its
 * row count otherwise.  The update script makes it, uses it and drops it.
 */
Datum
keanon_update_as_owner(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *stmt = text_to_cstring(PG_GETARG_TEXT_PP(1));
	KeanonOwnerScope os;
	int64		result = 0;
	bool		isnull = false;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser updating keanon may run a statement as a table's owner")));
	KeanonOwnerBegin(relid, &os);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	if (SPI_execute(stmt, false, 0) < 0)
		elog(ERROR, "keanon: an update's statement failed: %s", stmt);
	if (SPI_tuptable != NULL && SPI_tuptable->tupdesc->natts == 1 &&
		SPI_processed <= 1)
	{
		if (SPI_gettypeid(SPI_tuptable->tupdesc, 1) != INT8OID)
			elog(ERROR, "keanon: an update's query must give one bigint");
		isnull = true;
		if (SPI_processed == 1)
			result = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	else if (SPI_tuptable != NULL)
		elog(ERROR, "keanon: an update's query must give one bigint");
	else
		result = (int64) SPI_processed;
	SPI_finish();
	KeanonOwnerEnd(&os);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_INT64(result);
}

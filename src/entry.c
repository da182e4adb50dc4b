/*
 * entry.c
 *		Entry points whose work is PL/pgSQL, with errors as from C.
 *
 * Some of keanon's SQL functions (keanon.unwatch, keanon.anonymize,
 * keanon.k_anonymity, keanon.generalization_of, keanon.qi_groups,
 * keanon.qi_members, keanon.private_table) do their work in PL/pgSQL.  An
 * error raised there would reach the caller with PL/pgSQL's CONTEXT lines
 * (the function's full signature and a line number) and, for a statement it
 * built, its QUERY text: keanon's internals, not the caller's mistake.
 *
 * So each of those names is this one C function, and its PL/pgSQL is
 * keanon.<name>_body, with the same argument types, in the same schema,
 * with no EXECUTE for PUBLIC.  The entry calls the body through fmgr (no
 * EXECUTE check: the entry's own grant decides who may call), with its own
 * arguments, collation and result set information, and raises any error
 * again without the context lines, the internal query and its positions.
 * The body keeps its SET clauses (search_path, row_security): fmgr applies
 * them.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "keanon_watch.h"

PG_FUNCTION_INFO_V1(keanon_entry);

/* what the body of an entry is called: its name with this after it */
#define ENTRY_BODY_SUFFIX "_body"

/*
 * The error being handled, raised again without the lines that point into
 * PL/pgSQL or at a statement it built, but with the context of the
 * caller's own frames (raised anew, their callbacks add it again).  Call it
 * in PG_CATCH, with cxt the memory context from before the PG_TRY.
 */
void
KeanonRethrowWithoutContext(MemoryContext cxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	edata->context = NULL;
	edata->internalquery = NULL;
	edata->internalpos = 0;
	edata->cursorpos = 0;
	ThrowErrorData(edata);
	pg_unreachable();			/* an ERROR does not return */
}

/* The oid of the body of the entry entry_oid: keanon.<name>_body(same types) */
static Oid
entry_body(Oid entry_oid)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(entry_oid));
	Form_pg_proc proc;
	char	   *name;
	Oid			body;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", entry_oid);
	proc = (Form_pg_proc) GETSTRUCT(tup);
	name = psprintf("%s%s", NameStr(proc->proname), ENTRY_BODY_SUFFIX);
	if (strlen(name) >= NAMEDATALEN)
		elog(ERROR, "keanon: the body of %s has too long a name", NameStr(proc->proname));
	body = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid, CStringGetDatum(name),
						   PointerGetDatum(&proc->proargtypes), ObjectIdGetDatum(proc->pronamespace));
	if (!OidIsValid(body))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("keanon's function %s is missing", name),
				 errhint("Reinstall the extension: ALTER EXTENSION keanon UPDATE, or drop and create it.")));
	ReleaseSysCache(tup);
	return body;
}

/*
 * The entry: keanon.<name>(args) calls keanon.<name>_body(args) and
 * returns what it returns (a set through the same result set information)
 */
Datum
keanon_entry(PG_FUNCTION_ARGS)
{
	FmgrInfo   *body = fcinfo->flinfo->fn_extra;
	MemoryContext cxt = CurrentMemoryContext;
	LOCAL_FCINFO(call, FUNC_MAX_ARGS);
	Datum		result = (Datum) 0;

	if (body == NULL)
	{
		body = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(FmgrInfo));
		fmgr_info_cxt(entry_body(fcinfo->flinfo->fn_oid), body, fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = body;
	}
	InitFunctionCallInfoData(*call, body, PG_NARGS(), PG_GET_COLLATION(), NULL, fcinfo->resultinfo);
	for (int i = 0; i < PG_NARGS(); i++)
		call->args[i] = fcinfo->args[i];
	PG_TRY();
	{
		result = FunctionCallInvoke(call);
	}
	PG_CATCH();
	{
		KeanonRethrowWithoutContext(cxt);
	}
	PG_END_TRY();
	fcinfo->isnull = call->isnull;
	return result;
}

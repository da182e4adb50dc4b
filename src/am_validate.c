/*
 * am_validate.c
 *		amvalidate for keanon operator classes.
 *
 * A keanon operator class names a type keanon knows how to turn into
 * engine numbers and supplies two support functions over it: 1, a
 * three-way comparison returning integer, and 2, the difference of two
 * values returning the type itself.  It has no operators, since a keanon
 * index is never scanned.
 */
#include "postgres.h"

#include "access/amvalidate.h"
#include "access/htup_details.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "keanon_am.h"

/* Report one problem with an operator family */
static void
report(const char *opfamilyname, const char *what)
{
	ereport(INFO,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("keanon operator family \"%s\" %s", opfamilyname, what)));
}

/* amvalidate: check an operator class and its family */
bool
keanonvalidate(Oid opclassoid)
{
	bool		result = true;
	HeapTuple	classtup,
				familytup;
	Form_pg_opclass classform;
	Oid			opfamilyoid,
				opcintype;
	char	   *opfamilyname;
	CatCList   *proclist,
			   *oprlist;
	bool		has_proc[KEANON_NPROCS + 1] = {false};

	classtup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	if (!HeapTupleIsValid(classtup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	classform = (Form_pg_opclass) GETSTRUCT(classtup);
	opfamilyoid = classform->opcfamily;
	opcintype = classform->opcintype;
	familytup = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(opfamilyoid));
	if (!HeapTupleIsValid(familytup))
		elog(ERROR, "cache lookup failed for operator family %u", opfamilyoid);
	opfamilyname = pstrdup(NameStr(((Form_pg_opfamily) GETSTRUCT(familytup))->opfname));
	ReleaseSysCache(familytup);

	if (!KeanonTypeSupported(opcintype))
	{
		report(opfamilyname, psprintf("is for type %s, which keanon cannot partition",
									  format_type_be(opcintype)));
		result = false;
	}
	if (OidIsValid(classform->opckeytype) && classform->opckeytype != opcintype)
	{
		report(opfamilyname, "must not declare a different storage type");
		result = false;
	}

	proclist = SearchSysCacheList1(AMPROCNUM, ObjectIdGetDatum(opfamilyoid));
	for (int i = 0; i < proclist->n_members; i++)
	{
		HeapTuple	proctup = &proclist->members[i]->tuple;
		Form_pg_amproc procform = (Form_pg_amproc) GETSTRUCT(proctup);
		bool		ok;

		if (procform->amproclefttype != procform->amprocrighttype)
		{
			report(opfamilyname,
				   psprintf("contains support function %s with different left and right input types",
							format_procedure(procform->amproc)));
			result = false;
			continue;
		}
		switch (procform->amprocnum)
		{
			case KEANON_CMP_PROC:
				ok = check_amproc_signature(procform->amproc, INT4OID, true, 2, 2,
											procform->amproclefttype,
											procform->amproclefttype);
				break;
			case KEANON_DIFF_PROC:
				ok = check_amproc_signature(procform->amproc, procform->amproclefttype,
											true, 2, 2, procform->amproclefttype,
											procform->amproclefttype);
				break;
			default:
				report(opfamilyname,
					   psprintf("contains function %s with invalid support number %d",
								format_procedure(procform->amproc), procform->amprocnum));
				result = false;
				continue;
		}
		if (!ok)
		{
			report(opfamilyname,
				   psprintf("contains function %s with wrong signature for support number %d",
							format_procedure(procform->amproc), procform->amprocnum));
			result = false;
		}
		else if (procform->amproclefttype == opcintype)
			has_proc[procform->amprocnum] = true;
	}

	oprlist = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(opfamilyoid));
	if (oprlist->n_members > 0)
	{
		report(opfamilyname, "contains operators, but keanon indexes are never scanned");
		result = false;
	}

	for (int p = 1; p <= KEANON_NPROCS; p++)
	{
		if (!has_proc[p])
		{
			report(opfamilyname,
				   psprintf("is missing support function %d for type %s",
							p, format_type_be(opcintype)));
			result = false;
		}
	}

	ReleaseCatCacheList(oprlist);
	ReleaseCatCacheList(proclist);
	ReleaseSysCache(classtup);
	return result;
}

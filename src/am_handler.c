/*
 * am_handler.c
 *		The keanon index access method's handler, options and the callbacks
 *		that make it invisible to the planner.
 *
 * A keanon index answers no scan: it has neither amgettuple nor
 * amgetbitmap, so the planner never builds a path on it, and its cost
 * estimate says so too.  It does not learn of table changes through
 * aminsert either, which could only ever see inserts: keanon's triggers
 * apply every insert, update and delete through KeanonIndexApply() in the
 * same transaction, and a REINDEX rebuilds the state from the table.
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/reloptions.h"
#include "commands/vacuum.h"
#include "nodes/execnodes.h"
#include "optimizer/cost.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"

#include "keanon_am.h"

PG_FUNCTION_INFO_V1(keanon_handler);

static relopt_kind keanon_relopt_kind;
static relopt_parse_elt keanon_relopt_tab[3];

/* Validate the e option's text: a finite decimal number of at least 0 */
static void
validate_e(const char *value)
{
	(void) KeanonParseE(value);
}

/*
 * Register the reloptions k, e and scale.  e is text, so that no double
 * ever rounds it: a number in WITH (e = 1000000.5) arrives as its text.
 */
void
KeanonInitReloptions(void)
{
	keanon_relopt_kind = add_reloption_kind();
	add_int_reloption(keanon_relopt_kind, "k",
					  "Least number of distinct values in a partition",
					  -1, 2, KE_MAX_K, AccessExclusiveLock);
	add_string_reloption(keanon_relopt_kind, "e",
						 "Least range (max - min) of the values in a partition",
						 "0", validate_e, AccessExclusiveLock);
	add_int_reloption(keanon_relopt_kind, "scale",
					  "Decimal places kept for numeric values (-1: the column's)",
					  -1, -1, KEANON_MAX_SCALE, AccessExclusiveLock);
	keanon_relopt_tab[0].optname = "k";
	keanon_relopt_tab[0].opttype = RELOPT_TYPE_INT;
	keanon_relopt_tab[0].offset = offsetof(KeanonOptions, k);
	keanon_relopt_tab[1].optname = "e";
	keanon_relopt_tab[1].opttype = RELOPT_TYPE_STRING;
	keanon_relopt_tab[1].offset = offsetof(KeanonOptions, e_offset);
	keanon_relopt_tab[2].optname = "scale";
	keanon_relopt_tab[2].opttype = RELOPT_TYPE_INT;
	keanon_relopt_tab[2].offset = offsetof(KeanonOptions, scale);
}

/* amoptions: parse and check WITH (k = ..., e = ..., scale = ...) */
bytea *
keanonoptions(Datum reloptions, bool validate)
{
	return (bytea *) build_reloptions(reloptions, validate, keanon_relopt_kind,
									  sizeof(KeanonOptions), keanon_relopt_tab,
									  lengthof(keanon_relopt_tab));
}

/* The e option's text, as given ("0" when not given) */
const char *
KeanonOptionsE(const KeanonOptions *opts)
{
	const char *e = GET_STRING_RELOPTION(opts, e_offset);

	return e != NULL ? e : "0";
}

/* amcostestimate: never worth scanning */
static void
keanoncostestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				   Cost *indexStartupCost, Cost *indexTotalCost,
				   Selectivity *indexSelectivity, double *indexCorrelation,
				   double *indexPages)
{
	*indexStartupCost = disable_cost;
	*indexTotalCost = disable_cost;
	*indexSelectivity = 1.0;
	*indexCorrelation = 0.0;
	*indexPages = 0;
}

/* ambeginscan: keanon indexes hold no row pointers to scan */
static IndexScanDesc
keanonbeginscan(Relation index, int nkeys, int norderbys)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("keanon index \"%s\" cannot be scanned",
					RelationGetRelationName(index)),
			 errdetail("A keanon index holds a partitioning, not row pointers.")));
	return NULL;				/* keep compiler quiet */
}

/* amrescan: unreachable, as no scan can begin */
static void
keanonrescan(IndexScanDesc scan, ScanKey keys, int nkeys,
			 ScanKey orderbys, int norderbys)
{
	elog(ERROR, "keanon indexes cannot be scanned");
}

/* amendscan: unreachable, as no scan can begin */
static void
keanonendscan(IndexScanDesc scan)
{
	elog(ERROR, "keanon indexes cannot be scanned");
}

/*
 * aminsert: changes arrive through keanon's triggers, not here; but a value
 * the index could never hold (NaN, an infinity) is refused, so that a table
 * with a keanon index of no watch cannot take a row its REINDEX would fail on
 */
static bool
keanoninsert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
			 Relation heapRel, IndexUniqueCheck checkUnique, bool indexUnchanged,
			 IndexInfo *indexInfo)
{
	if (!isnull[0])
		KeanonRefuseNonFinite(TupleDescAttr(RelationGetDescr(index), 0)->atttypid, values[0]);
	return false;
}

/* The access method handler */
Datum
keanon_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	amroutine->amstrategies = 0;
	amroutine->amsupport = KEANON_NPROCS;
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = false;
	amroutine->amcanorderbyop = false;
	amroutine->amcanbackward = false;
	amroutine->amcanunique = false;
	amroutine->amcanmulticol = false;
	amroutine->amoptionalkey = true;
	amroutine->amsearcharray = false;
	amroutine->amsearchnulls = false;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = false;
	amroutine->amusemaintenanceworkmem = true;
	amroutine->amparallelvacuumoptions = VACUUM_OPTION_NO_PARALLEL;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = keanonbuild;
	amroutine->ambuildempty = keanonbuildempty;
	amroutine->aminsert = keanoninsert;
	amroutine->ambulkdelete = keanonbulkdelete;
	amroutine->amvacuumcleanup = keanonvacuumcleanup;
	amroutine->amcanreturn = NULL;
	amroutine->amcostestimate = keanoncostestimate;
	amroutine->amoptions = keanonoptions;
	amroutine->amproperty = NULL;
	amroutine->ambuildphasename = keanonbuildphasename;
	amroutine->amvalidate = keanonvalidate;
	amroutine->amadjustmembers = NULL;
	amroutine->ambeginscan = keanonbeginscan;
	amroutine->amrescan = keanonrescan;
	amroutine->amgettuple = NULL;
	amroutine->amgetbitmap = NULL;
	amroutine->amendscan = keanonendscan;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;

	PG_RETURN_POINTER(amroutine);
}

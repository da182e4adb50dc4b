/*
 * spi_plans.c
 *		The kept plans of keanon's maintenance statements.
 *
 * Parsing and planning every statement of every change would cost more
 * than the change itself, so plans are prepared once and kept for the
 * backend's life.  A plan is keyed by the watched table it serves (its
 * OID), whether it is generic or custom, its argument types and its text;
 * never by its text alone: statements over the transition tables
 * (keanon_new, keanon_old) read the same text for two watched tables whose
 * columns share names, and their plans must not be shared.
 *
 * PostgreSQL's plan cache revalidates a kept plan when a relation it names
 * changes, but the transition tables are not catalog relations: their
 * shape is the watched table's.  So every relcache invalidation of a
 * watched table (any ALTER TABLE, DROP, RENAME of it) drops that table's
 * plans here, and an invalidation of all relations drops all.  A dropped
 * plan leaves the cache at once but is freed only at the end of the
 * transaction: the callback, or a nested lookup (a trigger fired by a
 * statement keanon runs), may come while it executes.  The cache holds at
 * most KEANON_MAX_PLANS plans: beyond that, all are dropped and prepared
 * again as used.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"

#include "keanon_watch.h"

#define KEANON_MAX_PLANS	4096
#define KEANON_MAX_PLAN_ARGS 16

typedef struct PlanKey
{
	Oid			relid;			/* the watched table */
	bool		custom;
	int			nargs;
	Oid			types[KEANON_MAX_PLAN_ARGS];
	uint32		text_hash;
} PlanKey;

typedef struct PlanEntry
{
	PlanKey		key;			/* hash key */
	char	   *text;			/* in plan_cxt: the key's hash is not enough */
	SPIPlanPtr	plan;
	struct PlanEntry *next;		/* entries whose text hashes alike */
} PlanEntry;

static HTAB *plan_cache = NULL;
static MemoryContext plan_cxt = NULL;
static List *plans_to_free = NIL;	/* in TopMemoryContext */

/* Drop the plans of entry e (and those chained to it) from use */
static void
drop_entry_plans(PlanEntry *e)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	for (PlanEntry *c = e; c != NULL; c = c->next)
		plans_to_free = lappend(plans_to_free, c->plan);
	MemoryContextSwitchTo(old);
}

/* Drop every plan from use */
static void
drop_all_plans(void)
{
	HASH_SEQ_STATUS seq;
	PlanEntry  *e;

	if (plan_cache == NULL)
		return;
	hash_seq_init(&seq, plan_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
		drop_entry_plans(e);
	hash_destroy(plan_cache);
	plan_cache = NULL;
	MemoryContextReset(plan_cxt);
}

/* Relcache invalidation: the watched table's plans (or all) go */
static void
plan_cache_inval(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS seq;
	PlanEntry  *e;

	if (plan_cache == NULL)
		return;
	if (!OidIsValid(relid))
	{
		drop_all_plans();
		return;
	}
	hash_seq_init(&seq, plan_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (e->key.relid == relid)
		{
			drop_entry_plans(e);
			/* removing the entry just returned is allowed during a scan */
			hash_search(plan_cache, &e->key, HASH_REMOVE, NULL);
		}
	}
}

/* At the end of a transaction no dropped plan executes any more */
static void
free_dropped_plans(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (plans_to_free == NIL ||
		(event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		 event != XACT_EVENT_PREPARE && event != XACT_EVENT_PARALLEL_COMMIT &&
		 event != XACT_EVENT_PARALLEL_ABORT))
		return;
	foreach(lc, plans_to_free)
		SPI_freeplan((SPIPlanPtr) lfirst(lc));
	list_free(plans_to_free);
	plans_to_free = NIL;
}

/* Register the cache's invalidation (from _PG_init) */
void
KeanonPlansInit(void)
{
	CacheRegisterRelcacheCallback(plan_cache_inval, (Datum) 0);
	RegisterXactCallback(free_dropped_plans, NULL);
}

/* The cache, made when there is none */
static void
plan_cache_create(void)
{
	HASHCTL		ctl;

	if (plan_cache != NULL)
		return;
	if (plan_cxt == NULL)
		plan_cxt = AllocSetContextCreate(TopMemoryContext, "keanon maintenance plans",
										 ALLOCSET_DEFAULT_SIZES);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(PlanKey);
	ctl.entrysize = sizeof(PlanEntry);
	ctl.hcxt = plan_cxt;
	plan_cache = hash_create("keanon maintenance plans", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * The kept plan of a statement run for the watch of relid, prepared on
 * first use.  Plans are generic unless custom is asked for: the plan cache
 * would otherwise plan range queries anew at every change, their generic
 * estimates looking worse than the custom ones, at a cost above the
 * query's.  A custom plan suits statements whose best join depends on the
 * size of their array arguments.
 */
SPIPlanPtr
KeanonPlan(Oid relid, const char *sql, int nargs, Oid *types, bool custom)
{
	PlanKey		key;
	PlanEntry  *e;
	bool		found;
	SPIPlanPtr	plan;

	if (nargs > KEANON_MAX_PLAN_ARGS)
		elog(ERROR, "keanon: a statement with %d arguments cannot be kept", nargs);
	if (plan_cache != NULL && hash_get_num_entries(plan_cache) >= KEANON_MAX_PLANS)
		drop_all_plans();
	plan_cache_create();
	memset(&key, 0, sizeof(key));
	key.relid = relid;
	key.custom = custom;
	key.nargs = nargs;
	for (int i = 0; i < nargs; i++)
		key.types[i] = types[i];
	key.text_hash = hash_bytes((const unsigned char *) sql, (int) strlen(sql));

	e = hash_search(plan_cache, &key, HASH_FIND, NULL);
	for (PlanEntry *c = e; c != NULL; c = c->next)
		if (strcmp(c->text, sql) == 0)
			return c->plan;

	plan = SPI_prepare_cursor(sql, nargs, types, custom ? 0 : CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "keanon: SPI_prepare failed (%s) for \"%s\"",
			 SPI_result_code_string(SPI_result), sql);
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "keanon: SPI_keepplan failed");
	/* preparing may have taken an invalidation that dropped the cache */
	plan_cache_create();
	e = hash_search(plan_cache, &key, HASH_ENTER, &found);
	if (found)
	{
		/* another text with the same hash: chain it behind the first */
		PlanEntry  *c = MemoryContextAlloc(plan_cxt, sizeof(PlanEntry));

		c->key = key;
		c->text = MemoryContextStrdup(plan_cxt, sql);
		c->plan = plan;
		c->next = e->next;
		e->next = c;
	}
	else
	{
		e->text = MemoryContextStrdup(plan_cxt, sql);
		e->plan = plan;
		e->next = NULL;
	}
	return plan;
}

/*
 * Run one statement of relid's watch with arguments through its kept plan.
 * SPI leaves the procedure's memory context current after a call; the
 * caller's is made current again, so that a loop running each step in a
 * context of its own (and resetting it) frees what the steps allocate.
 */
int
KeanonSpiExec(Oid relid, const char *sql, int nargs, Oid *types, Datum *values,
			  const char *nulls, bool read_only)
{
	MemoryContext caller = CurrentMemoryContext;
	int			rc = SPI_execute_plan(KeanonPlan(relid, sql, nargs, types, false),
									  values, nulls, read_only, 0);

	MemoryContextSwitchTo(caller);
	return rc;
}

/* Run one statement of relid's watch, checking the result code */
int
KeanonSpiRun(Oid relid, const char *sql, int nargs, Oid *types, Datum *values,
			 const char *nulls, int expect)
{
	int			rc = KeanonSpiExec(relid, sql, nargs, types, values, nulls, false);

	if (rc != expect)
		elog(ERROR, "keanon: SPI error %s running \"%s\"", SPI_result_code_string(rc), sql);
	return rc;
}

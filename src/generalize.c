/*
 * generalize.c
 *		The flow of a change through a generalized watch: the rows that
 *		left or changed leave their groups, the new ones join, and the
 *		groups touched publish their tuples again (see keanon_gen.h).
 *
 * A generalization is loaded from keanon.watches and its hierarchy table
 * at each change (a few hundred rows for the usual hierarchies), checked
 * as it is read: node numbers dense, each parent numbered before its
 * children (so a walk up always ends), each node's leaves an interval
 * within its parent's.  The clustering core then runs against the store
 * of gen_store.c.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/dependency.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/date.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "parser/parse_coerce.h"
#include "executor/tuptable.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/syscache.h"

#include "keanon_gen.h"
#include "maintain_int.h"

/* An internal table of the generalization: a table of the watched table's owner */
static char *
gen_table(Watch *w, Oid oid, bool isnull, const char *what)
{
	if (isnull || get_rel_relkind(oid) != RELKIND_RELATION ||
		KeanonRelOwner(oid) != KeanonRelOwner(w->relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the %s of the generalization of %s is missing", what, get_rel_name(w->relid)),
				 errhint("Unwatch and watch the table again.")));
	return KeanonQualifiedName(oid);
}

/* The SQL of dimension d's coordinate over the relation prefixed px */
char *
KeanonGenCoordinateSql(const KeanonGen *g, int d, const char *px)
{
	const char *col = psprintf("%s%s", px, g->dim_names[d]);

	if (g->categorical[d])
		return KeanonGenLeafSql(g->dim_types[d], col, g->leaves_fixed);
	return KeanonGenCoordinateOf(g->dim_types[d], col);
}

/* The published range type of a numeric column's type */
static char *
range_type(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
			return "pg_catalog.int4range";
		case INT8OID:
			return "pg_catalog.int8range";
		case NUMERICOID:
		case FLOAT4OID:
		case FLOAT8OID:
			return "pg_catalog.numrange";
		case DATEOID:
			return "pg_catalog.daterange";
		case TIMESTAMPOID:
			return "pg_catalog.tsrange";
		case TIMESTAMPTZOID:
			return "pg_catalog.tstzrange";
	}
	return NULL;
}

/* qsort comparator of leaf numbers by their values */
static int
leaf_cmp(const void *a, const void *b, void *arg)
{
	char	  **values = (char **) arg;

	return strcmp(values[*(const int *) a], values[*(const int *) b]);
}

/* A hierarchy read back that breaks a promise of its numbering */
static void
hierarchy_corrupt(const KeanonGen *g, int d, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("the hierarchy of %s in %s is inconsistent: %s", g->dim_names[d], g->hier, why),
			 errhint("Unwatch and watch the table again.")));
}

/* Check hierarchy d as read and index its leaves by value */
static void
hierarchy_finish(KeanonGen *g, int d, int *parent, int *height, int *lo, int *hi, int nnodes)
{
	KcHierarchy *h = &g->h[d];
	int			nleaves = 0;
	int		   *leaf_node;
	int		   *order;
	char	  **leafval;

	for (int n = 0; n < nnodes; n++)
		if (height[n] == 0)
			nleaves++;
	if (nnodes == 0 || parent[0] != -1 || lo[0] != 0 || hi[0] != nleaves - 1)
		hierarchy_corrupt(g, d, "its root is not node 0 over every leaf");
	leaf_node = palloc(sizeof(int) * nleaves);
	for (int l = 0; l < nleaves; l++)
		leaf_node[l] = -1;
	for (int n = 0; n < nnodes; n++)
	{
		if (lo[n] < 0 || hi[n] < lo[n] || hi[n] >= nleaves || height[n] < 0)
			hierarchy_corrupt(g, d, "a node's leaves are out of range");
		if (n > 0 && (parent[n] < 0 || parent[n] >= n || lo[parent[n]] > lo[n] ||
					  hi[parent[n]] < hi[n] || height[parent[n]] <= height[n]))
			hierarchy_corrupt(g, d, "a node does not lie within its parent");
		if (height[n] == 0)
		{
			if (lo[n] != hi[n] || leaf_node[lo[n]] != -1)
				hierarchy_corrupt(g, d, "leaves are not numbered one each");
			leaf_node[lo[n]] = n;
		}
	}
	h->nnodes = nnodes;
	h->nleaves = nleaves;
	h->root = 0;
	h->parent = parent;
	h->height = height;
	h->leaf_lo = lo;
	h->leaf_hi = hi;
	h->leaf_node = leaf_node;
	/* the leaves by value, for lookups */
	leafval = palloc(sizeof(char *) * nleaves);
	order = palloc(sizeof(int) * nleaves);
	for (int l = 0; l < nleaves; l++)
	{
		leafval[l] = g->node_value[d][leaf_node[l]];
		order[l] = l;
	}
	qsort_arg(order, nleaves, sizeof(int), leaf_cmp, leafval);
	g->leaf_sorted[d] = palloc(sizeof(char *) * nleaves);
	for (int l = 0; l < nleaves; l++)
		g->leaf_sorted[d][l] = leafval[order[l]];
	g->leaf_sorted_no[d] = order;
}

/* Read the hierarchy table: every categorical dimension's tree */
static void
load_hierarchies(KeanonGen *g)
{
	if (SPI_execute(psprintf("SELECT dim, node, value, parent, height, leaf_lo, leaf_hi FROM %s "
							 "ORDER BY dim, node", g->hier), false, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read %s", g->hier);
	/* numbers, as keanon made them: the owner may have retyped a column */
	for (int c = 1; c <= 7; c++)
		if (c != 3 && SPI_gettypeid(SPI_tuptable->tupdesc, c) != INT4OID)
			hierarchy_corrupt(g, 0, psprintf("its column \"%s\" is not an integer",
											 SPI_fname(SPI_tuptable->tupdesc, c)));
	for (uint64 r = 0; r < SPI_processed;)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int			d = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull)) - 1;
		uint64		end = r;
		int			nnodes;
		int		   *parent, *height, *lo, *hi;

		if (isnull || d < 0 || d >= g->ndims || !g->categorical[d] || g->node_value[d] != NULL)
			hierarchy_corrupt(g, d < 0 || d >= g->ndims ? 0 : d, "a dimension is not categorical");
		while (end < SPI_processed &&
			   DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[end], desc, 1, &isnull)) == d + 1)
			end++;
		nnodes = (int) (end - r);
		g->node_value[d] = palloc(sizeof(char *) * nnodes);
		parent = palloc(sizeof(int) * nnodes);
		height = palloc(sizeof(int) * nnodes);
		lo = palloc(sizeof(int) * nnodes);
		hi = palloc(sizeof(int) * nnodes);
		for (int n = 0; n < nnodes; n++)
		{
			HeapTuple	t = SPI_tuptable->vals[r + n];
			bool		nulls[6];

			if (DatumGetInt32(SPI_getbinval(t, desc, 2, &nulls[0])) != n)
				hierarchy_corrupt(g, d, "its nodes are not numbered 0, 1, ...");
			g->node_value[d][n] = SPI_getvalue(t, desc, 3);
			parent[n] = DatumGetInt32(SPI_getbinval(t, desc, 4, &nulls[1]));
			if (nulls[1])
				parent[n] = -1;
			height[n] = DatumGetInt32(SPI_getbinval(t, desc, 5, &nulls[2]));
			lo[n] = DatumGetInt32(SPI_getbinval(t, desc, 6, &nulls[3]));
			hi[n] = DatumGetInt32(SPI_getbinval(t, desc, 7, &nulls[4]));
			if (nulls[0] || nulls[2] || nulls[3] || nulls[4] || g->node_value[d][n] == NULL)
				hierarchy_corrupt(g, d, "a node has NULL numbers");
		}
		hierarchy_finish(g, d, parent, height, lo, hi, nnodes);
		g->schema.dims[d].h = &g->h[d];
		r = end;
	}
	for (int d = 0; d < g->ndims; d++)
		if (g->categorical[d] && g->node_value[d] == NULL)
			hierarchy_corrupt(g, d, "it is missing");
}

/* The quasi-identifiers, their types and spans */
static void
load_dims(Watch *w, KeanonGen *g, Datum ranges, Datum qinames)
{
	ArrayType  *arr = DatumGetArrayTypeP(ranges);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	Datum	   *names;
	bool	   *name_nulls;
	int			nnames;
	ListCell   *lc;
	int			d = 0;

	KeanonArrayElements(arr, FLOAT8OID, &elems, &nulls, &n);
	KeanonArrayElements(DatumGetArrayTypeP(qinames), NAMEOID, &names, &name_nulls, &nnames);
	g->ndims = list_length(w->qis);
	if (n != g->ndims || nnames != g->ndims || g->ndims > KC_MAX_DIMS)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the generalization of %s does not match its quasi-identifiers",
						get_rel_name(w->relid))));
	g->dim_names = palloc(sizeof(char *) * g->ndims);
	g->dim_types = palloc(sizeof(Oid) * g->ndims);
	g->dim_attnums = palloc(sizeof(AttrNumber) * g->ndims);
	g->categorical = palloc(sizeof(bool) * g->ndims);
	g->range_type = palloc0(sizeof(char *) * g->ndims);
	g->h = palloc0(sizeof(KcHierarchy) * g->ndims);
	g->node_value = palloc0(sizeof(char **) * g->ndims);
	g->leaf_sorted = palloc0(sizeof(char **) * g->ndims);
	g->leaf_sorted_no = palloc0(sizeof(int *) * g->ndims);
	g->schema.ndims = g->ndims;
	foreach(lc, w->qis)
	{
		/* by name: a quasi-identifier may also be a key column */
		AttrNumber	att = name_nulls[d] ? InvalidAttrNumber :
			get_attnum(w->relid, NameStr(*DatumGetName(names[d])));

		if (att == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("a quasi-identifier of %s is missing", get_rel_name(w->relid))));
		g->dim_attnums[d] = att;

		g->dim_names[d] = pstrdup((char *) lfirst(lc));
		g->dim_types[d] = get_atttype(w->relid, att);
		g->categorical[d] = nulls[d];
		g->schema.dims[d].kind = nulls[d] ? KC_CATEGORICAL : KC_NUMERIC;
		if (!nulls[d])
		{
			double		span = DatumGetFloat8(elems[d]);

			g->range_type[d] = range_type(g->dim_types[d]);
			if (g->range_type[d] == NULL || !(span > 0) || isinf(span))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("the generalization of %s has no valid span for %s",
								get_rel_name(w->relid), g->dim_names[d])));
			g->schema.dims[d].range = span;
		}
		d++;
	}
}

/* The least values the curve keys count from: 0 where none is recorded */
static void
load_origins(KeanonGen *g, Datum origins)
{
	g->origin = palloc0(sizeof(double) * Max(g->ndims, 1));
	if (origins != (Datum) 0)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			n;

		KeanonArrayElements(DatumGetArrayTypeP(origins), FLOAT8OID, &elems, &nulls, &n);
		for (int d = 0; d < g->ndims && d < n; d++)
			if (!nulls[d] && isfinite(DatumGetFloat8(elems[d])))
				g->origin[d] = DatumGetFloat8(elems[d]);
	}
}

/*
 * The cube extension's type and its cube(float8[], float8[]), found by
 * exact signature among the extension's own members (schema nsp): a
 * group's place is built with it in C and bound as a parameter of the
 * type.  Named in SQL, the call was resolved among every function of that
 * name in cube's schema, where a role that may create there could add
 * cube(float8[], float8[], boolean DEFAULT ...) and make it ambiguous for
 * every later write.
 */
static void
resolve_cube(const Watch *w, KeanonGen *g, Oid nsp)
{
	Oid			ext = get_extension_oid("cube", true);
	Oid			argtypes[2] = {FLOAT8ARRAYOID, FLOAT8ARRAYOID};
	char	   *nspname = OidIsValid(ext) && OidIsValid(nsp) ? get_namespace_name(nsp) : NULL;

	g->cube_type = InvalidOid;
	g->cube_fn = InvalidOid;
	if (nspname != NULL)
	{
		g->cube_type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("cube"),
									   ObjectIdGetDatum(nsp));
		g->cube_fn = LookupFuncName(list_make2(makeString(nspname), makeString("cube")), 2, argtypes, true);
	}
	if (!OidIsValid(g->cube_type) || !OidIsValid(g->cube_fn) ||
		getExtensionOfObject(TypeRelationId, g->cube_type) != ext ||
		getExtensionOfObject(ProcedureRelationId, g->cube_fn) != ext)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the generalization of %s needs the extension cube's type and its function cube(float8[], float8[])",
						get_rel_name(w->relid)),
				 errhint("Create the extension cube again, or unwatch and watch the table again.")));
}

/* Read the generalization of watch w (SPI connected, as the table's owner) */
static void
load_generalization(Watch *w, KeanonGen *g)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(w->relid)};
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull[8];
	char	   *method;
	Datum		ranges;
	Datum		origins;

	memset(g, 0, sizeof(*g));
	g->relid = w->relid;
	g->leaves_fixed = KeanonGenLeavesFixed();
	if (KeanonSpiExec(w->relid, "SELECT generalize, qi_method, qi_ranges, qi_hierarchy::pg_catalog.oid, "
					  "qi_groups::pg_catalog.oid, qi_members::pg_catalog.oid, "
					  "(SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e "
					  " JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace "
					  " WHERE e.extname OPERATOR(pg_catalog.=) 'cube'), qi_origins, quasi_identifiers, "
					  "(SELECT e.extnamespace FROM pg_catalog.pg_extension e "
					  " WHERE e.extname OPERATOR(pg_catalog.=) 'cube') "
					  "FROM keanon.watches WHERE relid OPERATOR(pg_catalog.=) $1::pg_catalog.oid::pg_catalog.regclass",
					  1, types, values, NULL, false) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "keanon: could not read the generalization of %s", get_rel_name(w->relid));
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	g->k = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull[0]));
	method = SPI_getvalue(tup, desc, 2);
	ranges = SPI_getbinval(tup, desc, 3, &isnull[2]);
	{
		Oid			oids[3];
		const char *what[3] = {"hierarchy table", "groups table", "members table"};
		char	   *names[3];

		for (int i = 0; i < 3; i++)
		{
			oids[i] = DatumGetObjectId(SPI_getbinval(tup, desc, 4 + i, &isnull[3 + i]));
			/* in release mode the release table holds each row's group */
			names[i] = i == 2 && w->release_mode ? NULL : gen_table(w, oids[i], isnull[3 + i], what[i]);
		}
		g->hier = names[0];
		g->groups = names[1];
		g->members = names[2];
		g->hier_oid = oids[0];
		g->groups_oid = oids[1];
		g->members_oid = oids[2];
	}
	g->cube = SPI_getvalue(tup, desc, 7);
	if (isnull[0] || isnull[2] || method == NULL || g->cube == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the generalization of %s is incomplete", get_rel_name(w->relid)),
				 errhint("The extension cube is needed; unwatch and watch the table again.")));
	{
		bool		nsp_null;

		resolve_cube(w, g, DatumGetObjectId(SPI_getbinval(tup, desc, 10, &nsp_null)));
	}
	g->k = g->schema.k = g->k;
	g->schema.method = strcmp(method, "sbtree") == 0 ? KC_SBTREE : KC_I3M;
	g->schema.candidates = 8;
	origins = SPI_getbinval(tup, desc, 8, &isnull[7]);
	if (!isnull[7])
		origins = datumCopy(origins, false, -1);
	load_dims(w, g, datumCopy(ranges, false, -1),
			  datumCopy(SPI_getbinval(tup, desc, 9, &isnull[1]), false, -1));
	load_origins(g, isnull[7] ? (Datum) 0 : origins);
	load_hierarchies(g);
	KeanonGeneralizeCheckStatus(kc_schema_check(&g->schema), "loading the generalization");
	g->nkeys = list_length(w->keys);
	g->key_types = palloc(sizeof(Oid) * g->nkeys);
	for (int i = 0; i < g->nkeys; i++)
		g->key_types[i] = get_atttype(w->relid, w->watched_attnums[i]);
	g->m_eq_x = KeanonKeysEqual(w, "m.", "x.");
}

/*
 * The generalizations loaded, by watched table, each in its own memory.  A
 * loaded generalization is a shallow copy of its entry, so an entry that
 * an invalidation forgets keeps its memory to the end of the transaction
 * (KeanonRetireMemory, watch_cache.c's, which does the same for watches).  An entry depends on the watched
 * table (every change keanon.watches records for it is an invalidation of
 * it), its three internal tables, and the schemas in the qualified names;
 * the owner's DML on the hierarchy table changes nothing here: keanon.check
 * compares the groups with that table, not with this copy.
 */
typedef struct GenCacheEntry
{
	Oid			relid;			/* hash key */
	MemoryContext cxt;
	KeanonGen	g;
} GenCacheEntry;

static HTAB *gen_cache = NULL;
static MemoryContext gen_cache_cxt = NULL;

/* Forget the entries that depend on relid (all for InvalidOid) */
static void
gen_cache_inval(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS seq;
	GenCacheEntry *e;

	if (gen_cache == NULL)
		return;
	hash_seq_init(&seq, gen_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (!OidIsValid(relid) || relid == e->relid || relid == e->g.hier_oid ||
			relid == e->g.groups_oid || relid == e->g.members_oid)
		{
			KeanonRetireMemory(e->cxt);
			(void) hash_search(gen_cache, &e->relid, HASH_REMOVE, NULL);
		}
}

/* A renamed schema changes the qualified names kept */
static void
gen_cache_nsp_inval(Datum arg, int cacheid, uint32 hashvalue)
{
	gen_cache_inval(arg, InvalidOid);
}

/* Register the cache's invalidations (from _PG_init) */
void
KeanonGenCacheInit(void)
{
	CacheRegisterRelcacheCallback(gen_cache_inval, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, gen_cache_nsp_inval, (Datum) 0);
	KeanonGenLeavesFixedInit();
}

/* A copy of int array a of n in the current context */
static int *
copy_ints(const int *a, int n)
{
	int		   *out = palloc(sizeof(int) * Max(n, 1));

	memcpy(out, a, sizeof(int) * n);
	return out;
}

/* A copy of string array a of n in the current context */
static char **
copy_strings(char **a, int n)
{
	char	  **out = palloc(sizeof(char *) * Max(n, 1));

	for (int i = 0; i < n; i++)
		out[i] = pstrdup(a[i]);
	return out;
}

/*
 * A deep copy of a generalization into the current context: what SPI
 * allocated for the load goes with SPI's memory
 */
void
KeanonGenCopy(const KeanonGen *from, KeanonGen *to)
{
	int			nd = from->ndims;

	*to = *from;
	to->dim_names = copy_strings(from->dim_names, nd);
	to->dim_types = palloc(sizeof(Oid) * nd);
	memcpy(to->dim_types, from->dim_types, sizeof(Oid) * nd);
	to->dim_attnums = palloc(sizeof(AttrNumber) * nd);
	memcpy(to->dim_attnums, from->dim_attnums, sizeof(AttrNumber) * nd);
	to->categorical = palloc(sizeof(bool) * nd);
	memcpy(to->categorical, from->categorical, sizeof(bool) * nd);
	to->origin = palloc(sizeof(double) * Max(nd, 1));
	memcpy(to->origin, from->origin, sizeof(double) * nd);
	to->range_type = palloc0(sizeof(char *) * nd);
	to->h = palloc0(sizeof(KcHierarchy) * nd);
	to->node_value = palloc0(sizeof(char **) * nd);
	to->leaf_sorted = palloc0(sizeof(char **) * nd);
	to->leaf_sorted_no = palloc0(sizeof(int *) * nd);
	for (int d = 0; d < nd; d++)
	{
		const KcHierarchy *h = &from->h[d];

		if (from->range_type[d] != NULL)
			to->range_type[d] = pstrdup(from->range_type[d]);
		if (!from->categorical[d])
			continue;
		to->h[d] = *h;
		to->h[d].parent = copy_ints(h->parent, h->nnodes);
		to->h[d].height = copy_ints(h->height, h->nnodes);
		to->h[d].leaf_lo = copy_ints(h->leaf_lo, h->nnodes);
		to->h[d].leaf_hi = copy_ints(h->leaf_hi, h->nnodes);
		to->h[d].leaf_node = copy_ints(h->leaf_node, h->nleaves);
		to->node_value[d] = copy_strings(from->node_value[d], h->nnodes);
		to->leaf_sorted[d] = copy_strings(from->leaf_sorted[d], h->nleaves);
		to->leaf_sorted_no[d] = copy_ints(from->leaf_sorted_no[d], h->nleaves);
		to->schema.dims[d].h = &to->h[d];
	}
	to->hier = pstrdup(from->hier);
	to->groups = pstrdup(from->groups);
	to->members = from->members ? pstrdup(from->members) : NULL;
	to->cube = pstrdup(from->cube);
	to->key_types = palloc(sizeof(Oid) * Max(from->nkeys, 1));
	memcpy(to->key_types, from->key_types, sizeof(Oid) * from->nkeys);
	to->m_eq_x = pstrdup(from->m_eq_x);
}

/*
 * The generalization of watch w (SPI connected, as the table's owner):
 * from the cache, or read and cached
 */
void
KeanonGenLoad(Watch *w, KeanonGen *g)
{
	GenCacheEntry *e;
	MemoryContext cxt;
	MemoryContext old;
	bool		found;
	KeanonGen	copy;

	if (gen_cache == NULL)
	{
		HASHCTL		ctl;

		gen_cache_cxt = AllocSetContextCreate(TopMemoryContext, "keanon generalizations",
											  ALLOCSET_SMALL_SIZES);
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(GenCacheEntry);
		ctl.hcxt = gen_cache_cxt;
		gen_cache = hash_create("keanon generalizations", 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	e = hash_search(gen_cache, &w->relid, HASH_FIND, NULL);
	/* an update to 0.2.0 rewrote the leaves (keanon.leaf_text came with it) */
	if (e != NULL && e->g.leaves_fixed != KeanonGenLeavesFixed())
	{
		gen_cache_inval((Datum) 0, w->relid);
		e = NULL;
	}
	if (e != NULL)
	{
		*g = e->g;
		return;
	}
	load_generalization(w, g);
	cxt = AllocSetContextCreate(gen_cache_cxt, "keanon generalization", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	KeanonGenCopy(g, &copy);
	MemoryContextSwitchTo(old);
	/* a load nested in this one cached its own copy: keep the newer */
	e = hash_search(gen_cache, &w->relid, HASH_ENTER, &found);
	if (found)
		gen_cache_inval((Datum) 0, w->relid);
	if (found)
		e = hash_search(gen_cache, &w->relid, HASH_ENTER, &found);
	e->relid = w->relid;
	e->cxt = cxt;
	e->g = copy;
}

/* The leaf number of a categorical value, or an error naming its column */
static double
leaf_of(const KeanonGen *g, int d, const char *value)
{
	int			lo = 0,
				hi = g->h[d].nleaves - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = strcmp(value, g->leaf_sorted[d][mid]);

		if (c == 0)
			return (double) g->leaf_sorted_no[d][mid];
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("a value of column %s is not a leaf of its hierarchy %s", g->dim_names[d], g->hier),
			 errhint("Add the value to the hierarchy table the watch was made with, then keanon.unwatch and watch again.")));
	return 0;					/* not reached */
}

/*
 * The largest magnitude of a numeric quasi-identifier's coordinate: below
 * it a group's sum of coordinates over its members, its box's width and
 * the clustering's costs stay finite (1e290 times 2^53 rows is still a
 * double); one writer's two values of 1e308 made a group's sum infinite,
 * which every later write then read as a damaged group.
 */
#define KEANON_GEN_COORDINATE_MAX 1e290

/* Refuse a coordinate no group can take, by the column's name alone */
static void
refuse_coordinate(const KeanonGen *g, int d, double x)
{
	if (isnan(x) || isinf(x))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("generalized quasi-identifier %s of %s must be finite",
						g->dim_names[d], get_rel_name(g->relid))));
	if (fabs(x) > KEANON_GEN_COORDINATE_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("generalized quasi-identifier %s of %s is too large to generalize",
						g->dim_names[d], get_rel_name(g->relid)),
				 errdetail("Its values must lie between -1e290 and 1e290.")));
}

/* The coordinates of the current SPI row, its columns from first on */
void
KeanonGenRowCoordinates(const KeanonGen *g, HeapTuple tup, TupleDesc desc, int first, double *x)
{
	for (int d = 0; d < g->ndims; d++)
	{
		bool		isnull;
		Datum		v = SPI_getbinval(tup, desc, first + d, &isnull);

		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("generalized quasi-identifier %s of %s cannot be NULL",
							g->dim_names[d], get_rel_name(g->relid))));
		if (g->categorical[d])
			x[d] = leaf_of(g, d, TextDatumGetCString(v));
		else
		{
			x[d] = DatumGetFloat8(v);
			refuse_coordinate(g, d, x[d]);
		}
	}
}

/*
 * A numeric quasi-identifier's value as far as its coordinate's magnitude
 * goes: the value itself for floating and numeric types (a numeric past a
 * double's range infinite), infinity for an infinite date or timestamp,
 * zero for the rest, whose coordinates are always small enough
 */
static double
value_magnitude(Oid typid, Datum d)
{
	switch (typid)
	{
		case FLOAT4OID:
			return DatumGetFloat4(d);
		case FLOAT8OID:
			return DatumGetFloat8(d);
		case NUMERICOID:
			return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, d));
		case DATEOID:
			return DATE_NOT_FINITE(DatumGetDateADT(d)) ? INFINITY : 0;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return TIMESTAMP_NOT_FINITE(DatumGetTimestamp(d)) ? INFINITY : 0;
	}
	return 0;
}

/*
 * Refuse, in a deferred writer's own statement, a row the flush could not
 * place in a group (a NULL quasi-identifier, one not finite, a category
 * not a leaf of its hierarchy): noted and refused only by the flush, it
 * would stop every flush of the watch.  A row without a sensitive value
 * joins no group.
 */
void
KeanonGenCheckRow(const KeanonGen *g, TupleTableSlot *slot, AttrNumber s_attnum)
{
	bool		isnull;
	int			level = -1;
	bool		fixed;

	(void) slot_getattr(slot, s_attnum, &isnull);
	if (isnull)
		return;
	/* each value printed as the flush prints it */
	fixed = g->leaves_fixed;
	if (extra_float_digits < 1)
	{
		level = NewGUCNestLevel();
		KeanonPinFloatOutput();
	}
	for (int d = 0; d < g->ndims; d++)
	{
		Datum		v = slot_getattr(slot, g->dim_attnums[d], &isnull);

		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("generalized quasi-identifier %s of %s cannot be NULL",
							g->dim_names[d], get_rel_name(g->relid))));
		if (g->categorical[d])
			(void) leaf_of(g, d, KeanonGenLeafText(g->dim_types[d], v, fixed));
		else
			refuse_coordinate(g, d, value_magnitude(g->dim_types[d], v));
	}
	if (level >= 0)
		AtEOXact_GUC(false, level);
}

/* The SQL list of the keys and coordinates of relation x */
static char *
keys_and_coordinates(Watch *w, const KeanonGen *g, const char *px)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoString(&buf, KeanonNameList(w->keys, px));
	for (int d = 0; d < g->ndims; d++)
		appendStringInfo(&buf, ", %s", KeanonGenCoordinateSql(g, d, px));
	return buf.data;
}

/*
 * Read the rows a query returns (keys, then coordinates) into the store as
 * rows not yet members, and insert each with the core; returns how many
 */
static int64
insert_rows_of(Watch *w, KeanonGen *g, GenStore *gs, const KcSchema *s, const KcStore *st,
			   const char *sql, bool build)
{
	int64		n;
	int64		first = -1;
	KcRow	   *rows;
	Datum	   *keys = palloc(sizeof(Datum) * g->nkeys);
	double	   *x = palloc(sizeof(double) * g->ndims);

	if (KeanonSpiExec(w->relid, sql, 0, NULL, NULL, NULL, false) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read the rows to generalize");
	n = (int64) SPI_processed;
	if (n == 0)
		return 0;
	rows = palloc(sizeof(KcRow) * n);
	for (int64 r = 0; r < n; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];

		for (int i = 0; i < g->nkeys; i++)
			keys[i] = KeanonSpiColumn(w->relid, tup, SPI_tuptable->tupdesc, i + 1, g->key_types[i]);
		KeanonGenRowCoordinates(g, tup, SPI_tuptable->tupdesc, g->nkeys + 1, x);
		rows[r].handle = KeanonGenStoreAddRow(gs, keys, x, false);
		rows[r].x = KeanonGenStoreRowX(gs, rows[r].handle);
		if (first < 0)
			first = rows[r].handle;
	}
	SPI_freetuptable(SPI_tuptable);
	if (build)
		KeanonGeneralizeCheckStatus(kc_build(s, st, rows, n), "building the groups");
	else
	{
		/* what one insertion reads and writes is freed before the next */
		MemoryContext step = AllocSetContextCreate(CurrentMemoryContext,
												   "keanon generalization step",
												   ALLOCSET_DEFAULT_SIZES);

		for (int64 r = 0; r < n; r++)
		{
			MemoryContext old = MemoryContextSwitchTo(step);
			KcStatus	rc = kc_insert(s, st, &rows[r]);

			MemoryContextSwitchTo(old);
			MemoryContextReset(step);
			KeanonGeneralizeCheckStatus(rc, "adding a row to its group");
			CHECK_FOR_INTERRUPTS();
		}
		MemoryContextDelete(step);
	}
	return n;
}

/*
 * Read the rows a query returns (keys, then coordinates) only to refuse a
 * row that no group could take (row_coordinates raises the error)
 */
static void
check_rows_of(Watch *w, const KeanonGen *g, const char *sql)
{
	double	   *x = palloc(sizeof(double) * g->ndims);

	if (KeanonSpiExec(w->relid, sql, 0, NULL, NULL, NULL, false) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read the rows to generalize");
	for (uint64 r = 0; r < SPI_processed; r++)
		KeanonGenRowCoordinates(g, SPI_tuptable->vals[r], SPI_tuptable->tupdesc, g->nkeys + 1, x);
	SPI_freetuptable(SPI_tuptable);
}

/* A group a departing row left, and the row's place in the SPI result */
typedef struct GroupLeft
{
	int64		gid;
	int64		row;
} GroupLeft;

static int
group_left_cmp(const void *a, const void *b)
{
	int64		x = ((const GroupLeft *) a)->gid;
	int64		y = ((const GroupLeft *) b)->gid;

	return (x > y) - (x < y);
}

/*
 * The rows that leave their groups: gone from the rows table, or with a
 * new key or new quasi-identifiers; each group they left is settled once
 */
static void
remove_departures(Watch *w, KeanonGen *g, const KcStore *st, bool by_update,
				  const char *oldrel, const char *newrel)
{
	char	   *cols = KeanonNameList(KeanonUnionNames(w->keys, w->qis), "");
	char	   *gone;
	GroupLeft  *left;
	int64	   *gids;
	double	  **xs;
	int64		n;
	int64		ngids = 0;
	MemoryContext step;

	if (by_update)
		gone = psprintf("(SELECT %s FROM %s EXCEPT ALL SELECT %s FROM %s WHERE %s IS NOT NULL)",
						cols, oldrel, cols, newrel, w->s);
	else
		gone = pstrdup(oldrel);
	if (KeanonSpiExec(w->relid, psprintf("DELETE FROM %s m USING %s x WHERE %s "
										 "RETURNING m.keanon_group, m.keanon_x",
										 g->members, gone, g->m_eq_x),
					  0, NULL, NULL, NULL, false) != SPI_OK_DELETE_RETURNING)
		elog(ERROR, "keanon: could not remove the rows that left their groups");
	/* the groups left, each once: sorted, so a large statement stays O(n log n) */
	n = (int64) SPI_processed;
	left = palloc(sizeof(GroupLeft) * Max(n, 1));
	for (int64 r = 0; r < n; r++)
	{
		left[r].gid = DatumGetInt64(KeanonSpiColumn(w->relid, SPI_tuptable->vals[r], SPI_tuptable->tupdesc,
													1, INT8OID));
		left[r].row = r;
	}
	qsort(left, n, sizeof(GroupLeft), group_left_cmp);
	gids = palloc(sizeof(int64) * Max(n, 1));
	xs = palloc(sizeof(double *) * Max(n, 1));
	for (int64 r = 0; r < n; r++)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			nx;

		if (ngids > 0 && gids[ngids - 1] == left[r].gid)
			continue;
		KeanonArrayElements(DatumGetArrayTypeP(KeanonSpiColumn(w->relid, SPI_tuptable->vals[left[r].row],
															   SPI_tuptable->tupdesc, 2, FLOAT8ARRAYOID)),
							FLOAT8OID, &elems, &nulls, &nx);
		if (nx != g->ndims)
			KeanonGeneralizeCheckStatus(KC_ERR_CORRUPT, "reading a member's coordinates");
		xs[ngids] = palloc(sizeof(double) * g->ndims);
		for (int d = 0; d < g->ndims; d++)
		{
			if (nulls[d] || !KeanonGenCoordinateOk(g, d, DatumGetFloat8(elems[d])))
				KeanonGeneralizeCheckStatus(KC_ERR_CORRUPT, "reading a member's coordinates");
			xs[ngids][d] = DatumGetFloat8(elems[d]);
		}
		gids[ngids++] = left[r].gid;
	}
	SPI_freetuptable(SPI_tuptable);
	step = AllocSetContextCreate(CurrentMemoryContext, "keanon generalization step",
								 ALLOCSET_DEFAULT_SIZES);
	for (int64 i = 0; i < ngids; i++)
	{
		Oid			t[1] = {INT8OID};
		Datum		v[1] = {Int64GetDatum(gids[i])};
		MemoryContext old = MemoryContextSwitchTo(step);
		KcStatus	rc = KC_OK;
		bool		settled;

		/* a group an earlier dispersal already dropped is settled */
		if (KeanonSpiExec(w->relid, psprintf("SELECT 1 FROM %s WHERE keanon_group OPERATOR(pg_catalog.=) $1",
											 g->groups), 1, t, v, NULL, false) != SPI_OK_SELECT)
			elog(ERROR, "keanon: could not read %s", g->groups);
		settled = SPI_processed == 0;
		SPI_freetuptable(SPI_tuptable);
		if (!settled)
			rc = kc_delete(&g->schema, st, gids[i], xs[i]);
		MemoryContextSwitchTo(old);
		MemoryContextReset(step);
		KeanonGeneralizeCheckStatus(rc, "settling a group a row left");
		CHECK_FOR_INTERRUPTS();
	}
	MemoryContextDelete(step);
}

/*
 * Apply one change to the groups (SPI connected, as the owner, under the
 * writers' lock, after the (k,e) change): the departures, then the
 * arrivals, then the tuples of the groups touched
 */
void
KeanonGeneralizeDelta(Watch *w, bool by_insert, bool by_update, bool by_delete,
					  const char *oldrel, const char *newrel)
{
	KeanonGen	g;
	KcStore		st;
	GenStore   *gs;

	KeanonGenLoad(w, &g);
	if (w->release_mode)
	{
		/* the groups are made at keanon.release: refuse what it could not place */
		if (by_insert || by_update)
			check_rows_of(w, &g, psprintf("SELECT %s FROM %s x WHERE x.%s IS NOT NULL",
										  keys_and_coordinates(w, &g, "x."), newrel, w->s));
		return;
	}
	gs = KeanonGenStoreBegin(w, &g, &st);
	if (by_update || by_delete)
		remove_departures(w, &g, &st, by_update, oldrel, newrel);
	/* a new key has no member yet; a changed one, only if it stayed */
	if (by_insert)
		insert_rows_of(w, &g, gs, &g.schema, &st,
					   psprintf("SELECT %s FROM %s x WHERE x.%s IS NOT NULL",
								keys_and_coordinates(w, &g, "x."), newrel, w->s),
					   false);
	else if (by_update)
		insert_rows_of(w, &g, gs, &g.schema, &st,
					   psprintf("SELECT %s FROM %s x WHERE x.%s IS NOT NULL AND NOT EXISTS "
								"(SELECT 1 FROM %s m WHERE %s)",
								keys_and_coordinates(w, &g, "x."), newrel, w->s, g.members, g.m_eq_x),
					   false);
	KeanonGenStoreEnd(gs, false);
}

/*
 * Record the numeric quasi-identifiers' spans and least values over the
 * rows now published, when they differ from the watch's (a watch made on
 * an empty table starts with span 1 and least value 0), as keanon's role,
 * and use them in g from here on; nothing changes for an empty table
 */
void
KeanonGenRefreshSpans(Watch *w, KeanonGen *g)
{
	StringInfoData sql;
	Datum	   *spans = palloc(sizeof(Datum) * g->ndims);
	Datum	   *least = palloc(sizeof(Datum) * g->ndims);
	bool	   *span_null = palloc0(sizeof(bool) * g->ndims);
	double	   *origin = palloc(sizeof(double) * g->ndims);
	bool		changed = false;
	KeanonOwnerScope cat;
	Oid			types[3] = {OIDOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID};
	Datum		values[3];
	int			dims[1] = {g->ndims};
	int			lbs[1] = {1};

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT pg_catalog.count(*)");
	for (int d = 0; d < g->ndims; d++)
		if (!g->categorical[d])
			appendStringInfo(&sql, ", pg_catalog.min(%1$s), pg_catalog.max(%1$s)", KeanonGenCoordinateSql(g, d, "x."));
	appendStringInfo(&sql, " FROM %s x", w->rows);
	if (KeanonSpiExec(w->relid, sql.data, 0, NULL, NULL, NULL, false) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "keanon: could not measure the quasi-identifiers of %s", get_rel_name(w->relid));
	for (int d = 0, col = 2; d < g->ndims; d++)
	{
		bool		n1,
					n2;
		double		lo,
					hi;

		origin[d] = g->origin[d];
		spans[d] = Float8GetDatum(g->schema.dims[d].range);
		least[d] = Float8GetDatum(g->origin[d]);
		span_null[d] = g->categorical[d];
		if (g->categorical[d])
			continue;
		lo = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col++, &n1));
		hi = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col++, &n2));
		if (n1 || n2 || !isfinite(lo) || !isfinite(hi))
			continue;
		if (hi - lo > 0 && hi - lo != g->schema.dims[d].range)
		{
			g->schema.dims[d].range = hi - lo;
			spans[d] = Float8GetDatum(hi - lo);
			changed = true;
		}
		if (lo != g->origin[d])
		{
			origin[d] = lo;
			least[d] = Float8GetDatum(lo);
			changed = true;
		}
	}
	g->origin = origin;
	if (!changed)
		return;
	values[0] = ObjectIdGetDatum(w->relid);
	values[1] = PointerGetDatum(construct_md_array(spans, span_null, 1, dims, lbs, FLOAT8OID, sizeof(float8),
												   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[2] = PointerGetDatum(construct_array(least, g->ndims, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
												TYPALIGN_DOUBLE));
	KeanonCatalogBegin(&cat);
	if (SPI_execute_with_args("UPDATE keanon.watches SET qi_ranges = $2, qi_origins = $3 "
							  "WHERE relid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
							  3, types, values, NULL, false, 0) != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "keanon: could not record the spans of %s", get_rel_name(w->relid));
	KeanonOwnerEnd(&cat);
	/* every backend's cached generalization of the table is forgotten */
	CacheInvalidateRelcacheByRelid(w->relid);
}

/*
 * Cluster every row of the rows table anew (SPI connected, as the owner,
 * under the writers' lock): the static clustering of a new watch and of
 * keanon.regeneralize; returns the number of groups
 */
int64
KeanonGeneralizeBuild(Watch *w)
{
	KeanonGen	g;
	KcStore		st;
	GenStore   *gs;
	int64		ngroups;
	bool		isnull;

	KeanonGenLoad(w, &g);
	KeanonGenRefreshSpans(w, &g);
	if (w->release_mode)
	{
		/* the groups are made at keanon.release: refuse what it could not place */
		check_rows_of(w, &g, psprintf("SELECT %s FROM %s x WHERE x.%s IS NOT NULL",
									  keys_and_coordinates(w, &g, "x."), w->rows, w->s));
		return 0;
	}
	KeanonSpiRun(w->relid, psprintf("TRUNCATE %s, %s", g.members, g.groups), 0, NULL, NULL, NULL,
				 SPI_OK_UTILITY);
	gs = KeanonGenStoreBegin(w, &g, &st);
	insert_rows_of(w, &g, gs, &g.schema, &st,
				   psprintf("SELECT %s FROM %s x", keys_and_coordinates(w, &g, "x."), w->rows), true);
	KeanonGenStoreEnd(gs, true);
	if (KeanonSpiExec(w->relid, psprintf("SELECT pg_catalog.count(*) FROM %s", g.groups), 0, NULL, NULL,
					  NULL, false) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "keanon: could not count the groups of %s", get_rel_name(w->relid));
	ngroups = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	return ngroups;
}

/* IL_Optimization over the watch's groups; returns the groups broken */
int64
KeanonGeneralizeOptimize(Watch *w)
{
	KeanonGen	g;
	KcStore		st;
	GenStore   *gs;
	int64		broken = 0;

	KeanonGenLoad(w, &g);
	gs = KeanonGenStoreBegin(w, &g, &st);
	KeanonGeneralizeCheckStatus(kc_optimize(&g.schema, &st, &broken), "optimizing the groups");
	KeanonGenStoreEnd(gs, false);
	return broken;
}

/* Run a generalization step on relid's watch as a writer; returns its count */
static int64
as_writer(Oid relid, int64 (*step) (Watch *w))
{
	Watch		w;
	int64		n;

	KeanonWatchLoad(relid, &w, false);
	if (w.generalize == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the watch of %s does not generalize its quasi-identifiers", get_rel_name(relid)),
				 errhint("Watch it with generalize => k.")));
	if (w.release_mode)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the groups of %s are those of its releases", get_rel_name(relid)),
				 errdetail("A released group never changes, so that no release reveals anything by subtraction from another.")));
	KeanonBeginWrite(&w, true);
	n = step(&w);
	KeanonSaveWatch(&w);
	KeanonEndWrite(&w);
	return n;
}

/* keanon.regeneralize's work: the static clustering; returns the groups */
int64
KeanonRegeneralize(Oid relid)
{
	return as_writer(relid, KeanonGeneralizeBuild);
}

/* keanon.optimize's work: IL_Optimization; returns the groups broken */
int64
KeanonOptimizeGroups(Oid relid)
{
	return as_writer(relid, KeanonGeneralizeOptimize);
}


/*
 * Whether a generalized watch's view publishes any row: a table of fewer
 * than K rows has one group, not shown (true for a watch not generalized).
 * Run as the table's owner, SPI connected.
 */
bool
KeanonGenPublishesAny(const Watch *w)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(w->relid)};
	bool		isnull;
	Datum		groups;

	if (w->generalize <= 0)
		return true;
	if (KeanonSpiExec(w->relid, "SELECT qi_groups FROM keanon.watches WHERE relid OPERATOR(pg_catalog.=) $1::pg_catalog.oid::pg_catalog.regclass",
					  1, types, values, NULL, true) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "keanon: could not read the watch of %s", get_rel_name(w->relid));
	groups = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return !isnull &&
		KeanonSpiExec(w->relid,
					  psprintf("SELECT 1 FROM %s WHERE keanon_n OPERATOR(pg_catalog.>=) %d LIMIT 1",
							   KeanonQualifiedName(DatumGetObjectId(groups)), w->generalize),
					  0, NULL, NULL, NULL, true) == SPI_OK_SELECT && SPI_processed == 1;
}

/*
 * Refuse a reader what a generalized watch's partitions tell while its view
 * publishes no row: its partitions, their bounds and their report would
 * tell of the rows the view hides.  Run as the table's owner, SPI
 * connected.
 */
void
KeanonGenRefuseUnpublished(const Watch *w)
{
	if (!KeanonGenPublishesAny(w))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the view of %s publishes no row yet", get_rel_name(w->relid)),
				 errdetail("A generalized watch publishes its rows once its table holds %d.", w->generalize)));
}

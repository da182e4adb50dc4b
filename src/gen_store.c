/*
 * gen_store.c
 *		The clustering core's store over a generalized watch's groups and
 *		members tables.
 *
 * One store serves one operation (a statement's change, a flush, a
 * build).  Rows it hands to the core get handles that are indexes into
 * its own arrays of keys and coordinates, valid for the operation alone.
 * The groups nearest a point are found through a btree over each group's
 * Hilbert-curve key (kc_curve_key of its box's centre for I3M, of its
 * centre for the similar-B-tree, in coordinates scaled by kc_weight from
 * the columns' least values when watched): the GEN_WINDOW groups on each
 * side of the point's key are read, ranked by their true distance (to the
 * box, or to the centre), and the nearest handed to the core.  A fixed
 * number of index entries per choice, whatever the number of groups: a
 * GiST KNN search over the boxes, exact, visited a growing share of its
 * pages in 8 dimensions (docs/benchmarks-generalization.md).  The groups
 * whose published tuple covers a point (IL_Optimization) come from the
 * GiST index over keanon_place, the box widened by a margin, with the
 * group's id as one more tiny dimension (place_margin): those whose place
 * holds it in every numeric dimension, then tested against their true box
 * and published ancestors.  Every group the
 * operation writes is remembered, and at its end the numeric ranges of
 * those groups are published again from their members' true values in
 * the rows table: exact, whatever the coordinates' precision.  Integers
 * and dates, whose coordinates are exactly their values, are published
 * from the box as the group is written, with no read of the rows table.  A
 * categorical dimension publishes the value of the hierarchy's node that
 * the core names for the group's box.
 *
 * Every statement is schema-qualified and runs as the table's owner; the
 * store's count of groups is capped at 2, all the core asks of it being
 * whether a group is alone.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "keanon_gen.h"

/* Raise an error for a clustering status other than KC_OK */
void
KeanonGeneralizeCheckStatus(KcStatus st, const char *what)
{
	if (st == KC_OK)
		return;
	if (st == KC_ERR_NOMEM)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory while %s", what)));
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("the groups of a generalized watch are inconsistent (status %d while %s)",
					(int) st, what),
			 errhint("Rebuild them with keanon.regeneralize().")));
}

struct GenStore
{
	Watch	   *w;
	KeanonGen  *g;
	MemoryContext cxt;
	int64		nrows;			/* rows known to the operation */
	int64		cap;
	Datum	   *keys;			/* [cap * nkeys] */
	double	  **x;				/* [cap] coordinates, each its own array */
	bool	   *stored;			/* [cap] a row of the members table */
	KcRow	   *members;		/* the last members listed */
	int64		next_gid;		/* the greatest group id used, -1 unread */
	int64	   *touched;		/* groups written */
	int64		ntouched;
	int64		touched_cap;
	char	   *sql_summary;	/* the select list of a group's summary */
	char	   *sql_member_keys;	/* FROM ... WHERE: the member keyed $1 ... $n */
};

/*
 * Whether x could be keanon's coordinate of dimension d: finite, and for a
 * categorical dimension a leaf number of its hierarchy (the clustering
 * core indexes the hierarchy's arrays by it)
 */
bool
KeanonGenCoordinateOk(const KeanonGen *g, int d, double x)
{
	if (!isfinite(x))
		return false;
	return !g->categorical[d] || (x >= 0 && x < g->h[d].nleaves && x == floor(x));
}

/* A group's summary from the current SPI row (gid, n, lo, hi, sum) */
static void
read_summary(GenStore *gs, HeapTuple tup, TupleDesc desc, KcGroup *out)
{
	bool		isnull;
	double	   *dst[3] = {out->lo, out->hi, out->sum};

	out->gid = DatumGetInt64(KeanonSpiColumn(gs->w->relid, tup, desc, 1, INT8OID));
	out->n = DatumGetInt64(KeanonSpiColumn(gs->w->relid, tup, desc, 2, INT8OID));
	for (int a = 0; a < 3; a++)
	{
		Datum		v = KeanonSpiColumnOrNull(gs->w->relid, tup, desc, 3 + a, FLOAT8ARRAYOID, &isnull);
		Datum	   *elems;
		bool	   *nulls;
		int			n;

		if (isnull)
			KeanonGeneralizeCheckStatus(KC_ERR_CORRUPT, "reading a group");
		KeanonArrayElements(DatumGetArrayTypeP(v), FLOAT8OID, &elems, &nulls, &n);
		if (n != gs->g->ndims)
			KeanonGeneralizeCheckStatus(KC_ERR_CORRUPT, "reading a group");
		for (int d = 0; d < n; d++)
			dst[a][d] = nulls[d] ? 0 : DatumGetFloat8(elems[d]);
	}
	/* what keanon wrote: an empty group's box is empty, a group's box holds leaves */
	if (out->n < 0)
		KeanonGeneralizeCheckStatus(KC_ERR_CORRUPT, "reading a group");
	for (int d = 0; d < gs->g->ndims; d++)
	{
		if (out->n == 0)
		{
			out->lo[d] = INFINITY;
			out->hi[d] = -INFINITY;
			out->sum[d] = 0;
		}
		else if (!KeanonGenCoordinateOk(gs->g, d, out->lo[d]) ||
				 !KeanonGenCoordinateOk(gs->g, d, out->hi[d]) ||
				 out->lo[d] > out->hi[d] || !isfinite(out->sum[d]))
			KeanonGeneralizeCheckStatus(KC_ERR_CORRUPT, "reading a group");
	}
}

/* A float8[] of n doubles */
static Datum
float8_array(const double *v, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * n);

	for (int i = 0; i < n; i++)
		elems[i] = Float8GetDatum(v[i]);
	return PointerGetDatum(construct_array(elems, n, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

/*
 * The cube of corners lo and hi (the places' ndims + 1 dimensions), by the
 * cube extension's own function found at load (resolve_cube), bound to the
 * statements as a value of its type rather than called in them
 */
static Datum
make_cube(const KeanonGen *g, const double *lo, const double *hi)
{
	return OidFunctionCall2(g->cube_fn, float8_array(lo, g->ndims + 1), float8_array(hi, g->ndims + 1));
}

/* The window of groups read on each side of a row's curve key */
#define GEN_WINDOW 32

/* A group's place for the distance: its box (I3M) or centre (sbtree) */
static double
group_distance(const KeanonGen *g, const KcGroup *grp, const double *x)
{
	double		sum = 0;

	for (int d = 0; d < g->ndims; d++)
	{
		double		gap;

		if (g->schema.method == KC_SBTREE)
			gap = grp->n > 0 ? x[d] - grp->sum[d] / (double) grp->n : 0;
		else
			gap = x[d] < grp->lo[d] ? grp->lo[d] - x[d] : x[d] > grp->hi[d] ? x[d] - grp->hi[d] : 0;
		gap *= kc_weight(&g->schema, d);
		sum += gap * gap;
	}
	return sum;
}

/* The curve key of a point: the index's order of groups */
static int64
curve_key(const KeanonGen *g, const double *x)
{
	return (int64) kc_curve_key(&g->schema, g->origin, x, KC_CURVE_HILBERT);
}

/* A group's key: that of its box's centre (I3M) or its centre (sbtree) */
static int64
group_key(const KeanonGen *g, const KcGroup *grp)
{
	double	   *c = palloc(sizeof(double) * g->ndims);
	int64		key;

	for (int d = 0; d < g->ndims; d++)
		c[d] = g->schema.method == KC_SBTREE ?
			(grp->n > 0 ? grp->sum[d] / (double) grp->n : 0) : (grp->lo[d] + grp->hi[d]) / 2;
	key = curve_key(g, c);
	pfree(c);
	return key;
}

typedef struct Candidate
{
	double		dist;
	int64		gid;
	int			row;
} Candidate;

static int
candidate_cmp(const void *a, const void *b)
{
	const Candidate *x = a;
	const Candidate *y = b;

	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	return (x->gid > y->gid) - (x->gid < y->gid);
}

/*
 * The up to max groups nearest x among the GEN_WINDOW on each side of its
 * curve key in the btree over keanon_key, nearest first: a fixed number
 * of index entries read whatever the number of groups
 */
static KcStatus
st_nearest(void *arg, const double *x, int max, int64_t except, KcGroup *out, int *found)
{
	GenStore   *gs = arg;
	KeanonGen  *g = gs->g;
	Oid			types[3] = {INT8OID, INT4OID, INT8OID};
	Datum		values[3];
	Candidate  *cand;
	KcGroup		tmp;
	int			n;

	values[0] = Int64GetDatum(curve_key(g, x));
	values[1] = Int32GetDatum(GEN_WINDOW);
	values[2] = Int64GetDatum(except);
	if (KeanonSpiExec(gs->w->relid,
					  psprintf("(SELECT %1$s FROM %2$s WHERE keanon_key OPERATOR(pg_catalog.>=) $1 "
							   "AND keanon_group OPERATOR(pg_catalog.<>) $3 ORDER BY keanon_key LIMIT $2) "
							   "UNION ALL (SELECT %1$s FROM %2$s WHERE keanon_key OPERATOR(pg_catalog.<) $1 "
							   "AND keanon_group OPERATOR(pg_catalog.<>) $3 ORDER BY keanon_key DESC LIMIT $2)",
							   gs->sql_summary, g->groups),
					  3, types, values, NULL, false) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not search %s", g->groups);
	n = (int) SPI_processed;
	cand = palloc(sizeof(Candidate) * Max(n, 1));
	tmp.lo = palloc(sizeof(double) * g->ndims);
	tmp.hi = palloc(sizeof(double) * g->ndims);
	tmp.sum = palloc(sizeof(double) * g->ndims);
	for (int i = 0; i < n; i++)
	{
		read_summary(gs, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, &tmp);
		cand[i].dist = group_distance(g, &tmp, x);
		cand[i].gid = tmp.gid;
		cand[i].row = i;
	}
	qsort(cand, n, sizeof(Candidate), candidate_cmp);
	*found = Min(n, max);
	for (int i = 0; i < *found; i++)
		read_summary(gs, SPI_tuptable->vals[cand[i].row], SPI_tuptable->tupdesc, &out[i]);
	SPI_freetuptable(SPI_tuptable);
	return KC_OK;
}

/*
 * Whether group grp's published tuple covers x: inside its range in each
 * numeric dimension, under its published ancestor in each categorical one
 */
static bool
covers(const KeanonGen *g, const KcGroup *grp, const double *x)
{
	/* an empty group publishes nothing (and its box has no leaf to read) */
	if (grp->n <= 0)
		return false;
	for (int d = 0; d < g->ndims; d++)
	{
		if (g->categorical[d])
		{
			int			node = kc_lca(&g->h[d], (int) grp->lo[d], (int) grp->hi[d]);

			if (x[d] < g->h[d].leaf_lo[node] || x[d] > g->h[d].leaf_hi[node])
				return false;
		}
		else if (x[d] < grp->lo[d] || x[d] > grp->hi[d])
			return false;
	}
	return true;
}

/*
 * The groups whose published tuple covers x: the index finds those whose
 * box holds x in every numeric dimension (any categorical one), and each
 * is then tested against its published ancestors
 */
static KcStatus
st_covering(void *arg, const double *x, int max, int64_t except, KcGroup *out, int *found)
{
	GenStore   *gs = arg;
	KeanonGen  *g = gs->g;
	Oid			types[3] = {g->cube_type, INT4OID, INT8OID};
	Datum		values[4];
	double	   *lo = palloc(sizeof(double) * (g->ndims + 1));
	double	   *hi = palloc(sizeof(double) * (g->ndims + 1));
	KcGroup		cand;
	uint64		scanned;

	for (int d = 0; d < g->ndims; d++)
	{
		double		sx = x[d] * kc_weight(&g->schema, d);

		lo[d] = g->categorical[d] ? -1e300 : sx;
		hi[d] = g->categorical[d] ? 1e300 : sx;
	}
	/* the groups' ids' dimension (KeanonGenWriteGroup), whole */
	lo[g->ndims] = 0;
	hi[g->ndims] = 1;
	values[0] = make_cube(g, lo, hi);
	values[1] = Int32GetDatum(Max(max, 1) * 16);
	values[2] = Int64GetDatum(except);
	if (KeanonSpiExec(gs->w->relid,
					  psprintf("SELECT %s FROM %s WHERE keanon_group OPERATOR(pg_catalog.<>) $3 "
							   "AND keanon_place OPERATOR(%s.&&) $1 ORDER BY keanon_group LIMIT $2",
							   gs->sql_summary, g->groups, g->cube),
					  3, types, values, NULL, false) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not search %s", g->groups);
	cand.lo = palloc(sizeof(double) * g->ndims);
	cand.hi = palloc(sizeof(double) * g->ndims);
	cand.sum = palloc(sizeof(double) * g->ndims);
	*found = 0;
	scanned = SPI_processed;
	for (uint64 i = 0; i < scanned && *found < max; i++)
	{
		read_summary(gs, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, &cand);
		if (!covers(g, &cand, x))
			continue;
		out[*found].gid = cand.gid;
		out[*found].n = cand.n;
		memcpy(out[*found].lo, cand.lo, sizeof(double) * g->ndims);
		memcpy(out[*found].hi, cand.hi, sizeof(double) * g->ndims);
		memcpy(out[*found].sum, cand.sum, sizeof(double) * g->ndims);
		(*found)++;
	}
	SPI_freetuptable(SPI_tuptable);
	return KC_OK;
}

static KcStatus
st_get(void *arg, int64_t gid, KcGroup *out)
{
	GenStore   *gs = arg;
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(gid)};

	if (KeanonSpiExec(gs->w->relid,
					  psprintf("SELECT %s FROM %s WHERE keanon_group OPERATOR(pg_catalog.=) $1",
							   gs->sql_summary, gs->g->groups),
					  1, types, values, NULL, false) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read %s", gs->g->groups);
	if (SPI_processed != 1)
		return KC_ERR_CORRUPT;
	read_summary(gs, SPI_tuptable->vals[0], SPI_tuptable->tupdesc, out);
	SPI_freetuptable(SPI_tuptable);
	return KC_OK;
}

static KcStatus
st_members(void *arg, int64_t gid, const KcRow **rows, int64_t *n)
{
	GenStore   *gs = arg;
	KeanonGen  *g = gs->g;
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(gid)};
	Datum	   *keys = palloc(sizeof(Datum) * g->nkeys);
	double	   *x = palloc(sizeof(double) * g->ndims);
	MemoryContext old;

	if (KeanonSpiExec(gs->w->relid,
					  psprintf("SELECT %s, keanon_x FROM %s WHERE keanon_group OPERATOR(pg_catalog.=) $1",
							   KeanonNameList(gs->w->keys, ""), g->members),
					  1, types, values, NULL, false) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read %s", g->members);
	old = MemoryContextSwitchTo(gs->cxt);
	if (gs->members != NULL)
		pfree(gs->members);
	gs->members = palloc(sizeof(KcRow) * Max(SPI_processed, 1));
	MemoryContextSwitchTo(old);
	*n = (int64) SPI_processed;
	for (int64 r = 0; r < *n; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		Datum	   *elems;
		bool	   *nulls;
		int			nx;

		for (int i = 0; i < g->nkeys; i++)
			keys[i] = KeanonSpiColumn(gs->w->relid, tup, desc, i + 1, g->key_types[i]);
		KeanonArrayElements(DatumGetArrayTypeP(KeanonSpiColumn(gs->w->relid, tup, desc, g->nkeys + 1,
															   FLOAT8ARRAYOID)),
							FLOAT8OID, &elems, &nulls, &nx);
		if (nx != g->ndims)
			return KC_ERR_CORRUPT;
		for (int d = 0; d < nx; d++)
		{
			if (nulls[d] || !KeanonGenCoordinateOk(g, d, DatumGetFloat8(elems[d])))
				return KC_ERR_CORRUPT;
			x[d] = DatumGetFloat8(elems[d]);
		}
		gs->members[r].handle = KeanonGenStoreAddRow(gs, keys, x, true);
		gs->members[r].x = KeanonGenStoreRowX(gs, gs->members[r].handle);
	}
	SPI_freetuptable(SPI_tuptable);
	*rows = gs->members;
	return KC_OK;
}

static KcStatus
st_create(void *arg, int64_t *gid)
{
	GenStore   *gs = arg;

	if (gs->next_gid < 0)
	{
		bool		isnull;

		if (KeanonSpiExec(gs->w->relid,
						  psprintf("SELECT pg_catalog.max(keanon_group) FROM %s", gs->g->groups),
						  0, NULL, NULL, NULL, false) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "keanon: could not read %s", gs->g->groups);
		gs->next_gid = DatumGetInt64(KeanonSpiColumnOrNull(gs->w->relid, SPI_tuptable->vals[0],
														   SPI_tuptable->tupdesc, 1, INT8OID, &isnull));
		if (isnull)
			gs->next_gid = 0;
		SPI_freetuptable(SPI_tuptable);
	}
	*gid = ++gs->next_gid;
	return KC_OK;
}

/* The published value of each categorical dimension of box lo .. hi */
static Datum
categorical_values(const KeanonGen *g, const KcGroup *grp, bool *any)
{
	Datum	   *elems = palloc(sizeof(Datum) * g->ndims);
	bool	   *nulls = palloc(sizeof(bool) * g->ndims);
	int			dims[1] = {g->ndims};
	int			lbs[1] = {1};

	*any = false;
	for (int d = 0; d < g->ndims; d++)
	{
		nulls[d] = !g->categorical[d] || grp->n == 0;
		if (!nulls[d])
		{
			int			node = kc_lca(&g->h[d], (int) grp->lo[d], (int) grp->hi[d]);

			elems[d] = CStringGetTextDatum(g->node_value[d][node]);
			*any = true;
		}
	}
	return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs, TEXTOID, -1, false,
											  TYPALIGN_INT));
}

/*
 * Whether a numeric type's values are exactly their coordinates (doubles):
 * then a group's published range comes from its box, with no read of the
 * rows table
 */
static bool
exact_in_double(Oid typid)
{
	return typid == INT2OID || typid == INT4OID || typid == DATEOID;
}

/* The published range of exact dimension d from the box in $3 and $4 */
static char *
exact_range_sql(const KeanonGen *g, int d)
{
	if (g->dim_types[d] == DATEOID)
		return KeanonGenRangeOf(DATEOID,
								psprintf("DATE '2000-01-01' OPERATOR(pg_catalog.+) (($3)[%d])::pg_catalog.int4", d + 1),
								psprintf("DATE '2000-01-01' OPERATOR(pg_catalog.+) (($4)[%d])::pg_catalog.int4", d + 1));
	return KeanonGenRangeOf(INT4OID, psprintf("(($3)[%d])::pg_catalog.int4", d + 1),
							psprintf("(($4)[%d])::pg_catalog.int4", d + 1));
}

/*
 * How far a group's place reaches past its box in every dimension.  cube's
 * GiST splits a page by volumes, and a box flat in one dimension has none:
 * on a low-cardinality quasi-identifier's many groups of one value every
 * split then left one entry on a page of its own and split the rest again
 * (an index of 40 MB for 1,600 groups, each write slower than the last).
 * A margin of 2^-30 of a coordinate's weighted span, or more when that many
 * dimensions' product would underflow, gives every place a volume; the
 * search over places (IL_Optimization's covering groups) tests each group
 * it finds against its true box.
 */
static double
place_margin(int ndims)
{
	return Max(ldexp(1.0, -30), ldexp(1.0, -900 / ndims - 1));
}

/* Remember that group gid was written */
void
KeanonGenStoreTouch(GenStore *gs, int64 gid)
{
	for (int64 i = gs->ntouched - 1; i >= 0 && i >= gs->ntouched - 4; i--)
		if (gs->touched[i] == gid)
			return;
	if (gs->ntouched == gs->touched_cap)
	{
		gs->touched_cap *= 2;
		gs->touched = repalloc_huge(gs->touched, sizeof(int64) * gs->touched_cap);
	}
	gs->touched[gs->ntouched++] = gid;
}

/*
 * Write group grp's row of the groups table: its summary, its place and
 * key, and the published values its box gives (categorical ones, and
 * numeric ones exact in double; the others are KeanonGenStoreEnd's or the
 * release's to publish from the true values)
 */
void
KeanonGenWriteGroup(Watch *w, const KeanonGen *g, const KcGroup *grp)
{
	Oid			types[8] = {INT8OID, INT8OID, FLOAT8ARRAYOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID,
	g->cube_type, TEXTARRAYOID, INT8OID};
	Datum		values[8];
	double	   *plo = palloc(sizeof(double) * (g->ndims + 1));
	double	   *phi = palloc(sizeof(double) * (g->ndims + 1));
	bool		any;
	StringInfoData cats;
	StringInfoData cols;
	StringInfoData vals;

	for (int d = 0; d < g->ndims; d++)
	{
		double		wgt = kc_weight(&g->schema, d);

		if (g->schema.method == KC_SBTREE)
			plo[d] = phi[d] = grp->n > 0 ? grp->sum[d] / (double) grp->n * wgt : 0;
		else
		{
			plo[d] = grp->lo[d] * wgt;
			phi[d] = grp->hi[d] * wgt;
		}
	}
	values[0] = Int64GetDatum(grp->gid);
	values[1] = Int64GetDatum(grp->n);
	values[2] = float8_array(grp->lo, g->ndims);
	values[3] = float8_array(grp->hi, g->ndims);
	values[4] = float8_array(grp->sum, g->ndims);
	/*
	 * A last dimension apart from the coordinates, of width under 2^-24:
	 * the group's id, so that groups of one box (a low-cardinality
	 * quasi-identifier's many groups at one value) are not identical keys,
	 * on which cube's GiST splits degenerate (a page per key, each insert
	 * slower than the last); searches span it whole
	 */
	plo[g->ndims] = phi[g->ndims] = ldexp((double) ((uint64) grp->gid & 0xFFFFF), -44);
	for (int d = 0; d <= g->ndims; d++)
	{
		plo[d] -= place_margin(g->ndims + 1);
		phi[d] += place_margin(g->ndims + 1);
	}
	values[5] = make_cube(g, plo, phi);
	values[6] = categorical_values(g, grp, &any);
	values[7] = Int64GetDatum(group_key(g, grp));
	initStringInfo(&cats);
	initStringInfo(&cols);
	initStringInfo(&vals);
	for (int d = 0; d < g->ndims; d++)
	{
		if (g->categorical[d])
			appendStringInfo(&vals, ", ($7)[%d]", d + 1);
		else if (exact_in_double(g->dim_types[d]))
			appendStringInfo(&vals, ", %s", exact_range_sql(g, d));
		else
			continue;
		appendStringInfo(&cols, ", %s", g->dim_names[d]);
		appendStringInfo(&cats, ", %s = EXCLUDED.%s", g->dim_names[d], g->dim_names[d]);
	}
	KeanonSpiRun(w->relid,
				 psprintf("INSERT INTO %s AS g (keanon_group, keanon_n, keanon_lo, keanon_hi, keanon_sum, "
						  "keanon_place, keanon_key%s) VALUES ($1, $2, $3, $4, $5, $6, $8%s) "
						  "ON CONFLICT (keanon_group) DO UPDATE SET keanon_n = EXCLUDED.keanon_n, "
						  "keanon_lo = EXCLUDED.keanon_lo, keanon_hi = EXCLUDED.keanon_hi, "
						  "keanon_sum = EXCLUDED.keanon_sum, keanon_place = EXCLUDED.keanon_place, "
						  "keanon_key = EXCLUDED.keanon_key%s",
						  g->groups, cols.data, vals.data, cats.data),
				 8, types, values, NULL, SPI_OK_INSERT);
}

static KcStatus
st_put(void *arg, const KcGroup *grp)
{
	GenStore   *gs = arg;

	KeanonGenWriteGroup(gs->w, gs->g, grp);
	KeanonGenStoreTouch(gs, grp->gid);
	return KC_OK;
}

static KcStatus
st_drop(void *arg, int64_t gid)
{
	GenStore   *gs = arg;
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(gid)};

	KeanonSpiRun(gs->w->relid,
				 psprintf("DELETE FROM %s WHERE keanon_group OPERATOR(pg_catalog.=) $1", gs->g->groups),
				 1, types, values, NULL, SPI_OK_DELETE);
	return KC_OK;
}

static KcStatus
st_place(void *arg, const KcRow *row, int64_t gid)
{
	GenStore   *gs = arg;
	KeanonGen  *g = gs->g;
	int			nargs = g->nkeys + 2;
	Oid		   *types = palloc(sizeof(Oid) * nargs);
	Datum	   *values = palloc(sizeof(Datum) * nargs);
	int64		h = row->handle;

	if (h < 0 || h >= gs->nrows)
		return KC_ERR_ARG;
	for (int i = 0; i < g->nkeys; i++)
	{
		types[i] = g->key_types[i];
		values[i] = gs->keys[h * g->nkeys + i];
	}
	types[g->nkeys] = INT8OID;
	values[g->nkeys] = Int64GetDatum(gid);
	types[g->nkeys + 1] = FLOAT8ARRAYOID;
	values[g->nkeys + 1] = float8_array(gs->x[h], g->ndims);
	if (gs->stored[h])
		KeanonSpiRun(gs->w->relid,
					 psprintf("UPDATE %s m SET keanon_group = $%d %s", g->members, g->nkeys + 1,
							  gs->sql_member_keys),
					 nargs, types, values, NULL, SPI_OK_UPDATE);
	else
	{
		StringInfoData params;

		initStringInfo(&params);
		for (int i = 1; i <= nargs; i++)
			appendStringInfo(&params, "%s$%d", i > 1 ? ", " : "", i);
		KeanonSpiRun(gs->w->relid,
					 psprintf("INSERT INTO %s (%s, keanon_group, keanon_x) VALUES (%s)", g->members,
							  KeanonNameList(gs->w->keys, ""), params.data),
					 nargs, types, values, NULL, SPI_OK_INSERT);
		gs->stored[h] = true;
	}
	return KC_OK;
}

static KcStatus
st_count(void *arg, int64_t *ngroups)
{
	GenStore   *gs = arg;
	bool		isnull;

	if (KeanonSpiExec(gs->w->relid,
					  psprintf("SELECT pg_catalog.count(*) FROM (SELECT 1 FROM %s LIMIT 2) s", gs->g->groups),
					  0, NULL, NULL, NULL, false) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "keanon: could not count %s", gs->g->groups);
	*ngroups = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return KC_OK;
}

static KcStatus
st_all(void *arg, const int64_t **gids, int64_t *n)
{
	GenStore   *gs = arg;
	int64_t    *out;

	if (KeanonSpiExec(gs->w->relid,
					  psprintf("SELECT keanon_group FROM %s ORDER BY keanon_group", gs->g->groups),
					  0, NULL, NULL, NULL, false) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read %s", gs->g->groups);
	out = MemoryContextAllocHuge(gs->cxt, sizeof(int64_t) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
		out[i] = DatumGetInt64(KeanonSpiColumn(gs->w->relid, SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
											   1, INT8OID));
	*n = (int64) SPI_processed;
	*gids = out;
	SPI_freetuptable(SPI_tuptable);
	return KC_OK;
}

/* Open the store of one operation over watch w's generalization g */
GenStore *
KeanonGenStoreBegin(Watch *w, KeanonGen *g, KcStore *st)
{
	GenStore   *gs = palloc0(sizeof(GenStore));
	StringInfoData buf;
	int			i = 1;
	ListCell   *lc;

	gs->w = w;
	gs->g = g;
	gs->cxt = AllocSetContextCreate(CurrentMemoryContext, "keanon generalization",
									ALLOCSET_DEFAULT_SIZES);
	gs->cap = 64;
	gs->keys = MemoryContextAlloc(gs->cxt, sizeof(Datum) * gs->cap * Max(g->nkeys, 1));
	gs->x = MemoryContextAlloc(gs->cxt, sizeof(double *) * gs->cap);
	gs->stored = MemoryContextAlloc(gs->cxt, sizeof(bool) * gs->cap);
	gs->next_gid = -1;
	gs->touched_cap = 16;
	gs->touched = MemoryContextAlloc(gs->cxt, sizeof(int64) * gs->touched_cap);
	gs->sql_summary = "keanon_group, keanon_n, keanon_lo, keanon_hi, keanon_sum";
	initStringInfo(&buf);
	foreach(lc, w->keys)
	{
		appendStringInfo(&buf, "%s$%d AS %s", i > 1 ? ", " : "", i, (char *) lfirst(lc));
		i++;
	}
	gs->sql_member_keys = psprintf("FROM (SELECT %s) x WHERE %s", buf.data, g->m_eq_x);

	memset(st, 0, sizeof(*st));
	st->arg = gs;
	st->nearest = st_nearest;
	st->covering = st_covering;
	st->get = st_get;
	st->members = st_members;
	st->create = st_create;
	st->put = st_put;
	st->drop = st_drop;
	st->place = st_place;
	st->count = st_count;
	st->all = st_all;
	return gs;
}

/* Give a row (its key and coordinates) a handle */
int64
KeanonGenStoreAddRow(GenStore *gs, const Datum *keys, const double *x, bool stored)
{
	KeanonGen  *g = gs->g;
	MemoryContext old = MemoryContextSwitchTo(gs->cxt);
	int64		h = gs->nrows;

	if (h == gs->cap)
	{
		gs->cap *= 2;
		gs->keys = repalloc_huge(gs->keys, sizeof(Datum) * gs->cap * Max(g->nkeys, 1));
		gs->x = repalloc_huge(gs->x, sizeof(double *) * gs->cap);
		gs->stored = repalloc_huge(gs->stored, sizeof(bool) * gs->cap);
	}
	for (int i = 0; i < g->nkeys; i++)
	{
		int16		len;
		bool		byval;

		get_typlenbyval(g->key_types[i], &len, &byval);
		gs->keys[h * g->nkeys + i] = datumCopy(keys[i], byval, len);
	}
	gs->x[h] = palloc(sizeof(double) * g->ndims);
	memcpy(gs->x[h], x, sizeof(double) * g->ndims);
	gs->stored[h] = stored;
	gs->nrows++;
	MemoryContextSwitchTo(old);
	return h;
}

/* The coordinates of a row known to the store */
const double *
KeanonGenStoreRowX(GenStore *gs, int64 handle)
{
	return gs->x[handle];
}

/*
 * Publish the numeric ranges of groups gids[0 .. n - 1] (those whose
 * coordinates are not exactly their values) from the true values of
 * their member rows: src is the SQL of those rows, r their true values
 * and m.keanon_group their group.  With gids NULL, of every group, in one
 * pass over src (a build: the rows table has no index on its key yet, and
 * a look-up of each group's members would read it whole, once a group)
 */
void
KeanonGenPublishRanges(Watch *w, const KeanonGen *g, const char *src, const int64 *gids, int64 n)
{
	StringInfoData set;
	StringInfoData sel;
	Datum	   *elems;
	Oid			types[1] = {INT8ARRAYOID};
	Datum		values[1];

	initStringInfo(&set);
	initStringInfo(&sel);
	for (int d = 0; d < g->ndims; d++)
	{
		if (g->categorical[d] || exact_in_double(g->dim_types[d]))
			continue;
		appendStringInfo(&set, "%s%s = s.%s", set.len > 0 ? ", " : "", g->dim_names[d],
						 g->dim_names[d]);
		appendStringInfo(&sel, ", %s AS %s",
						 KeanonGenRangeOf(g->dim_types[d], psprintf("pg_catalog.min(r.%s)", g->dim_names[d]),
										  psprintf("pg_catalog.max(r.%s)", g->dim_names[d])),
						 g->dim_names[d]);
	}
	if (set.len == 0 || (gids != NULL && n == 0))
		return;
	if (gids == NULL)
	{
		KeanonSpiRun(w->relid,
					 psprintf("UPDATE %s g SET %s FROM (SELECT m.keanon_group AS keanon_gid%s FROM %s "
							  "GROUP BY m.keanon_group) s WHERE g.keanon_group OPERATOR(pg_catalog.=) s.keanon_gid",
							  g->groups, set.data, sel.data, src),
					 0, NULL, NULL, NULL, SPI_OK_UPDATE);
		return;
	}
	elems = palloc(sizeof(Datum) * n);
	for (int64 i = 0; i < n; i++)
		elems[i] = Int64GetDatum(gids[i]);
	values[0] = PointerGetDatum(construct_array(elems, (int) n, INT8OID, sizeof(int64),
												FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	KeanonSpiRun(w->relid,
				 psprintf("UPDATE %s g SET %s FROM pg_catalog.unnest($1) AS t(keanon_gid), "
						  "LATERAL (SELECT NULL%s FROM %s "
						  "WHERE m.keanon_group OPERATOR(pg_catalog.=) t.keanon_gid) s "
						  "WHERE g.keanon_group OPERATOR(pg_catalog.=) t.keanon_gid",
						  g->groups, set.data, sel.data, src),
				 1, types, values, NULL, SPI_OK_UPDATE);
}

/*
 * Publish the numeric ranges of every group written (with every, of all
 * groups: a build), from their members' true values in the rows table,
 * and close the store
 */
void
KeanonGenStoreEnd(GenStore *gs, bool every)
{
	KeanonGenPublishRanges(gs->w, gs->g,
						   psprintf("%s m JOIN %s r ON %s", gs->g->members, gs->w->rows,
									KeanonKeysEqual(gs->w, "m.", "r.")),
						   every ? NULL : gs->touched, gs->ntouched);
	MemoryContextDelete(gs->cxt);
}

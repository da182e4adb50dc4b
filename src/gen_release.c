/*
 * gen_release.c
 *		Generalized quasi-identifiers in release mode: each release groups
 *		the rows that join in it, and a released group never changes.
 *
 * A release keeps every row of the last one as released (release.c); a
 * generalized release also keeps each such row's group, in the release
 * table's keanon_group, and each group its tuple and size, for as long as
 * the series lasts.  The rows a release adds are none or at least k (each
 * partition adds none or a (k,e)-anonymous set), and keanon.watch asks
 * generalize <= k of a release-mode watch, so they can be clustered among
 * themselves, by the static clustering (kc_build: groups of generalize to
 * 2 generalize - 1 rows).  Whatever two releases a reader keeps, the rows
 * one adds to the other form whole new groups of at least generalize rows
 * and the groups of the older one are shown unchanged: comparing them
 * singles out no row's quasi-identifiers beyond its group's tuple, as
 * comparing their values singles out none beyond its partition's.
 *
 * A group's categorical values are published from its box, its numeric
 * ranges from its members' true values in the release table.  Statements
 * go through SPI as the table's owner, like the rest of the
 * generalization.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "keanon_gen.h"
#include "maintain_int.h"

/* The groups a release's static clustering makes, in memory */
typedef struct ReleaseGroups
{
	int			ndims;
	int64		first_gid;
	int64		ngroups;
	int64		cap;
	int64	   *group_of;		/* [nrows] each row's group */
	KcGroup    *groups;			/* [ngroups] summaries, gid first_gid + i */
} ReleaseGroups;

static KcStatus
rg_create(void *arg, int64_t *gid)
{
	ReleaseGroups *rg = arg;

	if (rg->ngroups == rg->cap)
	{
		rg->cap *= 2;
		rg->groups = repalloc_huge(rg->groups, sizeof(KcGroup) * rg->cap);
	}
	memset(&rg->groups[rg->ngroups], 0, sizeof(KcGroup));
	*gid = rg->first_gid + rg->ngroups++;
	rg->groups[*gid - rg->first_gid].gid = *gid;
	return KC_OK;
}

static KcStatus
rg_place(void *arg, const KcRow *row, int64_t gid)
{
	ReleaseGroups *rg = arg;

	rg->group_of[row->handle] = gid;
	return KC_OK;
}

static KcStatus
rg_put(void *arg, const KcGroup *grp)
{
	ReleaseGroups *rg = arg;
	KcGroup    *to;
	size_t		len = sizeof(double) * rg->ndims;

	if (grp->gid < rg->first_gid || grp->gid >= rg->first_gid + rg->ngroups)
		return KC_ERR_ARG;
	to = &rg->groups[grp->gid - rg->first_gid];
	to->n = grp->n;
	to->lo = memcpy(palloc(len), grp->lo, len);
	to->hi = memcpy(palloc(len), grp->hi, len);
	to->sum = memcpy(palloc(len), grp->sum, len);
	return KC_OK;
}

/*
 * What the static clustering never asks of a store: searches, reads,
 * drops, counts; answered as a store that disagrees with itself would be
 */
static KcStatus
rg_search(void *arg, const double *x, int max, int64_t except, KcGroup *out, int *found)
{
	return KC_ERR_CORRUPT;
}

static KcStatus
rg_get(void *arg, int64_t gid, KcGroup *out)
{
	return KC_ERR_CORRUPT;
}

static KcStatus
rg_members(void *arg, int64_t gid, const KcRow **rows, int64_t *n)
{
	return KC_ERR_CORRUPT;
}

static KcStatus
rg_drop(void *arg, int64_t gid)
{
	return KC_ERR_CORRUPT;
}

static KcStatus
rg_count(void *arg, int64_t *ngroups)
{
	return KC_ERR_CORRUPT;
}

static KcStatus
rg_all(void *arg, const int64_t **gids, int64_t *n)
{
	return KC_ERR_CORRUPT;
}

/*
 * Read the rows the release added (no group yet) with their coordinates
 * into tids and rows; returns how many
 */
static int64
read_new_rows(Watch *w, const KeanonGen *g, Datum **tids, KcRow **rows)
{
	StringInfoData sql;
	int64		n;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT r.ctid");
	for (int d = 0; d < g->ndims; d++)
		appendStringInfo(&sql, ", %s", KeanonGenCoordinateSql(g, d, "r."));
	appendStringInfo(&sql, " FROM %s r WHERE r.keanon_group IS NULL ORDER BY r.ctid", w->release);
	KeanonSpiRun(w->relid, sql.data, 0, NULL, NULL, NULL, SPI_OK_SELECT);
	n = (int64) SPI_processed;
	*tids = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(n, 1));
	*rows = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(KcRow) * Max(n, 1));
	for (int64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		bool		isnull;
		double	   *x = palloc(sizeof(double) * g->ndims);
		ItemPointer tid = palloc(sizeof(ItemPointerData));

		ItemPointerCopy((ItemPointer) DatumGetPointer(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull)), tid);
		(*tids)[i] = PointerGetDatum(tid);
		KeanonGenRowCoordinates(g, tup, SPI_tuptable->tupdesc, 2, x);
		(*rows)[i].handle = i;
		(*rows)[i].x = x;
	}
	SPI_freetuptable(SPI_tuptable);
	return n;
}

/* The first group id free in the groups table */
static int64
first_free_gid(Watch *w, const KeanonGen *g)
{
	bool		isnull;

	KeanonSpiRun(w->relid,
				 psprintf("SELECT COALESCE(pg_catalog.max(keanon_group), 0) "
						  "OPERATOR(pg_catalog.+) 1 FROM %s", g->groups),
				 0, NULL, NULL, NULL, SPI_OK_SELECT);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* Name each new row's group in the release table */
static void
write_membership(Watch *w, const Datum *tids, const ReleaseGroups *rg, int64 n)
{
	Oid			types[2] = {TIDARRAYOID, INT8ARRAYOID};
	Datum		values[2];
	Datum	   *gids = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(n, 1));

	for (int64 i = 0; i < n; i++)
		gids[i] = Int64GetDatum(rg->group_of[i]);
	values[0] = PointerGetDatum(construct_array((Datum *) tids, (int) n, TIDOID, sizeof(ItemPointerData),
												false, TYPALIGN_SHORT));
	values[1] = PointerGetDatum(construct_array(gids, (int) n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
												TYPALIGN_DOUBLE));
	KeanonSpiRun(w->relid,
				 psprintf("UPDATE %s r SET keanon_group = u.g "
						  "FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS u(t, g) "
						  "WHERE r.ctid OPERATOR(pg_catalog.=) u.t", w->release),
				 2, types, values, NULL, SPI_OK_UPDATE);
	if ((int64) SPI_processed != n)
		elog(ERROR, "keanon: the release of %s grouped %lld rows of %lld",
			 get_rel_name(w->relid), (long long) SPI_processed, (long long) n);
}

/*
 * Group the rows the release just written added (SPI connected, as the
 * owner, under the writers' lock); returns the number of groups made
 */
int64
KeanonGeneralizeRelease(Watch *w)
{
	KeanonGen	g;
	KcStore		st;
	ReleaseGroups rg;
	Datum	   *tids;
	KcRow	   *rows;
	int64		n;
	int64	   *gids;

	KeanonGenLoad(w, &g);
	KeanonGenRefreshSpans(w, &g);
	n = read_new_rows(w, &g, &tids, &rows);
	if (n == 0)
		return 0;
	if (n < g.k)
		elog(ERROR, "keanon: the release of %s adds %lld rows, fewer than a group's %d",
			 get_rel_name(w->relid), (long long) n, g.k);
	memset(&rg, 0, sizeof(rg));
	rg.ndims = g.ndims;
	rg.first_gid = first_free_gid(w, &g);
	rg.cap = 16;
	rg.groups = palloc(sizeof(KcGroup) * rg.cap);
	rg.group_of = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * n);
	/* the static clustering asks only create, place and put of its store */
	st.arg = &rg;
	st.nearest = rg_search;
	st.covering = rg_search;
	st.get = rg_get;
	st.members = rg_members;
	st.create = rg_create;
	st.put = rg_put;
	st.drop = rg_drop;
	st.place = rg_place;
	st.count = rg_count;
	st.all = rg_all;
	KeanonGeneralizeCheckStatus(kc_build(&g.schema, &st, rows, n), "grouping the release's rows");
	gids = palloc(sizeof(int64) * rg.ngroups);
	for (int64 i = 0; i < rg.ngroups; i++)
	{
		KeanonGenWriteGroup(w, &g, &rg.groups[i]);
		gids[i] = rg.groups[i].gid;
	}
	write_membership(w, tids, &rg, n);
	KeanonGenPublishRanges(w, &g, psprintf("%s r CROSS JOIN LATERAL (SELECT r.keanon_group) m", w->release),
						   gids, rg.ngroups);
	return rg.ngroups;
}

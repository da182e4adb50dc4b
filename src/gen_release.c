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

#include "kc_memstore.h"
#include "keanon_gen.h"
#include "maintain_int.h"

/*
 * Read the rows the release added (no group yet): their tids, and their
 * coordinates into a new in-memory store, handles 0 .. n - 1 in order
 */
static int64
read_new_rows(Watch *w, const KeanonGen *g, Datum **tids, KcMemStore **ms)
{
	StringInfoData sql;
	int64		n;
	int64		first;
	double	   *x;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT r.ctid");
	for (int d = 0; d < g->ndims; d++)
		appendStringInfo(&sql, ", %s", KeanonGenCoordinateSql(g, d, "r."));
	appendStringInfo(&sql, " FROM %s r WHERE r.keanon_group IS NULL ORDER BY r.ctid", w->release);
	KeanonSpiRun(w->relid, sql.data, 0, NULL, NULL, NULL, SPI_OK_SELECT);
	n = (int64) SPI_processed;
	*tids = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(n, 1));
	x = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * g->ndims * Max(n, 1));
	for (int64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		ItemPointer tid = palloc(sizeof(ItemPointerData));

		ItemPointerCopy((ItemPointer) DatumGetPointer(KeanonSpiColumn(w->relid, tup, SPI_tuptable->tupdesc,
																	  1, TIDOID)), tid);
		(*tids)[i] = PointerGetDatum(tid);
		KeanonGenRowCoordinates(g, tup, SPI_tuptable->tupdesc, 2, x + i * g->ndims);
	}
	SPI_freetuptable(SPI_tuptable);
	*ms = kc_memstore_create(&g->schema);
	if (*ms == NULL || kc_memstore_add_rows(*ms, x, n, &first) != KC_OK || first != 0)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	return n;
}

/* The first group id free in the groups table */
static int64
first_free_gid(Watch *w, const KeanonGen *g)
{
	KeanonSpiRun(w->relid,
				 psprintf("SELECT COALESCE(pg_catalog.max(keanon_group), 0) "
						  "OPERATOR(pg_catalog.+) 1 FROM %s", g->groups),
				 0, NULL, NULL, NULL, SPI_OK_SELECT);
	return DatumGetInt64(KeanonSpiColumn(w->relid, SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
										 INT8OID));
}

/* Name each new row's group in the release table */
static void
write_membership(Watch *w, const Datum *tids, const KcMemStore *ms, int64 first_gid, int64 n)
{
	Oid			types[2] = {TIDARRAYOID, INT8ARRAYOID};
	Datum		values[2];
	Datum	   *gids = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(n, 1));

	for (int64 i = 0; i < n; i++)
		gids[i] = Int64GetDatum(first_gid + kc_memstore_row_group(ms, i));
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
	KcMemStore *ms;
	KcRow	   *rows;
	Datum	   *tids;
	int64		n;
	int64		first_gid;
	int64	   *gids;
	int64		ngroups = 0;
	KcGroup		grp;
	int64		members;

	KeanonGenLoad(w, &g);
	KeanonGenRefreshSpans(w, &g);
	n = read_new_rows(w, &g, &tids, &ms);
	if (n == 0)
		return 0;
	if (n < g.k)
		elog(ERROR, "keanon: the release of %s adds %lld rows, fewer than a group's %d",
			 get_rel_name(w->relid), (long long) n, g.k);
	rows = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(KcRow) * n);
	for (int64 i = 0; i < n; i++)
	{
		rows[i].handle = i;
		rows[i].x = kc_memstore_row(ms, i);
	}
	KeanonGeneralizeCheckStatus(kc_build(&g.schema, kc_memstore_store(ms), rows, n),
								"grouping the release's rows");
	/* the store numbers its groups from 0; the table's go on after its last */
	first_gid = first_free_gid(w, &g);
	gids = palloc(sizeof(int64) * Max(kc_memstore_gid_limit(ms), 1));
	grp.lo = palloc(sizeof(double) * g.ndims);
	grp.hi = palloc(sizeof(double) * g.ndims);
	grp.sum = palloc(sizeof(double) * g.ndims);
	for (int64 gid = 0; gid < kc_memstore_gid_limit(ms); gid++)
	{
		if (!kc_memstore_group(ms, gid, &grp, &members) || members == 0)
			continue;
		grp.gid = first_gid + gid;
		KeanonGenWriteGroup(w, &g, &grp);
		gids[ngroups++] = grp.gid;
	}
	write_membership(w, tids, ms, first_gid, n);
	kc_memstore_destroy(ms);
	KeanonGenPublishRanges(w, &g, psprintf("%s r CROSS JOIN LATERAL (SELECT r.keanon_group) m", w->release),
						   gids, ngroups);
	return ngroups;
}

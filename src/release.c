/*
 * release.c
 *		Release mode: keanon.release computes the least sum-error
 *		(k,e)-partitioning that keeps every partition of the previous
 *		release whole, and publishes it into the watch's release table.
 *
 * Between releases the watch tracks every change (the index stays the
 * live optimum) but its view does not move.  A release reads the run list
 * from the index, masks the cuts that would split a previous partition
 * (ke_release_cuts), runs the constrained DP (ke_constrained_dp), places
 * the rows as a live change would, copies them into the release table in
 * slot order (a random order within each partition) and records the
 * release in keanon.releases, as keanon's own role.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "catalog/pg_class.h"
#include "access/htup_details.h"

#include "maintain_int.h"

/* Partitions from the end flags of a DP over runs (see ke_constrained_dp) */
void
KeanonPartitionsFromFlags(KeKind kind, const KeNum *vals, const int64 *counts,
						  size_t m, const int *end, KeanonPartList *pl)
{
	KePartition p;
	bool		open = false;

	memset(&p, 0, sizeof(p));
	for (size_t r = 0; r < m; r++)
	{
		if (!open)
		{
			memset(&p, 0, sizeof(p));
			p.lo = vals[r];
			open = true;
		}
		p.ndistinct++;
		if (end[r] == KE_END_SPLIT)
		{
			p.n += counts[r] - 1;
			p.hi = vals[r];
			p.hi_split = true;
			p.error = ke_num_sub(kind, p.hi, p.lo);
			KeanonCollectPartition(&p, pl);
			memset(&p, 0, sizeof(p));
			p.lo = vals[r];
			p.lo_last_only = true;
			p.n = 1;
			p.ndistinct = 1;
			continue;
		}
		p.n += counts[r];
		if (end[r] == KE_END_FULL)
		{
			p.hi = vals[r];
			p.error = ke_num_sub(kind, p.hi, p.lo);
			KeanonCollectPartition(&p, pl);
			open = false;
		}
	}
}

/*
 * An engine number from a release's text of it (release_text): a double as
 * ke_num_format writes it, a numeric in the column's own units, so that a
 * change of the index's scale cannot shift a release's ranges
 */
KeNum
KeanonNumFromText(const KeanonValueType *vt, const char *text)
{
	if (vt->kind == KE_KIND_FLOAT)
		return ke_num_float(strtod(text, NULL));
	else if (vt->typid == NUMERICOID)
		return KeanonDatumToNum(vt, DirectFunctionCall3(numeric_in, CStringGetDatum(text),
														ObjectIdGetDatum(InvalidOid),
														Int32GetDatum(-1)));
	else
	{
		ke_int128	v = 0;
		bool		neg = *text == '-';

		for (const char *c = neg ? text + 1 : text; *c; c++)
			v = v * 10 + (*c - '0');
		return (KeNum) {.i = neg ? -v : v};
	}
}

/* A bound of a released partition as text, in the column's own units */
static Datum
release_text(const KeanonValueType *vt, KeNum x, char *buf, size_t len)
{
	if (vt->kind == KE_KIND_FLOAT)
		return CStringGetTextDatum(ke_num_format(vt->kind, x, buf, len));
	return CStringGetTextDatum(DatumGetCString(DirectFunctionCall1(numeric_out,
																   KeanonNumToNumeric(vt, x))));
}

/*
 * Publish a release: the least sum-error (k,e)-partitioning of the current
 * rows that keeps every partition of the previous release whole.  The
 * previous release's ranges are the partition table's (it holds the last
 * release in release mode); respecting it respects every earlier one.
 */
int64
KeanonRelease(Oid relid)
{
	Watch		w;
	const KeanonValueType *vt;
	KeanonRunArrays ra = {0};
	KeNum	   *olo,
			   *ohi,
			   *E,
			   *best,
			   *argmin;
	int64	   *frontier;
	int		   *argmin_last,
			   *end;
	bool	   *cut_after,
			   *cut_in;
	size_t		nold;
	KeanonPartList np = {0};
	PlacedRow  *rows;
	int64		nrows,
				release_no,
				want = 0;
	KeNum		unconstrained;
	char	   *sql;
	Datum	   *lo_text,
			   *hi_text;
	char		buf[64];
	bool		isnull;

	KeanonWatchLoad(relid, &w, false);
	if (!w.release_mode)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is watched in live mode", get_rel_name(relid)),
				 errdetail("A live watch publishes every change as it commits."),
				 errhint("Watch it with mode => 'release' to publish in releases.")));
	KeanonBeginWrite(&w, true);
	vt = &w.ki->vt;

	/* the current runs, and the previous release's partitions */
	if (w.ki->engine != NULL)
		ke_foreach_run(w.ki->engine, KeanonCollectRunArrays, &ra);
	if (ra.n == 0 || w.ki->engine == NULL || !ke_sum_error(w.ki->engine, &unconstrained))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no valid (k,e)-partitioning of %s exists: nothing to release",
						get_rel_name(relid)),
				 errdetail("It has %zu distinct sensitive values; k = %d.", ra.n, w.k)));
	sql = psprintf("SELECT lo, hi FROM %s ORDER BY hi", w.parts);
	KeanonSpiRun(w.relid, sql, 0, NULL, NULL, NULL, SPI_OK_SELECT);
	nold = (size_t) SPI_processed;
	olo = palloc(sizeof(KeNum) * Max(nold, 1));
	ohi = palloc(sizeof(KeNum) * Max(nold, 1));
	for (size_t i = 0; i < nold; i++)
	{
		olo[i] = KeanonDatumToNum(vt, SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		ohi[i] = KeanonDatumToNum(vt, SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
	}

	/* the constrained optimum */
	cut_after = palloc(sizeof(bool) * ra.n);
	cut_in = palloc(sizeof(bool) * ra.n);
	E = palloc(sizeof(KeNum) * ra.n);
	best = palloc(sizeof(KeNum) * ra.n);
	argmin = palloc(sizeof(KeNum) * ra.n);
	frontier = palloc(sizeof(int64) * ra.n);
	argmin_last = palloc(sizeof(int) * ra.n);
	end = palloc(sizeof(int) * ra.n);
	ke_release_cuts(vt->kind, ra.vals, ra.n, olo, ohi, nold, cut_after, cut_in);
	ke_constrained_dp(vt->kind, w.k, w.ki->engine ? ke_e(w.ki->engine) : ke_num_zero(vt->kind),
					  ra.vals, ra.counts, ra.n, cut_after, cut_in,
					  E, best, argmin, argmin_last, (int64_t *) frontier, end);
	if (end[ra.n - 1] == KE_END_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no release of %s can respect its previous release", get_rel_name(relid)),
				 errdetail("Every (k,e)-partitioning of the current rows would split a partition of the previous release."),
				 errhint("Wait for more rows, or unwatch and watch the table again to start a new series of releases.")));
	KeanonPartitionsFromFlags(vt->kind, ra.vals, ra.counts, ra.n, end, &np);

	/* every row, in (value, arrival) order, goes to its partition */
	sql = psprintf("SELECT ctid, %s FROM %s ORDER BY %s, keanon_arrival", w.s, w.rows, w.s);
	KeanonSpiRun(w.relid, sql, 0, NULL, NULL, NULL, SPI_OK_SELECT);
	rows = KeanonFetchedRows(vt, &nrows);
	for (int i = 0; i < np.n; i++)
		want += np.parts[i].n;
	if (want != nrows)
		elog(ERROR, "keanon: the release of %s holds %lld rows, the table %lld",
			 get_rel_name(relid), (long long) want, (long long) nrows);
	KeanonSpiRun(w.relid, psprintf("DELETE FROM %s", w.parts), 0, NULL, NULL, NULL, SPI_OK_DELETE);
	KeanonPlaceRows(&w, &np, rows, nrows, NULL);

	/* the release: its rows as they are now, and its record */
	KeanonSpiRun(w.relid, psprintf("DELETE FROM %s", w.release), 0, NULL, NULL, NULL, SPI_OK_DELETE);
	/* slots are a random order within each partition (see KeanonPlaceRows) */
	KeanonSpiRun(w.relid, psprintf("INSERT INTO %s SELECT %s, %s, keanon_pub, keanon_pid FROM %s "
								   "ORDER BY keanon_pid, keanon_slot",
								   w.release, KeanonNameList(w.qis, ""), w.s, w.rows),
			0, NULL, NULL, NULL, SPI_OK_INSERT);
	lo_text = palloc(sizeof(Datum) * np.n);
	hi_text = palloc(sizeof(Datum) * np.n);
	for (int i = 0; i < np.n; i++)
	{
		lo_text[i] = release_text(vt, np.parts[i].lo, buf, sizeof(buf));
		hi_text[i] = release_text(vt, np.parts[i].hi, buf, sizeof(buf));
	}
	{
		Oid			types[8] = {OIDOID, INT8OID, INT8OID, NUMERICOID, NUMERICOID,
		TEXTARRAYOID, TEXTARRAYOID, INT8OID};
		Datum		values[8];
		KeanonOwnerScope cat;

		values[0] = ObjectIdGetDatum(relid);
		values[1] = Int64GetDatum(nrows);
		values[2] = Int64GetDatum(np.n);
		values[3] = KeanonNumToNumeric(vt, E[ra.n - 1]);
		values[4] = KeanonNumToNumeric(vt, unconstrained);
		values[5] = PointerGetDatum(construct_array(lo_text, np.n, TEXTOID, -1, false, TYPALIGN_INT));
		values[6] = PointerGetDatum(construct_array(hi_text, np.n, TEXTOID, -1, false, TYPALIGN_INT));
		KeanonCatalogBegin(&cat);
		KeanonSpiRun(w.relid, "INSERT INTO keanon.releases (relid, release_no, rows_published, partitions, "
				"sum_error, unconstrained_sum_error, lo, hi) "
				"SELECT $1::oid::regclass, coalesce(max(release_no), 0) + 1, $2, $3, $4, $5, $6, $7 "
				"FROM keanon.releases WHERE relid = $1::oid::regclass RETURNING release_no",
				7, types, values, NULL, SPI_OK_INSERT_RETURNING);
		KeanonOwnerEnd(&cat);
		release_no = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	KeanonSaveWatch(&w);
	KeanonEndWrite(&w);
	return release_no;
}

/*
 * release.c
 *		Release mode: keanon.release publishes a release that reveals
 *		nothing by subtraction from any release before it.
 *
 * Between releases the watch tracks every change (the index stays the
 * live optimum) but its view does not move.  The first release is the
 * least sum-error (k,e)-partitioning of the rows: it reads the run list
 * from the index, runs the DP (ke_constrained_dp, with no cut masked),
 * places the rows as a live change would and copies them into the release
 * table in slot order (a random order within each partition).
 *
 * A later release keeps every row of the last one, as released: a row
 * deleted or changed since is retained with its released values, so no
 * partition ever shrinks.  Rows that arrived (inserted, or the new version
 * of a changed row) are placed by ke_release_plan: each partition keeps
 * the previous ones it covers whole and adds none of them or a
 * (k,e)-anonymous set; arrivals no partition can add safely yet are
 * withheld for a later release.  So whatever two releases a reader keeps,
 * the rows one adds to the other's partitions form, partition by
 * partition, an empty or (k,e)-anonymous set, and none leave.  The release
 * is written into the release table in a random order within each
 * partition, with values permuted afresh, and recorded in keanon.releases
 * (as keanon's own role) with the rows withheld and retained.  A
 * generalized watch's release then groups the rows it added among
 * themselves, and its released rows keep their groups (gen_release.c).
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
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "catalog/pg_class.h"
#include "access/htup_details.h"

#include "keanon_gen.h"
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

/* The release table's columns but keanon's, as a list, each prefixed */
static char *
release_columns(const Watch *w, const char *prefix)
{
	return KeanonNameList(KeanonUnionNames(KeanonUnionNames(w->keys, w->qis), list_make1(w->s)),
						  prefix);
}

/* The number of the last release of relid, 0 before the first */
static int64
last_release_no(Oid relid)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	bool		isnull;
	Datum		d;

	KeanonSpiRun(relid, "SELECT pg_catalog.max(release_no) FROM keanon.releases "
				 "WHERE relid OPERATOR(pg_catalog.=) $1::pg_catalog.oid::pg_catalog.regclass",
				 1, types, values, NULL, SPI_OK_SELECT);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? 0 : DatumGetInt64(d);
}

/* Whether keanon.releases keeps each release's arrival counter (0.2.0) */
static bool
releases_count_arrivals(void)
{
	Oid			releases = get_relname_relid("releases", get_namespace_oid("keanon", false));

	return OidIsValid(releases) && get_attnum(releases, "next_arrival") != InvalidAttrNumber;
}

/* Record a release in keanon.releases, as keanon's own role; its number */
static int64
record_release(Watch *w, int64 nrows, KeanonPartList *np, KeNum sum_error,
			   KeNum unconstrained, int64 withheld, int64 retained)
{
	const KeanonValueType *vt = &w->ki->vt;
	Oid			types[9] = {OIDOID, INT8OID, INT8OID, NUMERICOID, NUMERICOID,
	TEXTARRAYOID, TEXTARRAYOID, INT8OID, INT8OID};
	Datum		values[9];
	Datum	   *lo_text = palloc(sizeof(Datum) * Max(np->n, 1));
	Datum	   *hi_text = palloc(sizeof(Datum) * Max(np->n, 1));
	char		buf[64];
	KeanonOwnerScope cat;
	bool		isnull;
	int64		release_no;

	for (int i = 0; i < np->n; i++)
	{
		lo_text[i] = release_text(vt, np->parts[i].lo, buf, sizeof(buf));
		hi_text[i] = release_text(vt, np->parts[i].hi, buf, sizeof(buf));
	}
	values[0] = ObjectIdGetDatum(w->relid);
	values[1] = Int64GetDatum(nrows);
	values[2] = Int64GetDatum(np->n);
	values[3] = KeanonNumToNumeric(vt, sum_error);
	values[4] = KeanonNumToNumeric(vt, unconstrained);
	values[5] = PointerGetDatum(construct_array(lo_text, np->n, TEXTOID, -1, false, TYPALIGN_INT));
	values[6] = PointerGetDatum(construct_array(hi_text, np->n, TEXTOID, -1, false, TYPALIGN_INT));
	values[7] = Int64GetDatum(withheld);
	values[8] = Int64GetDatum(retained);
	KeanonCatalogBegin(&cat);
	/* with the arrival counter (the writers' lock held, none moves it) where it is kept */
	KeanonSpiRun(w->relid, psprintf("INSERT INTO keanon.releases (relid, release_no, rows_published, partitions, "
									"sum_error, unconstrained_sum_error, lo, hi, rows_withheld, rows_retained%s) "
									"SELECT $1::oid::regclass, coalesce(max(release_no), 0) + 1, $2, $3, $4, $5, $6, $7, $8, $9%s "
									"FROM keanon.releases WHERE relid = $1::oid::regclass RETURNING release_no",
									releases_count_arrivals() ? ", next_arrival" : "",
									releases_count_arrivals() ?
									", (SELECT w.next_arrival FROM keanon.watches w "
									"WHERE w.relid OPERATOR(pg_catalog.=) $1::oid::regclass)" : ""),
				 9, types, values, NULL, SPI_OK_INSERT_RETURNING);
	KeanonOwnerEnd(&cat);
	release_no = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	return release_no;
}

static int64 first_release(Watch *w, KeNum unconstrained, KeanonRunArrays *ra);
static int64 later_release(Watch *w, KeNum unconstrained, int64 release_no);

/*
 * Publish a release (see the file's comment): the first is the least
 * sum-error (k,e)-partitioning of the rows, a later one keeps the last
 * whole and adds to it only what reveals nothing by subtraction.
 */
int64
KeanonRelease(Oid relid)
{
	Watch		w;
	KeanonRunArrays ra = {0};
	KeNum		unconstrained;
	int64		last;
	int64		release_no;

	KeanonWatchLoad(relid, &w, false);
	if (!w.release_mode)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is watched in live mode", get_rel_name(relid)),
				 errdetail("A live watch publishes every change as it commits."),
				 errhint("Watch it with mode => 'release' to publish in releases.")));
	KeanonBeginWrite(&w, true);
	if (w.ki->engine != NULL)
		ke_foreach_run(w.ki->engine, KeanonCollectRunArrays, &ra);
	if (ra.n == 0 || w.ki->engine == NULL || !ke_sum_error(w.ki->engine, &unconstrained))
		unconstrained = ke_num_zero(w.ki->vt.kind);
	last = last_release_no(relid);
	if (last == 0)
		release_no = first_release(&w, unconstrained, &ra);
	else
		release_no = later_release(&w, unconstrained, last + 1);
	KeanonSaveWatch(&w);
	KeanonEndWrite(&w);
	return release_no;
}

/* The first release: the least sum-error (k,e)-partitioning of the rows */
static int64
first_release(Watch *wp, KeNum unconstrained, KeanonRunArrays *rap)
{
	Watch		w = *wp;
	Oid			relid = w.relid;
	KeanonRunArrays ra = *rap;
	const KeanonValueType *vt = &w.ki->vt;
	KeNum	   *E,
			   *best,
			   *argmin;
	int64	   *frontier;
	int		   *argmin_last,
			   *end;
	KeanonPartList np = {0};
	PlacedRow  *rows;
	int64		nrows,
				want = 0;
	char	   *sql;
	int64		release_no;

	if (ra.n == 0 || w.ki->engine == NULL || !ke_sum_error(w.ki->engine, &unconstrained))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no valid (k,e)-partitioning of %s exists: nothing to release",
						get_rel_name(relid)),
				 errdetail("It has %zu distinct sensitive values; k = %d.", ra.n, w.k)));

	/* the optimum (no previous release to keep whole) */
	E = palloc(sizeof(KeNum) * ra.n);
	best = palloc(sizeof(KeNum) * ra.n);
	argmin = palloc(sizeof(KeNum) * ra.n);
	frontier = palloc(sizeof(int64) * ra.n);
	argmin_last = palloc(sizeof(int) * ra.n);
	end = palloc(sizeof(int) * ra.n);
	ke_constrained_dp(vt->kind, w.k, ke_e(w.ki->engine), ra.vals, ra.counts, ra.n, NULL, NULL,
					  E, best, argmin, argmin_last, (int64_t *) frontier, end);
	if (end[ra.n - 1] == KE_END_NONE)
		elog(ERROR, "keanon: the engine of %s has a sum-error but the DP no partitioning",
			 get_rel_name(relid));
	KeanonPartitionsFromFlags(vt->kind, ra.vals, ra.counts, ra.n, end, &np);

	/* every row, in (value, arrival) order, goes to its partition */
	sql = psprintf("SELECT ctid, %s FROM %s ORDER BY %s, keanon_arrival", w.s, w.rows, w.s);
	KeanonSpiRun(w.relid, sql, 0, NULL, NULL, NULL, SPI_OK_SELECT);
	rows = KeanonFetchedRows(w.relid, vt, &nrows);
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
	KeanonSpiRun(w.relid, psprintf("INSERT INTO %s (%s, keanon_pub, keanon_pid, keanon_since) "
								   "SELECT %s, keanon_pub, keanon_pid, 1 FROM %s "
								   "ORDER BY keanon_pid, keanon_slot",
								   w.release, release_columns(&w, ""), release_columns(&w, ""), w.rows),
			0, NULL, NULL, NULL, SPI_OK_INSERT);
	if (w.generalize > 0)
		(void) KeanonGeneralizeRelease(&w);
	release_no = record_release(&w, nrows, &np, E[ra.n - 1], unconstrained, 0, 0);
	*wp = w;
	return release_no;
}

/* A row of a later release: of the last release, or an arrival */
typedef struct ReleaseRow
{
	bool		arrival;		/* from the rows table; else the last release */
	bool		relabel;		/* a released row shown with its new version's columns */
	ItemPointerData tid;
	ItemPointerData new_tid;	/* with relabel: that version, in the rows table */
	Datum		value;
	KeNum		num;
	int64		item;			/* its item in the plan */
	int64		part;			/* its partition in the plan, or -1: withheld */
} ReleaseRow;

/* The rows of the last query (ctid, value), appended to rows[*n ...] */
static ReleaseRow *
fetch_release_rows(Oid relid, const KeanonValueType *vt, bool arrival, ReleaseRow *rows,
				   int64 *n, int64 **pids)
{
	int16		typlen;
	bool		typbyval;
	int64		got = (int64) SPI_processed;
	TupleDesc	desc = SPI_tuptable->tupdesc;

	get_typlenbyval(vt->typid, &typlen, &typbyval);
	rows = rows == NULL ?
		MemoryContextAllocHuge(CurrentMemoryContext, sizeof(ReleaseRow) * Max(got, 1)) :
		repalloc_huge(rows, sizeof(ReleaseRow) * (*n + Max(got, 1)));
	if (pids != NULL)
		*pids = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * Max(got, 1));
	for (int64 i = 0; i < got; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		ReleaseRow *r = &rows[*n + i];

		r->arrival = arrival;
		r->tid = *(ItemPointer) DatumGetPointer(KeanonSpiColumn(relid, t, desc, 1, TIDOID));
		r->relabel = false;
		ItemPointerSetInvalid(&r->new_tid);
		r->value = datumCopy(KeanonSpiColumn(relid, t, desc, 2, vt->typid), typbyval, typlen);
		r->num = KeanonDatumToNum(vt, r->value);
		r->item = -1;
		r->part = -1;
		if (pids != NULL)
			(*pids)[i] = DatumGetInt64(KeanonSpiColumn(relid, t, desc, 3, INT8OID));
	}
	*n += got;
	SPI_freetuptable(SPI_tuptable);
	return rows;
}

/* Add arrival value x (count c) to an item's arrivals */
static void
item_add_arrivals(KeReleaseItem *it, KeKind kind, KeNum x, int64 c)
{
	if (it->rows == 0 || ke_num_cmp(kind, x, it->amin) < 0)
		it->amin = x;
	if (it->rows == 0 || ke_num_cmp(kind, x, it->amax) > 0)
		it->amax = x;
	it->rows += c;
	it->distinct++;
}

/*
 * The plan's items, in value order: the last release's partitions (its rows
 * rows[0 .. nold), ordered by partition, pids[] theirs) as blocks, with the
 * arrivals (rows[nold .. n), by value) inside their ranges, and the other
 * arrivals as runs of one value.  Sets each row's item; returns the count.
 */
static int64
plan_items(KeKind kind, ReleaseRow *rows, int64 nold, int64 n, const int64 *pids,
		   KeReleaseItem *items)
{
	int64	   *order;
	int64		nblocks = 0,
				nitems = 0,
				b = 0;
	int64	   *block_item;
	KeReleaseItem *blocks = palloc(sizeof(KeReleaseItem) * Max(nold, 1));
	int64	   *first = palloc(sizeof(int64) * Max(nold, 1));

	/* blocks from the last release's partitions */
	for (int64 i = 0; i < nold; i++)
	{
		if (i == 0 || pids[i] != pids[i - 1])
		{
			memset(&blocks[nblocks], 0, sizeof(KeReleaseItem));
			blocks[nblocks].block = true;
			blocks[nblocks].lo = blocks[nblocks].hi = rows[i].num;
			first[nblocks++] = i;
		}
		blocks[nblocks - 1].kept++;
		if (ke_num_cmp(kind, rows[i].num, blocks[nblocks - 1].lo) < 0)
			blocks[nblocks - 1].lo = rows[i].num;
		if (ke_num_cmp(kind, rows[i].num, blocks[nblocks - 1].hi) > 0)
			blocks[nblocks - 1].hi = rows[i].num;
	}
	/* in value order: by least value, then greatest (a split run's two) */
	order = palloc(sizeof(int64) * Max(nblocks, 1));
	for (int64 i = 0; i < nblocks; i++)
	{
		int64		j = i;

		while (j > 0 && (ke_num_cmp(kind, blocks[order[j - 1]].lo, blocks[i].lo) > 0 ||
						 (ke_num_eq(kind, blocks[order[j - 1]].lo, blocks[i].lo) &&
						  ke_num_cmp(kind, blocks[order[j - 1]].hi, blocks[i].hi) > 0)))
		{
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	block_item = palloc(sizeof(int64) * Max(nblocks, 1));
	for (int64 i = 0; i < nblocks; i++)
		block_item[i] = -1;

	/* arrivals, by value, merged with the blocks */
	for (int64 i = nold; i < n;)
	{
		int64		j = i;
		KeNum		v = rows[i].num;
		int64		target;

		while (j < n && ke_num_eq(kind, rows[j].num, v))
			j++;
		while (b < nblocks && ke_num_cmp(kind, blocks[order[b]].hi, v) < 0)
		{
			if (block_item[order[b]] < 0)
			{
				block_item[order[b]] = nitems;
				items[nitems++] = blocks[order[b]];
			}
			b++;
		}
		if (b < nblocks && ke_num_cmp(kind, blocks[order[b]].lo, v) <= 0)
		{
			if (block_item[order[b]] < 0)
			{
				block_item[order[b]] = nitems;
				items[nitems++] = blocks[order[b]];
			}
			target = block_item[order[b]];
		}
		else
		{
			memset(&items[nitems], 0, sizeof(KeReleaseItem));
			items[nitems].lo = items[nitems].hi = v;
			target = nitems++;
		}
		item_add_arrivals(&items[target], kind, v, j - i);
		for (; i < j; i++)
			rows[i].item = target;
	}
	for (; b < nblocks; b++)
		if (block_item[order[b]] < 0)
		{
			block_item[order[b]] = nitems;
			items[nitems++] = blocks[order[b]];
		}
	/* the last release's rows go with their blocks */
	for (int64 x = 0; x < nblocks; x++)
		for (int64 i = first[x]; i < nold && pids[i] == pids[first[x]]; i++)
			rows[i].item = block_item[x];
	return nitems;
}

/* Shuffle a[0 .. n) uniformly */
static void
shuffle_int64(int64 *a, int64 n)
{
	for (int64 i = n - 1; i > 0; i--)
	{
		int64		j = (int64) KeanonRandomBelow((uint64) i + 1);
		int64		t = a[i];

		a[i] = a[j];
		a[j] = t;
	}
}

/* What a later release gathers, plans and writes */
typedef struct LaterRelease
{
	ReleaseRow *rows;			/* the last release's, then the arrivals */
	int64		n;
	int64		nold;
	int64	   *pids;			/* the last release's partitions */
	int64		retained;
	int64		withheld;
	int64		nparts;
	/*
	 * the release's rows in writing order: source (0 an arrival, 1 a
	 * released row kept, 2 one relabelled), its tid in the rows table (0,
	 * 2) and in the last release (1, 2), pid, shown value
	 */
	int64		nout;
	Datum	   *src;
	Datum	   *xt;
	Datum	   *rt;
	Datum	   *pid;
	Datum	   *pub;
	KeanonPartList np;
	KeNum		sum_error;
} LaterRelease;

/* the tid written where a row has none (it matches no row) */
static ItemPointerData no_tid = {{0, 0}, InvalidOffsetNumber};

/*
 * Whether the rows table's row x is a later version of released row r
 * with the same sensitive value (false for a generalized watch: see
 * relabel_pairs): the same key and value, and x numbered at most the
 * arrival counter (the last number given) of the release r joined in.
 * A row keeps its number while only its quasi-identifiers change, and
 * takes a new one when its key or value changes or it is inserted, so x
 * was then the row r was released from: never a row inserted since under
 * a released key (a departed person's retained row is not anyone
 * else's).  Releases made before the counter was recorded relabel
 * nothing, nor does a database whose keanon.releases has no counter yet
 * (not updated to 0.2.0).
 */
static char *
relabel_match(const Watch *w)
{
	if (w->generalize > 0 || !releases_count_arrivals())
		return "false";
	return psprintf("%s AND pg_catalog.record_image_eq(ROW(r.%s), ROW(x.%s)) "
					"AND x.keanon_arrival OPERATOR(pg_catalog.<=) "
					"(SELECT kr.next_arrival FROM keanon.releases kr "
					"WHERE kr.relid OPERATOR(pg_catalog.=) %u::pg_catalog.oid::pg_catalog.regclass "
					"AND kr.release_no OPERATOR(pg_catalog.=) r.keanon_since)",
					KeanonKeysEqual(w, "r.", "x."), w->s, w->s, w->relid);
}

/*
 * The relabels, as a query of (xt, rt): each row whose last release
 * does not hold it as it is now (a new version) but holds a row of its key
 * with the same sensitive value, rt (one, the first by position, where a
 * series kept several).  The new version's value is one its partition
 * already shows, so the released row takes the new version's columns in
 * place, rather than staying as it was with the new version arriving
 * among newcomers: a reader who links the two versions (docs/modes.md)
 * finds the same partition twice, not two candidate sets to intersect.
 * A generalized watch relabels nothing: a released row keeps its group,
 * whose published ranges cover its old quasi-identifiers only.
 */
static char *
relabel_pairs(const Watch *w)
{
	return psprintf("SELECT DISTINCT ON (x.ctid) x.ctid AS xt, r.ctid AS rt FROM %s x JOIN %s r "
					"ON %s WHERE NOT EXISTS (SELECT 1 FROM %s e WHERE %s AND "
					"pg_catalog.record_image_eq(ROW(%s), ROW(%s))) ORDER BY x.ctid, r.ctid",
					w->rows, w->release, relabel_match(w), w->release,
					KeanonKeysEqual(w, "e.", "x."), release_columns(w, "e."),
					release_columns(w, "x."));
}

/* A row of the last release, found by its tid */
typedef struct ReleaseTid
{
	ItemPointerData tid;
	int64		row;
} ReleaseTid;

/*
 * Mark the last release's rows (read, with their types checked) that a new
 * version relabels; returns how many
 */
static int64
mark_relabels(Watch *w, LaterRelease *lr)
{
	HASHCTL		ctl;
	HTAB	   *by_tid;
	int64		marked = 0;

	if (w->generalize > 0 || lr->nold == 0)
		return 0;
	KeanonSpiRun(w->relid, relabel_pairs(w), 0, NULL, NULL, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return 0;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(ItemPointerData);
	ctl.entrysize = sizeof(ReleaseTid);
	ctl.hcxt = CurrentMemoryContext;
	by_tid = hash_create("keanon release rows", (long) lr->nold, &ctl,
						 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	for (int64 i = 0; i < lr->nold; i++)
		((ReleaseTid *) hash_search(by_tid, &lr->rows[i].tid, HASH_ENTER, NULL))->row = i;
	for (uint64 j = 0; j < SPI_processed; j++)
	{
		HeapTuple	t = SPI_tuptable->vals[j];
		ItemPointer xt = (ItemPointer) DatumGetPointer(KeanonSpiColumn(w->relid, t, SPI_tuptable->tupdesc,
																		1, TIDOID));
		ItemPointer rt = (ItemPointer) DatumGetPointer(KeanonSpiColumn(w->relid, t, SPI_tuptable->tupdesc,
																		2, TIDOID));
		ReleaseTid *e = hash_search(by_tid, rt, HASH_FIND, NULL);

		/* a key twice in the rows table (an owner's doing) would relabel one row twice */
		if (e == NULL || lr->rows[e->row].relabel)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("an internal table of the watch of %s holds what keanon never wrote",
							get_rel_name(w->relid)),
					 errdetail("A released row has two new versions in the rows table."),
					 errhint("Undo the change to the internal table, or call keanon.unwatch and watch the table again.")));
		lr->rows[e->row].relabel = true;
		lr->rows[e->row].new_tid = *xt;
		marked++;
	}
	hash_destroy(by_tid);
	SPI_freetuptable(SPI_tuptable);
	return marked;
}

/* The last release's rows, the arrivals, and how many rows are retained */
static void
gather_release_rows(Watch *w, LaterRelease *lr)
{
	const KeanonValueType *vt = &w->ki->vt;
	char	   *keys_rx = KeanonKeysEqual(w, "r.", "x.");
	char	   *cols_r = release_columns(w, "r.");
	char	   *cols_x = release_columns(w, "x.");
	bool		isnull;
	int64		relabelled;

	KeanonSpiRun(w->relid, psprintf("SELECT ctid, %s, keanon_pid FROM %s ORDER BY keanon_pid, %s",
									w->s, w->release, w->s),
				 0, NULL, NULL, NULL, SPI_OK_SELECT);
	lr->rows = fetch_release_rows(w->relid, vt, false, NULL, &lr->n, &lr->pids);
	lr->nold = lr->n;
	relabelled = mark_relabels(w, lr);
	/*
	 * arrivals: rows the last release does not hold as they are now, nor
	 * relabels (a new version is one exactly where a released row of its
	 * key shows its value)
	 */
	KeanonSpiRun(w->relid, psprintf("SELECT x.ctid, x.%s FROM %s x WHERE NOT EXISTS "
									"(SELECT 1 FROM %s r WHERE %s AND "
									"pg_catalog.record_image_eq(ROW(%s), ROW(%s))) "
									"AND NOT EXISTS (SELECT 1 FROM %s r WHERE %s) ORDER BY x.%s",
									w->s, w->rows, w->release, keys_rx, cols_r, cols_x,
									w->release, relabel_match(w), w->s),
				 0, NULL, NULL, NULL, SPI_OK_SELECT);
	lr->rows = fetch_release_rows(w->relid, vt, true, lr->rows, &lr->n, NULL);
	/* retained: released rows the table no longer holds as they were */
	KeanonSpiRun(w->relid, psprintf("SELECT pg_catalog.count(*) FROM %s r WHERE NOT EXISTS "
									"(SELECT 1 FROM %s x WHERE %s AND "
									"pg_catalog.record_image_eq(ROW(%s), ROW(%s)))",
									w->release, w->rows, keys_rx, cols_x, cols_r),
				 0, NULL, NULL, NULL, SPI_OK_SELECT);
	lr->retained = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											   &isnull)) - relabelled;
}

/* Plan the release: each row's partition, or -1 for an arrival withheld */
static void
plan_release(Watch *w, LaterRelease *lr)
{
	KeKind		kind = w->ki->vt.kind;
	KeReleaseItem *items;
	int64		nitems,
				admitted;
	int64	   *part;
	bool	   *released;
	KeNum		plan_error;

	items = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(KeReleaseItem) * Max(lr->n, 1));
	nitems = plan_items(kind, lr->rows, lr->nold, lr->n, lr->pids, items);
	part = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * Max(nitems, 1));
	released = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(bool) * Max(nitems, 1));
	lr->nparts = ke_release_plan(kind, w->k, ke_e(w->ki->engine), items, (size_t) nitems,
								 part, released, &admitted, &plan_error);
	if (lr->nparts < 0)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	if (lr->nparts == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("nothing of %s can be released", get_rel_name(w->relid))));
	lr->withheld = 0;
	for (int64 i = 0; i < lr->n; i++)
	{
		ReleaseRow *r = &lr->rows[i];

		if (!r->arrival || released[r->item])
			r->part = part[r->item];
		else
			lr->withheld++;
	}
}

/* The rows of each partition, by partition: indexes into lr->rows */
static int64 *
rows_by_partition(LaterRelease *lr, int64 **part_start)
{
	int64	   *start = palloc0(sizeof(int64) * (lr->nparts + 1));
	int64	   *cursor = palloc(sizeof(int64) * lr->nparts);
	int64	   *by_part = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * Max(lr->n, 1));

	for (int64 i = 0; i < lr->n; i++)
		if (lr->rows[i].part >= 0)
			start[lr->rows[i].part + 1]++;
	for (int64 p = 0; p < lr->nparts; p++)
		start[p + 1] += start[p];
	memcpy(cursor, start, sizeof(int64) * lr->nparts);
	for (int64 i = 0; i < lr->n; i++)
		if (lr->rows[i].part >= 0)
			by_part[cursor[lr->rows[i].part]++] = i;
	pfree(cursor);
	*part_start = start;
	return by_part;
}

/*
 * Arrange the release: each partition's rows in a random order (their
 * slots), showing its values in an independent random permutation, under
 * a new partition id
 */
static void
arrange_release(Watch *w, LaterRelease *lr)
{
	KeKind		kind = w->ki->vt.kind;
	int64	   *part_start;
	int64	   *by_part = rows_by_partition(lr, &part_start);

	lr->nout = part_start[lr->nparts];
	lr->src = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(lr->nout, 1));
	lr->xt = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(lr->nout, 1));
	lr->rt = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(lr->nout, 1));
	lr->pid = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(lr->nout, 1));
	lr->pub = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(lr->nout, 1));
	lr->sum_error = ke_num_zero(kind);
	for (int64 p = 0; p < lr->nparts; p++)
	{
		int64		lo = part_start[p],
					cnt = part_start[p + 1] - part_start[p];
		int64	   *shown = palloc(sizeof(int64) * Max(cnt, 1));
		int64		pid = ++w->next_pid;
		KePartition kp;

		memset(&kp, 0, sizeof(kp));
		shuffle_int64(&by_part[lo], cnt);
		memcpy(shown, &by_part[lo], sizeof(int64) * cnt);
		shuffle_int64(shown, cnt);
		for (int64 x = 0; x < cnt; x++)
		{
			ReleaseRow *r = &lr->rows[by_part[lo + x]];

			lr->src[lo + x] = Int32GetDatum(r->arrival ? 0 : r->relabel ? 2 : 1);
			lr->xt[lo + x] = PointerGetDatum(r->arrival ? &r->tid : r->relabel ? &r->new_tid : &no_tid);
			lr->rt[lo + x] = PointerGetDatum(r->arrival ? &no_tid : &r->tid);
			lr->pid[lo + x] = Int64GetDatum(pid);
			lr->pub[lo + x] = lr->rows[shown[x]].value;
			if (x == 0 || ke_num_cmp(kind, r->num, kp.lo) < 0)
				kp.lo = r->num;
			if (x == 0 || ke_num_cmp(kind, r->num, kp.hi) > 0)
				kp.hi = r->num;
		}
		kp.n = cnt;
		kp.error = ke_num_sub(kind, kp.hi, kp.lo);
		lr->sum_error = ke_num_add(kind, lr->sum_error, kp.error);
		KeanonCollectPartition(&kp, &lr->np);
		pfree(shown);
	}
}

/*
 * Write the release in its order (rows from the rows table or the last
 * release, by tid), then remove the last release's rows
 */
static void
write_release(Watch *w, LaterRelease *lr, int64 release_no)
{
	const KeanonValueType *vt = &w->ki->vt;
	Oid			types[6] = {INT4ARRAYOID, TIDARRAYOID, TIDARRAYOID, INT8ARRAYOID,
	get_array_type(vt->typid), INT8OID};
	Datum		values[6];
	List	   *cols = KeanonUnionNames(KeanonUnionNames(w->keys, w->qis), list_make1(w->s));
	StringInfoData pick;
	ListCell   *lc;
	Datum	   *old_tids = MemoryContextAllocHuge(CurrentMemoryContext,
												  sizeof(Datum) * Max(lr->nold, 1));
	int16		typlen;
	bool		typbyval;
	char		typalign;

	get_typlenbyvalalign(vt->typid, &typlen, &typbyval, &typalign);
	initStringInfo(&pick);
	foreach(lc, cols)
		appendStringInfo(&pick, "CASE WHEN u.src OPERATOR(pg_catalog.<>) 1 THEN x.%s ELSE r.%s END, ",
						 (char *) lfirst(lc), (char *) lfirst(lc));
	values[0] = PointerGetDatum(construct_array(lr->src, (int) lr->nout, INT4OID, 4, true, TYPALIGN_INT));
	values[1] = PointerGetDatum(construct_array(lr->xt, (int) lr->nout, TIDOID, sizeof(ItemPointerData),
												false, TYPALIGN_SHORT));
	values[2] = PointerGetDatum(construct_array(lr->rt, (int) lr->nout, TIDOID, sizeof(ItemPointerData),
												false, TYPALIGN_SHORT));
	values[3] = PointerGetDatum(construct_array(lr->pid, (int) lr->nout, INT8OID, 8, FLOAT8PASSBYVAL,
												TYPALIGN_DOUBLE));
	values[4] = PointerGetDatum(construct_array(lr->pub, (int) lr->nout, vt->typid, typlen, typbyval,
												typalign));
	values[5] = Int64GetDatum(release_no);

	/*
	 * an arrival's columns come from the rows table, a kept row's from the
	 * last release, a relabelled one's from its new version with its
	 * release number and partition kept; a generalized release: a released
	 * row keeps its group, an arrival has none yet
	 */
	KeanonSpiRun(w->relid,
				 psprintf("INSERT INTO %s (%s, keanon_pub, keanon_pid, keanon_since%s) "
						  "SELECT %su.pub, u.pid, CASE WHEN u.src OPERATOR(pg_catalog.=) 0 THEN $6 ELSE r.keanon_since END%s "
						  "FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3), "
						  "pg_catalog.unnest($4), pg_catalog.unnest($5)) WITH ORDINALITY u(src, xt, rt, pid, pub, o) "
						  "LEFT JOIN %s x ON u.src OPERATOR(pg_catalog.<>) 1 AND x.ctid OPERATOR(pg_catalog.=) u.xt "
						  "LEFT JOIN %s r ON u.src OPERATOR(pg_catalog.<>) 0 AND r.ctid OPERATOR(pg_catalog.=) u.rt ORDER BY u.o",
						  w->release, release_columns(w, ""), w->generalize > 0 ? ", keanon_group" : "",
						  pick.data, w->generalize > 0 ? ", CASE WHEN u.src OPERATOR(pg_catalog.=) 1 THEN r.keanon_group END" : "",
						  w->rows, w->release),
				 6, types, values, NULL, SPI_OK_INSERT);
	if ((int64) SPI_processed != lr->nout)
		elog(ERROR, "keanon: the release of %s wrote %lld rows of %lld",
			 get_rel_name(w->relid), (long long) SPI_processed, (long long) lr->nout);
	for (int64 i = 0; i < lr->nold; i++)
		old_tids[i] = PointerGetDatum(&lr->rows[i].tid);
	values[0] = PointerGetDatum(construct_array(old_tids, (int) lr->nold, TIDOID,
												sizeof(ItemPointerData), false, TYPALIGN_SHORT));
	types[0] = TIDARRAYOID;
	KeanonSpiRun(w->relid, psprintf("DELETE FROM %s WHERE ctid = ANY ($1)", w->release),
				 1, types, values, NULL, SPI_OK_DELETE);
	if ((int64) SPI_processed != lr->nold)
		elog(ERROR, "keanon: the release of %s removed %lld rows of %lld",
			 get_rel_name(w->relid), (long long) SPI_processed, (long long) lr->nold);
}

/* The partitions table from the release, as the aggregates and report read it */
static void
rebuild_release_parts(Watch *w)
{
	KeanonSpiRun(w->relid, psprintf("DELETE FROM %s", w->parts), 0, NULL, NULL, NULL, SPI_OK_DELETE);
	KeanonSpiRun(w->relid,
				 psprintf("INSERT INTO %s (keanon_pid, lo, lo_last_only, hi, hi_split, n, vals, cnts, lo_slot) "
						  "SELECT keanon_pid, pg_catalog.min(v), false, pg_catalog.max(v), false, "
						  "pg_catalog.sum(c)::pg_catalog.int8, pg_catalog.array_agg(v ORDER BY v), "
						  "pg_catalog.array_agg(c ORDER BY v), NULL "
						  "FROM (SELECT keanon_pid, %s AS v, pg_catalog.count(*) AS c FROM %s GROUP BY 1, 2) g "
						  "GROUP BY keanon_pid", w->parts, w->s, w->release),
				 0, NULL, NULL, NULL, SPI_OK_INSERT);
}

/*
 * A later release (see the file's comment): the last release's rows kept,
 * arrivals placed by ke_release_plan or withheld
 */
static int64
later_release(Watch *w, KeNum unconstrained, int64 release_no)
{
	LaterRelease lr;

	memset(&lr, 0, sizeof(lr));
	gather_release_rows(w, &lr);
	plan_release(w, &lr);
	arrange_release(w, &lr);
	write_release(w, &lr, release_no);
	if (w->generalize > 0)
		(void) KeanonGeneralizeRelease(w);
	rebuild_release_parts(w);
	return record_release(w, lr.nout, &lr.np, lr.sum_error, unconstrained, lr.withheld,
						  lr.retained);
}

/*
 * maintain.c
 *		Keeping a watched table's partitioning and published view current.
 *
 * One call per statement (see watch.c for the trigger entry points), run
 * as the watched table's owner, inside the user's transaction:
 *
 *	1. take the keanon lock of the watch's index (serializes writers) and
 *	   bump the watch's generation; under REPEATABLE READ or SERIALIZABLE,
 *	   a writer that committed after this transaction's snapshot means a
 *	   serialization failure, since this transaction cannot see its rows;
 *	2. mirror the statement's transition tables into the internal rows
 *	   table (deleted rows out, inserted rows in with a new arrival number,
 *	   quasi-identifier updates in place) and collect the value changes;
 *	3. apply them to the engine as one batch;
 *	4. republish only what changed.  A single row joining or leaving a
 *	   partition whose bounds stay put costs O(1) row writes: the inside-out
 *	   shuffle places the newcomer at a uniformly random slot, and a
 *	   departure hands its published value to the row that showed the
 *	   departing true value.  Anything else reassigns the rows of the
 *	   partitions the engine reports changed, by (value, arrival) order, and
 *	   draws a fresh uniform permutation of each with pg_strong_random.
 *
 * Rows are only ever touched through the internal tables, which are MVCC:
 * a rollback undoes them, and the index repairs itself from the rows table
 * (see am_index.c), so the two always agree after an abort or a crash.
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

#include "keanon_watch.h"

/* a row of the rows table being placed */
typedef struct PlacedRow
{
	ItemPointerData tid;
	Datum		value;
	KeNum		num;
	int64		fresh;			/* index among the fresh rows, or -1 */
	int64		pid;			/* its partition before, or 0 */
	int32		slot;			/* its slot and published value before */
	Datum		pub;
} PlacedRow;

/* The one row a statement deleted, where it was (see OldParts) */
typedef struct GoneRow
{
	bool		valid;
	int64		pid;
	int32		slot;
	Datum		pub;
	KeNum		num;
} GoneRow;

/*
 * The old partitions a reassignment replaces, for carrying each over to the
 * new partition that shares most of its rows.  A row of one that left by
 * this statement (one deleted row, known from the trigger) is counted too.
 */
typedef struct OldParts
{
	int			n;
	int64	   *pid;			/* sorted */
	int64	   *size;			/* rows before the statement */
	bool	   *taken;
	int64	   *first;			/* the range of its rows among those placed */
	int64	   *last;
	GoneRow		gone;			/* the departed row, if it was in one */
} OldParts;

/*
 * The rows a statement adds (an INSERT's, or an UPDATE's that changed a key
 * or a value, or a new watch's existing rows).  They are written to the
 * rows table once, already placed: the engine sees their values first, and
 * republication decides their partitions, slots and published values in
 * memory.  Row i (from 0) is the (i+1)-th of the source query by
 * keanon_ordinal and arrives as arrival0 + i + 1.
 */
typedef struct FreshRows
{
	int64		n;
	Datum	   *value;
	KeNum	   *num;
	int64		arrival0;
	bool		placed;			/* pid, slot and pub hold every row's place */
	Datum	   *pid;
	Datum	   *slot;
	Datum	   *pub;
} FreshRows;

/* A comma-separated list of quoted names, optionally prefixed */
static char *
name_list(List *names, const char *prefix)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, names)
	{
		if (buf.len > 0)
			appendStringInfoString(&buf, ", ");
		appendStringInfo(&buf, "%s%s", prefix, (char *) lfirst(lc));
	}
	return buf.data;
}

/* The names of a and then those of b not already in a */
static List *
union_names(List *a, List *b)
{
	List	   *out = list_copy(a);
	ListCell   *lb;

	foreach(lb, b)
	{
		ListCell   *la;
		bool		found = false;

		foreach(la, out)
			if (strcmp((char *) lfirst(la), (char *) lfirst(lb)) == 0)
				found = true;
		if (!found)
			out = lappend(out, lfirst(lb));
	}
	return out;
}

/* An engine number as a Datum of the watched column's type */
Datum
KeanonNumToDatum(const KeanonValueType *vt, KeNum x)
{
	switch (vt->typid)
	{
		case INT2OID:
			return Int16GetDatum((int16) x.i);
		case INT4OID:
			return Int32GetDatum((int32) x.i);
		case INT8OID:
			return Int64GetDatum((int64) x.i);
		case FLOAT4OID:
			return Float4GetDatum((float4) x.f);
		case FLOAT8OID:
			return Float8GetDatum(x.f);
		default:
			return KeanonNumToNumeric(vt, x);
	}
}

/* A uniformly random integer in [0, n) from a strong source */
static uint64
random_below(uint64 n)
{
	/* drawn from a strong source in blocks: one call per draw costs more than a shuffle */
	static uint64 pool[256];
	static int	left = 0;
	uint64		limit = PG_UINT64_MAX - PG_UINT64_MAX % n;
	uint64		r;

	do
	{
		if (left == 0)
		{
			if (!pg_strong_random(pool, sizeof(pool)))
				ereport(ERROR,
						(errcode(ERRCODE_INTERNAL_ERROR),
						 errmsg("could not generate a random number")));
			left = lengthof(pool);
		}
		r = pool[--left];
		pool[left] = 0;
	} while (r >= limit);
	return r % n;
}

/* Collect engine partitions into a KeanonPartList (a KePartitionFn) */
bool
KeanonCollectPartition(const KePartition *p, void *arg)
{
	KeanonPartList *pl = arg;

	if (pl->n == pl->cap)
	{
		pl->cap = pl->cap * 2 + 16;
		pl->parts = pl->parts ? repalloc_huge(pl->parts, sizeof(KePartition) * pl->cap)
			: palloc(sizeof(KePartition) * pl->cap);
	}
	pl->parts[pl->n++] = *p;
	return true;
}

/* The rows of the last query (ctid, value), with their engine numbers */
static PlacedRow *
fetched_rows(const KeanonValueType *vt, int64 *nrows)
{
	PlacedRow  *rows;
	int16		typlen;
	bool		typbyval;

	*nrows = (int64) SPI_processed;
	rows = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(PlacedRow) * Max(*nrows, 1));
	get_typlenbyval(vt->typid, &typlen, &typbyval);
	for (int64 i = 0; i < *nrows; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		bool		isnull;

		rows[i].tid = *(ItemPointer) DatumGetPointer(SPI_getbinval(t, SPI_tuptable->tupdesc, 1, &isnull));
		rows[i].value = datumCopy(SPI_getbinval(t, SPI_tuptable->tupdesc, 2, &isnull),
								  typbyval, typlen);
		rows[i].num = KeanonDatumToNum(vt, rows[i].value);
		rows[i].fresh = -1;
		rows[i].pid = 0;
		rows[i].slot = -1;
		rows[i].pub = (Datum) 0;
		if (SPI_tuptable->tupdesc->natts >= 5)
		{
			Datum		pid = SPI_getbinval(t, SPI_tuptable->tupdesc, 3, &isnull);

			if (!isnull)
			{
				rows[i].pid = DatumGetInt64(pid);
				rows[i].slot = DatumGetInt32(SPI_getbinval(t, SPI_tuptable->tupdesc, 4, &isnull));
				rows[i].pub = datumCopy(SPI_getbinval(t, SPI_tuptable->tupdesc, 5, &isnull),
										typbyval, typlen);
			}
		}
	}
	SPI_freetuptable(SPI_tuptable);
	return rows;
}

/* Order rows by (value, arrival); fresh rows arrive in index order */
static int
fresh_cmp(const void *a, const void *b, void *arg)
{
	const PlacedRow *x = a;
	const PlacedRow *y = b;
	int			c = ke_num_cmp(*(const KeKind *) arg, x->num, y->num);

	if (c != 0)
		return c;
	return x->fresh < y->fresh ? -1 : x->fresh > y->fresh;
}

/*
 * The table rows (sorted by value, arrival) merged with the fresh rows, all
 * of which arrived after every table row.
 */
static PlacedRow *
with_fresh_rows(Watch *w, PlacedRow *rows, int64 *nrows)
{
	FreshRows  *f = w->fresh;
	KeKind		kind = w->ki->vt.kind;
	PlacedRow  *fr;
	PlacedRow  *out;
	int64		i = 0,
				j = 0,
				o = 0;

	if (f == NULL || f->n == 0)
		return rows;
	fr = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(PlacedRow) * f->n);
	for (int64 r = 0; r < f->n; r++)
	{
		ItemPointerSetInvalid(&fr[r].tid);
		fr[r].value = f->value[r];
		fr[r].num = f->num[r];
		fr[r].fresh = r;
		fr[r].pid = 0;
		fr[r].slot = -1;
		fr[r].pub = (Datum) 0;
	}
	qsort_arg(fr, f->n, sizeof(PlacedRow), fresh_cmp, &kind);
	out = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(PlacedRow) * (*nrows + f->n));
	while (i < *nrows || j < f->n)
	{
		if (j == f->n || (i < *nrows && ke_num_le(kind, rows[i].num, fr[j].num)))
			out[o++] = rows[i++];
		else
			out[o++] = fr[j++];
	}
	pfree(fr);
	pfree(rows);
	*nrows = o;
	return out;
}


/* Order old partitions (by index) by their high end (a qsort_arg comparator) */
typedef struct HiSortArg
{
	KeKind		kind;
	const KePartition *parts;
} HiSortArg;

static int
old_hi_cmp(const void *a, const void *b, void *arg)
{
	const HiSortArg *ha = arg;

	return ke_num_cmp(ha->kind, ha->parts[*(const int *) a].hi, ha->parts[*(const int *) b].hi);
}

typedef struct OldPartSort
{
	int64		pid;
	int64		size;
} OldPartSort;

static int
old_part_cmp(const void *a, const void *b)
{
	int64		x = ((const OldPartSort *) a)->pid;
	int64		y = ((const OldPartSort *) b)->pid;

	return x < y ? -1 : x > y;
}

/* The index of an old partition by pid, or -1 */
static int
old_index(const OldParts *op, int64 pid)
{
	int			lo = 0,
				hi = op->n - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (op->pid[mid] == pid)
			return mid;
		if (op->pid[mid] < pid)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* Rows of a partition are carried over only where that is cheaper */
#define CARRY_MAX_WORK	(4 * 1000 * 1000)

/*
 * Carry the old partition that shares most rows with the new partition of
 * rows[pos .. pos+n) over to it: its rows that do not belong there leave it
 * one by one, each handing its published value to a row drawn at random
 * among those showing its true value (the last slot filling the gap), and
 * the rows that newly belong join by the inside-out shuffle.  Each step
 * keeps the published values a uniform permutation of the true ones, as a
 * fresh draw would, while only the rows the steps touch change.  Returns
 * the partition's id with each row's slot and published value, or 0 (a
 * fresh draw is needed) when no old partition is whole to start from.
 */
static int64
carry_over(Watch *w, OldParts *op, PlacedRow *rows, int64 pos, int64 n,
		   int32 *out_slot, Datum *out_pub)
{
	const KeanonValueType *vt = &w->ki->vt;
	KeKind		kind = vt->kind;
	int			cand[8];
	int64		cnt[8];
	int			ncand = 0;
	int			k = -1;
	int64		best = 0;
	int64		size,
				cur,
				span,
				nleave = 0;
	int64	   *st_row;
	Datum	   *st_pub;
	KeNum	   *st_pnum;
	int64	   *slot_of;
	int64		gone_slot = -1;
	int64		pid;

	/* the old partition sharing most rows, not carried over already */
	for (int64 j = pos; j < pos + n; j++)
	{
		int			x,
					c;

		if (rows[j].fresh >= 0 || rows[j].pid == 0)
			continue;
		x = old_index(op, rows[j].pid);
		if (x < 0 || op->taken[x])
			continue;
		for (c = 0; c < ncand && cand[c] != x; c++)
			;
		if (c == ncand)
		{
			if (ncand == lengthof(cand))
				continue;
			cand[ncand] = x;
			cnt[ncand++] = 0;
		}
		cnt[c]++;
	}
	for (int c = 0; c < ncand; c++)
		if (cnt[c] > best)
		{
			best = cnt[c];
			k = cand[c];
		}
	if (k < 0)
		return 0;
	pid = op->pid[k];
	size = op->size[k];
	span = op->last[k] - op->first[k] + 1;
	if (size <= 0 || size > INT_MAX || op->first[k] < 0)
		return 0;
	for (int64 r = op->first[k]; r <= op->last[k]; r++)
		if (rows[r].fresh < 0 && rows[r].pid == pid && (r < pos || r >= pos + n))
			nleave++;
	if (op->gone.valid && op->gone.pid == pid)
		nleave++;
	if (nleave * size > CARRY_MAX_WORK)
		return 0;

	/* its state before: slot -> row (-1: the departed row), published value */
	st_row = palloc(sizeof(int64) * (size + n));
	st_pub = palloc(sizeof(Datum) * (size + n));
	st_pnum = palloc(sizeof(KeNum) * (size + n));
	slot_of = palloc(sizeof(int64) * span);
	for (int64 s = 0; s < size; s++)
		st_row[s] = -2;
	for (int64 r = op->first[k]; r <= op->last[k]; r++)
	{
		int32		s = rows[r].slot;

		slot_of[r - op->first[k]] = -1;
		if (rows[r].fresh >= 0 || rows[r].pid != pid)
			continue;
		if (s < 0 || s >= size || st_row[s] != -2)
			return 0;
		st_row[s] = r;
		st_pub[s] = rows[r].pub;
		st_pnum[s] = KeanonDatumToNum(vt, rows[r].pub);
		slot_of[r - op->first[k]] = s;
	}
	if (op->gone.valid && op->gone.pid == pid)
	{
		gone_slot = op->gone.slot;
		if (gone_slot < 0 || gone_slot >= size || st_row[gone_slot] != -2)
			return 0;
		st_row[gone_slot] = -1;
		st_pub[gone_slot] = op->gone.pub;
		st_pnum[gone_slot] = KeanonDatumToNum(vt, op->gone.pub);
	}
	for (int64 s = 0; s < size; s++)
		if (st_row[s] == -2)
			return 0;

	/* the rows that leave, the departed one first, then in sorted order */
	cur = size;
	for (int64 r = (gone_slot >= 0 ? op->first[k] - 1 : op->first[k]); r <= op->last[k]; r++)
	{
		int64		sl;
		KeNum		t;
		int64		c = 0,
					pick;
		int64		last;

		if (r < op->first[k])
		{
			sl = gone_slot;
			t = op->gone.num;
		}
		else
		{
			if (rows[r].fresh >= 0 || rows[r].pid != pid || (r >= pos && r < pos + n))
				continue;
			sl = slot_of[r - op->first[k]];
			t = rows[r].num;
		}
		for (int64 s = 0; s < cur; s++)
			if (ke_num_eq(kind, st_pnum[s], t))
				c++;
		if (c == 0)
			return 0;
		pick = (int64) random_below((uint64) c);
		for (int64 s = 0; s < cur; s++)
			if (ke_num_eq(kind, st_pnum[s], t) && pick-- == 0)
			{
				st_pub[s] = st_pub[sl];
				st_pnum[s] = st_pnum[sl];
				break;
			}
		last = cur - 1;
		if (sl != last)
		{
			st_row[sl] = st_row[last];
			st_pub[sl] = st_pub[last];
			st_pnum[sl] = st_pnum[last];
			if (st_row[sl] >= 0)
				slot_of[st_row[sl] - op->first[k]] = sl;
			else
				gone_slot = sl;
		}
		cur--;
	}

	/* the rows that join */
	for (int64 j = pos; j < pos + n; j++)
	{
		uint64		x;

		if (rows[j].fresh < 0 && rows[j].pid == pid)
			continue;
		x = random_below((uint64) cur + 1);
		if ((int64) x < cur)
		{
			st_pub[cur] = st_pub[x];
			st_pnum[cur] = st_pnum[x];
			st_pub[x] = rows[j].value;
			st_pnum[x] = rows[j].num;
		}
		else
		{
			st_pub[cur] = rows[j].value;
			st_pnum[cur] = rows[j].num;
		}
		st_row[cur] = j;
		/* and sits at a random slot: the one there moves to the end */
		x = random_below((uint64) cur + 1);
		if ((int64) x < cur)
		{
			int64		tr = st_row[x];
			Datum		tp = st_pub[x];
			KeNum		tn = st_pnum[x];

			st_row[x] = st_row[cur];
			st_pub[x] = st_pub[cur];
			st_pnum[x] = st_pnum[cur];
			st_row[cur] = tr;
			st_pub[cur] = tp;
			st_pnum[cur] = tn;
		}
		cur++;
	}
	if (cur != n)
		elog(ERROR, "keanon: carried a partition of %s over to %lld rows, expected %lld",
			 get_rel_name(w->relid), (long long) cur, (long long) n);
	for (int64 s = 0; s < cur; s++)
	{
		out_slot[st_row[s] - pos] = (int32) s;
		out_pub[st_row[s] - pos] = st_pub[s];
	}
	op->taken[k] = true;
	pfree(st_row);
	pfree(st_pub);
	pfree(st_pnum);
	pfree(slot_of);
	return pid;
}

/* A row's new place, to be written by place_rows */
typedef struct UpdateRow
{
	ItemPointer tid;
	Datum		pid;
	Datum		slot;
	Datum		pub;
} UpdateRow;

static int
update_row_cmp(const void *a, const void *b)
{
	return ItemPointerCompare(((const UpdateRow *) a)->tid, ((const UpdateRow *) b)->tid);
}

/*
 * Give the rows, in (value, arrival) order, to the partitions in order,
 * draw a uniform permutation of each, and write them and the partitions'
 * summaries.
 */
static void
place_rows(Watch *w, KeanonPartList *pl, PlacedRow *rows, int64 nrows, OldParts *op)
{
	const KeanonValueType *vt = &w->ki->vt;
	KeanonPartList np = *pl;
	int64		pos = 0;
	char	   *sql;

	/*
	 * Place and permute every partition, then write all rows with one
	 * UPDATE and all partitions with one INSERT, joined to arrays: a
	 * statement per row would dominate the cost of large batches.
	 */
	{
		int16		typlen;
		bool		typbyval;
		char		typalign;
		Oid			arrtype = get_array_type(vt->typid);
		Datum	   *tids = palloc(sizeof(Datum) * Max(nrows, 1));
		Datum	   *rpids = palloc(sizeof(Datum) * Max(nrows, 1));
		Datum	   *slots = palloc(sizeof(Datum) * Max(nrows, 1));
		Datum	   *pubs = palloc(sizeof(Datum) * Max(nrows, 1));
		Datum	   *ppid = palloc(sizeof(Datum) * Max(np.n, 1));
		Datum	   *plo = palloc(sizeof(Datum) * Max(np.n, 1));
		Datum	   *plast = palloc(sizeof(Datum) * Max(np.n, 1));
		Datum	   *phi = palloc(sizeof(Datum) * Max(np.n, 1));
		Datum	   *psplit = palloc(sizeof(Datum) * Max(np.n, 1));
		Datum	   *pn = palloc(sizeof(Datum) * Max(np.n, 1));
		Datum	   *pstart = palloc(sizeof(Datum) * Max(np.n, 1));
		Datum	   *plen = palloc(sizeof(Datum) * Max(np.n, 1));
		Datum	   *plslot = palloc(sizeof(Datum) * Max(np.n, 1));
		Datum	   *fvals = palloc(sizeof(Datum) * Max(nrows, 1));
		Datum	   *fcnts = palloc(sizeof(Datum) * Max(nrows, 1));
		Datum	   *upubs = palloc(sizeof(Datum) * Max(nrows, 1));
		int32	   *cslots = palloc(sizeof(int32) * Max(nrows, 1));
		int64		nflat = 0;
		int64		nupd = 0;
		int64		nfresh = 0;
		FreshRows  *f = w->fresh;
		Oid			ut[4];
		Datum		uv[4];
		Oid			it[11];
		Datum		iv[11];

		get_typlenbyvalalign(vt->typid, &typlen, &typbyval, &typalign);
		for (int i = 0; i < np.n; i++)
		{
			KePartition *p = &np.parts[i];
			PlacedRow  *pr = rows + pos;
			int64		n = p->n;
			int64		pid = 0;
			int64		first = nflat;

			/* an old partition carried over, or a fresh uniform permutation */
			if (op != NULL)
				pid = carry_over(w, op, rows, pos, n, cslots + pos, pubs + pos);
			if (pid == 0)
			{
				pid = ++w->next_pid;
				for (int64 j = 0; j < n; j++)
				{
					pubs[pos + j] = pr[j].value;
					cslots[pos + j] = (int32) j;
				}
				/* two independent draws: who shows what, and who sits where */
				for (int64 j = n - 1; j > 0; j--)
				{
					int64		r = (int64) random_below((uint64) j + 1);
					Datum		tmp = pubs[pos + j];
					int32		ts;

					pubs[pos + j] = pubs[pos + r];
					pubs[pos + r] = tmp;
					r = (int64) random_below((uint64) j + 1);
					ts = cslots[pos + j];
					cslots[pos + j] = cslots[pos + r];
					cslots[pos + r] = ts;
				}
			}
			for (int64 j = 0; j < n; j++)
			{
				/* a fresh row is written placed, a table row updated if it moved */
				if (pr[j].fresh >= 0)
				{
					f->pid[pr[j].fresh] = Int64GetDatum(pid);
					f->slot[pr[j].fresh] = Int32GetDatum(cslots[pos + j]);
					f->pub[pr[j].fresh] = pubs[pos + j];
					nfresh++;
				}
				else if (pr[j].pid != pid || pr[j].slot != cslots[pos + j] ||
						 !ke_num_eq(vt->kind, KeanonDatumToNum(vt, pr[j].pub),
									KeanonDatumToNum(vt, pubs[pos + j])))
				{
					tids[nupd] = PointerGetDatum(&pr[j].tid);
					rpids[nupd] = Int64GetDatum(pid);
					slots[nupd] = Int32GetDatum(cslots[pos + j]);
					upubs[nupd] = pubs[pos + j];
					nupd++;
				}
				/* rows come sorted by value: count the distinct ones */
				if (j > 0 && ke_num_eq(vt->kind, pr[j - 1].num, pr[j].num))
					fcnts[nflat - 1] = Int64GetDatum(DatumGetInt64(fcnts[nflat - 1]) + 1);
				else
				{
					fvals[nflat] = pr[j].value;
					fcnts[nflat] = Int64GetDatum(1);
					nflat++;
				}
			}
			ppid[i] = Int64GetDatum(pid);
			plo[i] = KeanonNumToDatum(vt, p->lo);
			plast[i] = BoolGetDatum(p->lo_last_only);
			phi[i] = KeanonNumToDatum(vt, p->hi);
			psplit[i] = BoolGetDatum(p->hi_split);
			pn[i] = Int64GetDatum(n);
			pstart[i] = Int32GetDatum((int32) first + 1);
			plen[i] = Int32GetDatum((int32) (nflat - first));
			/* where the one row of its lowest value sits (see split_join) */
			plslot[i] = Int32GetDatum(p->lo_last_only ? cslots[pos] : -1);
			pos += n;
		}

		ut[0] = TIDARRAYOID;
		ut[1] = INT8ARRAYOID;
		ut[2] = INT4ARRAYOID;
		ut[3] = arrtype;
		if (f != NULL)
		{
			if (nfresh != f->n)
				elog(ERROR, "keanon: placed %lld new rows of %s, expected %lld",
					 (long long) nfresh, get_rel_name(w->relid), (long long) f->n);
			f->placed = true;
		}
		if (nupd > 1)
		{
			/* in physical order: the heap and the key index are then walked once */
			UpdateRow  *ur = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(UpdateRow) * nupd);

			for (int64 j = 0; j < nupd; j++)
			{
				ur[j].tid = (ItemPointer) DatumGetPointer(tids[j]);
				ur[j].pid = rpids[j];
				ur[j].slot = slots[j];
				ur[j].pub = upubs[j];
			}
			qsort(ur, nupd, sizeof(UpdateRow), update_row_cmp);
			for (int64 j = 0; j < nupd; j++)
			{
				tids[j] = PointerGetDatum(ur[j].tid);
				rpids[j] = ur[j].pid;
				slots[j] = ur[j].slot;
				upubs[j] = ur[j].pub;
			}
			pfree(ur);
		}
		if (nupd > 0)
		{
			uv[0] = PointerGetDatum(construct_array(tids, (int) nupd, TIDOID, sizeof(ItemPointerData),
													false, TYPALIGN_SHORT));
			uv[1] = PointerGetDatum(construct_array(rpids, (int) nupd, INT8OID, 8, FLOAT8PASSBYVAL,
													TYPALIGN_DOUBLE));
			uv[2] = PointerGetDatum(construct_array(slots, (int) nupd, INT4OID, 4, true, TYPALIGN_INT));
			uv[3] = PointerGetDatum(construct_array(upubs, (int) nupd, vt->typid, typlen, typbyval,
													typalign));
			sql = psprintf("UPDATE %s r SET keanon_pid = u.p, keanon_slot = u.s, keanon_pub = u.v "
						   "FROM unnest($1, $2, $3, $4) AS u(t, p, s, v) WHERE r.ctid = u.t",
						   w->rows);
			KeanonSpiRun(w->relid, sql, 4, ut, uv, NULL, SPI_OK_UPDATE);
			if ((int64) SPI_processed != nupd)
				elog(ERROR, "keanon: placed %lld rows of %s, expected %lld",
					 (long long) SPI_processed, get_rel_name(w->relid), (long long) nupd);
		}

		it[0] = INT8ARRAYOID;
		it[1] = arrtype;
		it[2] = BOOLARRAYOID;
		it[3] = arrtype;
		it[4] = BOOLARRAYOID;
		it[5] = INT8ARRAYOID;
		it[6] = INT4ARRAYOID;
		it[7] = INT4ARRAYOID;
		it[8] = arrtype;
		it[9] = INT8ARRAYOID;
		it[10] = INT4ARRAYOID;
		iv[0] = PointerGetDatum(construct_array(ppid, np.n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		iv[1] = PointerGetDatum(construct_array(plo, np.n, vt->typid, typlen, typbyval, typalign));
		iv[2] = PointerGetDatum(construct_array(plast, np.n, BOOLOID, 1, true, TYPALIGN_CHAR));
		iv[3] = PointerGetDatum(construct_array(phi, np.n, vt->typid, typlen, typbyval, typalign));
		iv[4] = PointerGetDatum(construct_array(psplit, np.n, BOOLOID, 1, true, TYPALIGN_CHAR));
		iv[5] = PointerGetDatum(construct_array(pn, np.n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		iv[6] = PointerGetDatum(construct_array(pstart, np.n, INT4OID, 4, true, TYPALIGN_INT));
		iv[7] = PointerGetDatum(construct_array(plen, np.n, INT4OID, 4, true, TYPALIGN_INT));
		iv[10] = PointerGetDatum(construct_array(plslot, np.n, INT4OID, 4, true, TYPALIGN_INT));
		iv[8] = PointerGetDatum(construct_array(fvals, (int) nflat, vt->typid, typlen, typbyval, typalign));
		iv[9] = PointerGetDatum(construct_array(fcnts, (int) nflat, INT8OID, 8, FLOAT8PASSBYVAL,
												TYPALIGN_DOUBLE));
		sql = psprintf("INSERT INTO %s (keanon_pid, lo, lo_last_only, hi, hi_split, n, vals, cnts, "
					   "lo_slot) "
					   "SELECT u.p, u.lo, u.ll, u.hi, u.hs, u.n, "
					   "$9[u.st:u.st + u.ln - 1], $10[u.st:u.st + u.ln - 1], nullif(u.ls, -1) "
					   "FROM unnest($1, $2, $3, $4, $5, $6, $7, $8, $11) "
					   "AS u(p, lo, ll, hi, hs, n, st, ln, ls)", w->parts);
		KeanonSpiRun(w->relid, sql, 11, it, iv, NULL, SPI_OK_INSERT);
	}
}

/*
 * Reassign the rows of the old partitions in the engine-reported range (and
 * the rows not yet placed) to the new partitions there, and permute each
 * anew.  The range grows until the old and the new partitions in it cover
 * the same rows.
 */
static void
reassign(Watch *w, bool lo_unb, KeNum lo, bool hi_unb, KeNum hi,
		 const KeNum *cv, int ncv)
{
	const KeanonValueType *vt = &w->ki->vt;
	KeKind		kind = vt->kind;
	KeanonPartList np = {0};
	Datum	   *old_pids = NULL;
	KePartition *old_parts = NULL;
	int			nold = 0;
	PlacedRow  *rows;
	int64		nrows;
	int64		want = 0;
	char	   *sql;
	ArrayType  *pid_arr;
	OldParts	op;
	Oid			types[4];
	Datum		values[8];

	for (;;)
	{
		bool		grew = false;
		Oid			rtypes[2] = {vt->typid, vt->typid};
		Datum		rvals[2];
		char		rnulls[2] = {' ', ' '};

		np.n = 0;
		ke_foreach_partition_range(w->ki->engine, lo_unb, lo, hi_unb, hi,
								   KeanonCollectPartition, &np);
		rvals[0] = lo_unb ? (Datum) 0 : KeanonNumToDatum(vt, lo);
		rvals[1] = hi_unb ? (Datum) 0 : KeanonNumToDatum(vt, hi);
		if (lo_unb)
			rnulls[0] = 'n';
		if (hi_unb)
			rnulls[1] = 'n';
		/*
		 * Partitions are disjoint and their ends distinct: those overlapping
		 * [lo, hi] end inside it, but for one that starts inside and ends
		 * past it.  Written so that each part is an index range scan.
		 */
		{
			const char *after = hi_unb ? "" :
				" UNION ALL SELECT * FROM (SELECT keanon_pid, lo, hi, lo_last_only, hi_split, n "
				"FROM %1$s WHERE hi > $2 ORDER BY hi LIMIT 1) n WHERE lo <= $2";
			const char *cond = lo_unb && hi_unb ? "true" :
				lo_unb ? "hi <= $2" : hi_unb ? "hi >= $1" : "hi >= $1 AND hi <= $2";

			sql = psprintf(psprintf("SELECT keanon_pid, lo, hi, lo_last_only, hi_split, n "
									"FROM %%1$s WHERE %s%s", cond, after), w->parts);
		}
		KeanonSpiRun(w->relid, sql, 2, rtypes, rvals, rnulls, SPI_OK_SELECT);
		nold = (int) SPI_processed;
		if (old_pids)
			pfree(old_pids);
		if (old_parts)
			pfree(old_parts);
		old_pids = palloc(sizeof(Datum) * Max(nold, 1));
		old_parts = palloc0(sizeof(KePartition) * Max(nold, 1));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	t = SPI_tuptable->vals[i];
			TupleDesc	d = SPI_tuptable->tupdesc;
			bool		isnull;
			KeNum		plo = KeanonDatumToNum(vt, SPI_getbinval(t, d, 2, &isnull));
			KeNum		phi = KeanonDatumToNum(vt, SPI_getbinval(t, d, 3, &isnull));

			old_pids[i] = SPI_getbinval(t, d, 1, &isnull);
			old_parts[i].lo = plo;
			old_parts[i].hi = phi;
			old_parts[i].lo_last_only = DatumGetBool(SPI_getbinval(t, d, 4, &isnull));
			old_parts[i].hi_split = DatumGetBool(SPI_getbinval(t, d, 5, &isnull));
			old_parts[i].n = DatumGetInt64(SPI_getbinval(t, d, 6, &isnull));
			if (!lo_unb && ke_num_cmp(kind, plo, lo) < 0)
			{
				lo = plo;
				grew = true;
			}
			if (!hi_unb && ke_num_cmp(kind, phi, hi) > 0)
			{
				hi = phi;
				grew = true;
			}
		}
		for (int i = 0; i < np.n; i++)
		{
			if (!lo_unb && ke_num_cmp(kind, np.parts[i].lo, lo) < 0)
			{
				lo = np.parts[i].lo;
				grew = true;
			}
			if (!hi_unb && ke_num_cmp(kind, np.parts[i].hi, hi) > 0)
			{
				hi = np.parts[i].hi;
				grew = true;
			}
		}
		if (!grew)
			break;
	}

	/*
	 * A partition the range took in at its edges may be untouched: the same
	 * bounds and size as before, and no changed value inside.  Its rows keep
	 * their places, and it is left out of both sides.
	 */
	if (cv != NULL && nold > 0)
	{
		int			keep_new = 0;
		int			keep_old = 0;
		int		   *by_hi = palloc(sizeof(int) * nold);
		bool	   *dropped = palloc0(sizeof(bool) * nold);
		HiSortArg	ha = {kind, old_parts};

		/* old partitions by their end (distinct), to look each new one up */
		for (int j = 0; j < nold; j++)
			by_hi[j] = j;
		qsort_arg(by_hi, nold, sizeof(int), old_hi_cmp, &ha);
		for (int i = 0; i < np.n; i++)
		{
			KePartition *p = &np.parts[i];
			int			lo = 0,
						hi = nold - 1,
						j = -1,
						a = 0,
						b = ncv;

			while (lo <= hi)
			{
				int			mid = lo + (hi - lo) / 2;
				int			c = ke_num_cmp(kind, old_parts[by_hi[mid]].hi, p->hi);

				if (c == 0)
				{
					j = by_hi[mid];
					break;
				}
				if (c < 0)
					lo = mid + 1;
				else
					hi = mid - 1;
			}
			if (j >= 0)
			{
				KePartition *o = &old_parts[j];

				/* the first changed value at or above its low end */
				while (a < b)
				{
					int			mid = a + (b - a) / 2;

					if (ke_num_cmp(kind, cv[mid], p->lo) < 0)
						a = mid + 1;
					else
						b = mid;
				}
				if (!dropped[j] && ke_num_eq(kind, o->lo, p->lo) &&
					o->lo_last_only == p->lo_last_only && o->hi_split == p->hi_split &&
					o->n == p->n && !(a < ncv && ke_num_le(kind, cv[a], p->hi)))
				{
					dropped[j] = true;
					continue;
				}
			}
			np.parts[keep_new++] = *p;
		}
		np.n = keep_new;
		for (int j = 0; j < nold; j++)
		{
			if (dropped[j])
				continue;
			old_pids[keep_old] = old_pids[j];
			old_parts[keep_old] = old_parts[j];
			keep_old++;
		}
		nold = keep_old;
	}

	/* the rows to place, in (value, arrival) order */
	pid_arr = construct_array(old_pids, nold, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	types[0] = INT8ARRAYOID;
	values[0] = PointerGetDatum(pid_arr);
	if (w->all_placed)
		sql = psprintf("SELECT ctid, %s, keanon_pid, keanon_slot, keanon_pub FROM %s "
					   "WHERE keanon_pid = ANY ($1) ORDER BY %s, keanon_arrival",
					   w->s, w->rows, w->s);
	else
		sql = psprintf("SELECT ctid, %s, keanon_pid, keanon_slot, keanon_pub FROM "
					   "(SELECT ctid, %s, keanon_arrival, keanon_pid, keanon_slot, keanon_pub FROM %s "
					   "WHERE keanon_pid = ANY ($1) UNION ALL SELECT ctid, %s, keanon_arrival, "
					   "keanon_pid, keanon_slot, keanon_pub "
					   "FROM %s WHERE keanon_pid IS NULL) x ORDER BY %s, keanon_arrival",
					   w->s, w->s, w->rows, w->s, w->rows, w->s);
	KeanonSpiRun(w->relid, sql, 1, types, values, NULL, SPI_OK_SELECT);
	rows = with_fresh_rows(w, fetched_rows(vt, &nrows), &nrows);
	for (int i = 0; i < np.n; i++)
		want += np.parts[i].n;
	if (want != nrows)
		elog(ERROR, "keanon: partitions of %s in the changed range hold %lld rows, the table %lld",
			 get_rel_name(w->relid), (long long) want, (long long) nrows);

	if (nold > 0)
	{
		sql = psprintf("DELETE FROM %s WHERE keanon_pid = ANY ($1)", w->parts);
		KeanonSpiRun(w->relid, sql, 1, types, values, NULL, SPI_OK_DELETE);
	}

	/* the old partitions, to carry over, with the range of their rows */
	op.n = nold;
	op.pid = palloc(sizeof(int64) * Max(nold, 1));
	op.size = palloc(sizeof(int64) * Max(nold, 1));
	op.taken = palloc0(sizeof(bool) * Max(nold, 1));
	op.first = palloc(sizeof(int64) * Max(nold, 1));
	op.last = palloc(sizeof(int64) * Max(nold, 1));
	{
		OldPartSort *ops = palloc(sizeof(OldPartSort) * Max(nold, 1));

		for (int i = 0; i < nold; i++)
		{
			ops[i].pid = DatumGetInt64(old_pids[i]);
			ops[i].size = old_parts[i].n;
		}
		qsort(ops, nold, sizeof(OldPartSort), old_part_cmp);
		for (int i = 0; i < nold; i++)
		{
			op.pid[i] = ops[i].pid;
			op.size[i] = ops[i].size;
			op.first[i] = -1;
			op.last[i] = -1;
		}
	}
	for (int64 r = 0; r < nrows; r++)
	{
		int			x;

		if (rows[r].fresh >= 0 || rows[r].pid == 0 || (x = old_index(&op, rows[r].pid)) < 0)
			continue;
		if (op.first[x] < 0)
			op.first[x] = r;
		op.last[x] = r;
	}
	op.gone.valid = false;
	/* the departed row counts if its partition is among those replaced */
	if (w->gone != NULL && w->gone->valid && old_index(&op, w->gone->pid) >= 0)
		op.gone = *w->gone;

	/* keanon.republish (no changed values) draws every partition afresh */
	place_rows(w, &np, rows, nrows, cv != NULL ? &op : NULL);
}

/* Withdraw every published row: no valid partitioning exists */
static void
suppress_all(Watch *w)
{
	int64		nrows;
	char	   *sql;

	sql = psprintf("UPDATE %s SET keanon_pid = NULL, keanon_slot = NULL, keanon_pub = NULL "
				   "WHERE keanon_pid IS NOT NULL", w->rows);
	KeanonSpiRun(w->relid, sql, 0, NULL, NULL, NULL, SPI_OK_UPDATE);
	sql = psprintf("DELETE FROM %s", w->parts);
	KeanonSpiRun(w->relid, sql, 0, NULL, NULL, NULL, SPI_OK_DELETE);
	nrows = ke_nrows(w->ki->engine);
	if (nrows > 0)
		ereport(NOTICE,
				(errmsg("no valid (k,e)-partitioning of %s exists: its rows are not published",
						get_rel_name(w->relid)),
				 ke_nruns(w->ki->engine) < w->k
				 ? errdetail("It has %lld distinct sensitive values; k = %d needs at least %d.",
							 (long long) ke_nruns(w->ki->engine), w->k, w->k)
				 : errdetail("The range of its sensitive values is below e.")));
}

/* The one partition holding value v, or false when v's run is split */
static bool
only_partition_at(Watch *w, KeNum v, KePartition *out)
{
	KeanonPartList np = {0};

	ke_foreach_partition_range(w->ki->engine, false, v, false, v,
							   KeanonCollectPartition, &np);
	if (np.n != 1)
		return false;
	*out = np.parts[0];
	return true;
}

/*
 * The partition holding value v that ends at hi (with hi_split), when v's
 * run lies in one partition or is split between two: a row of the earlier
 * one leaving it leaves the later one as it was.
 */
static bool
partition_at_ending(Watch *w, KeNum v, KeNum hi, bool hi_split, KePartition *out)
{
	KeanonPartList np = {0};

	ke_foreach_partition_range(w->ki->engine, false, v, false, v,
							   KeanonCollectPartition, &np);
	for (int i = 0; i < np.n; i++)
	{
		if (ke_num_eq(w->ki->vt.kind, np.parts[i].hi, hi) && np.parts[i].hi_split == hi_split)
		{
			*out = np.parts[i];
			return true;
		}
	}
	return false;
}

/*
 * A partition's summary after one row of value remove_d left it and one of
 * value add_d joined (either may be absent), with its new lowest value.
 */
static void
update_summary(Watch *w, int64 pid, KeNum lo, bool has_remove, Datum remove_d,
			   bool has_add, Datum add_d)
{
	const KeanonValueType *vt = &w->ki->vt;
	Oid			types[5] = {INT8OID, vt->typid, vt->typid, vt->typid, INT8OID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	const char *counted =
		"(SELECT x, sum(c)::bigint AS c FROM (SELECT x, c FROM unnest(vals, cnts) u(x, c) "
		"UNION ALL SELECT $3, -1 WHERE $3 IS NOT NULL "
		"UNION ALL SELECT $4, 1 WHERE $4 IS NOT NULL) a GROUP BY x HAVING sum(c) > 0) v";
	char	   *sql;

	values[0] = Int64GetDatum(pid);
	values[1] = KeanonNumToDatum(vt, lo);
	values[2] = remove_d;
	values[3] = add_d;
	values[4] = Int64GetDatum((has_add ? 1 : 0) - (has_remove ? 1 : 0));
	if (!has_remove)
		nulls[2] = 'n';
	if (!has_add)
		nulls[3] = 'n';
	sql = psprintf("UPDATE %s SET n = n + $5, lo = $2, "
				   "vals = (SELECT array_agg(x ORDER BY x) FROM %s), "
				   "cnts = (SELECT array_agg(c ORDER BY x) FROM %s) "
				   "WHERE keanon_pid = $1", w->parts, counted, counted);
	KeanonSpiRun(w->relid, sql, 5, types, values, nulls, SPI_OK_UPDATE);
}

/* The one fresh row of this statement takes slot and published value */
static void
place_fresh_row(Watch *w, int64 pid, int32 slot, Datum pub)
{
	FreshRows  *f = w->fresh;

	if (f == NULL || f->n != 1)
		elog(ERROR, "keanon: expected one new row in %s", get_rel_name(w->relid));
	f->pid[0] = Int64GetDatum(pid);
	f->slot[0] = Int32GetDatum(slot);
	f->pub[0] = pub;
	f->placed = true;
}

/*
 * A uniformly random slot among those of partition pid (n slots before the
 * change) whose row shows value vd.  The departing row, already gone from
 * the table, is counted at its slot dslot with its published value dpub.
 * Choosing among equal values at random, not the first one found, keeps the
 * permutation uniform.  Common values are found by sampling slots; rare ones
 * by listing them.  -1 if no slot shows vd.
 */
static int32
random_slot_showing(Watch *w, int64 pid, int64 n, int32 dslot, Datum dpub, Datum vd)
{
	const KeanonValueType *vt = &w->ki->vt;
	KeNum		target = KeanonDatumToNum(vt, vd);
	bool		departing_shows = ke_num_eq(vt->kind, KeanonDatumToNum(vt, dpub), target);
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		values[2];
	char	   *sql;
	bool		isnull;

	values[0] = Int64GetDatum(pid);
	sql = psprintf("SELECT keanon_pub FROM %s WHERE keanon_pid = $1 AND keanon_slot = $2", w->rows);
	for (int t = 0; t < 32 && n > 0; t++)
	{
		int32		j = (int32) random_below((uint64) n);

		if (j == dslot)
		{
			if (departing_shows)
				return j;
			continue;
		}
		values[1] = Int32GetDatum(j);
		KeanonSpiRun(w->relid, sql, 2, types, values, NULL, SPI_OK_SELECT);
		if (SPI_processed == 1 &&
			ke_num_eq(vt->kind, target,
					  KeanonDatumToNum(vt, SPI_getbinval(SPI_tuptable->vals[0],
														 SPI_tuptable->tupdesc, 1, &isnull))))
			return j;
	}
	/* a rare value: list the slots showing it */
	types[1] = vt->typid;
	values[1] = vd;
	KeanonSpiRun(w->relid, psprintf("SELECT keanon_slot FROM %s WHERE keanon_pid = $1 AND keanon_pub = $2",
					 w->rows), 2, types, values, NULL, SPI_OK_SELECT);
	{
		uint64		c = SPI_processed + (departing_shows ? 1 : 0);
		uint64		r;

		if (c == 0)
			return -1;
		r = random_below(c);
		if (r == SPI_processed)
			return dslot;
		return DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));
	}
}

/* Make the row at a slot of a partition show value vd */
static void
set_published(Watch *w, int64 pid, int32 slot, Datum vd)
{
	Oid			types[3] = {INT8OID, INT4OID, w->ki->vt.typid};
	Datum		values[3];

	values[0] = Int64GetDatum(pid);
	values[1] = Int32GetDatum(slot);
	values[2] = vd;
	KeanonSpiRun(w->relid, psprintf("UPDATE %s SET keanon_pub = $3 WHERE keanon_pid = $1 AND keanon_slot = $2",
					 w->rows), 3, types, values, NULL, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		elog(ERROR, "keanon: slot %d of partition %lld of %s is missing",
			 slot, (long long) pid, get_rel_name(w->relid));
}

/* Make the row at a slot of a partition show vd; returns what it showed */
static Datum
exchange_published(Watch *w, int64 pid, int32 slot, Datum vd)
{
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		values[2];
	Datum		was;
	bool		isnull;

	values[0] = Int64GetDatum(pid);
	values[1] = Int32GetDatum(slot);
	KeanonSpiRun(w->relid, psprintf("SELECT keanon_pub FROM %s WHERE keanon_pid = $1 AND keanon_slot = $2",
					 w->rows), 2, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		elog(ERROR, "keanon: slot %d of partition %lld of %s is missing",
			 slot, (long long) pid, get_rel_name(w->relid));
	/* the tuple table lives until SPI_finish */
	was = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	set_published(w, pid, slot, vd);
	return was;
}

/*
 * A uniformly random slot in [0, n] for a row joining partition pid of n
 * rows: the row sitting there, if any, moves to slot n.  Slots thus stay a
 * uniformly random order of the partition's rows, whatever their values
 * and arrival, so that no order over them (an index scan on the rows
 * table's (keanon_pid, keanon_slot) index, a CLUSTER on it) tells its
 * readers anything.
 */
static int32
random_slot_for_newcomer(Watch *w, int64 pid, int32 n)
{
	int32		y = (int32) random_below((uint64) n + 1);
	Oid			types[3] = {INT8OID, INT4OID, INT4OID};
	Datum		values[3];

	if (y == n)
		return y;
	values[0] = Int64GetDatum(pid);
	values[1] = Int32GetDatum(y);
	values[2] = Int32GetDatum(n);
	KeanonSpiRun(w->relid,
				 psprintf("UPDATE %s SET keanon_slot = $3 WHERE keanon_pid = $1 AND keanon_slot = $2",
						  w->rows), 3, types, values, NULL, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		elog(ERROR, "keanon: slot %d of partition %lld of %s is missing",
			 y, (long long) pid, get_rel_name(w->relid));
	return y;
}

/*
 * The O(1) path for one row joining a partition whose bounds and end stay
 * put: inside-out shuffle.  False when the situation is not that simple.
 */
static bool
join_partition(Watch *w, KeNum v, Datum vd)
{
	const KeanonValueType *vt = &w->ki->vt;
	KePartition part;
	KePartition *p = &part;
	Oid			types[2];
	Datum		values[2];
	Datum		pub;
	int64		pid,
				n;
	uint64		j;
	char	   *sql;
	bool		isnull;

	if (!only_partition_at(w, v, p))
		return false;
	types[0] = vt->typid;
	types[1] = BOOLOID;
	values[0] = KeanonNumToDatum(vt, p->hi);
	values[1] = BoolGetDatum(p->hi_split);
	sql = psprintf("SELECT keanon_pid, n FROM %s WHERE hi = $1 AND hi_split = $2", w->parts);
	KeanonSpiRun(w->relid, sql, 2, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		return false;
	pid = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	if (n + 1 != p->n)
		return false;

	/* the newcomer swaps published values with slot j, then takes a slot */
	j = random_below((uint64) n + 1);
	pub = (int64) j < n ? exchange_published(w, pid, (int32) j, vd) : vd;
	place_fresh_row(w, pid, random_slot_for_newcomer(w, pid, (int32) n), pub);
	update_summary(w, pid, p->lo, false, (Datum) 0, true, vd);
	return true;
}

/*
 * The O(1) path for one row joining a run split between two partitions:
 * the earlier partition holds all the run's rows but the last-arriving, the
 * later one that row.  The newcomer, arriving last, takes the place of the
 * previous last row in the later partition (same true value, so its
 * published value stays); that row joins the earlier partition by an
 * inside-out shuffle.  False when the situation is not that simple.
 */
static bool
split_join(Watch *w, KeNum v, Datum vd)
{
	const KeanonValueType *vt = &w->ki->vt;
	KeKind		kind = vt->kind;
	KeanonPartList np = {0};
	KePartition *a,
			   *b;
	Oid			types[4];
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	int64		pid_a,
				pid_b,
				n_a;
	int32		old_slot;
	Datum		old_pub,
				old_tid,
				moved_pub;
	int64		old_arrival;
	Datum		lo_slot;
	bool		lo_slot_known;
	uint64		j;
	char	   *sql;
	bool		isnull;
	HeapTuple	t;
	TupleDesc	d;

	ke_foreach_partition_range(w->ki->engine, false, v, false, v,
							   KeanonCollectPartition, &np);
	if (np.n != 2)
		return false;
	a = &np.parts[0];
	b = &np.parts[1];
	if (!a->hi_split || !b->lo_last_only || !ke_num_eq(kind, a->hi, v) ||
		!ke_num_eq(kind, b->lo, v))
		return false;

	/* the stored partitions: the earlier one row short, the later as it was */
	types[0] = vt->typid;
	values[0] = vd;
	sql = psprintf("SELECT keanon_pid, n, lo, lo_last_only FROM %s WHERE hi = $1 AND hi_split",
				   w->parts);
	KeanonSpiRun(w->relid, sql, 1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		return false;
	t = SPI_tuptable->vals[0];
	d = SPI_tuptable->tupdesc;
	pid_a = DatumGetInt64(SPI_getbinval(t, d, 1, &isnull));
	n_a = DatumGetInt64(SPI_getbinval(t, d, 2, &isnull));
	if (n_a + 1 != a->n ||
		!ke_num_eq(kind, a->lo, KeanonDatumToNum(vt, SPI_getbinval(t, d, 3, &isnull))) ||
		DatumGetBool(SPI_getbinval(t, d, 4, &isnull)) != a->lo_last_only)
		return false;
	sql = psprintf("SELECT keanon_pid, n, lo, lo_last_only, hi, hi_split, lo_slot FROM %s "
				   "WHERE hi > $1 ORDER BY hi LIMIT 1", w->parts);
	KeanonSpiRun(w->relid, sql, 1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		return false;
	t = SPI_tuptable->vals[0];
	d = SPI_tuptable->tupdesc;
	pid_b = DatumGetInt64(SPI_getbinval(t, d, 1, &isnull));
	if (DatumGetInt64(SPI_getbinval(t, d, 2, &isnull)) != b->n ||
		!ke_num_eq(kind, v, KeanonDatumToNum(vt, SPI_getbinval(t, d, 3, &isnull))) ||
		!DatumGetBool(SPI_getbinval(t, d, 4, &isnull)) ||
		!ke_num_eq(kind, b->hi, KeanonDatumToNum(vt, SPI_getbinval(t, d, 5, &isnull))) ||
		DatumGetBool(SPI_getbinval(t, d, 6, &isnull)) != b->hi_split)
		return false;
	lo_slot = SPI_getbinval(t, d, 7, &isnull);
	lo_slot_known = !isnull;

	/*
	 * The previous last row of the run, the later partition's one row of
	 * value v, and the newcomer arriving after it.  The partition records
	 * the row's slot when it was placed; slots can move since, so the row
	 * there is checked, and the partition searched when it is not the one.
	 */
	types[0] = INT8OID;
	values[0] = Int64GetDatum(pid_b);
	types[1] = vt->typid;
	values[1] = vd;
	if (lo_slot_known)
	{
		types[2] = INT4OID;
		values[2] = lo_slot;
		sql = psprintf("SELECT ctid, keanon_slot, keanon_pub, keanon_arrival FROM %s "
					   "WHERE keanon_pid = $1 AND keanon_slot = $3 AND %s = $2", w->rows, w->s);
		KeanonSpiRun(w->relid, sql, 3, types, values, NULL, SPI_OK_SELECT);
	}
	if (!lo_slot_known || SPI_processed != 1)
	{
		sql = psprintf("SELECT ctid, keanon_slot, keanon_pub, keanon_arrival FROM %s "
					   "WHERE keanon_pid = $1 AND %s = $2", w->rows, w->s);
		KeanonSpiRun(w->relid, sql, 2, types, values, NULL, SPI_OK_SELECT);
	}
	if (SPI_processed != 1)
		return false;
	t = SPI_tuptable->vals[0];
	d = SPI_tuptable->tupdesc;
	old_tid = SPI_getbinval(t, d, 1, &isnull);
	old_slot = DatumGetInt32(SPI_getbinval(t, d, 2, &isnull));
	old_pub = SPI_getbinval(t, d, 3, &isnull);
	old_arrival = DatumGetInt64(SPI_getbinval(t, d, 4, &isnull));
	if (w->fresh == NULL || w->fresh->n != 1 || w->fresh->arrival0 + 1 <= old_arrival)
		return false;

	/* that row joins the earlier partition at a random slot */
	j = random_below((uint64) n_a + 1);
	moved_pub = (int64) j < n_a ? exchange_published(w, pid_a, (int32) j, vd) : vd;
	types[0] = TIDOID;
	values[0] = old_tid;
	types[1] = INT8OID;
	values[1] = Int64GetDatum(pid_a);
	types[2] = INT4OID;
	values[2] = Int32GetDatum(random_slot_for_newcomer(w, pid_a, (int32) n_a));
	types[3] = vt->typid;
	values[3] = moved_pub;
	KeanonSpiRun(w->relid, psprintf("UPDATE %s SET keanon_pid = $2, keanon_slot = $3, keanon_pub = $4 "
					 "WHERE ctid = $1", w->rows), 4, types, values, nulls, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		elog(ERROR, "keanon: the last row of a split run of %s is missing", get_rel_name(w->relid));

	/* the newcomer takes its place in the later partition */
	place_fresh_row(w, pid_b, old_slot, old_pub);
	update_summary(w, pid_a, a->lo, false, (Datum) 0, true, vd);
	return true;
}

/*
 * The O(1) path (for values not rare in the partition) for one row leaving
 * a partition whose end stays put: a row drawn at random among those
 * showing the departing true value takes over the departing row's
 * published value, and the last slot moves into the gap.
 */
static bool
leave_partition(Watch *w, KeNum v, Datum vd, int64 pid, int32 slot, Datum pub)
{
	const KeanonValueType *vt = &w->ki->vt;
	KePartition part;
	KePartition *p = &part;
	Oid			types[4];
	Datum		values[4];
	int64		n;
	char	   *sql;
	bool		isnull;

	types[0] = INT8OID;
	values[0] = Int64GetDatum(pid);
	sql = psprintf("SELECT n, hi, hi_split FROM %s WHERE keanon_pid = $1", w->parts);
	KeanonSpiRun(w->relid, sql, 1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		return false;
	n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (!partition_at_ending(w, v,
							 KeanonDatumToNum(vt, SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull)),
							 DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull)),
							 p) ||
		n - 1 != p->n)
		return false;

	/*
	 * A random slot showing the departing value swaps published values with
	 * the departing row, whose slot then goes: the departing value leaves
	 * the permutation with its row.
	 */
	{
		int32		s_slot = random_slot_showing(w, pid, n, slot, pub, vd);

		if (s_slot < 0)
			elog(ERROR, "keanon: partition %lld of %s does not publish the value of a departing row",
				 (long long) pid, get_rel_name(w->relid));
		if (s_slot != slot)
			set_published(w, pid, s_slot, pub);
	}
	if (slot != n - 1)
	{
		types[1] = INT4OID;
		types[2] = INT4OID;
		values[1] = Int32GetDatum((int32) (n - 1));
		values[2] = Int32GetDatum(slot);
		sql = psprintf("UPDATE %s SET keanon_slot = $3 WHERE keanon_pid = $1 AND keanon_slot = $2",
					   w->rows);
		KeanonSpiRun(w->relid, sql, 3, types, values, NULL, SPI_OK_UPDATE);
	}
	update_summary(w, pid, p->lo, true, vd, false, (Datum) 0);
	/* the partition no longer counts the departed row */
	if (w->gone != NULL)
		w->gone->valid = false;
	return true;
}

/*
 * The O(1) path for one row replaced by another in the same partition (an
 * UPDATE of the value, or of the key), the partition's bounds and size
 * unchanged: the newcomer takes the departing row's slot, and a slot drawn
 * at random among those showing the departing value shows the new one.  A
 * uniform permutation of the old values becomes one of the new values.
 */
static bool
replace_in_partition(Watch *w, KeNum del_v, Datum del_d, int64 pid, int32 slot,
					 Datum pub, KeNum ins_v, Datum ins_d)
{
	const KeanonValueType *vt = &w->ki->vt;
	KePartition part,
				dpart;
	Oid			types[4];
	Datum		values[4];
	char	   *sql;
	bool		isnull;
	int32		s_slot;

	if (!only_partition_at(w, ins_v, &part) || !only_partition_at(w, del_v, &dpart) ||
		!ke_num_eq(vt->kind, part.hi, dpart.hi) || part.hi_split != dpart.hi_split)
		return false;
	types[0] = INT8OID;
	values[0] = Int64GetDatum(pid);
	sql = psprintf("SELECT n, hi, hi_split FROM %s WHERE keanon_pid = $1", w->parts);
	KeanonSpiRun(w->relid, sql, 1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1 ||
		DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) != part.n ||
		!ke_num_eq(vt->kind, part.hi,
				   KeanonDatumToNum(vt, SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull))) ||
		DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull)) != part.hi_split)
		return false;

	/* a random slot showing the departing value shows the new value */
	s_slot = random_slot_showing(w, pid, part.n, slot, pub, del_d);
	if (s_slot < 0)
		elog(ERROR, "keanon: partition %lld of %s does not publish the value of a departing row",
			 (long long) pid, get_rel_name(w->relid));
	if (s_slot != slot)
		set_published(w, pid, s_slot, ins_d);
	place_fresh_row(w, pid, slot, s_slot == slot ? ins_d : pub);
	update_summary(w, pid, part.lo, true, del_d, true, ins_d);
	return true;
}

/*
 * Make the published view agree with the engine after a batch whose rows
 * had the (sorted) values cv.  The rows themselves moved even where the
 * engine saw no net change (a key updated, a value deleted and inserted
 * again), so the range to republish always covers them.
 */
static void
republish_changes(Watch *w, const KeNum *cv, int ncv, int nins, KeNum ins_v, Datum ins_d,
				  int ndel, KeNum del_v, Datum del_d, int64 del_pid, int32 del_slot,
				  Datum del_pub, bool del_had_pid)
{
	const KeChangeInfo *ci = ke_last_change(w->ki->engine);
	KeKind		kind = w->ki->vt.kind;
	KeNum		lo = cv[0],
				hi = cv[ncv - 1];
	KeNum		dummy;

	if (!ke_sum_error(w->ki->engine, &dummy))
	{
		suppress_all(w);
		return;
	}
	if (!ci->boundaries_changed && nins + ndel == 1)
	{
		if (nins == 1 && (join_partition(w, ins_v, ins_d) || split_join(w, ins_v, ins_d)))
			return;
		if (ndel == 1 && del_had_pid &&
			leave_partition(w, del_v, del_d, del_pid, del_slot, del_pub))
			return;
	}
	if (!ci->boundaries_changed && nins == 1 && ndel == 1 && del_had_pid)
	{
		if (replace_in_partition(w, del_v, del_d, del_pid, del_slot, del_pub, ins_v, ins_d))
			return;

		/*
		 * A row moving to another partition: it leaves one and joins the
		 * other.  Should the joining not be simple, the leaving has left a
		 * consistent state for the general path below.
		 */
		if (leave_partition(w, del_v, del_d, del_pid, del_slot, del_pub) &&
			(join_partition(w, ins_v, ins_d) || split_join(w, ins_v, ins_d)))
			return;
	}
	if (ci->any)
	{
		if (!ci->lo_unbounded && ke_num_cmp(kind, ci->lo, lo) < 0)
			lo = ci->lo;
		if (!ci->hi_unbounded && ke_num_cmp(kind, ci->hi, hi) > 0)
			hi = ci->hi;
	}
	reassign(w, ci->any && ci->lo_unbounded, lo, ci->any && ci->hi_unbounded, hi, cv, ncv);
}

/*
 * Record the counters of the watch, and bump its generation: a REPEATABLE
 * READ or SERIALIZABLE writer whose snapshot predates this transaction's
 * commit will see the change (KeanonCheckSnapshot).
 */
static void
save_watch(Watch *w)
{
	Oid			types[3] = {OIDOID, INT8OID, INT8OID};
	Datum		values[3];
	KeanonOwnerScope cat;

	values[0] = ObjectIdGetDatum(w->relid);
	values[1] = Int64GetDatum(w->next_pid);
	values[2] = Int64GetDatum(w->next_arrival);
	/* keanon's catalog is written by keanon's role alone */
	KeanonCatalogBegin(&cat);
	KeanonSpiRun(w->relid, "UPDATE keanon.watches SET generation = generation + 1, next_pid = $2, "
			"next_arrival = $3 WHERE relid = $1::oid::regclass",
			3, types, values, NULL, SPI_OK_UPDATE);
	KeanonOwnerEnd(&cat);
	if (SPI_processed != 1)
		elog(ERROR, "keanon: the watch of %s vanished", get_rel_name(w->relid));
}

/*
 * Under a transaction snapshot (REPEATABLE READ, SERIALIZABLE), refuse to go
 * on when another writer committed after the snapshot: this transaction
 * cannot see its rows, while the index already holds its values.  Call with
 * the keanon lock held.
 */
void
KeanonCheckSnapshot(Watch *w)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(w->relid)};
	const char *sel = "SELECT generation FROM keanon.watches WHERE relid = $1::oid::regclass";
	SPIPlanPtr	plan;
	int64		mine,
				latest;
	bool		isnull;

	if (!IsolationUsesXactSnapshot())
		return;
	if (SPI_execute_with_args(sel, 1, types, values, NULL, true, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "keanon: could not read the watch of %s", get_rel_name(w->relid));
	mine = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	plan = SPI_prepare(sel, 1, types);
	if (SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "keanon: could not read the watch of %s", get_rel_name(w->relid));
	latest = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freeplan(plan);
	if (latest != mine)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access to watched table %s",
						get_rel_name(w->relid)),
				 errdetail("Another transaction changed it after this transaction's snapshot was taken."),
				 errhint("Retry the transaction.")));
}

/*
 * Before a statement changes a watched table: take the keanon lock first,
 * so that every writer takes it before any row lock (see the lock order in
 * keanon_watch.h), and refuse a stale snapshot before any row changes.
 */
void
KeanonLockWatch(Oid relid)
{
	Watch		w;

	KeanonWatchLoad(relid, &w, false);
	KeanonIndexLockForWrite(w.index_oid);
	KeanonCheckSnapshot(&w);
}

/*
 * Take the watch for writing: the keanon lock (normally held already since
 * the statement began), then the watch's row, whose counters are read as
 * the last writer left them.
 */
static void
begin_write(Watch *w)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(w->relid)};
	bool		isnull;

	w->ki = KeanonIndexOpen(w->index_oid, true);
	KeanonCheckSnapshot(w);
	/*
	 * Under the lock, the last writer has committed: a READ COMMITTED query
	 * sees its counters, and a transaction snapshot does too once
	 * KeanonCheckSnapshot passed.
	 */
	KeanonSpiRun(w->relid, "SELECT next_pid, next_arrival FROM keanon.watches WHERE relid = $1::oid::regclass",
			1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		elog(ERROR, "keanon: the watch of %s vanished", get_rel_name(w->relid));
	w->next_pid = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	w->next_arrival = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
}

/* Order engine numbers (qsort_arg comparator; arg is the KeKind) */
static int
num_cmp_arg(const void *a, const void *b, void *arg)
{
	return ke_num_cmp(*(const KeKind *) arg, *(const KeNum *) a, *(const KeNum *) b);
}

/* Apply the batch of changes to the engine */
static void
apply_changes(Watch *w, KeChange *changes, int n)
{
	if (n > 0)
		KeanonIndexApply(w->ki, changes, n);
}

/* Collect the value column of a RETURNING result into changes */
static int
returned_changes(Watch *w, KeChange *changes, int at, int64 delta)
{
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);

		if (isnull)
			continue;
		changes[at].value = KeanonDatumToNum(&w->ki->vt, d);
		changes[at].delta = delta;
		at++;
	}
	return at;
}

/*
 * Read the values of the fresh rows of a source query (a subquery with the
 * watched table's columns and keanon_ordinal numbering the rows from 1),
 * and add them to the changes (grown as needed; *nchanges updated).
 */
static KeChange *
fresh_collect(Watch *w, FreshRows *f, const char *src, KeChange *changes, int *nchanges)
{
	const KeanonValueType *vt = &w->ki->vt;
	int16		typlen;
	bool		typbyval;
	int64		at = *nchanges;

	get_typlenbyval(vt->typid, &typlen, &typbyval);
	KeanonSpiRun(w->relid, psprintf("SELECT n.keanon_ordinal, n.%s FROM %s n", w->s, src),
			0, NULL, NULL, NULL, SPI_OK_SELECT);
	if (at + (int64) SPI_processed >= INT_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many rows changed in %s by one statement", get_rel_name(w->relid))));
	f->n = (int64) SPI_processed;
	f->arrival0 = w->next_arrival;
	f->placed = false;
	f->value = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(f->n, 1));
	f->num = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(KeNum) * Max(f->n, 1));
	f->pid = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(f->n, 1));
	f->slot = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(f->n, 1));
	f->pub = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(f->n, 1));
	changes = changes ? repalloc_huge(changes, sizeof(KeChange) * (at + f->n + 1))
		: MemoryContextAllocHuge(CurrentMemoryContext, sizeof(KeChange) * (f->n + 1));
	for (int64 r = 0; r < f->n; r++)
	{
		bool		isnull;
		int64		i = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc,
													1, &isnull)) - 1;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull);

		if (i < 0 || i >= f->n)
			elog(ERROR, "keanon: new row %lld of %s out of range", (long long) i + 1,
				 get_rel_name(w->relid));
		f->value[i] = datumCopy(d, typbyval, typlen);
		f->num[i] = KeanonDatumToNum(vt, f->value[i]);
		changes[at + i].value = f->num[i];
		changes[at + i].delta = 1;
	}
	SPI_freetuptable(SPI_tuptable);
	w->next_arrival += f->n;
	w->fresh = f;
	*nchanges = (int) (at + f->n);
	return changes;
}

/*
 * A uniformly random order of n rows: an int8[] whose element i (from 1)
 * is row i's rank.  The rows a statement adds are written in this order,
 * so that where a row lands in the rows table, hence where the view
 * returns it, says nothing about its value, whatever order the statement
 * or the watched table had (a table loaded in value order, say).
 */
static Datum
shuffled_ordinals(int64 n)
{
	Datum	   *rank = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * Max(n, 1));

	for (int64 i = 0; i < n; i++)
		rank[i] = Int64GetDatum(i);
	for (int64 i = n - 1; i > 0; i--)
	{
		int64		r = (int64) random_below((uint64) i + 1);
		Datum		t = rank[i];

		rank[i] = rank[r];
		rank[r] = t;
	}
	return PointerGetDatum(construct_array(rank, (int) n, INT8OID, 8, FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

/*
 * Write the fresh rows of the source query into the rows table, placed
 * when republication placed them (it places all or none).
 */
static void
fresh_write(Watch *w, const char *src)
{
	FreshRows  *f = w->fresh;
	const KeanonValueType *vt = &w->ki->vt;
	List	   *all = union_names(union_names(w->keys, w->qis), list_make1(w->s));
	Oid			types[5] = {INT8OID, INT8ARRAYOID, INT4ARRAYOID, get_array_type(vt->typid),
	INT8ARRAYOID};
	Datum		values[5];
	char	   *sql;

	if (f == NULL || f->n == 0)
		return;
	values[0] = Int64GetDatum(f->arrival0);
	values[4] = f->n > 1 || !f->placed ? shuffled_ordinals(f->n) : (Datum) 0;
	if (f->placed)
	{
		int16		typlen;
		bool		typbyval;
		char		typalign;

		get_typlenbyvalalign(vt->typid, &typlen, &typbyval, &typalign);
		if (f->n == 1)
		{
			/* the common single row, without a join */
			types[1] = INT8OID;
			types[2] = INT4OID;
			types[3] = vt->typid;
			values[1] = f->pid[0];
			values[2] = f->slot[0];
			values[3] = f->pub[0];
			sql = psprintf("INSERT INTO %s (%s, keanon_arrival, keanon_pid, keanon_slot, keanon_pub) "
						   "SELECT %s, $1 + n.keanon_ordinal, $2, $3, $4 FROM %s n",
						   w->rows, name_list(all, ""), name_list(all, "n."), src);
			KeanonSpiRun(w->relid, sql, 4, types, values, NULL, SPI_OK_INSERT);
		}
		else
		{
			SPIPlanPtr	plan;

			values[1] = PointerGetDatum(construct_array(f->pid, (int) f->n, INT8OID, 8,
														FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
			values[2] = PointerGetDatum(construct_array(f->slot, (int) f->n, INT4OID, 4, true,
														TYPALIGN_INT));
			values[3] = PointerGetDatum(construct_array(f->pub, (int) f->n, vt->typid, typlen,
														typbyval, typalign));
			/* subscripts are O(1) into arrays of fixed-width values */
			if (typlen > 0)
				sql = psprintf("INSERT INTO %s (%s, keanon_arrival, keanon_pid, keanon_slot, keanon_pub) "
							   "SELECT %s, $1 + n.keanon_ordinal, ($2)[n.keanon_ordinal], "
							   "($3)[n.keanon_ordinal], ($4)[n.keanon_ordinal] FROM %s n "
							   "ORDER BY ($5)[n.keanon_ordinal]",
							   w->rows, name_list(all, ""), name_list(all, "n."), src);
			else
				sql = psprintf("INSERT INTO %s (%s, keanon_arrival, keanon_pid, keanon_slot, keanon_pub) "
							   "SELECT %s, $1 + n.keanon_ordinal, u.p, u.s, u.v FROM %s n "
							   "JOIN unnest($2, $3, $4) WITH ORDINALITY AS u(p, s, v, o) "
							   "ON u.o = n.keanon_ordinal ORDER BY ($5)[n.keanon_ordinal]",
							   w->rows, name_list(all, ""), name_list(all, "n."), src);
			/* a hash join for many rows: planned for the arrays at hand */
			plan = KeanonPlan(w->relid, sql, 5, types, true);
			if (SPI_execute_plan(plan, values, NULL, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "keanon: could not write the new rows of %s", get_rel_name(w->relid));
		}
	}
	else
	{
		types[1] = INT8ARRAYOID;
		values[1] = values[4];
		sql = psprintf("INSERT INTO %s (%s, keanon_arrival) SELECT %s, $1 + n.keanon_ordinal "
					   "FROM %s n ORDER BY ($2)[n.keanon_ordinal]",
					   w->rows, name_list(all, ""), name_list(all, "n."), src);
		KeanonSpiRun(w->relid, sql, 2, types, values, NULL, SPI_OK_INSERT);
	}
	if ((int64) SPI_processed != f->n)
		elog(ERROR, "keanon: wrote %lld new rows of %s, expected %lld",
			 (long long) SPI_processed, get_rel_name(w->relid), (long long) f->n);
	w->fresh = NULL;
}

/*
 * The fresh rows into an empty index and table: the tree is laid out in one
 * pass, as CREATE INDEX would, and every partition drawn afresh.
 */
static void
publish_into_empty(Watch *w)
{
	FreshRows  *f = w->fresh;
	KeNum	   *sorted = MemoryContextAllocHuge(CurrentMemoryContext,
												sizeof(KeNum) * Max(f->n, 1));
	KeNum		dummy;

	memcpy(sorted, f->num, sizeof(KeNum) * f->n);
	qsort_arg(sorted, f->n, sizeof(KeNum), num_cmp_arg, &w->ki->vt.kind);
	KeanonIndexBuildSorted(w->ki, sorted, (size_t) f->n);
	pfree(sorted);
	if (f->n == 0 || w->release_mode)
		return;
	if (!ke_sum_error(w->ki->engine, &dummy))
		suppress_all(w);
	else
		reassign(w, true, dummy, true, dummy, NULL, 0);
}

/* Maintenance for one statement on a watched table (SPI connected) */
void
KeanonMaintain(TriggerData *trigdata)
{
	Watch		w;
	TriggerEvent ev = trigdata->tg_event;
	char	   *sql;
	KeChange   *changes = NULL;
	int			nchanges = 0;
	int			nins = 0,
				ndel = 0;
	KeNum		ins_v = {0},
				del_v = {0};
	Datum		ins_d = 0,
				del_d = 0,
				del_pub = 0;
	int64		del_pid = 0;
	int32		del_slot = 0;
	bool		del_had_pid = false;
	FreshRows	fresh = {0};
	GoneRow		gone = {0};
	KeNum		dummy;
	char	   *src = NULL;
	int16		typlen;
	bool		typbyval;

	KeanonWatchLoad(RelationGetRelid(trigdata->tg_relation), &w, false);
	begin_write(&w);
	get_typlenbyval(w.ki->vt.typid, &typlen, &typbyval);
	if (SPI_register_trigger_data(trigdata) != SPI_OK_TD_REGISTER)
		elog(ERROR, "keanon: could not register transition tables");

	if (TRIGGER_FIRED_BY_TRUNCATE(ev))
	{
		sql = psprintf("DELETE FROM %s RETURNING %s", w.rows, w.s);
		KeanonSpiRun(w.relid, sql, 0, NULL, NULL, NULL, SPI_OK_DELETE_RETURNING);
		changes = palloc(sizeof(KeChange) * Max(SPI_processed, 1));
		nchanges = returned_changes(&w, changes, 0, -1);
		ndel = nchanges;
		apply_changes(&w, changes, nchanges);
		if (!w.release_mode)
			KeanonSpiRun(w.relid, psprintf("DELETE FROM %s", w.parts), 0, NULL, NULL, NULL, SPI_OK_DELETE);
		save_watch(&w);
		KeanonIndexClose(w.ki);
		return;
	}

	changes = NULL;
	if (TRIGGER_FIRED_BY_DELETE(ev) || TRIGGER_FIRED_BY_UPDATE(ev))
	{
		if (TRIGGER_FIRED_BY_DELETE(ev))
			sql = psprintf("DELETE FROM %s r USING keanon_old o WHERE (%s) = (%s) "
						   "RETURNING r.%s, r.keanon_pid, r.keanon_slot, r.keanon_pub",
						   w.rows, name_list(w.keys, "r."), name_list(w.keys, "o."), w.s);
		else
			sql = psprintf("DELETE FROM %s r USING keanon_old o WHERE (%s) = (%s) "
						   "AND NOT EXISTS (SELECT 1 FROM keanon_new n WHERE (%s) = (%s) "
						   "AND n.%s IS NOT DISTINCT FROM o.%s) "
						   "RETURNING r.%s, r.keanon_pid, r.keanon_slot, r.keanon_pub",
						   w.rows, name_list(w.keys, "r."), name_list(w.keys, "o."),
						   name_list(w.keys, "n."), name_list(w.keys, "o."), w.s, w.s, w.s);
		KeanonSpiRun(w.relid, sql, 0, NULL, NULL, NULL, SPI_OK_DELETE_RETURNING);
		changes = palloc(sizeof(KeChange) * (SPI_processed + 1));
		nchanges = returned_changes(&w, changes, 0, -1);
		ndel = nchanges;
		if (ndel == 1)
		{
			HeapTuple	t = SPI_tuptable->vals[0];
			TupleDesc	d = SPI_tuptable->tupdesc;
			bool		isnull;

			del_v = changes[0].value;
			del_d = datumCopy(SPI_getbinval(t, d, 1, &isnull), typbyval, typlen);
			del_pid = DatumGetInt64(SPI_getbinval(t, d, 2, &isnull));
			del_had_pid = !isnull;
			del_slot = DatumGetInt32(SPI_getbinval(t, d, 3, &isnull));
			del_pub = SPI_getbinval(t, d, 4, &isnull);
			if (isnull)
				del_had_pid = false;
			else
				del_pub = datumCopy(del_pub, typbyval, typlen);
			if (del_had_pid)
			{
				gone.valid = true;
				gone.pid = del_pid;
				gone.slot = del_slot;
				gone.pub = del_pub;
				gone.num = del_v;
				w.gone = &gone;
			}
		}
	}
	if (TRIGGER_FIRED_BY_INSERT(ev) || TRIGGER_FIRED_BY_UPDATE(ev))
	{
		/* an UPDATE's rows that kept their key and value stay as they are */
		src = psprintf("(SELECT n.*, row_number() OVER () AS keanon_ordinal FROM keanon_new n "
					   "WHERE n.%s IS NOT NULL%s)", w.s,
					   TRIGGER_FIRED_BY_UPDATE(ev)
					   ? psprintf(" AND NOT EXISTS (SELECT 1 FROM %s x WHERE (%s) = (%s))",
								  w.rows, name_list(w.keys, "x."), name_list(w.keys, "n."))
					   : "");
		changes = fresh_collect(&w, &fresh, src, changes, &nchanges);
		nins = (int) Min(fresh.n, INT_MAX);
		if (nins == 1)
		{
			ins_v = fresh.num[0];
			ins_d = fresh.value[0];
		}
	}
	if (TRIGGER_FIRED_BY_UPDATE(ev) && w.qis != NIL)
	{
		sql = psprintf("UPDATE %s r SET (%s) = ROW(%s) FROM keanon_new n WHERE (%s) = (%s) "
					   "AND (%s) IS DISTINCT FROM (%s)",
					   w.rows, name_list(w.qis, ""), name_list(w.qis, "n."),
					   name_list(w.keys, "r."), name_list(w.keys, "n."),
					   name_list(w.qis, "r."), name_list(w.qis, "n."));
		KeanonSpiRun(w.relid, sql, 0, NULL, NULL, NULL, SPI_OK_UPDATE);
	}

	/*
	 * Rows of the table wait unplaced only while no valid partitioning
	 * exists (and in release mode): with one, none but the fresh do.
	 */
	w.all_placed = !w.release_mode && w.ki->engine != NULL && ke_sum_error(w.ki->engine, &dummy);
	if (ndel == 0 && nins > 1 && ke_nrows(w.ki->engine) == 0)
	{
		/* a load into an empty table, as when a watch begins */
		publish_into_empty(&w);
	}
	else
	{
		apply_changes(&w, changes, nchanges);
		/* a release watch only tracks changes: its view moves at keanon.release */
		if (nchanges > 0 && !w.release_mode)
		{
			/* the changed values, sorted */
			KeNum	   *cv = palloc(sizeof(KeNum) * nchanges);

			for (int i = 0; i < nchanges; i++)
				cv[i] = changes[i].value;
			qsort_arg(cv, nchanges, sizeof(KeNum), num_cmp_arg, &w.ki->vt.kind);
			republish_changes(&w, cv, nchanges, nins, ins_v, ins_d, ndel, del_v, del_d,
							  del_pid, del_slot, del_pub, del_had_pid);
		}
	}
	if (src != NULL)
		fresh_write(&w, src);
	save_watch(&w);
	KeanonIndexClose(w.ki);
}

/* Assign every row anew; returns the rows published (SPI connected) */
int64
KeanonRepublish(Oid relid)
{
	Watch		w;
	KeNum		dummy;
	int64		published = 0;

	KeanonWatchLoad(relid, &w, false);
	if (w.release_mode)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is watched in release mode", get_rel_name(relid)),
				 errhint("Publish with keanon.release().")));
	begin_write(&w);
	if (!ke_sum_error(w.ki->engine, &dummy))
		suppress_all(&w);
	else
	{
		reassign(&w, true, dummy, true, dummy, NULL, 0);
		published = ke_nrows(w.ki->engine);
	}
	save_watch(&w);
	KeanonIndexClose(w.ki);
	return published;
}

/*
 * Fill the empty rows table of a new watch from the watched table, each
 * row written once and, in live mode, already placed; arrival follows the
 * table's physical order.  Returns the rows written (SPI connected).
 */
int64
KeanonFill(Oid relid)
{
	Watch		w;
	FreshRows	fresh = {0};
	KeChange   *changes;
	int			nchanges = 0;
	char	   *src;

	KeanonWatchLoad(relid, &w, false);
	begin_write(&w);
	KeanonSpiRun(w.relid, psprintf("SELECT 1 FROM %s LIMIT 1", w.rows), 0, NULL, NULL, NULL, SPI_OK_SELECT);
	if (SPI_processed != 0 || (w.ki->engine != NULL && ke_nrows(w.ki->engine) != 0))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the watch of %s is already filled", get_rel_name(relid))));
	/*
	 * Arrival follows the table's physical order, read twice (for the
	 * values, then to write the rows) by plain sequential scans that
	 * keanon.watch keeps from starting mid-table (synchronize_seqscans).
	 */
	src = psprintf("(SELECT t.*, row_number() OVER () AS keanon_ordinal "
				   "FROM %s t WHERE t.%s IS NOT NULL)",
				   KeanonQualifiedName(relid), w.s);
	changes = fresh_collect(&w, &fresh, src, NULL, &nchanges);
	pfree(changes);
	publish_into_empty(&w);
	fresh_write(&w, src);
	save_watch(&w);
	KeanonIndexClose(w.ki);
	return fresh.n;
}

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

/* An engine number from its text (as ke_num_format writes it) */
KeNum
KeanonNumFromText(const KeanonValueType *vt, const char *text)
{
	if (vt->kind == KE_KIND_FLOAT)
		return ke_num_float(strtod(text, NULL));
	else
	{
		ke_int128	v = 0;
		bool		neg = *text == '-';

		for (const char *c = neg ? text + 1 : text; *c; c++)
			v = v * 10 + (*c - '0');
		return (KeNum) {.i = neg ? -v : v};
	}
}

typedef struct RunArrays
{
	KeNum	   *vals;
	int64	   *counts;
	size_t		m;
	size_t		cap;
} RunArrays;

/* Collect runs into arrays (a KeRunFn) */
static bool
collect_run_arrays(const KeRunInfo *r, void *arg)
{
	RunArrays  *ra = arg;

	if (ra->m == ra->cap)
	{
		ra->cap = ra->cap * 2 + 64;
		ra->vals = ra->vals ? repalloc_huge(ra->vals, sizeof(KeNum) * ra->cap)
			: palloc(sizeof(KeNum) * ra->cap);
		ra->counts = ra->counts ? repalloc_huge(ra->counts, sizeof(int64) * ra->cap)
			: palloc(sizeof(int64) * ra->cap);
	}
	ra->vals[ra->m] = r->value;
	ra->counts[ra->m] = r->count;
	ra->m++;
	return true;
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
	RunArrays	ra = {0};
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
	begin_write(&w);
	vt = &w.ki->vt;

	/* the current runs, and the previous release's partitions */
	if (w.ki->engine != NULL)
		ke_foreach_run(w.ki->engine, collect_run_arrays, &ra);
	if (ra.m == 0 || w.ki->engine == NULL || !ke_sum_error(w.ki->engine, &unconstrained))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no valid (k,e)-partitioning of %s exists: nothing to release",
						get_rel_name(relid)),
				 errdetail("It has %zu distinct sensitive values; k = %d.", ra.m, w.k)));
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
	cut_after = palloc(sizeof(bool) * ra.m);
	cut_in = palloc(sizeof(bool) * ra.m);
	E = palloc(sizeof(KeNum) * ra.m);
	best = palloc(sizeof(KeNum) * ra.m);
	argmin = palloc(sizeof(KeNum) * ra.m);
	frontier = palloc(sizeof(int64) * ra.m);
	argmin_last = palloc(sizeof(int) * ra.m);
	end = palloc(sizeof(int) * ra.m);
	ke_release_cuts(vt->kind, ra.vals, ra.m, olo, ohi, nold, cut_after, cut_in);
	ke_constrained_dp(vt->kind, w.k, w.ki->engine ? ke_e(w.ki->engine) : ke_num_zero(vt->kind),
					  ra.vals, ra.counts, ra.m, cut_after, cut_in,
					  E, best, argmin, argmin_last, (int64_t *) frontier, end);
	if (ke_num_is_inf(vt->kind, E[ra.m - 1]))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no release of %s can respect its previous release", get_rel_name(relid)),
				 errdetail("Every (k,e)-partitioning of the current rows would split a partition of the previous release."),
				 errhint("Wait for more rows, or unwatch and watch the table again to start a new series of releases.")));
	KeanonPartitionsFromFlags(vt->kind, ra.vals, ra.counts, ra.m, end, &np);

	/* every row, in (value, arrival) order, goes to its partition */
	sql = psprintf("SELECT ctid, %s FROM %s ORDER BY %s, keanon_arrival", w.s, w.rows, w.s);
	KeanonSpiRun(w.relid, sql, 0, NULL, NULL, NULL, SPI_OK_SELECT);
	rows = fetched_rows(vt, &nrows);
	for (int i = 0; i < np.n; i++)
		want += np.parts[i].n;
	if (want != nrows)
		elog(ERROR, "keanon: the release of %s holds %lld rows, the table %lld",
			 get_rel_name(relid), (long long) want, (long long) nrows);
	KeanonSpiRun(w.relid, psprintf("DELETE FROM %s", w.parts), 0, NULL, NULL, NULL, SPI_OK_DELETE);
	place_rows(&w, &np, rows, nrows, NULL);

	/* the release: its rows as they are now, and its record */
	KeanonSpiRun(w.relid, psprintf("DELETE FROM %s", w.release), 0, NULL, NULL, NULL, SPI_OK_DELETE);
	/* slots are a random order within each partition (see place_rows) */
	KeanonSpiRun(w.relid, psprintf("INSERT INTO %s SELECT %s, %s, keanon_pub, keanon_pid FROM %s "
								   "ORDER BY keanon_pid, keanon_slot",
								   w.release, name_list(w.qis, ""), w.s, w.rows),
			0, NULL, NULL, NULL, SPI_OK_INSERT);
	lo_text = palloc(sizeof(Datum) * np.n);
	hi_text = palloc(sizeof(Datum) * np.n);
	for (int i = 0; i < np.n; i++)
	{
		lo_text[i] = CStringGetTextDatum(ke_num_format(vt->kind, np.parts[i].lo, buf, sizeof(buf)));
		hi_text[i] = CStringGetTextDatum(ke_num_format(vt->kind, np.parts[i].hi, buf, sizeof(buf)));
	}
	{
		Oid			types[8] = {OIDOID, INT8OID, INT8OID, NUMERICOID, NUMERICOID,
		TEXTARRAYOID, TEXTARRAYOID, INT8OID};
		Datum		values[8];
		KeanonOwnerScope cat;

		values[0] = ObjectIdGetDatum(relid);
		values[1] = Int64GetDatum(nrows);
		values[2] = Int64GetDatum(np.n);
		values[3] = KeanonNumToNumeric(vt, E[ra.m - 1]);
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
	save_watch(&w);
	KeanonIndexClose(w.ki);
	return release_no;
}

/*
 * reassign.c
 *		Reassigning the rows of the partitions a change moved: carry-over
 *		of old partitions to new ones, and fresh draws.
 *
 * When a change moves partition bounds, the engine reports the value range
 * whose partitions may differ.  The range grows until its old and new
 * partitions cover the same rows; the rows there are read in (value,
 * arrival) order (the order that decides a split run), merged with the
 * statement's fresh rows, and handed to the new partitions in order.  Each
 * new partition takes over the old partition that shares most of its rows:
 * the rows that no longer belong leave and the newcomers join by the steps
 * of permute.c, so only the rows those steps touch are written and the
 * permutation stays uniform.  A new partition with nothing to carry over
 * draws its published values and its slots afresh, independently.  Rows
 * that move are rewritten in (partition, slot) order, as fresh rows are
 * written (maintain.c): where a row sits in the rows table tells its
 * partition and its slot, a uniformly random order drawn independently of
 * the values, never its value.
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
PlacedRow *
KeanonFetchedRows(const KeanonValueType *vt, int64 *nrows)
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
		rows[i].arrival = 0;
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
		/* in (value, arrival) order already when a sort gave it */
		int64		x = f->order != NULL ? f->order[r] : r;

		ItemPointerSetInvalid(&fr[r].tid);
		fr[r].value = f->value[x];
		fr[r].num = f->num[x];
		fr[r].fresh = x;
		fr[r].arrival = f->arrival0 + x + 1;
		fr[r].pid = 0;
		fr[r].slot = -1;
		fr[r].pub = (Datum) 0;
	}
	if (f->order == NULL)
		qsort_arg(fr, f->n, sizeof(PlacedRow), KeanonValueArrivalCmp, &kind);
	if (*nrows == 0)
	{
		/* nothing to merge with (a fill, a load into an empty table) */
		pfree(rows);
		*nrows = f->n;
		return fr;
	}
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

/*
 * Order records by partition id, their first member (OldPartSort, GoneRow:
 * a qsort comparator)
 */
static int
pid_first_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	StaticAssertStmt(offsetof(OldPartSort, pid) == 0 && offsetof(GoneRow, pid) == 0,
					 "the partition id must come first");
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

/*
 * Which slots [0, cur) of a partition being carried over show each value,
 * for drawing one at random.  A small partition is scanned; a larger one
 * keeps, per value, the list of its slots (and each slot's place in its
 * list), so that each of many rows leaving costs O(1), not O(n).
 */
#define SHOWING_SCAN_MAX	256

typedef struct ShowEntry
{
	KeNum		key;
	int32		n;
	int32		cap;
	int32	   *slots;
} ShowEntry;

typedef struct Showing
{
	MemoryContext cxt;			/* the map's, or NULL */
	KeKind		kind;
	KeNum	   *pnum;			/* each slot's published value */
	HTAB	   *map;			/* NULL: scan pnum */
	int32	   *pos;			/* a slot's place in its value's list */
} Showing;

static KeNum
show_key(KeKind kind, KeNum v)
{
	KeNum		k;

	memset(&k, 0, sizeof(k));
	if (kind == KE_KIND_FLOAT)
		k.f = v.f == 0 ? 0.0 : v.f;		/* -0 and 0 are one value */
	else
		k.i = v.i;
	return k;
}

static void
show_add(Showing *sh, KeNum v, int64 s)
{
	KeNum		key = show_key(sh->kind, v);
	bool		found;
	ShowEntry  *e = hash_search(sh->map, &key, HASH_ENTER, &found);

	if (!found)
	{
		e->n = 0;
		e->cap = 4;
		e->slots = MemoryContextAlloc(sh->cxt, sizeof(int32) * e->cap);
	}
	else if (e->n == e->cap)
	{
		e->cap *= 2;
		e->slots = repalloc(e->slots, sizeof(int32) * e->cap);
	}
	sh->pos[s] = e->n;
	e->slots[e->n++] = (int32) s;
}

static void
show_remove(Showing *sh, KeNum v, int64 s)
{
	KeNum		key = show_key(sh->kind, v);
	ShowEntry  *e = hash_search(sh->map, &key, HASH_FIND, NULL);
	int32		moved;

	Assert(e != NULL && e->n > 0 && e->slots[sh->pos[s]] == s);
	moved = e->slots[--e->n];
	e->slots[sh->pos[s]] = moved;
	sh->pos[moved] = sh->pos[s];
}

static void
showing_init(Showing *sh, KeKind kind, KeNum *pnum, int64 size)
{
	sh->kind = kind;
	sh->pnum = pnum;
	sh->map = NULL;
	sh->pos = NULL;
	sh->cxt = NULL;
	if (size > SHOWING_SCAN_MAX)
	{
		HASHCTL		ctl;

		sh->cxt = AllocSetContextCreate(CurrentMemoryContext, "keanon carry-over",
										ALLOCSET_DEFAULT_SIZES);
		ctl.keysize = sizeof(KeNum);
		ctl.entrysize = sizeof(ShowEntry);
		ctl.hcxt = sh->cxt;
		sh->map = hash_create("keanon carry-over", 256, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		sh->pos = MemoryContextAllocHuge(sh->cxt, sizeof(int32) * size);
		for (int64 s = 0; s < size; s++)
			show_add(sh, pnum[s], s);
	}
}

/*
 * A slot drawn uniformly among slots [0, cur) whose value is t, or -1.
 * Drawing among equal values, not taking the first, keeps the published
 * values uniform.
 */
static int64
showing_pick(Showing *sh, int64 cur, KeNum t)
{
	int64		c = 0,
				pick;

	if (sh->map != NULL)
	{
		KeNum		key = show_key(sh->kind, t);
		ShowEntry  *e = hash_search(sh->map, &key, HASH_FIND, NULL);

		if (e == NULL || e->n == 0)
			return -1;
		return e->slots[KeanonRandomBelow((uint64) e->n)];
	}
	for (int64 s = 0; s < cur; s++)
		if (ke_num_eq(sh->kind, sh->pnum[s], t))
			c++;
	if (c == 0)
		return -1;
	pick = (int64) KeanonRandomBelow((uint64) c);
	for (int64 s = 0; s < cur; s++)
		if (ke_num_eq(sh->kind, sh->pnum[s], t) && pick-- == 0)
			return s;
	return -1;
}

/* Slot s now shows v */
static void
showing_set(Showing *sh, int64 s, KeNum v)
{
	if (sh->map != NULL)
	{
		show_remove(sh, sh->pnum[s], s);
		show_add(sh, v, s);
	}
	sh->pnum[s] = v;
}

/* Slot s, the last, leaves the range */
static void
showing_drop(Showing *sh, int64 s)
{
	if (sh->map != NULL)
		show_remove(sh, sh->pnum[s], s);
}

static void
showing_done(Showing *sh)
{
	if (sh->cxt != NULL)
		MemoryContextDelete(sh->cxt);
}

/*
 * In carry_over, a row of the old partition is r >= 0 (rows[r]) or the
 * departed row g of those gone from it, GONE(g)
 */
#define GONE(g)		(-3 - (int64) (g))
#define GONE_INDEX(r)	((int) (-3 - (r)))

/* The true value of a leaver of old partition k, its departed rows from g0 */
static KeNum
leaver_num(const OldParts *op, int g0, const PlacedRow *rows, int64 r)
{
	return r < 0 ? op->gone[g0 + GONE_INDEX(r)].num : rows[r].num;
}

/* The slot a leaver of old partition k sits at now */
static int64
slot_of_leaver(const OldParts *op, int k, int64 r, const int64 *slot_of, const int64 *gone_slot)
{
	return r < 0 ? gone_slot[GONE_INDEX(r)] : slot_of[r - op->first[k]];
}

/* The departed rows of partition pid: their number, the first at *first */
static int
gone_of(const OldParts *op, int64 pid, int *first)
{
	int			lo = 0,
				hi = op->ngone;
	int			n = 0;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (op->gone[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	while (lo + n < op->ngone && op->gone[lo + n].pid == pid)
		n++;
	return n;
}

/*
 * Carry the old partition that shares most rows with the new partition of
 * rows[pos .. pos+n) over to it by permute.c's steps: a row that no longer
 * belongs there and one that newly does, paired at random, make a replace
 * step (the newcomer takes the leaver's slot and published value); the
 * leavers left over leave one by one, each handing its published value to
 * a row drawn at random among those showing its true value (the last slot
 * filling the gap), and the joiners left over join by the inside-out
 * shuffle.  Each step keeps the published values a uniform permutation of
 * the true ones, as a fresh draw would, while only the rows the steps
 * touch change; a replace touches at most one row besides the newcomer,
 * where a leave and a join touch up to four.  Returns
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
				span;
	int64	   *st_row;
	Datum	   *st_pub;
	KeNum	   *st_pnum;
	int64	   *slot_of;
	int64	   *gone_slot;
	Showing		sh;
	int			g0,
				ng;
	int64		pid;
	int64	   *lv;
	int64	   *jn;
	int64		nl = 0,
				nj = 0,
				npair;

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
	ng = gone_of(op, pid, &g0);

	/* its state before: slot -> row (or departed row), published value */
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
	gone_slot = palloc(sizeof(int64) * Max(ng, 1));
	for (int g = 0; g < ng; g++)
	{
		const GoneRow *gr = &op->gone[g0 + g];

		if (gr->slot < 0 || gr->slot >= size || st_row[gr->slot] != -2)
			return 0;
		gone_slot[g] = gr->slot;
		st_row[gr->slot] = GONE(g);
		st_pub[gr->slot] = gr->pub;
		st_pnum[gr->slot] = KeanonDatumToNum(vt, gr->pub);
	}
	for (int64 s = 0; s < size; s++)
		if (st_row[s] == -2)
			return 0;

	/*
	 * Who leaves (the departed rows first) and who joins.  As many leavers as
	 * there are joiners, drawn at random, are each replaced by a joiner
	 * drawn at random; the matching uses neither row's value.
	 */
	lv = palloc(sizeof(int64) * (span + ng + 1));
	jn = palloc(sizeof(int64) * (n + 1));
	for (int g = 0; g < ng; g++)
		lv[nl++] = GONE(g);
	for (int64 r = op->first[k]; r <= op->last[k]; r++)
		if (rows[r].fresh < 0 && rows[r].pid == pid && (r < pos || r >= pos + n))
			lv[nl++] = r;
	for (int64 j = pos; j < pos + n; j++)
		if (rows[j].fresh >= 0 || rows[j].pid != pid)
			jn[nj++] = j;
	npair = Min(nl, nj);
	for (int64 i = 0; i < npair; i++)
	{
		int64		x = i + (int64) KeanonRandomBelow((uint64) (nl - i));
		int64		t = lv[i];

		lv[i] = lv[x];
		lv[x] = t;
		x = i + (int64) KeanonRandomBelow((uint64) (nj - i));
		t = jn[i];
		jn[i] = jn[x];
		jn[x] = t;
	}

	/*
	 * The unmatched leavers leave: a row drawn among those showing the
	 * leaver's true value takes over its published value, and the last
	 * slot's row moves into the gap
	 */
	cur = size;
	showing_init(&sh, kind, st_pnum, size);
	for (int64 i = npair; i < nl; i++)
	{
		int64		sl = slot_of_leaver(op, k, lv[i], slot_of, gone_slot);
		int64		pick = showing_pick(&sh, cur, leaver_num(op, g0, rows, lv[i]));
		int64		last = cur - 1;

		if (pick < 0)
		{
			showing_done(&sh);
			return 0;
		}
		if (pick != sl)
		{
			st_pub[pick] = st_pub[sl];
			showing_set(&sh, pick, st_pnum[sl]);
		}
		if (sl != last)
		{
			st_row[sl] = st_row[last];
			st_pub[sl] = st_pub[last];
			showing_set(&sh, sl, st_pnum[last]);
			if (st_row[sl] >= 0)
				slot_of[st_row[sl] - op->first[k]] = sl;
			else
				gone_slot[GONE_INDEX(st_row[sl])] = sl;
		}
		showing_drop(&sh, last);
		cur--;
	}

	/*
	 * Each matched leaver is replaced (permute.c's replace step): its
	 * joiner takes its slot and its published value, and a row drawn among
	 * those showing the leaver's true value shows the joiner's instead.  No
	 * other row moves.
	 */
	for (int64 i = 0; i < npair; i++)
	{
		int64		sl = slot_of_leaver(op, k, lv[i], slot_of, gone_slot);
		int64		pick = showing_pick(&sh, cur, leaver_num(op, g0, rows, lv[i]));

		if (pick < 0)
		{
			showing_done(&sh);
			return 0;
		}
		st_row[sl] = jn[i];
		st_pub[pick] = rows[jn[i]].value;
		showing_set(&sh, pick, rows[jn[i]].num);
	}
	showing_done(&sh);

	/* the other joiners join by the inside-out shuffle */
	for (int64 i = npair; i < nj; i++)
	{
		int64		j = jn[i];
		uint64		x;

		x = KeanonRandomBelow((uint64) cur + 1);
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
		x = KeanonRandomBelow((uint64) cur + 1);
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
	pfree(lv);
	pfree(jn);
	pfree(gone_slot);
	pfree(st_row);
	pfree(st_pub);
	pfree(st_pnum);
	pfree(slot_of);
	return pid;
}

/* A row's new place, to be written by KeanonPlaceRows */
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
	const UpdateRow *x = a;
	const UpdateRow *y = b;
	int64		xp = DatumGetInt64(x->pid);
	int64		yp = DatumGetInt64(y->pid);

	if (xp != yp)
		return xp < yp ? -1 : 1;
	return DatumGetInt32(x->slot) - DatumGetInt32(y->slot);
}

/*
 * Give the rows, in (value, arrival) order, to the partitions in order,
 * draw a uniform permutation of each, and write them and the partitions'
 * summaries.
 */
void
KeanonPlaceRows(Watch *w, KeanonPartList *pl, PlacedRow *rows, int64 nrows, OldParts *op)
{
	const KeanonValueType *vt = &w->ki->vt;
	KeanonPartList np = *pl;
	int64		pos = 0;

	/*
	 * Place and permute every partition and write its summary, then move
	 * the rows whose place changed, all without the executor (direct.c).
	 */
	{
		Datum	   *tids = palloc(sizeof(Datum) * Max(nrows, 1));
		Datum	   *rpids = palloc(sizeof(Datum) * Max(nrows, 1));
		Datum	   *slots = palloc(sizeof(Datum) * Max(nrows, 1));
		Datum	   *pubs = palloc(sizeof(Datum) * Max(nrows, 1));
		Datum	   *fvals = palloc(sizeof(Datum) * Max(nrows, 1));
		Datum	   *fcnts = palloc(sizeof(Datum) * Max(nrows, 1));
		Datum	   *upubs = palloc(sizeof(Datum) * Max(nrows, 1));
		int32	   *cslots = palloc(sizeof(int32) * Max(nrows, 1));
		int64		nflat = 0;
		int64		nupd = 0;
		int64		nfresh = 0;
		FreshRows  *f = w->fresh;

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
					int64		r = (int64) KeanonRandomBelow((uint64) j + 1);
					Datum		tmp = pubs[pos + j];
					int32		ts;

					pubs[pos + j] = pubs[pos + r];
					pubs[pos + r] = tmp;
					r = (int64) KeanonRandomBelow((uint64) j + 1);
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
			/* where the one row of its lowest value sits (see split_join) */
			KeanonPartInsert(w, pid, p, n, fvals + first, fcnts + first, (int) (nflat - first),
							 p->lo_last_only ? cslots[pos] : -1);
			pos += n;
		}

		if (f != NULL)
		{
			if (nfresh != f->n)
				elog(ERROR, "keanon: placed %lld new rows of %s, expected %lld",
					 (long long) nfresh, get_rel_name(w->relid), (long long) f->n);
			f->placed = true;
		}
		if (nupd > 0)
		{
			/*
			 * in (partition, slot) order: new partitions take increasing
			 * ids, so most entries of the (keanon_pid, ...) btrees go to
			 * their right edge, and where a moved row lands tells nothing
			 * its partition and a random slot do not
			 */
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
				int64		rpid = DatumGetInt64(ur[j].pid);
				int32		rslot = DatumGetInt32(ur[j].slot);

				KeanonRowMoveBatch(w, ur[j].tid, &rpid, &rslot, &ur[j].pub);
			}
			pfree(ur);
		}
		CommandCounterIncrement();

	}
}

/* The old partitions of a reassignment: the published ones it replaces */
typedef struct OldList
{
	Datum	   *pids;
	KePartition *parts;
	int			n;
	int			cap;
} OldList;

/*
 * Grow a range until its old partitions (published) and new ones (the
 * engine's) cover the same rows, and append both to np and old
 */
static void
grow_range(Watch *w, KeanonRange *r, KeanonPartList *np, OldList *old)
{
	KeKind		kind = w->ki->vt.kind;
	int			np0 = np->n;
	int			old0 = old->n;

	for (;;)
	{
		bool		grew = false;
		KeanonOldPart *found;
		int			nfound;

		np->n = np0;
		old->n = old0;
		ke_foreach_partition_range(w->ki->engine, r->lo_unb, r->lo, r->hi_unb, r->hi,
								   KeanonCollectPartition, np);
		nfound = KeanonPartsInRange(w, r, &found);
		if (old->n + nfound > old->cap)
		{
			old->cap = (old->n + nfound) * 2 + 16;
			old->pids = old->pids ? repalloc_huge(old->pids, sizeof(Datum) * old->cap)
				: palloc(sizeof(Datum) * old->cap);
			old->parts = old->parts ? repalloc_huge(old->parts, sizeof(KePartition) * old->cap)
				: palloc(sizeof(KePartition) * old->cap);
		}
		for (int i = 0; i < nfound; i++)
		{
			KePartition *o = &old->parts[old->n];

			old->pids[old->n] = Int64GetDatum(found[i].pid);
			*o = found[i].part;
			old->n++;
			if (!r->lo_unb && ke_num_cmp(kind, o->lo, r->lo) < 0)
			{
				r->lo = o->lo;
				grew = true;
			}
			if (!r->hi_unb && ke_num_cmp(kind, o->hi, r->hi) > 0)
			{
				r->hi = o->hi;
				grew = true;
			}
		}
		if (found != NULL)
			pfree(found);
		for (int i = np0; i < np->n; i++)
		{
			if (!r->lo_unb && ke_num_cmp(kind, np->parts[i].lo, r->lo) < 0)
			{
				r->lo = np->parts[i].lo;
				grew = true;
			}
			if (!r->hi_unb && ke_num_cmp(kind, np->parts[i].hi, r->hi) > 0)
			{
				r->hi = np->parts[i].hi;
				grew = true;
			}
		}
		if (!grew)
			break;
	}
}

/* Order ranges by their low end, unbounded first (qsort_arg; arg: KeKind) */
static int
span_cmp(const void *a, const void *b, void *arg)
{
	const KeanonRange *x = a;
	const KeanonRange *y = b;

	if (x->lo_unb || y->lo_unb)
		return (int) y->lo_unb - (int) x->lo_unb;
	return ke_num_cmp(*(const KeKind *) arg, x->lo, y->lo);
}

/* Whether range b (starting at or after a) overlaps range a */
static bool
spans_overlap(KeKind kind, const KeanonRange *a, const KeanonRange *b)
{
	return a->hi_unb || b->lo_unb || ke_num_le(kind, b->lo, a->hi);
}

/*
 * Reassign the rows of the old partitions in the engine-reported range (and
 * the rows not yet placed) to the new partitions there, and permute each
 * anew.  The range grows until the old and the new partitions in it cover
 * the same rows.
 */
void
KeanonReassign(Watch *w, bool lo_unb, KeNum lo, bool hi_unb, KeNum hi,
			   const KeNum *cv, int ncv)
{
	KeanonRange r;

	r.lo_unb = lo_unb;
	r.lo = lo;
	r.hi_unb = hi_unb;
	r.hi = hi;
	KeanonReassignRanges(w, &r, 1, cv, ncv);
}

/*
 * The same over several ranges (every row placed): each grows until its
 * old and new partitions agree, ranges that come to overlap merge, and
 * the partitions between them, which no change reached, stay as they are.
 * A batch of changes scattered over a large table so reads the rows of the
 * partitions it changed, not those of the whole span.
 */
void
KeanonReassignRanges(Watch *w, KeanonRange *ranges, int nranges, const KeNum *cv, int ncv)
{
	const KeanonValueType *vt = &w->ki->vt;
	KeKind		kind = vt->kind;
	KeanonPartList np = {0};
	OldList		old = {0};
	Datum	   *old_pids;
	KePartition *old_parts;
	int			nold;
	PlacedRow  *rows;
	int64		nrows;
	int64		want = 0;
	int64	   *pids;
	OldParts	op;

	Assert(nranges == 1 || w->all_placed);
	qsort_arg(ranges, nranges, sizeof(KeanonRange), span_cmp, &kind);
	for (int i = 0; i < nranges;)
	{
		KeanonRange cur = ranges[i++];
		int			np0 = np.n;
		int			old0 = old.n;

		for (;;)
		{
			grow_range(w, &cur, &np, &old);
			if (i >= nranges || !spans_overlap(kind, &cur, &ranges[i]))
				break;
			/* the next range reached: take it in and grow again */
			for (; i < nranges && spans_overlap(kind, &cur, &ranges[i]); i++)
			{
				if (ranges[i].hi_unb)
					cur.hi_unb = true;
				else if (!cur.hi_unb && ke_num_cmp(kind, ranges[i].hi, cur.hi) > 0)
					cur.hi = ranges[i].hi;
			}
			np.n = np0;
			old.n = old0;
		}
	}
	old_pids = old.pids;
	old_parts = old.parts;
	nold = old.n;

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
	pids = palloc(sizeof(int64) * Max(nold, 1));
	for (int i = 0; i < nold; i++)
		pids[i] = DatumGetInt64(old_pids[i]);
	if (w->all_placed)
		rows = KeanonRowsOfPartitions(w, pids, nold, &nrows);
	else
	{
		/* and those not placed yet (only after the table held too few) */
		char	   *sql;
		Oid			type = INT8ARRAYOID;
		Datum		arr = PointerGetDatum(construct_array(old_pids, nold, INT8OID, 8,
														  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));

		sql = psprintf("SELECT ctid, %s, keanon_pid, keanon_slot, keanon_pub FROM "
					   "(SELECT ctid, %s, keanon_arrival, keanon_pid, keanon_slot, keanon_pub FROM %s "
					   "WHERE keanon_pid = ANY ($1) UNION ALL SELECT ctid, %s, keanon_arrival, "
					   "keanon_pid, keanon_slot, keanon_pub "
					   "FROM %s WHERE keanon_pid IS NULL) x ORDER BY %s, keanon_arrival",
					   w->s, w->s, w->rows, w->s, w->rows, w->s);
		KeanonSpiRun(w->relid, sql, 1, &type, &arr, NULL, SPI_OK_SELECT);
		rows = KeanonFetchedRows(vt, &nrows);
	}
	rows = with_fresh_rows(w, rows, &nrows);
	for (int i = 0; i < np.n; i++)
		want += np.parts[i].n;
	if (want != nrows)
		elog(ERROR, "keanon: partitions of %s in the changed range hold %lld rows, the table %lld",
			 get_rel_name(w->relid), (long long) want, (long long) nrows);
	KeanonPartsDelete(w, pids, nold);

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
		qsort(ops, nold, sizeof(OldPartSort), pid_first_cmp);
		for (int i = 0; i < nold; i++)
		{
			op.pid[i] = ops[i].pid;
			op.size[i] = ops[i].size;
			op.first[i] = -1;
			op.last[i] = -1;
		}
	}
	{
		/* an old partition's rows are consecutive in (value, arrival) order */
		bool	   *left = palloc0(sizeof(bool) * Max(nold, 1));
		int			prev = -1;

		for (int64 r = 0; r < nrows; r++)
		{
			int			x;

			if (rows[r].fresh >= 0 || rows[r].pid == 0 || (x = old_index(&op, rows[r].pid)) < 0)
				continue;
			/* only a carry-over (cv given) relies on it; republish draws afresh */
			if (x != prev && cv != NULL)
			{
				if (left[x])
					ereport(ERROR,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("keanon watch of %s is inconsistent: the rows of partition %lld are not consecutive",
									get_rel_name(w->relid), (long long) op.pid[x]),
							 errhint("keanon.republish() rebuilds the publication from the table.")));
				if (prev >= 0)
					left[prev] = true;
				prev = x;
			}
			if (op.first[x] < 0)
				op.first[x] = r;
			op.last[x] = r;
		}
		pfree(left);
	}
	/* the departed rows count in their partitions among those replaced */
	op.gone = palloc(sizeof(GoneRow) * Max(w->ngone, 1));
	op.ngone = 0;
	for (int g = 0; g < w->ngone; g++)
		if (old_index(&op, w->gone[g].pid) >= 0)
			op.gone[op.ngone++] = w->gone[g];
	qsort(op.gone, op.ngone, sizeof(GoneRow), pid_first_cmp);

	/* keanon.republish (no changed values) draws every partition afresh */
	KeanonPlaceRows(w, &np, rows, nrows, cv != NULL ? &op : NULL);
}

/* Withdraw every published row: no valid partitioning exists */
void
KeanonSuppressAll(Watch *w)
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

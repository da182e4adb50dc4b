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

/*
 * The rows of the last query (ctid, value, and optionally partition, slot
 * and published value), read from an internal table of relid's watch,
 * with their engine numbers
 */
PlacedRow *
KeanonFetchedRows(Oid relid, const KeanonValueType *vt, int64 *nrows)
{
	PlacedRow  *rows;
	int16		typlen;
	bool		typbyval;
	TupleDesc	desc = SPI_tuptable->tupdesc;

	*nrows = (int64) SPI_processed;
	rows = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(PlacedRow) * Max(*nrows, 1));
	get_typlenbyval(vt->typid, &typlen, &typbyval);
	for (int64 i = 0; i < *nrows; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		bool		isnull;

		rows[i].tid = *(ItemPointer) DatumGetPointer(KeanonSpiColumn(relid, t, desc, 1, TIDOID));
		rows[i].value = datumCopy(KeanonSpiColumn(relid, t, desc, 2, vt->typid), typbyval, typlen);
		rows[i].num = KeanonDatumToNum(vt, rows[i].value);
		rows[i].fresh = -1;
		rows[i].arrival = 0;
		rows[i].pid = 0;
		rows[i].slot = -1;
		rows[i].pub = (Datum) 0;
		if (desc->natts >= 5)
		{
			(void) SPI_getbinval(t, desc, 3, &isnull);
			if (!isnull)
			{
				rows[i].pid = DatumGetInt64(KeanonSpiColumn(relid, t, desc, 3, INT8OID));
				rows[i].slot = DatumGetInt32(KeanonSpiColumn(relid, t, desc, 4, INT4OID));
				rows[i].pub = datumCopy(KeanonSpiColumn(relid, t, desc, 5, vt->typid),
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

	int64		nf;

	/* those join steps placed already (join_in_place) are not among them */
	if (f == NULL || f->n - f->njoined == 0)
		return rows;
	nf = f->n - f->njoined;
	fr = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(PlacedRow) * nf);
	for (int64 r = 0, at = 0; r < f->n; r++)
	{
		/* in (value, arrival) order already when a sort gave it */
		int64		x = f->order != NULL ? f->order[r] : r;

		if (f->joined != NULL && f->joined[x])
			continue;
		ItemPointerSetInvalid(&fr[at].tid);
		fr[at].value = f->value[x];
		fr[at].num = f->num[x];
		fr[at].fresh = x;
		fr[at].arrival = f->arrival0 + x + 1;
		fr[at].pid = 0;
		fr[at].slot = -1;
		fr[at].pub = (Datum) 0;
		at++;
	}
	if (f->order == NULL)
		qsort_arg(fr, nf, sizeof(PlacedRow), KeanonValueArrivalCmp, &kind);
	if (*nrows == 0)
	{
		/* nothing to merge with (a fill, a load into an empty table) */
		if (rows != NULL)
			pfree(rows);
		*nrows = nf;
		return fr;
	}
	out = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(PlacedRow) * (*nrows + nf));
	while (i < *nrows || j < nf)
	{
		if (j == nf || (i < *nrows && ke_num_le(kind, rows[i].num, fr[j].num)))
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
 * a qsort comparator), or plain int64s
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

/* A carry-over under way: the old partition's slots as the steps change them */
typedef struct Carry
{
	int			k;				/* the old partition, in op */
	int64		pid;
	int64		size;			/* its rows before */
	int64		span;			/* rows[] positions its rows take */
	int			g0;				/* its departed rows: op->gone[g0 .. g0+ng) */
	int			ng;
	int64	   *st_row;			/* slot -> row, or a departed row */
	Datum	   *st_pub;			/* slot -> published value */
	KeNum	   *st_pnum;
	int64	   *slot_of;		/* row (from op->first[k]) -> slot */
	int64	   *gone_slot;		/* departed row -> slot */
	int64	   *lv;				/* the leavers, the departed first */
	int64	   *jn;				/* the joiners */
	int64		nl;
	int64		nj;
	int64		npair;			/* leavers replaced by joiners */
	int64		cur;			/* rows in the partition now */
} Carry;

/* The old partition sharing most rows with rows[pos .. pos+n), or -1 */
static int
carry_source(OldParts *op, PlacedRow *rows, int64 pos, int64 n)
{
	int			cand[8];
	int64		cnt[8];
	int			ncand = 0;
	int			k = -1;
	int64		best = 0;

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
	return k;
}

/*
 * The old partition's state before: slot -> row (or departed row) and
 * published value; false when its slots are not whole
 */
static bool
carry_state(const KeanonValueType *vt, OldParts *op, PlacedRow *rows, int64 n, Carry *c)
{
	c->st_row = palloc(sizeof(int64) * (c->size + n));
	c->st_pub = palloc(sizeof(Datum) * (c->size + n));
	c->st_pnum = palloc(sizeof(KeNum) * (c->size + n));
	c->slot_of = palloc(sizeof(int64) * c->span);
	for (int64 s = 0; s < c->size; s++)
		c->st_row[s] = -2;
	for (int64 r = op->first[c->k]; r <= op->last[c->k]; r++)
	{
		int32		s = rows[r].slot;

		c->slot_of[r - op->first[c->k]] = -1;
		if (rows[r].fresh >= 0 || rows[r].pid != c->pid)
			continue;
		if (s < 0 || s >= c->size || c->st_row[s] != -2)
			return false;
		c->st_row[s] = r;
		c->st_pub[s] = rows[r].pub;
		c->st_pnum[s] = KeanonDatumToNum(vt, rows[r].pub);
		c->slot_of[r - op->first[c->k]] = s;
	}
	c->gone_slot = palloc(sizeof(int64) * Max(c->ng, 1));
	for (int g = 0; g < c->ng; g++)
	{
		const GoneRow *gr = &op->gone[c->g0 + g];

		if (gr->slot < 0 || gr->slot >= c->size || c->st_row[gr->slot] != -2)
			return false;
		c->gone_slot[g] = gr->slot;
		c->st_row[gr->slot] = GONE(g);
		c->st_pub[gr->slot] = gr->pub;
		c->st_pnum[gr->slot] = KeanonDatumToNum(vt, gr->pub);
	}
	for (int64 s = 0; s < c->size; s++)
		if (c->st_row[s] == -2)
			return false;
	return true;
}

/*
 * Who leaves (the departed rows first) and who joins.  As many leavers as
 * there are joiners, drawn at random, are each replaced by a joiner drawn
 * at random; the matching uses neither row's value.
 */
static void
carry_pair(OldParts *op, PlacedRow *rows, int64 pos, int64 n, Carry *c)
{
	c->lv = palloc(sizeof(int64) * (c->span + c->ng + 1));
	c->jn = palloc(sizeof(int64) * (n + 1));
	for (int g = 0; g < c->ng; g++)
		c->lv[c->nl++] = GONE(g);
	for (int64 r = op->first[c->k]; r <= op->last[c->k]; r++)
		if (rows[r].fresh < 0 && rows[r].pid == c->pid && (r < pos || r >= pos + n))
			c->lv[c->nl++] = r;
	for (int64 j = pos; j < pos + n; j++)
		if (rows[j].fresh >= 0 || rows[j].pid != c->pid)
			c->jn[c->nj++] = j;
	c->npair = Min(c->nl, c->nj);
	for (int64 i = 0; i < c->npair; i++)
	{
		int64		x = i + (int64) KeanonRandomBelow((uint64) (c->nl - i));
		int64		t = c->lv[i];

		c->lv[i] = c->lv[x];
		c->lv[x] = t;
		x = i + (int64) KeanonRandomBelow((uint64) (c->nj - i));
		t = c->jn[i];
		c->jn[i] = c->jn[x];
		c->jn[x] = t;
	}
}

/*
 * The unmatched leavers leave: a row drawn among those showing the
 * leaver's true value takes over its published value, and the last slot's
 * row moves into the gap.  False when no row shows a leaver's value.
 */
static bool
carry_leave(OldParts *op, PlacedRow *rows, Showing *sh, Carry *c)
{
	for (int64 i = c->npair; i < c->nl; i++)
	{
		int64		sl = slot_of_leaver(op, c->k, c->lv[i], c->slot_of, c->gone_slot);
		int64		pick = showing_pick(sh, c->cur, leaver_num(op, c->g0, rows, c->lv[i]));
		int64		last = c->cur - 1;

		if (pick < 0)
			return false;
		if (pick != sl)
		{
			c->st_pub[pick] = c->st_pub[sl];
			showing_set(sh, pick, c->st_pnum[sl]);
		}
		if (sl != last)
		{
			c->st_row[sl] = c->st_row[last];
			c->st_pub[sl] = c->st_pub[last];
			showing_set(sh, sl, c->st_pnum[last]);
			if (c->st_row[sl] >= 0)
				c->slot_of[c->st_row[sl] - op->first[c->k]] = sl;
			else
				c->gone_slot[GONE_INDEX(c->st_row[sl])] = sl;
		}
		showing_drop(sh, last);
		c->cur--;
	}
	return true;
}

/*
 * Each matched leaver is replaced (permute.c's replace step): its joiner
 * takes its slot and its published value, and a row drawn among those
 * showing the leaver's true value shows the joiner's instead.  No other
 * row moves.  False when no row shows a leaver's value.
 */
static bool
carry_replace(OldParts *op, PlacedRow *rows, Showing *sh, Carry *c)
{
	for (int64 i = 0; i < c->npair; i++)
	{
		int64		sl = slot_of_leaver(op, c->k, c->lv[i], c->slot_of, c->gone_slot);
		int64		pick = showing_pick(sh, c->cur, leaver_num(op, c->g0, rows, c->lv[i]));

		if (pick < 0)
			return false;
		c->st_row[sl] = c->jn[i];
		c->st_pub[pick] = rows[c->jn[i]].value;
		showing_set(sh, pick, rows[c->jn[i]].num);
	}
	return true;
}

/* The other joiners join by the inside-out shuffle */
static void
carry_join(PlacedRow *rows, Carry *c)
{
	for (int64 i = c->npair; i < c->nj; i++)
	{
		int64		j = c->jn[i];
		int64		cur = c->cur;
		uint64		x;

		x = KeanonRandomBelow((uint64) cur + 1);
		if ((int64) x < cur)
		{
			c->st_pub[cur] = c->st_pub[x];
			c->st_pnum[cur] = c->st_pnum[x];
			c->st_pub[x] = rows[j].value;
			c->st_pnum[x] = rows[j].num;
		}
		else
		{
			c->st_pub[cur] = rows[j].value;
			c->st_pnum[cur] = rows[j].num;
		}
		c->st_row[cur] = j;
		/* and sits at a random slot: the one there moves to the end */
		x = KeanonRandomBelow((uint64) cur + 1);
		if ((int64) x < cur)
		{
			int64		tr = c->st_row[x];
			Datum		tp = c->st_pub[x];
			KeNum		tn = c->st_pnum[x];

			c->st_row[x] = c->st_row[cur];
			c->st_pub[x] = c->st_pub[cur];
			c->st_pnum[x] = c->st_pnum[cur];
			c->st_row[cur] = tr;
			c->st_pub[cur] = tp;
			c->st_pnum[cur] = tn;
		}
		c->cur++;
	}
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
	Carry		c;
	Showing		sh;
	bool		ok;

	memset(&c, 0, sizeof(c));
	c.k = carry_source(op, rows, pos, n);
	if (c.k < 0)
		return 0;
	c.pid = op->pid[c.k];
	c.size = op->size[c.k];
	c.span = op->last[c.k] - op->first[c.k] + 1;
	if (c.size <= 0 || c.size > INT_MAX || op->first[c.k] < 0)
		return 0;
	c.ng = gone_of(op, c.pid, &c.g0);
	if (!carry_state(vt, op, rows, n, &c))
		return 0;
	carry_pair(op, rows, pos, n, &c);

	c.cur = c.size;
	showing_init(&sh, vt->kind, c.st_pnum, c.size);
	ok = carry_leave(op, rows, &sh, &c) && carry_replace(op, rows, &sh, &c);
	showing_done(&sh);
	if (!ok)
		return 0;
	carry_join(rows, &c);
	if (c.cur != n)
		elog(ERROR, "keanon: carried a partition of %s over to %lld rows, expected %lld",
			 get_rel_name(w->relid), (long long) c.cur, (long long) n);
	for (int64 s = 0; s < c.cur; s++)
	{
		out_slot[c.st_row[s] - pos] = (int32) s;
		out_pub[c.st_row[s] - pos] = c.st_pub[s];
	}
	op->taken[c.k] = true;
	pfree(c.lv);
	pfree(c.jn);
	pfree(c.gone_slot);
	pfree(c.st_row);
	pfree(c.st_pub);
	pfree(c.st_pnum);
	pfree(c.slot_of);
	return c.pid;
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

/* Where a placement puts the rows, gathered before any is written */
typedef struct Placement
{
	Datum	   *pubs;			/* by row: published value */
	int32	   *cslots;			/* by row: slot */
	Datum	   *tids;			/* the table rows that moved */
	Datum	   *rpids;
	Datum	   *slots;
	Datum	   *upubs;
	int64		nupd;
	Datum	   *fvals;			/* each partition's distinct values, counted */
	Datum	   *fcnts;
	int64		nflat;
	int64		nfresh;			/* fresh rows placed */
} Placement;

/* A uniform permutation of rows[pos .. pos+n), and their slots, drawn afresh */
static void
draw_partition(PlacedRow *pr, int64 pos, int64 n, Placement *pl)
{
	for (int64 j = 0; j < n; j++)
	{
		pl->pubs[pos + j] = pr[j].value;
		pl->cslots[pos + j] = (int32) j;
	}
	/* two independent draws: who shows what, and who sits where */
	for (int64 j = n - 1; j > 0; j--)
	{
		int64		r = (int64) KeanonRandomBelow((uint64) j + 1);
		Datum		tmp = pl->pubs[pos + j];
		int32		ts;

		pl->pubs[pos + j] = pl->pubs[pos + r];
		pl->pubs[pos + r] = tmp;
		r = (int64) KeanonRandomBelow((uint64) j + 1);
		ts = pl->cslots[pos + j];
		pl->cslots[pos + j] = pl->cslots[pos + r];
		pl->cslots[pos + r] = ts;
	}
}

/*
 * Note where each row of partition pid (rows[pos .. pos+n)) goes: a fresh
 * row is written placed, a table row updated if it moved; and count the
 * partition's distinct values (rows come sorted by value)
 */
static void
note_partition_rows(Watch *w, PlacedRow *pr, int64 pos, int64 n, int64 pid, Placement *pl)
{
	const KeanonValueType *vt = &w->ki->vt;
	FreshRows  *f = w->fresh;

	for (int64 j = 0; j < n; j++)
	{
		if (pr[j].fresh >= 0)
		{
			f->pid[pr[j].fresh] = Int64GetDatum(pid);
			f->slot[pr[j].fresh] = Int32GetDatum(pl->cslots[pos + j]);
			f->pub[pr[j].fresh] = pl->pubs[pos + j];
			pl->nfresh++;
		}
		else if (pr[j].pid != pid || pr[j].slot != pl->cslots[pos + j] ||
				 !ke_num_eq(vt->kind, KeanonDatumToNum(vt, pr[j].pub),
							KeanonDatumToNum(vt, pl->pubs[pos + j])))
		{
			pl->tids[pl->nupd] = PointerGetDatum(&pr[j].tid);
			pl->rpids[pl->nupd] = Int64GetDatum(pid);
			pl->slots[pl->nupd] = Int32GetDatum(pl->cslots[pos + j]);
			pl->upubs[pl->nupd] = pl->pubs[pos + j];
			pl->nupd++;
		}
		if (j > 0 && ke_num_eq(vt->kind, pr[j - 1].num, pr[j].num))
			pl->fcnts[pl->nflat - 1] = Int64GetDatum(DatumGetInt64(pl->fcnts[pl->nflat - 1]) + 1);
		else
		{
			pl->fvals[pl->nflat] = pr[j].value;
			pl->fcnts[pl->nflat] = Int64GetDatum(1);
			pl->nflat++;
		}
	}
}

/*
 * Move the table rows whose place changed, in (partition, slot) order: new
 * partitions take increasing ids, so most entries of the (keanon_pid, ...)
 * btrees go to their right edge, and where a moved row lands tells nothing
 * its partition and a random slot do not
 */
static void
move_rows(Watch *w, Placement *pl)
{
	UpdateRow  *ur = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(UpdateRow) * pl->nupd);

	for (int64 j = 0; j < pl->nupd; j++)
	{
		ur[j].tid = (ItemPointer) DatumGetPointer(pl->tids[j]);
		ur[j].pid = pl->rpids[j];
		ur[j].slot = pl->slots[j];
		ur[j].pub = pl->upubs[j];
	}
	qsort(ur, pl->nupd, sizeof(UpdateRow), update_row_cmp);
	for (int64 j = 0; j < pl->nupd; j++)
	{
		int64		rpid = DatumGetInt64(ur[j].pid);
		int32		rslot = DatumGetInt32(ur[j].slot);

		KeanonRowMoveBatch(w, ur[j].tid, &rpid, &rslot, &ur[j].pub);
	}
	pfree(ur);
}

/*
 * Give the rows, in (value, arrival) order, to the partitions in order,
 * draw a uniform permutation of each (or carry an old partition over),
 * and write them and the partitions' summaries, all without the executor
 * (direct.c).
 */
void
KeanonPlaceRows(Watch *w, KeanonPartList *parts, PlacedRow *rows, int64 nrows, OldParts *op)
{
	Placement	pl;
	int64		pos = 0;
	FreshRows  *f = w->fresh;

	memset(&pl, 0, sizeof(pl));
	pl.tids = palloc(sizeof(Datum) * Max(nrows, 1));
	pl.rpids = palloc(sizeof(Datum) * Max(nrows, 1));
	pl.slots = palloc(sizeof(Datum) * Max(nrows, 1));
	pl.pubs = palloc(sizeof(Datum) * Max(nrows, 1));
	pl.fvals = palloc(sizeof(Datum) * Max(nrows, 1));
	pl.fcnts = palloc(sizeof(Datum) * Max(nrows, 1));
	pl.upubs = palloc(sizeof(Datum) * Max(nrows, 1));
	pl.cslots = palloc(sizeof(int32) * Max(nrows, 1));
	for (int i = 0; i < parts->n; i++)
	{
		KePartition *p = &parts->parts[i];
		PlacedRow  *pr = rows + pos;
		int64		n = p->n;
		int64		pid = 0;
		int64		first = pl.nflat;

		/* an old partition carried over, or a fresh uniform permutation */
		if (op != NULL)
			pid = carry_over(w, op, rows, pos, n, pl.cslots + pos, pl.pubs + pos);
		if (pid == 0)
		{
			pid = ++w->next_pid;
			draw_partition(pr, pos, n, &pl);
		}
		note_partition_rows(w, pr, pos, n, pid, &pl);
		/* where the one row of its lowest value sits (see split_join) */
		KeanonPartInsert(w, pid, p, n, pl.fvals + first, pl.fcnts + first,
						 (int) (pl.nflat - first), p->lo_last_only ? pl.cslots[pos] : -1);
		pos += n;
	}
	if (f != NULL)
	{
		if (pl.nfresh + f->njoined != f->n)
			elog(ERROR, "keanon: placed %lld new rows of %s, expected %lld",
				 (long long) pl.nfresh, get_rel_name(w->relid), (long long) f->n);
		f->placed = true;
	}
	if (pl.nupd > 0)
		move_rows(w, &pl);
	CommandCounterIncrement();
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
 * Grow each range until its old and new partitions agree, merging ranges
 * that come to overlap: the new partitions into np, the old into old
 */
static void
grow_ranges(Watch *w, KeanonRange *ranges, int nranges, KeanonPartList *np, OldList *old)
{
	KeKind		kind = w->ki->vt.kind;

	qsort_arg(ranges, nranges, sizeof(KeanonRange), span_cmp, &kind);
	for (int i = 0; i < nranges;)
	{
		KeanonRange cur = ranges[i++];
		int			np0 = np->n;
		int			old0 = old->n;

		for (;;)
		{
			grow_range(w, &cur, np, old);
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
			np->n = np0;
			old->n = old0;
		}
	}
}

/* The old partition ending at hi, by binary search over by_hi, or -1 */
static int
old_ending_at(KeKind kind, const KePartition *old_parts, const int *by_hi, int nold, KeNum hi)
{
	int			lo = 0,
				top = nold - 1;

	while (lo <= top)
	{
		int			mid = lo + (top - lo) / 2;
		int			c = ke_num_cmp(kind, old_parts[by_hi[mid]].hi, hi);

		if (c == 0)
			return by_hi[mid];
		if (c < 0)
			lo = mid + 1;
		else
			top = mid - 1;
	}
	return -1;
}

/* The old partitions' indexes ordered by their ends (distinct), for old_ending_at */
static int *
old_by_hi(KeKind kind, const OldList *old)
{
	int		   *by_hi = palloc(sizeof(int) * Max(old->n, 1));
	HiSortArg	ha = {kind, old->parts};

	for (int j = 0; j < old->n; j++)
		by_hi[j] = j;
	qsort_arg(by_hi, old->n, sizeof(int), old_hi_cmp, &ha);
	return by_hi;
}

/* Keep in old the partitions not marked in out[] */
static void
old_keep_unmarked(OldList *old, const bool *out)
{
	int			keep = 0;

	for (int j = 0; j < old->n; j++)
	{
		if (out[j])
			continue;
		old->pids[keep] = old->pids[j];
		old->parts[keep] = old->parts[j];
		keep++;
	}
	old->n = keep;
}

/* How many of the changed values cv (sorted) lie in [lo, hi] */
static int
changes_within(KeKind kind, const KeNum *cv, int ncv, KeNum lo, KeNum hi)
{
	int			a = 0,
				b = ncv,
				c;

	while (a < b)
	{
		int			mid = a + (b - a) / 2;

		if (ke_num_cmp(kind, cv[mid], lo) < 0)
			a = mid + 1;
		else
			b = mid;
	}
	for (c = a, b = ncv; c < b;)
	{
		int			mid = c + (b - c) / 2;

		if (ke_num_le(kind, cv[mid], hi))
			c = mid + 1;
		else
			b = mid;
	}
	return c - a;
}

/*
 * A partition the range took in at its edges may be untouched: the same
 * bounds and size as before, and no changed value (cv, sorted) inside.
 * Its rows keep their places, and it is left out of both sides.
 */
static void
drop_untouched(KeKind kind, KeanonPartList *np, OldList *old, const KeNum *cv, int ncv)
{
	int			keep_new = 0;
	int			nold = old->n;
	int		   *by_hi = old_by_hi(kind, old);
	bool	   *dropped = palloc0(sizeof(bool) * nold);

	for (int i = 0; i < np->n; i++)
	{
		KePartition *p = &np->parts[i];
		int			j = old_ending_at(kind, old->parts, by_hi, nold, p->hi);

		if (j >= 0)
		{
			KePartition *o = &old->parts[j];

			if (!dropped[j] && ke_num_eq(kind, o->lo, p->lo) &&
				o->lo_last_only == p->lo_last_only && o->hi_split == p->hi_split &&
				o->n == p->n && changes_within(kind, cv, ncv, p->lo, p->hi) == 0)
			{
				dropped[j] = true;
				continue;
			}
		}
		np->parts[keep_new++] = *p;
	}
	np->n = keep_new;
	old_keep_unmarked(old, dropped);
	pfree(by_hi);
	pfree(dropped);
}

/*
 * A slot of a partition as join steps in memory see it: the table row that
 * sat there (tid, its published value, its slot at the start), or a fresh
 * row of this statement placed there by an earlier step
 */
typedef struct JoinSlot
{
	int32		slot;
	int32		was_slot;		/* -1 for a fresh row */
	int64		fresh;			/* index among the fresh rows, or -1 */
	ItemPointerData tid;
	Datum		pub;
	Datum		was_pub;
} JoinSlot;

/* Order Datums of the watched value by their numbers (qsort_arg) */
static int
datum_num_cmp(const void *a, const void *b, void *arg)
{
	const KeanonValueType *vt = arg;

	return ke_num_cmp(vt->kind, KeanonDatumToNum(vt, *(const Datum *) a),
					  KeanonDatumToNum(vt, *(const Datum *) b));
}

/* The entry for a slot, read from the table the first time it is needed */
static JoinSlot *
join_slot(Watch *w, int64 pid, JoinSlot *js, int *njs, int32 slot)
{
	JoinSlot   *e;
	bool		pubnull;

	for (int i = 0; i < *njs; i++)
		if (js[i].slot == slot)
			return &js[i];
	e = &js[(*njs)++];
	e->slot = slot;
	e->was_slot = slot;
	e->fresh = -1;
	if (!KeanonRowAtSlot(w, pid, slot, &e->tid, &e->pub, &pubnull) || pubnull)
		elog(ERROR, "keanon: slot %d of partition %lld of %s is missing",
			 slot, (long long) pid, get_rel_name(w->relid));
	e->was_pub = e->pub;
	return e;
}

/*
 * The join step (permute.c's inside-out shuffle) for m fresh rows of
 * this statement (joiners[], indexes among them) joining partition pid of
 * n rows, whose bounds stay, one after the other.  The steps run in
 * memory, on the at most 2m table rows they reach; each of those is then
 * written once, and the partition's row once.  A batch that adds a row or
 * two to each of many partitions so reads a few rows of each, not all.
 */
static void
join_many(Watch *w, int64 pid, KeNum lo, int64 n, const int64 *joiners, int m)
{
	FreshRows  *f = w->fresh;
	JoinSlot   *js = palloc(sizeof(JoinSlot) * (3 * m));
	int			njs = 0;
	Datum	   *adds = palloc(sizeof(Datum) * m);
	const KeanonValueType *vt = &w->ki->vt;

	for (int i = 0; i < m; i++)
	{
		int64		x = joiners[i];
		int32		cur = (int32) (n + i);
		uint64		j = KeanonRandomBelow((uint64) cur + 1);
		uint64		y;
		Datum		pub = f->value[x];
		JoinSlot   *e;

		/* the newcomer swaps published values with slot j */
		if ((int64) j < cur)
		{
			e = join_slot(w, pid, js, &njs, (int32) j);
			pub = e->pub;
			e->pub = f->value[x];
		}
		/* then takes a uniformly random slot, its row moving to the end */
		y = KeanonRandomBelow((uint64) cur + 1);
		if ((int64) y < cur)
			join_slot(w, pid, js, &njs, (int32) y)->slot = cur;
		e = &js[njs++];
		e->slot = (int32) y;
		e->was_slot = -1;
		e->fresh = x;
		e->pub = pub;
		adds[i] = f->value[x];
	}
	for (int i = 0; i < njs; i++)
	{
		JoinSlot   *e = &js[i];

		if (e->fresh >= 0)
		{
			f->pid[e->fresh] = Int64GetDatum(pid);
			f->slot[e->fresh] = Int32GetDatum(e->slot);
			f->pub[e->fresh] = e->pub;
			f->joined[e->fresh] = true;
			f->njoined++;
		}
		else
		{
			bool		moved = e->slot != e->was_slot;
			bool		shows_other = !ke_num_eq(vt->kind, KeanonDatumToNum(vt, e->pub),
												 KeanonDatumToNum(vt, e->was_pub));

			if (moved || shows_other)
				KeanonRowMoveBatch(w, &e->tid, NULL, moved ? &e->slot : NULL,
								   shows_other ? &e->pub : NULL);
		}
	}
	CommandCounterIncrement();
	qsort_arg(adds, m, sizeof(Datum), datum_num_cmp, (void *) vt);
	KeanonPartJoined(w, pid, lo, adds, m);
	pfree(js);
	pfree(adds);
}

/*
 * The most newcomers one partition takes by join steps in a batch: past
 * that, reading its rows once costs about as much
 */
#define JOIN_STEPS_MAX	32

/* A fresh row's value and index, ordered by both (qsort_arg; arg the KeKind) */
typedef struct NumAt
{
	KeNum		num;
	int64		i;
} NumAt;

static int
num_at_cmp(const void *a, const void *b, void *arg)
{
	const NumAt *x = a;
	const NumAt *y = b;
	int			c = ke_num_cmp(*(const KeKind *) arg, x->num, y->num);

	if (c != 0)
		return c;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* f->order: the fresh rows' indexes in (value, arrival) order */
void
KeanonFreshOrder(FreshRows *f, KeKind kind)
{
	NumAt	   *by = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(NumAt) * Max(f->n, 1));

	for (int64 i = 0; i < f->n; i++)
	{
		by[i].num = f->num[i];
		by[i].i = i;
	}
	qsort_arg(by, f->n, sizeof(NumAt), num_at_cmp, &kind);
	f->order = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * Max(f->n, 1));
	for (int64 i = 0; i < f->n; i++)
		f->order[i] = by[i].i;
	pfree(by);
}

/* The first of the fresh rows in order[0 .. n) whose value is >= v (> v if past) */
static int64
fresh_from(KeKind kind, const FreshRows *f, const int64 *order, int64 n, KeNum v, bool past)
{
	int64		a = 0,
				b = n;

	while (a < b)
	{
		int64		mid = a + (b - a) / 2;
		int			c = ke_num_cmp(kind, f->num[order[mid]], v);

		if (c < 0 || (past && c == 0))
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

/*
 * A partition whose bounds stay and that only gained fresh rows takes them
 * by join steps (join_many) instead of being read whole, and leaves
 * both sides.  Only gained: every change of the statement with a value in
 * its bounds is one of those arrivals (so no row left it, and no row of a
 * run split at its ends moved across, as one does when the run's last row
 * leaves), none arrived at a split end (where arrival decides which row of
 * the run goes where), and its size grew by their number.  A batch adding
 * a row or two to each of many partitions of a large table so reads a few
 * rows of each, as single INSERTs do.
 */
static void
join_in_place(Watch *w, KeanonPartList *np, OldList *old, const KeNum *cv, int ncv)
{
	FreshRows  *f = w->fresh;
	KeKind		kind = w->ki->vt.kind;
	int			nold = old->n;
	int			keep_new = 0;
	int		   *by_hi;
	bool	   *joined_old;
	int64	   *order;

	if (f == NULL || f->n == 0 || nold == 0 || !w->all_placed)
		return;
	if (f->order == NULL)
		KeanonFreshOrder(f, kind);
	order = f->order;
	if (f->joined == NULL)
		f->joined = MemoryContextAllocZero(CurrentMemoryContext, sizeof(bool) * f->n);
	by_hi = old_by_hi(kind, old);
	joined_old = palloc0(sizeof(bool) * nold);
	for (int i = 0; i < np->n; i++)
	{
		KePartition *p = &np->parts[i];
		int			j = old_ending_at(kind, old->parts, by_hi, nold, p->hi);
		int64		a = fresh_from(kind, f, order, f->n, p->lo, p->lo_last_only);
		int64		b = fresh_from(kind, f, order, f->n, p->hi, !p->hi_split);
		KePartition *o = j >= 0 ? &old->parts[j] : NULL;

		/*
		 * [a, b): the fresh rows inside, those at a split end left out; any
		 * change in the bounds not among them (a departure, an arrival at a
		 * split end) leaves the partition to the reassignment
		 */
		if (o != NULL && !joined_old[j] && ke_num_eq(kind, o->lo, p->lo) &&
			o->lo_last_only == p->lo_last_only && o->hi_split == p->hi_split &&
			b - a >= 1 && b - a <= JOIN_STEPS_MAX && p->n == o->n + (b - a) &&
			changes_within(kind, cv, ncv, p->lo, p->hi) == b - a)
		{
			int			m = (int) (b - a);
			int64	   *joiners = palloc(sizeof(int64) * m);

			/* in arrival order */
			memcpy(joiners, order + a, sizeof(int64) * m);
			qsort(joiners, m, sizeof(int64), pid_first_cmp);
			join_many(w, DatumGetInt64(old->pids[j]), p->lo, o->n, joiners, m);
			pfree(joiners);
			joined_old[j] = true;
			continue;
		}
		np->parts[keep_new++] = *p;
	}
	np->n = keep_new;
	old_keep_unmarked(old, joined_old);
	pfree(by_hi);
	pfree(joined_old);
}

/* The rows to place, in (value, arrival) order, fresh ones merged in */
static PlacedRow *
rows_to_place(Watch *w, const OldList *old, const int64 *pids, int64 *nrows)
{
	PlacedRow  *rows;

	if (w->all_placed)
		rows = KeanonRowsOfPartitions(w, pids, old->n, nrows);
	else
	{
		/* and those not placed yet (only after the table held too few) */
		char	   *sql;
		Oid			type = INT8ARRAYOID;
		Datum		arr = PointerGetDatum(construct_array(old->pids, old->n, INT8OID, 8,
														  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));

		sql = psprintf("SELECT ctid, %s, keanon_pid, keanon_slot, keanon_pub FROM "
					   "(SELECT ctid, %s, keanon_arrival, keanon_pid, keanon_slot, keanon_pub FROM %s "
					   "WHERE keanon_pid = ANY ($1) UNION ALL SELECT ctid, %s, keanon_arrival, "
					   "keanon_pid, keanon_slot, keanon_pub "
					   "FROM %s WHERE keanon_pid IS NULL) x ORDER BY %s, keanon_arrival",
					   w->s, w->s, w->rows, w->s, w->rows, w->s);
		KeanonSpiRun(w->relid, sql, 1, &type, &arr, NULL, SPI_OK_SELECT);
		rows = KeanonFetchedRows(w->relid, &w->ki->vt, nrows);
	}
	return with_fresh_rows(w, rows, nrows);
}

/*
 * The old partitions, to carry over: sorted by id, each with the range of
 * its rows in rows[] (consecutive in (value, arrival) order, which only a
 * carry-over relies on) and its departed rows
 */
static void
old_parts_to_carry(Watch *w, const OldList *old, PlacedRow *rows, int64 nrows, bool carry,
				   OldParts *op)
{
	int			nold = old->n;
	OldPartSort *ops = palloc(sizeof(OldPartSort) * Max(nold, 1));
	bool	   *left = palloc0(sizeof(bool) * Max(nold, 1));
	int			prev = -1;

	op->n = nold;
	op->pid = palloc(sizeof(int64) * Max(nold, 1));
	op->size = palloc(sizeof(int64) * Max(nold, 1));
	op->taken = palloc0(sizeof(bool) * Max(nold, 1));
	op->first = palloc(sizeof(int64) * Max(nold, 1));
	op->last = palloc(sizeof(int64) * Max(nold, 1));
	for (int i = 0; i < nold; i++)
	{
		ops[i].pid = DatumGetInt64(old->pids[i]);
		ops[i].size = old->parts[i].n;
	}
	qsort(ops, nold, sizeof(OldPartSort), pid_first_cmp);
	for (int i = 0; i < nold; i++)
	{
		op->pid[i] = ops[i].pid;
		op->size[i] = ops[i].size;
		op->first[i] = -1;
		op->last[i] = -1;
	}
	for (int64 r = 0; r < nrows; r++)
	{
		int			x;

		if (rows[r].fresh >= 0 || rows[r].pid == 0 || (x = old_index(op, rows[r].pid)) < 0)
			continue;
		if (x != prev && carry)
		{
			if (left[x])
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("keanon watch of %s is inconsistent: the rows of partition %lld are not consecutive",
								get_rel_name(w->relid), (long long) op->pid[x]),
						 errhint("keanon.republish() rebuilds the publication from the table.")));
			if (prev >= 0)
				left[prev] = true;
			prev = x;
		}
		if (op->first[x] < 0)
			op->first[x] = r;
		op->last[x] = r;
	}
	pfree(left);
	/* the departed rows count in their partitions among those replaced */
	op->gone = palloc(sizeof(GoneRow) * Max(w->ngone, 1));
	op->ngone = 0;
	for (int g = 0; g < w->ngone; g++)
		if (old_index(op, w->gone[g].pid) >= 0)
			op->gone[op->ngone++] = w->gone[g];
	qsort(op->gone, op->ngone, sizeof(GoneRow), pid_first_cmp);
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
	KeanonPartList np = {0};
	OldList		old = {0};
	PlacedRow  *rows;
	int64		nrows;
	int64		want = 0;
	int64	   *pids;
	OldParts	op;

	Assert(nranges == 1 || w->all_placed);
	grow_ranges(w, ranges, nranges, &np, &old);
	if (cv != NULL && old.n > 0)
	{
		drop_untouched(w->ki->vt.kind, &np, &old, cv, ncv);
		join_in_place(w, &np, &old, cv, ncv);
	}

	pids = palloc(sizeof(int64) * Max(old.n, 1));
	for (int i = 0; i < old.n; i++)
		pids[i] = DatumGetInt64(old.pids[i]);
	rows = rows_to_place(w, &old, pids, &nrows);
	for (int i = 0; i < np.n; i++)
		want += np.parts[i].n;
	if (want != nrows)
		elog(ERROR, "keanon: partitions of %s in the changed range hold %lld rows, the table %lld",
			 get_rel_name(w->relid), (long long) want, (long long) nrows);
	KeanonPartsDelete(w, pids, old.n);
	old_parts_to_carry(w, &old, rows, nrows, cv != NULL, &op);

	/* keanon.republish (no changed values) draws every partition afresh */
	KeanonPlaceRows(w, &np, rows, nrows, cv != NULL ? &op : NULL);
}

/*
 * Whether the session's own role may read every row of the table (its
 * owner, or SELECT with no row security policy applying): the notice
 * below is for it alone.  A writer who may DELETE rows it cannot
 * read, then INSERT two probes in a transaction it rolls back, found any
 * row's value by whether the notice came (docs/threat-model.md).  The
 * session's role, not the current one: what the client sees is what the
 * role it logged in as may read, whatever role it set or function it
 * called.
 */
static bool
session_reads_values(Watch *w)
{
	return KeanonRoleMayReadWhole(w->relid, GetSessionUserId());
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
	if (nrows > 0 && session_reads_values(w))
		ereport(NOTICE,
				(errmsg("no valid (k,e)-partitioning of %s exists: its rows are not published",
						get_rel_name(w->relid)),
				 ke_nruns(w->ki->engine) < w->k
				 ? errdetail("It has %lld distinct sensitive values; k = %d needs at least %d.",
							 (long long) ke_nruns(w->ki->engine), w->k, w->k)
				 : errdetail("The range of its sensitive values is below e.")));
}

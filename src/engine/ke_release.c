/*
 * ke_release.c
 *		The plan of a release that reveals nothing by subtraction.
 *
 * A reader who keeps two releases and matches their rows by their
 * published quasi-identifiers learns, for each new partition, the multiset
 * of the values it holds beyond the previous partitions it covers.  A
 * release after the first is therefore planned over items in value order:
 *
 *	block	a partition of the previous release, kept whole and never
 *			shrunk (rows that left the table since stay in it), with the
 *			arrivals whose values lie within its range, which can only go
 *			where it goes;
 *	run		arrivals of one value between the blocks, which a release may
 *			also withhold for a later one.
 *
 * A release partition is a contiguous segment of items, covering whole
 * blocks only (Lemma 1 of the successive-release research).  It releases
 * either all the arrivals in it, which must then be at least k distinct
 * values spanning at least e (its Lemma 2, the difference condition), or,
 * when it covers a block, none of them; a segment of runs alone is a new
 * partition and releases its arrivals.  Runs outside every segment wait.
 * Since a block never shrinks, every difference between any two releases,
 * not only consecutive ones, is a union of released arrival sets, so it
 * is empty or (k,e)-anonymous itself.
 *
 * Plans trade rows withheld against wider partitions, so they are
 * compared by the uncertainty they leave about each row: the value range
 * of its partition for a released row, the range of all values for a
 * withheld one.  The least total wins; then the one releasing more
 * arrivals, then the one of least sum-error (the research's measure, the
 * sum of the partitions' ranges).  The research's own sum-error alone
 * would merge a whole table into one partition to release one more row.
 * A dynamic program over item prefixes finds it, O(n^2) in the items;
 * every block alone releasing nothing is a plan, so one always exists.
 */
#include <stdlib.h>

#include "ke_alloc.h"
#include "ke_release.h"

/* A plan of a prefix of the items: admitted arrivals, then error */
typedef struct PrefixPlan
{
	bool		ok;
	double loss;			/* the rows' total uncertainty */
	int64_t		admitted;
	KeNum		error;
	int64_t		from;			/* the last segment's first item, or -1: withheld */
	bool		admit;			/* the last segment releases its arrivals */
} PrefixPlan;

/* Whether a plan is better than p: less loss, more admitted, less error */
static bool
better(KeKind kind, double loss, int64_t adm, KeNum err, const PrefixPlan *p)
{
	if (!p->ok)
		return true;
	if (loss != p->loss)
		return loss < p->loss;
	if (adm != p->admitted)
		return adm > p->admitted;
	return ke_num_cmp(kind, err, p->error) < 0;
}

/* Offer segment i .. j - 1 to f[j] */
static void
offer(KeKind kind, PrefixPlan *f, size_t i, size_t j, double loss, int64_t adm,
	  KeNum err, bool admit)
{
	if (better(kind, loss, adm, err, &f[j]))
	{
		f[j].ok = true;
		f[j].loss = loss;
		f[j].admitted = adm;
		f[j].error = err;
		f[j].from = (int64_t) i;
		f[j].admit = admit;
	}
}

/*
 * Plan a release over n items in value order (blocks may not be withheld).
 * On return part[i] numbers the release partition item i belongs to (0,
 * 1, ... in value order) or is -1 for a run that waits, released[i] says
 * whether item i's arrivals are released (a block itself always is),
 * *admitted counts the arrivals released and *error is the plan's
 * sum-error.  Returns the number of partitions, or -1 when memory runs
 * out.
 */
int64_t
ke_release_plan(KeKind kind, int k, KeNum e, const KeReleaseItem *items, size_t n,
				int64_t *part, bool *released, int64_t *admitted, KeNum *error)
{
	PrefixPlan *f = ke_malloc((n + 1) * sizeof(PrefixPlan));
	int64_t		nparts = 0;

	double whole;			/* the uncertainty of a withheld row */

	if (f == NULL)
		return -1;
	whole = n == 0 ? 0 : ke_num_to_double(kind, ke_num_sub(kind, items[n - 1].hi, items[0].lo));
	f[0].ok = true;
	f[0].loss = 0;
	f[0].admitted = 0;
	f[0].error = ke_num_zero(kind);
	f[0].from = -1;
	f[0].admit = false;
	for (size_t j = 1; j <= n; j++)
	{
		const KeReleaseItem *last = &items[j - 1];
		bool		has_block = false;
		int64_t		rows = 0;
		int64_t		distinct = 0;
		KeNum		amin = ke_num_zero(kind);
		KeNum		amax = ke_num_zero(kind);
		int64_t		kept = 0;

		f[j].ok = false;

		/* a run may wait for a later release */
		if (!last->block && f[j - 1].ok)
		{
			f[j] = f[j - 1];
			f[j].loss += whole * last->rows;
			f[j].from = -1;
		}
		/* or items i .. j - 1 make one partition */
		for (size_t i = j; i-- > 0;)
		{
			const KeReleaseItem *it = &items[i];
			KeNum		range;
			double width;

			has_block |= it->block;
			kept += it->kept;
			if (it->rows > 0)
			{
				if (rows == 0)
					amax = it->amax;
				amin = it->amin;
				rows += it->rows;
				distinct += it->distinct;
			}
			if (!f[i].ok)
				continue;
			range = ke_num_sub(kind, last->hi, it->lo);
			width = ke_num_to_double(kind, range);
			if (rows > 0 && distinct >= k && ke_num_range_ok(kind, amin, amax, e))
				offer(kind, f, i, j, f[i].loss + width * (kept + rows), f[i].admitted + rows,
					  ke_num_add(kind, f[i].error, range), true);
			if (has_block)
				offer(kind, f, i, j, f[i].loss + width * kept + whole * rows, f[i].admitted,
					  ke_num_add(kind, f[i].error, range), false);
		}
	}

	/* walk the plan back, then number its partitions in value order */
	*admitted = f[n].admitted;
	*error = f[n].error;
	for (size_t j = n; j > 0;)
	{
		if (f[j].from < 0)
		{
			part[j - 1] = -1;
			released[j - 1] = false;
			j--;
			continue;
		}
		for (size_t i = (size_t) f[j].from; i < j; i++)
		{
			part[i] = nparts;
			released[i] = f[j].admit;
		}
		nparts++;
		j = (size_t) f[j].from;
	}
	for (size_t i = 0; i < n; i++)
		if (part[i] >= 0)
			part[i] = nparts - 1 - part[i];
	ke_free(f);
	return nparts;
}

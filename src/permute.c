/*
 * permute.c
 *		How a row gets its published value: the uniformly random
 *		permutation of each partition's true values, kept by O(1) steps.
 *
 * Within a partition every row has a slot (0 .. n-1) and a published
 * value.  Two independent uniform draws hold at all times: which row shows
 * which of the partition's true values, and which row sits at which slot.
 * The first is the publication; the second only orders the rows for
 * keanon itself (the slot lets a step pick a uniformly random row through
 * the rows table's (keanon_pid, keanon_slot) index), and being uniform and
 * independent of the values it tells nothing to anyone who reads rows in
 * slot order.
 *
 * A change of one row whose partition keeps its bounds costs a few row
 * writes:
 *
 *	join		the newcomer swaps published values with a uniformly random
 *				slot (inside-out shuffle: it may keep its own value), then
 *				takes a uniformly random slot, the row there moving to the
 *				end;
 *	split join	a row joining a run of equal values split between two
 *				partitions takes the later partition's place of the run's
 *				previous last row, which joins the earlier partition;
 *	leave		a row drawn uniformly among those showing the departing
 *				true value takes over the departing row's published value,
 *				and the last slot's row moves into the gap;
 *	replace		a row's value or key changes within its partition: a leave
 *				and a join in one.
 *
 * Each step maps a uniform permutation to a uniform permutation of the new
 * multiset (tested with chi-square tests in sql/permutation.sql).  Any
 * other change goes to the reassignment (reassign.c), which carries old
 * partitions over by the same steps, pairing leavers with joiners at
 * random into replace steps, and lets rows of one statement joining a
 * partition whose bounds stay take the join step one after the other, in
 * memory.  All randomness comes from pg_strong_random.
 *
 * Why a replace step keeps the permutation uniform: renaming the leaver to
 * the joiner maps the uniform assignments of the old rows one to one onto
 * those of the new rows; then one row drawn uniformly among the b showing
 * the leaving value t shows the joining value u.  An assignment g of the
 * new multiset (u shown a + 1 times) arises from the a + 1 assignments that
 * show t on one of g's rows showing u, each with probability 1/b: every g
 * is equally likely.
 */
#include "postgres.h"

#include "utils/lsyscache.h"

#include "maintain_int.h"

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

/* partitions of up to this many slots are listed, not sampled */
#define LIST_SLOTS_UP_TO 64

/*
 * A uniformly random slot among those of partition pid (n slots before the
 * change) whose row shows value vd.  The departing row, already gone from
 * the table, is counted at its slot dslot with its published value dpub.
 * Choosing among equal values at random, not the first one found, keeps the
 * permutation uniform.  In a partition of up to LIST_SLOTS_UP_TO slots the
 * rows showing vd are listed (one scan of its slots, whatever vd); in a
 * larger one common values are found by sampling slots, rare ones by
 * listing them.  -1 if no slot shows vd.
 */
static int32
random_slot_showing(Watch *w, int64 pid, int64 n, int32 dslot, Datum dpub, Datum vd)
{
	const KeanonValueType *vt = &w->ki->vt;
	KeNum		target = KeanonDatumToNum(vt, vd);
	bool		departing_shows = ke_num_eq(vt->kind, KeanonDatumToNum(vt, dpub), target);

	for (int t = 0; t < 32 && n > LIST_SLOTS_UP_TO; t++)
	{
		int32		j = (int32) KeanonRandomBelow((uint64) n);
		ItemPointerData tid;
		Datum		pub;
		bool		pubnull;

		if (j == dslot)
		{
			if (departing_shows)
				return j;
			continue;
		}
		if (KeanonRowAtSlot(w, pid, j, &tid, &pub, &pubnull) && !pubnull &&
			ke_num_eq(vt->kind, target, KeanonDatumToNum(vt, pub)))
			return j;
	}
	/* a rare value: list the slots showing it */
	{
		int32	   *slots;
		uint64		nfound = (uint64) KeanonSlotsShowing(w, pid, vd, &slots);
		uint64		c = nfound + (departing_shows ? 1 : 0);
		uint64		r;

		if (c == 0)
			return -1;
		r = KeanonRandomBelow(c);
		return r == nfound ? dslot : slots[r];
	}
}

/* The row at a slot of a partition, which must be there */
static void
row_at_slot(Watch *w, int64 pid, int32 slot, ItemPointer tid, Datum *pub)
{
	bool		pubnull;

	if (!KeanonRowAtSlot(w, pid, slot, tid, pub, &pubnull) || (pub != NULL && pubnull))
		elog(ERROR, "keanon: slot %d of partition %lld of %s is missing",
			 slot, (long long) pid, get_rel_name(w->relid));
}

/* Make the row at a slot of a partition show value vd */
static void
set_published(Watch *w, int64 pid, int32 slot, Datum vd)
{
	ItemPointerData tid;

	row_at_slot(w, pid, slot, &tid, NULL);
	KeanonRowMove(w, &tid, NULL, NULL, &vd);
}

/* Make the row at a slot of a partition show vd; returns what it showed */
static Datum
exchange_published(Watch *w, int64 pid, int32 slot, Datum vd)
{
	ItemPointerData tid;
	Datum		was;

	row_at_slot(w, pid, slot, &tid, &was);
	KeanonRowMove(w, &tid, NULL, NULL, &vd);
	return was;
}

/* Move the row at slot from of a partition to slot to */
static void
move_slot(Watch *w, int64 pid, int32 from, int32 to)
{
	ItemPointerData tid;

	row_at_slot(w, pid, from, &tid, NULL);
	KeanonRowMove(w, &tid, NULL, &to, NULL);
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
	int32		y = (int32) KeanonRandomBelow((uint64) n + 1);

	if (y < n)
		move_slot(w, pid, y, n);
	return y;
}

/*
 * The O(1) path for one row joining a partition whose bounds and end stay
 * put: inside-out shuffle.  False when the situation is not that simple.
 */
static bool
join_partition(Watch *w, KeNum v, Datum vd)
{
	KePartition part;
	KePartition *p = &part;
	KeanonOldPart stored;
	Datum		pub;
	int64		pid,
				n;
	uint64		j;

	if (!only_partition_at(w, v, p))
		return false;
	if (!KeanonPartEndingAt(w, p->hi, false, &stored) || stored.part.hi_split != p->hi_split)
		return false;
	pid = stored.pid;
	n = stored.part.n;
	if (n + 1 != p->n)
		return false;

	/* the newcomer swaps published values with slot j, then takes a slot */
	j = KeanonRandomBelow((uint64) n + 1);
	pub = (int64) j < n ? exchange_published(w, pid, (int32) j, vd) : vd;
	place_fresh_row(w, pid, random_slot_for_newcomer(w, pid, (int32) n), pub);
	KeanonPartChanged(w, pid, p->lo, NULL, &vd);
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
	KeanonOldPart pa,
				pb;
	PlacedRow	old;
	int64		pid_a,
				pid_b,
				n_a;
	Datum		moved_pub;
	uint64		j;

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
	if (!KeanonPartEndingAt(w, v, false, &pa) || !pa.part.hi_split ||
		pa.part.n + 1 != a->n || !ke_num_eq(kind, a->lo, pa.part.lo) ||
		pa.part.lo_last_only != a->lo_last_only)
		return false;
	if (!KeanonPartEndingAt(w, v, true, &pb) || pb.part.n != b->n ||
		!ke_num_eq(kind, v, pb.part.lo) || !pb.part.lo_last_only ||
		!ke_num_eq(kind, b->hi, pb.part.hi) || pb.part.hi_split != b->hi_split)
		return false;
	pid_a = pa.pid;
	n_a = pa.part.n;
	pid_b = pb.pid;

	/*
	 * The previous last row of the run, the later partition's one row of
	 * value v, and the newcomer arriving after it.  The partition records
	 * the row's slot when it was placed; slots can move since, so the row
	 * there is checked, and the partition searched when it is not the one.
	 */
	if (pb.lo_slot < 0 || !KeanonPlacedRowAt(w, pid_b, pb.lo_slot, &old) ||
		!ke_num_eq(kind, old.num, v))
	{
		int64		nrows,
					found = 0;
		PlacedRow  *rows = KeanonRowsOfPartitions(w, &pid_b, 1, &nrows);

		for (int64 i = 0; i < nrows; i++)
			if (ke_num_eq(kind, rows[i].num, v) && found++ == 0)
				old = rows[i];
		pfree(rows);
		if (found != 1)
			return false;
	}
	if (w->fresh == NULL || w->fresh->n != 1 || w->fresh->arrival0 + 1 <= old.arrival)
		return false;

	/* that row joins the earlier partition at a random slot */
	j = KeanonRandomBelow((uint64) n_a + 1);
	moved_pub = (int64) j < n_a ? exchange_published(w, pid_a, (int32) j, vd) : vd;
	{
		int32		new_slot = random_slot_for_newcomer(w, pid_a, (int32) n_a);

		KeanonRowMove(w, &old.tid, &pid_a, &new_slot, &moved_pub);
	}

	/* the newcomer takes its place in the later partition */
	place_fresh_row(w, pid_b, old.slot, old.pub);
	KeanonPartChanged(w, pid_a, a->lo, NULL, &vd);
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
	KePartition part;
	KePartition *p = &part;
	KeanonOldPart stored;
	int64		n;

	if (!KeanonPartById(w, pid, &stored))
		return false;
	n = stored.part.n;
	if (!partition_at_ending(w, v, stored.part.hi, stored.part.hi_split, p) || n - 1 != p->n)
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
		move_slot(w, pid, (int32) (n - 1), slot);
	KeanonPartChanged(w, pid, p->lo, &vd, NULL);
	/* the partition no longer counts the departed row */
	w->ngone = 0;
	return true;
}

/*
 * The same for one row of an UPDATE leaving for a place where boundaries
 * moved (a new extreme, say): the leave is taken in place when its
 * partition keeps both bounds and the arrival lands outside them, so that
 * the partition is exactly the old one less the departed row, and the
 * reassignment need not read it, however large it is.
 */
static bool
leave_kept_partition(Watch *w, KeNum v, Datum vd, int64 pid, int32 slot, Datum pub,
					 KeNum ins_v)
{
	KeKind		kind = w->ki->vt.kind;
	KeanonOldPart stored;
	KePartition part;

	if (!KeanonPartById(w, pid, &stored) ||
		!partition_at_ending(w, v, stored.part.hi, stored.part.hi_split, &part) ||
		!ke_num_eq(kind, part.lo, stored.part.lo) ||
		part.lo_last_only != stored.part.lo_last_only ||
		!(ke_num_cmp(kind, ins_v, stored.part.lo) < 0 ||
		  ke_num_cmp(kind, ins_v, stored.part.hi) > 0))
		return false;
	if (!leave_partition(w, v, vd, pid, slot, pub))
		return false;
	/* the reassignment reads the partition's new summary */
	CommandCounterIncrement();
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
	KeanonOldPart stored;
	int32		s_slot;

	if (!only_partition_at(w, ins_v, &part) || !only_partition_at(w, del_v, &dpart) ||
		!ke_num_eq(vt->kind, part.hi, dpart.hi) || part.hi_split != dpart.hi_split)
		return false;
	if (!KeanonPartById(w, pid, &stored) || stored.part.n != part.n ||
		!ke_num_eq(vt->kind, part.hi, stored.part.hi) || stored.part.hi_split != part.hi_split)
		return false;

	/* a random slot showing the departing value shows the new value */
	s_slot = random_slot_showing(w, pid, part.n, slot, pub, del_d);
	if (s_slot < 0)
		elog(ERROR, "keanon: partition %lld of %s does not publish the value of a departing row",
			 (long long) pid, get_rel_name(w->relid));
	if (s_slot != slot)
		set_published(w, pid, s_slot, ins_d);
	place_fresh_row(w, pid, slot, s_slot == slot ? ins_d : pub);
	KeanonPartChanged(w, pid, part.lo, &del_d, &ins_d);
	return true;
}

/*
 * Make the published view agree with the engine after a batch whose rows
 * had the (sorted) values cv.  The rows themselves moved even where the
 * engine saw no net change (a key updated, a value deleted and inserted
 * again), so the range to republish always covers them.
 */
void
KeanonRepublishChanges(Watch *w, const KeNum *cv, int ncv, int nins, KeNum ins_v, Datum ins_d,
				  int ndel, KeNum del_v, Datum del_d, int64 del_pid, int32 del_slot,
				  Datum del_pub, bool del_had_pid)
{
	const KeChangeInfo *ci = ke_last_change(w->ki->engine);
	KeKind		kind = w->ki->vt.kind;
	KeNum		lo,
				hi;
	KeNum		dummy;
	bool		moved;

	if (!ke_sum_error(w->ki->engine, &dummy))
	{
		KeanonSuppressAll(w);
		return;
	}
	/*
	 * One row joining, leaving or replaced where no boundary moved (in a
	 * batch applied change by change, as an UPDATE's two changes are, where
	 * none of its changes moved one): the O(1) steps
	 */
	moved = w->nranges > 0 ? w->ranges_moved : ci->boundaries_changed;
	if (!moved && nins + ndel == 1)
	{
		if (nins == 1 && (join_partition(w, ins_v, ins_d) || split_join(w, ins_v, ins_d)))
			return;
		if (ndel == 1 && del_had_pid &&
			leave_partition(w, del_v, del_d, del_pid, del_slot, del_pub))
			return;
	}
	if (!moved && nins == 1 && ndel == 1 && del_had_pid)
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

	/*
	 * A row leaving a partition that keeps its bounds for one where they
	 * moved leaves in place; its value then counts as no change in any
	 * partition, so the reassignment reads only where the arrival went.
	 */
	if (moved && nins == 1 && ndel == 1 && del_had_pid && ncv == 2 &&
		leave_kept_partition(w, del_v, del_d, del_pid, del_slot, del_pub, ins_v))
	{
		KeNum	   *rest = palloc(sizeof(KeNum));

		rest[0] = ke_num_eq(kind, cv[0], del_v) ? cv[1] : cv[0];
		cv = rest;
		ncv = 1;
	}
	lo = cv[0];
	hi = cv[ncv - 1];
	/* a batch applied change by change: the ranges each may have moved */
	if (w->nranges > 0)
	{
		KeanonReassignRanges(w, w->ranges, w->nranges, cv, ncv);
		return;
	}
	if (ci->any)
	{
		if (!ci->lo_unbounded && ke_num_cmp(kind, ci->lo, lo) < 0)
			lo = ci->lo;
		if (!ci->hi_unbounded && ke_num_cmp(kind, ci->hi, hi) > 0)
			hi = ci->hi;
	}
	KeanonReassign(w, ci->any && ci->lo_unbounded, lo, ci->any && ci->hi_unbounded, hi, cv, ncv);
}

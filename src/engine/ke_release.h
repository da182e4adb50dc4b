/*
 * ke_release.h
 *		The plan of a release that reveals nothing by subtraction
 *		(ke_release.c).
 */
#ifndef KE_RELEASE_H
#define KE_RELEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ke_num.h"

typedef struct KeReleaseItem
{
	bool		block;			/* a partition of the previous release */
	KeNum		lo;				/* the item's value range (a run: lo = hi) */
	KeNum		hi;
	int64_t		kept;			/* a block: the rows it holds already */
	int64_t		rows;			/* arrivals in it (a block: within its range) */
	int64_t		distinct;		/* their distinct values */
	KeNum		amin;			/* their least and greatest (when rows > 0) */
	KeNum		amax;
} KeReleaseItem;

extern int64_t ke_release_plan(KeKind kind, int k, KeNum e, const KeReleaseItem *items,
							   size_t n, int64_t *part, bool *released, int64_t *admitted,
							   KeNum *error);

#endif							/* KE_RELEASE_H */

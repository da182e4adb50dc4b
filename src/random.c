/*
 * random.c
 *		Uniform draws from a strong source, for every random choice of a
 *		publication: slots, permutations and the rows a step picks.
 *
 * The published permutation must not be predictable from anything a
 * reader sees, so every draw comes from pg_strong_random, taken in blocks
 * (one call per draw costs more than a shuffle) and cut without modulo
 * bias.
 */
#include "postgres.h"

#include "random.h"

/* A uniformly random integer in [0, n) from a strong source */
uint64
KeanonRandomBelow(uint64 n)
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

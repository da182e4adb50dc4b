/*
 * kc_zkey.c
 *		Space-filling-curve keys of points, for a store that finds the
 *		groups near a row by a window of a one-dimensional index (a btree
 *		over the key of each group's place) instead of a spatial one.
 *
 * A point's coordinates are scaled by kc_weight (a numeric dimension's
 * after subtracting its origin, 0 unless one is given), clamped to [0, 1]
 * and quantized to B = min(16, floor(62 / ndims)) bits per dimension (1
 * bit for the first 62 dimensions when there are more); the B * ndims bits
 * of the cell are then ordered along a Z-order (Morton) or Hilbert curve.
 * Keys use at most 62 bits, so they are non-negative as a PostgreSQL
 * bigint.  A categorical dimension's coordinate (a leaf number) scales to
 * [0, 1) by itself; a numeric one's lies in [0, 1] only when it is
 * measured from the least value of the dimension's span.
 *
 * Morton interleaves the bits, most significant first, dimension 0 first
 * at each level: the key is monotone in each coordinate.  Hilbert uses
 * Skilling's transposition ("Programming the Hilbert curve", AIP Conf.
 * Proc. 707, 2004): O(ndims * B) operations, consecutive keys are cells
 * adjacent in one dimension.
 */
#include <math.h>
#include <string.h>

#include "kc_cluster.h"

#define KEY_BITS	62
#define MAX_BITS	16

/* Bits per dimension and dimensions used, as the header describes */
static void
key_shape(int ndims, int *bits, int *used)
{
	*used = ndims < KEY_BITS ? ndims : KEY_BITS;
	*bits = *used > 0 ? KEY_BITS / *used : 0;
	if (*bits > MAX_BITS)
		*bits = MAX_BITS;
}

/* Quantize coordinate d of x to bits bits */
static uint32_t
quantize(const KcSchema *s, const double *origin, const double *x, int d, int bits)
{
	double		v = x[d];
	double		cells = (double) (UINT32_C(1) << bits);

	if (origin != NULL && s->dims[d].kind == KC_NUMERIC)
		v -= origin[d];
	v *= kc_weight(s, d);
	if (!(v > 0.0))				/* also NaN */
		return 0;
	v *= cells;
	if (v >= cells - 1.0)
		return (uint32_t) (cells - 1.0);
	return (uint32_t) v;
}

/* Interleave the bits of q[0 .. n - 1], most significant level first */
static uint64_t
interleave(const uint32_t *q, int n, int bits)
{
	uint64_t	key = 0;

	for (int b = bits - 1; b >= 0; b--)
		for (int d = 0; d < n; d++)
			key = (key << 1) | ((q[d] >> b) & 1);
	return key;
}

/* Skilling's AxestoTranspose, in place: q becomes the transposed index */
static void
hilbert_transpose(uint32_t *q, int n, int bits)
{
	uint32_t	m = UINT32_C(1) << (bits - 1);
	uint32_t	t;

	/* inverse undo */
	for (uint32_t b = m; b > 1; b >>= 1)
	{
		uint32_t	p = b - 1;

		for (int i = 0; i < n; i++)
		{
			if (q[i] & b)
				q[0] ^= p;		/* invert */
			else
			{
				t = (q[0] ^ q[i]) & p;	/* exchange */
				q[0] ^= t;
				q[i] ^= t;
			}
		}
	}
	/* Gray encode */
	for (int i = 1; i < n; i++)
		q[i] ^= q[i - 1];
	t = 0;
	for (uint32_t b = m; b > 1; b >>= 1)
		if (q[n - 1] & b)
			t ^= b - 1;
	for (int i = 0; i < n; i++)
		q[i] ^= t;
}

uint64_t
kc_curve_key(const KcSchema *s, const double *origin, const double *x, KcCurve curve)
{
	uint32_t	q[KC_MAX_DIMS];
	int			bits;
	int			used;

	if (s == NULL || x == NULL || s->ndims <= 0 || s->ndims > KC_MAX_DIMS)
		return 0;
	key_shape(s->ndims, &bits, &used);
	for (int d = 0; d < used; d++)
		q[d] = quantize(s, origin, x, d, bits);
	if (curve == KC_CURVE_HILBERT)
		hilbert_transpose(q, used, bits);
	return interleave(q, used, bits);
}

uint64_t
kc_zkey(const KcSchema *s, const double *x)
{
	return kc_curve_key(s, NULL, x, KC_CURVE_MORTON);
}

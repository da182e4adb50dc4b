/*
 * ke_num.h
 *		Numbers of the (k,e) engine: sensitive values, e and sum-errors.
 *
 * The engine works in one of two kinds, fixed when an engine is created:
 *
 *	KE_KIND_EXACT	values are 128-bit integers.  Integer columns map to them
 *					directly and numeric columns as integers scaled by a power
 *					of ten, so differences, sums of errors and the comparison
 *					with e are exact.
 *	KE_KIND_FLOAT	values are doubles (real and double precision columns);
 *					sums of errors round as double arithmetic does.
 *
 * Whether a valid partitioning ends somewhere is a flag of its own beside
 * the error, never a special value of it: in the float kind a valid
 * partitioning's error can itself overflow to infinity.  ke_num_inf() and
 * ke_num_is_inf() remain for the legacy arrays of ke_constrained_dp() only.
 *
 * This header needs no PostgreSQL header, so the engine can be compiled,
 * unit-tested and benchmarked on its own.
 */
#ifndef KE_NUM_H
#define KE_NUM_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum KeKind
{
	KE_KIND_EXACT = 0,
	KE_KIND_FLOAT = 1
} KeKind;

/*
 * 8-byte alignment keeps the numbers usable inside database pages, whose
 * items are only MAXALIGNed; the compiler then emits unaligned-safe loads.
 */
typedef __int128 ke_int128 __attribute__((aligned(8)));

typedef union KeNum
{
	ke_int128	i;
	double		f;
} KeNum;

/* the exact kind's infinity in ke_constrained_dp()'s legacy arrays */
#define KE_EXACT_INF	(((ke_int128) 1) << 120)

/*
 * Exact-kind values lie strictly between -KE_VALUE_LIMIT and KE_VALUE_LIMIT,
 * so that differences, sums of partition ranges and the DP's running
 * minima stay far inside 128 bits.
 */
#define KE_VALUE_LIMIT	(((ke_int128) 1) << 118)

/* Make an exact-kind number from a 64-bit integer */
static inline KeNum
ke_num_int(int64_t x)
{
	KeNum		n;

	n.i = x;
	return n;
}

/* Make a float-kind number from a double */
static inline KeNum
ke_num_float(double x)
{
	KeNum		n;

	n.i = 0;
	n.f = x;
	return n;
}

/* Make a number of the given kind from a 64-bit integer */
static inline KeNum
ke_num_from_int(KeKind kind, int64_t x)
{
	return kind == KE_KIND_EXACT ? ke_num_int(x) : ke_num_float((double) x);
}

/* Infinity of the given kind (legacy DP arrays only) */
static inline KeNum
ke_num_inf(KeKind kind)
{
	return kind == KE_KIND_EXACT ? (KeNum) {.i = KE_EXACT_INF} : ke_num_float(INFINITY);
}

/* Zero of the given kind */
static inline KeNum
ke_num_zero(KeKind kind)
{
	return kind == KE_KIND_EXACT ? ke_num_int(0) : ke_num_float(0.0);
}

/* Is x the infinity of its kind (legacy DP arrays only)? */
static inline bool
ke_num_is_inf(KeKind kind, KeNum x)
{
	return kind == KE_KIND_EXACT ? x.i >= KE_EXACT_INF / 2 : isinf(x.f);
}

/* Three-way comparison */
static inline int
ke_num_cmp(KeKind kind, KeNum a, KeNum b)
{
	if (kind == KE_KIND_EXACT)
		return (a.i > b.i) - (a.i < b.i);
	return (a.f > b.f) - (a.f < b.f);
}

/* a <= b */
static inline bool
ke_num_le(KeKind kind, KeNum a, KeNum b)
{
	return kind == KE_KIND_EXACT ? a.i <= b.i : a.f <= b.f;
}

/* a == b */
static inline bool
ke_num_eq(KeKind kind, KeNum a, KeNum b)
{
	return kind == KE_KIND_EXACT ? a.i == b.i : a.f == b.f;
}

/* a + b */
static inline KeNum
ke_num_add(KeKind kind, KeNum a, KeNum b)
{
	if (kind == KE_KIND_EXACT)
		return (KeNum) {.i = a.i + b.i};
	return ke_num_float(a.f + b.f);
}

/* a - b */
static inline KeNum
ke_num_sub(KeKind kind, KeNum a, KeNum b)
{
	if (kind == KE_KIND_EXACT)
		return (KeNum) {.i = a.i - b.i};
	return ke_num_float(a.f - b.f);
}

/* The range test of a partition: hi - lo >= e, as every algorithm does it */
static inline bool
ke_num_range_ok(KeKind kind, KeNum lo, KeNum hi, KeNum e)
{
	if (kind == KE_KIND_EXACT)
		return hi.i - lo.i >= e.i;
	return hi.f - lo.f >= e.f;
}

/* Is x finite?  Exact-kind numbers always are */
static inline bool
ke_num_finite(KeKind kind, KeNum x)
{
	return kind == KE_KIND_EXACT || isfinite(x.f);
}

/* Approximate value as a double, for reports */
static inline double
ke_num_to_double(KeKind kind, KeNum x)
{
	return kind == KE_KIND_EXACT ? (double) x.i : x.f;
}

/* Format x into buf (at least 48 bytes); returns buf */
static inline char *
ke_num_format(KeKind kind, KeNum x, char *buf, size_t len)
{
	if (kind == KE_KIND_FLOAT)
		snprintf(buf, len, "%.17g", x.f);
	else
	{
		char		tmp[48];
		int			pos = (int) sizeof(tmp) - 1;
		ke_int128	v = x.i;
		bool		neg = v < 0;
		unsigned __int128 u = neg ? -(unsigned __int128) v : (unsigned __int128) v;

		tmp[pos] = '\0';
		do
		{
			tmp[--pos] = (char) ('0' + (int) (u % 10));
			u /= 10;
		} while (u != 0);
		if (neg)
			tmp[--pos] = '-';
		snprintf(buf, len, "%s", tmp + pos);
	}
	return buf;
}

#endif							/* KE_NUM_H */

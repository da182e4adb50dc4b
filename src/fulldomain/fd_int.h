/*
 * fd_int.h
 *		State shared by the full-domain module's files; not for callers.
 *
 * fd_prepare copies the active rows' codes into the context (row i of the
 * context is row row_id[i] of the caller's table), so that a pass over the
 * rows reads contiguous arrays, and derives what every check needs: a
 * representative leaf of each code at each level (to roll a group's codes
 * up to a coarser level), the distinct codes of each level over all rows
 * (the score's upper bounds), the whole table's sensitive distribution.
 *
 * A group table holds one entry per distinct tuple of generalized codes:
 * the codes, their key (packed or hashed), the row count and, when a
 * diversity or closeness criterion is on, the histogram of sensitive codes.
 * The cache keeps the last few such tables so that a coarser node is built
 * from a finer one's groups; the memo keeps every evaluated node's
 * measures.  The folded rows (base_*) are the distinct (leaf codes,
 * sensitive code) pairs with their counts, which a check passes over when
 * no finer table is cached.
 */
#ifndef FD_INT_H
#define FD_INT_H

#include "fd_anon.h"

#define FD_CACHE_SLOTS		8
#define FD_CACHE_BYTES		((size_t) 256 * 1024 * 1024)
#define FD_DENSE_CELLS		((size_t) 1 << 20)	/* largest direct count */
#define FD_EMD_SLACK		1e-9	/* EMD <= t + slack passes */

/* The groups of one node's table */
typedef struct FdGroups
{
	uint8_t		levels[FD_MAX_QI];
	int			ngroups;
	int			cap;
	uint32_t   *codes;			/* [cap * nqi] */
	uint64_t   *key;			/* [cap] the codes packed, or their hash */
	int		   *size;			/* [cap] */
	uint32_t   *hist;			/* [cap * nhist], NULL when nhist == 0 */
	int		   *slot;			/* [hmask + 1]: group index or -1 */
	uint32_t	hmask;
	uint64_t	used;			/* last use, for eviction */
} FdGroups;

/* One memorized node */
typedef struct FdMemoEntry
{
	bool		full;
	uint8_t		levels[FD_MAX_QI];
	FdMeasures	m;
} FdMemoEntry;

struct FdContext
{
	int			nrows;			/* active rows */
	int			orig_nrows;
	int			nqi;
	int			nsens;
	int			nhist;			/* nsens when histograms are needed, else 0 */
	bool		numeric;
	bool		monotone;		/* qualification is monotone (see fd_optimal.c) */
	FdParams	p;
	int			nlevels[FD_MAX_QI];
	int			maxlev[FD_MAX_QI];	/* min(max_level, H) */
	const uint32_t *const *map[FD_MAX_QI];	/* the caller's map[a][l] */
	const uint32_t *ncodes[FD_MAX_QI];
	bool		packed;			/* a tuple of codes fits in a uint64 key */
	int			shift[FD_MAX_QI];	/* of each QI's code in a packed key */
	uint64_t	kmask[FD_MAX_QI];	/* its bits, before shifting */
	int			keybits;		/* bits of a packed key */
	uint32_t   *rep[FD_MAX_QI][FD_MAX_LEVELS];	/* a leaf of each code */
	int			e_full[FD_MAX_QI][FD_MAX_LEVELS];	/* distinct codes, all rows */
	double		eta_d[FD_MAX_QI];
	uint32_t   *qi[FD_MAX_QI];	/* [nrows] leaf codes of active rows */
	uint32_t   *sens;			/* [nrows] */
	int		   *row_id;			/* [nrows] the caller's row number */
	/* the rows folded into distinct (leaf codes, sensitive code) with counts */
	int			nbase;
	uint32_t   *base_qi[FD_MAX_QI];	/* [nbase] leaf codes */
	uint32_t   *base_sens;		/* [nbase] */
	int		   *base_w;			/* [nbase] rows folded into each */
	double	   *qdist;			/* [nsens] whole-table distribution */
	int			distinct_sens;
	/* scratch for evaluating groups */
	uint32_t   *stamp[FD_MAX_QI];	/* [largest ncodes] */
	uint64_t   *trans[FD_MAX_QI];	/* [largest ncodes] key or cell parts */
	uint32_t	stampval;
	uint32_t   *sorted;			/* [nsens] */
	uint32_t   *dense;			/* [dense_cap] cells of a direct count, zeroed */
	size_t		dense_cap;
	size_t		dense_limit;	/* most cells a direct count may take */
	/* cache of group tables and memo of measures */
	FdGroups   *cache[FD_CACHE_SLOTS];
	uint64_t	clock;
	FdMemoEntry *memo;
	uint32_t	memo_mask;
	int			memo_count;
	FdCounters	counters;
};

/* fd_prepare.c */
extern FdStatus fd_check_table(const FdTable *t, FdError *err);
extern void fd_seterr(FdError *err, FdStatus st, int qi, const char *fmt,...)
			__attribute__((format(printf, 4, 5)));

/* fd_groups.c */
extern FdGroups *fd_groups_new(const FdContext *ctx, int cap);
extern void fd_groups_free(FdGroups *g);
extern FdGroups *fd_groups_scan(const FdContext *ctx, const int *levels, int *row_group);
extern int	fd_groups_find(const FdContext *ctx, FdGroups *g, const uint32_t *codes,
						   uint64_t key, bool *fresh);
extern uint64_t fd_hash_codes(const uint32_t *codes, int n);
extern uint64_t fd_group_key(const FdContext *ctx, const uint32_t *codes);
extern bool fd_group_passes(const FdContext *ctx, int size, const uint32_t *hist,
							int *distinct, int *recl, double *emd);
extern void fd_cache_clear(FdContext *ctx);
extern FdStatus fd_base_build(FdContext *ctx);
extern void fd_base_free(FdContext *ctx);

/* fd_score.c */
extern double fd_score_bound_node(const FdContext *ctx, const int *levels);
extern double fd_score_bound_degen(const FdContext *ctx, const FdMeasures *m,
								   const int *levels, int a);

/* fd_frost.c */
extern void fd_priority_order(const FdContext *ctx, int *order);
extern FdStatus fd_frost(FdContext *ctx, const FdSearchOpts *o, int *node,
						 FdError *err);

/* fd_optimal.c */
extern FdStatus fd_optimal(FdContext *ctx, const FdSearchOpts *o, int *node,
						   FdError *err);

/* fd_partial.c */
extern FdStatus fd_publish(FdContext *ctx, const int *node, bool refine,
						   FdResult *r);

#endif							/* FD_INT_H */

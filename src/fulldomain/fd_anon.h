/*
 * fd_anon.h
 *		Full-domain generalization of an in-memory, dictionary-encoded
 *		table: the check of one lattice node, PrivacyFrost2's search
 *		(Kiyomoto and Miyake, CD-ARES 2014) and an exact search of the
 *		whole lattice.
 *
 * The caller encodes the table.  Each quasi-identifier a has leaf codes
 * 0 .. L_a - 1 and levels 0 .. H_a: map[l][leaf] is the leaf's
 * generalization at level l (level 0 is the leaf itself) and codes at level
 * l are 0 .. ncodes[l] - 1.  Levels must nest: two leaves that share a code
 * at level l share one at level l + 1, as levels built from a (value,
 * parent) tree do.  The sensitive attribute has codes 0 .. S - 1, in value
 * order when it is numeric.
 *
 * A node gives each quasi-identifier a level.  Its table groups the rows by
 * their generalized codes; a group fails when it has fewer than k rows, or
 * fewer than l distinct sensitive values, or breaks recursive (c,l)
 * diversity, or lies farther than t (EMD) from the whole table's
 * sensitive distribution.  The rows of failing groups are suppressed; the
 * node qualifies when at most max_suppressed rows are and at least one row
 * is published.
 *
 * Usage: fill an FdTable and FdParams (fd_params_init gives defaults),
 * optionally run fd_presample and set table.active, call fd_prepare, then
 * fd_check or fd_search as often as wanted, and fd_free.  Every function
 * returns FD_OK or a status whose FdError names the problem.  Memory comes
 * from ke_malloc; no PostgreSQL header is needed.
 */
#ifndef FD_ANON_H
#define FD_ANON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FD_MAX_QI		32			/* quasi-identifiers */
#define FD_MAX_LEVELS	64			/* levels of one hierarchy (H + 1) */
#define FD_T_OFF		(-1.0)		/* FdParams.t when t-closeness is off */

/* Per-row marks in FdResult.row_class */
#define FD_ROW_SUPPRESSED	(-1)	/* in a failing group */
#define FD_ROW_REMOVED		(-2)	/* left out by pre-sampling (table.active) */

typedef enum FdStatus
{
	FD_OK = 0,
	FD_ERR_ARG,					/* a malformed table or parameter */
	FD_ERR_HIERARCHY,			/* a hierarchy that is not nested or in range */
	FD_ERR_K_TOO_LARGE,			/* k above the number of rows */
	FD_ERR_L_TOO_LARGE,			/* l above the distinct sensitive values */
	FD_ERR_LATTICE_TOO_LARGE,	/* optimal: more nodes than max_nodes */
	FD_ERR_NO_SOLUTION,			/* no node qualifies */
	FD_ERR_NOMEM				/* an allocation failed */
} FdStatus;

/* The problem behind a status: a message naming the attribute or value */
typedef struct FdError
{
	FdStatus	status;
	int			qi;				/* the quasi-identifier at fault, or -1 */
	char		message[256];
} FdError;

/* One quasi-identifier's hierarchy; all arrays belong to the caller */
typedef struct FdHierarchy
{
	int			nleaves;		/* L_a */
	int			nlevels;		/* H_a + 1, at least 1 */
	const uint32_t *const *map; /* [nlevels][nleaves]; map[0] the identity */
	const uint32_t *ncodes;		/* [nlevels]; ncodes[0] == nleaves */
} FdHierarchy;

/* The encoded table; all arrays belong to the caller and outlive fd_free */
typedef struct FdTable
{
	int			nrows;
	int			nqi;			/* 1 .. FD_MAX_QI */
	const uint32_t *const *qi;	/* [nqi][nrows] leaf codes */
	const FdHierarchy *hier;	/* [nqi] */
	const uint32_t *sens;		/* [nrows] sensitive codes */
	int			nsens;			/* S */
	bool		sens_numeric;	/* ordered EMD, else equal-distance EMD */
	const double *sens_values;	/* [nsens] or NULL: numeric values, never
								 * decreasing (distinct values may round to
								 * one double) */
	const uint8_t *active;		/* [nrows] or NULL: rows to anonymize */
} FdTable;

typedef enum FdScoring
{
	FD_SCORE_BASIC = 0,			/* sum v(a) e(a) */
	FD_SCORE_ETA,				/* sum v(a) eta(e(a)) */
	FD_SCORE_LOG				/* max v(a) log e(a) / log e_b(a) */
} FdScoring;

typedef struct FdParams
{
	int			k;				/* >= 1 */
	int			l_distinct;		/* distinct l-diversity; 0: off */
	double		rec_c;			/* recursive (c,l)-diversity when rec_l > 0 */
	int			rec_l;			/* 0: off */
	double		t;				/* t-closeness; FD_T_OFF: off */
	int			max_suppressed; /* rows of failing groups that may be dropped */
	FdScoring	scoring;
	double		priority[FD_MAX_QI];	/* v(a) > 0; default 1 */
	double		eta_d;			/* d of eta(); <= 0: d(a) = e_b(a) / 2 */
	int			max_level[FD_MAX_QI];	/* generalize no higher; -1: H_a */
	int			p;				/* PrivacyFrost2's k + p start; default 0 */
} FdParams;

/* What a node's table looks like; minima and maxima over published groups */
typedef struct FdMeasures
{
	bool		qualifies;
	int			groups;			/* published (non-failing) groups */
	int			min_group;		/* smallest published group */
	int			min_distinct;	/* least distinct sensitive values in one */
	int			min_recursive_l;	/* least greatest l with (c,l) in one */
	double		max_emd;		/* largest EMD of one */
	int			failing_groups;
	int			suppressed;		/* rows of failing groups */
	double		score;			/* over published rows; higher is better */
	int			e[FD_MAX_QI];	/* distinct values of each QI published */
} FdMeasures;

typedef struct FdCounters
{
	int64_t		checks;			/* nodes evaluated (group tables built) */
	int64_t		rollups;		/* of which from a cached finer node */
	int64_t		scans;			/* of which by a pass over the rows */
	int64_t		memo_hits;		/* repeated questions answered from memory */
	int64_t		bound_skips;	/* nodes skipped by the score bound */
	int64_t		tagged;			/* optimal: nodes decided by tagging */
	int64_t		lattice_nodes;	/* optimal: nodes in the lattice */
} FdCounters;

typedef enum FdMethod
{
	FD_METHOD_FROST = 0,		/* PrivacyFrost2 */
	FD_METHOD_OPTIMAL			/* best score over the whole lattice */
} FdMethod;

typedef struct FdSearchOpts
{
	FdMethod	method;
	bool		extension;		/* PrivacyFrost2's 2nd top-down/bottom-up */
	bool		partial;		/* partial-domain de-generalization */
	int64_t		max_nodes;		/* optimal: largest lattice accepted */
} FdSearchOpts;

/* Pre-sampling: rows in groups of fewer than kprime at levels u are left out */
typedef struct FdPresample
{
	int			level[FD_MAX_QI];	/* u(a), clamped to H_a */
	int			kprime;
	double		fraction;		/* in (0, 1): first keep each row with this
								 * probability; 0 or >= 1: keep all */
	uint64_t	seed;			/* of the generator behind fraction */
} FdPresample;

/*
 * The search's answer.  A published class is a set of rows with the same
 * codes at its own levels: the node's levels, finer on some attributes
 * for classes that partial-domain de-generalization refined.  Row r
 * (numbered as in the table) is published as, for each QI a,
 * class_codes[c * nqi + a] at level class_levels[c * nqi + a] where
 * c = row_class[r] >= 0; otherwise it is suppressed or was removed.
 */
typedef struct FdResult
{
	int			nqi;
	int			nrows;
	int			node[FD_MAX_QI];	/* the chosen full-domain node */
	FdMeasures	full;			/* the full-domain table at node */
	FdMeasures	final;			/* the published table (after refinement) */
	int			nclasses;
	int			nrefined;		/* classes finer than node on some QI */
	uint8_t    *class_levels;	/* [nclasses * nqi] */
	uint32_t   *class_codes;	/* [nclasses * nqi] */
	int		   *class_size;		/* [nclasses] */
	int		   *row_class;		/* [nrows] */
	int			removed;		/* rows left out by pre-sampling */
	FdCounters	counters;		/* of this search alone */
} FdResult;

typedef struct FdContext FdContext;

/* fd_prepare.c */
extern void fd_params_init(FdParams *p);
extern void fd_search_opts_init(FdSearchOpts *o);
extern const char *fd_status_name(FdStatus st);
extern FdStatus fd_prepare(const FdTable *t, const FdParams *p, FdContext **ctx,
						   FdError *err);
extern void fd_free(FdContext *ctx);
extern void fd_get_counters(const FdContext *ctx, FdCounters *c);

/* fd_groups.c */
extern FdStatus fd_check(FdContext *ctx, const int *levels, FdMeasures *m);

/* fd_score.c */
extern double fd_score(const FdContext *ctx, const int *e);

/* fd_search.c */
extern FdStatus fd_search(FdContext *ctx, const FdSearchOpts *o, FdResult **res,
						  FdError *err);
extern void fd_result_free(FdResult *r);

/* fd_partial.c */
extern FdStatus fd_presample(const FdTable *t, const FdPresample *ps,
							 uint8_t *keep, int *removed, FdError *err);

#endif							/* FD_ANON_H */

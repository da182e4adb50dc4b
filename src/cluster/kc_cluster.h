/*
 * kc_cluster.h
 *		Clustering of rows into k-anonymous groups, kept current under
 *		inserts and deletes: I3M and the similar-B-tree.
 *
 * A row is a point of ndims coordinates.  A numeric quasi-identifier's
 * coordinate is its value; a categorical one's is the number of its leaf
 * in a generalization hierarchy whose leaves are numbered in depth-first
 * order, so that every node's leaves are a contiguous interval and the
 * lowest common ancestor of a set of leaves is that of its least and
 * greatest (the group's box in that dimension).
 *
 * A group holds its count, its box (least and greatest coordinate in each
 * dimension) and the sum of its coordinates (the similar-B-tree's centre
 * is sum / n).  Its information loss (I3M, Definition 4) is
 *
 *		IL(g) = n * ( sum over numeric d of (hi - lo) / range(d)
 *					+ sum over categorical d of height(lca(lo, hi)) / height(d) )
 *
 * Invariant kept by every operation: every group holds between k and
 * 2k - 1 rows, but for the one group of a table of fewer than 2k rows,
 * which may hold fewer than k (then nothing is published).
 *
 * The groups and their members live behind a store interface (KcStore):
 * plain memory for tests and benchmarks, internal tables inside
 * PostgreSQL.  Finding the best group asks the store for the groups
 * nearest a point (by distance to their box for I3M, to their centre for
 * the similar-B-tree, in coordinates scaled by kc_weight), so that the
 * cost of a row grows with the logarithm of the number of groups when the
 * store answers from a spatial index; the exact choice among those
 * candidates is the core's.  No PostgreSQL header is needed.
 */
#ifndef KC_CLUSTER_H
#define KC_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KC_MAX_DIMS		64
#define KC_MAX_K		100000

typedef enum KcStatus
{
	KC_OK = 0,
	KC_ERR_ARG,					/* invalid argument */
	KC_ERR_NOMEM,				/* allocation failed */
	KC_ERR_CORRUPT				/* the store disagrees with itself */
} KcStatus;

typedef enum KcMethod
{
	KC_I3M = 0,					/* least growth of information loss */
	KC_SBTREE					/* nearest centre (similar-B-tree) */
} KcMethod;

typedef enum KcKind
{
	KC_NUMERIC = 0,
	KC_CATEGORICAL
} KcKind;

/*
 * A generalization hierarchy: nodes 0 .. nnodes - 1, leaves numbered
 * 0 .. nleaves - 1 in depth-first order.  height[n] is 0 for a leaf and
 * 1 + the greatest height of n's children otherwise; the root's parent
 * is -1.  All arrays belong to the caller and outlive the schema.
 */
typedef struct KcHierarchy
{
	int			nnodes;
	int			nleaves;
	int			root;
	const int  *parent;			/* [nnodes] */
	const int  *height;			/* [nnodes] */
	const int  *leaf_lo;		/* [nnodes] first leaf under the node */
	const int  *leaf_hi;		/* [nnodes] last leaf under the node */
	const int  *leaf_node;		/* [nleaves] the node of each leaf */
} KcHierarchy;

typedef struct KcDim
{
	KcKind		kind;
	double		range;			/* numeric: the span that costs 1 (> 0) */
	const KcHierarchy *h;		/* categorical */
} KcDim;

typedef struct KcSchema
{
	int			ndims;
	KcDim		dims[KC_MAX_DIMS];
	int			k;				/* at least 1 */
	KcMethod	method;
	int			candidates;		/* groups asked of the store per choice */
} KcSchema;

/* A group's summary; lo, hi and sum hold ndims coordinates each */
typedef struct KcGroup
{
	int64_t		gid;
	int64_t		n;
	double	   *lo;
	double	   *hi;
	double	   *sum;
} KcGroup;

/* A row: the store's handle for it and its coordinates (ndims) */
typedef struct KcRow
{
	int64_t		handle;
	const double *x;
} KcRow;

/*
 * The store.  Every callback returns KC_OK or an error status; a store
 * inside PostgreSQL may also throw.  Summaries passed in are the core's;
 * summaries filled out have their arrays provided by the core (ndims
 * each).
 *
 * nearest		the up to max groups nearest point x (box distance for
 *				I3M, centre distance for the similar-B-tree, in scaled
 *				coordinates), nearest first, skipping group except (or
 *				none when except < 0); *found is how many were filled
 * covering		the up to max groups whose published box contains x (x
 *				covered, I3M Definition 6: adding it leaves the group's
 *				generalization unchanged), skipping except: in a numeric
 *				dimension [lo, hi], in a categorical one every leaf under
 *				kc_lca(lo, hi)
 * get			the summary of group gid
 * members		the rows of group gid: *rows points at an array of *n the
 *				store keeps until the next call of members or the end of
 *				the operation
 * create		a new empty group; *gid receives its id
 * put			write a group's summary (after any change of its members)
 * drop		remove an empty group
 * place		make row a member of group gid (an arrival or a move)
 * count		the number of groups
 * all			every group: *gids points at an array of *n ids the store
 *				keeps until the next call of all or the end of the operation
 */
typedef struct KcStore
{
	void	   *arg;
	KcStatus	(*nearest) (void *arg, const double *x, int max, int64_t except,
							KcGroup *out, int *found);
	KcStatus	(*covering) (void *arg, const double *x, int max, int64_t except,
							 KcGroup *out, int *found);
	KcStatus	(*get) (void *arg, int64_t gid, KcGroup *out);
	KcStatus	(*members) (void *arg, int64_t gid, const KcRow **rows, int64_t *n);
	KcStatus	(*create) (void *arg, int64_t *gid);
	KcStatus	(*put) (void *arg, const KcGroup *g);
	KcStatus	(*drop) (void *arg, int64_t gid);
	KcStatus	(*place) (void *arg, const KcRow *row, int64_t gid);
	KcStatus	(*count) (void *arg, int64_t *ngroups);
	KcStatus	(*all) (void *arg, const int64_t **gids, int64_t *n);
} KcStore;

/* ----------------------------------------------------------------
 * Costs
 * ----------------------------------------------------------------
 */

/* The weight that scales dimension d's coordinates for the store's distance */
extern double kc_weight(const KcSchema *s, int d);

/*
 * Space-filling-curve keys (kc_zkey.c), for a store that looks up the
 * groups near a point in a window of a one-dimensional index over the key
 * of each group's place.  Each coordinate, less origin[d] for a numeric
 * dimension when origin is not NULL, is scaled by kc_weight, clamped to
 * [0, 1] and quantized to B = min(16, floor(62 / ndims)) bits (1 bit of
 * each of the first 62 dimensions beyond 62); the cells are ordered along
 * a Z-order (Morton) or Hilbert curve.  A key holds at most 62 bits.
 */
typedef enum KcCurve
{
	KC_CURVE_MORTON = 0,		/* bit interleaving: monotone in each coordinate */
	KC_CURVE_HILBERT			/* consecutive keys are adjacent cells */
} KcCurve;

/* The Morton key of point x (raw coordinates, no origin) */
extern uint64_t kc_zkey(const KcSchema *s, const double *x);

/* The key of point x along curve, numeric coordinates taken from origin */
extern uint64_t kc_curve_key(const KcSchema *s, const double *origin, const double *x,
							 KcCurve curve);

/* The node published for categorical dimension d of a box [lo, hi] */
extern int	kc_lca(const KcHierarchy *h, int lo, int hi);

/* The cost of one row of a group of box lo, hi (IL / n) */
extern double kc_row_cost(const KcSchema *s, const double *lo, const double *hi);

/* IL of a group */
extern double kc_il(const KcSchema *s, const KcGroup *g);

/* ----------------------------------------------------------------
 * Incremental maintenance
 * ----------------------------------------------------------------
 */

/* Check a schema: dimensions, ranges, hierarchies, k, method */
extern KcStatus kc_schema_check(const KcSchema *s);

/*
 * Add a row (not yet a member of any group): to the best group (I3M: the
 * least growth of IL; similar-B-tree: the nearest centre), or to a new
 * group when there is none; a group that reaches 2k rows is split.
 */
extern KcStatus kc_insert(const KcSchema *s, const KcStore *st, const KcRow *row);

/*
 * Account for a row that has left group gid (the store no longer lists it
 * among gid's members; x is its coordinates): the group's summary is
 * recomputed from its members, and a group left with fewer than k rows is
 * dispersed (I3M: each row to its best group) or merged into the nearest
 * group (similar-B-tree), splitting any that reaches 2k; an empty group
 * is dropped.  A lone group keeps its rows.
 */
extern KcStatus kc_delete(const KcSchema *s, const KcStore *st, int64_t gid, const double *x);

/*
 * I3M's IL_Optimization (Figure 3): break totally covered groups, most
 * costly first, when moving each of their rows to a group that covers it
 * lowers the total IL, splitting what reaches 2k.  *broken receives the
 * number of groups broken.
 */
extern KcStatus kc_optimize(const KcSchema *s, const KcStore *st, int64_t *broken);

/* ----------------------------------------------------------------
 * Static clustering of a whole set of rows (into an empty store)
 * ----------------------------------------------------------------
 */

/*
 * The rows split recursively at the median of the dimension of greatest
 * scaled spread until every part holds k to 2k - 1 rows: O(n log n).
 * This is what a new watch and keanon.regeneralize build.  A dimension's
 * spread is measured as its share of a row's IL (a numeric one's scaled
 * extent, a categorical one's lca height over the root's; ties by scaled
 * extent), and the cut moves from the median to the nearest boundary
 * between values of that dimension that leaves k rows on each side.
 */
extern KcStatus kc_build(const KcSchema *s, const KcStore *st, const KcRow *rows, int64_t n);

/*
 * The greedy clustering of Byun et al. (DASFAA 2007), I3M's baseline:
 * seed each group with the row furthest from the last seed, grow it to k
 * rows by least IL growth, then give each leftover row its best group.
 * O(n^2 / k * k): for comparison on small tables.
 */
extern KcStatus kc_build_greedy(const KcSchema *s, const KcStore *st, const KcRow *rows,
								int64_t n);

#endif							/* KC_CLUSTER_H */

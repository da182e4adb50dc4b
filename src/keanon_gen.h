/*
 * keanon_gen.h
 *		Generalized quasi-identifiers: a watch's rows clustered into groups
 *		of at least k rows (src/cluster/), each published as its least
 *		general tuple, kept current on every write.
 *
 * Objects of a generalized watch, beside the plain watch's (all in the
 * watched table's schema, owned by its owner, recorded in keanon.watches):
 *
 *	<table>_keanon_hier		each categorical quasi-identifier's hierarchy,
 *							copied at watch time and numbered depth first,
 *							so that a node's leaves are an interval
 *	<table>_keanon_groups	one row per group: its size, its box and sum of
 *							coordinates, its place (box or centre) in a GiST
 *							index over cube, and its generalized tuple
 *	<table>_keanon_members	one row per row of the rows table: its key, its
 *							group and its coordinates
 *
 * The view joins the rows table to its members and groups, and shows each
 * row's group's tuple beside its published value, ordered by group,
 * partition and published value: nothing in the order follows a row's
 * true quasi-identifiers within its group.
 *
 * Maintenance runs after the (k,e) change of the same statement or flush,
 * under the same writers' lock: a row whose key, quasi-identifiers or
 * presence changed leaves its group, then every new row joins one.  All
 * statements go through SPI as the table's owner; nothing here writes a
 * page directly, so a layout the owner altered can only make a statement
 * fail, and every number read back (hierarchies, coordinates) is checked
 * before use.
 */
#ifndef KEANON_GEN_H
#define KEANON_GEN_H

#include "postgres.h"

#include "kc_cluster.h"
#include "keanon_watch.h"

typedef struct KeanonGen
{
	Oid			relid;
	int			k;
	KcSchema	schema;
	int			ndims;
	char	  **dim_names;		/* quoted quasi-identifiers */
	Oid		   *dim_types;
	AttrNumber *dim_attnums;	/* in the watched table */
	bool	   *categorical;
	char	  **range_type;		/* numeric: the published range type */
	double	   *origin;			/* [ndims] least values when watched (0: categorical) */
	Oid			hier_oid;		/* the internal tables */
	Oid			groups_oid;
	Oid			members_oid;
	char	   *hier;			/* qualified, quoted names */
	char	   *groups;
	char	   *members;
	char	   *cube;			/* the cube extension's quoted schema */
	Oid			cube_type;		/* its type cube */
	Oid			cube_fn;		/* its cube(float8[], float8[]) */
	KcHierarchy *h;				/* [ndims], categorical ones filled */
	char	 ***node_value;		/* [ndims][nnodes] */
	char	 ***leaf_sorted;	/* [ndims][nleaves] leaf values, sorted */
	int		  **leaf_sorted_no; /* [ndims][nleaves] their leaf numbers */
	bool		leaves_fixed;	/* leaves kept as keanon.leaf_text prints (gen_values.c) */
	int			nkeys;
	Oid		   *key_types;
	char	   *m_eq_x;			/* members m = relation x, by key */
} KeanonGen;

/* the operation's store of groups and members (gen_store.c) */
typedef struct GenStore GenStore;

/* gen_store.c */
extern GenStore *KeanonGenStoreBegin(Watch *w, KeanonGen *g, KcStore *st);
extern bool KeanonGenPublishesAny(const Watch *w);
extern void KeanonGenRefuseUnpublished(const Watch *w);
extern bool KeanonGenCoordinateOk(const KeanonGen *g, int d, double x);
extern int64 KeanonGenStoreAddRow(GenStore *gs, const Datum *keys, const double *x, bool stored);
extern const double *KeanonGenStoreRowX(GenStore *gs, int64 handle);
extern void KeanonGenStoreTouch(GenStore *gs, int64 gid);
extern void KeanonGenStoreEnd(GenStore *gs, bool every);
extern void KeanonGenWriteGroup(Watch *w, const KeanonGen *g, const KcGroup *grp);
extern void KeanonGenPublishRanges(Watch *w, const KeanonGen *g, const char *src, const int64 *gids,
								   int64 n);
extern void KeanonGeneralizeCheckStatus(KcStatus st, const char *what);

/* gen_values.c */
extern char *KeanonGenCoordinateOf(Oid typid, const char *col);
extern char *KeanonGenRangeOf(Oid typid, const char *lo, const char *hi);
extern bool KeanonGenLeavesFixed(void);
extern void KeanonGenLeavesFixedInit(void);
extern char *KeanonGenLeafText(Oid typid, Datum d, bool fixed);
extern char *KeanonGenLeafSql(Oid typid, const char *col, bool fixed);

/* generalize.c */
extern void KeanonGenCacheInit(void);
extern void KeanonGenLoad(Watch *w, KeanonGen *g);
extern void KeanonGenCopy(const KeanonGen *from, KeanonGen *to);
extern void KeanonGenCheckRow(const KeanonGen *g, TupleTableSlot *slot, AttrNumber s_attnum);
extern char *KeanonGenCoordinateSql(const KeanonGen *g, int d, const char *px);
extern void KeanonGenRowCoordinates(const KeanonGen *g, HeapTuple tup, TupleDesc desc, int first,
									double *x);
extern void KeanonGenRefreshSpans(Watch *w, KeanonGen *g);
extern void KeanonGeneralizeDelta(Watch *w, bool by_insert, bool by_update, bool by_delete,
								  const char *oldrel, const char *newrel);
extern int64 KeanonGeneralizeBuild(Watch *w);
extern int64 KeanonGeneralizeOptimize(Watch *w);
extern int64 KeanonRegeneralize(Oid relid);
extern int64 KeanonOptimizeGroups(Oid relid);

/* gen_release.c */
extern int64 KeanonGeneralizeRelease(Watch *w);

#endif							/* KEANON_GEN_H */

/*
 * anonymize.c
 *		keanon.anonymize: a one-off full-domain anonymous copy of a table,
 *		chosen by PrivacyFrost2's scoring search or the exact search of the
 *		generalization lattice (src/fulldomain/).
 *
 * The table is read once, as the caller, into dictionary codes: each
 * categorical quasi-identifier's values as leaves of its (value, parent)
 * hierarchy, whose level l is every leaf's ancestor l steps up (the root
 * when the path is shorter); each numeric one without a hierarchy as its
 * distinct values, whose level l groups them into intervals of doubling
 * width aligned at the least value (level 0 is the value itself, the top
 * level one interval over all).  Numeric quasi-identifiers and the
 * sensitive column are coded by their values' order, sorted here with the
 * type's default ordering and the column's collation (what dense_rank()
 * over ORDER BY gives, without sorting whole rows).  The search runs on
 * those codes.  The answer goes into the new table keanon.anonymize made,
 * checked first to be as it was made (the published columns only, and
 * nothing an INSERT would run or check), in batches through the table
 * access method as COPY writes: each published value is made once from
 * its text by its type's input function, the sensitive values are copied
 * as read.  Everything runs with the caller's rights and the search_path
 * keanon.anonymize pins.
 */
#include "postgres.h"

#include <math.h>

#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_collation.h"
#include "common/hashfn.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/guc.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "catalog/pg_class.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/sortsupport.h"
#include "utils/typcache.h"

#include "fd_anon.h"
#include "keanon_am.h"
#include "keanon_watch.h"
#include "pg_compat.h"

PG_FUNCTION_INFO_V1(keanon_anonymize_core);

/* the most levels an automatic numeric hierarchy gets above the values */
#define ANON_AUTO_LEVELS 10

/* rows handed to the table access method at once */
#define ANON_INSERT_BATCH 1000

/*
 * keanon.anonymize_memory: the most the search may hold at once, in kB.
 * Its memory grows with the table's groups, its sensitive values and the
 * lattice, and a crafted table of some ten thousand rows could ask for
 * more than the machine has; past this it stops with an error.  Only a
 * superuser may raise it (for a role: ALTER ROLE ... SET).
 */
static int	anonymize_memory = 1024 * 1024;

/* What the search holds now, in bytes, and the most it may */
static Size search_bytes = 0;
static Size search_limit = 0;

/* One quasi-identifier as the search sees it */
typedef struct AnonQi
{
	char	   *name;			/* quoted */
	Oid			typid;
	bool		automatic;		/* numeric, levels of doubling intervals */
	/* a hierarchy's tree (not automatic) */
	int			nnodes;
	char	  **value;			/* sorted */
	int		   *value_len;		/* their lengths */
	int		   *hash_slot;		/* [hash_mask + 1] a value's index, or -1 */
	uint32		hash_mask;
	int		   *parent;
	int		   *depth;
	/* leaves */
	int			nleaves;
	int		   *leaf_node;		/* hierarchy: the leaf's node */
	int		   *leaf_of_node;	/* hierarchy: [nnodes] the node's leaf, or -1 */
	double	   *leaf_value;		/* automatic: the leaf's value */
	char	  **leaf_text;		/* automatic: the leaf's value, exactly, as text */
	/* levels */
	int			nlevels;
	uint32	  **map;
	uint32	   *ncodes;
	int		  **code_node;		/* hierarchy: [level][code] the node */
	double		vmin;			/* automatic */
	double	   *width;			/* automatic: [level] */
	double	  **cell;			/* automatic: [level][code] its interval */
	bool		integral;		/* automatic: integer or date values */
	uint32	   *codes;			/* [nrows] */
	Datum	   *raw;			/* automatic: [nrows] the values read */
	double	   *rawf;			/* automatic: [nrows] as float8 */
	Oid			out_type;		/* the published column's type */
	FmgrInfo	out_in;			/* its input function (a range type) */
	Oid			out_ioparam;
	Datum	  **labels;			/* [level][code] published value, 0 unmade */
} AnonQi;

/* Hash q's values into an open-addressed table for text_index */
static void
hash_values(AnonQi *q)
{
	q->hash_mask = 1;
	while (q->hash_mask < 2 * (uint32) q->nnodes)
		q->hash_mask <<= 1;
	q->hash_slot = palloc(sizeof(int) * q->hash_mask);
	q->hash_mask--;
	memset(q->hash_slot, -1, sizeof(int) * (q->hash_mask + 1));
	for (int i = 0; i < q->nnodes; i++)
	{
		uint32		h = hash_bytes((const unsigned char *) q->value[i], q->value_len[i]) & q->hash_mask;

		while (q->hash_slot[h] >= 0)
			h = (h + 1) & q->hash_mask;
		q->hash_slot[h] = i;
	}
}

/* The index of the text datum's value among the values, or -1 */
static int
text_index(AnonQi *q, Datum d)
{
	text	   *t = DatumGetTextPP(d);
	const char *v = VARDATA_ANY(t);
	int			len = VARSIZE_ANY_EXHDR(t);
	uint32		h = hash_bytes((const unsigned char *) v, len) & q->hash_mask;

	for (; q->hash_slot[h] >= 0; h = (h + 1) & q->hash_mask)
	{
		int			i = q->hash_slot[h];

		if (q->value_len[i] == len && memcmp(v, q->value[i], len) == 0)
			return i;
	}
	return -1;
}

/* The index of value v among the sorted values, or -1 */
static int
value_index(AnonQi *q, const char *v)
{
	int			lo = 0,
				hi = q->nnodes - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = strcmp(v, q->value[mid]);

		if (c == 0)
			return mid;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

static int
cstring_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* A hierarchy's values, or its parents, are not what keanon.anonymize takes */
static void
tree_error(const AnonQi *q, Oid hrel, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("hierarchy %s of %s is not a tree of distinct values", get_rel_name(hrel), q->name),
			 errdetail("%s", detail)));
}

/*
 * Read hierarchy hrel into q's tree.  keanon.check_hierarchy checked it
 * before, but by other queries, and a view's rows may differ from one read
 * to the next: every value must be present and distinct, every parent one
 * of the values, here too (cycles are refused by tree_depths).
 */
static void
read_tree(AnonQi *q, Oid hrel)
{
	char	  **children;
	char	  **parents;

	if (SPI_execute(psprintf("SELECT value::pg_catalog.text, parent::pg_catalog.text FROM %s "
							 "ORDER BY 1", KeanonQualifiedName(hrel)), true, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read hierarchy %s", get_rel_name(hrel));
	q->nnodes = (int) SPI_processed;
	q->value = palloc(sizeof(char *) * Max(q->nnodes, 1));
	children = palloc(sizeof(char *) * Max(q->nnodes, 1));
	parents = palloc(sizeof(char *) * Max(q->nnodes, 1));
	for (int i = 0; i < q->nnodes; i++)
	{
		children[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		parents[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		if (children[i] == NULL)
			tree_error(q, hrel, "A value is NULL.");
		q->value[i] = children[i];
	}
	/* the query's order is the collation's; lookups use strcmp's */
	qsort(q->value, q->nnodes, sizeof(char *), cstring_cmp);
	for (int i = 1; i < q->nnodes; i++)
		if (strcmp(q->value[i - 1], q->value[i]) == 0)
			tree_error(q, hrel, psprintf("The value \"%s\" appears twice.", q->value[i]));
	q->parent = palloc(sizeof(int) * Max(q->nnodes, 1));
	for (int i = 0; i < q->nnodes; i++)
		q->parent[i] = -1;
	for (int i = 0, roots = 0; i < q->nnodes; i++)
	{
		int			child = value_index(q, children[i]);

		if (parents[i] == NULL)
		{
			if (++roots > 1)
				tree_error(q, hrel, "It has more than one root.");
			continue;
		}
		q->parent[child] = value_index(q, parents[i]);
		if (q->parent[child] < 0)
			tree_error(q, hrel, psprintf("The parent \"%s\" is not a value of the hierarchy.",
										 parents[i]));
	}
	q->value_len = palloc(sizeof(int) * Max(q->nnodes, 1));
	for (int i = 0; i < q->nnodes; i++)
		q->value_len[i] = (int) strlen(q->value[i]);
	hash_values(q);
}

/*
 * Each node's depth below the root, in O(nodes): a walk up stops at the
 * first node whose depth is known, then sets the depths of the path it
 * took; a walk that meets its own path has found a cycle
 */
static void
tree_depths(AnonQi *q)
{
	int		   *path = palloc(sizeof(int) * Max(q->nnodes, 1));

	q->depth = palloc(sizeof(int) * Max(q->nnodes, 1));
	for (int i = 0; i < q->nnodes; i++)
		q->depth[i] = -1;			/* unknown */
	for (int i = 0; i < q->nnodes; i++)
	{
		int			len = 0;
		int			n = i;
		int			d;

		CHECK_FOR_INTERRUPTS();
		while (n >= 0 && q->depth[n] == -1)
		{
			q->depth[n] = -2;		/* on this walk's path */
			path[len++] = n;
			n = q->parent[n];
		}
		if (n >= 0 && q->depth[n] == -2)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the hierarchy of %s has a cycle", q->name)));
		d = n >= 0 ? q->depth[n] + 1 : 0;
		while (len > 0)
			q->depth[path[--len]] = d++;
	}
	pfree(path);
}

/* The ancestor of node n l steps up, the root when the path is shorter */
static int
ancestor(const AnonQi *q, int n, int l)
{
	while (l-- > 0 && q->parent[n] >= 0)
		n = q->parent[n];
	return n;
}

/* The levels of a hierarchy: each leaf's ancestors, coded per level */
static void
hierarchy_levels(AnonQi *q)
{
	bool	   *has_child = palloc0(sizeof(bool) * q->nnodes);
	int		   *node_code = palloc(sizeof(int) * q->nnodes);
	int			height = 0;

	for (int i = 0; i < q->nnodes; i++)
		if (q->parent[i] >= 0)
			has_child[q->parent[i]] = true;
	q->nleaves = 0;
	q->leaf_node = palloc(sizeof(int) * q->nnodes);
	q->leaf_of_node = palloc(sizeof(int) * q->nnodes);
	for (int i = 0; i < q->nnodes; i++)
	{
		q->leaf_of_node[i] = has_child[i] ? -1 : q->nleaves;
		if (!has_child[i])
		{
			q->leaf_node[q->nleaves++] = i;
			height = Max(height, q->depth[i]);
		}
	}
	q->nlevels = Min(height + 1, FD_MAX_LEVELS);
	q->map = palloc(sizeof(uint32 *) * q->nlevels);
	q->ncodes = palloc(sizeof(uint32) * q->nlevels);
	q->code_node = palloc(sizeof(int *) * q->nlevels);
	for (int l = 0; l < q->nlevels; l++)
	{
		q->map[l] = palloc(sizeof(uint32) * q->nleaves);
		q->code_node[l] = palloc(sizeof(int) * q->nleaves);
		q->ncodes[l] = 0;
		for (int i = 0; i < q->nnodes; i++)
			node_code[i] = -1;
		for (int f = 0; f < q->nleaves; f++)
		{
			int			a = ancestor(q, q->leaf_node[f], l);

			if (node_code[a] < 0)
			{
				node_code[a] = (int) q->ncodes[l];
				q->code_node[l][q->ncodes[l]++] = a;
			}
			q->map[l][f] = (uint32) node_code[a];
		}
	}
}

/*
 * The levels of an automatic numeric hierarchy: doubling intervals, of
 * which those holding a value are coded 0, 1, ... in value order (the
 * search counts every code of a level, so none may be empty); cell[l][c]
 * is the interval of code c, for its label
 */
static void
automatic_levels(AnonQi *q)
{
	double		range = q->nleaves > 0 ? q->leaf_value[q->nleaves - 1] - q->vmin : 0;
	double		top;
	int			above = 1;

	if (!isfinite(range) || range < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("the values of column %s span more than a double precision number holds", q->name),
				 errhint("Give the column a hierarchy, or anonymize a view that scales it.")));
	q->integral = q->typid == INT2OID || q->typid == INT4OID || q->typid == INT8OID ||
		q->typid == DATEOID;
	/* the top interval holds every value: a power of two for integers */
	if (q->integral)
	{
		/* range + 1 rounds to range past 2^53: compare with range itself */
		top = 1;
		while (top <= range)
			top *= 2;
		while (above < ANON_AUTO_LEVELS && ldexp(top, -above) >= 2)
			above++;
	}
	else
	{
		top = range > 0 ? range * (1 + 1e-9) : 1;
		while (above < ANON_AUTO_LEVELS && (1 << above) < q->nleaves)
			above++;
	}
	q->nlevels = above + 1;
	q->width = palloc(sizeof(double) * q->nlevels);
	q->map = palloc(sizeof(uint32 *) * q->nlevels);
	q->ncodes = palloc(sizeof(uint32) * q->nlevels);
	q->cell = palloc(sizeof(double *) * q->nlevels);
	for (int l = 0; l < q->nlevels; l++)
	{
		double		last = -1;

		q->width[l] = l == 0 ? 0 : ldexp(top, l - above);
		q->map[l] = palloc(sizeof(uint32) * Max(q->nleaves, 1));
		q->cell[l] = palloc(sizeof(double) * Max(q->nleaves, 1));
		q->ncodes[l] = 0;
		for (int f = 0; f < q->nleaves; f++)
		{
			double		cell = l == 0 ? f : floor((q->leaf_value[f] - q->vmin) / q->width[l]);

			/* the leaves are in value order, so their intervals are too */
			if (!isfinite(cell) || cell < last)
				elog(ERROR, "keanon: the values of column %s are not in numeric order", q->name);
			if (q->ncodes[l] == 0 || cell != last)
				q->cell[l][q->ncodes[l]++] = cell;
			last = cell;
			q->map[l][f] = q->ncodes[l] - 1;
		}
	}
}

/* The least and one past the greatest value of an integral type, as doubles */
static double
integral_least(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return PG_INT16_MIN;
		case INT4OID:
			return PG_INT32_MIN;
		case DATEOID:
			return DATETIME_MIN_JULIAN - POSTGRES_EPOCH_JDATE;
		default:
			return -9223372036854775808.0;
	}
}

static double
integral_end(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return (double) PG_INT16_MAX + 1;
		case INT4OID:
			return (double) PG_INT32_MAX + 1;
		case DATEOID:
			return DATE_END_JULIAN - POSTGRES_EPOCH_JDATE;
		default:
			return 9223372036854775808.0;
	}
}

/*
 * A bound of an integral interval as its range type reads it: empty (no
 * bound) beyond the type's values, where an interval of the top levels may
 * end (the whole range of a bigint, or dates near their last)
 */
static char *
integral_bound(const AnonQi *q, double x)
{
	if (x < integral_least(q->typid) || x >= integral_end(q->typid))
		return "";
	if (q->typid == DATEOID)
		return DatumGetCString(DirectFunctionCall1(date_out, DateADTGetDatum((DateADT) x)));
	return psprintf("%.0f", x);
}

/* The SQL of the published value of code c at level l, as text */
static char *
label(const AnonQi *q, int l, uint32 c)
{
	double		lo,
				hi;

	if (!q->automatic)
		return q->value[q->code_node[l][c]];
	/* a leaf: the value itself, exactly as its type writes it */
	if (l == 0)
		return psprintf("[%s,%s]", q->leaf_text[c], q->leaf_text[c]);
	lo = q->vmin + q->cell[l][c] * q->width[l];
	hi = lo + q->width[l];
	/*
	 * The interval holds the values whose doubles fall in [lo, hi); a value
	 * beyond a double's precision (a bigint past 2^53, a numeric of many
	 * digits) may lie a rounding step outside: the published interval is
	 * widened by a step either way, so that it holds every such value
	 */
	if (!q->integral || fabs(lo) >= 9007199254740992.0 || fabs(hi) >= 9007199254740992.0)
	{
		lo = nextafter(lo, -INFINITY);
		hi = nextafter(hi, INFINITY);
		if (q->integral)
		{
			lo = floor(lo);
			hi = ceil(hi);
		}
	}
	if (q->integral)
		return psprintf("%s%s,%s)", lo < integral_least(q->typid) ? "(" : "[",
						integral_bound(q, lo), integral_bound(q, hi));
	return psprintf("[%.17g,%.17g)", lo, hi);
}

/* Define keanon.anonymize_memory (from _PG_init) */
void
KeanonAnonymizeInit(void)
{
	DefineCustomIntVariable("keanon.anonymize_memory",
							"The most memory keanon.anonymize's search may hold at once.",
							NULL, &anonymize_memory, 1024 * 1024, 1024, MAX_KILOBYTES, PGC_SUSET,
							GUC_UNIT_KB, NULL, NULL, NULL);
}

/* The search would hold more than keanon.anonymize_memory */
static void
search_too_large(Size more)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("keanon.anonymize's search needs more than keanon.anonymize_memory (%d kB)",
					anonymize_memory),
			 errdetail("It holds %zu kB and asked for %zu kB more.", search_bytes / 1024, more / 1024),
			 errhint("Give the quasi-identifiers coarser hierarchies, use fewer of them or fewer distinct sensitive values, or have a superuser raise keanon.anonymize_memory.")));
}

/*
 * Whether more bytes fit under the limit (what the search holds counts
 * chunks, which round a request up, so it may pass the limit a little)
 */
static bool
search_fits(Size more)
{
	return search_bytes < search_limit && more <= search_limit - search_bytes;
}

/* The search's palloc, counted against keanon.anonymize_memory */
static void *
search_alloc(size_t size)
{
	void	   *p;

	if (!search_fits(size))
		search_too_large(size);
	p = MemoryContextAllocExtended(CurrentMemoryContext, size, MCXT_ALLOC_HUGE);
	search_bytes += GetMemoryChunkSpace(p);
	return p;
}

static void *
search_realloc(void *ptr, size_t size)
{
	Size		old = GetMemoryChunkSpace(ptr);

	if (size > old && !search_fits(size - old))
		search_too_large(size - old);
	ptr = repalloc_huge(ptr, size);
	search_bytes = search_bytes - old + GetMemoryChunkSpace(ptr);
	return ptr;
}

static void
search_free(void *ptr)
{
	search_bytes -= Min(search_bytes, GetMemoryChunkSpace(ptr));
	pfree(ptr);
}

/* Count the search's memory from here on, until KeanonEngineAllocator */
static void
search_allocator(void)
{
	search_bytes = 0;
	search_limit = (Size) anonymize_memory * 1024;
	ke_set_allocator(search_alloc, search_realloc, search_free);
}

/* The arguments of keanon.anonymize_core, checked by keanon.anonymize */
typedef struct AnonArgs
{
	Oid			relid;
	int			nqi;
	AnonQi	   *qis;
	char	   *sensitive;		/* quoted */
	Oid			sens_type;
	int32		sens_typmod;
	FdParams	params;
	FdSearchOpts opts;
	Oid			target;
} AnonArgs;

/* What encode_table read: the rows, and the sensitive values as read */
typedef struct AnonRead
{
	int			nrows;
	Datum	   *sens_raw;		/* [nrows] in the column's type */
	double	   *sens_f;			/* [nrows] as float8, when numeric */
} AnonRead;

/* An error for a search status other than FD_OK */
static void
fd_check_status(FdStatus st, const FdError *err, const AnonArgs *a)
{
	const char *what = err->qi >= 0 && err->qi < a->nqi ? a->qis[err->qi].name : NULL;

	if (st == FD_OK)
		return;
	if (st == FD_ERR_NOMEM)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory while anonymizing")));
	if (st == FD_ERR_NO_SOLUTION)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("no full-domain generalization of %s satisfies the privacy criteria",
						get_rel_name(a->relid)),
				 errdetail("%s", err->message),
				 errhint("Allow some rows to be suppressed with max_suppressed => n, or relax k, l, c or t.")));
	if (st == FD_ERR_LATTICE_TOO_LARGE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the generalization lattice of %s is too large to search whole", get_rel_name(a->relid)),
				 errdetail("%s", err->message),
				 errhint("Use method => 'privacyfrost2', or hierarchies with fewer levels.")));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 what ? errmsg("cannot anonymize %s: %s (column %s)", get_rel_name(a->relid), err->message, what)
			 : errmsg("cannot anonymize %s: %s", get_rel_name(a->relid), err->message)));
}

/*
 * The rows read have the types the work was set up for: the caller's code
 * run before the read (a hierarchy view's functions) may have retyped a
 * column of the table since its types were looked up
 */
static void
check_read_types(const AnonArgs *a)
{
	TupleDesc	desc = SPI_tuptable->tupdesc;
	bool		ok = desc->natts == 2 * a->nqi + 2;

	for (int i = 0; ok && i <= a->nqi; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, 2 * i);

		if (i == a->nqi)
			ok = att->atttypid == a->sens_type && att->atttypmod == a->sens_typmod;
		else
			ok = att->atttypid == (a->qis[i].automatic ? a->qis[i].typid : TEXTOID);
		ok = ok && TupleDescAttr(desc, 2 * i + 1)->atttypid == FLOAT8OID;
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the columns of %s changed while keanon.anonymize read it", get_rel_name(a->relid))));
}

/* The row set of every row: one query, as the caller */
static int
read_rows(AnonArgs *a, bool *numeric)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (int i = 0; i < a->nqi; i++)
	{
		AnonQi	   *q = &a->qis[i];

		if (q->automatic)
			appendStringInfo(&sql, "%s, %s, ", q->name, q->typid == DATEOID ?
							 psprintf("(%s OPERATOR(pg_catalog.-) DATE '2000-01-01')::pg_catalog.float8", q->name) :
							 psprintf("%s::pg_catalog.float8", q->name));
		else
			appendStringInfo(&sql, "%s::pg_catalog.text, NULL::pg_catalog.float8, ", q->name);
	}
	*numeric = a->sens_type == INT2OID || a->sens_type == INT4OID || a->sens_type == INT8OID ||
		a->sens_type == NUMERICOID || a->sens_type == FLOAT4OID || a->sens_type == FLOAT8OID;
	appendStringInfo(&sql, "%s, %s FROM %s", a->sensitive,
					 *numeric ? psprintf("%s::pg_catalog.float8", a->sensitive) : "NULL::pg_catalog.float8",
					 KeanonQualifiedName(a->relid));
	if (SPI_execute(sql.data, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "keanon: could not read %s", get_rel_name(a->relid));
	check_read_types(a);
	if (SPI_processed > INT_MAX / 2)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("table %s has too many rows to anonymize in memory", get_rel_name(a->relid))));
	return (int) SPI_processed;
}

/* Column name of the table holds NaN or an infinity */
static void
not_finite(const AnonArgs *a, const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("column %s of table %s has values that are not finite (NaN or infinite)",
					name, get_rel_name(a->relid)),
			 errhint("Anonymize a view or a copy without them.")));
}

/* Code row r's hierarchy values; keep its other values as read */
static void
code_row(AnonArgs *a, int r, Datum *vals, bool *nulls, AnonRead *rd)
{
	heap_deform_tuple(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, vals, nulls);
	/* a NULL quasi-identifier or sensitive value: named, never shown */
	for (int i = 0; i <= a->nqi; i++)
	{
		if (nulls[2 * i])
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("column %s of table %s has NULL values",
							i < a->nqi ? a->qis[i].name : a->sensitive, get_rel_name(a->relid)),
					 errhint("Anonymize a view or a copy without them.")));
	}
	for (int i = 0; i < a->nqi; i++)
	{
		AnonQi	   *q = &a->qis[i];

		if (q->automatic)
		{
			q->raw[r] = vals[2 * i];
			q->rawf[r] = DatumGetFloat8(vals[2 * i + 1]);
			/* doubling intervals need a finite range */
			if (!isfinite(q->rawf[r]))
				not_finite(a, q->name);
		}
		else
		{
			int			node = text_index(q, vals[2 * i]);
			int			f = node >= 0 ? q->leaf_of_node[node] : -1;

			if (f < 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("a value of column %s is not a leaf of its hierarchy", q->name)));
			q->codes[r] = (uint32) f;
		}
	}
	rd->sens_raw[r] = vals[2 * a->nqi];
	if (rd->sens_f != NULL)
	{
		rd->sens_f[r] = DatumGetFloat8(vals[2 * a->nqi + 1]);
		if (!isfinite(rd->sens_f[r]))
			not_finite(a, a->sensitive);
	}
}

/* What the row order comparator sees */
typedef struct RankSort
{
	const Datum *values;
	SortSupport ssup;
} RankSort;

/* Order of two row numbers by their values */
static int
rank_cmp(const void *x, const void *y, void *arg)
{
	const RankSort *rs = arg;

	return ApplySortComparator(rs->values[*(const int *) x], false,
							   rs->values[*(const int *) y], false, rs->ssup);
}

/*
 * Code n values of a type by their order under its default ordering and
 * the collation (as dense_rank() over ORDER BY would): codes[r] from 0,
 * rep[c] one row holding code c; returns the number of distinct values
 */
static int
rank_values(const Datum *values, int n, Oid typid, Oid collation, uint32 *codes, int *rep)
{
	TypeCacheEntry *tc = lookup_type_cache(typid, TYPECACHE_LT_OPR);
	SortSupportData ssup;
	RankSort	rs;
	int		   *order = palloc(sizeof(int) * Max(n, 1));
	int			ncodes = 0;

	if (!OidIsValid(tc->lt_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("could not identify an ordering operator for type %s", format_type_be(typid))));
	memset(&ssup, 0, sizeof(ssup));
	ssup.ssup_cxt = CurrentMemoryContext;
	ssup.ssup_collation = collation;
	PrepareSortSupportFromOrderingOp(tc->lt_opr, &ssup);
	rs.values = values;
	rs.ssup = &ssup;
	for (int r = 0; r < n; r++)
		order[r] = r;
	qsort_arg(order, n, sizeof(int), rank_cmp, &rs);
	for (int i = 0; i < n; i++)
	{
		if (i == 0 || rank_cmp(&order[i - 1], &order[i], &rs) != 0)
			rep[ncodes++] = order[i];
		codes[order[i]] = (uint32) (ncodes - 1);
	}
	pfree(order);
	return ncodes;
}

/*
 * The collation that codes the sensitive values: a categorical value's
 * code needs only equality, which a deterministic collation draws as "C"
 * does, and "C" compares bytes without the locale's cost
 */
static Oid
sensitive_collation(Oid collation, bool numeric)
{
	if (numeric || !OidIsValid(collation) || !get_collation_isdeterministic(collation))
		return collation;
	return C_COLLATION_OID;
}

/* Read the table into codes and the search's table t */
static void
encode_table(AnonArgs *a, FdTable *t, FdHierarchy *fh, uint32 **qicodes, AnonRead *rd)
{
	bool		numeric;
	int			n = read_rows(a, &numeric);
	TupleDesc	desc = SPI_tuptable->tupdesc;
	Datum	   *vals = palloc(sizeof(Datum) * (2 * a->nqi + 2));
	bool	   *nulls = palloc(sizeof(bool) * (2 * a->nqi + 2));
	int		   *rep = palloc(sizeof(int) * Max(n, 1));
	uint32	   *sens = palloc(sizeof(uint32) * Max(n, 1));
	int			nsens;
	double	   *sv = NULL;
	Oid			typoutput;
	bool		typvarlena;

	rd->nrows = n;
	rd->sens_raw = palloc(sizeof(Datum) * Max(n, 1));
	rd->sens_f = numeric ? palloc(sizeof(double) * Max(n, 1)) : NULL;
	for (int i = 0; i < a->nqi; i++)
	{
		a->qis[i].codes = palloc(sizeof(uint32) * Max(n, 1));
		if (a->qis[i].automatic)
		{
			a->qis[i].raw = palloc(sizeof(Datum) * Max(n, 1));
			a->qis[i].rawf = palloc(sizeof(double) * Max(n, 1));
		}
	}
	for (int r = 0; r < n; r++)
		code_row(a, r, vals, nulls, rd);
	for (int i = 0; i < a->nqi; i++)
	{
		AnonQi	   *q = &a->qis[i];

		if (q->automatic)
		{
			q->nleaves = rank_values(q->raw, n, q->typid, TupleDescAttr(desc, 2 * i)->attcollation,
									 q->codes, rep);
			q->leaf_value = palloc(sizeof(double) * Max(q->nleaves, 1));
			q->leaf_text = palloc(sizeof(char *) * Max(q->nleaves, 1));
			getTypeOutputInfo(q->typid, &typoutput, &typvarlena);
			for (int f = 0; f < q->nleaves; f++)
			{
				q->leaf_value[f] = q->rawf[rep[f]];
				q->leaf_text[f] = OidOutputFunctionCall(typoutput, q->raw[rep[f]]);
			}
			q->vmin = q->nleaves > 0 ? q->leaf_value[0] : 0;
			automatic_levels(q);
		}
		fh[i].nleaves = q->nleaves;
		fh[i].nlevels = q->nlevels;
		fh[i].map = (const uint32_t *const *) q->map;
		fh[i].ncodes = q->ncodes;
		qicodes[i] = q->codes;
	}
	nsens = rank_values(rd->sens_raw, n, a->sens_type, sensitive_collation(TupleDescAttr(desc, 2 * a->nqi)->attcollation, numeric),
						sens, rep);
	if (numeric)
	{
		sv = palloc(sizeof(double) * Max(nsens, 1));
		for (int s = 0; s < nsens; s++)
			sv[s] = rd->sens_f[rep[s]];
	}
	memset(t, 0, sizeof(*t));
	t->nrows = n;
	t->nqi = a->nqi;
	t->qi = (const uint32_t *const *) qicodes;
	t->hier = fh;
	t->sens = sens;
	t->nsens = nsens;
	t->sens_numeric = numeric;
	t->sens_values = sv;
}

/*
 * Check that the target, open as rel, is still the bare table
 * keanon.anonymize made: one column per quasi-identifier of its published
 * type and the sensitive column of its own, and nothing that an INSERT
 * would run or check (indexes, triggers, rules, constraints, row security,
 * a partition's bound), since rows are handed to the table access method
 * directly
 */
static void
check_target(const AnonArgs *a, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			col = 0;
	bool		ok = rel->rd_rel->relkind == RELKIND_RELATION && !rel->rd_rel->relispartition &&
		!rel->rd_rel->relhasrules && !rel->rd_rel->relrowsecurity && rel->trigdesc == NULL &&
		RelationGetIndexList(rel) == NIL &&
		(desc->constr == NULL || (desc->constr->num_check == 0 && !desc->constr->has_generated_stored));

	for (int i = 0; ok && i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		if (col < a->nqi)
			ok = att->atttypid == a->qis[col].out_type;
		else
			ok = col == a->nqi && att->atttypid == a->sens_type && att->atttypmod == a->sens_typmod;
		col++;
	}
	if (!ok || col != a->nqi + 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("target table %s is not as keanon.anonymize made it", RelationGetRelationName(rel)),
				 errdetail("It must hold only the published columns, without indexes, triggers, rules, constraints or row security.")));
}

/*
 * Lock the target until the end of the transaction, so that no other
 * session changes it, and check it before the work starts.  The caller's
 * own code (a view's functions, a type's comparison, a hierarchy view)
 * runs while the table is read and may still change it in this session:
 * write_target checks it again, open, with no such code run in between.
 */
static void
lock_target(const AnonArgs *a)
{
	Relation	rel = table_open(a->target, RowExclusiveLock);

	check_target(a, rel);
	table_close(rel, NoLock);
}

/* The published value of code c at level l of q, made once */
static Datum
published(AnonQi *q, int l, uint32 c)
{
	if (q->labels[l][c] == (Datum) 0)
	{
		char	   *v = label(q, l, c);

		q->labels[l][c] = q->out_type == TEXTOID ? CStringGetTextDatum(v) :
			InputFunctionCall(&q->out_in, v, q->out_ioparam, -1);
	}
	return q->labels[l][c];
}

/* Fill slot with published row r of class c */
static void
fill_row(AnonArgs *a, const FdResult *res, const AnonRead *rd, int r, int c, TupleTableSlot *slot)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;
	int			col = 0;

	ExecClearTuple(slot);
	for (int i = 0; i < desc->natts; i++)
	{
		slot->tts_isnull[i] = TupleDescAttr(desc, i)->attisdropped;
		if (slot->tts_isnull[i])
			continue;
		if (col < a->nqi)
			slot->tts_values[i] = published(&a->qis[col], res->class_levels[c * a->nqi + col],
											res->class_codes[c * a->nqi + col]);
		else
			slot->tts_values[i] = rd->sens_raw[r];
		col++;
	}
	ExecStoreVirtualTuple(slot);
}

/*
 * Write the published rows into the target table (locked by lock_target)
 * in batches through the table access method, as COPY does
 */
static int64
write_target(AnonArgs *a, const FdResult *res, const AnonRead *rd)
{
	Relation	rel = table_open(a->target, RowExclusiveLock);
	CommandId	cid;
	BulkInsertState bistate;
	TupleTableSlot **batch = palloc0(sizeof(TupleTableSlot *) * ANON_INSERT_BATCH);
	int			nbatch = 0;
	int64		n = 0;

	/*
	 * Checked again, open: from here to the last insert only keanon's code
	 * and the built-in input functions of the published types run, and an
	 * open relation cannot be altered in this session anyway
	 */
	check_target(a, rel);
	cid = GetCurrentCommandId(true);
	for (int i = 0; i < a->nqi; i++)
	{
		a->qis[i].labels = palloc(sizeof(Datum *) * a->qis[i].nlevels);
		for (int l = 0; l < a->qis[i].nlevels; l++)
			a->qis[i].labels[l] = palloc0(sizeof(Datum) * Max(a->qis[i].ncodes[l], 1));
	}
	bistate = GetBulkInsertState();
	for (int r = 0; r < res->nrows; r++)
	{
		if (res->row_class[r] >= 0)		/* not suppressed nor left out */
		{
			if (batch[nbatch] == NULL)
				batch[nbatch] = table_slot_create(rel, NULL);
			fill_row(a, res, rd, r, res->row_class[r], batch[nbatch++]);
			n++;
		}
		if (nbatch > 0 && (nbatch == ANON_INSERT_BATCH || r == res->nrows - 1))
		{
			table_multi_insert(rel, batch, nbatch, cid, 0, bistate);
			nbatch = 0;
		}
		CHECK_FOR_INTERRUPTS();
	}
	for (int i = 0; i < ANON_INSERT_BATCH && batch[i] != NULL; i++)
		ExecDropSingleTupleTableSlot(batch[i]);
	FreeBulkInsertState(bistate);
	table_finish_bulk_insert(rel, 0);
	table_close(rel, NoLock);
	CommandCounterIncrement();
	return n;
}

/* Compare two sensitive codes, for qsort */
static int
code_cmp(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return x < y ? -1 : x > y;
}

/*
 * Ordered EMD's sum over the codes a .. b (a <= b) of |c - T[s] / n|, where
 * c = num / den and T (cumulative counts of the whole table, nondecreasing)
 * has prefix sums PT: split where T[s] / n passes c, found by bisection
 */
static double
emd_segment(const int64 *T, const int64 *PT, int64 n, int64 num, int64 den, int a, int b)
{
	int			lo = a,
				hi = b + 1;		/* the first s with T[s] * den > num * n */
	double		c = (double) num / den;
	double		below,
				above;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (T[mid] * den > num * n)
			hi = mid;
		else
			lo = mid + 1;
	}
	below = (lo - a) * c - (double) ((lo > 0 ? PT[lo - 1] : 0) - (a > 0 ? PT[a - 1] : 0)) / n;
	above = (double) (PT[b] - (lo > 0 ? PT[lo - 1] : 0)) / n - (b - lo + 1) * c;
	return below + above;
}

/*
 * The least distinct l and the largest EMD over the published classes,
 * measured here whatever the criteria asked (the search keeps sensitive
 * histograms only when one is): ordered EMD over the sensitive values'
 * order when numeric, equal-distance otherwise, against every row read.
 * Each class is measured from its own sorted values alone, the stretches
 * between them by the whole table's prefix sums: memory O(rows + values)
 * and time O(rows log rows), however many classes and values there are.
 */
static void
class_diversity(const FdTable *t, const FdResult *res, int *least_l, double *largest_emd)
{
	int			m = Max(t->nsens, 1);
	int			nc = Max(res->nclasses, 1);
	int64	   *T = palloc0(sizeof(int64) * m);	/* cumulative counts, then */
	int64	   *PT = palloc(sizeof(int64) * m);	/* their prefix sums */
	int		   *start = palloc0(sizeof(int) * (nc + 1));
	uint32	   *codes = palloc(sizeof(uint32) * Max(t->nrows, 1));
	int		   *fill;
	int64		n = t->nrows;

	*least_l = 0;
	*largest_emd = 0;
	for (int r = 0; r < t->nrows; r++)
	{
		T[t->sens[r]]++;
		if (res->row_class[r] >= 0)
			start[res->row_class[r] + 1]++;
	}
	for (int s = 1; s < m; s++)
		T[s] += T[s - 1];
	for (int s = 0; s < m; s++)
		PT[s] = T[s] + (s > 0 ? PT[s - 1] : 0);
	for (int c = 0; c < res->nclasses; c++)
		start[c + 1] += start[c];
	fill = palloc(sizeof(int) * nc);
	memcpy(fill, start, sizeof(int) * nc);
	for (int r = 0; r < t->nrows; r++)
		if (res->row_class[r] >= 0)
			codes[fill[res->row_class[r]]++] = t->sens[r];
	for (int c = 0; c < res->nclasses; c++)
	{
		uint32	   *v = codes + start[c];
		int64		size = start[c + 1] - start[c];
		int64		below = 0;	/* the class's rows of the codes before */
		int			next = 0;	/* the first code not yet summed */
		int			d = 0;
		double		emd = 0;

		CHECK_FOR_INTERRUPTS();
		if (size == 0)
			continue;
		qsort(v, size, sizeof(uint32), code_cmp);
		for (int64 i = 0; i < size;)
		{
			uint32		s = v[i];
			int64		h = 0;
			int64		ts = T[s] - (s > 0 ? T[s - 1] : 0);

			while (i < size && v[i] == s)
				h++, i++;
			d++;
			if (t->sens_numeric)
			{
				if ((int) s > next)
					emd += emd_segment(T, PT, n, below, size, next, s - 1);
				below += h;
				next = s;
			}
			else
				emd += fabs((double) h / size - (double) ts / n) - (double) ts / n;
		}
		if (t->sens_numeric)
		{
			emd += emd_segment(T, PT, n, below, size, next, m - 1);
			emd = m > 1 ? emd / (m - 1) : 0;
		}
		else
			emd = (emd + 1) / 2;
		if (*least_l == 0 || d < *least_l)
			*least_l = d;
		if (emd > *largest_emd)
			*largest_emd = emd;
	}
}

/* Whether a column of type typid may go without a hierarchy: doubling intervals of its values */
static bool
automatic_type(Oid typid)
{
	return typid == INT2OID || typid == INT4OID || typid == INT8OID || typid == FLOAT4OID ||
		typid == FLOAT8OID || typid == NUMERICOID || typid == DATEOID;
}

/* The quasi-identifiers and their hierarchies from the arguments */
static void
read_qis(AnonArgs *a, ArrayType *names, ArrayType *hiers)
{
	Datum	   *nd,
			   *hd;
	bool	   *nn,
			   *hn;
	int			n,
				nh;

	KeanonArrayElements(names, NAMEOID, &nd, &nn, &n);
	KeanonArrayElements(hiers, OIDOID, &hd, &hn, &nh);
	if (n != nh || n < 1 || n > FD_MAX_QI)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("between 1 and %d quasi-identifiers, each with its hierarchy or none, are needed",
						FD_MAX_QI)));
	a->nqi = n;
	a->qis = palloc0(sizeof(AnonQi) * n);
	for (int i = 0; i < n; i++)
	{
		AnonQi	   *q = &a->qis[i];
		char	   *col;
		AttrNumber	att;

		if (nn[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("a quasi-identifier's name cannot be NULL")));
		col = NameStr(*DatumGetName(nd[i]));
		q->name = pstrdup(quote_identifier(col));
		att = get_attnum(a->relid, col);
		q->typid = att > 0 ? get_atttype(a->relid, att) : InvalidOid;
		q->automatic = hn[i] || DatumGetObjectId(hd[i]) == InvalidOid;
		if (!OidIsValid(q->typid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of table %s does not exist", col, get_rel_name(a->relid))));
		if (q->automatic && !automatic_type(q->typid))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("quasi-identifier \"%s\" of type %s needs a hierarchy", col,
							format_type_be(q->typid))));
		if (!q->automatic)
		{
			read_tree(q, DatumGetObjectId(hd[i]));
			tree_depths(q);
			hierarchy_levels(q);
		}
	}
}

/* The search's parameters from the arguments */
static void
read_params(AnonArgs *a, FunctionCallInfo fcinfo)
{
	char	   *scoring = text_to_cstring(PG_GETARG_TEXT_PP(8));
	char	   *method = text_to_cstring(PG_GETARG_TEXT_PP(11));

	fd_params_init(&a->params);
	fd_search_opts_init(&a->opts);
	a->params.k = PG_GETARG_INT32(4);
	if (!PG_ARGISNULL(5) && !PG_ARGISNULL(6))
	{
		a->params.rec_l = PG_GETARG_INT32(5);
		a->params.rec_c = PG_GETARG_FLOAT8(6);
	}
	else if (!PG_ARGISNULL(5))
		a->params.l_distinct = PG_GETARG_INT32(5);
	a->params.t = PG_ARGISNULL(7) ? FD_T_OFF : PG_GETARG_FLOAT8(7);
	a->params.scoring = strcmp(scoring, "eta") == 0 ? FD_SCORE_ETA :
		strcmp(scoring, "log") == 0 ? FD_SCORE_LOG : FD_SCORE_BASIC;
	if (!PG_ARGISNULL(9))
	{
		Datum	   *pd;
		bool	   *pn;
		int			np;

		KeanonArrayElements(PG_GETARG_ARRAYTYPE_P(9), FLOAT8OID, &pd, &pn, &np);
		for (int i = 0; i < np && i < a->nqi; i++)
			if (!pn[i])
				a->params.priority[i] = DatumGetFloat8(pd[i]);
	}
	a->params.max_suppressed = PG_GETARG_INT32(12);
	a->opts.method = strcmp(method, "optimal") == 0 ? FD_METHOD_OPTIMAL : FD_METHOD_FROST;
	a->opts.extension = PG_GETARG_BOOL(13);
	a->opts.partial = PG_GETARG_BOOL(14);
}

/*
 * The target table named by keanon.anonymize: an existing table in the
 * anonymized table's schema, which the caller owns, named as SQL says it
 */
static Oid
target_table(Oid relid, const char *name)
{
	Oid			target = DatumGetObjectId(DirectFunctionCall1(regclassin, CStringGetDatum(name)));

	if (get_rel_relkind(target) != RELKIND_RELATION ||
		get_rel_namespace(target) != get_rel_namespace(relid) ||
		!keanon_owns_relation(target, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" cannot be the target of keanon.anonymize", name),
				 errdetail("The target is a table of the caller in the anonymized table's schema.")));
	return target;
}

/* Set q's published type, one of those keanon.anonymize writes, from its name */
static void
output_type(AnonQi *q, const char *t)
{
	static const char *const allowed[] = {"pg_catalog.text", "pg_catalog.int4range", "pg_catalog.int8range",
	"pg_catalog.numrange", "pg_catalog.daterange"};
	static const Oid oids[] = {TEXTOID, INT4RANGEOID, INT8RANGEOID, NUMRANGEOID, DATERANGEOID};
	Oid			infunc;

	for (int i = 0; i < lengthof(allowed); i++)
		if (strcmp(t, allowed[i]) == 0)
		{
			q->out_type = oids[i];
			getTypeInputInfo(q->out_type, &infunc, &q->out_ioparam);
			fmgr_info(infunc, &q->out_in);
			return;
		}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("\"%s\" is not a type keanon.anonymize publishes", t)));
}

/*
 * PrivacyFrost2's pre-sampling: the rows of groups of fewer than kprime
 * rows at two levels below each hierarchy's top (the paper's "level 2",
 * counted from the root) are left out of the search and the result
 */
static void
presample(AnonArgs *a, FdTable *t, int kprime, int *removed)
{
	FdPresample ps;
	FdError		err;
	uint8	   *keep = palloc(sizeof(uint8) * Max(t->nrows, 1));

	memset(&ps, 0, sizeof(ps));
	for (int i = 0; i < a->nqi; i++)
		ps.level[i] = Max(0, a->qis[i].nlevels - 1 - 2);
	ps.kprime = kprime;
	ereport(NOTICE, (errmsg("keanon: pre-sampling %d rows", t->nrows)));
	fd_check_status(fd_presample(t, &ps, keep, removed, &err), &err, a);
	t->active = keep;
}

/*
 * keanon.anonymize_core(tab, quasi_identifiers, sensitive, hierarchies,
 * k, l, c, t, scoring, priorities, target, method, max_suppressed,
 * extension, partial, out_types): part of keanon.anonymize, which checks
 * the arguments and makes the empty target table; search, write the
 * published rows, and return what was found
 */
Datum
keanon_anonymize_core(PG_FUNCTION_ARGS)
{
	AnonArgs	a;
	FdTable		t;
	FdHierarchy *fh;
	uint32	  **qicodes;
	AnonRead	rd;
	FdContext  *ctx;
	FdResult   *res;
	FdError		err;
	instr_time	start,
				elapsed;
	TupleDesc	desc;
	Datum		values[14];
	bool		nulls[14] = {0};
	Datum	   *levels;
	int64		written;
	MemoryContext outer = CurrentMemoryContext;
	HeapTuple	tuple;
	int			least_l;
	double		largest_emd;
	int			removed = 0;
	Oid			sens_coll;
	AttrNumber	sens_att;

	for (int i = 0; i < 16; i++)
		if (PG_ARGISNULL(i) && i != 5 && i != 6 && i != 7 && i != 9 && i != 16)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("keanon.anonymize_core needs argument %d", i + 1)));
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "keanon: anonymize_core must return a record");
	memset(&a, 0, sizeof(a));
	a.relid = PG_GETARG_OID(0);
	a.sensitive = pstrdup(quote_identifier(NameStr(*PG_GETARG_NAME(2))));
	sens_att = get_attnum(a.relid, NameStr(*PG_GETARG_NAME(2)));
	if (sens_att <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of table %s does not exist", NameStr(*PG_GETARG_NAME(2)),
						get_rel_name(a.relid))));
	get_atttypetypmodcoll(a.relid, sens_att, &a.sens_type, &a.sens_typmod, &sens_coll);
	a.target = target_table(a.relid, text_to_cstring(PG_GETARG_TEXT_PP(10)));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "keanon: SPI_connect failed");
	read_qis(&a, PG_GETARG_ARRAYTYPE_P(1), PG_GETARG_ARRAYTYPE_P(3));
	read_params(&a, fcinfo);
	{
		Datum	   *od;
		bool	   *on;
		int			no;

		KeanonArrayElements(PG_GETARG_ARRAYTYPE_P(15), TEXTOID, &od, &on, &no);
		if (no != a.nqi)
			elog(ERROR, "keanon: anonymize_core needs one output type per quasi-identifier");
		for (int i = 0; i < no; i++)
		{
			if (on[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("keanon.anonymize_core needs an output type for each quasi-identifier")));
			output_type(&a.qis[i], TextDatumGetCString(od[i]));
		}
	}
	lock_target(&a);
	ereport(NOTICE, (errmsg("keanon: reading %s", get_rel_name(a.relid))));
	fh = palloc0(sizeof(FdHierarchy) * a.nqi);
	qicodes = palloc(sizeof(uint32 *) * a.nqi);
	encode_table(&a, &t, fh, qicodes, &rd);

	search_allocator();
	PG_TRY();
	{
		if (!PG_ARGISNULL(16))
			presample(&a, &t, PG_GETARG_INT32(16), &removed);
		ereport(NOTICE, (errmsg("keanon: searching the generalizations of %d rows", t.nrows - removed)));
		INSTR_TIME_SET_CURRENT(start);
		fd_check_status(fd_prepare(&t, &a.params, &ctx, &err), &err, &a);
		fd_check_status(fd_search(ctx, &a.opts, &res, &err), &err, &a);
	}
	PG_FINALLY();
	{
		KeanonEngineAllocator();
	}
	PG_END_TRY();
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	ereport(NOTICE, (errmsg("keanon: writing %s", KeanonQualifiedName(a.target))));
	written = write_target(&a, res, &rd);
	class_diversity(&t, res, &least_l, &largest_emd);

	/* what goes back lives past SPI's memory */
	MemoryContextSwitchTo(outer);
	levels = palloc(sizeof(Datum) * a.nqi);
	for (int i = 0; i < a.nqi; i++)
		levels[i] = Int32GetDatum(res->node[i]);
	values[0] = PointerGetDatum(construct_array(levels, a.nqi, INT4OID, 4, true, TYPALIGN_INT));
	values[1] = Float8GetDatum(res->final.score);
	values[2] = Int32GetDatum(res->final.min_group);
	values[3] = Int32GetDatum(least_l);
	values[4] = Int32GetDatum(res->final.min_recursive_l);
	nulls[4] = a.params.rec_l == 0;
	values[5] = Float8GetDatum(largest_emd);
	values[6] = Int32GetDatum(res->final.suppressed);
	values[7] = Int32GetDatum(res->final.groups);
	values[8] = Int64GetDatum(res->counters.checks);
	values[9] = Int64GetDatum(res->counters.rollups);
	values[10] = Int32GetDatum(res->nrefined);
	values[11] = Int64GetDatum(written);
	values[12] = Float8GetDatum(INSTR_TIME_GET_MILLISEC(elapsed));
	values[13] = Int32GetDatum(removed);
	tuple = heap_form_tuple(BlessTupleDesc(desc), values, nulls);
	SPI_finish();
	PG_RETURN_DATUM(HeapTupleGetDatum(tuple));
}

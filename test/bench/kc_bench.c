/*
 * kc_bench.c
 *		Benchmarks of the clustering core (src/cluster) on its in-memory
 *		store: the experiments of the I3M and similar-B-tree papers on the
 *		UCI Adult data, scaling on synthetic rows, and NCP/GCP at k = 10.
 *
 *	kc_bench EXPERIMENT [ADULT_FILE [HIERARCHY_DIR]]
 *
 *	ADULT_FILE defaults to data/adult.data and HIERARCHY_DIR to
 *	test/bench/hierarchies.  EXPERIMENT is one of
 *
 *	i3m_vs_static	(I3M paper, k = 3 and 5) the complete rows shuffled with
 *					a fixed seed; for p in {1, 5, 10, 25, 50} %:
 *					insert: the static clustering of the first (100 - p) %,
 *					then kc_insert (I3M) of the last p % one at a time,
 *					against the static clustering of all the rows;
 *					delete: the static clustering of all the rows, then
 *					kc_delete of the last p % one at a time, against the
 *					static clustering of the first (100 - p) %.
 *					Afterwards kc_optimize on the incremental result.
 *					Baseline "median": kc_build on the 30,162 rows;
 *					baseline "greedy": kc_build_greedy, O(n^2), on the
 *					first 5,000 shuffled rows.
 *	sbtree_vs_i3m	(similar-B-tree paper, k = 5) tables of 5,000 to 50,000
 *					rows: the shuffled Adult rows, then beyond 30,162
 *					synthetic rows; kc_build, then 500 more rows inserted one
 *					at a time with each method.
 *	scaling			kc_build of 10^4, 10^5, 10^6 synthetic rows (k = 5), then
 *					single inserts and deletes with each method; the time
 *					spent in the store's nearest and covering (brute force in
 *					the memory store, a GiST index scan inside PostgreSQL)
 *					is measured apart from the core's own.
 *	ncp				NCP (GCP) at k = 10 on the 30,162 rows: kc_build (also
 *					followed by kc_optimize), kc_build_greedy (about 20 s;
 *					KC_NCP_GREEDY=0 skips it), and a replay of every row, in
 *					file order, by kc_insert from an empty store with I3M
 *					(also followed by kc_optimize; and once more with the
 *					groups searched by their published boxes, as the
 *					PostgreSQL store does, instead of the memory store's
 *					boxes) and with the similar-B-tree, beside Mondrian's
 *					published figures.
 *	window_replay	the replay of ncp (every row in file order by kc_insert
 *					from an empty store) with I3M and the similar-B-tree at
 *					k = 5 and 10, the store's nearest answered exactly (the
 *					memory store's brute force) or from a window of a
 *					space-filling-curve index (below), against the exact.
 *	window_arrivals	as i3m_vs_static's insert at p = 10 %: kc_build of the
 *					first 90 % of the shuffled rows, the last 10 % inserted
 *					one at a time (I3M and the similar-B-tree, k = 3 and 5),
 *					exact and window modes, against kc_build of all rows.
 *	window_scaling	kc_build of 10^4, 10^5, 10^6 synthetic rows (k = 5), then
 *					n / 10 (at most 10,000) single inserts in each window mode.
 *	all				every experiment, one CSV block after another.
 *
 * Window modes: the bench keeps (key, gid) of every non-empty group in key
 * order (blocks of 256 under a sorted directory, a two-level btree),
 * updated at each put and drop; the key is kc_curve_key (Morton or
 * Hilbert) of the group's place, the centre of its box for I3M and its
 * centre (sum / n) for the similar-B-tree, numeric coordinates taken from
 * the column's least value (the "_no_origin" modes take them from 0, as
 * kc_zkey does, so that values above the span clamp).  nearest takes the W
 * entries at or after the row's key and the W before it (skipping except),
 * ranks them by the memory store's distance (to the box for I3M, to the
 * centre for the similar-B-tree) and returns the best max.
 *
 * Output, one CSV block per experiment, each with its header line:
 *
 *	i3m_vs_static	baseline,n,k,op,pct,changes,il_incremental,il_static,
 *					il_ratio,ncp_incremental_pct,ncp_static_pct,incremental_s,
 *					search_s,static_s,us_per_change,core_us_per_change,
 *					il_optimized,il_ratio_optimized,groups_broken,optimize_s
 *					(static_s: kc_build or kc_build_greedy of the final rows;
 *					search_s: the part of incremental_s spent in the store's
 *					nearest; il_optimized: after kc_optimize of the
 *					incremental result)
 *	sbtree_vs_i3m	method,n,k,synthetic_rows,build_s,il_build,inserts,
 *					insert_us,search_us,core_us,store_calls_per_insert,
 *					il_after,il_static_after,il_ratio,ncp_after_pct
 *	scaling			method,n,k,build_s,groups,ncp_pct,ops,insert_us,
 *					insert_search_us,insert_core_us,insert_store_calls,
 *					delete_us,delete_search_us,delete_core_us,
 *					delete_store_calls
 *	ncp				method,k,n,groups,seconds,il,ncp_pct, then the NCP of
 *					each attribute; the published Mondrian rows fill only
 *					method, k, n and ncp_pct
 *	window_replay	method,k,mode,w,n,groups,il,ncp_pct,il_vs_exact,
 *					ncp_vs_exact,seconds,search_us,index_us,core_us
 *	window_arrivals	method,k,mode,w,n,changes,il_incremental,il_static,
 *					il_ratio,il_vs_exact,ncp_incremental_pct,ncp_static_pct,
 *					us_per_change,search_us,index_us
 *	window_scaling	method,mode,w,n,k,build_s,build_index_s,groups,ops,
 *					insert_us,search_us,find_us,rank_us,index_us,core_us,
 *					core_plus_search_us,ncp_pct (groups and NCP after the
 *					build)
 *
 * In window modes search_us is the whole nearest: find_us (the row's key,
 * the descent and the walk of 2W entries) plus rank_us (reading the 2W
 * summaries, their distances, the sort); index_us is the upkeep of the
 * index at put and drop, which core_us excludes.
 *
 * "core" times are the whole time less the time inside the store's nearest
 * and covering (the brute-force scans of the memory store); they include
 * the memory store's other callbacks (O(1) or O(group)) and the timer's
 * own overhead.  store_calls counts every call the core made to the store.
 *
 * Synthetic rows draw each of the 8 coordinates independently from the
 * Adult rows' values of that column (the per-column distributions, without
 * the correlations between columns).
 *
 * Information loss (IL) is the core's kc_il summed over the groups (I3M,
 * Definition 4).  NCP of a row: per attribute, numeric (hi - lo) / range,
 * categorical (leaves under the published node - 1) / (leaves - 1), 0 for
 * a leaf; averaged over the 8 attributes and all rows, in percent.
 *
 * After every phase the store is checked against the rows: each group's
 * summary must be the box, count and sum of its members, hold k to 2k - 1
 * of them (unless it is the only group) and every live row belong to one
 * group; any difference aborts.  Randomness comes from fixed-seed xorshift
 * generators; times from clock_gettime(CLOCK_MONOTONIC).  CSV goes to
 * stdout, progress to stderr.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kc_cluster.h"
#include "kc_memstore.h"

#define ADULT_FIELDS		15
#define ADULT_COMPLETE		30162
#define ND					8
#define CANDIDATES			8	/* what the extension asks of its store */
#define SEED				UINT64_C(0x9e3779b97f4a7c15)
#define SYNTH_SEED			UINT64_C(0xd1b54a32d192ed03)

#define GREEDY_N			5000
#define SB_K				5
#define SB_INSERTS			500
#define SB_MAX_N			50000
#define SCALE_K				5
#define NCP_K				10

/* Mondrian on Adult, k = 10, these 8 quasi-identifiers (published) */
#define MONDRIAN_STRICT_PCT	12.19
#define MONDRIAN_HIER_PCT	28.52

/* The quasi-identifiers: name, field of adult.data, kind */
static const struct
{
	const char *name;
	int			field;
	KcKind		kind;
}			qi[ND] =
{
	{"age", 0, KC_NUMERIC},
	{"workclass", 1, KC_CATEGORICAL},
	{"education-num", 4, KC_NUMERIC},
	{"marital-status", 5, KC_CATEGORICAL},
	{"occupation", 6, KC_CATEGORICAL},
	{"race", 8, KC_CATEGORICAL},
	{"sex", 9, KC_CATEGORICAL},
	{"native-country", 13, KC_CATEGORICAL},
};

static const int pcts[] = {1, 5, 10, 25, 50};
#define NPCTS ((int) (sizeof(pcts) / sizeof(pcts[0])))

/* A hierarchy read from value,parent lines, leaves numbered depth first */
typedef struct Hier
{
	int			nnodes;
	int			nleaves;
	char	  **name;			/* [nnodes] by node number (depth-first) */
	int		   *parent;
	int		   *height;
	int		   *leaf_lo;
	int		   *leaf_hi;
	int		   *leaf_node;		/* [nleaves] */
	KcHierarchy kh;
} Hier;

/* The loaded data: rows of ND coordinates */
typedef struct Data
{
	int64_t		n;
	double	   *x;				/* [n * ND] */
} Data;

/*
 * The window mode's index: (key, gid) pairs in key order, in blocks of at
 * most ZB_CAP entries under a sorted directory (a two-level btree), so that
 * a put or drop costs a binary search and a move within one block.
 */
#define ZB_CAP				256

typedef struct ZEnt
{
	uint64_t	key;
	int64_t		gid;
} ZEnt;

typedef struct ZBlock
{
	int			n;
	ZEnt		e[ZB_CAP];
} ZBlock;

typedef struct ZIndex
{
	ZBlock	  **b;				/* [nb], none empty */
	int64_t		nb;
	int64_t		bcap;
	int64_t		count;
} ZIndex;

/* A window candidate: its squared scaled distance and id */
typedef struct ZCand
{
	double		dist;
	int64_t		gid;
} ZCand;

/* A store wrapped to count the core's calls and time nearest/covering */
enum
{
	C_NEAREST, C_COVERING, C_GET, C_MEMBERS, C_CREATE, C_PUT, C_DROP, C_PLACE,
	C_COUNT, C_ALL, C_NCALLS
};

typedef struct Counted
{
	KcStore		pub;
	const KcStore *in;
	int64_t		calls[C_NCALLS];
	double		search_s;		/* seconds inside nearest and covering */
	/* I3M only: rank groups by their published box instead (see below) */
	bool		published;
	const KcSchema *s;
	KcMemStore *ms;
	double	   *tdist;			/* [tcap] */
	int64_t    *tgid;
	int			tcap;
	/* window mode: nearest from a curve-key index of the groups' places */
	int			zwin;			/* W; 0 for the memory store's exact search */
	KcCurve		curve;
	bool		zorigin;		/* numeric keys from the column's least value */
	ZIndex		zi;
	uint64_t   *zkey_of;		/* [zgcap] each indexed group's key */
	char	   *zin;			/* [zgcap] whether it is indexed */
	int64_t		zgcap;
	ZCand	   *zc;				/* [zccap] window candidates */
	int			zccap;
	double		zmaint_s;		/* seconds keeping the index (put, drop) */
	double		zfind_s;		/* seconds of nearest in key, descent and walk */
} Counted;

/* One clustering: a schema, a memory store over rows, its counted view */
typedef struct Run
{
	KcSchema	s;
	KcMemStore *ms;
	Counted		cs;
	const double *x;			/* the rows added, handle = index */
	int64_t		n;
} Run;

/* Quality of a clustering */
typedef struct Quality
{
	double		il;
	double		ncp;			/* percent */
	double		ncp_dim[ND];	/* percent */
	int64_t		groups;
	int64_t		rows;
} Quality;

static Hier hiers[ND];
static double ranges[ND];
static double mins[ND];			/* the least value of each column of Adult */
static uint64_t rng_state = SEED;

static void die(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));

/* Print a message to stderr and exit with failure */
static void
die(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "kc_bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Progress on stderr */
static void
note(const char *fmt,...) __attribute__((format(printf, 1, 2)));

static void
note(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

/* malloc that never returns NULL */
static void *
xmalloc(size_t size)
{
	void	   *p = malloc(size ? size : 1);

	if (p == NULL)
		die("out of memory allocating %zu bytes", size);
	return p;
}

/* realloc that never returns NULL */
static void *
xrealloc(void *p, size_t size)
{
	p = realloc(p, size ? size : 1);
	if (p == NULL)
		die("out of memory allocating %zu bytes", size);
	return p;
}

static char *
xstrdup(const char *s)
{
	char	   *d = xmalloc(strlen(s) + 1);

	strcpy(d, s);
	return d;
}

static const char *
status_name(KcStatus rc)
{
	switch (rc)
	{
		case KC_OK:
			return "KC_OK";
		case KC_ERR_ARG:
			return "KC_ERR_ARG";
		case KC_ERR_NOMEM:
			return "KC_ERR_NOMEM";
		case KC_ERR_CORRUPT:
			return "KC_ERR_CORRUPT";
	}
	return "unknown status";
}

/* Abort unless rc is KC_OK */
static void
check(KcStatus rc, const char *what)
{
	if (rc != KC_OK)
		die("%s failed: %s", what, status_name(rc));
}

/* Seconds on the monotonic clock */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* xorshift64* */
static uint64_t
rng_next(void)
{
	uint64_t	x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * UINT64_C(0x2545f4914f6cdd1d);
}

/* A random integer in [0, bound) */
static uint64_t
rng_below(uint64_t bound)
{
	return (uint64_t) (((unsigned __int128) rng_next() * bound) >> 64);
}

/* Strip blanks and line ends from both ends of s, in place */
static char *
trim(char *s)
{
	char	   *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' ||
					   end[-1] == '\n' || end[-1] == '\r'))
		end--;
	*end = '\0';
	return s;
}

/* ----------------------------------------------------------------
 * Hierarchies
 * ----------------------------------------------------------------
 */

/* A node as read, before numbering */
typedef struct RawNode
{
	char	   *value;
	char	   *parent;
	int			pidx;			/* index of the parent line, -1 for the root */
	int		   *child;			/* children's line indexes, sorted by value */
	int			nchild;
	int			num;			/* depth-first number, -1 until visited */
} RawNode;

static RawNode *sort_nodes;

static int
child_cmp(const void *a, const void *b)
{
	return strcmp(sort_nodes[*(const int *) a].value, sort_nodes[*(const int *) b].value);
}

/* Number nodes depth first from raw node r; returns r's number */
static int
number_nodes(Hier *h, RawNode *raw, int r, int parent_num, int *next_node)
{
	int			me = (*next_node)++;
	int			c;
	int			height = 0;

	if (raw[r].num >= 0)
		die("hierarchy: node \"%s\" is reached twice", raw[r].value);
	raw[r].num = me;
	h->name[me] = raw[r].value;
	h->parent[me] = parent_num;
	if (raw[r].nchild == 0)
	{
		h->leaf_node[h->nleaves] = me;
		h->leaf_lo[me] = h->leaf_hi[me] = h->nleaves++;
		h->height[me] = 0;
		return me;
	}
	h->leaf_lo[me] = h->nleaves;
	for (c = 0; c < raw[r].nchild; c++)
	{
		int			cn = number_nodes(h, raw, raw[r].child[c], me, next_node);

		if (h->height[cn] + 1 > height)
			height = h->height[cn] + 1;
	}
	h->leaf_hi[me] = h->nleaves - 1;
	h->height[me] = height;
	return me;
}

/* Read dir/column.csv into h */
static void
load_hierarchy(const char *dir, const char *column, Hier *h)
{
	char		path[4096];
	FILE	   *f;
	char	   *line = NULL;
	size_t		cap = 0;
	RawNode    *raw = NULL;
	int			n = 0;
	int			room = 0;
	int			root = -1;
	int			lineno = 0;
	int			next_node = 0;
	int			i;
	int			j;

	snprintf(path, sizeof(path), "%s/%s.csv", dir, column);
	f = fopen(path, "r");
	if (f == NULL)
		die("cannot open hierarchy \"%s\": %s", path, strerror(errno));
	while (getline(&line, &cap, f) != -1)
	{
		char	   *comma;
		char	   *t = trim(line);

		lineno++;
		if (lineno == 1)
		{
			if (strcmp(t, "value,parent") != 0)
				die("%s: the first line must be \"value,parent\"", path);
			continue;
		}
		if (*t == '\0')
			continue;
		comma = strchr(t, ',');
		if (comma == NULL || strchr(comma + 1, ',') != NULL)
			die("%s:%d: expected value,parent", path, lineno);
		*comma = '\0';
		if (n == room)
		{
			room = room ? room * 2 : 64;
			raw = xrealloc(raw, (size_t) room * sizeof(RawNode));
		}
		raw[n].value = xstrdup(trim(t));
		raw[n].parent = xstrdup(trim(comma + 1));
		raw[n].child = NULL;
		raw[n].nchild = 0;
		raw[n].num = -1;
		if (raw[n].value[0] == '\0')
			die("%s:%d: empty value", path, lineno);
		n++;
	}
	free(line);
	fclose(f);
	if (n == 0)
		die("%s: no nodes", path);
	for (i = 0; i < n; i++)
	{
		for (j = 0; j < i; j++)
			if (strcmp(raw[i].value, raw[j].value) == 0)
				die("%s: value \"%s\" appears twice", path, raw[i].value);
		raw[i].pidx = -1;
		if (raw[i].parent[0] == '\0')
		{
			if (root >= 0)
				die("%s: two roots, \"%s\" and \"%s\"", path, raw[root].value, raw[i].value);
			root = i;
			continue;
		}
		for (j = 0; j < n; j++)
			if (strcmp(raw[i].parent, raw[j].value) == 0)
				raw[i].pidx = j;
		if (raw[i].pidx < 0)
			die("%s: the parent \"%s\" of \"%s\" is not a node", path, raw[i].parent,
				raw[i].value);
	}
	if (root < 0)
		die("%s: no root (a line with an empty parent)", path);
	for (i = 0; i < n; i++)
		raw[i].child = xmalloc((size_t) n * sizeof(int));
	for (i = 0; i < n; i++)
		if (raw[i].pidx >= 0)
			raw[raw[i].pidx].child[raw[raw[i].pidx].nchild++] = i;
	sort_nodes = raw;
	for (i = 0; i < n; i++)
		qsort(raw[i].child, (size_t) raw[i].nchild, sizeof(int), child_cmp);
	h->nnodes = n;
	h->nleaves = 0;
	h->name = xmalloc((size_t) n * sizeof(char *));
	h->parent = xmalloc((size_t) n * sizeof(int));
	h->height = xmalloc((size_t) n * sizeof(int));
	h->leaf_lo = xmalloc((size_t) n * sizeof(int));
	h->leaf_hi = xmalloc((size_t) n * sizeof(int));
	h->leaf_node = xmalloc((size_t) n * sizeof(int));
	number_nodes(h, raw, root, -1, &next_node);
	if (next_node != n)
		for (i = 0; i < n; i++)
			if (raw[i].num < 0)
				die("%s: \"%s\" is not under the root (a cycle?)", path, raw[i].value);
	h->kh.nnodes = h->nnodes;
	h->kh.nleaves = h->nleaves;
	h->kh.root = 0;
	h->kh.parent = h->parent;
	h->kh.height = h->height;
	h->kh.leaf_lo = h->leaf_lo;
	h->kh.leaf_hi = h->leaf_hi;
	h->kh.leaf_node = h->leaf_node;
	for (i = 0; i < n; i++)
	{
		free(raw[i].child);
		free(raw[i].parent);
	}
	free(raw);
}

/* The leaf number of value in h, dying when it is not a leaf */
static int
leaf_of(const Hier *h, const char *column, const char *value)
{
	int			i;

	for (i = 0; i < h->nnodes; i++)
		if (strcmp(h->name[i], value) == 0)
		{
			if (h->height[i] != 0)
				die("value \"%s\" of %s is an inner node of its hierarchy, not a leaf",
					value, column);
			return h->leaf_lo[i];
		}
	die("value \"%s\" of %s is not in its hierarchy", value, column);
}

/* ----------------------------------------------------------------
 * Data
 * ----------------------------------------------------------------
 */

/* The complete rows of adult.data, file order */
static Data
load_adult(const char *path)
{
	FILE	   *f = fopen(path, "r");
	char	   *line = NULL;
	size_t		cap = 0;
	Data		data = {0, NULL};
	int64_t		room = 0;
	int64_t		dropped = 0;
	double		min[ND];
	double		max[ND];
	int			d;

	if (f == NULL)
		die("cannot open \"%s\": %s", path, strerror(errno));
	while (getline(&line, &cap, f) != -1)
	{
		char	   *fields[ADULT_FIELDS + 1];
		int			nf = 0;
		char	   *p = line;
		bool		complete = true;
		double	   *x;

		for (;;)
		{
			char	   *comma = strchr(p, ',');

			if (comma)
				*comma = '\0';
			if (nf <= ADULT_FIELDS)
				fields[nf] = trim(p);
			nf++;
			if (!comma)
				break;
			p = comma + 1;
		}
		if (nf != ADULT_FIELDS)
			continue;			/* the blank last line */
		if (strcmp(fields[0], "age") == 0)
			continue;			/* a header */
		for (d = 0; d < ND; d++)
			if (strcmp(fields[qi[d].field], "?") == 0 || fields[qi[d].field][0] == '\0')
				complete = false;
		if (!complete)
		{
			dropped++;
			continue;
		}
		if (data.n == room)
		{
			room = room ? room * 2 : 32768;
			data.x = xrealloc(data.x, (size_t) room * ND * sizeof(double));
		}
		x = data.x + data.n * ND;
		for (d = 0; d < ND; d++)
		{
			const char *v = fields[qi[d].field];

			if (qi[d].kind == KC_NUMERIC)
			{
				char	   *endp;

				errno = 0;
				x[d] = strtod(v, &endp);
				if (errno != 0 || endp == v || *endp != '\0' || !isfinite(x[d]))
					die("%s: %s \"%s\" is not a number", path, qi[d].name, v);
			}
			else
				x[d] = (double) leaf_of(&hiers[d], qi[d].name, v);
		}
		data.n++;
	}
	free(line);
	fclose(f);
	if (data.n != ADULT_COMPLETE)
		die("%s: %" PRId64 " complete rows, expected %d (is it the UCI adult.data?)",
			path, data.n, ADULT_COMPLETE);
	for (d = 0; d < ND; d++)
	{
		min[d] = INFINITY;
		max[d] = -INFINITY;
	}
	for (int64_t i = 0; i < data.n; i++)
		for (d = 0; d < ND; d++)
		{
			double		v = data.x[i * ND + d];

			min[d] = v < min[d] ? v : min[d];
			max[d] = v > max[d] ? v : max[d];
		}
	for (d = 0; d < ND; d++)
		mins[d] = min[d];
	for (d = 0; d < ND; d++)
		if (qi[d].kind == KC_NUMERIC)
		{
			ranges[d] = max[d] - min[d];
			if (!(ranges[d] > 0))
				die("%s takes a single value", qi[d].name);
		}
	note("adult: %" PRId64 " complete rows (%" PRId64 " dropped); age %g..%g, education-num %g..%g",
		 data.n, dropped, min[0], max[0], min[2], max[2]);
	return data;
}

/* A copy of the rows, shuffled with the fixed seed */
static Data
shuffled(const Data *src)
{
	Data		out;
	int64_t		i;

	out.n = src->n;
	out.x = xmalloc((size_t) src->n * ND * sizeof(double));
	memcpy(out.x, src->x, (size_t) src->n * ND * sizeof(double));
	rng_state = SEED;
	for (i = out.n - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) rng_below((uint64_t) i + 1);
		double		t[ND];

		memcpy(t, out.x + i * ND, sizeof(t));
		memcpy(out.x + i * ND, out.x + j * ND, sizeof(t));
		memcpy(out.x + j * ND, t, sizeof(t));
	}
	return out;
}

/*
 * n rows: the first `keep` rows of base, then rows whose coordinates are
 * drawn independently from base's values of each column.
 */
static Data
synthetic(const Data *base, int64_t keep, int64_t n)
{
	Data		out;
	int64_t		i;

	if (keep > base->n)
		keep = base->n;
	if (keep > n)
		keep = n;
	out.n = n;
	out.x = xmalloc((size_t) n * ND * sizeof(double));
	memcpy(out.x, base->x, (size_t) keep * ND * sizeof(double));
	rng_state = SYNTH_SEED;
	for (i = keep; i < n; i++)
		for (int d = 0; d < ND; d++)
			out.x[i * ND + d] = base->x[(int64_t) rng_below((uint64_t) base->n) * ND + d];
	return out;
}

/* ----------------------------------------------------------------
 * The counted store
 * ----------------------------------------------------------------
 */

/* Order of index entries: key, then id */
static int
zent_cmp(const ZEnt *a, const ZEnt *b)
{
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return a->gid < b->gid ? -1 : (a->gid > b->gid ? 1 : 0);
}

/* The last block whose first entry is at most e (0 when none is) */
static int64_t
zi_block(const ZIndex *zi, const ZEnt *e)
{
	int64_t		lo = 0;
	int64_t		hi = zi->nb - 1;

	while (lo < hi)
	{
		int64_t		mid = (lo + hi + 1) / 2;

		if (zent_cmp(&zi->b[mid]->e[0], e) <= 0)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* The first position of block b not before e */
static int
zb_lower(const ZBlock *b, const ZEnt *e)
{
	int			lo = 0;
	int			hi = b->n;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (zent_cmp(&b->e[mid], e) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
zi_insert(ZIndex *zi, uint64_t key, int64_t gid)
{
	ZEnt		e = {key, gid};
	int64_t		bi;
	ZBlock	   *b;
	int			pos;

	if (zi->nb == 0)
	{
		zi->bcap = 16;
		zi->b = xrealloc(zi->b, (size_t) zi->bcap * sizeof(ZBlock *));
		zi->b[0] = xmalloc(sizeof(ZBlock));
		zi->b[0]->n = 0;
		zi->nb = 1;
	}
	bi = zi_block(zi, &e);
	b = zi->b[bi];
	pos = zb_lower(b, &e);
	memmove(&b->e[pos + 1], &b->e[pos], (size_t) (b->n - pos) * sizeof(ZEnt));
	b->e[pos] = e;
	b->n++;
	zi->count++;
	if (b->n == ZB_CAP)
	{
		ZBlock	   *nbk = xmalloc(sizeof(ZBlock));

		nbk->n = ZB_CAP / 2;
		memcpy(nbk->e, &b->e[ZB_CAP / 2], (size_t) nbk->n * sizeof(ZEnt));
		b->n = ZB_CAP / 2;
		if (zi->nb == zi->bcap)
		{
			zi->bcap *= 2;
			zi->b = xrealloc(zi->b, (size_t) zi->bcap * sizeof(ZBlock *));
		}
		memmove(&zi->b[bi + 2], &zi->b[bi + 1], (size_t) (zi->nb - bi - 1) * sizeof(ZBlock *));
		zi->b[bi + 1] = nbk;
		zi->nb++;
	}
}

static void
zi_delete(ZIndex *zi, uint64_t key, int64_t gid)
{
	ZEnt		e = {key, gid};
	int64_t		bi;
	ZBlock	   *b;
	int			pos;

	if (zi->nb == 0)
		die("window index: deleting from an empty index");
	bi = zi_block(zi, &e);
	b = zi->b[bi];
	pos = zb_lower(b, &e);
	if (pos >= b->n || zent_cmp(&b->e[pos], &e) != 0)
		die("window index: group %" PRId64 " is not under its key", gid);
	memmove(&b->e[pos], &b->e[pos + 1], (size_t) (b->n - pos - 1) * sizeof(ZEnt));
	b->n--;
	zi->count--;
	if (b->n == 0)
	{
		free(b);
		memmove(&zi->b[bi], &zi->b[bi + 1], (size_t) (zi->nb - bi - 1) * sizeof(ZBlock *));
		zi->nb--;
	}
}

static void
zi_free(ZIndex *zi)
{
	for (int64_t i = 0; i < zi->nb; i++)
		free(zi->b[i]);
	free(zi->b);
	memset(zi, 0, sizeof(*zi));
}

/* The key of a group's place: its box's centre (I3M) or its centre */
static uint64_t
group_key(const Counted *c, const KcGroup *g)
{
	double		p[KC_MAX_DIMS];

	for (int d = 0; d < c->s->ndims; d++)
		p[d] = c->s->method == KC_I3M ? 0.5 * (g->lo[d] + g->hi[d]) :
			g->sum[d] / (double) g->n;
	return kc_curve_key(c->s, c->zorigin ? mins : NULL, p, c->curve);
}

/* Index group g (as just put) under its key, or unindex it when empty */
static void
zindex_put(Counted *c, const KcGroup *g)
{
	int64_t		gid = g->gid;
	uint64_t	key = 0;

	if (gid >= c->zgcap)
	{
		int64_t		cap = c->zgcap ? c->zgcap : 1024;

		while (cap <= gid)
			cap *= 2;
		c->zkey_of = xrealloc(c->zkey_of, (size_t) cap * sizeof(uint64_t));
		c->zin = xrealloc(c->zin, (size_t) cap);
		memset(c->zin + c->zgcap, 0, (size_t) (cap - c->zgcap));
		c->zgcap = cap;
	}
	if (g->n > 0)
		key = group_key(c, g);
	if (c->zin[gid] && (g->n == 0 || c->zkey_of[gid] != key))
	{
		zi_delete(&c->zi, c->zkey_of[gid], gid);
		c->zin[gid] = 0;
	}
	if (g->n > 0 && !c->zin[gid])
	{
		zi_insert(&c->zi, key, gid);
		c->zkey_of[gid] = key;
		c->zin[gid] = 1;
	}
}

static void
zindex_drop(Counted *c, int64_t gid)
{
	if (gid >= 0 && gid < c->zgcap && c->zin[gid])
	{
		zi_delete(&c->zi, c->zkey_of[gid], gid);
		c->zin[gid] = 0;
	}
}

/* Order of window candidates: distance, then id */
static int
zcand_cmp(const void *a, const void *b)
{
	const ZCand *x = a;
	const ZCand *y = b;

	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	return x->gid < y->gid ? -1 : (x->gid > y->gid ? 1 : 0);
}

/* Squared scaled distance from x to g: to its box (I3M) or its centre */
static double
group_distance(const KcSchema *s, const KcGroup *g, const double *x)
{
	double		dist = 0.0;

	for (int d = 0; d < s->ndims; d++)
	{
		double		t;

		if (s->method == KC_I3M)
			t = x[d] < g->lo[d] ? g->lo[d] - x[d] : (x[d] > g->hi[d] ? x[d] - g->hi[d] : 0.0);
		else
			t = x[d] - g->sum[d] / (double) g->n;
		t *= kc_weight(s, d);
		dist += t * t;
	}
	return dist;
}

/*
 * The window mode's nearest: the W index entries at or after x's key and
 * the W before it (skipping except), ranked by their true distance, the
 * best max of them.
 */
static KcStatus
window_nearest(Counted *c, const double *x, int max, int64_t except, KcGroup *out,
			   int *found)
{
	const ZIndex *zi = &c->zi;
	double		t0 = now();
	ZEnt		probe = {kc_curve_key(c->s, c->zorigin ? mins : NULL, x, c->curve), INT64_MIN};
	double		glo[KC_MAX_DIMS];
	double		ghi[KC_MAX_DIMS];
	double		gsum[KC_MAX_DIMS];
	KcGroup		g = {0, 0, glo, ghi, gsum};
	int			cnt = 0;
	int64_t		bi;
	int			pos;

	*found = 0;
	if (zi->nb == 0 || max <= 0)
		return KC_OK;
	if (c->zccap < 2 * c->zwin)
	{
		c->zccap = 2 * c->zwin;
		c->zc = xrealloc(c->zc, (size_t) c->zccap * sizeof(ZCand));
	}
	bi = zi_block(zi, &probe);
	pos = zb_lower(zi->b[bi], &probe);
	/* forward: W entries at or after the key */
	{
		int64_t		b = bi;
		int			p = pos;
		int			got = 0;

		while (got < c->zwin && b < zi->nb)
		{
			if (p >= zi->b[b]->n)
			{
				b++;
				p = 0;
				continue;
			}
			if (zi->b[b]->e[p].gid != except)
			{
				c->zc[cnt++].gid = zi->b[b]->e[p].gid;
				got++;
			}
			p++;
		}
	}
	/* backward: W entries before it */
	{
		int64_t		b = bi;
		int			p = pos - 1;
		int			got = 0;

		while (got < c->zwin && b >= 0)
		{
			if (p < 0)
			{
				if (--b >= 0)
					p = zi->b[b]->n - 1;
				continue;
			}
			if (zi->b[b]->e[p].gid != except)
			{
				c->zc[cnt++].gid = zi->b[b]->e[p].gid;
				got++;
			}
			p--;
		}
	}
	c->zfind_s += now() - t0;
	for (int i = 0; i < cnt; i++)
	{
		if (!kc_memstore_group(c->ms, c->zc[i].gid, &g, NULL) || g.n == 0)
			die("window index: group %" PRId64 " is indexed but empty or gone", c->zc[i].gid);
		c->zc[i].dist = group_distance(c->s, &g, x);
	}
	qsort(c->zc, (size_t) cnt, sizeof(ZCand), zcand_cmp);
	if (cnt > max)
		cnt = max;
	for (int i = 0; i < cnt; i++)
		kc_memstore_group(c->ms, c->zc[i].gid, &out[i], NULL);
	*found = cnt;
	return KC_OK;
}

/*
 * The up to max groups nearest x by distance to their published box (a
 * categorical dimension widened to every leaf under kc_lca(lo, hi)), in
 * kc_weight-scaled coordinates, ties by id: what the PostgreSQL store's
 * GiST index ranks I3M's groups by, where the memory store ranks them by
 * their box.  A brute-force scan over the memory store's groups.
 */
static KcStatus
published_nearest(Counted *c, const double *x, int max, int64_t except, KcGroup *out,
				  int *found)
{
	const KcSchema *s = c->s;
	int64_t		lim = kc_memstore_gid_limit(c->ms);
	double		glo[KC_MAX_DIMS];
	double		ghi[KC_MAX_DIMS];
	double		gsum[KC_MAX_DIMS];
	KcGroup		g = {0, 0, glo, ghi, gsum};
	int			cnt = 0;

	if (max > c->tcap)
	{
		c->tcap = max;
		c->tdist = xrealloc(c->tdist, (size_t) max * sizeof(double));
		c->tgid = xrealloc(c->tgid, (size_t) max * sizeof(int64_t));
	}
	for (int64_t gid = 0; gid < lim; gid++)
	{
		double		dist = 0.0;
		int			i;

		if (gid == except || !kc_memstore_group(c->ms, gid, &g, NULL) || g.n == 0)
			continue;
		for (int d = 0; d < s->ndims; d++)
		{
			double		lo = g.lo[d];
			double		hi = g.hi[d];
			double		t;

			if (s->dims[d].kind == KC_CATEGORICAL)
			{
				const KcHierarchy *h = s->dims[d].h;
				int			node = kc_lca(h, (int) lo, (int) hi);

				lo = h->leaf_lo[node];
				hi = h->leaf_hi[node];
			}
			t = x[d] < lo ? lo - x[d] : (x[d] > hi ? x[d] - hi : 0.0);
			t *= kc_weight(s, d);
			dist += t * t;
		}
		if (cnt == max && !(dist < c->tdist[cnt - 1]))
			continue;
		i = cnt < max ? cnt++ : cnt - 1;
		for (; i > 0 && dist < c->tdist[i - 1]; i--)
		{
			c->tdist[i] = c->tdist[i - 1];
			c->tgid[i] = c->tgid[i - 1];
		}
		c->tdist[i] = dist;
		c->tgid[i] = gid;
	}
	for (int i = 0; i < cnt; i++)
		kc_memstore_group(c->ms, c->tgid[i], &out[i], NULL);
	*found = cnt;
	return KC_OK;
}

static KcStatus
c_nearest(void *arg, const double *x, int max, int64_t except, KcGroup *out, int *found)
{
	Counted    *c = arg;
	double		t0 = now();
	KcStatus	rc = c->zwin > 0 ?
		window_nearest(c, x, max, except, out, found) :
		c->published ?
		published_nearest(c, x, max, except, out, found) :
		c->in->nearest(c->in->arg, x, max, except, out, found);

	c->search_s += now() - t0;
	c->calls[C_NEAREST]++;
	return rc;
}

static KcStatus
c_covering(void *arg, const double *x, int max, int64_t except, KcGroup *out, int *found)
{
	Counted    *c = arg;
	double		t0 = now();
	KcStatus	rc = c->in->covering(c->in->arg, x, max, except, out, found);

	c->search_s += now() - t0;
	c->calls[C_COVERING]++;
	return rc;
}

static KcStatus
c_get(void *arg, int64_t gid, KcGroup *out)
{
	Counted    *c = arg;

	c->calls[C_GET]++;
	return c->in->get(c->in->arg, gid, out);
}

static KcStatus
c_members(void *arg, int64_t gid, const KcRow **rows, int64_t *n)
{
	Counted    *c = arg;

	c->calls[C_MEMBERS]++;
	return c->in->members(c->in->arg, gid, rows, n);
}

static KcStatus
c_create(void *arg, int64_t *gid)
{
	Counted    *c = arg;

	c->calls[C_CREATE]++;
	return c->in->create(c->in->arg, gid);
}

static KcStatus
c_put(void *arg, const KcGroup *g)
{
	Counted    *c = arg;

	KcStatus	rc;

	c->calls[C_PUT]++;
	rc = c->in->put(c->in->arg, g);
	if (rc == KC_OK && c->zwin > 0)
	{
		double		t0 = now();

		zindex_put(c, g);
		c->zmaint_s += now() - t0;
	}
	return rc;
}

static KcStatus
c_drop(void *arg, int64_t gid)
{
	Counted    *c = arg;

	KcStatus	rc;

	c->calls[C_DROP]++;
	rc = c->in->drop(c->in->arg, gid);
	if (rc == KC_OK && c->zwin > 0)
	{
		double		t0 = now();

		zindex_drop(c, gid);
		c->zmaint_s += now() - t0;
	}
	return rc;
}

static KcStatus
c_place(void *arg, const KcRow *row, int64_t gid)
{
	Counted    *c = arg;

	c->calls[C_PLACE]++;
	return c->in->place(c->in->arg, row, gid);
}

static KcStatus
c_count(void *arg, int64_t *ngroups)
{
	Counted    *c = arg;

	c->calls[C_COUNT]++;
	return c->in->count(c->in->arg, ngroups);
}

static KcStatus
c_all(void *arg, const int64_t **gids, int64_t *n)
{
	Counted    *c = arg;

	c->calls[C_ALL]++;
	return c->in->all(c->in->arg, gids, n);
}

/* Zero the counters */
static void
counted_reset(Counted *c)
{
	memset(c->calls, 0, sizeof(c->calls));
	c->search_s = 0.0;
	c->zmaint_s = 0.0;
	c->zfind_s = 0.0;
}

/* All calls counted */
static int64_t
counted_total(const Counted *c)
{
	int64_t		t = 0;

	for (int i = 0; i < C_NCALLS; i++)
		t += c->calls[i];
	return t;
}

/* ----------------------------------------------------------------
 * Runs: a schema and a store over rows
 * ----------------------------------------------------------------
 */

/* The schema of the 8 quasi-identifiers */
static KcSchema
make_schema(int k, KcMethod method)
{
	KcSchema	s;

	memset(&s, 0, sizeof(s));
	s.ndims = ND;
	for (int d = 0; d < ND; d++)
	{
		s.dims[d].kind = qi[d].kind;
		if (qi[d].kind == KC_NUMERIC)
			s.dims[d].range = ranges[d];
		else
			s.dims[d].h = &hiers[d].kh;
	}
	s.k = k;
	s.method = method;
	s.candidates = CANDIDATES;
	check(kc_schema_check(&s), "kc_schema_check");
	return s;
}

/* A store holding rows x[0 .. n - 1] (handle = index), members of no group */
static void
run_open(Run *r, int k, KcMethod method, const double *x, int64_t n)
{
	int64_t		first;

	r->s = make_schema(k, method);
	r->ms = kc_memstore_create(&r->s);
	if (r->ms == NULL)
		die("kc_memstore_create failed");
	check(kc_memstore_add_rows(r->ms, x, n, &first), "kc_memstore_add_rows");
	if (first != 0)
		die("kc_memstore_add_rows: first handle %" PRId64, first);
	r->x = x;
	r->n = n;
	memset(&r->cs, 0, sizeof(r->cs));
	r->cs.in = kc_memstore_store(r->ms);
	r->cs.s = &r->s;
	r->cs.ms = r->ms;
	r->cs.pub.arg = &r->cs;
	r->cs.pub.nearest = c_nearest;
	r->cs.pub.covering = c_covering;
	r->cs.pub.get = c_get;
	r->cs.pub.members = c_members;
	r->cs.pub.create = c_create;
	r->cs.pub.put = c_put;
	r->cs.pub.drop = c_drop;
	r->cs.pub.place = c_place;
	r->cs.pub.count = c_count;
	r->cs.pub.all = c_all;
}

static void
run_close(Run *r)
{
	kc_memstore_destroy(r->ms);
	r->ms = NULL;
	free(r->cs.tdist);
	free(r->cs.tgid);
	r->cs.tdist = NULL;
	r->cs.tgid = NULL;
	zi_free(&r->cs.zi);
	free(r->cs.zkey_of);
	free(r->cs.zin);
	free(r->cs.zc);
	r->cs.zkey_of = NULL;
	r->cs.zin = NULL;
	r->cs.zc = NULL;
	r->cs.zgcap = 0;
	r->cs.zccap = 0;
}

/* The row of handle h */
static KcRow
run_row(const Run *r, int64_t h)
{
	KcRow		row;

	row.handle = h;
	row.x = r->x + h * ND;
	return row;
}

/* Static clustering of rows 0 .. m - 1 into the empty store; seconds */
static double
run_build(Run *r, int64_t m, bool greedy)
{
	KcRow	   *rows = xmalloc((size_t) m * sizeof(KcRow));
	double		t0;
	double		t;

	for (int64_t i = 0; i < m; i++)
		rows[i] = run_row(r, i);
	t0 = now();
	if (greedy)
		check(kc_build_greedy(&r->s, &r->cs.pub, rows, m), "kc_build_greedy");
	else
		check(kc_build(&r->s, &r->cs.pub, rows, m), "kc_build");
	t = now() - t0;
	free(rows);
	return t;
}

/* kc_insert rows from .. to - 1, one at a time; seconds */
static double
run_insert(Run *r, int64_t from, int64_t to)
{
	double		t0 = now();

	for (int64_t h = from; h < to; h++)
	{
		KcRow		row = run_row(r, h);

		check(kc_insert(&r->s, &r->cs.pub, &row), "kc_insert");
	}
	return now() - t0;
}

/* Delete rows from .. to - 1, one at a time (remove + kc_delete); seconds */
static double
run_delete(Run *r, int64_t from, int64_t to)
{
	double		t0 = now();

	for (int64_t h = from; h < to; h++)
	{
		int64_t		gid;

		check(kc_memstore_remove(r->ms, h, &gid), "kc_memstore_remove");
		check(kc_delete(&r->s, &r->cs.pub, gid, r->x + h * ND), "kc_delete");
	}
	return now() - t0;
}

/* kc_optimize; seconds, *broken the groups broken */
static double
run_optimize(Run *r, int64_t *broken)
{
	double		t0 = now();

	check(kc_optimize(&r->s, &r->cs.pub, broken), "kc_optimize");
	return now() - t0;
}

/*
 * Check the store against the rows: every group's summary is its members'
 * count, box and sum; each holds k to 2k - 1 rows unless it is the only
 * one; exactly `live` rows belong to a group.  Aborts on any difference.
 */
static void
run_verify(const Run *r, int64_t live, const char *what)
{
	int64_t		lim = kc_memstore_gid_limit(r->ms);
	int64_t    *cnt = calloc((size_t) (lim + 1), sizeof(int64_t));
	double	   *lo = xmalloc((size_t) (lim + 1) * ND * sizeof(double));
	double	   *hi = xmalloc((size_t) (lim + 1) * ND * sizeof(double));
	double	   *sum = calloc((size_t) (lim + 1) * ND, sizeof(double));
	int64_t		grouped = 0;
	int64_t		ngroups = 0;
	double		glo[KC_MAX_DIMS];
	double		ghi[KC_MAX_DIMS];
	double		gsum[KC_MAX_DIMS];
	KcGroup		g = {0, 0, glo, ghi, gsum};

	if (cnt == NULL || sum == NULL)
		die("out of memory");
	for (int64_t i = 0; i < lim * ND; i++)
	{
		lo[i] = INFINITY;
		hi[i] = -INFINITY;
	}
	for (int64_t h = 0; h < r->n; h++)
	{
		int64_t		gid = kc_memstore_row_group(r->ms, h);
		const double *x = r->x + h * ND;

		if (gid < 0)
			continue;
		if (gid >= lim)
			die("%s: row %" PRId64 " in group %" PRId64 " beyond the ids handed out", what, h, gid);
		cnt[gid]++;
		grouped++;
		for (int d = 0; d < ND; d++)
		{
			lo[gid * ND + d] = fmin(lo[gid * ND + d], x[d]);
			hi[gid * ND + d] = fmax(hi[gid * ND + d], x[d]);
			sum[gid * ND + d] += x[d];
		}
	}
	if (grouped != live)
		die("%s: %" PRId64 " rows in groups, expected %" PRId64, what, grouped, live);
	for (int64_t gid = 0; gid < lim; gid++)
	{
		int64_t		members;

		if (!kc_memstore_group(r->ms, gid, &g, &members))
		{
			if (cnt[gid] != 0)
				die("%s: %" PRId64 " rows in dropped group %" PRId64, what, cnt[gid], gid);
			continue;
		}
		ngroups++;
		if (members != cnt[gid] || g.n != cnt[gid])
			die("%s: group %" PRId64 " counts %" PRId64 " (store %" PRId64 "), has %" PRId64 " rows",
				what, gid, g.n, members, cnt[gid]);
		for (int d = 0; d < ND && cnt[gid] > 0; d++)
		{
			double		s = sum[gid * ND + d];

			if (g.lo[d] != lo[gid * ND + d] || g.hi[d] != hi[gid * ND + d])
				die("%s: group %" PRId64 " box [%g, %g] in dimension %d, its rows span [%g, %g]",
					what, gid, g.lo[d], g.hi[d], d, lo[gid * ND + d], hi[gid * ND + d]);
			if (fabs(g.sum[d] - s) > 1e-6 * (1.0 + fabs(s)))
				die("%s: group %" PRId64 " sum %g in dimension %d, its rows add to %g",
					what, gid, g.sum[d], d, s);
		}
	}
	for (int64_t gid = 0; gid < lim && ngroups > 1; gid++)
		if (kc_memstore_group(r->ms, gid, &g, NULL) &&
			(g.n < r->s.k || g.n > 2 * (int64_t) r->s.k - 1))
			die("%s: group %" PRId64 " holds %" PRId64 " rows (k = %d, %" PRId64 " groups)",
				what, gid, g.n, r->s.k, ngroups);
	free(cnt);
	free(lo);
	free(hi);
	free(sum);
}

/* IL and NCP of the store's groups */
static Quality
run_quality(const Run *r)
{
	Quality		q;
	int64_t		lim = kc_memstore_gid_limit(r->ms);
	double		glo[KC_MAX_DIMS];
	double		ghi[KC_MAX_DIMS];
	double		gsum[KC_MAX_DIMS];
	KcGroup		g = {0, 0, glo, ghi, gsum};

	memset(&q, 0, sizeof(q));
	for (int64_t gid = 0; gid < lim; gid++)
	{
		if (!kc_memstore_group(r->ms, gid, &g, NULL) || g.n == 0)
			continue;
		q.groups++;
		q.rows += g.n;
		q.il += kc_il(&r->s, &g);
		for (int d = 0; d < ND; d++)
		{
			double		ncp;

			if (qi[d].kind == KC_NUMERIC)
				ncp = (g.hi[d] - g.lo[d]) / ranges[d];
			else
			{
				const Hier *h = &hiers[d];
				int			node = kc_lca(&h->kh, (int) g.lo[d], (int) g.hi[d]);

				ncp = h->nleaves > 1 ?
					(double) (h->leaf_hi[node] - h->leaf_lo[node]) / (double) (h->nleaves - 1) : 0.0;
			}
			q.ncp_dim[d] += ncp * (double) g.n;
		}
	}
	for (int d = 0; d < ND; d++)
	{
		q.ncp_dim[d] = q.rows > 0 ? 100.0 * q.ncp_dim[d] / (double) q.rows : 0.0;
		q.ncp += q.ncp_dim[d] / ND;
	}
	return q;
}

/* Copy src's grouping into dst (opened over the same rows, empty) */
static void
run_clone(Run *dst, const Run *src)
{
	int64_t		lim = kc_memstore_gid_limit(src->ms);
	int64_t    *map = xmalloc((size_t) (lim + 1) * sizeof(int64_t));
	const KcStore *st = kc_memstore_store(dst->ms);
	double		glo[KC_MAX_DIMS];
	double		ghi[KC_MAX_DIMS];
	double		gsum[KC_MAX_DIMS];
	KcGroup		g = {0, 0, glo, ghi, gsum};

	for (int64_t gid = 0; gid < lim; gid++)
	{
		map[gid] = -1;
		if (kc_memstore_group(src->ms, gid, &g, NULL))
			check(st->create(st->arg, &map[gid]), "clone: create");
	}
	for (int64_t h = 0; h < src->n; h++)
	{
		int64_t		gid = kc_memstore_row_group(src->ms, h);
		KcRow		row = run_row(dst, h);

		if (gid >= 0)
			check(st->place(st->arg, &row, map[gid]), "clone: place");
	}
	for (int64_t gid = 0; gid < lim; gid++)
		if (map[gid] >= 0)
		{
			kc_memstore_group(src->ms, gid, &g, NULL);
			g.gid = map[gid];
			check(st->put(st->arg, &g), "clone: put");
		}
	free(map);
}

/* ----------------------------------------------------------------
 * Experiment i3m_vs_static
 * ----------------------------------------------------------------
 */

static void
print_i3m_row(const char *baseline, int64_t n, int k, const char *op, int pct,
			  int64_t changes, const Quality *inc, const Quality *stat, double inc_s,
			  double search_s, double static_s, const Quality *opt, int64_t broken,
			  double opt_s)
{
	printf("%s,%" PRId64 ",%d,%s,%d,%" PRId64 ",%.4f,%.4f,%.4f,%.3f,%.3f,%.6f,%.6f,%.6f,%.2f,%.2f,%.4f,%.4f,%" PRId64 ",%.6f\n",
		   baseline, n, k, op, pct, changes, inc->il, stat->il, inc->il / stat->il,
		   inc->ncp, stat->ncp, inc_s, search_s, static_s,
		   changes > 0 ? 1e6 * inc_s / (double) changes : 0.0,
		   changes > 0 ? 1e6 * (inc_s - search_s) / (double) changes : 0.0,
		   opt->il, opt->il / stat->il, broken, opt_s);
	fflush(stdout);
}

/* One baseline of the I3M experiment on rows x[0 .. n - 1] */
static void
i3m_baseline(const Data *rows, int64_t n, bool greedy)
{
	const char *name = greedy ? "greedy" : "median";

	for (int ki = 0; ki < 2; ki++)
	{
		int			k = ki == 0 ? 3 : 5;
		Run			full;
		double		full_s;
		Quality		q_full;

		/* the static clustering of every row, shared by the percentages */
		run_open(&full, k, KC_I3M, rows->x, n);
		full_s = run_build(&full, n, greedy);
		run_verify(&full, n, "static build of all rows");
		q_full = run_quality(&full);
		note("i3m_vs_static %s k=%d: static build of %" PRId64 " rows %.3f s, IL %.1f",
			 name, k, n, full_s, q_full.il);

		for (int pi = 0; pi < NPCTS; pi++)
		{
			int			p = pcts[pi];
			int64_t		c = (n * p + 50) / 100;
			int64_t		m = n - c;
			Run			a;
			Run			b;
			double		part_s;
			double		inc_s;
			double		dec_s;
			double		inc_search;
			double		dec_search;
			double		opt_s;
			int64_t		broken;
			Quality		q_part;
			Quality		q_inc;
			Quality		q_dec;
			Quality		q_opt;

			/* insert: static of the first m, then the last c one by one */
			run_open(&a, k, KC_I3M, rows->x, n);
			part_s = run_build(&a, m, greedy);
			run_verify(&a, m, "static build of the first rows");
			q_part = run_quality(&a);
			counted_reset(&a.cs);
			inc_s = run_insert(&a, m, n);
			inc_search = a.cs.search_s;
			run_verify(&a, n, "after the inserts");
			q_inc = run_quality(&a);
			opt_s = run_optimize(&a, &broken);
			run_verify(&a, n, "after kc_optimize of the inserts");
			q_opt = run_quality(&a);
			print_i3m_row(name, n, k, "insert", p, c, &q_inc, &q_full, inc_s, inc_search, full_s,
						  &q_opt, broken, opt_s);
			run_close(&a);

			/* delete: static of all, then the last c one by one */
			run_open(&b, k, KC_I3M, rows->x, n);
			if (greedy)
				run_clone(&b, &full);
			else
				(void) run_build(&b, n, false);
			run_verify(&b, n, "clone of the static build");
			counted_reset(&b.cs);
			dec_s = run_delete(&b, m, n);
			dec_search = b.cs.search_s;
			run_verify(&b, m, "after the deletes");
			q_dec = run_quality(&b);
			opt_s = run_optimize(&b, &broken);
			run_verify(&b, m, "after kc_optimize of the deletes");
			q_opt = run_quality(&b);
			print_i3m_row(name, n, k, "delete", p, c, &q_dec, &q_part, dec_s, dec_search, part_s,
						  &q_opt, broken, opt_s);
			run_close(&b);
			note("  p=%d%%: insert %.3f s (IL x%.3f), delete %.3f s (IL x%.3f)",
				 p, inc_s, q_inc.il / q_full.il, dec_s, q_dec.il / q_part.il);
		}
		run_close(&full);
	}
}

static void
exp_i3m_vs_static(const Data *shuf)
{
	printf("baseline,n,k,op,pct,changes,il_incremental,il_static,il_ratio,"
		   "ncp_incremental_pct,ncp_static_pct,incremental_s,search_s,static_s,us_per_change,"
		   "core_us_per_change,"
		   "il_optimized,il_ratio_optimized,groups_broken,optimize_s\n");
	i3m_baseline(shuf, shuf->n, false);
	i3m_baseline(shuf, GREEDY_N, true);
}

/* ----------------------------------------------------------------
 * Experiment sbtree_vs_i3m
 * ----------------------------------------------------------------
 */

static const char *
method_name(KcMethod m)
{
	return m == KC_I3M ? "i3m" : "sbtree";
}

static void
exp_sbtree_vs_i3m(const Data *shuf)
{
	static const int64_t sizes[] = {5000, 10000, 20000, 30000, 40000, 50000};
	Data		pool = synthetic(shuf, shuf->n, SB_MAX_N + SB_INSERTS);

	printf("method,n,k,synthetic_rows,build_s,il_build,inserts,insert_us,search_us,"
		   "core_us,store_calls_per_insert,il_after,il_static_after,il_ratio,ncp_after_pct\n");
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
	{
		int64_t		n = sizes[si];
		int64_t		total = n + SB_INSERTS;
		int64_t		synth = total > shuf->n ? total - shuf->n : 0;
		Run			st;
		Quality		q_static;

		run_open(&st, SB_K, KC_I3M, pool.x, total);
		(void) run_build(&st, total, false);
		run_verify(&st, total, "static build after");
		q_static = run_quality(&st);
		run_close(&st);
		for (int mi = 0; mi < 2; mi++)
		{
			KcMethod	method = mi == 0 ? KC_I3M : KC_SBTREE;
			Run			r;
			double		build_s;
			double		ins_s;
			Quality		q_build;
			Quality		q_after;

			run_open(&r, SB_K, method, pool.x, total);
			build_s = run_build(&r, n, false);
			run_verify(&r, n, "static build");
			q_build = run_quality(&r);
			counted_reset(&r.cs);
			ins_s = run_insert(&r, n, total);
			run_verify(&r, total, "after the inserts");
			q_after = run_quality(&r);
			printf("%s,%" PRId64 ",%d,%" PRId64 ",%.6f,%.4f,%d,%.3f,%.3f,%.3f,%.2f,%.4f,%.4f,%.4f,%.3f\n",
				   method_name(method), n, SB_K, synth, build_s, q_build.il, SB_INSERTS,
				   1e6 * ins_s / SB_INSERTS, 1e6 * r.cs.search_s / SB_INSERTS,
				   1e6 * (ins_s - r.cs.search_s) / SB_INSERTS,
				   (double) counted_total(&r.cs) / SB_INSERTS,
				   q_after.il, q_static.il, q_after.il / q_static.il, q_after.ncp);
			fflush(stdout);
			note("sbtree_vs_i3m n=%" PRId64 " %s: %.1f us/insert (%.1f in the store's search)",
				 n, method_name(method), 1e6 * ins_s / SB_INSERTS,
				 1e6 * r.cs.search_s / SB_INSERTS);
			run_close(&r);
		}
	}
	free(pool.x);
}

/* ----------------------------------------------------------------
 * Experiment scaling
 * ----------------------------------------------------------------
 */

static void
exp_scaling(const Data *shuf, int64_t max_n)
{
	printf("method,n,k,build_s,groups,ncp_pct,ops,insert_us,insert_search_us,insert_core_us,"
		   "insert_store_calls,delete_us,delete_search_us,delete_core_us,delete_store_calls\n");
	for (int64_t n = 10000; n <= max_n; n *= 10)
	{
		int64_t		ops = n >= 1000000 ? 100 : 500;
		Data		d = synthetic(shuf, 0, n + ops);

		for (int mi = 0; mi < 2; mi++)
		{
			KcMethod	method = mi == 0 ? KC_I3M : KC_SBTREE;
			Run			r;
			double		build_s;
			double		ins_s;
			double		ins_search;
			double		del_s;
			int64_t		ins_calls;
			Quality		q;

			run_open(&r, SCALE_K, method, d.x, n + ops);
			build_s = run_build(&r, n, false);
			run_verify(&r, n, "static build");
			q = run_quality(&r);
			counted_reset(&r.cs);
			ins_s = run_insert(&r, n, n + ops);
			ins_search = r.cs.search_s;
			ins_calls = counted_total(&r.cs);
			run_verify(&r, n + ops, "after the inserts");
			/* delete the rows just inserted, in the same order */
			counted_reset(&r.cs);
			del_s = run_delete(&r, n, n + ops);
			run_verify(&r, n, "after the deletes");
			printf("%s,%" PRId64 ",%d,%.4f,%" PRId64 ",%.3f,%" PRId64 ",%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f\n",
				   method_name(method), n, SCALE_K, build_s, q.groups, q.ncp, ops,
				   1e6 * ins_s / ops, 1e6 * ins_search / ops, 1e6 * (ins_s - ins_search) / ops,
				   (double) ins_calls / ops,
				   1e6 * del_s / ops, 1e6 * r.cs.search_s / ops,
				   1e6 * (del_s - r.cs.search_s) / ops,
				   (double) counted_total(&r.cs) / ops);
			fflush(stdout);
			note("scaling n=%" PRId64 " %s: build %.3f s, insert %.1f us (core %.1f us)",
				 n, method_name(method), build_s, 1e6 * ins_s / ops,
				 1e6 * (ins_s - ins_search) / ops);
			run_close(&r);
		}
		free(d.x);
	}
}

/* ----------------------------------------------------------------
 * Experiment ncp
 * ----------------------------------------------------------------
 */

static void
print_ncp_row(const char *method, int64_t n, double seconds, const Quality *q)
{
	printf("%s,%d,%" PRId64 ",%" PRId64 ",%.6f,%.4f,%.3f", method, NCP_K, n, q->groups,
		   seconds, q->il, q->ncp);
	for (int d = 0; d < ND; d++)
		printf(",%.3f", q->ncp_dim[d]);
	printf("\n");
	fflush(stdout);
}

static void
exp_ncp(const Data *adult, bool ncp_greedy)
{
	int64_t		n = adult->n;

	printf("method,k,n,groups,seconds,il,ncp_pct");
	for (int d = 0; d < ND; d++)
		printf(",ncp_%s_pct", qi[d].name);
	printf("\n");
	{
		Run			r;
		double		s;
		double		opt_s;
		int64_t		broken;
		Quality		q;

		run_open(&r, NCP_K, KC_I3M, adult->x, n);
		s = run_build(&r, n, false);
		run_verify(&r, n, "static build");
		q = run_quality(&r);
		print_ncp_row("static_median", n, s, &q);
		opt_s = run_optimize(&r, &broken);
		run_verify(&r, n, "static build optimized");
		q = run_quality(&r);
		print_ncp_row("static_median+optimize", n, s + opt_s, &q);
		run_close(&r);
	}
	if (ncp_greedy)
	{
		Run			r;
		double		s;
		Quality		q;

		run_open(&r, NCP_K, KC_I3M, adult->x, n);
		s = run_build(&r, n, true);
		run_verify(&r, n, "greedy build");
		q = run_quality(&r);
		print_ncp_row("static_greedy", n, s, &q);
		note("ncp: greedy build of %" PRId64 " rows %.3f s, NCP %.2f %%", n, s, q.ncp);
		run_close(&r);
	}
	for (int mi = 0; mi < 3; mi++)
	{
		KcMethod	method = mi == 2 ? KC_SBTREE : KC_I3M;
		Run			r;
		double		s;
		char		name[64];
		Quality		q;

		run_open(&r, NCP_K, method, adult->x, n);
		r.cs.published = mi == 1;
		s = run_insert(&r, 0, n);
		run_verify(&r, n, "insertion replay");
		q = run_quality(&r);
		snprintf(name, sizeof(name), "%s_replay%s", method_name(method),
				 r.cs.published ? "_published_search" : "");
		print_ncp_row(name, n, s, &q);
		note("ncp: %s replay of %" PRId64 " rows %.3f s, NCP %.2f %%", method_name(method),
			 n, s, q.ncp);
		if (mi == 0)
		{
			int64_t		broken;
			double		opt_s = run_optimize(&r, &broken);

			run_verify(&r, n, "insertion replay optimized");
			q = run_quality(&r);
			snprintf(name, sizeof(name), "%s_replay+optimize", method_name(method));
			print_ncp_row(name, n, s + opt_s, &q);
		}
		run_close(&r);
	}
	printf("mondrian_strict_published,%d,%" PRId64 ",,,,%.2f%s\n", NCP_K, n, MONDRIAN_STRICT_PCT,
		   ",,,,,,,,");
	printf("mondrian_hierarchies_published,%d,%" PRId64 ",,,,%.2f%s\n", NCP_K, n, MONDRIAN_HIER_PCT,
		   ",,,,,,,,");
	fflush(stdout);
}

/* ----------------------------------------------------------------
 * Experiments window_*: nearest from a curve-key window
 * ----------------------------------------------------------------
 */

/* A candidate mode: exact (w = 0) or a window of w on each side */
typedef struct ZMode
{
	const char *name;
	int			w;
	KcCurve		curve;
	bool		origin;
} ZMode;

static const ZMode zmodes[] =
{
	{"exact", 0, KC_CURVE_MORTON, false},
	{"morton", 8, KC_CURVE_MORTON, true},
	{"morton", 16, KC_CURVE_MORTON, true},
	{"morton", 32, KC_CURVE_MORTON, true},
	{"morton", 64, KC_CURVE_MORTON, true},
	{"hilbert", 8, KC_CURVE_HILBERT, true},
	{"hilbert", 16, KC_CURVE_HILBERT, true},
	{"hilbert", 32, KC_CURVE_HILBERT, true},
	{"hilbert", 64, KC_CURVE_HILBERT, true},
	/* numeric coordinates taken from 0, as kc_zkey does: clamped above */
	{"morton_no_origin", 16, KC_CURVE_MORTON, false},
	{"hilbert_no_origin", 16, KC_CURVE_HILBERT, false},
};
#define NZMODES ((int) (sizeof(zmodes) / sizeof(zmodes[0])))

/* Open a run in mode z */
static void
zrun_open(Run *r, int k, KcMethod method, const double *x, int64_t n, const ZMode *z)
{
	run_open(r, k, method, x, n);
	r->cs.zwin = z->w;
	r->cs.curve = z->curve;
	r->cs.zorigin = z->origin;
}

/* In window mode: the index holds exactly the non-empty groups, by key */
static void
zindex_verify(const Run *r, const char *what)
{
	const Counted *c = &r->cs;
	int64_t		lim = kc_memstore_gid_limit(r->ms);
	int64_t		live = 0;
	int64_t		seen = 0;
	double		glo[KC_MAX_DIMS];
	double		ghi[KC_MAX_DIMS];
	double		gsum[KC_MAX_DIMS];
	KcGroup		g = {0, 0, glo, ghi, gsum};

	if (c->zwin == 0)
		return;
	for (int64_t gid = 0; gid < lim; gid++)
	{
		bool		in = gid < c->zgcap && c->zin[gid];

		if (!kc_memstore_group(r->ms, gid, &g, NULL) || g.n == 0)
		{
			if (in)
				die("%s: window index holds group %" PRId64 ", empty or dropped", what, gid);
			continue;
		}
		live++;
		if (!in || c->zkey_of[gid] != group_key(c, &g))
			die("%s: window index misses group %" PRId64 " or keeps a stale key", what, gid);
	}
	for (int64_t b = 0; b < c->zi.nb; b++)
		for (int i = 0; i < c->zi.b[b]->n; i++)
		{
			const ZEnt *e = &c->zi.b[b]->e[i];
			const ZEnt *prev = i > 0 ? &c->zi.b[b]->e[i - 1] :
				(b > 0 ? &c->zi.b[b - 1]->e[c->zi.b[b - 1]->n - 1] : NULL);

			if (prev != NULL && zent_cmp(prev, e) >= 0)
				die("%s: window index out of order", what);
			seen++;
		}
	if (seen != live || c->zi.count != live)
		die("%s: window index holds %" PRId64 " entries, %" PRId64 " groups live", what, seen, live);
}

/* (a) every Adult row in file order by kc_insert from an empty store */
static void
exp_window_replay(const Data *adult)
{
	int64_t		n = adult->n;

	printf("method,k,mode,w,n,groups,il,ncp_pct,il_vs_exact,ncp_vs_exact,seconds,"
		   "search_us,index_us,core_us\n");
	for (int mi = 0; mi < 2; mi++)
		for (int ki = 0; ki < 2; ki++)
		{
			KcMethod	method = mi == 0 ? KC_I3M : KC_SBTREE;
			int			k = ki == 0 ? 5 : 10;
			Quality		exact = {0};

			for (int zi = 0; zi < NZMODES; zi++)
			{
				const ZMode *z = &zmodes[zi];
				Run			r;
				double		sec;
				Quality		q;

				zrun_open(&r, k, method, adult->x, n, z);
				sec = run_insert(&r, 0, n);
				run_verify(&r, n, "window replay");
				zindex_verify(&r, "window replay");
				q = run_quality(&r);
				if (zi == 0)
					exact = q;
				printf("%s,%d,%s,%d,%" PRId64 ",%" PRId64 ",%.4f,%.3f,%.4f,%.4f,%.6f,%.3f,%.3f,%.3f\n",
					   method_name(method), k, z->name, z->w, n, q.groups, q.il, q.ncp,
					   q.il / exact.il, q.ncp / exact.ncp, sec,
					   1e6 * r.cs.search_s / (double) n, 1e6 * r.cs.zmaint_s / (double) n,
					   1e6 * (sec - r.cs.search_s - r.cs.zmaint_s) / (double) n);
				fflush(stdout);
				note("window_replay %s k=%d %s W=%d: IL %.1f (x%.4f), NCP %.3f %%",
					 method_name(method), k, z->name, z->w, q.il, q.il / exact.il, q.ncp);
				run_close(&r);
			}
		}
}

/* (b) kc_build of the first 90 % of the shuffled rows, the last 10 % inserted */
static void
exp_window_arrivals(const Data *shuf)
{
	int64_t		n = shuf->n;
	int64_t		c = (n * 10 + 50) / 100;
	int64_t		m = n - c;

	printf("method,k,mode,w,n,changes,il_incremental,il_static,il_ratio,il_vs_exact,"
		   "ncp_incremental_pct,ncp_static_pct,us_per_change,search_us,index_us\n");
	for (int ki = 0; ki < 2; ki++)
	{
		int			k = ki == 0 ? 3 : 5;
		Run			full;
		Quality		q_full;

		run_open(&full, k, KC_I3M, shuf->x, n);
		(void) run_build(&full, n, false);
		run_verify(&full, n, "static build of all rows");
		q_full = run_quality(&full);
		run_close(&full);
		for (int mi = 0; mi < 2; mi++)
		{
			KcMethod	method = mi == 0 ? KC_I3M : KC_SBTREE;
			double		il_exact = 0.0;

			for (int zi = 0; zi < NZMODES; zi++)
			{
				const ZMode *z = &zmodes[zi];
				Run			r;
				double		sec;
				Quality		q;

				zrun_open(&r, k, method, shuf->x, n, z);
				(void) run_build(&r, m, false);
				run_verify(&r, m, "static build of the first rows");
				zindex_verify(&r, "static build of the first rows");
				counted_reset(&r.cs);
				sec = run_insert(&r, m, n);
				run_verify(&r, n, "after the arrivals");
				zindex_verify(&r, "after the arrivals");
				q = run_quality(&r);
				if (zi == 0)
					il_exact = q.il;
				printf("%s,%d,%s,%d,%" PRId64 ",%" PRId64 ",%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.2f,%.2f,%.2f\n",
					   method_name(method), k, z->name, z->w, n, c, q.il, q_full.il,
					   q.il / q_full.il, q.il / il_exact, q.ncp, q_full.ncp,
					   1e6 * sec / (double) c, 1e6 * r.cs.search_s / (double) c,
					   1e6 * r.cs.zmaint_s / (double) c);
				fflush(stdout);
				note("window_arrivals %s k=%d %s W=%d: IL x%.4f of static (x%.4f of exact)",
					 method_name(method), k, z->name, z->w, q.il / q_full.il, q.il / il_exact);
				run_close(&r);
			}
		}
	}
}

/* (c) per-insert time with the window index, 10^4 .. max_n synthetic rows */
static void
exp_window_scaling(const Data *shuf, int64_t max_n)
{
	printf("method,mode,w,n,k,build_s,build_index_s,groups,ops,insert_us,search_us,find_us,"
		   "rank_us,index_us,core_us,core_plus_search_us,ncp_pct\n");
	for (int64_t n = 10000; n <= max_n; n *= 10)
	{
		int64_t		ops = n / 10 < 10000 ? n / 10 : 10000;
		Data		d = synthetic(shuf, 0, n + ops);

		for (int mi = 0; mi < 2; mi++)
		{
			KcMethod	method = mi == 0 ? KC_I3M : KC_SBTREE;

			for (int zi = 1; zi < NZMODES; zi++)
			{
				const ZMode *z = &zmodes[zi];
				Run			r;
				double		build_s;
				double		build_ix;
				double		sec;
				Quality		q;

				if (!z->origin)
					continue;
				zrun_open(&r, SCALE_K, method, d.x, n + ops, z);
				build_s = run_build(&r, n, false);
				build_ix = r.cs.zmaint_s;
				run_verify(&r, n, "static build");
				zindex_verify(&r, "static build");
				q = run_quality(&r);
				counted_reset(&r.cs);
				sec = run_insert(&r, n, n + ops);
				run_verify(&r, n + ops, "after the inserts");
				zindex_verify(&r, "after the inserts");
				printf("%s,%s,%d,%" PRId64 ",%d,%.4f,%.4f,%" PRId64 ",%" PRId64 ",%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
					   method_name(method), z->name, z->w, n, SCALE_K, build_s, build_ix,
					   q.groups, ops, 1e6 * sec / (double) ops,
					   1e6 * r.cs.search_s / (double) ops, 1e6 * r.cs.zfind_s / (double) ops,
					   1e6 * (r.cs.search_s - r.cs.zfind_s) / (double) ops,
					   1e6 * r.cs.zmaint_s / (double) ops,
					   1e6 * (sec - r.cs.search_s - r.cs.zmaint_s) / (double) ops,
					   1e6 * (sec - r.cs.zmaint_s) / (double) ops, q.ncp);
				fflush(stdout);
				note("window_scaling n=%" PRId64 " %s %s W=%d: insert %.2f us (search %.2f, index %.2f)",
					 n, method_name(method), z->name, z->w, 1e6 * sec / (double) ops,
					 1e6 * r.cs.search_s / (double) ops, 1e6 * r.cs.zmaint_s / (double) ops);
				run_close(&r);
			}
		}
		free(d.x);
	}
}

/* ----------------------------------------------------------------
 * Main
 * ----------------------------------------------------------------
 */

static int
usage(void)
{
	fprintf(stderr,
			"usage: kc_bench i3m_vs_static|sbtree_vs_i3m|scaling|ncp|window_replay|window_arrivals|\n"
			"                window_scaling|all [ADULT_FILE [HIERARCHY_DIR]]\n"
			"environment: KC_SCALE_MAX_N (default 1000000) caps the scaling sizes;\n"
			"             KC_NCP_GREEDY=0 skips the greedy build of the 30,162 rows in ncp\n");
	return 2;
}

int
main(int argc, char **argv)
{
	const char *exp;
	const char *adult_path = "data/adult.data";
	const char *hier_dir = "test/bench/hierarchies";
	const char *env;
	int64_t		scale_max = 1000000;
	bool		ncp_greedy = true;
	bool		all;
	Data		adult;
	Data		shuf;
	double		t0 = now();

	if (argc < 2 || argc > 4)
		return usage();
	exp = argv[1];
	all = strcmp(exp, "all") == 0;
	if (!all && strcmp(exp, "i3m_vs_static") != 0 && strcmp(exp, "sbtree_vs_i3m") != 0 &&
		strcmp(exp, "scaling") != 0 && strcmp(exp, "ncp") != 0 &&
		strcmp(exp, "window_replay") != 0 && strcmp(exp, "window_arrivals") != 0 &&
		strcmp(exp, "window_scaling") != 0)
		return usage();
	if (argc >= 3)
		adult_path = argv[2];
	if (argc >= 4)
		hier_dir = argv[3];
	if ((env = getenv("KC_SCALE_MAX_N")) != NULL && *env != '\0')
	{
		char	   *endp;

		errno = 0;
		scale_max = strtoll(env, &endp, 10);
		if (errno != 0 || *endp != '\0' || scale_max < 10000)
			die("KC_SCALE_MAX_N must be an integer of at least 10000");
	}

	if ((env = getenv("KC_NCP_GREEDY")) != NULL && strcmp(env, "0") == 0)
		ncp_greedy = false;

	for (int d = 0; d < ND; d++)
		if (qi[d].kind == KC_CATEGORICAL)
		{
			load_hierarchy(hier_dir, qi[d].name, &hiers[d]);
			note("hierarchy %s: %d nodes, %d leaves, height %d", qi[d].name,
				 hiers[d].nnodes, hiers[d].nleaves, hiers[d].height[0]);
		}
	adult = load_adult(adult_path);
	shuf = shuffled(&adult);

	if (all || strcmp(exp, "i3m_vs_static") == 0)
		exp_i3m_vs_static(&shuf);
	if (all || strcmp(exp, "sbtree_vs_i3m") == 0)
		exp_sbtree_vs_i3m(&shuf);
	if (all || strcmp(exp, "scaling") == 0)
		exp_scaling(&shuf, scale_max);
	if (all || strcmp(exp, "ncp") == 0)
		exp_ncp(&adult, ncp_greedy);
	if (all || strcmp(exp, "window_replay") == 0)
		exp_window_replay(&adult);
	if (all || strcmp(exp, "window_arrivals") == 0)
		exp_window_arrivals(&shuf);
	if (all || strcmp(exp, "window_scaling") == 0)
		exp_window_scaling(&shuf, scale_max);
	note("kc_bench %s: %.1f s", exp, now() - t0);
	free(shuf.x);
	free(adult.x);
	return 0;
}

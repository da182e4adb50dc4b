/*
 * fd_bench.c
 *		Benchmark of the full-domain module (src/fulldomain): PrivacyFrost2
 *		and the exact search on the UCI Adult data and on a synthetic table
 *		shaped like Census-Income.
 *
 *	fd_bench paper ADULT HIERDIR	Kiyomoto and Miyake's Table 2 settings
 *	fd_bench presample ADULT HIERDIR	their Table 1 (pre-sampling alone)
 *	fd_bench arx ADULT HIERDIR		ARX's benchmark set-up (8 QIs, k = 5)
 *	fd_bench census N				their Table 3 settings, N synthetic rows
 *	fd_bench census-files N DIR		the same synthetic rows and hierarchies as
 *									files for keanon.anonymize inside
 *									PostgreSQL (test/bench/anonymize.sh)
 *
 * Each prints CSV on stdout.  Times are wall-clock milliseconds of
 * fd_prepare plus fd_search on the encoded table (reading and encoding the
 * file are not timed), the median of three runs, each on a fresh context.
 * Rows of Adult with '?' in a column used are dropped.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ke_alloc.h"
#include "fd_anon.h"

#define MAX_NODES	512
#define MAX_ROWS	250000
#define NCOLS		15

/* A hierarchy built from (value, parent) lines, and its level maps */
typedef struct Hier
{
	int			nnodes;
	char	   *name[MAX_NODES];
	int			parent[MAX_NODES];
	bool		has_child[MAX_NODES];
	int			nleaves;
	int			leaf_node[MAX_NODES];
	uint32_t   *map[FD_MAX_LEVELS];
	uint32_t	ncodes[FD_MAX_LEVELS];
	FdHierarchy fh;
} Hier;

/* A column: its hierarchy (QI) or its sorted distinct values (sensitive) */
typedef struct Column
{
	int			col;			/* in the Adult file */
	Hier	   *h;
	uint32_t   *codes;			/* [nrows] */
} Column;

static char *cells[MAX_ROWS][NCOLS];
static int	nrows_read;

/* Stop with a message */
static void
die(const char *msg, const char *arg)
{
	fprintf(stderr, "fd_bench: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	exit(1);
}

/* Milliseconds of a monotonic clock */
static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Strip blanks and line ends from both ends of s, in place */
static char *
trim(char *s)
{
	char	   *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\r' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

/* Read the Adult file, keeping rows with no '?' in the columns used */
static void
read_adult(const char *path, const int *used, int nused)
{
	FILE	   *f = fopen(path, "r");
	char		line[4096];

	if (f == NULL)
		die("cannot open", path);
	while (fgets(line, sizeof(line), f) && nrows_read < MAX_ROWS)
	{
		char	   *field[NCOLS];
		char	   *p = line;
		int			n = 0;
		int			i;
		bool		ok = true;

		if (strncmp(line, "age", 3) == 0)
			continue;
		while (n < NCOLS && p != NULL)
		{
			char	   *c = strchr(p, ',');

			if (c)
				*c = '\0';
			field[n++] = trim(p);
			p = c ? c + 1 : NULL;
		}
		if (n < NCOLS)
			continue;
		for (i = 0; i < nused; i++)
			if (strcmp(field[used[i]], "?") == 0)
				ok = false;
		if (!ok)
			continue;
		for (i = 0; i < NCOLS; i++)
			cells[nrows_read][i] = strdup(field[i]);
		nrows_read++;
	}
	fclose(f);
}

/* Node of a value in a hierarchy, or -1 */
static int
hier_find(const Hier *h, const char *v)
{
	int			i;

	for (i = 0; i < h->nnodes; i++)
		if (strcmp(h->name[i], v) == 0)
			return i;
	return -1;
}

/* Level maps: level l is the ancestor l steps up, the root when shorter */
static void
hier_levels(Hier *h)
{
	int			depth_max = 0;
	int			code[MAX_NODES];
	int			x;
	int			l;

	for (x = 0; x < h->nleaves; x++)
	{
		int			d = 0;
		int			n = h->leaf_node[x];

		while (h->parent[n] >= 0)
		{
			n = h->parent[n];
			d++;
		}
		if (d > depth_max)
			depth_max = d;
	}
	for (l = 0; l <= depth_max; l++)
	{
		h->map[l] = malloc(sizeof(uint32_t) * h->nleaves);
		h->ncodes[l] = 0;
		memset(code, 0xff, sizeof(code));
		for (x = 0; x < h->nleaves; x++)
		{
			int			n = h->leaf_node[x];
			int			s;

			for (s = 0; s < l && h->parent[n] >= 0; s++)
				n = h->parent[n];
			if (code[n] < 0)
				code[n] = h->ncodes[l]++;
			h->map[l][x] = code[n];
		}
	}
	h->fh.nleaves = h->nleaves;
	h->fh.nlevels = depth_max + 1;
	h->fh.map = (const uint32_t *const *) h->map;
	h->fh.ncodes = h->ncodes;
}

/* Load a value,parent CSV file */
static Hier *
hier_load(const char *dir, const char *name)
{
	Hier	   *h = calloc(1, sizeof(Hier));
	char		path[1024];
	char		line[512];
	char	   *parents[MAX_NODES];
	FILE	   *f;
	int			i;

	snprintf(path, sizeof(path), "%s/%s.csv", dir, name);
	if ((f = fopen(path, "r")) == NULL)
		die("cannot open", path);
	while (fgets(line, sizeof(line), f))
	{
		char	   *c = strrchr(line, ',');

		if (c == NULL || strncmp(line, "value,parent", 12) == 0)
			continue;
		*c = '\0';
		if (h->nnodes == MAX_NODES)
			die("hierarchy too large", path);
		h->name[h->nnodes] = strdup(trim(line));
		parents[h->nnodes++] = strdup(trim(c + 1));
	}
	fclose(f);
	for (i = 0; i < h->nnodes; i++)
	{
		h->parent[i] = parents[i][0] ? hier_find(h, parents[i]) : -1;
		if (parents[i][0] && h->parent[i] < 0)
			die("unknown parent", parents[i]);
		if (h->parent[i] >= 0)
			h->has_child[h->parent[i]] = true;
		free(parents[i]);
	}
	for (i = 0; i < h->nnodes; i++)
		if (!h->has_child[i])
			h->leaf_node[h->nleaves++] = i;
	hier_levels(h);
	return h;
}

/* Leaf codes of an Adult column under a hierarchy */
static uint32_t *
encode_qi(const Hier *h, int col)
{
	uint32_t   *codes = malloc(sizeof(uint32_t) * nrows_read);
	int			r;

	for (r = 0; r < nrows_read; r++)
	{
		int			x;

		for (x = 0; x < h->nleaves; x++)
			if (strcmp(h->name[h->leaf_node[x]], cells[r][col]) == 0)
				break;
		if (x == h->nleaves)
			die("value not a leaf of its hierarchy", cells[r][col]);
		codes[r] = x;
	}
	return codes;
}

/* Compare strings, numerically when both are numbers */
static int
cmp_values(const void *a, const void *b)
{
	const char *x = *(const char *const *) a;
	const char *y = *(const char *const *) b;
	char	   *ex;
	char	   *ey;
	double		dx = strtod(x, &ex);
	double		dy = strtod(y, &ey);

	if (*ex == '\0' && *ey == '\0')
		return dx < dy ? -1 : (dx > dy ? 1 : 0);
	return strcmp(x, y);
}

/* Sensitive codes of an Adult column: distinct values in order */
static uint32_t *
encode_sens(int col, int *nsens, double **values)
{
	const char **v = malloc(sizeof(char *) * nrows_read);
	uint32_t   *codes = malloc(sizeof(uint32_t) * nrows_read);
	int			n = 0;
	int			r;

	for (r = 0; r < nrows_read; r++)
		v[r] = cells[r][col];
	qsort(v, nrows_read, sizeof(char *), cmp_values);
	for (r = 0; r < nrows_read; r++)
		if (n == 0 || strcmp(v[n - 1], v[r]) != 0)
			v[n++] = v[r];
	*values = malloc(sizeof(double) * n);
	for (r = 0; r < n; r++)
		(*values)[r] = strtod(v[r], NULL);
	for (r = 0; r < nrows_read; r++)
	{
		const char *key = cells[r][col];
		const char **hit = bsearch(&key, v, n, sizeof(char *), cmp_values);

		codes[r] = (uint32_t) (hit - v);
	}
	free(v);
	*nsens = n;
	return codes;
}


/* ----------------------------------------------------------------
 * Runs
 * ----------------------------------------------------------------
 */
typedef struct Setting
{
	int			k;
	int			l;				/* distinct l; 0 off */
	double		c;				/* recursive (c, rl) when rl > 0 */
	int			rl;
	double		t;				/* FD_T_OFF: off */
	FdScoring	scoring;
	double		paper_ms;		/* 0: none */
} Setting;

static const char *const score_name[3] = {"basic", "eta", "log"};

/* Sort doubles */
static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* Median time of three prepare-and-search runs; the last run's result */
static FdResult *
timed_search(const FdTable *t, const Setting *st, FdMethod method, double *ms)
{
	FdResult   *r = NULL;
	double		times[3];
	int			i;

	for (i = 0; i < 3; i++)
	{
		FdParams	p;
		FdSearchOpts o;
		FdContext  *ctx;
		FdError		err;
		double		t0;

		fd_params_init(&p);
		p.k = st->k;
		p.l_distinct = st->l;
		p.rec_c = st->c;
		p.rec_l = st->rl;
		p.t = st->t;
		p.scoring = st->scoring;
		fd_search_opts_init(&o);
		o.method = method;
		o.partial = method == FD_METHOD_FROST;
		fd_result_free(r);
		r = NULL;
		t0 = now_ms();
		if (fd_prepare(t, &p, &ctx, &err) != FD_OK || fd_search(ctx, &o, &r, &err) != FD_OK)
		{
			fprintf(stderr, "fd_bench: %s (%s)\n", err.message, fd_status_name(err.status));
			fd_free(ctx);
			*ms = -1;
			return NULL;
		}
		times[i] = now_ms() - t0;
		fd_free(ctx);
	}
	qsort(times, 3, sizeof(double), cmp_double);
	*ms = times[1];
	return r;
}

/* A node as levels joined by '/' */
static const char *
node_str(const FdResult *r)
{
	static char buf[256];
	int			n = 0;
	int			a;

	for (a = 0; a < r->nqi; a++)
		n += snprintf(buf + n, sizeof(buf) - n, "%s%d", a ? "/" : "", r->node[a]);
	return buf;
}

/* Print one result row of a paper-settings run */
static void
print_row(const char *data, int n, const Setting *st, const char *method, double ms,
		  const FdResult *r, const FdResult *opt)
{
	char		lbuf[32] = "-";
	char		tbuf[32] = "-";
	char		pct[32] = "";

	if (st->l > 0)
		snprintf(lbuf, sizeof(lbuf), "%d", st->l);
	if (st->t != FD_T_OFF)
		snprintf(tbuf, sizeof(tbuf), "%g", st->t);
	if (opt != NULL && opt->full.score > 0)
		snprintf(pct, sizeof(pct), "%.1f", 100.0 * r->full.score / opt->full.score);
	printf("%s,%d,%d,%s,%s,%s,%s,%.1f,", data, n, st->k, lbuf, tbuf, score_name[st->scoring],
		   method, ms);
	if (st->paper_ms > 0 && strcmp(method, "privacyfrost2") == 0)
		printf("%.0f", st->paper_ms);
	printf(",%lld,%lld,%lld,%lld,%lld,%s,%.4f,%.4f,%.4f,%s,%d,%d,%d\n",
		   (long long) r->counters.checks, (long long) r->counters.rollups,
		   (long long) r->counters.scans, (long long) r->counters.memo_hits,
		   (long long) r->counters.bound_skips, node_str(r), r->full.score, r->final.score,
		   opt ? opt->full.score : 0.0, pct, r->final.suppressed, r->nclasses, r->nrefined);
}

/* The Table 2 (or 3) settings: PrivacyFrost2 then optimal, each scoring */
static void
run_settings(const char *data, const FdTable *t, const double *paper_ms)
{
	static const int ks[6] = {2, 2, 2, 10, 10, 10};
	static const int ls[6] = {2, 0, 0, 10, 0, 0};
	static const double ts[6] = {FD_T_OFF, 0.1, 0.9, FD_T_OFF, 0.1, 0.9};
	int			i;
	int			f;

	printf("data,rows,k,l,t,scoring,method,ms,paper_ms,checks,rollups,scans,memo_hits,"
		   "bound_skips,node,score,final_score,optimal_score,pct_of_optimal,suppressed,classes,refined\n");
	for (i = 0; i < 6; i++)
		for (f = 0; f < 3; f++)
		{
			static const int paper_order[3] = {0, 2, 1};	/* basic, log, eta */
			Setting		st = {ks[i], ls[i], 0, 0, ts[i], (FdScoring) f, 0};
			FdResult   *fr;
			FdResult   *opt;
			double		fms;
			double		oms;

			st.paper_ms = paper_ms[i * 3 + paper_order[f]];
			fr = timed_search(t, &st, FD_METHOD_FROST, &fms);
			opt = timed_search(t, &st, FD_METHOD_OPTIMAL, &oms);
			if (fr == NULL || opt == NULL)
				die("a search failed", NULL);
			print_row(data, t->nrows, &st, "privacyfrost2", fms, fr, opt);
			print_row(data, t->nrows, &st, "optimal", oms, opt, opt);
			fflush(stdout);
			fd_result_free(fr);
			fd_result_free(opt);
		}
}

/* ----------------------------------------------------------------
 * Data sets
 * ----------------------------------------------------------------
 */
static const char *const paper_qis[8] = {
	"age", "workclass", "education", "marital-status", "occupation", "race", "sex",
	"native-country"
};
static const int paper_cols[8] = {0, 1, 3, 5, 6, 8, 9, 13};
static const char *const arx_qis[8] = {
	"age", "education", "marital-status", "native-country", "race", "salary-class", "sex",
	"workclass"
};
static const int arx_cols[8] = {0, 3, 5, 13, 8, 14, 9, 1};

/* Kiyomoto and Miyake's Table 2 (Adult), by block: basic, log, eta */
static const double table2_ms[18] = {
	619, 592, 680, 736, 720, 675, 823, 778, 723,
	663, 631, 669, 726, 722, 696, 803, 777, 833
};

/* Their Table 3 (Census-Income), same order */
static const double table3_ms[18] = {
	18585, 18381, 16773, 19839, 19832, 18525, 21889, 21363, 19955,
	22287, 21454, 16319, 19788, 19871, 18417, 25477, 24552, 19040
};

/* Load Adult with 8 QIs and a sensitive column into t */
static void
load_adult_table(FdTable *t, const char *adult, const char *hierdir, const char *const *qis,
				 const int *cols, int sens_col, bool numeric)
{
	static FdHierarchy fh[8];
	static const uint32_t *qi[8];
	int			used[9];
	double	   *values;
	int			nsens;
	int			a;

	for (a = 0; a < 8; a++)
		used[a] = cols[a];
	used[8] = sens_col;
	read_adult(adult, used, 9);
	memset(t, 0, sizeof(*t));
	for (a = 0; a < 8; a++)
	{
		Hier	   *h = hier_load(hierdir, qis[a]);

		fh[a] = h->fh;
		qi[a] = encode_qi(h, cols[a]);
	}
	t->nrows = nrows_read;
	t->nqi = 8;
	t->qi = qi;
	t->hier = fh;
	t->sens = encode_sens(sens_col, &nsens, &values);
	t->nsens = nsens;
	t->sens_numeric = numeric;
	t->sens_values = numeric ? values : NULL;
	fprintf(stderr, "fd_bench: %d rows, %d sensitive values\n", nrows_read, nsens);
}

/* The ARX benchmark set-up: k = 5, then with (4,3)-diversity, 0.2-closeness */
static void
run_arx(const FdTable *t)
{
	static const char *const label[3] = {"k=5", "k=5;recursive c=4 l=3", "k=5;t=0.2"};
	Setting		st[3] = {
		{5, 0, 0, 0, FD_T_OFF, FD_SCORE_BASIC, 0},
		{5, 0, 4.0, 3, FD_T_OFF, FD_SCORE_BASIC, 0},
		{5, 0, 0, 0, 0.2, FD_SCORE_BASIC, 0},
	};
	int			i;
	int			m;

	printf("setting,rows,method,ms,checks,rollups,scans,tagged,bound_skips,lattice_nodes,"
		   "node,score,suppressed,arx_flash_checks,arx_flash_ms\n");
	for (i = 0; i < 3; i++)
		for (m = 0; m < 2; m++)
		{
			FdMethod	method = m ? FD_METHOD_FROST : FD_METHOD_OPTIMAL;
			double		ms;
			FdResult   *r = timed_search(t, &st[i], method, &ms);

			if (r == NULL)
				die("a search failed", NULL);
			printf("%s,%d,%s,%.1f,%lld,%lld,%lld,%lld,%lld,%lld,%s,%.1f,%d,%s\n", label[i],
				   t->nrows, m ? "privacyfrost2" : "optimal", ms,
				   (long long) r->counters.checks, (long long) r->counters.rollups,
				   (long long) r->counters.scans, (long long) r->counters.tagged,
				   (long long) r->counters.bound_skips, (long long) r->counters.lattice_nodes,
				   node_str(r), r->full.score, r->full.suppressed,
				   i == 0 && m == 0 ? "115,27" : ",");
			fflush(stdout);
			fd_result_free(r);
		}
}

/* Pre-sampling alone (Table 1): levels two below the root, several k' */
static void
run_presample(const FdTable *t)
{
	static const int kp[4] = {1, 2, 5, 10};
	static const double paper[4] = {1289, 0, 0, 1286};
	uint8_t    *keep = malloc(t->nrows);
	int			i;
	int			a;

	printf("data,rows,kprime,ms,removed,paper_ms\n");
	for (i = 0; i < 4; i++)
	{
		FdPresample ps;
		FdError		err;
		double		times[3];
		int			removed = 0;
		int			j;

		memset(&ps, 0, sizeof(ps));
		for (a = 0; a < t->nqi; a++)
			ps.level[a] = t->hier[a].nlevels - 1 - 2 < 0 ? 0 : t->hier[a].nlevels - 1 - 2;
		ps.kprime = kp[i];
		for (j = 0; j < 3; j++)
		{
			double		t0 = now_ms();

			if (fd_presample(t, &ps, keep, &removed, &err) != FD_OK)
				die(err.message, NULL);
			times[j] = now_ms() - t0;
		}
		qsort(times, 3, sizeof(double), cmp_double);
		printf("adult,%d,%d,%.2f,%d,", t->nrows, kp[i], times[1], removed);
		if (paper[i] > 0)
			printf("%.0f", paper[i]);
		printf("\n");
	}
	free(keep);
}

/* ----------------------------------------------------------------
 * The synthetic Census-Income-shaped table
 * ----------------------------------------------------------------
 */
static uint64_t rng = 0x853c49e6748fea9bULL;

/* A uniform double in [0, 1) */
static double
unit(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return ((rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* A Zipf(s) draw over lo .. hi */
static uint32_t
zipf(int lo, int hi, double s)
{
	double		total = 0;
	double		u;
	int			i;

	for (i = lo; i <= hi; i++)
		total += 1.0 / pow(i - lo + 1, s);
	u = unit() * total;
	for (i = lo; i < hi; i++)
	{
		u -= 1.0 / pow(i - lo + 1, s);
		if (u < 0)
			break;
	}
	return i;
}

/* A hierarchy over L leaves: optional groupings at levels 1 and 2, then '*' */
static FdHierarchy
synth_hier(int L, const int *g1, int n1, const int *g2, int n2)
{
	FdHierarchy h;
	uint32_t  **map = calloc(4, sizeof(uint32_t *));
	uint32_t   *ncodes = calloc(4, sizeof(uint32_t));
	int			nl = 0;
	int			x;
	int			i;
	int			j;

	map[nl] = malloc(sizeof(uint32_t) * L);
	for (x = 0; x < L; x++)
		map[nl][x] = x;
	ncodes[nl++] = L;
	if (n1 > 0)
	{
		map[nl] = malloc(sizeof(uint32_t) * L);
		for (i = 0, x = 0; i < n1; i++)
			for (j = 0; j < g1[i]; j++)
				map[nl][x++] = i;
		ncodes[nl++] = n1;
	}
	if (n2 > 0)
	{
		uint32_t	up[64];

		for (i = 0, x = 0; i < n2; i++)
			for (j = 0; j < g2[i]; j++)
				up[x++] = i;
		map[nl] = malloc(sizeof(uint32_t) * L);
		for (x = 0; x < L; x++)
			map[nl][x] = up[map[nl - 1][x]];
		ncodes[nl++] = n2;
	}
	map[nl] = calloc(L, sizeof(uint32_t));
	ncodes[nl++] = 1;
	h.nleaves = L;
	h.nlevels = nl;
	h.map = (const uint32_t *const *) map;
	h.ncodes = ncodes;
	return h;
}

/* Ages 0 .. 90: 5-, 10-, 20-year bands, then '*' */
static FdHierarchy
age_hier(void)
{
	FdHierarchy h;
	uint32_t  **map = calloc(5, sizeof(uint32_t *));
	uint32_t   *ncodes = calloc(5, sizeof(uint32_t));
	static const int width[5] = {1, 5, 10, 20, 1000};
	int			l;
	int			x;

	for (l = 0; l < 5; l++)
	{
		map[l] = malloc(sizeof(uint32_t) * 91);
		for (x = 0; x <= 90; x++)
			map[l][x] = x / width[l];
		ncodes[l] = 90 / width[l] + 1;
	}
	h.nleaves = 91;
	h.nlevels = 5;
	h.map = (const uint32_t *const *) map;
	h.ncodes = ncodes;
	return h;
}

/*
 * n rows shaped like Census-Income: a quarter children (age 0-15, no
 * class of worker, education "children", never married, no occupation),
 * the rest adults 16-90 skewed young, other columns Zipf-distributed over
 * domains of Census-Income's sizes.  Sensitive: major occupation (15
 * codes, 0 = not in universe), categorical.
 */
static void
load_census(FdTable *t, int n)
{
	static const int cow_g[4] = {1, 3, 3, 2};
	static const int edu_g1[6] = {1, 4, 4, 3, 2, 3};
	static const int edu_g2[3] = {1, 2, 3};
	static const int mar_g[3] = {1, 3, 3};
	static const int race_g[2] = {1, 4};
	static const int cit_g[2] = {1, 4};
	static const int cob_g[5] = {1, 14, 10, 10, 8};
	static FdHierarchy fh[8];
	static uint32_t *qi[8];
	uint32_t   *sens = malloc(sizeof(uint32_t) * n);
	int			a;
	int			r;

	fh[0] = age_hier();
	fh[1] = synth_hier(9, cow_g, 4, NULL, 0);
	fh[2] = synth_hier(17, edu_g1, 6, edu_g2, 3);
	fh[3] = synth_hier(7, mar_g, 3, NULL, 0);
	fh[4] = synth_hier(5, race_g, 2, NULL, 0);
	fh[5] = synth_hier(2, NULL, 0, NULL, 0);
	fh[6] = synth_hier(5, cit_g, 2, NULL, 0);
	fh[7] = synth_hier(43, cob_g, 5, NULL, 0);
	for (a = 0; a < 8; a++)
		qi[a] = malloc(sizeof(uint32_t) * n);
	for (r = 0; r < n; r++)
	{
		bool		child = unit() < 0.25;

		qi[0][r] = child ? (uint32_t) (unit() * 16) : 16 + (uint32_t) (74.99 * pow(unit(), 1.3));
		qi[1][r] = child ? 0 : zipf(0, 8, 1.0);
		qi[2][r] = child ? 0 : zipf(1, 16, 0.8);
		qi[3][r] = child ? 0 : zipf(0, 6, 1.0);
		qi[4][r] = zipf(0, 4, 2.0);
		qi[5][r] = unit() < 0.52;
		qi[6][r] = zipf(0, 4, 2.5);
		qi[7][r] = zipf(0, 42, 1.5);
		sens[r] = (child || qi[1][r] == 0) ? 0 : zipf(1, 14, 0.7);
	}
	memset(t, 0, sizeof(*t));
	t->nrows = n;
	t->nqi = 8;
	t->qi = (const uint32_t *const *) qi;
	t->hier = fh;
	t->sens = sens;
	t->nsens = 15;
	t->sens_numeric = false;
}

static const char *const census_names[8] = {"age", "worker", "education", "marital", "race", "sex",
"citizenship", "birth"};

/* The label of node (level l, code c) of attribute a's hierarchy */
static void
census_label(char *buf, size_t len, const FdHierarchy *h, int a, int l, uint32_t c)
{
	if (l == h->nlevels - 1)
		snprintf(buf, len, "%s:*", census_names[a]);
	else if (l == 0)
		snprintf(buf, len, "%s%u", census_names[a], c);
	else
		snprintf(buf, len, "%s:%d:%u", census_names[a], l, c);
}

/* Write attribute a's hierarchy as (value, parent) lines, the root's parent empty */
static int
write_census_hier(const char *dir, const FdHierarchy *h, int a)
{
	char		path[1024];
	char		v[64];
	char		p[64];
	FILE	   *f;
	int			l;
	int			x;

	snprintf(path, sizeof(path), "%s/h_%s.csv", dir, census_names[a]);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	fprintf(f, "value,parent\n");
	census_label(v, sizeof(v), h, a, h->nlevels - 1, 0);
	fprintf(f, "%s,\n", v);
	for (l = 0; l < h->nlevels - 1; l++)
	{
		char	   *done = calloc(h->ncodes[l], 1);

		for (x = 0; x < h->nleaves; x++)
		{
			uint32_t	c = h->map[l][x];

			if (done[c])
				continue;
			done[c] = 1;
			census_label(v, sizeof(v), h, a, l, c);
			census_label(p, sizeof(p), h, a, l + 1, h->map[l + 1][x]);
			fprintf(f, "%s,%s\n", v, p);
		}
		free(done);
	}
	return fclose(f);
}

/*
 * Write the synthetic Census-Income rows (DIR/census.tsv: the eight
 * quasi-identifiers as leaf labels, then the occupation) and each
 * hierarchy (DIR/h_<name>.csv)
 */
static int
write_census_files(const FdTable *t, const char *dir)
{
	char		path[1024];
	char		v[64];
	FILE	   *f;
	int			a;
	int			r;

	for (a = 0; a < t->nqi; a++)
		if (write_census_hier(dir, &t->hier[a], a) != 0)
			return -1;
	snprintf(path, sizeof(path), "%s/census.tsv", dir);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	for (r = 0; r < t->nrows; r++)
	{
		for (a = 0; a < t->nqi; a++)
		{
			census_label(v, sizeof(v), &t->hier[a], a, 0, t->qi[a][r]);
			fprintf(f, "%s\t", v);
		}
		fprintf(f, "occupation%u\n", t->sens[r]);
	}
	return fclose(f);
}

/* Run the mode named on the command line */
int
main(int argc, char **argv)
{
	FdTable		t;

	if (argc >= 4 && strcmp(argv[1], "paper") == 0)
	{
		/* sensitive: hours-per-week (numeric), not among the QIs */
		load_adult_table(&t, argv[2], argv[3], paper_qis, paper_cols, 12, true);
		run_settings("adult", &t, table2_ms);
	}
	else if (argc >= 4 && strcmp(argv[1], "presample") == 0)
	{
		load_adult_table(&t, argv[2], argv[3], paper_qis, paper_cols, 12, true);
		run_presample(&t);
	}
	else if (argc >= 4 && strcmp(argv[1], "arx") == 0)
	{
		/* sensitive: occupation (categorical) */
		load_adult_table(&t, argv[2], argv[3], arx_qis, arx_cols, 6, false);
		run_arx(&t);
	}
	else if (argc >= 3 && strcmp(argv[1], "census") == 0)
	{
		load_census(&t, atoi(argv[2]));
		run_settings("census-synthetic", &t, table3_ms);
	}
	else if (argc >= 4 && strcmp(argv[1], "census-files") == 0)
	{
		load_census(&t, atoi(argv[2]));
		if (write_census_files(&t, argv[3]) != 0)
		{
			perror(argv[3]);
			return 1;
		}
	}
	else
	{
		fprintf(stderr, "usage: fd_bench paper|presample|arx ADULT HIERDIR | census N | census-files N DIR\n");
		return 2;
	}
	return 0;
}

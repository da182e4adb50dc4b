/*
 * ke_bench.c
 *		Benchmarks of the (k,e) engine.
 *
 *	ke_bench adult FILE
 *		The research's experiment on the UCI Adult data: the capital-loss
 *		column of the complete rows with a loss (1,427 rows, 89 distinct
 *		values).  For every configuration the first (1 - delta) part of the
 *		rows, in file order, is the initial table and the rest is inserted one
 *		row at a time, in file order.  Four algorithms maintain the optimum
 *		(or, for the approximation, a valid partitioning) over the increment:
 *
 *		keanon		the engine on its memory store: ke_build_sorted on the
 *					initial part, then ke_insert per row
 *		incremental	the report's incremental algorithm (Figure 4.1)
 *		quadratic	the report's O(n^2) algorithm re-run from scratch on the
 *					whole sorted table after every insert
 *		approx		the 2-approximation re-run after every insert
 *
 *		Only the increment is timed: setting up the initial state is not.
 *		Every algorithm's increment is repeated until the repetitions add up
 *		to at least MIN_TIMED_SECONDS and the mean is reported, so that the
 *		fast algorithms are timed over many runs.  Before the timed runs an
 *		untimed pass checks keanon against the incremental algorithm after
 *		every insert, and at the end checks keanon, the incremental algorithm
 *		and the quadratic one give the same partitions; any difference aborts
 *		with a message naming the configuration and the insert.
 *
 *		Output: CSV "algorithm,k,e,delta_pct,seconds,sum_error", one row per
 *		algorithm per configuration; each configuration appears once even
 *		when it belongs to two sweeps (k = 5, e = 100, delta = 50 %).
 *
 *	ke_bench scale N SHAPE
 *		Build the engine over N values drawn from SHAPE, then time rounds of
 *		min(SCALE_OPS, N / 10) single inserts of values from the same
 *		distribution followed by as many deletes of values picked at random
 *		among those present (so the table stays within 10 % of N and each
 *		round ends at N rows again); rounds repeat until they add up
 *		to MIN_TIMED_SECONDS, and the means per change are reported.
 *		SHAPE is "uniform" (random 62-bit integers, almost surely distinct;
 *		e is ten mean gaps, 10 * 2^62 / N, so a partition holds about as many
 *		rows at every N) or "dup" (salaries rounded to 1,000 in 0..200,000,
 *		201 distinct values, uniformly drawn; e = 5,000).  k = 5.
 *
 *		Output: CSV "shape,n,build_seconds,insert_us,delete_us,
 *		runs_recomputed_per_insert,mem_mb", one row.  build_seconds times
 *		ke_create plus ke_build_sorted on values already sorted; mem_mb is
 *		ke_memstore_bytes in MiB after the rounds; the engine is checked with
 *		ke_verify at the end.
 *
 * All randomness comes from a fixed-seed xorshift64* generator, so a run is
 * reproducible.  Times come from clock_gettime(CLOCK_MONOTONIC).  Progress,
 * repetition counts and check results go to stderr.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ke_baseline.h"
#include "ke_engine.h"

#define ADULT_ROWS			1427
#define ADULT_DISTINCT		89
#define ADULT_FIELDS		15
#define ADULT_LOSS_FIELD	11

#define NODE_SIZE			8192
#define MIN_TIMED_SECONDS	0.5

#define SCALE_K				5
#define SCALE_OPS			20000
#define SCALE_MAX_ROUNDS	1000
#define SCALE_MIN_N			100
#define SCALE_MAX_N			100000000
#define SCALE_SEED			UINT64_C(0x9e3779b97f4a7c15)
#define UNIFORM_SPAN		(UINT64_C(1) << 62)
#define UNIFORM_E_GAPS		10
#define DUP_STEP			1000
#define DUP_STEPS			201
#define DUP_E				5000

/* One configuration of the research's experiment */
typedef struct AdultConfig
{
	int			k;
	int64_t		e;
	int			delta_pct;
} AdultConfig;

/* The Adult rows of one configuration, shared by every algorithm */
typedef struct AdultRun
{
	const AdultConfig *cfg;
	const KeNum *rows;			/* every row, file order */
	size_t		n;				/* rows in all */
	size_t		ninit;			/* rows of the initial table */
	const KeNum *init_sorted;	/* the initial rows sorted, ninit entries */
} AdultRun;

/* One timed increment: returns its seconds and the final sum-error */
typedef double (*IncrementFn) (const AdultRun *run, KeNum *sum_error);

typedef struct Algorithm
{
	const char *name;
	IncrementFn fn;
} Algorithm;

static uint64_t rng_state = SCALE_SEED;

static void die(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));

/* Print a message to stderr and exit with failure */
static void
die(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "ke_bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
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

/* Abort with the engine's message unless st is KE_OK */
static void
check_status(KeStatus st, const char *what)
{
	if (st != KE_OK)
		die("%s failed: %s", what, ke_status_message(st));
}

/* Seconds on the monotonic clock */
static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* Next number of the xorshift64* generator */
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

/* A random integer in [0, bound), by multiply-and-shift */
static uint64_t
rng_below(uint64_t bound)
{
	return (uint64_t) (((unsigned __int128) rng_next() * bound) >> 64);
}

/* qsort comparator for int64_t */
static int
cmp_int64(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a;
	int64_t		y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/* qsort comparator for exact-kind KeNum */
static int
cmp_knum(const void *a, const void *b)
{
	return ke_num_cmp(KE_KIND_EXACT, *(const KeNum *) a, *(const KeNum *) b);
}

/* Format an exact sum-error, "inf" when there is none */
static const char *
format_sum(KeNum x, char *buf, size_t len)
{
	if (ke_num_is_inf(KE_KIND_EXACT, x))
	{
		snprintf(buf, len, "none");
		return buf;
	}
	return ke_num_format(KE_KIND_EXACT, x, buf, len);
}

/*
 * Insert v into sorted[0..*n-1] (room for one more) after any equal values.
 */
static void
sorted_insert(KeNum *sorted, size_t *n, KeNum v)
{
	size_t		lo = 0;
	size_t		hi = *n;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (sorted[mid].i <= v.i)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(sorted + lo + 1, sorted + lo, (*n - lo) * sizeof(KeNum));
	sorted[lo] = v;
	(*n)++;
}

/* ----------------------------------------------------------------
 * The research's experiment on the Adult data
 * ----------------------------------------------------------------
 */

/* Strip blanks (and a line end) from both ends of s, in place */
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

/*
 * Read the capital-loss of every complete row with a loss, in file order.
 * Lines that are not 15 fields (the blank last line) and the header, whose
 * capital-loss is not a number, are skipped.
 */
static KeNum *
read_adult(const char *path, size_t *nout)
{
	FILE	   *f = fopen(path, "r");
	char	   *line = NULL;
	size_t		cap = 0;
	size_t		n = 0;
	size_t		room = 2048;
	KeNum	   *rows = xmalloc(room * sizeof(KeNum));

	if (f == NULL)
		die("cannot open \"%s\": %s", path, strerror(errno));
	while (getline(&line, &cap, f) != -1)
	{
		char	   *fields[ADULT_FIELDS];
		int			nf = 0;
		bool		complete = true;
		char	   *p = line;
		char	   *endp;
		long long	loss;

		for (;;)
		{
			char	   *comma = strchr(p, ',');

			if (nf == ADULT_FIELDS)
			{
				nf++;			/* too many fields */
				break;
			}
			if (comma)
				*comma = '\0';
			fields[nf++] = trim(p);
			if (!comma)
				break;
			p = comma + 1;
		}
		if (nf != ADULT_FIELDS)
			continue;
		for (int i = 0; i < ADULT_FIELDS; i++)
			if (strcmp(fields[i], "?") == 0)
				complete = false;
		if (!complete)
			continue;
		errno = 0;
		loss = strtoll(fields[ADULT_LOSS_FIELD], &endp, 10);
		if (errno != 0 || endp == fields[ADULT_LOSS_FIELD] || *endp != '\0')
			continue;
		if (loss <= 0)
			continue;
		if (n == room)
		{
			room *= 2;
			rows = realloc(rows, room * sizeof(KeNum));
			if (rows == NULL)
				die("out of memory");
		}
		rows[n++] = ke_num_int(loss);
	}
	free(line);
	fclose(f);
	*nout = n;
	return rows;
}

/* Number of distinct values among rows[0..n-1] */
static size_t
count_distinct(const KeNum *rows, size_t n)
{
	KeNum	   *s = xmalloc(n * sizeof(KeNum));
	size_t		d = 0;

	memcpy(s, rows, n * sizeof(KeNum));
	qsort(s, n, sizeof(KeNum), cmp_knum);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || s[i].i != s[i - 1].i)
			d++;
	free(s);
	return d;
}

/* A fresh engine on the memory store, built from the initial rows */
static KeEngine *
keanon_start(const AdultRun *run, KeStore **store)
{
	KeEngine   *eng;

	*store = ke_memstore_create(NODE_SIZE);
	if (*store == NULL)
		die("ke_memstore_create failed");
	check_status(ke_create(&eng, *store, KE_KIND_EXACT, run->cfg->k,
						   ke_num_int(run->cfg->e)), "ke_create");
	check_status(ke_build_sorted(eng, run->init_sorted, run->ninit),
				 "ke_build_sorted");
	return eng;
}

/* The engine's sum-error, infinity when nothing is valid */
static KeNum
keanon_sum(KeEngine *eng)
{
	KeNum		s;

	if (!ke_sum_error(eng, &s))
		s = ke_num_inf(KE_KIND_EXACT);
	return s;
}

/* keanon: ke_insert per row */
static double
increment_keanon(const AdultRun *run, KeNum *sum_error)
{
	KeStore    *store;
	KeEngine   *eng = keanon_start(run, &store);
	double		t0,
				t1;

	t0 = now_seconds();
	for (size_t i = run->ninit; i < run->n; i++)
	{
		if (ke_insert(eng, run->rows[i]) != KE_OK)
			die("ke_insert failed");
	}
	t1 = now_seconds();
	*sum_error = keanon_sum(eng);
	ke_close(eng);
	ke_memstore_destroy(store);
	return t1 - t0;
}

/* The incremental baseline's sum-error, infinity when nothing is valid */
static KeNum
paperinc_sum(const KePaperInc *pi)
{
	KeNum		s;

	if (!ke_paperinc_sum_error(pi, &s))
		s = ke_num_inf(KE_KIND_EXACT);
	return s;
}

/* incremental: the report's Figure 4.1, one insert per row */
static double
increment_incremental(const AdultRun *run, KeNum *sum_error)
{
	KePaperInc *pi = ke_paperinc_create(KE_KIND_EXACT, run->cfg->k,
										ke_num_int(run->cfg->e));
	double		t0,
				t1;

	if (pi == NULL)
		die("ke_paperinc_create failed");
	ke_paperinc_build(pi, run->init_sorted, run->ninit);
	t0 = now_seconds();
	for (size_t i = run->ninit; i < run->n; i++)
		ke_paperinc_insert(pi, run->rows[i]);
	t1 = now_seconds();
	*sum_error = paperinc_sum(pi);
	ke_paperinc_destroy(pi);
	return t1 - t0;
}

/* quadratic: Figure 3.2 re-run over the whole sorted table per insert */
static double
increment_quadratic(const AdultRun *run, KeNum *sum_error)
{
	KeNum	   *sorted = xmalloc(run->n * sizeof(KeNum));
	KeNum	   *E = xmalloc((run->n + 1) * sizeof(KeNum));
	bool	   *Eok = xmalloc((run->n + 1) * sizeof(bool));
	size_t	   *P = xmalloc((run->n + 1) * sizeof(size_t));
	KeNum		e = ke_num_int(run->cfg->e);
	size_t		m = run->ninit;
	double		t0,
				t1;

	memcpy(sorted, run->init_sorted, m * sizeof(KeNum));
	t0 = now_seconds();
	for (size_t i = run->ninit; i < run->n; i++)
	{
		sorted_insert(sorted, &m, run->rows[i]);
		ke_quadratic(KE_KIND_EXACT, run->cfg->k, e, sorted, m, E, Eok, P);
	}
	t1 = now_seconds();
	*sum_error = Eok[m] ? E[m] : ke_num_inf(KE_KIND_EXACT);
	free(sorted);
	free(E);
	free(Eok);
	free(P);
	return t1 - t0;
}

/* approx: the 2-approximation re-run over the whole sorted table per insert */
static double
increment_approx(const AdultRun *run, KeNum *sum_error)
{
	KeNum	   *sorted = xmalloc(run->n * sizeof(KeNum));
	KeNum		e = ke_num_int(run->cfg->e);
	size_t		m = run->ninit;
	bool		ok = false;
	KeNum		s = ke_num_inf(KE_KIND_EXACT);
	double		t0,
				t1;

	memcpy(sorted, run->init_sorted, m * sizeof(KeNum));
	t0 = now_seconds();
	for (size_t i = run->ninit; i < run->n; i++)
	{
		sorted_insert(sorted, &m, run->rows[i]);
		ok = ke_approx(KE_KIND_EXACT, run->cfg->k, e, sorted, m, &s);
	}
	t1 = now_seconds();
	*sum_error = ok ? s : ke_num_inf(KE_KIND_EXACT);
	free(sorted);
	return t1 - t0;
}

static const Algorithm algorithms[] = {
	{"keanon", increment_keanon},
	{"incremental", increment_incremental},
	{"quadratic", increment_quadratic},
	{"approx", increment_approx},
};

#define NALGORITHMS ((int) (sizeof(algorithms) / sizeof(algorithms[0])))

/* Collects an engine's partitions as 1-based position ranges */
typedef struct PartList
{
	size_t		count;
	size_t		next;			/* first position of the next partition */
	size_t	   *first;
	size_t	   *last;
} PartList;

/* ke_foreach_partition callback: append one partition */
static bool
collect_partition(const KePartition *part, void *arg)
{
	PartList   *pl = arg;

	pl->first[pl->count] = pl->next;
	pl->last[pl->count] = pl->next + (size_t) part->n - 1;
	pl->next += (size_t) part->n;
	pl->count++;
	return true;
}

/* Die unless two partition lists are the same */
static void
compare_partitions(const AdultRun *run, const char *name_a, size_t na,
				   const size_t *fa, const size_t *la, const char *name_b,
				   size_t nb, const size_t *fb, const size_t *lb)
{
	if (na != nb)
		die("k=%d e=%" PRId64 " delta=%d%%: %s has %zu partitions, %s %zu",
			run->cfg->k, run->cfg->e, run->cfg->delta_pct,
			name_a, na, name_b, nb);
	for (size_t i = 0; i < na; i++)
		if (fa[i] != fb[i] || la[i] != lb[i])
			die("k=%d e=%" PRId64 " delta=%d%%: partition %zu is [%zu,%zu] in %s, [%zu,%zu] in %s",
				run->cfg->k, run->cfg->e, run->cfg->delta_pct, i + 1,
				fa[i], la[i], name_a, fb[i], lb[i], name_b);
}

/*
 * Untimed check of one configuration: keanon and the incremental algorithm
 * side by side, sum-errors compared after every insert; at the end the
 * partitions of both and of the quadratic algorithm compared, and the
 * engine's own verification run.  Returns the engine's mean runs recomputed
 * per insert.
 */
static double
check_adult_config(const AdultRun *run)
{
	KeStore    *store;
	KeEngine   *eng = keanon_start(run, &store);
	KePaperInc *pi = ke_paperinc_create(KE_KIND_EXACT, run->cfg->k,
										ke_num_int(run->cfg->e));
	KeNum	   *sorted = xmalloc(run->n * sizeof(KeNum));
	KeNum	   *E = xmalloc((run->n + 1) * sizeof(KeNum));
	bool	   *Eok = xmalloc((run->n + 1) * sizeof(bool));
	size_t	   *P = xmalloc((run->n + 1) * sizeof(size_t));
	size_t	   *qf = xmalloc(run->n * sizeof(size_t));
	size_t	   *ql = xmalloc(run->n * sizeof(size_t));
	size_t	   *pf = xmalloc(run->n * sizeof(size_t));
	size_t	   *plast = xmalloc(run->n * sizeof(size_t));
	PartList	kl;
	const KeNum *pE;
	const bool *pEok;
	const size_t *pP;
	KeNum		qsum;
	size_t		m = run->ninit;
	size_t		nq,
				np;
	int64_t		runs = 0;
	char		msg[512];
	char		b1[64],
				b2[64],
				b3[64];

	if (pi == NULL)
		die("ke_paperinc_create failed");
	kl.count = 0;
	kl.next = 1;
	kl.first = xmalloc(run->n * sizeof(size_t));
	kl.last = xmalloc(run->n * sizeof(size_t));
	ke_paperinc_build(pi, run->init_sorted, run->ninit);
	memcpy(sorted, run->init_sorted, m * sizeof(KeNum));
	for (size_t i = run->ninit; i <= run->n; i++)
	{
		KeNum		a = keanon_sum(eng);
		KeNum		b = paperinc_sum(pi);

		if (!ke_num_eq(KE_KIND_EXACT, a, b))
			die("k=%d e=%" PRId64 " delta=%d%%: after %zu inserts (last value %s) keanon's sum-error is %s, the incremental algorithm's %s",
				run->cfg->k, run->cfg->e, run->cfg->delta_pct, i - run->ninit,
				i > run->ninit ? format_sum(run->rows[i - 1], b3, sizeof(b3)) : "none",
				format_sum(a, b1, sizeof(b1)), format_sum(b, b2, sizeof(b2)));
		if (i == run->n)
			break;
		check_status(ke_insert(eng, run->rows[i]), "ke_insert");
		runs += ke_last_change(eng)->runs_recomputed;
		ke_paperinc_insert(pi, run->rows[i]);
		sorted_insert(sorted, &m, run->rows[i]);
	}

	/* partitions at the end: quadratic, incremental, keanon */
	ke_quadratic(KE_KIND_EXACT, run->cfg->k, ke_num_int(run->cfg->e),
				 sorted, m, E, Eok, P);
	nq = ke_positions_partitions(Eok, P, m, qf, ql);
	if (ke_paperinc_arrays(pi, &pE, &pEok, &pP) != m)
		die("the incremental algorithm holds the wrong number of rows");
	np = ke_positions_partitions(pEok, pP, m, pf, plast);
	if (!ke_foreach_partition(eng, collect_partition, &kl))
		die("ke_foreach_partition failed");
	qsum = Eok[m] ? E[m] : ke_num_inf(KE_KIND_EXACT);
	if (!ke_num_eq(KE_KIND_EXACT, keanon_sum(eng), qsum))
		die("k=%d e=%" PRId64 " delta=%d%%: final sum-error %s in keanon, %s in the quadratic algorithm",
			run->cfg->k, run->cfg->e, run->cfg->delta_pct,
			format_sum(keanon_sum(eng), b1, sizeof(b1)),
			format_sum(qsum, b2, sizeof(b2)));
	compare_partitions(run, "the quadratic algorithm", nq, qf, ql,
					   "the incremental algorithm", np, pf, plast);
	compare_partitions(run, "the quadratic algorithm", nq, qf, ql,
					   "keanon", kl.count, kl.first, kl.last);
	if (ke_verify(eng, msg, sizeof(msg)) != KE_OK)
		die("k=%d e=%" PRId64 " delta=%d%%: ke_verify: %s",
			run->cfg->k, run->cfg->e, run->cfg->delta_pct, msg);

	ke_close(eng);
	ke_memstore_destroy(store);
	ke_paperinc_destroy(pi);
	free(sorted);
	free(E);
	free(Eok);
	free(P);
	free(qf);
	free(ql);
	free(pf);
	free(plast);
	free(kl.first);
	free(kl.last);
	return (double) runs / (double) (run->n - run->ninit);
}

/*
 * Time one algorithm on one configuration: repeat the increment until the
 * repetitions add up to MIN_TIMED_SECONDS; every repetition must end at the
 * same sum-error.  Returns the mean seconds.
 */
static double
time_algorithm(const Algorithm *alg, const AdultRun *run, KeNum *sum_error,
			   int *reps)
{
	double		total = 0.0;
	int			r = 0;

	do
	{
		KeNum		s;

		total += alg->fn(run, &s);
		if (r > 0 && !ke_num_eq(KE_KIND_EXACT, s, *sum_error))
			die("%s gave different sum-errors on two repetitions", alg->name);
		*sum_error = s;
		r++;
	} while (total < MIN_TIMED_SECONDS);
	*reps = r;
	return total / r;
}

/* Run and print one configuration of the research's experiment */
static void
bench_adult_config(const AdultConfig *cfg, const KeNum *rows, size_t n)
{
	AdultRun	run;
	KeNum	   *init;
	KeNum		sums[NALGORITHMS];
	double		secs[NALGORITHMS];
	int			reps[NALGORITHMS];
	size_t		ninc = (n * (size_t) cfg->delta_pct + 50) / 100;
	double		runs;
	char		buf[64];
	char		buf2[64];

	run.cfg = cfg;
	run.rows = rows;
	run.n = n;
	run.ninit = n - ninc;
	init = xmalloc(run.ninit * sizeof(KeNum));
	memcpy(init, rows, run.ninit * sizeof(KeNum));
	qsort(init, run.ninit, sizeof(KeNum), cmp_knum);
	run.init_sorted = init;

	runs = check_adult_config(&run);

	for (int a = 0; a < NALGORITHMS; a++)
		secs[a] = time_algorithm(&algorithms[a], &run, &sums[a], &reps[a]);

	/* keanon, incremental and quadratic are exact; approx is no better */
	for (int a = 1; a < 3; a++)
		if (!ke_num_eq(KE_KIND_EXACT, sums[0], sums[a]))
			die("k=%d e=%" PRId64 " delta=%d%%: keanon ends at sum-error %s, %s at %s",
				cfg->k, cfg->e, cfg->delta_pct,
				format_sum(sums[0], buf, sizeof(buf)), algorithms[a].name,
				format_sum(sums[a], buf2, sizeof(buf2)));
	if (ke_num_cmp(KE_KIND_EXACT, sums[3], sums[0]) < 0)
		die("k=%d e=%" PRId64 " delta=%d%%: approx sum-error below the optimum",
			cfg->k, cfg->e, cfg->delta_pct);

	fprintf(stderr, "k=%d e=%" PRId64 " delta=%d%%: %zu initial rows, %zu inserts, checked, %.2f runs recomputed per insert;",
			cfg->k, cfg->e, cfg->delta_pct, run.ninit, ninc, runs);
	for (int a = 0; a < NALGORITHMS; a++)
		fprintf(stderr, " %s %d reps", algorithms[a].name, reps[a]);
	fputc('\n', stderr);

	for (int a = 0; a < NALGORITHMS; a++)
		printf("%s,%d,%" PRId64 ",%d,%.9f,%s\n", algorithms[a].name, cfg->k,
			   cfg->e, cfg->delta_pct, secs[a],
			   format_sum(sums[a], buf, sizeof(buf)));
	fflush(stdout);
	free(init);
}

/* ke_bench adult FILE */
static int
bench_adult(const char *path)
{
	size_t		n;
	KeNum	   *rows = read_adult(path, &n);
	size_t		distinct = count_distinct(rows, n);
	AdultConfig configs[64];
	int			nconfigs = 0;

	if (n != ADULT_ROWS || distinct != ADULT_DISTINCT)
		die("\"%s\" gives %zu rows with %zu distinct capital-loss values; expected %d rows with %d",
			path, n, distinct, ADULT_ROWS, ADULT_DISTINCT);
	fprintf(stderr, "adult: %zu rows, %zu distinct values\n", n, distinct);

	/* k sweep, e sweep, delta sweep; the shared configuration only once */
	for (int k = 3; k <= 10; k++)
		configs[nconfigs++] = (AdultConfig) {k, 100, 50};
	for (int e = 20; e <= 220; e += 20)
		if (e != 100)
			configs[nconfigs++] = (AdultConfig) {5, e, 50};
	for (int d = 6; d <= 14; d += 2)
		configs[nconfigs++] = (AdultConfig) {5, 100, d};

	printf("algorithm,k,e,delta_pct,seconds,sum_error\n");
	for (int c = 0; c < nconfigs; c++)
		bench_adult_config(&configs[c], rows, n);
	free(rows);
	return 0;
}

/* ----------------------------------------------------------------
 * Scale: per-change cost against table size
 * ----------------------------------------------------------------
 */
typedef enum Shape
{
	SHAPE_UNIFORM,
	SHAPE_DUP
} Shape;

/* One value drawn from the shape's distribution */
static int64_t
draw(Shape shape)
{
	if (shape == SHAPE_UNIFORM)
		return (int64_t) (rng_next() >> 2);
	return (int64_t) rng_below(DUP_STEPS) * DUP_STEP;
}

/* ke_bench scale N SHAPE */
static int
bench_scale(size_t n, Shape shape)
{
	size_t		pool_n = n;
	int64_t    *pool = xmalloc((n + SCALE_OPS) * sizeof(int64_t));
	int64_t    *ins = xmalloc(SCALE_OPS * sizeof(int64_t));
	int64_t    *del = xmalloc(SCALE_OPS * sizeof(int64_t));
	KeNum	   *sorted;
	KeNum		e;
	KeStore    *store;
	KeEngine   *eng;
	int64_t		runs_ins = 0,
				runs_del = 0;
	int			rounds = 0;
	/* a round changes at most a tenth of the table, so its size holds */
	int			ops = (int) (n / 10 < SCALE_OPS ? n / 10 : SCALE_OPS);
	double		t0,
				t_build,
				t_ins = 0.0,
				t_del = 0.0,
				t_verify;
	char		msg[512];

	e = ke_num_int(shape == SHAPE_UNIFORM ?
				   (int64_t) (UNIFORM_E_GAPS * (UNIFORM_SPAN / n)) : DUP_E);

	/* the table, sorted outside the timing */
	for (size_t i = 0; i < n; i++)
		pool[i] = draw(shape);
	qsort(pool, n, sizeof(int64_t), cmp_int64);
	sorted = xmalloc(n * sizeof(KeNum));
	for (size_t i = 0; i < n; i++)
		sorted[i] = ke_num_int(pool[i]);

	store = ke_memstore_create(NODE_SIZE);
	if (store == NULL)
		die("ke_memstore_create failed");
	t0 = now_seconds();
	check_status(ke_create(&eng, store, KE_KIND_EXACT, SCALE_K, e), "ke_create");
	check_status(ke_build_sorted(eng, sorted, n), "ke_build_sorted");
	t_build = now_seconds() - t0;
	free(sorted);

	/*
	 * Rounds of ops inserts then ops deletes (ops at most n / 10, so the
	 * table stays within 10 % of n and a small table is not measured at
	 * several times its size), each round leaving n rows again, until the
	 * rounds add up to MIN_TIMED_SECONDS.  The
	 * inserts come from the same distribution as the table; the deletes are
	 * values picked uniformly among the rows present after the inserts, each
	 * pick removed from the pool.  All drawn before the timing.
	 */
	do
	{
		for (int j = 0; j < ops; j++)
		{
			ins[j] = draw(shape);
			pool[pool_n++] = ins[j];
		}
		for (int j = 0; j < ops; j++)
		{
			size_t		idx = (size_t) rng_below(pool_n);

			del[j] = pool[idx];
			pool[idx] = pool[--pool_n];
		}

		t0 = now_seconds();
		for (int j = 0; j < ops; j++)
		{
			if (ke_insert(eng, ke_num_int(ins[j])) != KE_OK)
				die("ke_insert of %" PRId64 " failed", ins[j]);
			runs_ins += ke_last_change(eng)->runs_recomputed;
		}
		t_ins += now_seconds() - t0;

		t0 = now_seconds();
		for (int j = 0; j < ops; j++)
		{
			if (ke_delete(eng, ke_num_int(del[j])) != KE_OK)
				die("ke_delete of %" PRId64 " failed", del[j]);
			runs_del += ke_last_change(eng)->runs_recomputed;
		}
		t_del += now_seconds() - t0;
		rounds++;
	} while (t_ins + t_del < MIN_TIMED_SECONDS && rounds < SCALE_MAX_ROUNDS);

	if (ke_nrows(eng) != (int64_t) n)
		die("the engine holds %" PRId64 " rows, expected %zu", ke_nrows(eng), n);
	t0 = now_seconds();
	if (ke_verify(eng, msg, sizeof(msg)) != KE_OK)
		die("ke_verify after the inserts and deletes: %s", msg);
	t_verify = now_seconds() - t0;

	fprintf(stderr, "scale %s n=%zu: e=%s, %" PRId64 " runs, %d rounds of %d inserts and deletes, %.2f runs recomputed per delete, verified in %.2f s\n",
			shape == SHAPE_UNIFORM ? "uniform" : "dup", n,
			format_sum(e, msg, sizeof(msg)), ke_nruns(eng), rounds, ops,
			(double) runs_del / ((double) ops * rounds), t_verify);
	printf("shape,n,build_seconds,insert_us,delete_us,runs_recomputed_per_insert,mem_mb\n");
	printf("%s,%zu,%.6f,%.4f,%.4f,%.3f,%.2f\n",
		   shape == SHAPE_UNIFORM ? "uniform" : "dup", n, t_build,
		   t_ins * 1e6 / ((double) ops * rounds),
		   t_del * 1e6 / ((double) ops * rounds),
		   (double) runs_ins / ((double) ops * rounds),
		   (double) ke_memstore_bytes(store) / (1024.0 * 1024.0));

	ke_close(eng);
	ke_memstore_destroy(store);
	free(pool);
	free(ins);
	free(del);
	return 0;
}

/* Print how to call the program */
static int
usage(void)
{
	fprintf(stderr,
			"usage: ke_bench adult FILE\n"
			"       ke_bench scale N uniform|dup\n");
	return 2;
}

/* Dispatch on the subcommand */
int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "adult") == 0)
		return bench_adult(argv[2]);
	if (argc == 4 && strcmp(argv[1], "scale") == 0)
	{
		char	   *endp;
		unsigned long long n;
		Shape		shape;

		errno = 0;
		n = strtoull(argv[2], &endp, 10);
		if (errno != 0 || endp == argv[2] || *endp != '\0' ||
			n < SCALE_MIN_N || n > SCALE_MAX_N)
			die("N must be an integer from %d to %d", SCALE_MIN_N, SCALE_MAX_N);
		if (strcmp(argv[3], "uniform") == 0)
			shape = SHAPE_UNIFORM;
		else if (strcmp(argv[3], "dup") == 0)
			shape = SHAPE_DUP;
		else
			die("SHAPE must be \"uniform\" or \"dup\"");
		return bench_scale((size_t) n, shape);
	}
	return usage();
}

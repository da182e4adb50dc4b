/*
 * fd_test.c
 *		Unit tests of the full-domain module (src/fulldomain): checks,
 *		PrivacyFrost2 and the exact search against a brute force.
 *
 * Parts:
 *	hand		a 6-row table whose measures (group sizes, distinct and
 *				recursive l, ordered and equal-distance EMD, suppression)
 *				were worked out by hand; the paper's Fig. 2 tables scored
 *				by hand under the three functions (the paper has no other
 *				worked example)
 *	args		malformed tables, hierarchies and criteria are refused with
 *				the status that names the problem
 *	random		small random tables and criteria: fd_check at every
 *				lattice node, in random order on one context (roll-ups and
 *				scans) against measures recomputed naively from the rows;
 *				'optimal' equals the brute force's best qualifying score;
 *				PrivacyFrost2's node qualifies and scores no more; its
 *				published classes (partial-domain refinement on) are
 *				checked row by row; each table's groups built in one of
 *				three ways in turn (direct counts where they fit; hashed
 *				with packed keys; hashed with the codes compared)
 *	big			larger random lattices (4 to 6 QIs, up to 4 levels, up to
 *				400 rows): 'optimal' equals the best of fd_check at every
 *				node
 *	wide		a table whose codes do not fit a packed key, against a
 *				naive count
 *	presample	pre-sampling against a naive count, and its rows marked
 *	nomem		allocations failing at every point give FD_ERR_NOMEM
 *
 * Output: one line per failure and a last line "N passed, M failed"; the
 * exit status is 1 if any failed.  Deterministic (own generator, fixed
 * seeds).  "fd_test N" runs N random tables (default 3000, one in four with
 * recursive diversity or closeness under a suppression budget).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ke_alloc.h"
#include "fd_anon.h"
#include "fd_int.h"

#define MAX_FAIL_LINES	8
#define MAX_ROWS		80
#define MAX_LEAVES		8
#define MAX_LEV			5
#define MAX_SENS		6

static int64_t total_rollups;
static int64_t total_scans;
static int	tables_solved;
static int	tables_refused;
static int	frost_found;
static int	frost_optimal;
static int64_t total_refined;

#include "unit_cases.h"

/* Whether two doubles agree to 1e-9 */
static bool
close_to(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (1.0 + fabs(a) + fabs(b));
}

static uint64_t rng_state = 88172645463325252ULL;

/* Reseed the generator */
static void
rng_seed(uint64_t seed)
{
	rng_state = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
	if (rng_state == 0)
		rng_state = 1;
}

/* A random integer in 0 .. n - 1 (xorshift64*) */
static int
rng_below(int n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (int) (((rng_state * 2685821657736338717ULL) >> 33) % (uint64_t) n);
}

/* How group tables are built in the random tables: 0 as fd_prepare chose */
static int	build_mode;

/* Make a context build groups as build_mode says: 1 hashed, 2 hashed unpacked */
static void
apply_build_mode(FdContext *ctx)
{
	if (build_mode >= 1)
		ctx->dense_limit = 0;
	if (build_mode >= 2)
		ctx->packed = false;
}

/* ----------------------------------------------------------------
 * Test tables
 * ----------------------------------------------------------------
 */
typedef struct TTable
{
	int			n;
	int			q;
	uint32_t	mapv[4][MAX_LEV][MAX_LEAVES];
	const uint32_t *mapp[4][MAX_LEV];
	uint32_t	ncodes[4][MAX_LEV];
	FdHierarchy hier[4];
	uint32_t	col[4][MAX_ROWS];
	const uint32_t *colp[4];
	uint32_t	sens[MAX_ROWS];
	double		values[MAX_SENS];
	FdTable		t;
} TTable;

/* Wire a test table's pointers into its FdTable */
static void
ttable_wire(TTable *tt, int nsens, bool numeric)
{
	int			a;
	int			l;

	for (a = 0; a < tt->q; a++)
	{
		for (l = 0; l < tt->hier[a].nlevels; l++)
			tt->mapp[a][l] = tt->mapv[a][l];
		tt->hier[a].map = tt->mapp[a];
		tt->hier[a].ncodes = tt->ncodes[a];
		tt->colp[a] = tt->col[a];
	}
	for (l = 0; l < nsens; l++)
		tt->values[l] = 10.0 * l + 1.0;
	memset(&tt->t, 0, sizeof(tt->t));
	tt->t.nrows = tt->n;
	tt->t.nqi = tt->q;
	tt->t.qi = tt->colp;
	tt->t.hier = tt->hier;
	tt->t.sens = tt->sens;
	tt->t.nsens = nsens;
	tt->t.sens_numeric = numeric;
	tt->t.sens_values = numeric ? tt->values : NULL;
}

/* A random nested hierarchy for attribute a */
static void
random_hierarchy(TTable *tt, int a)
{
	FdHierarchy *h = &tt->hier[a];
	int			l;
	int			x;

	h->nleaves = 2 + rng_below(MAX_LEAVES - 1);
	h->nlevels = 1 + rng_below(MAX_LEV - 1);
	tt->ncodes[a][0] = h->nleaves;
	for (x = 0; x < h->nleaves; x++)
		tt->mapv[a][0][x] = x;
	for (l = 1; l < h->nlevels; l++)
	{
		uint32_t	parent[MAX_LEAVES];
		int			m = tt->ncodes[a][l - 1];
		int			mm = (l == h->nlevels - 1 && rng_below(3) > 0) ? 1 : 1 + rng_below(m);
		int			c;

		/* every new code gets a child; the rest choose at random */
		for (c = 0; c < m; c++)
			parent[c] = c < mm ? (uint32_t) c : (uint32_t) rng_below(mm);
		for (c = m - 1; c > 0; c--)
		{
			int			j = rng_below(c + 1);
			uint32_t	tmp = parent[c];

			parent[c] = parent[j];
			parent[j] = tmp;
		}
		tt->ncodes[a][l] = mm;
		for (x = 0; x < h->nleaves; x++)
			tt->mapv[a][l][x] = parent[tt->mapv[a][l - 1][x]];
	}
}

/* A random table: skewed codes so that groups of several rows appear */
static void
random_table(TTable *tt, int nsens, bool numeric)
{
	int			a;
	int			r;

	memset(tt, 0, sizeof(*tt));
	tt->n = 4 + rng_below(MAX_ROWS - 4);
	tt->q = 1 + rng_below(4);
	for (a = 0; a < tt->q; a++)
	{
		int			hot = 1 + rng_below(3);

		random_hierarchy(tt, a);
		for (r = 0; r < tt->n; r++)
			tt->col[a][r] = rng_below(2) ? (uint32_t) rng_below(hot < tt->hier[a].nleaves ? hot : tt->hier[a].nleaves)
				: (uint32_t) rng_below(tt->hier[a].nleaves);
	}
	for (r = 0; r < tt->n; r++)
		tt->sens[r] = rng_below(nsens);
	ttable_wire(tt, nsens, numeric);
}

/* ----------------------------------------------------------------
 * Naive measures, straight from the definitions
 * ----------------------------------------------------------------
 */
typedef struct Naive
{
	FdMeasures	m;
	int			group_of[MAX_ROWS];
	bool		row_pass[MAX_ROWS];
} Naive;

/* Whether rows r and s share their codes at levels lev */
static bool
same_tuple(const TTable *tt, const int *lev, int r, int s)
{
	int			a;

	for (a = 0; a < tt->q; a++)
		if (tt->mapv[a][lev[a]][tt->col[a][r]] != tt->mapv[a][lev[a]][tt->col[a][s]])
			return false;
	return true;
}

/* The greatest l for which counts are recursive (c,l)-diverse, naively */
static int
naive_recl(const int *cnt, int nsens, double c)
{
	int			r[MAX_SENS];
	int			m = 0;
	int			best = 0;
	int			i;
	int			j;
	int			l;

	for (i = 0; i < nsens; i++)
		if (cnt[i] > 0)
			r[m++] = cnt[i];
	for (i = 0; i < m; i++)
		for (j = i + 1; j < m; j++)
			if (r[j] > r[i])
			{
				int			t = r[i];

				r[i] = r[j];
				r[j] = t;
			}
	for (l = 1; l <= m; l++)
	{
		double		tail = 0;

		for (i = l - 1; i < m; i++)
			tail += r[i];
		if ((double) r[0] < c * tail)
			best = l;
	}
	return best;
}

/* A group's EMD to the table, naively (cumulative sums recomputed) */
static double
naive_emd(const TTable *tt, const int *cnt, int size)
{
	int			S = tt->t.nsens;
	double		q[MAX_SENS] = {0};
	double		sum = 0;
	int			i;
	int			j;

	for (i = 0; i < tt->n; i++)
		q[tt->sens[i]] += 1.0;
	for (i = 0; i < S; i++)
		q[i] /= tt->n;
	if (!tt->t.sens_numeric)
	{
		for (i = 0; i < S; i++)
			sum += fabs((double) cnt[i] / size - q[i]);
		return sum / 2;
	}
	if (S < 2)
		return 0;
	for (i = 0; i < S; i++)
	{
		double		cum = 0;

		for (j = 0; j <= i; j++)
			cum += (double) cnt[j] / size - q[j];
		sum += fabs(cum);
	}
	return sum / (S - 1);
}

/* The score from e[], naively */
static double
naive_score(const TTable *tt, const FdParams *p, const int *e)
{
	double		s = 0;
	int			a;

	for (a = 0; a < tt->q; a++)
	{
		bool		seen[MAX_LEAVES] = {0};
		int			eb = 0;
		int			r;
		double		d;
		double		term;

		for (r = 0; r < tt->n; r++)
			if (!seen[tt->col[a][r]])
			{
				seen[tt->col[a][r]] = true;
				eb++;
			}
		d = p->eta_d > 0 ? p->eta_d : eb / 2.0;
		if (p->scoring == FD_SCORE_BASIC)
			s += p->priority[a] * e[a];
		else if (p->scoring == FD_SCORE_ETA)
			s += p->priority[a] * (e[a] > d ? 2 : (e[a] > d / 2 ? 1 : 0));
		else
		{
			term = (eb > 1 && e[a] > 0) ? p->priority[a] * log(e[a]) / log(eb) : 0;
			if (a == 0 || term > s)
				s = term;
		}
	}
	return s;
}

/* A node's measures from the rows */
static void
naive_node(const TTable *tt, const FdParams *p, const int *lev, Naive *nv)
{
	bool		hist = p->l_distinct > 0 || p->rec_l > 0 || p->t != FD_T_OFF;
	int			ngroups = 0;
	int			r;
	int			s;
	int			a;

	memset(nv, 0, sizeof(*nv));
	for (r = 0; r < tt->n; r++)
	{
		nv->group_of[r] = -1;
		for (s = 0; s < r && nv->group_of[r] < 0; s++)
			if (same_tuple(tt, lev, r, s))
				nv->group_of[r] = nv->group_of[s];
		if (nv->group_of[r] < 0)
			nv->group_of[r] = ngroups++;
	}
	for (s = 0; s < ngroups; s++)
	{
		int			cnt[MAX_SENS] = {0};
		int			size = 0;
		int			d = 0;
		int			rl = 0;
		double		emd = 0;
		bool		pass;

		for (r = 0; r < tt->n; r++)
			if (nv->group_of[r] == s)
			{
				size++;
				cnt[tt->sens[r]]++;
			}
		for (r = 0; r < tt->t.nsens; r++)
			d += cnt[r] > 0;
		pass = size >= p->k;
		if (hist)
		{
			emd = naive_emd(tt, cnt, size);
			pass = pass && d >= p->l_distinct;
			if (p->rec_l > 0)
			{
				rl = naive_recl(cnt, tt->t.nsens, p->rec_c);
				pass = pass && rl >= p->rec_l;
			}
			if (p->t != FD_T_OFF)
				pass = pass && emd <= p->t + 1e-9;
		}
		else
			d = 0;
		for (r = 0; r < tt->n; r++)
			if (nv->group_of[r] == s)
				nv->row_pass[r] = pass;
		if (!pass)
		{
			nv->m.failing_groups++;
			nv->m.suppressed += size;
			continue;
		}
		if (nv->m.groups == 0 || size < nv->m.min_group)
			nv->m.min_group = size;
		if (nv->m.groups == 0 || d < nv->m.min_distinct)
			nv->m.min_distinct = d;
		if (nv->m.groups == 0 || rl < nv->m.min_recursive_l)
			nv->m.min_recursive_l = rl;
		if (emd > nv->m.max_emd)
			nv->m.max_emd = emd;
		nv->m.groups++;
	}
	for (a = 0; a < tt->q; a++)
	{
		bool		seen[MAX_LEAVES] = {0};

		for (r = 0; r < tt->n; r++)
		{
			uint32_t	c = tt->mapv[a][lev[a]][tt->col[a][r]];

			if (nv->row_pass[r] && !seen[c])
			{
				seen[c] = true;
				nv->m.e[a]++;
			}
		}
	}
	nv->m.qualifies = nv->m.suppressed <= p->max_suppressed && nv->m.groups > 0;
	nv->m.score = naive_score(tt, p, nv->m.e);
}

/* Compare measures; what names the node */
static void
compare_measures(const FdMeasures *got, const FdMeasures *want, int q, const char *what)
{
	int			a;

	if (got->qualifies != want->qualifies || got->groups != want->groups ||
		got->min_group != want->min_group || got->min_distinct != want->min_distinct ||
		got->min_recursive_l != want->min_recursive_l ||
		got->failing_groups != want->failing_groups || got->suppressed != want->suppressed ||
		!close_to(got->max_emd, want->max_emd) || !close_to(got->score, want->score))
		fail("%s: got q=%d g=%d min=%d d=%d rl=%d emd=%g fail=%d sup=%d score=%g; "
			 "want q=%d g=%d min=%d d=%d rl=%d emd=%g fail=%d sup=%d score=%g", what,
			 got->qualifies, got->groups, got->min_group, got->min_distinct,
			 got->min_recursive_l, got->max_emd, got->failing_groups, got->suppressed,
			 got->score, want->qualifies, want->groups, want->min_group,
			 want->min_distinct, want->min_recursive_l, want->max_emd,
			 want->failing_groups, want->suppressed, want->score);
	for (a = 0; a < q; a++)
		if (got->e[a] != want->e[a])
			fail("%s: e[%d] = %d, want %d", what, a, got->e[a], want->e[a]);
}


/* ----------------------------------------------------------------
 * Hand-worked cases
 * ----------------------------------------------------------------
 */

/*
 * One QI, leaves A and B under '*'; rows A A B B B B with sensitive codes
 * 0 0 1 1 2 2 (so the table's distribution is uniform over 3 values).
 * Group A = (1, 0, 0): ordered EMD (|2/3| + |1/3| + 0) / 2 = 0.5,
 * equal-distance (2/3 + 1/3 + 1/3) / 2 = 2/3.  Group B = (0, 1/2, 1/2):
 * ordered (1/3 + 1/6 + 0) / 2 = 0.25, equal-distance 1/3.  Recursive with
 * c = 2: A (2) holds for l = 1 only; B (2, 2) for l = 2 (2 < 2 * 2);
 * the whole table (2, 2, 2) for l = 3 (2 < 2 * 2).
 */
static void
hand_table(TTable *tt, bool numeric)
{
	static const uint32_t leaf[6] = {0, 0, 1, 1, 1, 1};
	static const uint32_t sens[6] = {0, 0, 1, 1, 2, 2};
	int			r;

	memset(tt, 0, sizeof(*tt));
	tt->n = 6;
	tt->q = 1;
	tt->hier[0].nleaves = 2;
	tt->hier[0].nlevels = 2;
	tt->ncodes[0][0] = 2;
	tt->ncodes[0][1] = 1;
	tt->mapv[0][0][0] = 0;
	tt->mapv[0][0][1] = 1;
	for (r = 0; r < 6; r++)
	{
		tt->col[0][r] = leaf[r];
		tt->sens[r] = sens[r];
	}
	ttable_wire(tt, 3, numeric);
}

/* Check one node of the hand table against expected numbers */
static void
hand_expect(const TTable *tt, const FdParams *p, int level, bool q, int groups, int min_group,
			int min_distinct, int recl, double emd, int suppressed, double score)
{
	FdContext  *ctx;
	FdMeasures	m;
	FdError		err;
	int			lev[1] = {level};

	if (fd_prepare(&tt->t, p, &ctx, &err) != FD_OK)
	{
		fail("prepare: %s", err.message);
		return;
	}
	if (fd_check(ctx, lev, &m) != FD_OK)
		fail("check failed");
	else if (m.qualifies != q || m.groups != groups || m.min_group != min_group ||
			 m.min_distinct != min_distinct || m.min_recursive_l != recl ||
			 !close_to(m.max_emd, emd) || m.suppressed != suppressed || !close_to(m.score, score))
		fail("level %d: q=%d groups=%d min=%d d=%d rl=%d emd=%g sup=%d score=%g", level,
			 m.qualifies, m.groups, m.min_group, m.min_distinct, m.min_recursive_l,
			 m.max_emd, m.suppressed, m.score);
	fd_free(ctx);
}

/* The hand-worked measures and the paper's Fig. 2 scores */
static void
test_hand(void)
{
	TTable		tt;
	FdParams	p;

	case_begin("hand: EMD, distinct and recursive l");
	hand_table(&tt, true);
	fd_params_init(&p);
	p.t = 0.9;
	p.rec_c = 2.0;
	p.rec_l = 1;
	hand_expect(&tt, &p, 0, true, 2, 2, 1, 1, 0.5, 0, 2.0);
	hand_expect(&tt, &p, 1, true, 1, 6, 3, 3, 0.0, 0, 1.0);
	hand_table(&tt, false);
	hand_expect(&tt, &p, 0, true, 2, 2, 1, 1, 2.0 / 3.0, 0, 2.0);
	case_end();

	case_begin("hand: suppression");
	hand_table(&tt, true);
	fd_params_init(&p);
	p.k = 2;
	p.l_distinct = 2;
	p.max_suppressed = 2;
	hand_expect(&tt, &p, 0, true, 1, 4, 2, 0, 0.25, 2, 1.0);
	p.max_suppressed = 1;
	hand_expect(&tt, &p, 0, false, 1, 4, 2, 0, 0.25, 2, 1.0);
	case_end();

	case_begin("hand: t = 0.3 leaves only the top node");
	{
		FdContext  *ctx;
		FdResult   *r;
		FdSearchOpts o;
		FdError		err;
		int			method;

		hand_table(&tt, true);
		fd_params_init(&p);
		p.t = 0.3;
		hand_expect(&tt, &p, 0, false, 1, 4, 2, 0, 0.25, 2, 1.0);
		for (method = 0; method < 2; method++)
		{
			fd_search_opts_init(&o);
			o.method = method ? FD_METHOD_OPTIMAL : FD_METHOD_FROST;
			if (fd_prepare(&tt.t, &p, &ctx, &err) != FD_OK ||
				fd_search(ctx, &o, &r, &err) != FD_OK)
				fail("search: %s", err.message);
			else
			{
				if (r->node[0] != 1 || r->nclasses != 1 || r->class_size[0] != 6)
					fail("method %d chose level %d", method, r->node[0]);
				fd_result_free(r);
			}
			fd_free(ctx);
		}
	}
	case_end();

	/*
	 * Fig. 2: six rows over Birth, Gender, Zip, Nationality with 2, 2, 5
	 * and 3 distinct original values.  The log-based table publishes
	 * e = (2, 2, 2, 3), the eta-based one e = (2, 2, 2, 2).  With
	 * priorities (1, 1, 1, 4): basic 18 and 14; eta with d = 2.5,
	 * 1 + 1 + 1 + 4 * 2 = 11 and 1 + 1 + 1 + 4 * 1 = 7; log-based
	 * max(1, 1, log 2 / log 5, 4) = 4 and 4 log 2 / log 3.
	 */
	case_begin("hand: the paper's Fig. 2 tables scored");
	{
		static const uint32_t orig[4][6] = {
			{0, 0, 1, 1, 0, 0}, {0, 0, 1, 1, 0, 0}, {0, 1, 2, 3, 4, 4}, {0, 1, 0, 1, 2, 2}
		};
		static const int e_left[4] = {2, 2, 2, 3};
		static const int e_right[4] = {2, 2, 2, 2};
		static const double want[3][2] = {{18, 14}, {11, 7}, {4, 0}};
		FdContext  *ctx;
		FdError		err;
		int			a;
		int			r;
		int			f;

		memset(&tt, 0, sizeof(tt));
		tt.n = 6;
		tt.q = 4;
		for (a = 0; a < 4; a++)
		{
			tt.hier[a].nleaves = a == 2 ? 5 : (a == 3 ? 3 : 2);
			tt.hier[a].nlevels = 1;
			tt.ncodes[a][0] = tt.hier[a].nleaves;
			for (r = 0; r < tt.hier[a].nleaves; r++)
				tt.mapv[a][0][r] = r;
			for (r = 0; r < 6; r++)
				tt.col[a][r] = orig[a][r];
		}
		ttable_wire(&tt, 1, false);
		for (f = 0; f < 3; f++)
		{
			fd_params_init(&p);
			p.priority[3] = 4;
			p.scoring = f == 0 ? FD_SCORE_BASIC : (f == 1 ? FD_SCORE_ETA : FD_SCORE_LOG);
			p.eta_d = 2.5;
			if (fd_prepare(&tt.t, &p, &ctx, &err) != FD_OK)
			{
				fail("prepare: %s", err.message);
				continue;
			}
			if (!close_to(fd_score(ctx, e_left), want[f][0]) ||
				!close_to(fd_score(ctx, e_right), f == 2 ? 4 * log(2) / log(3) : want[f][1]))
				fail("scoring %d: %g and %g", f, fd_score(ctx, e_left), fd_score(ctx, e_right));
			fd_free(ctx);
		}
	}
	case_end();
}

/* ----------------------------------------------------------------
 * Refused inputs
 * ----------------------------------------------------------------
 */

/* Prepare and expect a status */
static void
expect_prepare(const FdTable *t, const FdParams *p, FdStatus want, const char *what)
{
	FdContext  *ctx = NULL;
	FdError		err;
	FdStatus	st;

	case_begin("args: %s", what);
	st = fd_prepare(t, p, &ctx, &err);
	if (st != want)
		fail("got %s (%s), want %s", fd_status_name(st), err.message, fd_status_name(want));
	else if (st != FD_OK && (err.status != st || err.message[0] == '\0'))
		fail("error report not filled");
	fd_free(ctx);
	case_end();
}

/* Malformed tables, hierarchies and criteria */
static void
test_args(void)
{
	TTable		tt;
	FdParams	p;
	uint8_t		none[6] = {0};

	hand_table(&tt, true);
	fd_params_init(&p);
	expect_prepare(&tt.t, &p, FD_OK, "the hand table");
	tt.t.nqi = 0;
	expect_prepare(&tt.t, &p, FD_ERR_ARG, "no quasi-identifier");
	tt.t.nqi = FD_MAX_QI + 1;
	expect_prepare(&tt.t, &p, FD_ERR_ARG, "too many quasi-identifiers");
	tt.t.nqi = 1;
	tt.t.nrows = 0;
	expect_prepare(&tt.t, &p, FD_ERR_ARG, "no rows");
	tt.t.nrows = 6;
	tt.col[0][3] = 2;
	expect_prepare(&tt.t, &p, FD_ERR_ARG, "leaf code out of range");
	tt.col[0][3] = 1;
	tt.sens[2] = 3;
	expect_prepare(&tt.t, &p, FD_ERR_ARG, "sensitive code out of range");
	tt.sens[2] = 1;
	/* distinct values may round to one double; out of order they may not */
	tt.values[1] = tt.values[0];
	expect_prepare(&tt.t, &p, FD_OK, "two sensitive values that round to one double");
	tt.values[1] = tt.values[0] + 10;
	tt.mapv[0][0][1] = 0;
	expect_prepare(&tt.t, &p, FD_ERR_HIERARCHY, "level 0 not the identity");
	tt.mapv[0][0][1] = 1;
	tt.mapv[0][1][1] = 1;
	expect_prepare(&tt.t, &p, FD_ERR_HIERARCHY, "code above the level's count");
	tt.ncodes[0][1] = 2;
	tt.hier[0].nlevels = 3;
	tt.ncodes[0][2] = 2;
	tt.mapv[0][2][0] = 0;
	tt.mapv[0][2][1] = 0;
	tt.mapp[0][2] = tt.mapv[0][2];
	expect_prepare(&tt.t, &p, FD_ERR_HIERARCHY, "a code that holds no leaf");
	tt.ncodes[0][2] = 1;
	expect_prepare(&tt.t, &p, FD_OK, "three levels");
	tt.mapv[0][1][1] = 0;
	tt.ncodes[0][1] = 1;
	tt.mapv[0][2][1] = 1;
	tt.ncodes[0][2] = 2;
	expect_prepare(&tt.t, &p, FD_ERR_HIERARCHY, "levels that do not nest");
	hand_table(&tt, true);
	tt.ncodes[0][0] = 3;
	expect_prepare(&tt.t, &p, FD_ERR_HIERARCHY, "level 0 count differs from leaves");
	hand_table(&tt, true);
	p.k = 0;
	expect_prepare(&tt.t, &p, FD_ERR_ARG, "k = 0");
	p.k = 7;
	expect_prepare(&tt.t, &p, FD_ERR_K_TOO_LARGE, "k above the rows");
	p.max_suppressed = 6;
	expect_prepare(&tt.t, &p, FD_ERR_K_TOO_LARGE, "k above the rows, any suppression");
	fd_params_init(&p);
	p.l_distinct = 4;
	p.max_suppressed = 6;
	expect_prepare(&tt.t, &p, FD_ERR_L_TOO_LARGE, "l above the distinct sensitive values");
	fd_params_init(&p);
	p.rec_l = 4;
	p.rec_c = 2;
	expect_prepare(&tt.t, &p, FD_ERR_L_TOO_LARGE, "recursive l above the distinct values");
	p.rec_l = 2;
	p.rec_c = 0;
	expect_prepare(&tt.t, &p, FD_ERR_ARG, "recursive diversity without c");
	fd_params_init(&p);
	p.t = -0.5;
	expect_prepare(&tt.t, &p, FD_ERR_ARG, "negative t");
	fd_params_init(&p);
	p.priority[0] = 0;
	expect_prepare(&tt.t, &p, FD_ERR_ARG, "zero priority");
	fd_params_init(&p);
	p.max_level[0] = 2;
	expect_prepare(&tt.t, &p, FD_ERR_ARG, "max_level above the hierarchy");
	fd_params_init(&p);
	tt.values[2] = tt.values[1] - 1;
	expect_prepare(&tt.t, &p, FD_ERR_ARG, "numeric values out of order");
	hand_table(&tt, true);
	tt.t.active = none;
	expect_prepare(&tt.t, &p, FD_ERR_ARG, "no active row");
	expect_prepare(&tt.t, NULL, FD_ERR_ARG, "no parameters");

	case_begin("args: no node qualifies; lattice too large; level out of range");
	{
		FdContext  *ctx;
		FdResult   *r = NULL;
		FdSearchOpts o;
		FdMeasures	m;
		FdError		err;
		int			lev[1] = {2};

		hand_table(&tt, true);
		tt.hier[0].nlevels = 1;
		p.k = 3;
		if (fd_prepare(&tt.t, &p, &ctx, &err) != FD_OK)
			fail("prepare: %s", err.message);
		else
		{
			fd_search_opts_init(&o);
			if (fd_search(ctx, &o, &r, &err) != FD_ERR_NO_SOLUTION || r != NULL ||
				err.status != FD_ERR_NO_SOLUTION)
				fail("frost: %s", err.message);
			o.method = FD_METHOD_OPTIMAL;
			if (fd_search(ctx, &o, &r, &err) != FD_ERR_NO_SOLUTION)
				fail("optimal: %s", err.message);
			o.max_nodes = 0;
			if (fd_search(ctx, &o, &r, &err) != FD_ERR_LATTICE_TOO_LARGE)
				fail("max_nodes: %s", err.message);
			if (fd_check(ctx, lev, &m) != FD_ERR_ARG)
				fail("level 2 of a one-level hierarchy accepted");
			fd_free(ctx);
		}
	}
	case_end();
}

/* ----------------------------------------------------------------
 * Random tables against the brute force
 * ----------------------------------------------------------------
 */

/* Advance a node through the lattice bounded by top; false after the last */
static bool
next_node(int *lev, const int *top, int q)
{
	int			a;

	for (a = 0; a < q; a++)
	{
		if (lev[a] < top[a])
		{
			lev[a]++;
			return true;
		}
		lev[a] = 0;
	}
	return false;
}

/* Random criteria, scoring and bounds for a table */
static void
random_params(const TTable *tt, FdParams *p, bool nonmonotone)
{
	static const double cs[4] = {1.0, 1.5, 2.0, 3.0};
	static const double ts[4] = {0.05, 0.2, 0.35, 0.6};
	int			a;

	fd_params_init(p);
	p->k = 1 + rng_below(5);
	if (rng_below(3) == 0)
		p->l_distinct = 1 + rng_below(3);
	if (rng_below(4) == 0)
	{
		p->rec_l = 1 + rng_below(3);
		p->rec_c = cs[rng_below(4)];
	}
	if (rng_below(3) == 0)
		p->t = ts[rng_below(4)];
	if (rng_below(2) == 0)
		p->max_suppressed = rng_below(tt->n / 3 + 1);
	if (nonmonotone)
	{
		/* recursive diversity or closeness with a budget: no tagging */
		if (p->rec_l == 0 && p->t == FD_T_OFF)
			p->t = ts[rng_below(4)];
		p->max_suppressed = 1 + rng_below(tt->n / 3 + 1);
	}
	p->scoring = (FdScoring) rng_below(3);
	p->eta_d = rng_below(2) ? 0.0 : 1.5;
	p->p = rng_below(3);
	for (a = 0; a < tt->q; a++)
	{
		p->priority[a] = 1 + rng_below(3);
		if (rng_below(4) == 0)
			p->max_level[a] = rng_below(tt->hier[a].nlevels);
	}
}

/* Check a search's published rows, classes and measures against the rows */
static void
verify_publication(const TTable *tt, const FdParams *p, const FdResult *r, bool partial)
{
	Naive		nv;
	int			count[MAX_ROWS] = {0};
	int			e[4] = {0};
	int			suppressed = 0;
	int			row;
	int			ci;
	int			cj;
	int			a;

	naive_node(tt, p, r->node, &nv);
	compare_measures(&r->full, &nv.m, tt->q, "result's full-domain measures");
	if (!nv.m.qualifies)
		fail("the chosen node does not qualify");
	for (row = 0; row < tt->n; row++)
	{
		int			c = r->row_class[row];

		if (c == FD_ROW_SUPPRESSED)
		{
			suppressed++;
			if (nv.row_pass[row])
				fail("row %d suppressed from a passing group", row);
			continue;
		}
		if (c < 0 || c >= r->nclasses || !nv.row_pass[row])
		{
			fail("row %d: class %d", row, c);
			continue;
		}
		count[c]++;
		for (a = 0; a < tt->q; a++)
		{
			int			lv = r->class_levels[c * tt->q + a];

			if (lv > r->node[a] || tt->mapv[a][lv][tt->col[a][row]] != r->class_codes[c * tt->q + a])
				fail("row %d: class %d's code on %d does not cover it", row, c, a);
		}
	}
	if (suppressed != r->final.suppressed || suppressed > p->max_suppressed)
		fail("%d rows suppressed, final says %d", suppressed, r->final.suppressed);
	for (ci = 0; ci < r->nclasses; ci++)
	{
		int			cnt[MAX_SENS] = {0};
		int			d = 0;
		bool		pass;

		if (count[ci] != r->class_size[ci])
			fail("class %d: %d rows, size says %d", ci, count[ci], r->class_size[ci]);
		for (row = 0; row < tt->n; row++)
			if (r->row_class[row] == ci)
				cnt[tt->sens[row]]++;
		for (row = 0; row < tt->t.nsens; row++)
			d += cnt[row] > 0;
		pass = count[ci] >= p->k && d >= p->l_distinct &&
			(p->rec_l == 0 || naive_recl(cnt, tt->t.nsens, p->rec_c) >= p->rec_l) &&
			(p->t == FD_T_OFF || naive_emd(tt, cnt, count[ci]) <= p->t + 1e-9);
		if (!pass)
			fail("class %d fails a criterion", ci);
		for (cj = 0; cj < ci; cj++)
			if (memcmp(r->class_levels + ci * tt->q, r->class_levels + cj * tt->q, tt->q) == 0 &&
				memcmp(r->class_codes + ci * tt->q, r->class_codes + cj * tt->q,
					   sizeof(uint32_t) * tt->q) == 0)
				fail("classes %d and %d publish the same tuple", ci, cj);
	}
	/* e counts distinct (level, code) pairs among published rows */
	for (a = 0; a < tt->q; a++)
	{
		bool		seen[MAX_LEV][MAX_LEAVES] = {{0}};

		for (row = 0; row < tt->n; row++)
		{
			int			c = r->row_class[row];

			if (c >= 0 && !seen[r->class_levels[c * tt->q + a]][r->class_codes[c * tt->q + a]])
			{
				seen[r->class_levels[c * tt->q + a]][r->class_codes[c * tt->q + a]] = true;
				e[a]++;
			}
		}
		if (e[a] != r->final.e[a])
			fail("final e[%d] = %d, want %d", a, r->final.e[a], e[a]);
	}
	if (!close_to(r->final.score, naive_score(tt, p, e)))
		fail("final score %g, want %g", r->final.score, naive_score(tt, p, e));
	if (r->final.score < r->full.score - 1e-9)
		fail("refinement lowered the score: %g < %g", r->final.score, r->full.score);
	if (!partial)
		compare_measures(&r->final, &r->full, tt->q, "unrefined final measures");
}

/* Every node checked on one context, in random order, against the rows */
static void
check_all_nodes(const TTable *tt, const FdParams *p)
{
	static int	order[4096][4];
	FdContext  *ctx;
	FdCounters	c;
	FdError		err;
	int			top[4];
	int			lev[4] = {0};
	int			n = 0;
	int			i;
	int			a;

	if (fd_prepare(&tt->t, p, &ctx, &err) != FD_OK)
	{
		fail("prepare: %s", err.message);
		return;
	}
	apply_build_mode(ctx);
	for (a = 0; a < tt->q; a++)
		top[a] = tt->hier[a].nlevels - 1;
	do
		memcpy(order[n++], lev, sizeof(lev));
	while (next_node(lev, top, tt->q));
	for (i = n - 1; i > 0; i--)
	{
		int			j = rng_below(i + 1);
		int			tmp[4];

		memcpy(tmp, order[i], sizeof(tmp));
		memcpy(order[i], order[j], sizeof(tmp));
		memcpy(order[j], tmp, sizeof(tmp));
	}
	for (i = 0; i < 2 * n; i++)
	{
		FdMeasures	m;
		Naive		nv;
		char		what[64];

		if (fd_check(ctx, order[i % n], &m) != FD_OK)
		{
			fail("fd_check failed");
			break;
		}
		naive_node(tt, p, order[i % n], &nv);
		snprintf(what, sizeof(what), "node %d,%d,%d,%d", order[i % n][0], order[i % n][1],
				 order[i % n][2], order[i % n][3]);
		compare_measures(&m, &nv.m, tt->q, what);
	}
	fd_get_counters(ctx, &c);
	if (c.checks != n || c.memo_hits != n || c.rollups + c.scans != n)
		fail("counters: %lld checks, %lld memo hits for %d nodes",
			 (long long) c.checks, (long long) c.memo_hits, n);
	total_rollups += c.rollups;
	total_scans += c.scans;
	fd_free(ctx);
}

/* One search on a fresh context; NULL when it failed (status in *st) */
static FdResult *
run_search(const TTable *tt, const FdParams *p, FdMethod method, bool ext, bool partial,
		   FdStatus *st)
{
	FdContext  *ctx;
	FdResult   *r = NULL;
	FdSearchOpts o;
	FdError		err;

	if ((*st = fd_prepare(&tt->t, p, &ctx, &err)) != FD_OK)
		return NULL;
	apply_build_mode(ctx);
	fd_search_opts_init(&o);
	o.method = method;
	o.extension = ext;
	o.partial = partial;
	*st = fd_search(ctx, &o, &r, &err);
	if (*st != FD_OK && *st != FD_ERR_NO_SOLUTION)
		fail("search: %s", err.message);
	fd_free(ctx);
	return r;
}

/* One random table: checks, optimum and PrivacyFrost2 against brute force */
static void
random_case(uint64_t seed, bool nonmonotone)
{
	TTable		tt;
	FdParams	p;
	FdStatus	st;
	FdResult   *r;
	int			top[4];
	int			lev[4] = {0};
	double		best = -1;
	bool		any = false;
	bool		monotone;
	int			distinct = 0;
	int			seen[MAX_SENS] = {0};
	int			i;
	int			a;

	rng_seed(seed);
	random_table(&tt, 1 + rng_below(MAX_SENS), rng_below(2) == 0);
	random_params(&tt, &p, nonmonotone);
	case_begin("random %llu (n=%d q=%d k=%d l=%d c=%g,%d t=%g sup=%d score=%d build=%d)",
			   (unsigned long long) seed, tt.n, tt.q, p.k, p.l_distinct, p.rec_c, p.rec_l,
			   p.t, p.max_suppressed, (int) p.scoring, build_mode);
	if (p.k > tt.n)
		p.k = tt.n;
	for (i = 0; i < tt.n; i++)
		if (!seen[tt.sens[i]]++)
			distinct++;
	if (p.l_distinct > distinct || p.rec_l > distinct)
	{
		FdContext  *ctx;
		FdError		err;

		if (fd_prepare(&tt.t, &p, &ctx, &err) != FD_ERR_L_TOO_LARGE)
			fail("l above %d distinct values accepted", distinct);
		tables_refused++;
		case_end();
		return;
	}
	check_all_nodes(&tt, &p);

	for (a = 0; a < tt.q; a++)
		top[a] = p.max_level[a] < 0 ? tt.hier[a].nlevels - 1 : p.max_level[a];
	do
	{
		Naive		nv;

		naive_node(&tt, &p, lev, &nv);
		if (nv.m.qualifies && (!any || nv.m.score > best))
			best = nv.m.score;
		any = any || nv.m.qualifies;
	} while (next_node(lev, top, tt.q));

	tables_solved += any;
	r = run_search(&tt, &p, FD_METHOD_OPTIMAL, true, false, &st);
	if (!any && st != FD_ERR_NO_SOLUTION)
		fail("optimal found a node where none qualifies");
	if (any && (r == NULL || !close_to(r->full.score, best)))
		fail("optimal score %g, brute force %g", r ? r->full.score : -1.0, best);
	if (r != NULL)
	{
		verify_publication(&tt, &p, r, false);
		if (r->counters.checks > r->counters.lattice_nodes + 1)
			fail("optimal checked %lld of %lld nodes", (long long) r->counters.checks,
				 (long long) r->counters.lattice_nodes);
		fd_result_free(r);
	}

	monotone = p.max_suppressed == 0 || (p.rec_l == 0 && p.t == FD_T_OFF);
	for (i = 0; i < 3; i++)
	{
		bool		partial = i == 2;

		r = run_search(&tt, &p, FD_METHOD_FROST, i > 0, partial, &st);
		if (r == NULL)
		{
			if (any && monotone)
				fail("PrivacyFrost2 (variant %d) found nothing, optimum %g", i, best);
			continue;
		}
		for (a = 0; a < tt.q; a++)
			if (r->node[a] > top[a])
				fail("PrivacyFrost2 went above max_level on %d", a);
		if (r->full.score > best + 1e-9)
			fail("PrivacyFrost2 score %g above the optimum %g", r->full.score, best);
		verify_publication(&tt, &p, r, partial);
		frost_found++;
		frost_optimal += close_to(r->full.score, best);
		total_refined += r->nrefined;
		fd_result_free(r);
	}
	case_end();
}

/* Many random tables */
static void
test_random(int ntables)
{
	int			before = cases_failed;
	int			i;

	for (i = 0; i < ntables; i++)
	{
		build_mode = i % 3;
		random_case(1000 + i, i % 4 == 3);
	}
	build_mode = 0;
	if (total_rollups == 0 || total_scans == 0)
	{
		case_begin("random: both roll-ups and scans exercised");
		fail("%lld roll-ups, %lld scans", (long long) total_rollups, (long long) total_scans);
		case_end();
	}
	printf("random: %d tables (%d refused for l, %d with a qualifying node), "
		   "%lld roll-ups, %lld scans; PrivacyFrost2 found %d nodes, %d optimal, "
		   "%lld refined classes%s\n", ntables, tables_refused, tables_solved,
		   (long long) total_rollups, (long long) total_scans, frost_found, frost_optimal,
		   (long long) total_refined, cases_failed > before ? " (with failures)" : "");
}

/* ----------------------------------------------------------------
 * Larger lattices: the search against every node's check
 * ----------------------------------------------------------------
 */
#define BIG_Q		6
#define BIG_LEAVES	16
#define BIG_LEV		4
#define BIG_ROWS	400

typedef struct BigTable
{
	uint32_t	map[BIG_Q][BIG_LEV][BIG_LEAVES];
	const uint32_t *mapp[BIG_Q][BIG_LEV];
	uint32_t	ncodes[BIG_Q][BIG_LEV];
	FdHierarchy hier[BIG_Q];
	uint32_t	col[BIG_Q][BIG_ROWS];
	const uint32_t *colp[BIG_Q];
	uint32_t	sens[BIG_ROWS];
	FdTable		t;
} BigTable;

/* A random table of 4 to 6 QIs with up to 4 levels each, skewed codes */
static void
big_table(BigTable *bt)
{
	int			a;
	int			l;
	int			x;
	int			r;

	memset(bt, 0, sizeof(*bt));
	bt->t.nqi = 4 + rng_below(BIG_Q - 3);
	bt->t.nrows = 50 + rng_below(BIG_ROWS - 50);
	bt->t.nsens = 1 + rng_below(5);
	for (a = 0; a < bt->t.nqi; a++)
	{
		FdHierarchy *h = &bt->hier[a];

		h->nleaves = 2 + rng_below(BIG_LEAVES - 1);
		h->nlevels = 2 + rng_below(BIG_LEV - 1);
		bt->ncodes[a][0] = h->nleaves;
		for (x = 0; x < h->nleaves; x++)
			bt->map[a][0][x] = x;
		for (l = 1; l < h->nlevels; l++)
		{
			uint32_t	m = bt->ncodes[a][l - 1];
			uint32_t	mm = l == h->nlevels - 1 ? 1 : (m + 1) / 2;

			bt->ncodes[a][l] = mm;
			for (x = 0; x < h->nleaves; x++)
				bt->map[a][l][x] = bt->map[a][l - 1][x] * mm / m;
		}
		for (l = 0; l < h->nlevels; l++)
			bt->mapp[a][l] = bt->map[a][l];
		h->map = bt->mapp[a];
		h->ncodes = bt->ncodes[a];
		for (r = 0; r < bt->t.nrows; r++)
			bt->col[a][r] = rng_below(3) ? (uint32_t) rng_below(1 + rng_below(h->nleaves)) :
				(uint32_t) rng_below(h->nleaves);
		bt->colp[a] = bt->col[a];
	}
	for (r = 0; r < bt->t.nrows; r++)
		bt->sens[r] = rng_below(bt->t.nsens);
	bt->t.qi = bt->colp;
	bt->t.hier = bt->hier;
	bt->t.sens = bt->sens;
	bt->t.sens_numeric = rng_below(2);
}

/* Random criteria for a larger table; one in three without suppression */
static void
big_params(const BigTable *bt, FdParams *p)
{
	int			a;

	fd_params_init(p);
	p->k = 1 + rng_below(8);
	if (rng_below(3) == 0)
		p->l_distinct = 1 + rng_below(2);
	if (rng_below(4) == 0)
	{
		p->rec_l = 1 + rng_below(2);
		p->rec_c = 1.5 + rng_below(3);
	}
	if (rng_below(3) == 0)
		p->t = 0.1 + 0.2 * rng_below(3);
	if (rng_below(3) == 0)
		p->max_suppressed = rng_below(bt->t.nrows / 10 + 1);
	p->scoring = (FdScoring) rng_below(3);
	for (a = 0; a < bt->t.nqi; a++)
	{
		p->priority[a] = 1 + rng_below(3);
		if (rng_below(5) == 0)
			p->max_level[a] = rng_below(bt->hier[a].nlevels);
	}
}

/* The best qualifying score over every node, by fd_check; -1 when none */
static double
big_brute_force(const BigTable *bt, const FdParams *p)
{
	FdContext  *ctx;
	FdError		err;
	int			top[BIG_Q];
	int			lev[BIG_Q] = {0};
	double		best = -1;
	int			a;

	if (fd_prepare(&bt->t, p, &ctx, &err) != FD_OK)
		return -2;
	for (a = 0; a < bt->t.nqi; a++)
		top[a] = p->max_level[a] < 0 ? bt->hier[a].nlevels - 1 : p->max_level[a];
	do
	{
		FdMeasures	m;

		if (fd_check(ctx, lev, &m) != FD_OK)
			fail("check failed");
		if (m.qualifies && m.score > best)
			best = m.score;
	} while (next_node(lev, top, bt->t.nqi));
	fd_free(ctx);
	return best;
}

/* Optimal on larger random lattices equals the best of every node's check */
static void
test_big_lattices(int ntables)
{
	int			refused = 0;
	int			solved = 0;
	int			i;

	for (i = 0; i < ntables; i++)
	{
		BigTable	bt;
		FdParams	p;
		FdContext  *ctx;
		FdResult   *r = NULL;
		FdSearchOpts o;
		FdError		err;
		FdStatus	st;
		double		best;

		rng_seed(9000 + i);
		big_table(&bt);
		big_params(&bt, &p);
		case_begin("big %d (n=%d q=%d k=%d l=%d c=%g,%d t=%g sup=%d score=%d)", i,
				   bt.t.nrows, bt.t.nqi, p.k, p.l_distinct, p.rec_c, p.rec_l, p.t,
				   p.max_suppressed, (int) p.scoring);
		if ((best = big_brute_force(&bt, &p)) < -1)
		{
			refused++;
			case_end();
			continue;
		}
		solved += best >= 0;
		fd_search_opts_init(&o);
		o.method = FD_METHOD_OPTIMAL;
		if (fd_prepare(&bt.t, &p, &ctx, &err) != FD_OK)
			fail("prepare: %s", err.message);
		else
		{
			st = fd_search(ctx, &o, &r, &err);
			if (best < 0 && st != FD_ERR_NO_SOLUTION)
				fail("optimal found a node where none qualifies");
			if (best >= 0 && (st != FD_OK || !close_to(r->full.score, best)))
				fail("optimal score %g, every node's best %g", r ? r->full.score : -1.0, best);
			fd_result_free(r);
			fd_free(ctx);
		}
		case_end();
	}
	printf("big: %d tables (%d refused for k or l, %d with a qualifying node)\n", ntables,
		   refused, solved);
}

/* ----------------------------------------------------------------
 * A table too wide for packed keys
 * ----------------------------------------------------------------
 */
#define WIDE_Q		12
#define WIDE_LEAVES	64
#define WIDE_ROWS	60

/* Naively: the groups at a node (bit a set: QI a at '*') and the least size */
static int
wide_min_group(uint32_t cols[WIDE_Q][WIDE_ROWS], int node, int *groups)
{
	int			least = WIDE_ROWS;
	int			r;
	int			s;
	int			a;

	*groups = 0;
	for (r = 0; r < WIDE_ROWS; r++)
	{
		int			size = 0;
		bool		first = true;

		for (s = 0; s < WIDE_ROWS; s++)
		{
			bool		same = true;

			for (a = 0; a < WIDE_Q && same; a++)
				same = (node >> a & 1) || cols[a][r] == cols[a][s];
			if (same && s < r)
				first = false;
			size += same;
		}
		if (first)
		{
			(*groups)++;
			if (size < least)
				least = size;
		}
	}
	return least;
}

/*
 * Rows for the wide table: 25 random rows twice each, then 10 copies of
 * some of them with one or two attributes changed
 */
static void
wide_rows(uint32_t cols[WIDE_Q][WIDE_ROWS], int *e_full)
{
	int			a;
	int			i;

	for (i = 0; i < 25; i++)
		for (a = 0; a < WIDE_Q; a++)
			cols[a][2 * i] = cols[a][2 * i + 1] = rng_below(WIDE_LEAVES);
	for (i = 50; i < WIDE_ROWS; i++)
	{
		int			from = rng_below(50);

		for (a = 0; a < WIDE_Q; a++)
			cols[a][i] = cols[a][from];
		cols[rng_below(WIDE_Q)][i] = rng_below(WIDE_LEAVES);
		if (rng_below(2))
			cols[rng_below(WIDE_Q)][i] = rng_below(WIDE_LEAVES);
	}
	for (a = 0; a < WIDE_Q; a++)
	{
		bool		seen[WIDE_LEAVES] = {0};

		e_full[a] = 0;
		for (i = 0; i < WIDE_ROWS; i++)
		{
			e_full[a] += !seen[cols[a][i]];
			seen[cols[a][i]] = true;
		}
	}
}

/* Every node of the wide table checked against the naive count; the optimum */
static double
wide_check_all(FdContext *ctx, uint32_t cols[WIDE_Q][WIDE_ROWS], const int *e_full)
{
	double		best = -1;
	int			node;
	int			a;

	for (node = 0; node < 1 << WIDE_Q; node++)
	{
		int			lev[WIDE_Q];
		FdMeasures	m;
		int			groups;
		int			least = wide_min_group(cols, node, &groups);
		double		score = 0;

		for (a = 0; a < WIDE_Q; a++)
		{
			lev[a] = node >> a & 1;
			score += lev[a] ? 1 : e_full[a];
		}
		if (fd_check(ctx, lev, &m) != FD_OK)
			fail("check failed");
		else if (m.qualifies != (least >= 2) ||
				 (m.qualifies && (m.groups != groups || m.min_group != least ||
								  !close_to(m.score, score))))
			fail("node %x: qualifies %d, %d groups, least %d; want %d, %d, %d", node,
				 m.qualifies, m.groups, m.min_group, least >= 2, groups, least);
		if (least >= 2 && score > best)
			best = score;
	}
	return best;
}

/* Twelve QIs of 64 leaves (72 bits of codes): every node and the optimum, naively */
static void
test_wide(void)
{
	static uint32_t leaf[WIDE_LEAVES];
	static uint32_t root[WIDE_LEAVES];
	static uint32_t cols[WIDE_Q][WIDE_ROWS];
	static uint32_t sens[WIDE_ROWS];
	static const uint32_t ncodes[2] = {WIDE_LEAVES, 1};
	static const uint32_t *maps[2] = {leaf, root};
	FdHierarchy hier[WIDE_Q];
	const uint32_t *qi[WIDE_Q];
	FdTable		t;
	FdParams	p;
	FdSearchOpts o;
	FdContext  *ctx;
	FdResult   *r;
	FdError		err;
	double		best;
	int			e_full[WIDE_Q];
	int			a;

	case_begin("wide");
	rng_seed(99);
	for (a = 0; a < WIDE_LEAVES; a++)
		leaf[a] = a;
	wide_rows(cols, e_full);
	for (a = 0; a < WIDE_Q; a++)
	{
		hier[a].nleaves = WIDE_LEAVES;
		hier[a].nlevels = 2;
		hier[a].map = maps;
		hier[a].ncodes = ncodes;
		qi[a] = cols[a];
	}
	memset(&t, 0, sizeof(t));
	t.nrows = WIDE_ROWS;
	t.nqi = WIDE_Q;
	t.qi = qi;
	t.hier = hier;
	for (a = 0; a < WIDE_ROWS; a++)
		sens[a] = a % 2;
	t.sens = sens;
	t.nsens = 2;
	fd_params_init(&p);
	p.k = 2;
	p.l_distinct = 1;			/* always met; keeps histograms */
	if (fd_prepare(&t, &p, &ctx, &err) != FD_OK)
	{
		fail("prepare: %s", err.message);
		case_end();
		return;
	}
	if (ctx->packed)
		fail("72 bits of codes packed");
	best = wide_check_all(ctx, cols, e_full);
	fd_free(ctx);
	fd_search_opts_init(&o);
	o.method = FD_METHOD_OPTIMAL;
	if (fd_prepare(&t, &p, &ctx, &err) != FD_OK || fd_search(ctx, &o, &r, &err) != FD_OK)
		fail("optimal: %s", err.message);
	else
	{
		if (!close_to(r->full.score, best) || best <= 12)
			fail("optimal score %g, naive %g", r->full.score, best);
		fd_result_free(r);
	}
	fd_free(ctx);
	case_end();
}

/* ----------------------------------------------------------------
 * Pre-sampling
 * ----------------------------------------------------------------
 */

/* Pre-sampling against a naive count, and removed rows in the result */
static void
test_presample(void)
{
	int			trial;

	for (trial = 0; trial < 40; trial++)
	{
		TTable		tt;
		FdPresample ps;
		FdParams	p;
		FdError		err;
		uint8_t		keep[MAX_ROWS];
		uint8_t		keep2[MAX_ROWS];
		int			removed;
		int			want = 0;
		int			r;
		int			s;
		int			a;

		rng_seed(5000 + trial);
		random_table(&tt, 3, false);
		case_begin("presample %d", trial);
		memset(&ps, 0, sizeof(ps));
		for (a = 0; a < tt.q; a++)
			ps.level[a] = rng_below(tt.hier[a].nlevels + 1);
		ps.kprime = 1 + rng_below(4);
		if (fd_presample(&tt.t, &ps, keep, &removed, &err) != FD_OK)
			fail("presample: %s", err.message);
		for (r = 0; r < tt.n; r++)
		{
			int			lev[4];
			int			size = 0;

			for (a = 0; a < tt.q; a++)
				lev[a] = ps.level[a] < tt.hier[a].nlevels ? ps.level[a] : tt.hier[a].nlevels - 1;
			for (s = 0; s < tt.n; s++)
				size += same_tuple(&tt, lev, r, s);
			if ((size >= ps.kprime) != (keep[r] == 1))
				fail("row %d: group of %d, kept %d", r, size, keep[r]);
			want += size < ps.kprime;
		}
		if (removed != want)
			fail("removed %d, want %d", removed, want);
		ps.fraction = 0.5;
		ps.seed = 42;
		if (fd_presample(&tt.t, &ps, keep, &removed, &err) != FD_OK ||
			fd_presample(&tt.t, &ps, keep2, &removed, &err) != FD_OK ||
			memcmp(keep, keep2, tt.n) != 0)
			fail("the seeded sample is not reproducible");
		tt.t.active = keep;
		fd_params_init(&p);
		if (removed < tt.n)
		{
			FdContext  *ctx;
			FdResult   *res;

			if (fd_prepare(&tt.t, &p, &ctx, &err) != FD_OK || fd_search(ctx, NULL, &res, &err) != FD_OK)
				fail("search after presampling: %s", err.message);
			else
			{
				for (r = 0; r < tt.n; r++)
					if ((res->row_class[r] == FD_ROW_REMOVED) != (keep[r] == 0))
						fail("row %d: class %d, kept %d", r, res->row_class[r], keep[r]);
				if (res->removed != removed)
					fail("result counts %d removed, want %d", res->removed, removed);
				fd_result_free(res);
				fd_free(ctx);
			}
		}
		case_end();
	}
}

/* ----------------------------------------------------------------
 * Allocation failures
 * ----------------------------------------------------------------
 */
static int64_t alloc_left;

/* malloc that fails once alloc_left reaches 0 */
static void *
failing_malloc(size_t size)
{
	if (alloc_left-- <= 0)
		return NULL;
	return malloc(size);
}

/* realloc that fails once alloc_left reaches 0 */
static void *
failing_realloc(void *p, size_t size)
{
	if (alloc_left-- <= 0)
		return NULL;
	return realloc(p, size);
}

/* Every allocation failing in turn: FD_ERR_NOMEM, nothing else, no leak */
static void
test_nomem(void)
{
	int64_t		fail_at;
	bool		completed = false;

	case_begin("nomem");
	for (fail_at = 0; fail_at < 5000 && !completed; fail_at++)
	{
		TTable		tt;
		FdParams	p;
		FdContext  *ctx = NULL;
		FdResult   *r = NULL;
		FdSearchOpts o;
		FdError		err;
		FdStatus	st;

		rng_seed(77);
		random_table(&tt, 4, true);
		fd_params_init(&p);
		p.k = 2;
		p.l_distinct = 1;
		p.max_suppressed = 3;
		fd_search_opts_init(&o);
		o.partial = true;
		ke_set_allocator(failing_malloc, failing_realloc, free);
		alloc_left = fail_at;
		st = fd_prepare(&tt.t, &p, &ctx, &err);
		if (st == FD_OK)
		{
			st = fd_search(ctx, &o, &r, &err);
			fd_result_free(r);
			r = NULL;
		}
		if (st == FD_OK)
		{
			o.method = FD_METHOD_OPTIMAL;
			st = fd_search(ctx, &o, &r, &err);
			fd_result_free(r);
		}
		fd_free(ctx);
		ke_set_allocator(malloc, realloc, free);
		if (st != FD_OK && st != FD_ERR_NOMEM)
			fail("allocation %lld failing gave %s", (long long) fail_at, fd_status_name(st));
		completed = st == FD_OK && alloc_left > 0;
	}
	if (!completed)
		fail("never completed");
	case_end();
}

/* ----------------------------------------------------------------
 * Main
 * ----------------------------------------------------------------
 */
int
main(int argc, char **argv)
{
	int			ntables = 3000;

	if (argc > 1)
		ntables = atoi(argv[1]);
	test_hand();
	test_args();
	printf("hand, args: checked\n");
	test_random(ntables);
	test_big_lattices(ntables / 10);
	test_wide();
	test_presample();
	test_nomem();
	printf("%d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed > 0 ? 1 : 0;
}

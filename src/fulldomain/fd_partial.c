/*
 * fd_partial.c
 *		The published table of a node: its classes, each row's class,
 *		partial-domain de-generalization of single groups (PrivacyFrost2,
 *		Section 5.4 step 4), and pre-sampling (Section 5.1).
 *
 * A class is a run of rows in perm[] sharing their codes at the class's
 * own levels.  It starts as a passing group of the full-domain node; a
 * refinement splits it one level finer on one attribute into parts that
 * each pass every criterion, and the parts become classes.  Because levels
 * nest, two classes descended from different groups can never publish the
 * same tuple: their codes differ at the node's level on some attribute,
 * and so at every finer level too.
 *
 * The score of a mixed-level table counts, per attribute, the distinct
 * (level, code) pairs among published rows (fd_score.c, item 6), kept as
 * row counts per level and code so that a split changes it in time
 * proportional to its parts.
 */
#include <string.h>

#include "ke_alloc.h"
#include "fd_int.h"

typedef struct Classes
{
	FdContext  *ctx;
	int			n;
	int			cap;
	int		   *start;			/* into perm */
	int		   *len;
	uint8_t    *levels;			/* [cap * nqi] */
	uint32_t   *codes;			/* [cap * nqi] */
	int		   *perm;			/* [nrows] context rows, class by class */
	int		   *pub[FD_MAX_QI][FD_MAX_LEVELS];	/* published rows per code */
	int			e[FD_MAX_QI];
	/* scratch for a split */
	int		   *part_of;		/* [largest ncodes]: part of a code, or -1 */
	uint32_t   *part_code;		/* [nrows] */
	int		   *part_len;		/* [nrows] */
	uint32_t   *part_hist;		/* [parts * nhist] */
	int		   *tmp;			/* [nrows] */
} Classes;

/* Add a class (rows perm[start .. start + len - 1]); false when out of memory */
static bool
class_add(Classes *cs, int start, int len, const uint8_t *levels, const uint32_t *codes)
{
	int			q = cs->ctx->nqi;

	if (cs->n == cs->cap)
	{
		int			cap = cs->cap * 2;
		void	   *p;

		if ((p = ke_realloc(cs->start, sizeof(int) * cap)) == NULL)
			return false;
		cs->start = p;
		if ((p = ke_realloc(cs->len, sizeof(int) * cap)) == NULL)
			return false;
		cs->len = p;
		if ((p = ke_realloc(cs->levels, (size_t) cap * q)) == NULL)
			return false;
		cs->levels = p;
		if ((p = ke_realloc(cs->codes, sizeof(uint32_t) * (size_t) cap * q)) == NULL)
			return false;
		cs->codes = p;
		cs->cap = cap;
	}
	cs->start[cs->n] = start;
	cs->len[cs->n] = len;
	memcpy(cs->levels + (size_t) cs->n * q, levels, q);
	memcpy(cs->codes + (size_t) cs->n * q, codes, sizeof(uint32_t) * q);
	cs->n++;
	return true;
}

/* Count len published rows at (a, level, code) in or out, keeping e[a] */
static void
pub_add(Classes *cs, int a, int level, uint32_t code, int len)
{
	int		   *c = &cs->pub[a][level][code];

	if (*c == 0 && len > 0)
		cs->e[a]++;
	*c += len;
	if (*c == 0 && len < 0)
		cs->e[a]--;
}

/* Allocate a class set and its scratch; false when out of memory */
static bool
classes_init(Classes *cs, FdContext *ctx)
{
	uint32_t	maxcodes = 1;
	int			a;
	int			l;

	memset(cs, 0, sizeof(*cs));
	cs->ctx = ctx;
	cs->cap = 64;
	cs->start = ke_malloc(sizeof(int) * cs->cap);
	cs->len = ke_malloc(sizeof(int) * cs->cap);
	cs->levels = ke_malloc((size_t) cs->cap * ctx->nqi);
	cs->codes = ke_malloc(sizeof(uint32_t) * (size_t) cs->cap * ctx->nqi);
	cs->perm = ke_malloc(sizeof(int) * ctx->nrows);
	cs->part_code = ke_malloc(sizeof(uint32_t) * ctx->nrows);
	cs->part_len = ke_malloc(sizeof(int) * ctx->nrows);
	cs->tmp = ke_malloc(sizeof(int) * ctx->nrows);
	if (!cs->start || !cs->len || !cs->levels || !cs->codes || !cs->perm ||
		!cs->part_code || !cs->part_len || !cs->tmp)
		return false;
	for (a = 0; a < ctx->nqi; a++)
		for (l = 0; l < ctx->nlevels[a]; l++)
		{
			if (ctx->ncodes[a][l] > maxcodes)
				maxcodes = ctx->ncodes[a][l];
			if ((cs->pub[a][l] = ke_calloc(ctx->ncodes[a][l], sizeof(int))) == NULL)
				return false;
		}
	if ((cs->part_of = ke_malloc(sizeof(int) * maxcodes)) == NULL)
		return false;
	memset(cs->part_of, 0xff, sizeof(int) * maxcodes);
	return true;
}

/* Free a class set */
static void
classes_free(Classes *cs)
{
	int			a;
	int			l;

	ke_free(cs->start);
	ke_free(cs->len);
	ke_free(cs->levels);
	ke_free(cs->codes);
	ke_free(cs->perm);
	ke_free(cs->part_of);
	ke_free(cs->part_code);
	ke_free(cs->part_len);
	ke_free(cs->part_hist);
	ke_free(cs->tmp);
	for (a = 0; a < FD_MAX_QI; a++)
		for (l = 0; l < FD_MAX_LEVELS; l++)
			ke_free(cs->pub[a][l]);
}

/*
 * Split class ci one level finer on attribute a into its parts: the
 * number of parts, or 0 when one fails a criterion, -1 when out of memory.
 * Rows of the class are left ordered part by part.
 */
static int
split_parts(Classes *cs, int ci, int a)
{
	FdContext  *ctx = cs->ctx;
	const uint32_t *lm = ctx->map[a][cs->levels[(size_t) ci * ctx->nqi + a] - 1];
	int		   *rows = cs->perm + cs->start[ci];
	int			len = cs->len[ci];
	int			np = 0;
	int			i;
	int			j;
	bool		ok = true;

	for (i = 0; i < len; i++)
	{
		uint32_t	c = lm[ctx->qi[a][rows[i]]];

		if (cs->part_of[c] < 0)
		{
			cs->part_of[c] = np;
			cs->part_code[np] = c;
			cs->part_len[np++] = 0;
		}
		cs->part_len[cs->part_of[c]]++;
	}
	if (ctx->nhist > 0)
	{
		ke_free(cs->part_hist);
		if ((cs->part_hist = ke_calloc((size_t) np * ctx->nhist, sizeof(uint32_t))) == NULL)
			ok = false;
	}
	/* order the rows part by part (counting sort, stable) */
	for (i = 0, j = 0; i < np; i++)
	{
		int			n = cs->part_len[i];

		cs->part_len[i] = j;
		j += n;
	}
	for (i = 0; i < len; i++)
	{
		int			p = cs->part_of[lm[ctx->qi[a][rows[i]]]];

		cs->tmp[cs->part_len[p]++] = rows[i];
		if (ok && ctx->nhist > 0)
			cs->part_hist[(size_t) p * ctx->nhist + ctx->sens[rows[i]]]++;
	}
	memcpy(rows, cs->tmp, sizeof(int) * len);
	for (i = np - 1; i > 0; i--)
		cs->part_len[i] -= cs->part_len[i - 1];
	for (i = 0; i < np; i++)
		cs->part_of[cs->part_code[i]] = -1;
	if (!ok)
		return -1;
	for (i = 0; i < np && ok; i++)
	{
		int			d;
		int			rl;
		double		emd;

		ok = fd_group_passes(ctx, cs->part_len[i],
							 ctx->nhist ? cs->part_hist + (size_t) i * ctx->nhist : NULL,
							 &d, &rl, &emd);
	}
	return ok ? np : 0;
}

/* Try de-generalizing class ci on attribute a; *done when it was split */
static FdStatus
try_split(Classes *cs, int ci, int a, bool *done)
{
	FdContext  *ctx = cs->ctx;
	int			q = ctx->nqi;
	uint8_t		lev[FD_MAX_QI];
	uint32_t	codes[FD_MAX_QI];
	int			l = cs->levels[(size_t) ci * q + a];
	uint32_t	old = cs->codes[(size_t) ci * q + a];
	double		before = fd_score(ctx, cs->e);
	int			np;
	int			i;
	int			off;

	*done = false;
	if ((np = split_parts(cs, ci, a)) < 0)
		return FD_ERR_NOMEM;
	if (np == 0)
		return FD_OK;
	pub_add(cs, a, l, old, -cs->len[ci]);
	for (i = 0; i < np; i++)
		pub_add(cs, a, l - 1, cs->part_code[i], cs->part_len[i]);
	if (fd_score(ctx, cs->e) < before)
	{
		for (i = 0; i < np; i++)
			pub_add(cs, a, l - 1, cs->part_code[i], -cs->part_len[i]);
		pub_add(cs, a, l, old, cs->len[ci]);
		return FD_OK;
	}
	memcpy(lev, cs->levels + (size_t) ci * q, q);
	memcpy(codes, cs->codes + (size_t) ci * q, sizeof(uint32_t) * q);
	lev[a] = (uint8_t) (l - 1);
	off = cs->start[ci] + cs->part_len[0];
	for (i = 1; i < np; i++)
	{
		codes[a] = cs->part_code[i];
		if (!class_add(cs, off, cs->part_len[i], lev, codes))
			return FD_ERR_NOMEM;
		off += cs->part_len[i];
	}
	cs->len[ci] = cs->part_len[0];
	cs->levels[(size_t) ci * q + a] = (uint8_t) (l - 1);
	cs->codes[(size_t) ci * q + a] = cs->part_code[0];
	*done = true;
	return FD_OK;
}

/* Partial-domain de-generalization of every class, highest priority first */
static FdStatus
refine(Classes *cs)
{
	int			order[FD_MAX_QI];
	int			q = cs->ctx->nqi;
	int			ci;

	fd_priority_order(cs->ctx, order);
	for (ci = 0; ci < cs->n; ci++)
	{
		bool		done = true;

		while (done)
		{
			int			i;

			done = false;
			for (i = q - 1; i >= 0 && !done; i--)
			{
				int			a = order[i];
				FdStatus	st;

				if (cs->levels[(size_t) ci * q + a] == 0)
					continue;
				if ((st = try_split(cs, ci, a, &done)) != FD_OK)
					return st;
			}
		}
	}
	return FD_OK;
}

/* The measures of the published classes */
static FdStatus
class_measures(Classes *cs, FdMeasures *m, int suppressed, int failing)
{
	FdContext  *ctx = cs->ctx;
	uint32_t   *hist = NULL;
	int			ci;

	memset(m, 0, sizeof(*m));
	if (ctx->nhist > 0 && (hist = ke_malloc(sizeof(uint32_t) * ctx->nhist)) == NULL)
		return FD_ERR_NOMEM;
	for (ci = 0; ci < cs->n; ci++)
	{
		int			d;
		int			rl;
		double		emd;
		int			i;

		if (hist != NULL)
		{
			memset(hist, 0, sizeof(uint32_t) * ctx->nhist);
			for (i = 0; i < cs->len[ci]; i++)
				hist[ctx->sens[cs->perm[cs->start[ci] + i]]]++;
		}
		(void) fd_group_passes(ctx, cs->len[ci], hist, &d, &rl, &emd);
		if (ci == 0 || cs->len[ci] < m->min_group)
			m->min_group = cs->len[ci];
		if (ci == 0 || d < m->min_distinct)
			m->min_distinct = d;
		if (ci == 0 || rl < m->min_recursive_l)
			m->min_recursive_l = rl;
		if (emd > m->max_emd)
			m->max_emd = emd;
	}
	ke_free(hist);
	m->groups = cs->n;
	m->suppressed = suppressed;
	m->failing_groups = failing;
	m->qualifies = suppressed <= ctx->p.max_suppressed && cs->n > 0;
	memcpy(m->e, cs->e, sizeof(int) * ctx->nqi);
	m->score = fd_score(ctx, m->e);
	return FD_OK;
}

/* Classes from the node's passing groups; rows of failing ones marked */
static FdStatus
initial_classes(Classes *cs, const int *node, int *row_group, int *suppressed,
				int *failing)
{
	FdContext  *ctx = cs->ctx;
	FdGroups   *g = fd_groups_scan(ctx, node, row_group);
	int		   *first = NULL;
	int			gi;
	int			r;
	int			a;

	*suppressed = *failing = 0;
	if (g == NULL || (first = ke_malloc(sizeof(int) * (g->ngroups + 1))) == NULL)
	{
		fd_groups_free(g);
		return FD_ERR_NOMEM;
	}
	/* rows ordered by group; a failing group's class index is -1 */
	memset(first, 0, sizeof(int) * (g->ngroups + 1));
	for (r = 0; r < ctx->nrows; r++)
		first[row_group[r] + 1]++;
	for (gi = 0; gi < g->ngroups; gi++)
		first[gi + 1] += first[gi];
	for (r = 0; r < ctx->nrows; r++)
		cs->perm[first[row_group[r]]++] = r;
	for (gi = g->ngroups; gi > 0; gi--)
		first[gi] = first[gi - 1];
	first[0] = 0;
	for (gi = 0; gi < g->ngroups; gi++)
	{
		int			d;
		int			rl;
		double		emd;

		if (!fd_group_passes(ctx, g->size[gi],
							 ctx->nhist ? g->hist + (size_t) gi * ctx->nhist : NULL,
							 &d, &rl, &emd))
		{
			*suppressed += g->size[gi];
			(*failing)++;
			continue;
		}
		if (!class_add(cs, first[gi], g->size[gi], g->levels, g->codes + (size_t) gi * ctx->nqi))
		{
			ke_free(first);
			fd_groups_free(g);
			return FD_ERR_NOMEM;
		}
		for (a = 0; a < ctx->nqi; a++)
			pub_add(cs, a, node[a], g->codes[(size_t) gi * ctx->nqi + a], g->size[gi]);
	}
	ke_free(first);
	fd_groups_free(g);
	return FD_OK;
}

/* Copy the classes into the result, each row's class by the caller's numbering */
static FdStatus
fill_result(Classes *cs, FdResult *r)
{
	FdContext  *ctx = cs->ctx;
	int			q = ctx->nqi;
	int			ci;
	int			i;
	int			a;

	r->nclasses = cs->n;
	r->class_levels = ke_malloc((size_t) (cs->n + 1) * q);
	r->class_codes = ke_malloc(sizeof(uint32_t) * (size_t) (cs->n + 1) * q);
	r->class_size = ke_malloc(sizeof(int) * (cs->n + 1));
	r->row_class = ke_malloc(sizeof(int) * ctx->orig_nrows);
	if (!r->class_levels || !r->class_codes || !r->class_size || !r->row_class)
		return FD_ERR_NOMEM;
	memcpy(r->class_levels, cs->levels, (size_t) cs->n * q);
	memcpy(r->class_codes, cs->codes, sizeof(uint32_t) * (size_t) cs->n * q);
	for (i = 0; i < ctx->orig_nrows; i++)
		r->row_class[i] = FD_ROW_REMOVED;
	for (i = 0; i < ctx->nrows; i++)
		r->row_class[ctx->row_id[i]] = FD_ROW_SUPPRESSED;
	r->nrefined = 0;
	for (ci = 0; ci < cs->n; ci++)
	{
		r->class_size[ci] = cs->len[ci];
		for (i = 0; i < cs->len[ci]; i++)
			r->row_class[ctx->row_id[cs->perm[cs->start[ci] + i]]] = ci;
		for (a = 0; a < q; a++)
			if (cs->levels[(size_t) ci * q + a] != r->node[a])
			{
				r->nrefined++;
				break;
			}
	}
	return FD_OK;
}

/* Publish a node into r: classes, refinement if asked, rows, measures */
FdStatus
fd_publish(FdContext *ctx, const int *node, bool partial, FdResult *r)
{
	Classes		cs;
	int		   *row_group;
	int			suppressed;
	int			failing;
	FdStatus	st;

	r->nqi = ctx->nqi;
	r->nrows = ctx->orig_nrows;
	r->removed = ctx->orig_nrows - ctx->nrows;
	memcpy(r->node, node, sizeof(int) * ctx->nqi);
	if ((st = fd_check(ctx, node, &r->full)) != FD_OK)
		return st;
	row_group = ke_malloc(sizeof(int) * ctx->nrows);
	if (row_group == NULL || !classes_init(&cs, ctx))
		st = FD_ERR_NOMEM;
	if (st == FD_OK)
		st = initial_classes(&cs, node, row_group, &suppressed, &failing);
	if (st == FD_OK && partial)
		st = refine(&cs);
	if (st == FD_OK)
		st = class_measures(&cs, &r->final, suppressed, failing);
	if (st == FD_OK)
		st = fill_result(&cs, r);
	ke_free(row_group);
	if (row_group != NULL)
		classes_free(&cs);
	return st;
}

/* Next number of a splitmix64 generator */
static uint64_t
splitmix(uint64_t *s)
{
	uint64_t	z = (*s += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/*
 * Pre-sampling (Section 5.1): keep[r] = 0 for rows in groups of fewer than
 * kprime rows at levels u (after an optional Bernoulli sample), else 1;
 * rows outside table.active stay 0.  *removed counts the active rows left out.
 */
FdStatus
fd_presample(const FdTable *t, const FdPresample *ps, uint8_t *keep, int *removed,
			 FdError *err)
{
	FdContext	mini;
	FdGroups   *g;
	int		   *row_group;
	int			lev[FD_MAX_QI];
	uint64_t	rng = ps->seed;
	FdStatus	st;
	int			r;
	int			a;

	fd_seterr(err, FD_OK, -1, "ok");
	if ((st = fd_check_table(t, err)) != FD_OK)
		return st;
	if (ps->kprime < 0)
	{
		fd_seterr(err, FD_ERR_ARG, -1, "k' must not be negative");
		return FD_ERR_ARG;
	}
	memset(&mini, 0, sizeof(mini));
	mini.nqi = t->nqi;
	for (a = 0; a < t->nqi; a++)
	{
		int			u = ps->level[a];

		lev[a] = u < 0 ? 0 : (u >= t->hier[a].nlevels ? t->hier[a].nlevels - 1 : u);
	}
	if ((g = fd_groups_new(&mini, 1024)) == NULL ||
		(row_group = ke_malloc(sizeof(int) * t->nrows)) == NULL)
	{
		fd_groups_free(g);
		fd_seterr(err, FD_ERR_NOMEM, -1, "out of memory");
		return FD_ERR_NOMEM;
	}
	*removed = 0;
	for (r = 0; r < t->nrows; r++)
	{
		uint32_t	codes[FD_MAX_QI];
		bool		fresh;

		row_group[r] = -1;
		keep[r] = (t->active == NULL || t->active[r]) ? 1 : 0;
		if (!keep[r])
			continue;
		if (ps->fraction > 0.0 && ps->fraction < 1.0 &&
			(double) (splitmix(&rng) >> 11) / 9007199254740992.0 >= ps->fraction)
		{
			keep[r] = 0;
			(*removed)++;
			continue;
		}
		for (a = 0; a < t->nqi; a++)
			codes[a] = t->hier[a].map[lev[a]][t->qi[a][r]];
		row_group[r] = fd_groups_find(&mini, g, codes, fd_hash_codes(codes, t->nqi), &fresh);
		if (row_group[r] < 0)
		{
			st = FD_ERR_NOMEM;
			break;
		}
		g->size[row_group[r]]++;
	}
	for (r = 0; st == FD_OK && r < t->nrows; r++)
		if (row_group[r] >= 0 && g->size[row_group[r]] < ps->kprime)
		{
			keep[r] = 0;
			(*removed)++;
		}
	if (st != FD_OK)
		fd_seterr(err, st, -1, "out of memory");
	ke_free(row_group);
	fd_groups_free(g);
	return st;
}

/*
 * fd_prepare.c
 *		Defaults, the check of a caller's table and parameters, and the
 *		context every search works in.
 *
 * Everything the caller hands in is checked before it is used, so that a
 * backend can turn each refusal into an error that names the attribute
 * and value at fault: codes in range, level 0 the identity, levels that
 * nest (a roll-up from a finer node is only right when they do), numeric
 * sensitive values in increasing order, criteria that some table could
 * meet.  A k above the number of rows, or an l above the number of
 * distinct sensitive values, is refused outright: every group of every
 * node would fail, and suppressing every row publishes nothing, which we
 * do not count as qualifying.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ke_alloc.h"
#include "fd_int.h"

#define MEMO_INITIAL	1024

/* Set parameters to their defaults: k = 1, nothing else asked */
void
fd_params_init(FdParams *p)
{
	int			a;

	memset(p, 0, sizeof(*p));
	p->k = 1;
	p->t = FD_T_OFF;
	p->scoring = FD_SCORE_BASIC;
	for (a = 0; a < FD_MAX_QI; a++)
	{
		p->priority[a] = 1.0;
		p->max_level[a] = -1;
	}
}

/* Set search options to their defaults: PrivacyFrost2 with its extension */
void
fd_search_opts_init(FdSearchOpts *o)
{
	memset(o, 0, sizeof(*o));
	o->method = FD_METHOD_FROST;
	o->extension = true;
	o->partial = false;
	o->max_nodes = (int64_t) 1 << 24;
}

/* A short name of a status, for logs and tests */
const char *
fd_status_name(FdStatus st)
{
	switch (st)
	{
		case FD_OK:
			return "ok";
		case FD_ERR_ARG:
			return "invalid argument";
		case FD_ERR_HIERARCHY:
			return "invalid hierarchy";
		case FD_ERR_K_TOO_LARGE:
			return "k exceeds the number of rows";
		case FD_ERR_L_TOO_LARGE:
			return "l exceeds the number of distinct sensitive values";
		case FD_ERR_LATTICE_TOO_LARGE:
			return "generalization lattice too large";
		case FD_ERR_NO_SOLUTION:
			return "no generalization satisfies the criteria";
		case FD_ERR_NOMEM:
			return "out of memory";
	}
	return "unknown status";
}

/* Fill an error report (err may be NULL) */
void
fd_seterr(FdError *err, FdStatus st, int qi, const char *fmt,...)
{
	va_list		ap;

	if (err == NULL)
		return;
	err->status = st;
	err->qi = qi;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

/* Check one hierarchy: sizes, identity at level 0, codes in range, nesting */
static FdStatus
check_hierarchy(const FdHierarchy *h, int a, FdError *err)
{
	uint32_t   *parent;
	int			l;
	int			x;

	if (h->nleaves < 1 || h->nlevels < 1 || h->nlevels > FD_MAX_LEVELS ||
		h->map == NULL || h->ncodes == NULL)
	{
		fd_seterr(err, FD_ERR_HIERARCHY, a,
				  "quasi-identifier %d: hierarchy needs leaves and 1 to %d levels",
				  a, FD_MAX_LEVELS);
		return FD_ERR_HIERARCHY;
	}
	if (h->ncodes[0] != (uint32_t) h->nleaves)
	{
		fd_seterr(err, FD_ERR_HIERARCHY, a,
				  "quasi-identifier %d: level 0 has %u codes for %d leaves",
				  a, h->ncodes[0], h->nleaves);
		return FD_ERR_HIERARCHY;
	}
	for (l = 0; l < h->nlevels; l++)
	{
		if (h->map[l] == NULL || h->ncodes[l] < 1)
		{
			fd_seterr(err, FD_ERR_HIERARCHY, a,
					  "quasi-identifier %d: level %d has no map or no codes", a, l);
			return FD_ERR_HIERARCHY;
		}
		for (x = 0; x < h->nleaves; x++)
			if (h->map[l][x] >= h->ncodes[l] || (l == 0 && h->map[0][x] != (uint32_t) x))
			{
				fd_seterr(err, FD_ERR_HIERARCHY, a,
						  "quasi-identifier %d: level %d maps leaf %d to %u, out of range%s",
						  a, l, x, h->map[l][x], l == 0 ? " or not the leaf itself" : "");
				return FD_ERR_HIERARCHY;
			}
	}

	/* every code of a level must hold a leaf: the search counts them all */
	for (l = 0; l < h->nlevels; l++)
	{
		uint8_t    *used = ke_calloc(h->ncodes[l], 1);
		uint32_t	nused = 0;

		if (used == NULL)
			return FD_ERR_NOMEM;
		for (x = 0; x < h->nleaves; x++)
			if (!used[h->map[l][x]])
			{
				used[h->map[l][x]] = 1;
				nused++;
			}
		ke_free(used);
		if (nused != h->ncodes[l])
		{
			fd_seterr(err, FD_ERR_HIERARCHY, a,
					  "quasi-identifier %d: level %d has %u codes, of which %u hold a leaf",
					  a, l, h->ncodes[l], nused);
			return FD_ERR_HIERARCHY;
		}
	}

	/* each code of level l - 1 must have one parent at level l */
	for (l = 1; l < h->nlevels; l++)
	{
		parent = ke_malloc(sizeof(uint32_t) * h->ncodes[l - 1]);
		if (parent == NULL)
			return FD_ERR_NOMEM;
		memset(parent, 0xff, sizeof(uint32_t) * h->ncodes[l - 1]);
		for (x = 0; x < h->nleaves; x++)
		{
			uint32_t	c = h->map[l - 1][x];

			if (parent[c] == UINT32_MAX)
				parent[c] = h->map[l][x];
			else if (parent[c] != h->map[l][x])
			{
				fd_seterr(err, FD_ERR_HIERARCHY, a,
						  "quasi-identifier %d: code %u of level %d has two parents at level %d (%u and %u)",
						  a, c, l - 1, l, parent[c], h->map[l][x]);
				ke_free(parent);
				return FD_ERR_HIERARCHY;
			}
		}
		ke_free(parent);
	}
	return FD_OK;
}

/* Check the criteria and scoring parameters, apart from those needing rows */
static FdStatus
check_params(const FdTable *t, const FdParams *p, FdError *err)
{
	int			a;

	if (p->k < 1 || p->l_distinct < 0 || p->rec_l < 0 || p->max_suppressed < 0 || p->p < 0)
	{
		fd_seterr(err, FD_ERR_ARG, -1,
				  "k must be at least 1; l, recursive l, max_suppressed and p not negative");
		return FD_ERR_ARG;
	}
	if (p->rec_l > 0 && !(p->rec_c > 0.0 && isfinite(p->rec_c)))
	{
		fd_seterr(err, FD_ERR_ARG, -1, "recursive (c,l)-diversity needs c > 0, not %g", p->rec_c);
		return FD_ERR_ARG;
	}
	if (!(p->t == FD_T_OFF || (p->t >= 0.0 && isfinite(p->t))))
	{
		fd_seterr(err, FD_ERR_ARG, -1, "t must be at least 0, not %g", p->t);
		return FD_ERR_ARG;
	}
	if (p->scoring != FD_SCORE_BASIC && p->scoring != FD_SCORE_ETA && p->scoring != FD_SCORE_LOG)
	{
		fd_seterr(err, FD_ERR_ARG, -1, "unknown scoring function %d", (int) p->scoring);
		return FD_ERR_ARG;
	}
	if (!isfinite(p->eta_d))
	{
		fd_seterr(err, FD_ERR_ARG, -1, "eta's d must be finite");
		return FD_ERR_ARG;
	}
	for (a = 0; a < t->nqi; a++)
	{
		if (!(p->priority[a] > 0.0 && isfinite(p->priority[a])))
		{
			fd_seterr(err, FD_ERR_ARG, a, "quasi-identifier %d: priority must be positive, not %g",
					  a, p->priority[a]);
			return FD_ERR_ARG;
		}
		if (p->max_level[a] < -1 || p->max_level[a] >= t->hier[a].nlevels)
		{
			fd_seterr(err, FD_ERR_ARG, a, "quasi-identifier %d: max_level %d outside -1 .. %d",
					  a, p->max_level[a], t->hier[a].nlevels - 1);
			return FD_ERR_ARG;
		}
	}
	return FD_OK;
}

/* Check the table: shapes, hierarchies, every row's codes, sensitive values */
FdStatus
fd_check_table(const FdTable *t, FdError *err)
{
	FdStatus	st;
	int			a;
	int			r;

	if (t == NULL || t->nqi < 1 || t->nqi > FD_MAX_QI || t->nrows < 1 ||
		t->nrows > INT32_MAX / 4 || t->qi == NULL || t->hier == NULL ||
		t->sens == NULL || t->nsens < 1)
	{
		fd_seterr(err, FD_ERR_ARG, -1,
				  "the table needs rows, 1 to %d quasi-identifiers and sensitive codes",
				  FD_MAX_QI);
		return FD_ERR_ARG;
	}
	for (a = 0; a < t->nqi; a++)
	{
		if ((st = check_hierarchy(&t->hier[a], a, err)) != FD_OK)
			return st;
		if (t->qi[a] == NULL)
		{
			fd_seterr(err, FD_ERR_ARG, a, "quasi-identifier %d has no column", a);
			return FD_ERR_ARG;
		}
		for (r = 0; r < t->nrows; r++)
			if (t->qi[a][r] >= (uint32_t) t->hier[a].nleaves)
			{
				fd_seterr(err, FD_ERR_ARG, a,
						  "quasi-identifier %d: row %d has leaf code %u, above %d",
						  a, r, t->qi[a][r], t->hier[a].nleaves - 1);
				return FD_ERR_ARG;
			}
	}
	for (r = 0; r < t->nrows; r++)
		if (t->sens[r] >= (uint32_t) t->nsens)
		{
			fd_seterr(err, FD_ERR_ARG, -1, "row %d has sensitive code %u, above %d",
					  r, t->sens[r], t->nsens - 1);
			return FD_ERR_ARG;
		}
	if (t->sens_numeric && t->sens_values != NULL)
		for (r = 1; r < t->nsens; r++)
			if (!(t->sens_values[r] >= t->sens_values[r - 1]))
			{
				fd_seterr(err, FD_ERR_ARG, -1,
						  "numeric sensitive codes must be in value order: code %d is %g after %g",
						  r, t->sens_values[r], t->sens_values[r - 1]);
				return FD_ERR_ARG;
			}
	return FD_OK;
}

/* Copy the active rows and derive the whole-table distribution */
static FdStatus
load_rows(FdContext *ctx, const FdTable *t)
{
	int			a;
	int			r;
	int			n = 0;

	for (r = 0; r < t->nrows; r++)
		if (t->active == NULL || t->active[r])
			n++;
	ctx->nrows = n;
	ctx->orig_nrows = t->nrows;
	if (n == 0)
		return FD_OK;
	ctx->row_id = ke_malloc(sizeof(int) * n);
	ctx->sens = ke_malloc(sizeof(uint32_t) * n);
	ctx->qdist = ke_calloc(t->nsens, sizeof(double));
	ctx->sorted = ke_malloc(sizeof(uint32_t) * t->nsens);
	if (ctx->row_id == NULL || ctx->sens == NULL || ctx->qdist == NULL || ctx->sorted == NULL)
		return FD_ERR_NOMEM;
	for (a = 0; a < t->nqi; a++)
		if ((ctx->qi[a] = ke_malloc(sizeof(uint32_t) * n)) == NULL)
			return FD_ERR_NOMEM;
	n = 0;
	for (r = 0; r < t->nrows; r++)
	{
		if (t->active != NULL && !t->active[r])
			continue;
		ctx->row_id[n] = r;
		ctx->sens[n] = t->sens[r];
		for (a = 0; a < t->nqi; a++)
			ctx->qi[a][n] = t->qi[a][r];
		n++;
	}
	for (r = 0; r < n; r++)
		ctx->qdist[ctx->sens[r]] += 1.0;
	ctx->distinct_sens = 0;
	for (r = 0; r < t->nsens; r++)
	{
		if (ctx->qdist[r] > 0)
			ctx->distinct_sens++;
		ctx->qdist[r] /= n;
	}
	return FD_OK;
}

/* Pack group keys when every QI's codes together fit in 64 bits */
static void
settle_packing(FdContext *ctx)
{
	int			bits = 0;
	int			a;

	for (a = 0; a < ctx->nqi; a++)
	{
		uint32_t	maxcodes = 0;
		int			b = 0;
		int			l;

		for (l = 0; l < ctx->nlevels[a]; l++)
			if (ctx->ncodes[a][l] > maxcodes)
				maxcodes = ctx->ncodes[a][l];
		while (b < 32 && ((uint64_t) 1 << b) < maxcodes)
			b++;
		ctx->shift[a] = bits;
		ctx->kmask[a] = ((uint64_t) 1 << b) - 1;
		bits += b;
	}
	ctx->packed = bits <= 64;
	ctx->keybits = bits;
}

/* Derive each level's representative leaves and distinct codes over all rows */
static FdStatus
derive_levels(FdContext *ctx, const FdTable *t)
{
	int			a;

	for (a = 0; a < ctx->nqi; a++)
	{
		const FdHierarchy *h = &t->hier[a];
		uint8_t    *present;
		uint32_t	maxcodes = 0;
		int			l;
		int			x;
		int			r;

		for (l = 0; l < h->nlevels; l++)
			if (h->ncodes[l] > maxcodes)
				maxcodes = h->ncodes[l];
		ctx->stamp[a] = ke_calloc(maxcodes, sizeof(uint32_t));
		ctx->trans[a] = ke_malloc(sizeof(uint64_t) * maxcodes);
		present = ke_calloc(h->nleaves, 1);
		if (ctx->stamp[a] == NULL || ctx->trans[a] == NULL || present == NULL)
		{
			ke_free(present);
			return FD_ERR_NOMEM;
		}
		for (r = 0; r < ctx->nrows; r++)
			present[ctx->qi[a][r]] = 1;
		for (l = 0; l < h->nlevels; l++)
		{
			uint32_t   *rep = ke_malloc(sizeof(uint32_t) * h->ncodes[l]);

			if (rep == NULL)
			{
				ke_free(present);
				return FD_ERR_NOMEM;
			}
			memset(rep, 0xff, sizeof(uint32_t) * h->ncodes[l]);
			ctx->rep[a][l] = rep;
			ctx->e_full[a][l] = 0;
			for (x = 0; x < h->nleaves; x++)
			{
				uint32_t	c = h->map[l][x];

				if (rep[c] == UINT32_MAX)
					rep[c] = x;
				if (present[x] && ctx->stamp[a][c] != (uint32_t) (l + 1))
				{
					ctx->stamp[a][c] = l + 1;
					ctx->e_full[a][l]++;
				}
			}
		}
		ke_free(present);
		memset(ctx->stamp[a], 0, sizeof(uint32_t) * maxcodes);
	}
	settle_packing(ctx);
	return FD_OK;
}

/* Copy parameters into the context and settle the derived ones */
static void
settle_params(FdContext *ctx, const FdTable *t, const FdParams *p)
{
	int			a;

	ctx->p = *p;
	ctx->nqi = t->nqi;
	ctx->nsens = t->nsens;
	ctx->numeric = t->sens_numeric;
	ctx->nhist = (p->l_distinct > 0 || p->rec_l > 0 || p->t != FD_T_OFF) ? t->nsens : 0;
	ctx->monotone = p->max_suppressed == 0 || (p->rec_l == 0 && p->t == FD_T_OFF);
	for (a = 0; a < t->nqi; a++)
	{
		ctx->nlevels[a] = t->hier[a].nlevels;
		ctx->maxlev[a] = p->max_level[a] < 0 ? t->hier[a].nlevels - 1 : p->max_level[a];
		ctx->map[a] = t->hier[a].map;
		ctx->ncodes[a] = t->hier[a].ncodes;
	}
	ctx->stampval = FD_MAX_LEVELS + 1;
	ctx->dense_limit = FD_DENSE_CELLS;
}

/* Check the criteria against the rows: k and l must be reachable */
static FdStatus
check_reachable(const FdContext *ctx, FdError *err)
{
	const FdParams *p = &ctx->p;

	if (ctx->nrows == 0)
	{
		fd_seterr(err, FD_ERR_ARG, -1, "no active rows");
		return FD_ERR_ARG;
	}
	if (p->k > ctx->nrows)
	{
		fd_seterr(err, FD_ERR_K_TOO_LARGE, -1, "k = %d exceeds the %d rows", p->k, ctx->nrows);
		return FD_ERR_K_TOO_LARGE;
	}
	if (p->l_distinct > ctx->distinct_sens || p->rec_l > ctx->distinct_sens)
	{
		fd_seterr(err, FD_ERR_L_TOO_LARGE, -1,
				  "%s l = %d exceeds the %d distinct sensitive values",
				  p->l_distinct > ctx->distinct_sens ? "distinct" : "recursive",
				  p->l_distinct > ctx->distinct_sens ? p->l_distinct : p->rec_l,
				  ctx->distinct_sens);
		return FD_ERR_L_TOO_LARGE;
	}
	return FD_OK;
}

/* Check the table and parameters and build a context for searching them */
FdStatus
fd_prepare(const FdTable *t, const FdParams *p, FdContext **out, FdError *err)
{
	FdContext  *ctx;
	FdStatus	st;
	int			a;

	*out = NULL;
	fd_seterr(err, FD_OK, -1, "ok");
	if (p == NULL)
	{
		fd_seterr(err, FD_ERR_ARG, -1, "no parameters");
		return FD_ERR_ARG;
	}
	if ((st = fd_check_table(t, err)) != FD_OK || (st = check_params(t, p, err)) != FD_OK)
	{
		if (st == FD_ERR_NOMEM)
			fd_seterr(err, st, -1, "out of memory");
		return st;
	}
	if ((ctx = ke_calloc(1, sizeof(FdContext))) == NULL)
	{
		fd_seterr(err, FD_ERR_NOMEM, -1, "out of memory");
		return FD_ERR_NOMEM;
	}
	settle_params(ctx, t, p);
	ctx->memo_mask = MEMO_INITIAL - 1;
	ctx->memo = ke_calloc(MEMO_INITIAL, sizeof(FdMemoEntry));
	st = ctx->memo == NULL ? FD_ERR_NOMEM : load_rows(ctx, t);
	if (st == FD_OK)
		st = check_reachable(ctx, err);
	if (st == FD_OK)
		st = derive_levels(ctx, t);
	if (st == FD_OK)
		st = fd_base_build(ctx);
	if (st != FD_OK)
	{
		if (st == FD_ERR_NOMEM)
			fd_seterr(err, st, -1, "out of memory");
		fd_free(ctx);
		return st;
	}
	for (a = 0; a < ctx->nqi; a++)
		ctx->eta_d[a] = p->eta_d > 0 ? p->eta_d : ctx->e_full[a][0] / 2.0;
	*out = ctx;
	return FD_OK;
}

/* Free a context and everything it holds (NULL is fine) */
void
fd_free(FdContext *ctx)
{
	int			a;
	int			l;

	if (ctx == NULL)
		return;
	fd_cache_clear(ctx);
	fd_base_free(ctx);
	for (a = 0; a < ctx->nqi; a++)
	{
		ke_free(ctx->qi[a]);
		ke_free(ctx->stamp[a]);
		ke_free(ctx->trans[a]);
		for (l = 0; l < FD_MAX_LEVELS; l++)
			ke_free(ctx->rep[a][l]);
	}
	ke_free(ctx->row_id);
	ke_free(ctx->sens);
	ke_free(ctx->qdist);
	ke_free(ctx->sorted);
	ke_free(ctx->dense);
	ke_free(ctx->memo);
	ke_free(ctx);
}

/* The counters accumulated since fd_prepare */
void
fd_get_counters(const FdContext *ctx, FdCounters *c)
{
	*c = ctx->counters;
}

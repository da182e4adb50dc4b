/*
 * fd_groups.c
 *		A node's group table, built by one pass over the rows or rolled up
 *		from a finer node's groups, and the measures of its table.
 *
 * A group table is a hash of the tuple of generalized codes to a group
 * holding its row count and, when a diversity or closeness criterion is
 * on, its sensitive histogram.  When every attribute's codes together fit
 * in 64 bits (fd_prepare decides), a tuple is keyed by its codes packed
 * side by side, so that a lookup compares one integer; otherwise by a hash
 * of the codes, compared in full.  Because levels nest, the groups of a
 * node N are unions of the groups of any node F finer than N on every
 * attribute (F <= N component-wise): mapping each F group's codes to N's
 * levels (through a representative leaf of the code) and adding up counts
 * and histograms gives N's table exactly, at a cost proportional to F's
 * groups instead of the rows.  With packed keys only the attributes that
 * move are translated.  The cache keeps the most recently used tables; a
 * check picks the cached finer node with the fewest groups.
 *
 * A check with no finer node cached does not pass over the rows but over
 * the rows folded at fd_prepare into distinct (leaf codes, sensitive code)
 * pairs with their counts (the sensitive code left out without histograms):
 * the bottom node's groups split by sensitive code, found by sorting the
 * packed keys or by hashing.  When the product of a node's code counts is
 * small, groups are counted directly in a dense array indexed by the codes
 * in mixed radix, with no hashing at all, and the non-empty cells become
 * the table.
 *
 * Every check's measures are memorized by node, so that a search asking
 * again about a node costs a hash lookup and is not counted as a check.
 */
#include <stdlib.h>
#include <string.h>

#include "ke_alloc.h"
#include "fd_int.h"

/* Hash a tuple of codes */
uint64_t
fd_hash_codes(const uint32_t *codes, int n)
{
	uint64_t	h = 0x9E3779B97F4A7C15ULL;
	int			i;

	for (i = 0; i < n; i++)
	{
		h ^= codes[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 29;
	}
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 32);
}

/* A group key: the codes packed side by side when they fit, else their hash */
uint64_t
fd_group_key(const FdContext *ctx, const uint32_t *codes)
{
	uint64_t	key = 0;
	int			a;

	if (!ctx->packed)
		return fd_hash_codes(codes, ctx->nqi);
	for (a = 0; a < ctx->nqi; a++)
		key |= (uint64_t) codes[a] << ctx->shift[a];
	return key;
}

/* The first hash slot of a key */
static inline uint32_t
key_slot(const FdGroups *g, uint64_t key)
{
	return (uint32_t) ((key * 0x9E3779B97F4A7C15ULL) >> 32) & g->hmask;
}

/* A new empty group table with room for cap groups (NULL when out of memory) */
FdGroups *
fd_groups_new(const FdContext *ctx, int cap)
{
	FdGroups   *g = ke_calloc(1, sizeof(FdGroups));
	uint32_t	hcap = 16;

	if (g == NULL)
		return NULL;
	if (cap < 8)
		cap = 8;
	while (hcap < (uint32_t) cap * 2)
		hcap <<= 1;
	g->cap = cap;
	g->hmask = hcap - 1;
	g->codes = ke_malloc(sizeof(uint32_t) * (size_t) cap * ctx->nqi);
	g->key = ke_malloc(sizeof(uint64_t) * cap);
	g->size = ke_calloc(cap, sizeof(int));
	g->slot = ke_malloc(sizeof(int) * hcap);
	if (ctx->nhist > 0)
		g->hist = ke_calloc((size_t) cap * ctx->nhist, sizeof(uint32_t));
	if (g->codes == NULL || g->key == NULL || g->size == NULL || g->slot == NULL ||
		(ctx->nhist > 0 && g->hist == NULL))
	{
		fd_groups_free(g);
		return NULL;
	}
	memset(g->slot, 0xff, sizeof(int) * hcap);
	return g;
}

/* Free a group table (NULL is fine) */
void
fd_groups_free(FdGroups *g)
{
	if (g == NULL)
		return;
	ke_free(g->codes);
	ke_free(g->key);
	ke_free(g->size);
	ke_free(g->hist);
	ke_free(g->slot);
	ke_free(g);
}

/* Double a group table's room and rebuild its hash slots */
static bool
groups_grow(const FdContext *ctx, FdGroups *g)
{
	int			cap = g->cap * 2;
	uint32_t	hcap = (g->hmask + 1) * 2;
	uint32_t   *codes;
	uint64_t   *key;
	int		   *size;
	int		   *slot;
	int			i;

	codes = ke_realloc(g->codes, sizeof(uint32_t) * (size_t) cap * ctx->nqi);
	if (codes == NULL)
		return false;
	g->codes = codes;
	if ((key = ke_realloc(g->key, sizeof(uint64_t) * cap)) == NULL)
		return false;
	g->key = key;
	size = ke_realloc(g->size, sizeof(int) * cap);
	if (size == NULL)
		return false;
	g->size = size;
	memset(size + g->cap, 0, sizeof(int) * (cap - g->cap));
	if (ctx->nhist > 0)
	{
		uint32_t   *hist = ke_realloc(g->hist, sizeof(uint32_t) * (size_t) cap * ctx->nhist);

		if (hist == NULL)
			return false;
		g->hist = hist;
		memset(hist + (size_t) g->cap * ctx->nhist, 0,
			   sizeof(uint32_t) * (size_t) (cap - g->cap) * ctx->nhist);
	}
	if ((slot = ke_malloc(sizeof(int) * hcap)) == NULL)
		return false;
	ke_free(g->slot);
	g->slot = slot;
	g->cap = cap;
	g->hmask = hcap - 1;
	memset(slot, 0xff, sizeof(int) * hcap);
	for (i = 0; i < g->ngroups; i++)
	{
		uint32_t	s = key_slot(g, g->key[i]);

		while (slot[s] >= 0)
			s = (s + 1) & g->hmask;
		slot[s] = i;
	}
	return true;
}

/*
 * The group of a tuple of codes whose key (fd_group_key) is given, added
 * empty when new (*fresh tells); -1 when out of memory.  With packed keys
 * codes may be NULL: a new group's codes are unpacked from its key.
 */
int
fd_groups_find(const FdContext *ctx, FdGroups *g, const uint32_t *codes, uint64_t key,
			   bool *fresh)
{
	size_t		bytes = sizeof(uint32_t) * ctx->nqi;
	uint32_t	s = key_slot(g, key);
	uint32_t   *dst;
	int			i;
	int			a;

	while ((i = g->slot[s]) >= 0)
	{
		if (g->key[i] == key &&
			(ctx->packed || memcmp(g->codes + (size_t) i * ctx->nqi, codes, bytes) == 0))
		{
			*fresh = false;
			return i;
		}
		s = (s + 1) & g->hmask;
	}
	if (g->ngroups == g->cap)
	{
		if (!groups_grow(ctx, g))
			return -1;
		return fd_groups_find(ctx, g, codes, key, fresh);
	}
	i = g->ngroups++;
	dst = g->codes + (size_t) i * ctx->nqi;
	if (codes != NULL)
		memcpy(dst, codes, bytes);
	else
		for (a = 0; a < ctx->nqi; a++)
			dst[a] = (uint32_t) ((key >> ctx->shift[a]) & ctx->kmask[a]);
	g->key[i] = key;
	g->slot[s] = i;
	*fresh = true;
	return i;
}

/* Rows to group: leaf codes, sensitive codes and counts (w NULL: 1 each) */
typedef struct RowSet
{
	int			n;
	uint32_t   *const *qi;
	const uint32_t *sens;
	const int  *w;
} RowSet;

/* Build a node's groups by one pass over a row set; row_group may be NULL */
static FdGroups *
scan_rows(const FdContext *ctx, const RowSet *rs, const int *levels, int *row_group)
{
	const uint32_t *lm[FD_MAX_QI];
	uint32_t	codes[FD_MAX_QI];
	FdGroups   *g;
	int			a;
	int			r;

	g = fd_groups_new(ctx, rs->n < 1024 ? rs->n : 1024);
	if (g == NULL)
		return NULL;
	for (a = 0; a < ctx->nqi; a++)
	{
		lm[a] = ctx->map[a][levels[a]];
		g->levels[a] = (uint8_t) levels[a];
	}
	for (r = 0; r < rs->n; r++)
	{
		bool		fresh;
		uint64_t	key = 0;
		int			w = rs->w != NULL ? rs->w[r] : 1;
		int			i;

		if (ctx->packed)
		{
			for (a = 0; a < ctx->nqi; a++)
				key |= (uint64_t) lm[a][rs->qi[a][r]] << ctx->shift[a];
			i = fd_groups_find(ctx, g, NULL, key, &fresh);
		}
		else
		{
			for (a = 0; a < ctx->nqi; a++)
				codes[a] = lm[a][rs->qi[a][r]];
			i = fd_groups_find(ctx, g, codes, fd_hash_codes(codes, ctx->nqi), &fresh);
		}
		if (i < 0)
		{
			fd_groups_free(g);
			return NULL;
		}
		g->size[i] += w;
		if (ctx->nhist > 0)
			g->hist[(size_t) i * ctx->nhist + rs->sens[r]] += w;
		if (row_group != NULL)
			row_group[r] = i;
	}
	return g;
}

/* Build a node's groups by one pass over the rows; row_group may be NULL */
FdGroups *
fd_groups_scan(const FdContext *ctx, const int *levels, int *row_group)
{
	RowSet		rs = {ctx->nrows, ctx->qi, ctx->sens, NULL};

	return scan_rows(ctx, &rs, levels, row_group);
}

/* Build a node's groups by one pass over the folded rows */
static FdGroups *
groups_scan_base(const FdContext *ctx, const int *levels)
{
	RowSet		rs = {ctx->nbase, ctx->base_qi, ctx->base_sens, ctx->base_w};

	return scan_rows(ctx, &rs, levels, NULL);
}

/* Room for n folded rows */
static FdStatus
base_alloc(FdContext *ctx, int n)
{
	int			a;

	ctx->base_sens = ke_malloc(sizeof(uint32_t) * n);
	ctx->base_w = ke_calloc(n, sizeof(int));
	if (ctx->base_sens == NULL || ctx->base_w == NULL)
		return FD_ERR_NOMEM;
	for (a = 0; a < ctx->nqi; a++)
		if ((ctx->base_qi[a] = ke_malloc(sizeof(uint32_t) * n)) == NULL)
			return FD_ERR_NOMEM;
	ctx->nbase = n;
	return FD_OK;
}

/* Sort keys of the given bits by least significant digits first; tmp as long as keys */
static void
radix_sort(uint64_t *keys, uint64_t *tmp, int n, int bits)
{
	int			count[1 << 11];
	int			shift;

	for (shift = 0; shift < bits; shift += 11)
	{
		uint64_t   *swap;
		int			sum = 0;
		int			i;
		int			d;

		memset(count, 0, sizeof(count));
		for (i = 0; i < n; i++)
			count[(keys[i] >> shift) & 2047]++;
		for (d = 0; d < 2048; d++)
		{
			int			c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			tmp[count[(keys[i] >> shift) & 2047]++] = keys[i];
		swap = keys;
		keys = tmp;
		tmp = swap;
	}
	if (((bits + 10) / 11) % 2 == 1)
		memcpy(tmp, keys, sizeof(uint64_t) * n);
}

/*
 * Fold the rows when their leaf codes and sensitive code pack into 64 bits:
 * sort the packed keys and count the runs.  *done false: they do not fit.
 */
static FdStatus
base_build_sorted(FdContext *ctx, bool *done)
{
	int			sbits = 0;
	uint64_t   *keys;
	uint64_t   *tmp;
	FdStatus	st;
	int			n = 0;
	int			r;
	int			a;

	while (ctx->nhist > 0 && ((uint64_t) 1 << sbits) < (uint64_t) ctx->nsens)
		sbits++;
	*done = ctx->packed && ctx->keybits + sbits <= 64;
	if (!*done)
		return FD_OK;
	keys = ke_malloc(sizeof(uint64_t) * ctx->nrows);
	tmp = ke_malloc(sizeof(uint64_t) * ctx->nrows);
	if (keys == NULL || tmp == NULL)
	{
		ke_free(keys);
		ke_free(tmp);
		return FD_ERR_NOMEM;
	}
	for (r = 0; r < ctx->nrows; r++)
	{
		uint64_t	key = ctx->nhist > 0 && sbits > 0 ? (uint64_t) ctx->sens[r] << ctx->keybits : 0;

		for (a = 0; a < ctx->nqi; a++)
			key |= (uint64_t) ctx->qi[a][r] << ctx->shift[a];
		keys[r] = key;
	}
	radix_sort(keys, tmp, ctx->nrows, ctx->keybits + sbits);
	for (r = 0; r < ctx->nrows; r++)
		n += r == 0 || keys[r] != keys[r - 1];
	if ((st = base_alloc(ctx, n)) == FD_OK)
	{
		n = -1;
		for (r = 0; r < ctx->nrows; r++)
		{
			if (r == 0 || keys[r] != keys[r - 1])
			{
				n++;
				for (a = 0; a < ctx->nqi; a++)
					ctx->base_qi[a][n] = (uint32_t) ((keys[r] >> ctx->shift[a]) & ctx->kmask[a]);
				ctx->base_sens[n] = ctx->nhist > 0 ? (uint32_t) (keys[r] >> ctx->keybits) : 0;
			}
			ctx->base_w[n]++;
		}
	}
	ke_free(keys);
	ke_free(tmp);
	return st;
}

/*
 * Fold the rows by hashing: the bottom node's groups, found by a scan
 * without histograms, then the (group, sensitive code) pairs
 */
static FdStatus
base_build_hashed(FdContext *ctx)
{
	int			zero[FD_MAX_QI] = {0};
	FdContext  *plain = ke_malloc(sizeof(FdContext));
	FdGroups   *g = NULL;
	FdGroups   *pairs = NULL;
	int		   *row_group = ke_malloc(sizeof(int) * ctx->nrows);
	FdStatus	st = FD_ERR_NOMEM;
	int			r;
	int			a;

	if (plain == NULL || row_group == NULL)
		goto done;
	*plain = *ctx;
	plain->nhist = 0;
	if ((g = fd_groups_scan(plain, zero, row_group)) == NULL)
		goto done;
	if (ctx->nhist == 0)
	{
		if ((st = base_alloc(ctx, g->ngroups)) != FD_OK)
			goto done;
		for (r = 0; r < g->ngroups; r++)
			for (a = 0; a < ctx->nqi; a++)
				ctx->base_qi[a][r] = g->codes[(size_t) r * ctx->nqi + a];
		memcpy(ctx->base_w, g->size, sizeof(int) * g->ngroups);
		memset(ctx->base_sens, 0, sizeof(uint32_t) * g->ngroups);
		st = FD_OK;
		goto done;
	}
	memset(plain, 0, sizeof(FdContext));
	plain->nqi = 2;
	if ((pairs = fd_groups_new(plain, 1024)) == NULL)
		goto done;
	for (r = 0; r < ctx->nrows; r++)
	{
		uint32_t	pair[2] = {(uint32_t) row_group[r], ctx->sens[r]};
		bool		fresh;
		int			i = fd_groups_find(plain, pairs, pair, fd_hash_codes(pair, 2), &fresh);

		if (i < 0)
			goto done;
		pairs->size[i]++;
	}
	if ((st = base_alloc(ctx, pairs->ngroups)) != FD_OK)
		goto done;
	for (r = 0; r < pairs->ngroups; r++)
	{
		for (a = 0; a < ctx->nqi; a++)
			ctx->base_qi[a][r] = g->codes[(size_t) pairs->codes[2 * r] * ctx->nqi + a];
		ctx->base_sens[r] = pairs->codes[2 * r + 1];
		ctx->base_w[r] = pairs->size[r];
	}
done:
	fd_groups_free(g);
	fd_groups_free(pairs);
	ke_free(plain);
	ke_free(row_group);
	return st;
}

/*
 * Fold the rows into distinct (leaf codes, sensitive code) pairs with
 * counts, the sensitive code left out when no histogram is kept: a scan
 * for a check passes over these instead of the rows.  When the codes and
 * the sensitive code pack into 64 bits they are found by sorting the keys,
 * else by hashing.
 */
FdStatus
fd_base_build(FdContext *ctx)
{
	bool		sorted;
	FdStatus	st = base_build_sorted(ctx, &sorted);

	if (st != FD_OK || sorted)
		return st;
	return base_build_hashed(ctx);
}

/* Free the folded rows */
void
fd_base_free(FdContext *ctx)
{
	int			a;

	for (a = 0; a < ctx->nqi; a++)
		ke_free(ctx->base_qi[a]);
	ke_free(ctx->base_sens);
	ke_free(ctx->base_w);
}

/*
 * With packed keys, fill ctx->trans[a] for each attribute a that f holds
 * finer than levels: each of f's codes's coarser code, shifted into place;
 * return the mask of the key bits that stay
 */
static uint64_t
rollup_trans(const FdContext *ctx, const FdGroups *f, const int *levels)
{
	uint64_t	keep = ~(uint64_t) 0;
	int			a;

	for (a = 0; a < ctx->nqi; a++)
	{
		const uint32_t *up = ctx->map[a][levels[a]];
		const uint32_t *rep = ctx->rep[a][f->levels[a]];
		uint32_t	c;

		if (f->levels[a] == levels[a])
			continue;
		keep &= ~(ctx->kmask[a] << ctx->shift[a]);
		for (c = 0; c < ctx->ncodes[a][f->levels[a]]; c++)
			ctx->trans[a][c] = (uint64_t) up[rep[c]] << ctx->shift[a];
	}
	return keep;
}

/*
 * The room to start a roll-up with: no more groups than the finer node's,
 * nor than the product of the levels' code counts; with histograms at
 * most 1024, as their room is cleared when allocated and most roll-ups
 * merge many groups
 */
static int
rollup_room(const FdContext *ctx, const FdGroups *f, const int *levels)
{
	double		prod = 1.0;
	int			cap = f->ngroups;
	int			a;

	for (a = 0; a < ctx->nqi; a++)
		prod *= ctx->ncodes[a][levels[a]];
	if (prod < cap)
		cap = (int) prod;
	if (ctx->nhist > 0 && cap > 1024)
		cap = 1024;
	return cap;
}

/* Build a node's groups by rolling up a finer node's groups */
static FdGroups *
groups_rollup(const FdContext *ctx, const FdGroups *f, const int *levels)
{
	uint32_t	codes[FD_MAX_QI];
	int			moved[FD_MAX_QI];
	int			nmoved = 0;
	uint64_t	keep = 0;
	FdGroups   *g;
	int			a;
	int			i;

	g = fd_groups_new(ctx, rollup_room(ctx, f, levels));
	if (g == NULL)
		return NULL;
	for (a = 0; a < ctx->nqi; a++)
	{
		g->levels[a] = (uint8_t) levels[a];
		if (f->levels[a] != levels[a])
			moved[nmoved++] = a;
	}
	if (ctx->packed)
		keep = rollup_trans(ctx, f, levels);
	for (i = 0; i < f->ngroups; i++)
	{
		const uint32_t *fc = f->codes + (size_t) i * ctx->nqi;
		bool		fresh;
		int			j;

		if (ctx->packed)
		{
			uint64_t	key = f->key[i] & keep;
			int			m;

			for (m = 0; m < nmoved; m++)
				key |= ctx->trans[moved[m]][fc[moved[m]]];
			j = fd_groups_find(ctx, g, NULL, key, &fresh);
		}
		else
		{
			for (a = 0; a < ctx->nqi; a++)
				codes[a] = f->levels[a] == levels[a] ? fc[a] :
					ctx->map[a][levels[a]][ctx->rep[a][f->levels[a]][fc[a]]];
			j = fd_groups_find(ctx, g, codes, fd_group_key(ctx, codes), &fresh);
		}
		if (j < 0)
		{
			fd_groups_free(g);
			return NULL;
		}
		g->size[j] += f->size[i];
		if (ctx->nhist > 0)
		{
			uint32_t   *dst = g->hist + (size_t) j * ctx->nhist;
			const uint32_t *src = f->hist + (size_t) i * ctx->nhist;
			int			s;

			for (s = 0; s < ctx->nhist; s++)
				dst[s] += src[s];
		}
	}
	return g;
}

/*
 * Direct counting.  When the product of a node's code counts is small, a
 * group is a cell of a dense array (the codes in mixed radix) holding its
 * count and histogram, so that a pass adds each row or finer group into
 * its cell with no hashing; the non-empty cells then become the groups.
 * ctx->trans[a] holds each source code's contribution to the cell number.
 */

/* The cells a direct count of a node takes from n sources; 0: too many */
static size_t
dense_cells(FdContext *ctx, const int *levels, int n)
{
	size_t		stride = 1 + ctx->nhist;
	double		prod = 1.0;
	int			a;

	for (a = 0; a < ctx->nqi; a++)
		prod *= ctx->ncodes[a][levels[a]];
	if (prod * stride > (double) ctx->dense_limit || prod > 4.0 * n + 4096.0)
		return 0;
	if (prod * stride > ctx->dense_cap)
	{
		ke_free(ctx->dense);
		ctx->dense_cap = 0;
		if ((ctx->dense = ke_calloc((size_t) prod * stride, sizeof(uint32_t))) == NULL)
			return 0;
		ctx->dense_cap = (size_t) prod * stride;
	}
	return (size_t) prod;
}

/* Fill ctx->trans for a direct count at levels from leaves (from NULL) or from finer levels */
static void
dense_trans(FdContext *ctx, const int *levels, const uint8_t *from)
{
	uint64_t	mult = 1;
	int			a;

	for (a = 0; a < ctx->nqi; a++)
	{
		const uint32_t *up = ctx->map[a][levels[a]];
		int			fl = from != NULL ? from[a] : 0;
		uint32_t	c;

		for (c = 0; c < ctx->ncodes[a][fl]; c++)
			ctx->trans[a][c] = mult * (from != NULL ? up[ctx->rep[a][fl][c]] : up[c]);
		mult *= ctx->ncodes[a][levels[a]];
	}
}

/* Turn the non-empty cells of a direct count into groups, clearing the cells */
static FdGroups *
dense_collect(FdContext *ctx, const int *levels, size_t cells, int ngroups)
{
	size_t		stride = 1 + ctx->nhist;
	uint32_t	codes[FD_MAX_QI];
	FdGroups   *g = fd_groups_new(ctx, ngroups);
	size_t		c;
	int			a;

	for (a = 0; g != NULL && a < ctx->nqi; a++)
		g->levels[a] = (uint8_t) levels[a];
	for (c = 0; c < cells; c++)
	{
		uint32_t   *d = ctx->dense + c * stride;
		size_t		rest = c;
		bool		fresh;
		int			i;

		if (d[0] == 0)
			continue;
		for (a = 0; a < ctx->nqi; a++)
		{
			codes[a] = (uint32_t) (rest % ctx->ncodes[a][levels[a]]);
			rest /= ctx->ncodes[a][levels[a]];
		}
		i = g == NULL ? -1 : fd_groups_find(ctx, g, codes, fd_group_key(ctx, codes), &fresh);
		if (i >= 0)
		{
			g->size[i] = (int) d[0];
			if (ctx->nhist > 0)
				memcpy(g->hist + (size_t) i * ctx->nhist, d + 1, sizeof(uint32_t) * ctx->nhist);
		}
		memset(d, 0, sizeof(uint32_t) * stride);
	}
	if (g != NULL && g->ngroups != ngroups)
	{
		fd_groups_free(g);
		return NULL;
	}
	return g;
}

/* A node's groups by a direct count over the folded rows; NULL: not done */
static FdGroups *
dense_scan(FdContext *ctx, const int *levels)
{
	size_t		stride = 1 + ctx->nhist;
	size_t		cells = dense_cells(ctx, levels, ctx->nbase);
	int			ngroups = 0;
	int			r;
	int			a;

	if (cells == 0)
		return NULL;
	dense_trans(ctx, levels, NULL);
	for (r = 0; r < ctx->nbase; r++)
	{
		uint64_t	cell = 0;
		uint32_t   *d;

		for (a = 0; a < ctx->nqi; a++)
			cell += ctx->trans[a][ctx->base_qi[a][r]];
		d = ctx->dense + cell * stride;
		ngroups += d[0] == 0;
		d[0] += ctx->base_w[r];
		if (ctx->nhist > 0)
			d[1 + ctx->base_sens[r]] += ctx->base_w[r];
	}
	return dense_collect(ctx, levels, cells, ngroups);
}

/* A node's groups by a direct count over a finer node's groups; NULL: not done */
static FdGroups *
dense_rollup(FdContext *ctx, const FdGroups *f, const int *levels)
{
	size_t		stride = 1 + ctx->nhist;
	size_t		cells = dense_cells(ctx, levels, f->ngroups);
	int			ngroups = 0;
	int			i;
	int			a;
	int			s;

	if (cells == 0)
		return NULL;
	dense_trans(ctx, levels, f->levels);
	for (i = 0; i < f->ngroups; i++)
	{
		const uint32_t *fc = f->codes + (size_t) i * ctx->nqi;
		uint64_t	cell = 0;
		uint32_t   *d;

		for (a = 0; a < ctx->nqi; a++)
			cell += ctx->trans[a][fc[a]];
		d = ctx->dense + cell * stride;
		ngroups += d[0] == 0;
		d[0] += f->size[i];
		for (s = 0; s < ctx->nhist; s++)
			d[1 + s] += f->hist[(size_t) i * ctx->nhist + s];
	}
	return dense_collect(ctx, levels, cells, ngroups);
}

/* Bytes a group table holds */
static size_t
groups_bytes(const FdContext *ctx, const FdGroups *g)
{
	return (size_t) g->cap * (sizeof(uint32_t) * (ctx->nqi + ctx->nhist) + sizeof(int) +
							  sizeof(uint64_t)) +
		sizeof(int) * (size_t) (g->hmask + 1);
}

/* Drop every cached group table */
void
fd_cache_clear(FdContext *ctx)
{
	int			i;

	for (i = 0; i < FD_CACHE_SLOTS; i++)
	{
		fd_groups_free(ctx->cache[i]);
		ctx->cache[i] = NULL;
	}
}

/* Keep a group table in the cache, evicting the least recently used; false: not kept */
static bool
cache_put(FdContext *ctx, FdGroups *g)
{
	size_t		need = groups_bytes(ctx, g);

	if (need > FD_CACHE_BYTES / 2)
		return false;
	for (;;)
	{
		size_t		total = need;
		int			empty = -1;
		int			lru = -1;
		int			i;

		for (i = 0; i < FD_CACHE_SLOTS; i++)
		{
			if (ctx->cache[i] == NULL)
			{
				if (empty < 0)
					empty = i;
				continue;
			}
			total += groups_bytes(ctx, ctx->cache[i]);
			if (lru < 0 || ctx->cache[i]->used < ctx->cache[lru]->used)
				lru = i;
		}
		if (empty >= 0 && total <= FD_CACHE_BYTES)
		{
			g->used = ++ctx->clock;
			ctx->cache[empty] = g;
			return true;
		}
		if (lru < 0)
			return false;
		fd_groups_free(ctx->cache[lru]);
		ctx->cache[lru] = NULL;
	}
}

/* The cached node finer than levels on every attribute with the fewest groups */
static FdGroups *
cache_finer(FdContext *ctx, const int *levels)
{
	FdGroups   *best = NULL;
	int			i;
	int			a;

	for (i = 0; i < FD_CACHE_SLOTS; i++)
	{
		FdGroups   *g = ctx->cache[i];

		if (g == NULL)
			continue;
		for (a = 0; a < ctx->nqi; a++)
			if (g->levels[a] > levels[a])
				break;
		if (a == ctx->nqi && (best == NULL || g->ngroups < best->ngroups))
			best = g;
	}
	if (best != NULL)
		best->used = ++ctx->clock;
	return best;
}

/* Sort counts in decreasing order */
static int
cmp_desc(const void *x, const void *y)
{
	uint32_t	a = *(const uint32_t *) x;
	uint32_t	b = *(const uint32_t *) y;

	return a < b ? 1 : (a > b ? -1 : 0);
}

/* Sort m counts in decreasing order: by insertion when few */
static void
sort_desc(uint32_t *r, int m)
{
	int			i;

	if (m > 32)
	{
		qsort(r, m, sizeof(uint32_t), cmp_desc);
		return;
	}
	for (i = 1; i < m; i++)
	{
		uint32_t	v = r[i];
		int			j = i;

		while (j > 0 && r[j - 1] < v)
		{
			r[j] = r[j - 1];
			j--;
		}
		r[j] = v;
	}
}

/* The greatest l for which a histogram is recursive (c,l)-diverse; 0 if none */
static int
recursive_l(const FdContext *ctx, const uint32_t *hist, int size)
{
	uint32_t   *r = ctx->sorted;
	double		tail = size;
	int			m = 0;
	int			l;
	int			s;

	for (s = 0; s < ctx->nsens; s++)
		if (hist[s] > 0)
			r[m++] = hist[s];
	sort_desc(r, m);

	/* (c,l) holds iff r1 < c (r_l + ... + r_m); the tail only shrinks with l */
	for (l = 1; l <= m; l++)
	{
		if (!((double) r[0] < ctx->p.rec_c * tail))
			break;
		tail -= r[l - 1];
	}
	return l - 1;
}

/* A histogram's EMD to the whole table: ordered or equal-distance */
static double
group_emd(const FdContext *ctx, const uint32_t *hist, int size)
{
	double		inv = 1.0 / size;
	double		sum = 0.0;
	double		cum = 0.0;
	int			s;

	if (ctx->numeric)
	{
		if (ctx->nsens < 2)
			return 0.0;
		for (s = 0; s < ctx->nsens; s++)
		{
			cum += (double) hist[s] * inv - ctx->qdist[s];
			sum += cum < 0 ? -cum : cum;
		}
		return sum / (ctx->nsens - 1);
	}
	for (s = 0; s < ctx->nsens; s++)
	{
		double		d = (double) hist[s] * inv - ctx->qdist[s];

		sum += d < 0 ? -d : d;
	}
	return sum / 2.0;
}

/* Whether a group passes every criterion; fills its measures */
bool
fd_group_passes(const FdContext *ctx, int size, const uint32_t *hist, int *distinct,
				int *recl, double *emd)
{
	const FdParams *p = &ctx->p;
	bool		pass = size >= p->k;
	int			s;

	*distinct = 0;
	*recl = 0;
	*emd = 0.0;
	if (ctx->nhist == 0)
		return pass;
	for (s = 0; s < ctx->nsens; s++)
		if (hist[s] > 0)
			(*distinct)++;
	if (*distinct < p->l_distinct)
		pass = false;
	if (p->rec_l > 0)
	{
		*recl = recursive_l(ctx, hist, size);
		if (*recl < p->rec_l)
			pass = false;
	}
	*emd = group_emd(ctx, hist, size);
	if (p->t != FD_T_OFF && *emd > p->t + FD_EMD_SLACK)
		pass = false;
	return pass;
}

/* The measures of a node's table from its groups */
static void
evaluate(FdContext *ctx, const FdGroups *g, FdMeasures *m)
{
	int			i;
	int			a;

	memset(m, 0, sizeof(*m));
	if (++ctx->stampval == UINT32_MAX)
	{
		for (a = 0; a < ctx->nqi; a++)
		{
			uint32_t	maxcodes = 0;
			int			l;

			for (l = 0; l < ctx->nlevels[a]; l++)
				if (ctx->ncodes[a][l] > maxcodes)
					maxcodes = ctx->ncodes[a][l];
			memset(ctx->stamp[a], 0, sizeof(uint32_t) * maxcodes);
		}
		ctx->stampval = 1;
	}
	for (i = 0; i < g->ngroups; i++)
	{
		const uint32_t *hist = ctx->nhist ? g->hist + (size_t) i * ctx->nhist : NULL;
		int			d;
		int			rl;
		double		emd;

		if (g->size[i] < ctx->p.k || !fd_group_passes(ctx, g->size[i], hist, &d, &rl, &emd))
		{
			m->failing_groups++;
			m->suppressed += g->size[i];
			continue;
		}
		if (m->groups == 0 || g->size[i] < m->min_group)
			m->min_group = g->size[i];
		if (m->groups == 0 || d < m->min_distinct)
			m->min_distinct = d;
		if (m->groups == 0 || rl < m->min_recursive_l)
			m->min_recursive_l = rl;
		if (emd > m->max_emd)
			m->max_emd = emd;
		m->groups++;
		for (a = 0; a < ctx->nqi; a++)
		{
			uint32_t	c = g->codes[(size_t) i * ctx->nqi + a];

			if (ctx->stamp[a][c] != ctx->stampval)
			{
				ctx->stamp[a][c] = ctx->stampval;
				m->e[a]++;
			}
		}
	}
	m->qualifies = m->suppressed <= ctx->p.max_suppressed && m->groups > 0;
	m->score = fd_score(ctx, m->e);
}

/* The memo slot of a node: its entry, or the empty slot where it belongs */
static FdMemoEntry *
memo_slot(const FdContext *ctx, const uint8_t *key)
{
	uint32_t	codes[FD_MAX_QI];
	uint32_t	s;
	int			a;

	for (a = 0; a < ctx->nqi; a++)
		codes[a] = key[a];
	s = (uint32_t) fd_hash_codes(codes, ctx->nqi) & ctx->memo_mask;
	while (ctx->memo[s].full && memcmp(ctx->memo[s].levels, key, ctx->nqi) != 0)
		s = (s + 1) & ctx->memo_mask;
	return &ctx->memo[s];
}

/* Memorize a node's measures, growing the memo when half full */
static FdStatus
memo_put(FdContext *ctx, const uint8_t *key, const FdMeasures *m)
{
	FdMemoEntry *e;

	if ((uint32_t) (ctx->memo_count + 1) * 2 > ctx->memo_mask + 1)
	{
		FdMemoEntry *old = ctx->memo;
		uint32_t	oldsize = ctx->memo_mask + 1;
		uint32_t	i;

		ctx->memo = ke_calloc((size_t) oldsize * 2, sizeof(FdMemoEntry));
		if (ctx->memo == NULL)
		{
			ctx->memo = old;
			return FD_ERR_NOMEM;
		}
		ctx->memo_mask = oldsize * 2 - 1;
		for (i = 0; i < oldsize; i++)
			if (old[i].full)
				*memo_slot(ctx, old[i].levels) = old[i];
		ke_free(old);
	}
	e = memo_slot(ctx, key);
	if (!e->full)
		ctx->memo_count++;
	e->full = true;
	memcpy(e->levels, key, ctx->nqi);
	e->m = *m;
	return FD_OK;
}

/* The groups of a node: rolled up from the cache when it can, else scanned */
static FdGroups *
node_groups(FdContext *ctx, const int *levels)
{
	FdGroups   *f = cache_finer(ctx, levels);

	FdGroups   *g;

	if (f != NULL)
	{
		ctx->counters.rollups++;
		g = dense_rollup(ctx, f, levels);
		return g != NULL ? g : groups_rollup(ctx, f, levels);
	}
	ctx->counters.scans++;
	g = dense_scan(ctx, levels);
	return g != NULL ? g : groups_scan_base(ctx, levels);
}

/* Evaluate the full-domain table at a node (a level per QI) */
FdStatus
fd_check(FdContext *ctx, const int *levels, FdMeasures *m)
{
	uint8_t		key[FD_MAX_QI];
	FdMemoEntry *e;
	FdGroups   *g;
	int			a;

	ke_check_interrupts();
	for (a = 0; a < ctx->nqi; a++)
	{
		if (levels[a] < 0 || levels[a] >= ctx->nlevels[a])
			return FD_ERR_ARG;
		key[a] = (uint8_t) levels[a];
	}
	e = memo_slot(ctx, key);
	if (e->full)
	{
		ctx->counters.memo_hits++;
		*m = e->m;
		return FD_OK;
	}
	if ((g = node_groups(ctx, levels)) == NULL)
		return FD_ERR_NOMEM;
	ctx->counters.checks++;
	evaluate(ctx, g, m);
	if (!cache_put(ctx, g))
		fd_groups_free(g);
	return memo_put(ctx, key, m);
}

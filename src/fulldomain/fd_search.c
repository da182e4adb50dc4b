/*
 * fd_search.c
 *		The search entry point: choose a full-domain node (PrivacyFrost2 or
 *		the exact search), then publish it.
 *
 * The context's memo and cache survive between searches, so a second
 * search on the same context answers from memory what the first already
 * checked; each result's counters count its own search only.
 */
#include <string.h>

#include "ke_alloc.h"
#include "fd_int.h"

/* Subtract counters: what happened since before */
static void
counters_since(const FdCounters *before, const FdCounters *now, FdCounters *out)
{
	out->checks = now->checks - before->checks;
	out->rollups = now->rollups - before->rollups;
	out->scans = now->scans - before->scans;
	out->memo_hits = now->memo_hits - before->memo_hits;
	out->bound_skips = now->bound_skips - before->bound_skips;
	out->tagged = now->tagged - before->tagged;
	out->lattice_nodes = now->lattice_nodes;
}

/* Search for a node as o asks and publish it; *res is NULL on failure */
FdStatus
fd_search(FdContext *ctx, const FdSearchOpts *o, FdResult **res, FdError *err)
{
	FdSearchOpts defaults;
	FdCounters	before = ctx->counters;
	FdResult   *r;
	int			node[FD_MAX_QI];
	FdStatus	st;

	*res = NULL;
	fd_seterr(err, FD_OK, -1, "ok");
	if (o == NULL)
	{
		fd_search_opts_init(&defaults);
		o = &defaults;
	}
	ctx->counters.lattice_nodes = 0;
	if (o->method == FD_METHOD_OPTIMAL)
		st = fd_optimal(ctx, o, node, err);
	else if (o->method == FD_METHOD_FROST)
		st = fd_frost(ctx, o, node, err);
	else
	{
		fd_seterr(err, FD_ERR_ARG, -1, "unknown search method %d", (int) o->method);
		return FD_ERR_ARG;
	}
	if (st != FD_OK)
	{
		if (st == FD_ERR_NOMEM)
			fd_seterr(err, st, -1, "out of memory");
		return st;
	}
	if ((r = ke_calloc(1, sizeof(FdResult))) == NULL)
	{
		fd_seterr(err, FD_ERR_NOMEM, -1, "out of memory");
		return FD_ERR_NOMEM;
	}
	st = fd_publish(ctx, node, o->partial, r);
	if (st != FD_OK)
	{
		fd_seterr(err, st, -1, "%s", fd_status_name(st));
		fd_result_free(r);
		return st;
	}
	counters_since(&before, &ctx->counters, &r->counters);
	*res = r;
	return FD_OK;
}

/* Free a result (NULL is fine) */
void
fd_result_free(FdResult *r)
{
	if (r == NULL)
		return;
	ke_free(r->class_levels);
	ke_free(r->class_codes);
	ke_free(r->class_size);
	ke_free(r->row_class);
	ke_free(r);
}

/*-------------------------------------------------------------------------
 *
 * keanon.c
 *		Entry point of the keanon shared library.
 *
 * keanon keeps a table continuously (k,e)-anonymized inside the server.
 * This file only marks the library as a PostgreSQL module and runs each
 * module's initialization when the library is loaded: the index access
 * method registers its reloptions, the engine is told to allocate with
 * palloc, so that an error anywhere leaks nothing, and the maintenance
 * module registers the invalidation of its cache of watches.
 *
 * src/keanon.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "keanon_am.h"
#include "keanon_gen.h"
#include "keanon_watch.h"

PG_MODULE_MAGIC;

extern PGDLLEXPORT void _PG_init(void);

/* Run each module's initialization when the library is loaded */
void
_PG_init(void)
{
	KeanonInitReloptions();
	KeanonEngineAllocator();
	KeanonWatchCacheInit();
	KeanonGenCacheInit();
	KeanonLayoutInit();
	KeanonPlansInit();
	KeanonWorkerInit();
	KeanonAnonymizeInit();
}

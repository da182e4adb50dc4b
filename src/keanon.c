/*-------------------------------------------------------------------------
 *
 * keanon.c
 *		Entry point of the keanon shared library.
 *
 * keanon keeps a table continuously (k,e)-anonymized inside the server.
 * This file only marks the library as a PostgreSQL module and runs each
 * module's initialization when the library is loaded: the index access
 * method registers its reloptions, and the engine is told to allocate with
 * palloc, so that an error anywhere leaks nothing.
 *
 * src/keanon.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "keanon_am.h"

PG_MODULE_MAGIC;

extern PGDLLEXPORT void _PG_init(void);

/* Run each module's initialization when the library is loaded */
void
_PG_init(void)
{
	KeanonInitReloptions();
	KeanonEngineAllocator();
}

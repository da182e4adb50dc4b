/*-------------------------------------------------------------------------
 *
 * keanon.c
 *		Entry point of the keanon shared library.
 *
 * keanon keeps a table continuously (k,e)-anonymized inside the server.
 * This file only marks the library as a PostgreSQL module and runs each
 * module's initialization when the library is loaded.  The modules that
 * exist so far (the SQL-callable engine functions in sql_engine.c) need no
 * initialization: they keep no state between calls, register no GUC and
 * ask for no shared memory.
 *
 * src/keanon.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

extern PGDLLEXPORT void _PG_init(void);

/* Run each module's initialization when the library is loaded */
void
_PG_init(void)
{
}

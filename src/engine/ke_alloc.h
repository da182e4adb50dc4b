/*
 * ke_alloc.h
 *		The engine's memory: malloc and free unless replaced.
 */
#ifndef KE_ALLOC_H
#define KE_ALLOC_H

#include <stddef.h>

/*
 * Memory for the engine's own use: malloc and free unless replaced.  The
 * backend routes them to palloc, so an error thrown from a store callback
 * leaks nothing.  Allocation failure returns NULL.
 */
extern void ke_set_allocator(void *(*alloc_fn) (size_t),
							 void *(*realloc_fn) (void *, size_t),
							 void (*free_fn) (void *));
extern void *ke_malloc(size_t size);
extern void *ke_calloc(size_t n, size_t size);
extern void *ke_realloc(void *ptr, size_t size);
extern void ke_free(void *ptr);

#endif							/* KE_ALLOC_H */

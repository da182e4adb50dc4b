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

/*
 * A check for a request to stop, called by long loops: nothing unless
 * replaced.  The backend's stops the loop with an error when the query is
 * cancelled; as the memory is palloc's, that leaks nothing.
 */
extern void ke_set_interrupt_check(void (*check_fn) (void));
extern void ke_check_interrupts(void);

#endif							/* KE_ALLOC_H */

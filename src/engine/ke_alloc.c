/*
 * ke_alloc.c
 *		The engine's memory: malloc and free unless replaced (the backend
 *		routes them to palloc, so an error thrown from a store callback
 *		leaks nothing).  Allocation failure returns NULL.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ke_alloc.h"

static void *(*alloc_hook) (size_t) = malloc;
static void *(*realloc_hook) (void *, size_t) = realloc;
static void (*free_hook) (void *) = free;

/* Replace the engine's allocator */
void
ke_set_allocator(void *(*alloc_fn) (size_t), void *(*realloc_fn) (void *, size_t),
				 void (*free_fn) (void *))
{
	alloc_hook = alloc_fn;
	realloc_hook = realloc_fn;
	free_hook = free_fn;
}

/* Allocate size bytes */
void *
ke_malloc(size_t size)
{
	return alloc_hook(size > 0 ? size : 1);
}

/* Allocate n zeroed items */
void *
ke_calloc(size_t n, size_t size)
{
	void	   *p;

	if (size > 0 && n > SIZE_MAX / size)
		return NULL;
	p = ke_malloc(n * size);

	if (p != NULL)
		memset(p, 0, n * size);
	return p;
}

/* Resize an allocation (NULL allocates) */
void *
ke_realloc(void *ptr, size_t size)
{
	if (ptr == NULL)
		return ke_malloc(size);
	return realloc_hook(ptr, size > 0 ? size : 1);
}

/* Free an allocation (NULL is fine) */
void
ke_free(void *ptr)
{
	if (ptr != NULL)
		free_hook(ptr);
}

static void (*interrupt_hook) (void) = NULL;

void
ke_set_interrupt_check(void (*check_fn) (void))
{
	interrupt_hook = check_fn;
}

void
ke_check_interrupts(void)
{
	if (interrupt_hook != NULL)
		interrupt_hook();
}

/* grow.h: the one growable-array step (plugin and CLI). Arrays double from a first capacity;
 * growth can fail (the plugin never aborts on a full heap), and then the array is unchanged. */
#ifndef COMMLENS_GROW_H
#define COMMLENS_GROW_H
#include <stddef.h>
#include <stdint.h>

/* Makes room for `need` elements of `elem` bytes in the array *arr of capacity *cap
 * (`arr` is the address of the array pointer, e.g. &a->items). Capacity doubles, starting at
 * `first`, and never passes `max` (0: no bound); new elements are zeroed. 0 on success, -1
 * when out of memory or past `max` (nothing changed). */
int cl_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first, size_t max);
#endif

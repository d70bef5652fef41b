/* grow.c: see grow.h. */
#include "common/grow.h"
#include <stdlib.h>
#include <string.h>

int cl_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first, size_t max) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap : (first ? first : 1);
  while (nc < need) nc *= 2;
  if (max && nc > max) nc = max;
  if (nc < need) return -1;
  void *old;
  memcpy(&old, arr, sizeof old);          /* arr is a T**: no aliasing through void** */
  char *n = realloc(old, nc * elem);
  if (!n) return -1;
  memset(n + *cap * elem, 0, (nc - *cap) * elem);
  memcpy(arr, &n, sizeof n);
  *cap = nc;
  return 0;
}

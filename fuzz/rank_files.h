/* rank_files.h: how the CLI's fuzz targets (fuzz_cli, fuzz_pftrace) turn one input into
 * per-rank trace files: split at the line "#RANK#", at most `max` files written into `dir`.
 * Static functions only. */
#ifndef COMMLENS_FUZZ_RANK_FILES_H
#define COMMLENS_FUZZ_RANK_FILES_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_RANKS 4
/* Writes the files (paths[k]: dir/commlens-r<k>-fuzz-<100+k>.trace.json); returns how many. */
static int fuzz_rank_files(const char *dir, const uint8_t *data, size_t size, int max, char paths[][400]) {
  static const char sep[] = "\n#RANK#\n";
  int nf = 0;
  const uint8_t *p = data, *end = data + size;
  while (nf < max) {
    const uint8_t *cut = memmem(p, (size_t)(end - p), sep, sizeof sep - 1);
    const uint8_t *stop = cut && nf < max - 1 ? cut : end;
    snprintf(paths[nf], 400, "%s/commlens-r%d-fuzz-%d.trace.json", dir, nf, 100 + nf);
    FILE *f = fopen(paths[nf], "wb");
    if (!f) abort();
    fwrite(p, 1, (size_t)(stop - p), f);
    fclose(f);
    nf++;
    if (stop == end) break;
    p = stop + sizeof sep - 1;
  }
  return nf;
}
#endif

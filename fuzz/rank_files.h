/* rank_files.h: how the CLI's fuzz targets (fuzz_cli, fuzz_pftrace, fuzz_flight) turn one input
 * into per-rank trace files (split at the line "#RANK#", at most `max` files written into `dir`)
 * and load them as `commlens` loads a directory. Static functions only. */
#ifndef COMMLENS_FUZZ_RANK_FILES_H
#define COMMLENS_FUZZ_RANK_FILES_H
#include "tools/commlens/analyse/clock_align.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_MAX_RANKS 4
/* Writes the files (paths[k]: dir/<name(k)>, name(k) filled by `name`, which may be NULL:
 * commlens-r<k>-fuzz-<100+k>.trace.json); returns how many. */
typedef void (*fuzz_name_fn)(char *out, size_t n, int k);
static int fuzz_rank_files(const char *dir, const uint8_t *data, size_t size, int max, char paths[][400],
                           fuzz_name_fn name) {
  static const char sep[] = "\n#RANK#\n";
  int nf = 0;
  const uint8_t *p = data, *end = data + size;
  while (nf < max) {
    const uint8_t *cut = memmem(p, (size_t)(end - p), sep, sizeof sep - 1);
    const uint8_t *stop = cut && nf < max - 1 ? cut : end;
    char nm[200];
    if (name) name(nm, sizeof nm, nf);
    else snprintf(nm, sizeof nm, "commlens-r%d-fuzz-%d.trace.json", nf, 100 + nf);
    snprintf(paths[nf], 400, "%s/%s", dir, nm);
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

/* A fresh directory $TMPDIR/commlens-<tag>-XXXXXX (or under /tmp) into dir, and stderr sent to
 * /dev/null (the CLI's complaints; sanitizers and libFuzzer write to fd 2). Returns that
 * stream; exits when the directory cannot be made (the fuzzer's start-up). */
static FILE *fuzz_quiet_dir(char *dir, size_t n, const char *tag) {
  snprintf(dir, n, "%s/commlens-%s-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", tag);
  if (!mkdtemp(dir)) { perror("mkdtemp"); exit(1); }
  FILE *null = fopen("/dev/null", "w");
  stderr = null;
  return null;
}

/* One input as a loaded job: its rank files written into dir (named by `name`, NULL: the plain
 * trace names), loaded, instances matched, clocks aligned. Use job and cm only when loaded;
 * fuzz_job_end frees both and removes the files. */
typedef struct { cl_job job; cl_clock_model cm; int loaded, nf; char paths[FUZZ_MAX_RANKS][400]; } fuzz_job;
static int fuzz_job_begin(fuzz_job *fj, const char *dir, const uint8_t *data, size_t size, int max, fuzz_name_fn name) {
  char *dirs[1] = {(char *)dir};
  fj->nf = fuzz_rank_files(dir, data, size, max, fj->paths, name);
  fj->loaded = cl_job_load(&fj->job, dirs, 1, 1) > 0;
  if (fj->loaded) {
    cl_job_instances(&fj->job);
    cl_clock_align(&fj->job, &fj->cm);
  }
  return fj->loaded;
}
static void fuzz_job_end(fuzz_job *fj) {
  if (fj->loaded) cl_cm_free(&fj->cm);
  cl_job_free(&fj->job);
  for (int i = 0; i < fj->nf; i++) unlink(fj->paths[i]);
}
#endif

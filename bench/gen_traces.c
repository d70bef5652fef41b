/* gen_traces.c: writes a synthetic job of per-rank commlens traces for the CLI scale bench
 * (bench/cli_scale.sh), using the same model as the CLI tests (test/tools/synth_gen.h).
 * usage: gen_traces DIR NRANKS EVENTS_PER_RANK [PROCS] [--gz] [--per-host N] [--digest NCOLL]
 *        [--late NS] [--late-every N] [--phases] [--tag-every N]
 * (--per-host: ranks per host, 8 by default; each host but the first has its own clock offset;
 * --digest: digests of NCOLL collectives per rank instead of traces, EVENTS_PER_RANK unused;
 * --late NS: how late the planted straggler (rank NRANKS/3) is, 300 us by default, on every
 * collective or, with --late-every N, on every Nth (one late on all is indistinguishable from
 * its host's clock offset); the planted
 * slow channel is channel 5 of rank NRANKS/2)
 * Build: cc -O2 -I. -Itest/tools -o build/gen_traces bench/gen_traces.c exporters/digest.c
 *        common/digest_codec.c common/grow.c -lz */
#include "synth_gen.h"
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: gen_traces DIR NRANKS EVENTS_PER_RANK [PROCS] [--gz] [--per-host N] [--digest NCOLL] [--late NS] [--late-every N] [--phases] [--tag-every N]\n"); return 2; }
  synth_cfg c; synth_defaults(&c);
  c.dir = argv[1]; c.nranks = atoi(argv[2]);
  long ev = atol(argv[3]);
  int procs = argc > 4 ? atoi(argv[4]) : 2;
  int digest = 0;
  long late = 300000;
  int every = 0, phases = 0, tag_every = 0;
  for (int i = 5; i < argc; i++) {
    if (!strcmp(argv[i], "--gz")) c.gz = 1;
    else if (!strcmp(argv[i], "--late") && i + 1 < argc && atol(argv[i + 1]) > 0) late = atol(argv[++i]);
    else if (!strcmp(argv[i], "--late-every") && i + 1 < argc && atoi(argv[i + 1]) > 0) every = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--digest") && i + 1 < argc && atoi(argv[i + 1]) > 0) { digest = 1; c.ncoll = atoi(argv[++i]); }
    else if (!strcmp(argv[i], "--per-host") && i + 1 < argc && atoi(argv[i + 1]) > 0) c.ranks_per_host = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--phases")) phases = 1;   /* v7 kernel phases on every collective */
    else if (!strcmp(argv[i], "--tag-every") && i + 1 < argc && atoi(argv[i + 1]) > 0) tag_every = atoi(argv[++i]);
    else { fprintf(stderr, "gen_traces: unknown argument '%s'\n", argv[i]); return 2; }
  }
  c.nch = 8; c.nsteps = 8; c.nvtx_every = 20;
  c.phases = phases; c.tag_every = tag_every;
  c.late_rank = c.nranks / 3; c.late_ns = late; c.late_every = every; c.slow_rank = c.nranks / 2; c.slow_ch = 5; c.slow_factor = 2.0;
  if (!digest) c.ncoll = (int)(ev / (2 + c.nch * (1 + c.nsteps)));   /* events per collective on one rank */
  if (procs < 1) procs = 1;
  for (int p = 0; p < procs; p++) {
    if (fork() == 0) {
      char path[1024];
      for (int r = p; r < c.nranks; r += procs)
        if ((digest ? synth_write_rank_digest : synth_write_rank)(&c, r, path, sizeof path)) { perror(path); _exit(1); }
      _exit(0);
    }
  }
  int st, bad = 0;
  while (wait(&st) > 0) bad |= !WIFEXITED(st) || WEXITSTATUS(st);
  return bad;
}

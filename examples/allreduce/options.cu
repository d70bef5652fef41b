/* options.cu: clex's command line: --help's text, the parsers, and the rules that tie options to a
 * mode (one process per GPU, or one process driving several). Nothing here touches CUDA or NCCL. */
#include "clex.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

thread_local int g_rank = -1;

void die(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "clex[rank %d]: error: ", g_rank);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stdout);
  exit(1);
}

const char *const op_names[OP_COUNT] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                        "sendrecv"};
const char *const compute_names[] = {"none", "overlap", "serial", NULL};
static const char *const delay_names[] = {"host", "stream", NULL};
static const char *const init_names[] = {"all", "group", NULL};

static void usage(FILE *f) {
  fprintf(f,
    "usage: clex --rank R --nranks N --id-file PATH [options]     (one process per GPU)\n"
    "       clex --devices N|D0,D1,... [--threads 0|1] [options]   (one process, several GPUs)\n"
    "  --device D           CUDA device (default: R %% visible device count)\n"
    "  --ops LIST           allreduce,allgather,reducescatter,broadcast,sendrecv (default allreduce)\n"
    "  --min-bytes S        smallest size, suffixes K M G (default 8)\n"
    "  --max-bytes S        largest size (default 256M)\n"
    "  --factor F           size multiplier (default 2)\n"
    "  --iters N            timed iterations per size (default 20)\n"
    "  --warmup W           untimed iterations per size (default 5; capped at iters/4, >= 1)\n"
    "  --iter-bytes S       cap iterations so iters*size <= S, but at least --min-iters\n"
    "  --min-iters N        floor for --iter-bytes (default 5)\n"
    "  --compute MODE       none | overlap (second stream, hides comm) | serial (same stream,\n"
    "                       exposes comm) (default none)\n"
    "  --compute-us U       compute kernel length per step in us (default 500)\n"
    "  --delay-rank R       rank R holds back each of its collectives (a straggler)\n"
    "  --delay-us U         by how long (default 0)\n"
    "  --delay-how H        host: the thread issuing rank R's collectives sleeps (default with one\n"
    "                       process or one thread per GPU); stream: a spin kernel holds rank R's\n"
    "                       stream ahead of each collective (default, and the only choice, with\n"
    "                       --devices --threads 0: one thread issues for every GPU)\n"
    "  --comms K            K communicators (1 + K-1 ncclCommSplit), round-robin (default 1)\n"
    "  --csv PATH           per-iteration latencies op,bytes,iter,us,step_us ('%%r' -> rank)\n"
    "  --abort-after N      ncclCommAbort every communicator once N collectives have completed\n"
    "                       (0: right after init), then exit 0 without destroying them\n"
    "  --graph 0|1          1: capture each size's step (compute + collective) once into a CUDA\n"
    "                       graph and replay it every iteration; time(us) is then the whole step\n"
    "one process, several GPUs (leave out --rank, --nranks, --id-file and --device):\n"
    "  --devices N|LIST     drive N GPUs (devices 0..N-1) or the listed ones (D0,D1,...) as ranks\n"
    "                       0..N-1 of one communicator (--comms splits it as above)\n"
    "  --threads 0|1        0 (default): one thread issues every GPU's calls inside ncclGroupStart/\n"
    "                       ncclGroupEnd; 1: one pthread per GPU, each its own rank from one\n"
    "                       ncclUniqueId in memory, all meeting at a barrier before every step\n"
    "  --init all|group     with --threads 0: ncclCommInitAll (default), or ncclGroupStart + one\n"
    "                       ncclCommInitRank per GPU with one id\n"
    "  Result rows and CSV rows start with the rank; a --csv PATH without %%r holds every rank.\n"
    "size means total buffer bytes as in nccl-tests: allgather receives it, reducescatter sends it.\n");
}

static size_t parse_size(const char *opt, const char *s) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) die("%s: bad size '%s'", opt, s);
  switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') end++;
  if (*end) die("%s: bad size '%s'", opt, s);
  return (size_t)v;
}

static long parse_long(const char *opt, const char *s, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    die("%s: expected an integer in [%ld, %ld], got '%s'", opt, lo, hi, s);
  return v;
}

/* The index of `v` in the NULL-ended `names`, or death naming the choices. */
static int parse_name(const char *opt, const char *v, const char *const *names) {
  for (int k = 0; names[k]; k++)
    if (!strcmp(v, names[k])) return k;
  char choices[128] = "";
  for (int k = 0; names[k]; k++)
    snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s", k ? ", " : "", names[k]);
  die("%s: expected one of %s, got '%s'", opt, choices, v);
  return -1;
}

/* Splits a comma list into `out` (at most `max` items, each one of `names`, or a number in
 * [0, 1023] when `names` is NULL); returns how many. */
static int parse_list(const char *opt, const char *list, const char *const *names, int *out, int max) {
  char buf[256];
  if (strlen(list) >= sizeof buf) die("%s: list too long", opt);
  strcpy(buf, list);
  int n = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == max) die("%s: more than %d items", opt, max);
    out[n++] = names ? parse_name(opt, t, names) : (int)parse_long(opt, t, 0, 1023);
  }
  if (n == 0) die("%s: empty list", opt);
  return n;
}

/* --devices N means devices 0..N-1; a list (with a comma) names them. */
static void parse_devices(struct options *o, const char *v) {
  if (!strchr(v, ',')) {
    o->ndevices = (int)parse_long("--devices", v, 1, MAX_DEVICES);
    for (int i = 0; i < o->ndevices; i++) o->devices[i] = i;
    return;
  }
  o->ndevices = parse_list("--devices", v, NULL, o->devices, MAX_DEVICES);
  for (int i = 0; i < o->ndevices; i++)
    for (int k = 0; k < i; k++)
      if (o->devices[k] == o->devices[i]) die("--devices: device %d is listed twice", o->devices[i]);
}

/* The rules that tie options together, and the defaults that depend on the mode. */
static void check_modes(struct options *o) {
  if (o->ndevices == 0) {
    if (o->rank < 0 || o->nranks < 1 || !o->id_file)
      die("--rank, --nranks and --id-file are required (or --devices for one process)");
    if (o->rank >= o->nranks) die("--rank %d is not below --nranks %d", o->rank, o->nranks);
    if (o->threads >= 0 || o->init != INIT_UNSET) die("--threads and --init need --devices");
    if (o->delay_how == DELAY_UNSET) o->delay_how = DELAY_HOST;
    return;
  }
  if (o->rank >= 0 || o->nranks >= 0 || o->id_file || o->device >= 0)
    die("--devices runs every rank in this process: leave out --rank, --nranks, --id-file and --device");
  o->nranks = o->ndevices;
  if (o->threads < 0) o->threads = 0;
  if (o->threads && o->init != INIT_UNSET) die("--init applies to --threads 0 (threads use ncclCommInitRank)");
  if (o->init == INIT_UNSET) o->init = INIT_ALL;
  if (o->delay_how == DELAY_UNSET) o->delay_how = o->threads ? DELAY_HOST : DELAY_STREAM;
  if (o->delay_how == DELAY_HOST && !o->threads)
    die("--delay-how host needs --threads 1: one thread issues for every GPU, so it cannot sleep for one");
}

void parse_args(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  o->rank = -1; o->nranks = -1; o->device = -1;
  o->ops[0] = OP_ALLREDUCE; o->nops = 1;
  o->min_bytes = 8; o->max_bytes = (size_t)256 << 20; o->factor = 2;
  o->iters = 20; o->warmup = 5; o->min_iters = 5;
  o->compute = COMPUTE_NONE; o->compute_us = 500;
  o->delay_rank = -1; o->delay_how = DELAY_UNSET; o->comms = 1; o->abort_after = -1;
  o->threads = -1; o->init = INIT_UNSET;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); exit(0); }
    if (i + 1 >= argc) die("%s needs a value (see --help)", a);
    const char *v = argv[++i];
    if (!strcmp(a, "--rank")) o->rank = (int)parse_long(a, v, 0, INT_MAX);
    else if (!strcmp(a, "--nranks")) o->nranks = (int)parse_long(a, v, 1, INT_MAX);
    else if (!strcmp(a, "--id-file")) o->id_file = v;
    else if (!strcmp(a, "--device")) o->device = (int)parse_long(a, v, 0, 1023);
    else if (!strcmp(a, "--ops")) o->nops = parse_list(a, v, op_names, o->ops, OP_COUNT);
    else if (!strcmp(a, "--min-bytes")) o->min_bytes = parse_size(a, v);
    else if (!strcmp(a, "--max-bytes")) o->max_bytes = parse_size(a, v);
    else if (!strcmp(a, "--factor")) o->factor = (int)parse_long(a, v, 2, 1024);
    else if (!strcmp(a, "--iters")) o->iters = (int)parse_long(a, v, 1, 10000000);
    else if (!strcmp(a, "--warmup")) o->warmup = (int)parse_long(a, v, 0, 10000000);
    else if (!strcmp(a, "--min-iters")) o->min_iters = (int)parse_long(a, v, 1, 10000000);
    else if (!strcmp(a, "--iter-bytes")) o->iter_bytes = parse_size(a, v);
    else if (!strcmp(a, "--compute")) o->compute = parse_name(a, v, compute_names);
    else if (!strcmp(a, "--compute-us")) o->compute_us = (double)parse_long(a, v, 1, 100000000);
    else if (!strcmp(a, "--delay-rank")) o->delay_rank = (int)parse_long(a, v, -1, INT_MAX);
    else if (!strcmp(a, "--delay-us")) o->delay_us = parse_long(a, v, 0, 100000000);
    else if (!strcmp(a, "--delay-how")) o->delay_how = parse_name(a, v, delay_names);
    else if (!strcmp(a, "--comms")) o->comms = (int)parse_long(a, v, 1, 64);
    else if (!strcmp(a, "--csv")) o->csv = v;
    else if (!strcmp(a, "--abort-after")) o->abort_after = parse_long(a, v, 0, LONG_MAX);
    else if (!strcmp(a, "--graph")) o->graph = (int)parse_long(a, v, 0, 1);
    else if (!strcmp(a, "--devices")) parse_devices(o, v);
    else if (!strcmp(a, "--threads")) o->threads = (int)parse_long(a, v, 0, 1);
    else if (!strcmp(a, "--init")) o->init = parse_name(a, v, init_names);
    else die("unknown option '%s' (see --help)", a);
  }
  check_modes(o);
  if (o->min_bytes < 1 || o->min_bytes > o->max_bytes) die("need 1 <= --min-bytes <= --max-bytes");
}

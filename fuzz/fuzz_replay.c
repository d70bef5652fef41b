/* fuzz_replay.c: libFuzzer target over real NCCL call streams, mutated at the record level.
 * The recordings under test/data/real/ (what NCCL 2.28 really called, thread by thread) are
 * loaded once; each input picks one, keeps its inits and finalizes, takes a window of its
 * calls, and edits that window as a misbehaving or racing NCCL might: records dropped,
 * repeated, reordered, moved to another thread, handles crossed between events, states
 * renumbered, descriptor bytes changed (hex digits only, so every record still parses). The
 * result is replayed through tools/replay/replay.c (one thread per recorded thread, the global
 * order kept) into the plugin linked into this program. Oracle: no sanitizer report, every
 * call but init returns success, and the trace stays valid JSON (trace_check.h). */
#include "commlens/nccl_profiler_abi.h"
#include "tools/replay/replay.h"
#include "trace_check.h"
#include <dirent.h>
#include <stdint.h>
#include <zlib.h>

enum { MAXREC = 32, WINDOW = 400, MAXTHR = 4 };

typedef struct { char **line; size_t n; char head[128]; } rec_t;   /* a recording: header, call lines */
static rec_t g_rec[MAXREC];
static int g_nrec;
static char g_work[600];

static void load_rec(const char *path) {
  gzFile gz = gzopen(path, "rb");
  if (!gz || g_nrec == MAXREC) { if (gz) gzclose(gz); return; }
  rec_t *r = &g_rec[g_nrec];
  size_t cap = 0;
  static char buf[1 << 16];
  while (gzgets(gz, buf, sizeof buf)) {
    if (buf[0] == '#') { snprintf(r->head, sizeof r->head, "%s", buf); continue; }   /* its pid: ProxyOps stay ours */
    if (buf[0] == '\n') continue;
    if (r->n == cap) r->line = realloc(r->line, (cap = cap ? 2 * cap : 1024) * sizeof *r->line);
    r->line[r->n++] = strdup(buf);
  }
  gzclose(gz);
  if (!r->n) return;
  /* A communicator the job never finalized (JAX keeps its communicators until the process
   * exits) would keep the plugin's writer running across inputs, and the oracle would read a
   * trace while it is being written: each such one is finalized after the body, as at exit. */
  char last_t[32] = "0";
  sscanf(r->line[r->n - 1], "%*s %*s %*s %31s", last_t);
  size_t n0 = r->n;
  for (size_t i = 0; i < n0; i++) {
    char thr[16], abi[8], ctx[32];
    if (r->line[i][0] != 'I' || sscanf(r->line[i], "I %*s %15s %*s %7s %31s", thr, abi, ctx) != 3) continue;
    int done = 0;
    for (size_t j = 0; j < n0 && !done; j++) {
      char c2[32];
      done = r->line[j][0] == 'F' && sscanf(r->line[j], "F %*s %*s %*s %*s %31s", c2) == 1 && !strcmp(c2, ctx);
    }
    if (done) continue;
    if (r->n == cap) r->line = realloc(r->line, (cap = cap ? 2 * cap : 1024) * sizeof *r->line);
    snprintf(buf, sizeof buf, "F %zu %s %s %s %s\n", 1000000000 + i, thr, last_t, abi, ctx);
    r->line[r->n++] = strdup(buf);
  }
  g_nrec++;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  fz_env_init();
  const char *dir = getenv("FUZZ_REPLAY_DATA") ? getenv("FUZZ_REPLAY_DATA") : "test/data/real";
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[1024];
  while (d && (e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 7 || strcmp(e->d_name + l - 7, ".rec.gz")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    load_rec(path);
  }
  if (d) closedir(d);
  if (!g_nrec) { fprintf(stderr, "fuzz_replay: no recordings in %s (run from the repository root)\n", dir); exit(1); }
  /* recordings that name each communicator's GPU make it current through the stand-in libcuda
   * (test/fakes/fake_cuda.c; make fuzz-build builds it into build/) */
  if (!getenv("COMMLENS_FAKE_CUDA")) setenv("COMMLENS_FAKE_CUDA", "build/libcommlens-fakecuda.so", 1);
  snprintf(g_work, sizeof g_work, "%s.rec", g_dir);     /* beside the output directory */
  return 0;
}

/* Token k (space-separated) of a line: its start and length. Fields: K seq thr t abi ... */
static char *tok(char *s, int k, size_t *len) {
  for (int i = 0; i < k && *s; i++) { s += strcspn(s, " \n"); s += strspn(s, " "); }
  *len = strcspn(s, " \n");
  return s;
}
static char *with_tok(const char *line, int k, const char *val, size_t vlen) {
  size_t len;
  char *t = tok((char *)line, k, &len);
  size_t pre = (size_t)(t - line), post = strlen(t + len);
  char *out = malloc(pre + vlen + post + 1);
  memcpy(out, line, pre);
  memcpy(out + pre, val, vlen);
  memcpy(out + pre + vlen, t + len, post + 1);
  return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  const rec_t *rec = &g_rec[data[0] % g_nrec];
  /* inits first, then the window, then the finalizes: every context lives and ends */
  char **w = malloc((rec->n + 2 * WINDOW) * sizeof *w);
  size_t n = 0;
  for (size_t i = 0; i < rec->n; i++) if (rec->line[i][0] == 'I') w[n++] = strdup(rec->line[i]);
  size_t head = n, start = ((size_t)data[1] << 8 | data[2]) * 97 % rec->n;
  for (size_t i = start; i < rec->n && n - head < WINDOW; i++)
    if (rec->line[i][0] != 'I' && rec->line[i][0] != 'F') w[n++] = strdup(rec->line[i]);
  size_t body = n - head;
  for (size_t p = 3; p + 4 <= size && body; p += 4) {
    uint8_t op = data[p] % 8;
    size_t a = head + data[p + 1] % body, b = head + (data[p + 2] | (size_t)data[p + 3] << 8) % body;
    char *la = w[a], *nw = NULL;
    size_t len;
    switch (op) {
    case 0:                                   /* a record NCCL never made */
      free(la);
      memmove(&w[a], &w[a + 1], (n - a - 1) * sizeof *w);
      n--; body--;
      break;
    case 1:                                   /* a record made twice */
      if (body >= 2 * WINDOW - 1) break;
      memmove(&w[b + 1], &w[b], (n - b) * sizeof *w);
      w[b] = strdup(w[a < b ? a : a + 1]);
      n++; body++;
      break;
    case 2:                                   /* two records in the other order */
      w[a] = w[b]; w[b] = la;
      break;
    case 3: {                                 /* made on another thread */
      char t[2] = {(char)('0' + data[p + 2] % MAXTHR), 0};
      nw = with_tok(la, 2, t, 1);
      break;
    }
    case 4: {                                 /* one hex digit of the record changed */
      int k = 5 + data[p + 3] % 3;
      char *s = tok(la, k, &len);
      if (!len) break;
      size_t at = (size_t)data[p + 2] % len;
      /* not a start's type field (its first 8 bytes): NCCL's type decides which of its
       * pointers are strings, and a start of another type would hand the plugin pointers
       * NCCL never would; everything else may be anything */
      if (la[0] == 'S' && k == 7 && at < 16) break;
      if (len > 2 && s[1] == 'x' && at < 2) break;   /* a pointer's "0x" stays */
      if (strchr("0123456789abcdef", s[at])) s[at] = "0123456789abcdef"[data[p + 3] & 15];
      break;
    }
    case 5: {                                 /* a stop or state given another event's handle */
      if (la[0] != 'E' && la[0] != 'T') break;
      const char *lb = w[b];
      char *h = tok((char *)lb, lb[0] == 'S' ? 6 : 5, &len);
      if (len && lb[0] != 'I') nw = with_tok(la, 5, h, len);
      break;
    }
    case 6: {                                 /* a state NCCL does not have, or another one */
      if (la[0] != 'T') break;
      char num[16];
      int v = data[p + 2] < 200 ? data[p + 2] % 32 : (int)(int8_t)data[p + 3] * 1000;
      int k = snprintf(num, sizeof num, "%d", v);
      nw = with_tok(la, 6, num, (size_t)k);
      break;
    }
    default:                                  /* the stream ends here (a killed rank) */
      for (size_t i = b + 1; i < n; i++) free(w[i]);
      n = b + 1; body = n - head;
      break;
    }
    if (nw) { free(w[a]); w[a] = nw; }
  }
  FILE *f = fopen(g_work, "w");
  if (!f) { perror(g_work); abort(); }
  fputs(rec->head[0] ? rec->head : "# commlens-record 1 pid 1 rank 0\n", f);
  for (size_t i = 0; i < n; i++) fputs(w[i], f);
  for (size_t i = 0; i < rec->n; i++) if (rec->line[i][0] == 'F') fputs(rec->line[i], f);
  fclose(f);
  for (size_t i = 0; i < n; i++) free(w[i]);
  free(w);
  rp_stats st;
  if (rp_replay(g_work, "", &st) != 0) { fprintf(stderr, "replay: %s\n", st.err); abort(); }
  if (st.bad_rc) { fprintf(stderr, "%ld calls did not return ncclSuccess\n", st.bad_rc); abort(); }
  check_trace();
  return 0;
}

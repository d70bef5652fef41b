/* test_verdict_real.c: the clock model and the straggler verdict on the real traces kept in
 * test/data/traces/nccl2.28.3-h200x1-4rank-straggler (four processes time-sharing one H200,
 * rank 2 sleeping 3 ms before every collective). Read with the tests' own trace reader; the
 * instance key is (comm, func, seq). Ranks of one host must be at offset exactly 0, and rank 2
 * must be named from its host enqueue times and from its GPU starts alike (49 of 66 there: the
 * GPU's 2.26 ms slices decide who starts last). */
#include "tl.h"
#include "tools/commlens/base/util.h"
#include "tr_load.h"
#include "tools/commlens/analyse/clock_model.h"
#include "tools/commlens/analyse/straggler.h"
#include "tools/commlens/analyse/steps.h"
#include <dirent.h>

#define DIR_REAL "test/data/traces/nccl2.28.3-h200x1-4rank-straggler"
#define MAXR 8
#define MAXI 512

typedef struct { char comm[40], func[32]; int64_t seq, bytes; int64_t enq[MAXR], gs[MAXR], ge[MAXR]; uint8_t has[MAXR]; } inst;
static inst I[MAXI];
static int ninst, nranks;
static char host[MAXR][64];

static inst *find(const char *comm, const char *func, int64_t seq) {
  for (int k = 0; k < ninst; k++)
    if (I[k].seq == seq && !strcmp(I[k].comm, comm) && !strcmp(I[k].func, func)) return &I[k];
  if (ninst == MAXI) return NULL;
  inst *x = &I[ninst++];
  memset(x, 0, sizeof *x);
  snprintf(x->comm, sizeof x->comm, "%s", comm); snprintf(x->func, sizeof x->func, "%s", func);
  x->seq = seq;
  return x;
}

static int load_real(void) {
  if (nranks) return 1;
  DIR *d = opendir(DIR_REAL);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strstr(e->d_name, ".trace.json")) continue;
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s", DIR_REAL, e->d_name);
    tr_trace t;
    if (tr_load(&t, path, err, sizeof err)) continue;
    int64_t rank;
    json_object *h;
    if (tr_header_i64(&t, "rank", &rank) || rank < 0 || rank >= MAXR || !json_object_object_get_ex(t.header, "host", &h)) { tr_free(&t); continue; }
    snprintf(host[rank], sizeof host[rank], "%s", json_object_get_string(h));
    if (rank + 1 > nranks) nranks = (int)rank + 1;
    for (size_t i = 0; i < t.n; i++) {
      json_object *ev = tr_event(&t, i);
      const char *cat = tr_cat(ev), *comm = tr_arg_str(ev, "comm");
      int64_t ts, dur, seq, bytes = 0;
      if (tr_ph(ev) != 'X' || !cat || !comm || tr_ts_ns(ev, &ts) || tr_dur_ns(ev, &dur) || tr_arg_i64(ev, "seq", &seq)) continue;
      int gpu = !strcmp(cat, "coll_gpu");
      if (!gpu && strcmp(cat, "coll")) continue;
      inst *x = find(comm, tr_name(ev), seq);
      if (!x) continue;
      tr_arg_i64(ev, "bytes", &bytes);
      x->bytes = bytes;
      if (gpu) { x->gs[rank] = ts; x->ge[rank] = ts + dur; x->has[rank] |= 2; }
      else { x->enq[rank] = ts; x->has[rank] |= 1; }
    }
    tr_free(&t);
  }
  closedir(d);
  return nranks == 4;
}

/* The clock model and the verdict from `evidence` (ENQUEUE or GPU_START). */
static void verdict_of(enum cl_sg_evidence ev, cl_clock_model *m, cl_sg_verdict *v) {
  static cl_cm_rank cr[MAXR];
  static const char *hosts[MAXR];
  static cl_cm_inst ci[MAXI]; static cl_cm_obs co[MAXI * MAXR];
  static cl_sg_inst si[MAXI]; static cl_sg_arrival sa[MAXI * MAXR];
  for (int r = 0; r < nranks; r++) { cr[r] = (cl_cm_rank){host[r], NULL, NULL, 0, 0, 0, 0}; hosts[r] = host[r]; }
  uint32_t n = 0;
  for (int k = 0; k < ninst; k++) {
    ci[k] = (cl_cm_inst){n, 0, cl_cm_func_is_causal(I[k].func)};
    for (int r = 0; r < nranks; r++)
      if (I[k].has[r] == 3) { co[n++] = (cl_cm_obs){r, I[k].enq[r], I[k].ge[r]}; ci[k].count++; }
  }
  cl_cm_input in = {nranks, cr, (size_t)ninst, ci, co};
  cl_cm_build(&in, m);
  for (int k = 0; k < ninst; k++) {
    si[k] = (cl_sg_inst){1, I[k].seq, I[k].bytes, 1, -1, 0, ci[k].first, ci[k].count};
    for (uint32_t j = 0; j < ci[k].count; j++) {
      const cl_cm_obs *o = &co[ci[k].first + j];
      int64_t t = ev == CL_SG_ENQUEUE ? o->start : I[k].gs[o->rank];
      double e, lo, hi;
      cl_cm_offset(m, o->rank, t, &e, &lo, &hi);
      sa[ci[k].first + j] = (cl_sg_arrival){.who = o->rank, .value = cl_cm_align(m, o->rank, t), .err = (int64_t)((hi - lo) / 2),
                                            .end = cl_cm_align(m, o->rank, o->end)};
    }
  }
  cl_sg_input sin = {nranks, hosts, NULL, (size_t)ninst, si, sa, ev, 0, 0, 0, NULL, CL_SG_ENQUEUE, 0};
  cl_sg_analyse(&sin, v);
}

TL_TEST(one_host_one_clock_and_rank_2_named_from_either_evidence) {
  REQUIRE(load_real(), "the four traces of " DIR_REAL " load");
  CHECK(ninst == 72, "72 instances, got %d", ninst);
  static const enum cl_sg_evidence evs[2] = {CL_SG_ENQUEUE, CL_SG_GPU_START};
  for (int i = 0; i < 2; i++) {
    cl_clock_model m; cl_sg_verdict v;
    verdict_of(evs[i], &m, &v);
    CHECK(m.nclocks == 1 && m.npairs == 0, "one host: one clock (%d clocks)", m.nclocks);
    for (int r = 0; r < nranks; r++) {
      double e, lo, hi;
      cl_cm_offset(&m, r, I[10].enq[r], &e, &lo, &hi);
      CHECK(e == 0 && lo == 0 && hi == 0, "rank %d at offset exactly 0 (%g)", r, e);
    }
    char line[512];
    cl_sg_verdict_line(&v, line, sizeof line);
    CHECK(v.kind == CL_SG_STRAGGLER && v.straggler[0].who == 2, "%s: %s", cl_sg_evidence_name(evs[i]), line);
    CHECK(!strncmp(line, "rank 2 (host vm) is a straggler: late ", strlen("rank 2 (host vm) is a straggler: late ")), "%s", line);
    /* enqueues: the ranks learn of the previous collective's end a slice apart (a staircase
     * 0, +2.6, +5.0 ms), so rank 2's 3 ms sleep shows as 0.5-0.7 ms over rank 3, 62 times in 66 */
    if (evs[i] == CL_SG_ENQUEUE)
      CHECK(v.nstraggler == 1 && v.straggler[0].last_count >= 60 && v.straggler[0].median_lateness_ns > 300e3,
            "rank 2 alone, nearly always: %s", line);
    cl_sg_free(&v); cl_cm_free(&m);
  }
}

TL_MAIN("tools/verdict_real")

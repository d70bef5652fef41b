/* test_replay.c: COMMLENS_RECORD round trip. A child drives scenarios (a) and (b) with
 * recording on; a second fresh child replays the recording (replay.c: one thread per
 * recorded thread, global order, handle/context mapping); both traces must have the same
 * number of events per (ph, cat). Foreign PXN pointers in the recording pass through. */
#include "harness.h"
#include "tools/replay/replay.h"
#include "tr_load.h"
#include <sys/stat.h>
#include <unistd.h>

H_CHILD(record) {
  const char *v = getenv("H_ABI");
  int abi = v ? atoi(v) : 5;
  h_plugin p;
  REQUIRE(h_open(&p, NULL, abi) == 0, "load v%d", abi);
  void *ctx = NULL, *ctx2 = NULL;
  h_comm_info a = {0x1111, "rec-a", 1, 2, 0}, b = {0x2222, "rec-b", 1, 2, 1};
  REQUIRE(h_init(&p, &ctx, &a) == 0 && h_init(&p, &ctx2, &b) == 0, "init");
  h_opts o = {.nchannels = 3, .network = 1, .nsteps = 2, .proxy_ctrl = 1, .user_tag = 42};
  for (int i = 0; i < 4; i++) h_drive_coll(&p, ctx, &o, (uint64_t)i, NULL);
  h_drive_sendrecv(&p, ctx2, &o, 0, NULL);
  h_drive_coll(&p, ctx2, &o, 0, NULL);
  /* a PXN proxy op from another process: foreign context and parent */
  h_event e = {.type = CLABI_EV_PROXY_OP, .parent = (void *)0x5678, .pid = getpid() + 1,
               .channel = 1, .peer = 1, .nsteps = 1, .chunk_size = 4096, .is_send = 1};
  void *h = h_start(&p, (void *)0x1234, &e, NULL);
  h_stop(&p, h);
  h_finalize(&p, ctx2);
  h_finalize(&p, ctx);
  h_close(&p);
  CHECK(h_bad_rc == 0, "%d bad return codes", h_bad_rc);
}

H_CHILD(replay) {
  rp_stats st;
  int rc = rp_replay(getenv("H_REC"), NULL, &st);
  REQUIRE(rc == 0, "replay failed: %s", st.err);
  CHECK(st.inits == 2 && st.finalizes == 2, "inits %ld finalizes %ld", st.inits, st.finalizes);
  CHECK(st.nthreads >= 2, "recording has %d threads (user + proxy expected)", st.nthreads);
  CHECK(st.mapped_parents > 0, "no parent pointer was mapped");
  CHECK(st.foreign_passed > 0, "the foreign PXN pointers were not passed through");
  CHECK(st.bad_rc == 0, "%ld bad return codes", st.bad_rc);
}

/* counts per "ph/cat" of every non-metadata event */
typedef struct { char key[64]; long n; } kc;
static int count_keys(const tr_trace *t, kc *out, int max) {
  int nk = 0;
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    if (tr_ph(ev) == 'M') continue;
    char key[64];
    snprintf(key, sizeof key, "%c/%s", tr_ph(ev), tr_cat(ev) ? tr_cat(ev) : "-");
    int k;
    for (k = 0; k < nk && strcmp(out[k].key, key); k++) {}
    if (k == nk && nk < max) { snprintf(out[nk].key, sizeof out[nk].key, "%s", key); out[nk++].n = 0; }
    if (k < max) out[k].n++;
  }
  return nk;
}


static void round_trip(int abi) {
  char base[256], d1[300], d2[300], rec[300], e1[400], e2[400], e3[400], eabi[32];
  h_fresh_dir(base, sizeof base);
  snprintf(d1, sizeof d1, "%s/orig", base);
  snprintf(d2, sizeof d2, "%s/replayed", base);
  snprintf(rec, sizeof rec, "%s/rec", base);
  snprintf(e1, sizeof e1, "COMMLENS_DIR=%s", d1);
  snprintf(e2, sizeof e2, "COMMLENS_RECORD=%s", rec);
  snprintf(eabi, sizeof eabi, "H_ABI=%d", abi);
  const char *env1[] = {e1, e2, eabi, "COMMLENS_EVENTS=full", "COMMLENS_SUMMARY=off", NULL};
  CHECK(h_spawn("record", env1) == 0, "record child failed");
  char *recs[4];
  int nrec = h_find_files(rec, ".rec.gz", recs, 4);
  REQUIRE(nrec == 1, "%d recordings in %s", nrec, rec);
  snprintf(e2, sizeof e2, "COMMLENS_DIR=%s", d2);
  snprintf(e3, sizeof e3, "H_REC=%s", recs[0]);
  free(recs[0]);
  const char *env2[] = {e2, e3, "COMMLENS_RECORD", "COMMLENS_EVENTS=full", "COMMLENS_SUMMARY=off", NULL};
  CHECK(h_spawn("replay", env2) == 0, "replay child failed");
  tr_trace a, b;
  if (h_load_one_trace(d1, &a, NULL, 0)) return;
  if (h_load_one_trace(d2, &b, NULL, 0)) { tr_free(&a); return; }
  kc ka[64], kb[64];
  int na = count_keys(&a, ka, 64), nb = count_keys(&b, kb, 64);
  CHECK(na == nb, "%d categories recorded, %d replayed", na, nb);
  for (int i = 0; i < na; i++) {
    long other = -1;
    for (int j = 0; j < nb; j++) if (!strcmp(ka[i].key, kb[j].key)) other = kb[j].n;
    CHECK(other == ka[i].n, "v%d %s: %ld events originally, %ld replayed", abi, ka[i].key, ka[i].n, other);
  }
  CHECK(tr_count(&a, 'X', "coll") == 5, "coll %zu", tr_count(&a, 'X', "coll"));
  if (abi >= 7) {   /* the phases (3 per channel, 3 channels, 5 collectives + 1 send/recv pair) and tags */
    size_t ph = 0;   /* v7 kernel phases: children of their channel's kernel_ch, marked args.phase */
    for (size_t i = 0; i < b.n; i++) {
      json_object *ev = tr_event(&b, i);
      const char *cat = tr_cat(ev);
      ph += cat && !strcmp(cat, "kernel_ch") && tr_ph(ev) == 'X' && tr_arg(ev, "phase");
    }
    CHECK(ph == 54, "replayed kernel phases %zu", ph);
    size_t tagged = 0;
    for (size_t i = 0; i < b.n; i++) {
      const char *tg = tr_arg_str(tr_event(&b, i), "user_tag");
      tagged += tg && !strcmp(tg, "42") && tr_cat(tr_event(&b, i)) && !strcmp(tr_cat(tr_event(&b, i)), "coll_gpu");
    }
    CHECK(tagged == 5, "%zu replayed GPU spans with user_tag 42", tagged);
  }
  tr_free(&a);
  tr_free(&b);
  if (!tl_cur_failed) h_rm_rf(base);
  else fprintf(stderr, "  kept %s\n", base);
}

TL_TEST(record_replay_v5) { round_trip(5); }
TL_TEST(record_replay_v4) { round_trip(4); }
TL_TEST(record_replay_v1) { round_trip(1); }
TL_TEST(record_replay_v6) { round_trip(6); }
TL_TEST(record_replay_v7) { round_trip(7); }

H_MAIN("abi/replay")

/* test_sizes.c: buffer settings at the edges of their range, and what is counted when records
 * are lost. A ring larger than the budget shrinks to fit and says so once; a budget too small
 * for the threads present says so once and keeps recording what fits; every lost record is
 * counted, and so is every event lost with its parent (a proxy step whose proxy op was
 * dropped). Each case runs in a fresh process (the settings are read once). */
#include "harness.h"
#include "tr_load.h"
#include <json-c/json.h>
#include <pthread.h>
#include <unistd.h>

static int64_t stat_of(const tr_trace *t, const char *key) {
  int64_t v = -1;
  CHECK(tr_stats_i64(t, key, &v) == 0, "commlensStats.%s missing", key);
  return v;
}

/* 400 collectives of one rank from two threads (its own and one more, as NCCL's proxy thread
 * would be), paced so that the drain keeps up. Every thread gets a ring: nothing is lost for
 * want of one; whatever a starved drain lets a ring drop is counted. */
static h_plugin g_sp;
static void *g_sctx;
static void *drive_200(void *arg) {
  h_counts *c = arg;
  for (int i = 0; i < 200; i++) {
    h_drive_coll(&g_sp, g_sctx, &(h_opts){.network = 1, .same_thread_proxy = 1}, (uint64_t)i, c);
    usleep(1000);
  }
  return NULL;
}
H_CHILD(sized_job) {
  h_open_init(&g_sp, 5, &g_sctx);
  h_counts c[2];
  memset(c, 0, sizeof c);
  pthread_t t;
  pthread_create(&t, NULL, drive_200, &c[1]);
  drive_200(&c[0]);
  pthread_join(t, NULL);
  h_finalize(&g_sp, g_sctx);
  h_close(&g_sp);
  CHECK(h_bad_rc == 0, "%d calls failed", h_bad_rc);
  tr_trace t2;
  if (h_load_one_trace(getenv("COMMLENS_DIR"), &t2, NULL, 0)) return;
  int64_t dropped = stat_of(&t2, "dropped"), no_ring = stat_of(&t2, "dropped_no_ring");
  size_t colls = tr_count(&t2, 'X', "coll");
  CHECK(no_ring == 0, "%lld records of a thread that got no ring", (long long)no_ring);
  CHECK(colls > 0 && colls <= 400 && (int64_t)colls + dropped >= 400, "%zu of 400 collectives, %lld records dropped",
        colls, (long long)dropped);
  const char *say = getenv("SAYS");            /* the setting the one warning must name, or none */
  int warns = h_log_count(CLABI_LOG_WARN, NULL);
  if (say) CHECK(warns == 1 && h_log_count(CLABI_LOG_WARN, say) == 1, "want one warning naming %s; log:\n%s", say, h_log_text());
  else CHECK(warns == 0, "warnings: %s", h_log_text());
  tr_free(&t2);
}
static void sized(const char *setting, const char *says) {
  char s[64];
  snprintf(s, sizeof s, "SAYS=%s", says ? says : "");
  h_run_case("sized_job", (const char *const[]){"COMMLENS_CUPTI=0", setting, NULL},
             says ? (const char *const[]){s, NULL} : NULL, NULL);
}
TL_TEST(ring_larger_than_the_budget_shrinks_and_records) { sized("COMMLENS_RING_KB=65536", "COMMLENS_RING_KB"); }
TL_TEST(buffer_of_1_mb_records) { sized("COMMLENS_BUFFER_MB=1", "COMMLENS_BUFFER_MB"); }
TL_TEST(buffer_of_2_mb_records) { sized("COMMLENS_BUFFER_MB=2", "COMMLENS_BUFFER_MB"); }
TL_TEST(buffer_of_3_mb_records) { sized("COMMLENS_BUFFER_MB=3", "COMMLENS_BUFFER_MB"); }
TL_TEST(buffer_of_4_mb_records) { sized("COMMLENS_BUFFER_MB=4", "COMMLENS_BUFFER_MB"); }
TL_TEST(buffer_of_16_mb_records_silently) { sized("COMMLENS_BUFFER_MB=16", NULL); }

/* More threads at once than a 1 MiB budget holds rings for: one message, the threads that got
 * rings are recorded, every other record counted. */
static h_plugin g_p;
static void *g_ctx;
static pthread_barrier_t g_bar;
static void *group_burst(void *arg) {
  (void)arg;
  pthread_barrier_wait(&g_bar);               /* all alive at once */
  for (int i = 0; i < 100; i++) {
    h_event e = {.type = CLABI_EV_GROUP};
    h_stop(&g_p, h_start(&g_p, g_ctx, &e, NULL));
  }
  pthread_barrier_wait(&g_bar);
  return NULL;
}
H_CHILD(crowded_budget) {
  enum { NT = 100 };
  h_open_init(&g_p, 5, &g_ctx);
  pthread_barrier_init(&g_bar, NULL, NT);
  pthread_t t[NT];
  for (int i = 0; i < NT; i++) pthread_create(&t[i], NULL, group_burst, NULL);
  for (int i = 0; i < NT; i++) pthread_join(t[i], NULL);
  h_finalize(&g_p, g_ctx);
  h_close(&g_p);
  tr_trace t2;
  if (h_load_one_trace(getenv("COMMLENS_DIR"), &t2, NULL, 0)) return;
  int64_t groups = (int64_t)tr_count(&t2, 'X', "group"), dropped = stat_of(&t2, "dropped");
  CHECK(groups > 0 && groups < NT * 100, "%lld of %d groups recorded", (long long)groups, NT * 100);
  CHECK(groups + dropped >= NT * 100, "%lld groups recorded, %lld records dropped: %lld lost uncounted",
        (long long)groups, (long long)dropped, (long long)(NT * 100 - groups - dropped));
  CHECK(h_log_count(CLABI_LOG_WARN, "COMMLENS_BUFFER_MB") == 1, "want one warning naming COMMLENS_BUFFER_MB; log:\n%s",
        h_log_text());
  tr_free(&t2);
}
TL_TEST(budget_too_small_for_the_threads_says_so_once) {
  h_run_case("crowded_budget", (const char *const[]){"COMMLENS_CUPTI=0", "COMMLENS_BUFFER_MB=1", "COMMLENS_RING_KB=64", NULL},
             NULL, NULL);
}

/* ---- children of a dropped parent ------------------------------------------------------- */
/* The largest "dropped" anywhere in a JSON document (the report nests it per rank). */
static int64_t max_dropped(json_object *o) {
  int64_t m = -1;
  if (json_object_is_type(o, json_type_object)) {
    json_object_object_foreach(o, k, v) {
      if (!strcmp(k, "dropped") && json_object_is_type(v, json_type_int) && json_object_get_int64(v) > m) m = json_object_get_int64(v);
      int64_t c = max_dropped(v);
      if (c > m) m = c;
    }
  } else if (json_object_is_type(o, json_type_array)) {
    for (size_t i = 0; i < json_object_array_length(o); i++) {
      int64_t c = max_dropped(json_object_array_get_idx(o, i));
      if (c > m) m = c;
    }
  }
  return m;
}
static pthread_barrier_t g_hold;
static void *hold_a_ring(void *arg) {           /* claims a ring, keeps it until released */
  (void)arg;
  h_event e = {.type = CLABI_EV_GROUP};
  h_stop(&g_p, h_start(&g_p, g_ctx, &e, NULL));
  pthread_barrier_wait(&g_hold);
  pthread_barrier_wait(&g_hold);
  return NULL;
}
static void *g_ops[50];
static void *start_ops(void *arg) {             /* a thread the budget has no ring left for */
  (void)arg;
  for (int i = 0; i < 50; i++) {
    h_event e = {.type = CLABI_EV_PROXY_OP, .pid = getpid(), .channel = 0, .peer = 1, .nsteps = 1, .is_send = 1};
    g_ops[i] = h_start(&g_p, g_ctx, &e, NULL);
  }
  return NULL;
}
/* Proxy ops whose starts are lost (their thread got no ring); their steps come from a thread
 * that records: each step is lost with its op, and counted. */
H_CHILD(children_of_dropped_ops) {
  enum { HOLD = 12 };                           /* more than a 1 MiB budget has rings for */
  h_open_init(&g_p, 5, &g_ctx);
  h_event g = {.type = CLABI_EV_GROUP};
  h_stop(&g_p, h_start(&g_p, g_ctx, &g, NULL)); /* this thread's ring first */
  pthread_barrier_init(&g_hold, NULL, HOLD + 1);
  pthread_t t[HOLD], ops;
  for (int i = 0; i < HOLD; i++) pthread_create(&t[i], NULL, hold_a_ring, NULL);
  pthread_barrier_wait(&g_hold);                /* every ring handed out */
  pthread_create(&ops, NULL, start_ops, NULL);
  pthread_join(ops, NULL);
  pthread_barrier_wait(&g_hold);
  for (int i = 0; i < HOLD; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 50; i++) {                /* what NCCL's proxy thread does next */
    h_event e = {.type = CLABI_EV_PROXY_STEP, .parent = g_ops[i], .step = 0};
    void *s = h_start(&g_p, g_ctx, &e, NULL);
    h_state(&g_p, s, CLABI_ST_STEP_SEND_WAIT, 4096);
    h_stop(&g_p, s);
    h_stop(&g_p, g_ops[i]);
  }
  h_finalize(&g_p, g_ctx);
  h_close(&g_p);
  CHECK(h_bad_rc == 0, "%d calls failed", h_bad_rc);
  const char *dir = getenv("COMMLENS_DIR");
  tr_trace t2;
  if (h_load_one_trace(dir, &t2, NULL, 0)) return;
  size_t ops_in = tr_count(&t2, 'X', "proxy_op"), steps_in = tr_count(&t2, 'X', "proxy_step");
  int64_t children = -1;
  tr_stats_i64(&t2, "dropped_children", &children);
  CHECK(ops_in == 0 && steps_in == 0, "%zu proxy ops and %zu proxy steps drawn; their ops were never recorded", ops_in, steps_in);
  CHECK(children == 50, "dropped_children %lld, want the 50 steps of the lost ops", (long long)children);
  CHECK(stat_of(&t2, "dropped") >= 100, "dropped %lld: the 50 ops and their 50 steps", (long long)stat_of(&t2, "dropped"));
  tr_free(&t2);
}
/* The summary is written at the process's exit: the parent reads it, and the report. */
TL_TEST(children_of_a_dropped_parent_are_counted_dropped) {
  char dir[256], kv[300];
  h_fresh_dir(dir, sizeof dir);
  snprintf(kv, sizeof kv, "COMMLENS_DIR=%s", dir);
  int rc = h_spawn("children_of_dropped_ops", (const char *const[]){kv, "COMMLENS_CUPTI=0", "COMMLENS_EVENTS=full",
                   "COMMLENS_BUFFER_MB=1", "COMMLENS_RING_KB=64", "COMMLENS_SUMMARY=file", NULL});
  CHECK(rc == 0, "children_of_dropped_ops exited %d (dir %s)", rc, dir);
  char *sums[2];
  REQUIRE(h_find_files(dir, ".summary.json", sums, 2) == 1, "one summary.json in %s", dir);
  json_object *sum = json_object_from_file(sums[0]);
  CHECK(max_dropped(sum) >= 100, "summary.json: dropped %lld", (long long)max_dropped(sum));
  json_object_put(sum);
  free(sums[0]);
  json_object *rep = h_report_json(dir);
  CHECK(rep && max_dropped(rep) >= 100, "commlens report --json: dropped %lld", (long long)(rep ? max_dropped(rep) : -1));
  if (rep) json_object_put(rep);
  if (!tl_cur_failed) h_rm_rf(dir);
}

H_MAIN("capture/sizes")

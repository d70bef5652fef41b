/* test_ring.c: the ring pool's owner identity. Threads come and go (each claims a ring, records,
 * exits; the drain recycles their rings for newcomers) while another thread maps serials to OS
 * thread ids, as the format thread does for CUPTI's launch records. A serial must never map to
 * another thread's id. Under ThreadSanitizer (make test's tsan variant) this also catches an
 * unsynchronised handover (the owner's id was once written while being read). */
#include "tl.h"
#include "../../common/config.c"
#include "../../common/grow.c"
#include "../../common/log.c"
#include "../../common/clock.c"
#include "../../plugin/capture/ring.c"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define NTHREADS 64
static _Atomic uint32_t g_serial[NTHREADS];
static _Atomic int g_tid[NTHREADS];
static _Atomic int g_done, g_wrong, g_found, g_passes;

static void *churn(void *arg) {
  int k = (int)(intptr_t)arg;
  cl_ring *r = cl_ring_claim();
  if (r) {
    atomic_store(&g_tid[k], (int)syscall(SYS_gettid));
    atomic_store(&g_serial[k], (uint32_t)(r->id_base >> CL_ID_SEQ_BITS));
    uint64_t pos;
    cl_rec *rec = cl_ring_reserve(r, 1, &pos);
    if (rec) { memset(rec, 0, sizeof *rec); rec->kind = CL_REC_STOP; rec->nslots = 1; cl_ring_commit(r, pos, 1); }
  }
  return NULL;
}

static void sink(void *arg, const cl_rec *recs, size_t n) { (void)arg; (void)recs; (void)n; }

static void *mapper(void *arg) {
  (void)arg;
  while (!atomic_load(&g_done)) {
    cl_rings_drain(sink, NULL);                /* recycles the rings of exited threads */
    atomic_fetch_add(&g_passes, 1);
    for (int k = 0; k < NTHREADS; k++) {
      uint32_t s = atomic_load(&g_serial[k]);
      if (!s) continue;
      int tid = cl_ring_os_tid(s);
      if (tid) { atomic_fetch_add(&g_found, 1); if (tid != atomic_load(&g_tid[k])) atomic_fetch_add(&g_wrong, 1); }
    }
  }
  return NULL;
}

TL_TEST(serial_never_maps_to_another_threads_id) {
  cl_config_load();
  cl_cfg.buffer_bytes = 4u << 20;              /* a small pool: rings are reused at once */
  cl_cfg.ring_bytes = 64u << 10;
  pthread_t m;
  REQUIRE(pthread_create(&m, NULL, mapper, NULL) == 0, "mapper");
  for (int round = 0; round < 4; round++) {
    pthread_t t[NTHREADS / 4];
    for (int i = 0; i < NTHREADS / 4; i++) pthread_create(&t[i], NULL, churn, (void *)(intptr_t)(round * (NTHREADS / 4) + i));
    for (int i = 0; i < NTHREADS / 4; i++) pthread_join(t[i], NULL);
    /* the next round may reuse these rings once the mapper's drain has seen them empty */
    int p0 = atomic_load(&g_passes);
    while (atomic_load(&g_passes) < p0 + 2) sched_yield();
  }
  atomic_store(&g_done, 1);
  pthread_join(m, NULL);
  CHECK(atomic_load(&g_wrong) == 0, "%d lookups gave another thread's id", atomic_load(&g_wrong));
  int claimed = 0;
  for (int k = 0; k < NTHREADS; k++) claimed += atomic_load(&g_serial[k]) != 0;
  CHECK(claimed == NTHREADS, "only %d of %d threads got a ring", claimed, NTHREADS);
}

TL_MAIN("capture/ring")

/* contexts.c: see contexts.h. One mutex guards registration and lookups; nothing here is on
 * the hot path (cl_ctx_serial, inline in contexts.h, reads the slots). */
#include "plugin/capture/contexts.h"
#include "common/clock.h"
#include "common/grow.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

cl_ctx_slot cl_ctx_slots[CL_MAX_COMMS];

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static cl_comm_info *g_infos;          /* by serial - 1 */
static uint32_t g_ninfos;
static size_t g_cap_infos;
static int g_active;                   /* live communicators */

int cl_contexts_add(const cl_comm_desc *d, int cuda_dev, void **ctx, uint32_t *serial, int *first) {
  pthread_mutex_lock(&g_mu);
  if (cl_grow(&g_infos, &g_cap_infos, (size_t)g_ninfos + 1, sizeof *g_infos, 64, 0) != 0) {
    pthread_mutex_unlock(&g_mu);
    cl_log(CL_LOG_WARN, "out of memory registering a communicator; not profiling it");
    return -1;
  }
  int slot = -1;
  for (int i = 0; i < CL_MAX_COMMS && slot < 0; i++)
    if (atomic_load(&cl_ctx_slots[i].serial) == 0) slot = i;
  if (slot < 0) {
    pthread_mutex_unlock(&g_mu);
    cl_log_once("too-many-comms", CL_LOG_WARN, "more than %d live communicators; not profiling the rest", CL_MAX_COMMS);
    return -1;
  }
  cl_comm_info *ci = &g_infos[g_ninfos];
  memset(ci, 0, sizeof *ci);
  ci->serial = ++g_ninfos;
  ci->d = *d;
  ci->cuda_dev = cuda_dev;
  ci->init_ns = cl_now();
  atomic_store(&cl_ctx_slots[slot].serial, ci->serial);
  *first = g_active++ == 0;
  *ctx = &cl_ctx_slots[slot];
  *serial = ci->serial;
  pthread_mutex_unlock(&g_mu);
  return 0;
}

int cl_contexts_remove(void *ctx) {
  uint32_t serial = cl_ctx_serial(ctx);
  if (!serial) return 0;                     /* NULL, foreign, or already finalized */
  pthread_mutex_lock(&g_mu);
  uintptr_t i = ((uintptr_t)ctx - (uintptr_t)cl_ctx_slots) / sizeof(cl_ctx_slot);
  if (atomic_load(&cl_ctx_slots[i].serial) != serial) { pthread_mutex_unlock(&g_mu); return 0; }
  atomic_store(&cl_ctx_slots[i].serial, 0);
  g_infos[serial - 1].fini_ns = cl_now();
  int last = --g_active == 0;
  pthread_mutex_unlock(&g_mu);
  return last;
}

int cl_comm_lookup(uint32_t serial, cl_comm_info *out) {
  int rc = -1;
  pthread_mutex_lock(&g_mu);
  if (serial >= 1 && serial <= g_ninfos) { *out = g_infos[serial - 1]; rc = 0; }
  pthread_mutex_unlock(&g_mu);
  return rc;
}

uint32_t cl_comm_count(void) {
  pthread_mutex_lock(&g_mu);
  uint32_t n = g_ninfos;
  pthread_mutex_unlock(&g_mu);
  return n;
}

void cl_comm_learn(uint32_t serial, uint64_t hash, int rank) {
  pthread_mutex_lock(&g_mu);
  if (serial >= 1 && serial <= g_ninfos) {
    cl_comm_info *ci = &g_infos[serial - 1];
    if (!ci->d.hash && hash) ci->d.hash = hash;
    if (ci->d.rank < 0 && rank >= 0) ci->d.rank = rank;
  }
  pthread_mutex_unlock(&g_mu);
}

void cl_contexts_reset_after_fork(void) {
  pthread_mutex_init(&g_mu, NULL);
  memset(cl_ctx_slots, 0, sizeof cl_ctx_slots);
  g_active = 0;
  g_ninfos = 0;
}

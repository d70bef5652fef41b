/* log.c: routes messages to NCCL's logger (subsystem PROFILE) or stderr. Never called on the
 * hot path. Keeps a small table of message keys already said, so repeats are silent. */
#include "common/log.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Atomic(cl_logger_fn) g_logger;   /* set by every init, read by any thread */
static pthread_mutex_t g_once_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *g_once_keys[128];
static int g_nonce;

void cl_log_set_logger(cl_logger_fn fn) { if (fn) atomic_store_explicit(&g_logger, fn, memory_order_relaxed); }

static void vlog(int level, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  cl_logger_fn lg = atomic_load_explicit(&g_logger, memory_order_relaxed);
  if (lg) {
    /* NCCL filters by subsystem even for warnings (NCCL_DEBUG_SUBSYS defaults to INIT,
     * BOOTSTRAP,ENV): warnings carry every subsystem bit, as NCCL's own WARN does, so that
     * NCCL_DEBUG=WARN shows them; INFO stays under PROFILE */
    lg(level, level <= CL_LOG_WARN ? ~0UL : 16384UL /* NCCL_PROFILE */, "commlens", 0, "commlens: %s", msg);
  } else if (level <= CL_LOG_WARN) {
    fprintf(stderr, "commlens WARN: %s\n", msg);
  }
}

void cl_log(int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(level, fmt, ap);
  va_end(ap);
}

void cl_log_once(const char *key, int level, const char *fmt, ...) {
  pthread_mutex_lock(&g_once_mu);
  for (int i = 0; i < g_nonce; i++)
    if (strcmp(g_once_keys[i], key) == 0) { pthread_mutex_unlock(&g_once_mu); return; }
  if (g_nonce < (int)(sizeof g_once_keys / sizeof g_once_keys[0])) g_once_keys[g_nonce++] = key;
  pthread_mutex_unlock(&g_once_mu);
  va_list ap;
  va_start(ap, fmt);
  vlog(level, fmt, ap);
  va_end(ap);
}

void cl_log_reset_once(void) { g_nonce = 0; }

void cl_log_after_fork_child(void) {
  pthread_mutex_init(&g_once_mu, NULL);   /* a parent's thread may have held it at the fork */
  cl_log_reset_once();
}

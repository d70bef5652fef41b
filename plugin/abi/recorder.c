/* recorder.c: COMMLENS_RECORD=DIR writes every profiler ABI call NCCL makes, raw, to
 * DIR/commlens-r<rank>-<pid>.rec.gz: descriptor bytes, the strings and blobs they point to,
 * state args, the calling thread and the time. tools/replay/replay.c drives the plugin with such
 * files. A diagnostic mode: it takes a mutex per call, so it is never on by default. */
#include "plugin/abi/recorder.h"
#include "plugin/output/identity.h"
#include "plugin/gpu/device.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/newfile.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef COMMLENS_NO_ZLIB
#include <zlib.h>
#endif

_Atomic int cl_recording;

static void recorder_open(const char *dir, int rank);
static void recorder_close(void);
static void recorder_after_fork(void);

/* Opens the recording of this process once its identity is settled (the shims call this
 * after every init; a fork child opens its own), and closes it at exit. */
void cl_recorder_begin(void) {
  static pid_t opened_by;
  static int atexit_done;
  if (!cl_cfg.record[0] || opened_by == getpid()) return;
  opened_by = getpid();
  recorder_open(cl_cfg.record, cl_proc.rank);
  if (!atexit_done) { atexit(recorder_close); pthread_atfork(NULL, NULL, recorder_after_fork); atexit_done = 1; }
}

#ifdef COMMLENS_NO_ZLIB
/* Built without zlib: recordings are gzip streams, so there is nothing to record into;
 * cl_recording stays 0 and the shims never call the hooks below. */
static void recorder_open(const char *dir, int rank) {
  (void)dir; (void)rank;
  cl_log_once("record-zlib", CL_LOG_WARN, "COMMLENS_RECORD is ignored: this build of commlens has no zlib");
}
static void recorder_close(void) {}
static void recorder_after_fork(void) {}
void cl_recorder_init(int abi, void *ctx, const cl_comm_desc *d, int mask) { (void)abi; (void)ctx; (void)d; (void)mask; }
void cl_recorder_start(int abi, void *ctx, const void *descr, unsigned len, const cl_ref *refs, int nrefs,
                       void *handle) { (void)abi; (void)ctx; (void)descr; (void)len; (void)refs; (void)nrefs; (void)handle; }
void cl_recorder_stop(int abi, void *handle) { (void)abi; (void)handle; }
void cl_recorder_state(int abi, void *handle, int state, const void *args, unsigned len) {
  (void)abi; (void)handle; (void)state; (void)args; (void)len;
}
void cl_recorder_finalize(int abi, void *ctx) { (void)abi; (void)ctx; }
#else
static pthread_mutex_t g_rec_mu = PTHREAD_MUTEX_INITIALIZER;
static gzFile g_gz;
static uint64_t g_seq, g_t0;
static int g_nthreads;
static _Thread_local int t_thread = -1;

static void put_hex(const void *p, unsigned n) {
  static const char hx[] = "0123456789abcdef";
  char buf[512];
  const unsigned char *b = p;
  unsigned k = 0;
  for (unsigned i = 0; i < n; i++) {
    buf[k++] = hx[b[i] >> 4];
    buf[k++] = hx[b[i] & 15];
    if (k >= sizeof buf - 2) { gzwrite(g_gz, buf, k); k = 0; }
  }
  if (k) gzwrite(g_gz, buf, k);
}

/* Line prefix: kind, global sequence, thread index, ns since the first call, ABI version. */
static void head(char kind, int abi) {
  if (t_thread < 0) t_thread = g_nthreads++;
  uint64_t now = cl_now();
  if (!g_t0) g_t0 = now;
  gzprintf(g_gz, "%c %llu %d %llu %d", kind, (unsigned long long)g_seq++, t_thread,
           (unsigned long long)(now - g_t0), abi);
}

/* Opens the recording for this process; called once the rank is known. */
static void recorder_open(const char *dir, int rank) {
  char base[1100], path[1200];
  mkdir(dir, 0755);
  snprintf(base, sizeof base, "%s/commlens-r%d-%d", dir, rank, (int)getpid());
  int fresh, fd = cl_file_create_new(path, sizeof path, base, ".rec.gz", 0644, &fresh);   /* never an old file */
  gzFile gz = fd >= 0 ? gzdopen(fd, "wb6") : NULL;
  if (!gz) {
    if (fd >= 0) close(fd);
    cl_log(CL_LOG_WARN, "cannot create the ABI recording %s; recording is off", path);
    return;
  }
  pthread_mutex_lock(&g_rec_mu);
  g_gz = gz;
  gzprintf(g_gz, "# commlens-record 1 pid %d rank %d\n", (int)getpid(), rank);
  pthread_mutex_unlock(&g_rec_mu);
  atomic_store(&cl_recording, 1);
  cl_log(CL_LOG_INFO, "recording the profiler ABI call stream to %s", path);
}

static void recorder_close(void) {
  atomic_store(&cl_recording, 0);
  pthread_mutex_lock(&g_rec_mu);
  if (g_gz) gzclose(g_gz);
  g_gz = NULL;
  pthread_mutex_unlock(&g_rec_mu);
}

/* A fork child records nothing until its own init opens its own file: the parent's stream is
 * not the child's to write or close (its buffered bytes would land in the parent's file), and
 * its lock may have been held by a parent's thread that the child does not have. */
static void recorder_after_fork(void) {
  atomic_store(&cl_recording, 0);
  pthread_mutex_init(&g_rec_mu, NULL);
  g_gz = NULL;
  g_seq = g_t0 = 0;
  g_nthreads = 0;
  t_thread = -1;
}

#define LOCKED(body) do { pthread_mutex_lock(&g_rec_mu); if (g_gz) { body } pthread_mutex_unlock(&g_rec_mu); } while (0)

void cl_recorder_init(int abi, void *ctx, const cl_comm_desc *d, int mask) {
  LOCKED({
    head('I', abi);
    gzprintf(g_gz, " %p %d %llx %d %d %d ", ctx, mask, (unsigned long long)d->hash, d->nnodes,
             d->nranks, d->rank);
    put_hex(d->name, (unsigned)strlen(d->name));
    gzprintf(g_gz, " %d\n", cl_cuda_device());   /* the communicator's GPU (format 1 lines end at the name) */
  });
}

void cl_recorder_start(int abi, void *ctx, const void *descr, unsigned len, const cl_ref *refs,
                       int nrefs, void *handle) {
  LOCKED({
    head('S', abi);
    gzprintf(g_gz, " %p %p ", ctx, handle);
    put_hex(descr, len);
    gzprintf(g_gz, " %d", nrefs);
    for (int i = 0; i < nrefs; i++) {
      gzprintf(g_gz, " %u:", refs[i].off);
      if (refs[i].p && refs[i].len) put_hex(refs[i].p, refs[i].len);
      else gzprintf(g_gz, "-");
    }
    gzprintf(g_gz, "\n");
  });
}

void cl_recorder_stop(int abi, void *handle) {
  LOCKED({ head('E', abi); gzprintf(g_gz, " %p\n", handle); });
}

void cl_recorder_state(int abi, void *handle, int state, const void *args, unsigned len) {
  LOCKED({
    head('T', abi);
    gzprintf(g_gz, " %p %d ", handle, state);
    if (args && len) put_hex(args, len); else gzprintf(g_gz, "-");
    gzprintf(g_gz, "\n");
  });
}

void cl_recorder_finalize(int abi, void *ctx) {
  LOCKED({ head('F', abi); gzprintf(g_gz, " %p\n", ctx); gzflush(g_gz, Z_SYNC_FLUSH); });
}
#endif

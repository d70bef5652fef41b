/* test_drain.c: the rings' two readers (plugin/pipeline/drain.c) across a fork. The format
 * thread holds the rings' consumer lock while it copies; a job that forks at that moment hands
 * its child a lock no thread of the child will ever release. The child starts the plugin over
 * at its next init and must read its rings again (CI once caught the child's trace empty:
 * test/faults forking_job). Here the parent's reader holds the lock most of the time, so
 * nearly every fork lands inside a copy; each child runs the writer's fork handler, records,
 * and must read every record back. */
#include "tl.h"
#include "common/config.h"
#include "plugin/capture/ring.h"
#include "plugin/pipeline/drain.h"
#include "plugin/pipeline/staging.h"
#include "plugin/pipeline/writer.h"
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static _Atomic int g_stop_reader;
static _Atomic uint64_t g_reads;
static cl_stage *g_parent_stage;

static void *reader(void *arg) {
  (void)arg;
  static cl_rec buf[512];
  while (!atomic_load(&g_stop_reader)) {
    cl_drain_direct(g_parent_stage, buf, 512);
    atomic_fetch_add(&g_reads, 1);
  }
  return NULL;
}

static int put_one(uint64_t id) {
  cl_ring *r = cl_t_ring ? cl_t_ring : cl_ring_claim();
  if (!r) return 0;
  uint64_t pos;
  cl_rec *rec = cl_ring_reserve(r, 1, &pos);
  if (!rec) return 0;
  memset(rec, 0, sizeof *rec);
  rec->kind = CL_REC_STOP;
  rec->nslots = 1;
  rec->id = id;
  cl_ring_commit(r, pos, 1);
  return 1;
}

/* The child: what process.c's fork handler does for the rings and the writer, then 20 records
 * read back by the format thread's direct read. Exit 0 if all came back. */
static int child_reads_its_rings(void) {
  cl_rings_reset_after_fork();
  cl_writer_after_fork_child();
  cl_stage *st = cl_stage_new(1u << 20, "");
  if (!st) return 2;
  for (uint64_t i = 0; i < 20; i++)
    if (!put_one(i)) return 3;
  static cl_rec buf[512];
  size_t got = 0;
  for (int tries = 0; tries < 10 && got < 20; tries++) got += cl_drain_direct(st, buf + got, 512 - got);
  return got == 20 ? 0 : 4;
}

TL_TEST(a_child_forked_during_a_direct_read_reads_its_own_rings) {
  cl_config_load();
  cl_cfg.ring_bytes = 64u << 10;
  g_parent_stage = cl_stage_new(1u << 20, "");
  REQUIRE(g_parent_stage, "stage");
  pthread_t thr;
  REQUIRE(pthread_create(&thr, NULL, reader, NULL) == 0, "reader thread");
  while (atomic_load(&g_reads) < 100) usleep(100);
  int bad = 0, forks = 40;
  for (int i = 0; i < forks; i++) {
    pid_t pid = fork();
    REQUIRE(pid >= 0, "fork");
    if (pid == 0) _exit(child_reads_its_rings());
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (bad++ == 0) fprintf(stderr, "  fork %d: child status %#x\n", i, status);
    }
  }
  atomic_store(&g_stop_reader, 1);
  pthread_join(thr, NULL);
  CHECK(bad == 0, "%d of %d children could not read their rings", bad, forks);
  cl_stage_free(g_parent_stage);
}

TL_MAIN("pipeline/drain")

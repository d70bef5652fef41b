/* cupti_internal.h: the CUPTI bridge's state (plugin/gpu/cupti.c), for cupti.c and its unit
 * test (test/gpu/test_cupti.c) only: the buffer bounds and the one state record. Everything
 * else uses plugin/gpu/cupti.h. */
#ifndef COMMLENS_CUPTI_INTERNAL_H
#define COMMLENS_CUPTI_INTERNAL_H
#include <cupti.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define CL_CUPTI_MIN_VERSION 19u          /* CUPTI API v19 = CUDA 12.0 */
/* CUPTI fills a buffer per launching thread and hands each back (every 100 ms, when its records
 * are complete) before asking for another: many threads, each with a buffer out, want many
 * buffers, not big ones (a 2 MiB buffer holds ~10,000 kernel records). */
#define CL_CUPTI_BUF_BYTES (2u << 20)
#define CL_CUPTI_MAX_BUFS 32              /* 64 MiB at most, in CUPTI's hands or ours */
#define CL_CUPTI_NAMES 16384              /* interned kernel names, at most */
#define CL_CUPTI_REPROBE_NS 1000000000ull
/* After our records went elsewhere (displaced), the first re-arm on a free slot waits this long,
 * each later one twice as long as the one before, up to the cap. */
#define CL_CUPTI_RETRY_NS 1000000000ull
#define CL_CUPTI_RETRY_MAX_NS 64000000000ull

typedef struct { uint8_t *buf; size_t valid; } done_buf;

/* Where CUPTI stands for us. SUSPENDED: another tool holds the subscriber slot (we re-arm when
 * it lets go); DISPLACED: our records stopped coming (another client's callbacks, or it
 * finalized CUPTI or disabled our kinds): we re-arm when the slot is free and the backoff has
 * passed; FAILED: not loadable or refused (for good). */
typedef enum { CUPTI_UNTRIED = 0, CUPTI_ACTIVE, CUPTI_SUSPENDED, CUPTI_DISPLACED, CUPTI_FAILED } cupti_state;

typedef struct {
  pthread_mutex_t mu;                 /* guards the buffer lists and counters below */
  uint8_t *free_bufs[CL_CUPTI_MAX_BUFS];
  int nfree, nalloc;                  /* nalloc: buffers in existence (ours + CUPTI's) */
  done_buf done[CL_CUPTI_MAX_BUFS];
  int ndone;
  uint64_t dropped, buffers, refused;
  /* writer-thread state */
  void *lib;
  cupti_state state;
  int kinds_on[5];                    /* CONCURRENT_KERNEL, MEMCPY, MEMSET, DRIVER, MARKER enabled by us */
  int64_t ts_offset;                  /* cupti timestamp - monotonic (0 with the callback) */
  uint8_t *cur; size_t cur_valid; CUpti_Activity *cur_rec;
  uint64_t records, next_probe;
  uint64_t retry_at, retry_ns;        /* DISPLACED: re-arm from retry_at on; the next backoff */
  uint64_t resumed;                   /* times GPU timing came back after another tool had CUPTI */
  uint64_t free_at;                   /* ACTIVE: the last probe that found the slot free (a taker
                                         came after it); SUSPENDED: that time, kept */
  uint32_t version;
  /* COMMLENS_CUPTI=sampled: kernel records on until win_end, the next window at win_next */
  uint64_t win_end, win_next;
  int detached;                       /* CUPTI finalized by us between two windows */
  int detach_due;                     /* a window closed: finalize at the next tick */
  int first_coll;                     /* the job's first collective was seen (cl_cupti_first_collective) */
  uint64_t first_cap;                 /* the first window closes by then even with no collective (0: unset) */
  char status[160];
  char *(*demangle)(const char *, char *, size_t *, int *);
} cl_cupti_bridge;

extern cl_cupti_bridge cl_cupti_g;
#endif

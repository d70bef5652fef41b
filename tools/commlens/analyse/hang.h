/* hang.h: what flight-recorder dumps (commlensFlight, trace-format.md) say about a hang, across
 * ranks. Per communicator that some dump shows a collective stuck: the stuck collective is the
 * lowest such seq, and every rank of the communicator (by its rank in it) is one of: no dump
 * (never reached it, or its process could not dump), never reached it (its last started seq is
 * lower), started and not done (with the channels it still waited on), or done. */
#ifndef COMMLENS_HANG_H
#define COMMLENS_HANG_H
#include "tools/commlens/model/load.h"
#include <stdint.h>

typedef enum { CL_HANG_NO_DUMP = 0, CL_HANG_NOT_REACHED, CL_HANG_NOT_DONE, CL_HANG_DONE } cl_hang_state;

typedef struct {
  cl_hang_state state;
  int rank;                   /* world rank of its dump, -1 with no dump */
  int64_t last_started;       /* seq it last started on this communicator, -1 none */
  uint64_t channels_not_done; /* CL_HANG_NOT_DONE: channel bits (0 unknown) */
  int64_t age_ms;             /* how long it had waited at its dump */
  char trigger[16];           /* what wrote its dump ("hang", "signal", "late"; "" unknown) */
} cl_hang_member;

typedef struct {
  uint64_t comm;
  char name[64], func[64];    /* valid UTF-8 (from json-c strings, checked) */
  int64_t seq;
  int nranks;                 /* members[0 .. nranks) by rank in the communicator */
  cl_hang_member *members;
} cl_hang_comm;

/* What the dumps say when they show no hang: a snapshot (a signal or lateness dump) shows
 * whatever was in flight then; the collective that had waited longest there. */
typedef struct {
  int known;                  /* some dump showed a collective not done */
  uint64_t comm;
  char func[64];
  int64_t seq, age_ms;
  int rank;                   /* the world rank whose dump showed it */
} cl_hang_longest;

/* The dumps of the reported attempt of a job (cl_job.dumps): a hang comes from hang dumps; where
 * there are none, from a collective some dump shows not done for CL_HANG_AGE_S or more; a
 * snapshot of collectives in flight for less is no hang (longest says what it held). any_hang:
 * some dump was written by a hang; then the hang dumps alone say which collective is stuck (a
 * signal or lateness dump was taken at another time, often before the hang, and shows whatever
 * was in flight then); a rank is placed from its hang dump, else its newest dump, and says so. */
#define CL_HANG_AGE_S 60      /* the plugin's default COMMLENS_HANG_S */
typedef struct {
  CL_VEC(cl_hang_comm) comms;
  int n_dumps, n_hang_dumps, any_hang;
  size_t n_members, member_budget;
  CL_VEC(uint64_t) left_out;  /* communicators a dump showed stuck, past the bounds below */
  cl_hang_longest longest;
} cl_hang;

/* Fills *h from the job's flight dumps (job->dumps). Communicators larger than
 * CL_HANG_MAX_RANKS, past the CL_HANG_MAX_COMMS-th, or past the member budget in all are left
 * out (counted in comms_left_out, and said): the budget is CL_HANG_MEMBERS_FREE plus one member
 * for each byte of the dumps' commlensFlight objects, at most CL_HANG_MAX_MEMBERS (a
 * communicator's size is a claim: memory follows the bytes that make it; every rank's dump of a
 * hang carries hundreds of bytes). cl_hang_free releases it. */
#define CL_HANG_MAX_RANKS 65536
#define CL_HANG_MAX_MEMBERS (1u << 20)
#define CL_HANG_MEMBERS_FREE 4096u
#define CL_HANG_MAX_COMMS 4096
void cl_hang_analyse(const cl_job *job, cl_hang *h);
void cl_hang_free(cl_hang *h);
/* "started, not done", "never reached it", ... */
const char *cl_hang_state_name(cl_hang_state s);
#endif

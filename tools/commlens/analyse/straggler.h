/* straggler.h: the straggler verdict. Per collective instance, who arrived last and by how much
 * over the next, beyond the clock error and the arrival's timing resolution (a time-shared GPU
 * starts kernels on its scheduler's slices: lateness within them is a tie); per unit (a step,
 * else an instance), the wait each participant caused (the time the others waited on it alone);
 * per participant, that wait held against what exchangeable arrivals give (a permutation test,
 * analyse/perm_test.h) at a stated false-accusation rate per job, and against a materiality
 * floor (a share of the job's time). The start-up period is detected and never counts. Works
 * for ranks and, with the same input, for the channels of one rank (the tail channel). No I/O. */
#ifndef COMMLENS_ANALYSE_STRAGGLER_H
#define COMMLENS_ANALYSE_STRAGGLER_H
#include <stddef.h>
#include <stdint.h>

#define CL_SG_ALPHA 0.01              /* false accusations per job, over every participant */
#define CL_SG_MIN_MARGIN_NS 50000.0   /* a last arrival closer than this to the next is no one's fault */
#define CL_SG_STARTUP_FACTOR 3.0      /* a leading instance whose time after the last arrival is
                                         this many times its group's median is start-up
                                         (connection set-up; a late rank does not lengthen it) */
#define CL_SG_MATERIAL 0.01           /* a straggler cost the job at least this share of its time
                                         more than the others did; a smaller effect is reported
                                         as such, never named */
#define CL_SG_MAX_PERIOD 8            /* every k-th unit is a hypothesis of its own, k = 2 .. this */
#define CL_SG_STALL_FACTOR 10.0       /* a one-off stall: at least this many times the noise
                                         floor; more for long runs: log2(units / alpha) times */
#define CL_SG_EVIDENCE_MAX 8          /* evidence instances kept per suspect */

/* What the arrival values are, most direct first (the verdict says which it used). */
enum cl_sg_evidence {
  CL_SG_GPU_WAIT,     /* value = the GPU's own wait for peers (v7 initial_sync), ns: no clock */
  CL_SG_GPU_START,    /* value = GPU span start, aligned ns */
  CL_SG_ENQUEUE,      /* value = host enqueue, aligned ns (a lower bound on readiness) */
  CL_SG_CHANNEL_END   /* participants are the channels of one rank; value = channel end, ns */
};
const char *cl_sg_evidence_name(enum cl_sg_evidence e);   /* for text */
const char *cl_sg_evidence_key(enum cl_sg_evidence e);    /* for JSON (docs/verdict.md) */

/* Fields in this order keep it 40 bytes (one per member, two with a second evidence). */
typedef struct {
  int32_t who;        /* participant: rank index (or channel) in [0, nwho) */
  int32_t clock;      /* which clock value was read on, 1-based; two arrivals of one clock
                         differ by no clock error (their errs are not added); 0: unknown */
  int64_t value;      /* see cl_sg_evidence */
  int64_t err;        /* +- clock uncertainty of value, ns (0 on one clock, or no clock) */
  int64_t end;        /* aligned end of the participant's part, ns; 0: unknown */
  int64_t res;        /* resolution: the participant may have been ready up to this long before
                         value (a GPU time-shared by k ranks starts its kernel up to k - 1
                         scheduler slices late); a lateness within it is a tie */
} cl_sg_arrival;

typedef struct {
  uint64_t comm; int64_t seq, bytes; int32_t func;   /* func: the caller's id */
  int32_t step;       /* iteration this instance belongs to, -1: none (see analyse/steps.h) */
  int setup;          /* the caller knows it is set-up (communicator init, connection set-up) */
  uint32_t first, count;   /* members: arr[first .. first+count) */
} cl_sg_inst;

typedef struct {
  int nwho;                       /* participants (ranks, or channels) */
  const char *const *host;        /* per participant, or NULL */
  const char *who_word;           /* "rank" (NULL) or "channel" */
  size_t ninst; const cl_sg_inst *inst; const cl_sg_arrival *arr;
  enum cl_sg_evidence evidence;
  double alpha;                   /* 0: CL_SG_ALPHA */
  double min_margin_ns;           /* 0: CL_SG_MIN_MARGIN_NS */
  int64_t job_ns;                 /* the job's wall time; 0: first arrival to last end seen
                                     (GPU_WAIT has no times: pass it, or the line omits it) */
  const int64_t *value2;          /* a second evidence of the same members, or NULL: value2[k] is
                                     arr[k]'s member's (the host enqueue beside the GPU start), on
                                     the same clock with the same error and end, resolution 0 */
  enum cl_sg_evidence evidence2;
  double material;                /* 0: CL_SG_MATERIAL; < 0: no floor */
} cl_sg_input;

/* Per instance, by input index. */
typedef struct {
  int32_t last, second;      /* who; -1: fewer than two members */
  double margin_ns;          /* last - second arrival */
  double err_ns;             /* clock error of that margin */
  double wait_ns;            /* sum over members of (last - own arrival) */
  double over_median_ns;     /* last - max(second, median arrival): the what-if saving */
  double late_ns;            /* the margin certain beyond the clock error and the last arrival's
                                resolution; 0 when not called */
  int64_t t_first, t_last;   /* aligned first and last arrival (GPU_WAIT: 0) */
  double coll_ns;            /* last end - first arrival; 0: no ends */
  double xfer_ns;            /* last end - last arrival (the start-up rule's measure); 0: no ends */
  uint8_t startup;           /* start-up: never evidence */
  uint8_t called;            /* the margin is beyond the clock error and the minimum */
  uint8_t stall;             /* a one-off stall */
  uint8_t by_second;         /* last, margin and late are the second evidence's (it saw more) */
} cl_sg_inst_result;

/* How a straggler was late, for the line (docs/verdict.md). */
enum cl_sg_pattern {
  CL_SG_EVERY,        /* in (nearly) every unit */
  CL_SG_SOME,         /* in some units, with no regular pattern */
  CL_SG_EVERY_KTH,    /* every period-th unit (at phase) */
  CL_SG_TURNS,        /* every period-th unit, taking turns with turns_with */
  CL_SG_BURST         /* most of its cost in one stretch of units, burst_from .. burst_to */
};
const char *cl_sg_pattern_key(enum cl_sg_pattern p);

/* One participant's case. */
typedef struct {
  int32_t who; const char *host;
  int64_t last_count, units;      /* late (caused a wait) in K of N units */
  double expected;                /* late units chance gives it */
  double median_lateness_ns;      /* median wait caused over its K units */
  double cost_ns;                 /* the wait it caused: the time the others waited on it alone */
  double cost_by[2];              /* that cost on the first and on the second evidence alone */
  double excess_ns;               /* its wait over the job beyond the others' mean (each unit's
                                     capped as the test read it): held to the materiality floor */
  double p_value;                 /* adjusted: weighted Bonferroni over participants and families */
  double confidence;              /* 1 - p_value */
  int64_t stalls;                 /* retired (always 0): repeated stalls are a pattern now */
  enum cl_sg_pattern pattern;
  int32_t period, phase;          /* EVERY_KTH, TURNS: every period-th unit, from unit index phase */
  int32_t turns_with;             /* TURNS: the other participant; -1 */
  int64_t burst_from, burst_to;   /* BURST: first and last unit index */
  int32_t family_k;               /* the family that named it: 1 every unit, k every k-th */
  uint8_t gpu_side;               /* late on the GPU start, not on the host enqueue */
  uint32_t evidence[CL_SG_EVIDENCE_MAX]; int nevidence;   /* costliest instances, most first */
} cl_sg_suspect;

/* A one-off: one unit in which a participant made the others wait long enough to matter on its
 * own. inst: its costliest instance there; step: the unit's index (-1: units are instances). */
typedef struct { uint32_t inst; int32_t who; double margin_ns; int64_t step; } cl_sg_stall;

enum cl_sg_kind { CL_SG_NO_DATA, CL_SG_NONE, CL_SG_STALLS_ONLY, CL_SG_STRAGGLER };
const char *cl_sg_kind_name(enum cl_sg_kind k);

/* The verdict a renderer reads (owned; cl_sg_free). */
typedef struct {
  enum cl_sg_kind kind;
  enum cl_sg_evidence evidence;
  const char *who_word;
  int unit_is_step;                 /* units are steps (else instances) */
  double alpha, min_margin_ns;     /* as used */
  double material;                  /* the floor as used (0: none) */
  int has_second; enum cl_sg_evidence evidence2;   /* a second evidence was read */
  double res_ns;                    /* the largest resolution of any arrival (0: none) */
  cl_sg_suspect *straggler; int nstraggler;   /* most costly first; [0] is the one named */
  cl_sg_suspect largest;            /* the costliest participant (who -1: none), named or not */
  cl_sg_stall *stall; size_t nstall;           /* largest first */
  double noise_floor_ns;            /* the run's margin by chance */
  double stall_threshold_ns;        /* a margin beyond this is a stall */
  double job_ns;
  int64_t n_inst, n_startup, n_eligible, n_units, n_within_clock;
  int64_t startup_end;              /* aligned end of the start-up period; 0: none */
  cl_sg_inst_result *inst;          /* by input index */
} cl_sg_verdict;

/* Computes the verdict; input arrays are only read. */
void cl_sg_analyse(const cl_sg_input *in, cl_sg_verdict *v);
void cl_sg_free(cl_sg_verdict *v);
/* The verdict in one line of text (into buf, caller's). Returns buf. */
const char *cl_sg_verdict_line(const cl_sg_verdict *v, char *buf, size_t n);
#endif

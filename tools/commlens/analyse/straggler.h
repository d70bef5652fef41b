/* straggler.h: the straggler verdict. Per collective instance, who arrived last and by how much
 * over the next; across instances (or steps), each participant's count of last arrivals tested
 * against chance (a healthy job spreads them evenly: Binomial(N, 1/R)) at a stated
 * false-accusation rate per job, and its lateness held against the run's noise floor (its
 * median margin) and the clock error. The start-up period is detected and never counts. Works for ranks and, with the
 * same input, for the channels of one rank (the tail channel). No I/O. */
#ifndef COMMLENS_ANALYSE_STRAGGLER_H
#define COMMLENS_ANALYSE_STRAGGLER_H
#include <stddef.h>
#include <stdint.h>

#define CL_SG_ALPHA 0.01              /* false accusations per job, over every participant */
#define CL_SG_MIN_MARGIN_NS 50000.0   /* a last arrival closer than this to the next is no one's fault */
#define CL_SG_STARTUP_FACTOR 3.0      /* a leading instance whose time after the last arrival is
                                         this many times its group's median is start-up
                                         (connection set-up; a late rank does not lengthen it) */
#define CL_SG_FLOOR_SHARE 0.5         /* a straggler's median lateness is at least this share of
                                         the noise floor (the run's median margin) */
#define CL_SG_AT_FLOOR 1.25           /* a median lateness up to this many times the noise floor is
                                         at the floor: then a straggler is last in half the units
                                         or more (a scheduler's favourite beats chance at the floor) */
#define CL_SG_OVER_OTHERS 2.0         /* a straggler's median lateness is at least this many
                                         times that of the ranks last no more often than chance
                                         (a steady bias as small as the run's spread is not one) */
#define CL_SG_STALL_FACTOR 10.0       /* a one-off stall: at least this many times the noise
                                         floor (and the median margin where no suspect was last);
                                         more for long runs: log2(instances / alpha) times */
#define CL_SG_REPEAT 3                /* stalls of one participant that make it a straggler: a
                                         stall is beyond chance at the job's alpha once, so
                                         repeated ones are a pattern (every Nth step, turns taken
                                         between two ranks, where counting last arrivals cannot
                                         beat chance) */
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

typedef struct {
  int32_t who;        /* participant: rank index (or channel) in [0, nwho) */
  int64_t value;      /* see cl_sg_evidence */
  int64_t err;        /* +- clock uncertainty of value, ns (0 on one clock, or no clock) */
  int64_t end;        /* aligned end of the participant's part, ns; 0: unknown */
  int32_t clock;      /* which clock value was read on, 1-based; two arrivals of one clock
                         differ by no clock error (their errs are not added); 0: unknown */
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
} cl_sg_input;

/* Per instance, by input index. */
typedef struct {
  int32_t last, second;      /* who; -1: fewer than two members */
  double margin_ns;          /* last - second arrival */
  double err_ns;             /* clock error of that margin */
  double wait_ns;            /* sum over members of (last - own arrival) */
  double over_median_ns;     /* last - max(second, median arrival): the what-if saving */
  int64_t t_first, t_last;   /* aligned first and last arrival (GPU_WAIT: 0) */
  double coll_ns;            /* last end - first arrival; 0: no ends */
  double xfer_ns;            /* last end - last arrival (the start-up rule's measure); 0: no ends */
  uint8_t startup;           /* start-up: never evidence */
  uint8_t called;            /* the margin is beyond the clock error and the minimum */
  uint8_t stall;             /* a one-off stall */
} cl_sg_inst_result;

/* One participant's case. */
typedef struct {
  int32_t who; const char *host;
  int64_t last_count, units;      /* last (and called) in K of N units */
  double expected;                /* N/R: what chance gives */
  double median_lateness_ns;      /* median margin over its K */
  double cost_ns;                 /* the what-if: it arrives at the median time */
  double p_value;                 /* one-sided binomial tail, times the number of participants */
  double confidence;              /* 1 - p_value */
  int64_t stalls;                 /* > 0: named for repeated stalls (last_count = stalls, median over
                                     them, p_value = alpha, a bound); 0: by the count test */
  uint32_t evidence[CL_SG_EVIDENCE_MAX]; int nevidence;   /* costliest instances, most first */
} cl_sg_suspect;

typedef struct { uint32_t inst; int32_t who; double margin_ns; } cl_sg_stall;

enum cl_sg_kind { CL_SG_NO_DATA, CL_SG_NONE, CL_SG_STALLS_ONLY, CL_SG_STRAGGLER };
const char *cl_sg_kind_name(enum cl_sg_kind k);

/* The verdict a renderer reads (owned; cl_sg_free). */
typedef struct {
  enum cl_sg_kind kind;
  enum cl_sg_evidence evidence;
  const char *who_word;
  int unit_is_step;                 /* units are steps (else instances) */
  double alpha, min_margin_ns;     /* as used */
  cl_sg_suspect *straggler; int nstraggler;   /* most costly first; [0] is the one named */
  cl_sg_suspect largest;            /* the strongest case seen (who -1: none), named or not */
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
/* P(X >= k) for X ~ Binomial(n, p). */
double cl_sg_binom_tail(int64_t k, int64_t n, double p);
#endif

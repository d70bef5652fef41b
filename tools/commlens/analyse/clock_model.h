/* clock_model.h: which ranks read one clock, and how every other clock maps onto a reference
 * clock, with an interval that says what the data allow. Ranks of one host boot (host name and
 * boot id) share a clock: offset exactly 0, error 0, never estimated. Between hosts, one
 * offset-and-drift line per host pair, bounded by causality: a blocking collective (every rank's
 * result depends on every rank's input) cannot end on any rank before every rank started it.
 * Hosts are joined to the reference through a spanning tree of host pairs. No I/O. */
#ifndef COMMLENS_ANALYSE_CLOCK_MODEL_H
#define COMMLENS_ANALYSE_CLOCK_MODEL_H
#include <stddef.h>
#include <stdint.h>

/* One rank's clock identity and its host's recorded clock-sync state (adjtimex). */
typedef struct {
  const char *host;          /* host name; "" or NULL: unknown */
  const char *boot_id;       /* kernel boot id; "" or NULL: unknown (the host name alone is used) */
  const char *clock_id;      /* a timeline of its own (a replay's); "" or NULL: the host's clock */
  int sync_known;            /* the trace recorded the sync state below */
  int unsynchronised;        /* the kernel said the clock is not synchronised */
  int64_t esterror_us, maxerror_us;
} cl_cm_rank;

/* One rank's part of one collective instance, on the rank's own clock (ns). `start` may be any
 * time at or before the rank's true start (the host enqueue or the GPU start), `end` any time at
 * or after its true end: the bounds stay valid, only looser. */
typedef struct { int32_t rank; int64_t start, end; } cl_cm_obs;
/* A collective instance: its members are obs[first .. first+count). `causal`: every rank's end
 * depends on every rank's start (AllReduce, AllGather, ReduceScatter, AlltoAll; not Broadcast or
 * Reduce, whose root may finish first); only those give bounds (cl_cm_func_is_causal). */
typedef struct { uint32_t first, count; int causal; } cl_cm_inst;

typedef struct {
  int nranks; const cl_cm_rank *ranks;
  size_t ninst; const cl_cm_inst *inst;
  const cl_cm_obs *obs;
} cl_cm_input;

/* What a host pair's offset came from. */
enum cl_cm_source {
  CL_CM_CAUSAL,              /* causal bounds of shared collectives, widened by both hosts' sync
                                esterror, cut by their maxerror where that is tighter */
  CL_CM_CAUSAL_WIDENED,      /* the bounds admit no line (a clock step?): widened until they do */
  CL_CM_SYNC_ONLY,           /* no shared collective; both hosts synchronised: 0 within maxerror */
  CL_CM_UNKNOWN              /* no shared collective and no sync state: unbounded */
};
const char *cl_cm_source_name(enum cl_cm_source s);

#define CL_CM_GRID 33         /* points at which a pair's interval is kept over its span */
#define CL_CM_MAX_DRIFT 500e-6   /* |drift| searched; NTP's frequency tolerance is 500 ppm */

/* One edge of the spanning tree: the offset of clock `child` minus clock `parent` as a line of
 * the parent's time, offset(t) = line_ns + drift * (t - t_mid), within an interval. */
typedef struct {
  int child, parent;         /* clock indices */
  enum cl_cm_source source;
  int64_t nconstraints;      /* instances both hosts took part in */
  int64_t t0, t1, t_mid;     /* span of those instances, parent clock, ns */
  double line_ns, drift;     /* the line with most slack (causal bounds alone) */
  double offset_ns;          /* the estimate at t_mid, as queries give it (inside lo..hi) */
  double drift_lo, drift_hi; /* drifts the bounds admit */
  double lo_ns, hi_ns;       /* interval of the offset at t_mid, widened */
  double max_width_ns;       /* widest interval over [t0, t1], widened */
  double widen_ns;           /* added to each side: the sync esterror of both hosts (sync only:
                                maxerror; unknown: inf) */
  double deficit_ns;         /* CL_CM_CAUSAL_WIDENED: how far every bound was moved out */
  double sync_bound_ns;      /* both hosts synchronised: |offset| <= the sum of their maxerror
                                (applied where causality is looser); else inf */
  double grid_lo[CL_CM_GRID], grid_hi[CL_CM_GRID];   /* raw interval at t0 .. t1, evenly */
} cl_cm_pair;

/* One clock: the ranks of one host boot (and one clock id). */
typedef struct {
  int first_rank;            /* lowest rank index on this clock (its host and boot id) */
  int nranks;
  int parent;                /* parent clock in the tree; -1: the reference or unreached */
  int pair;                  /* index into cl_clock_model.pair of the edge to the parent; -1 */
  int depth;
} cl_cm_clock;

typedef struct {
  int nranks, nclocks, npairs, root;   /* root: the reference clock (rank index 0's) */
  int *clock_of_rank;
  cl_cm_clock *clock;
  cl_cm_pair *pair;
} cl_clock_model;

/* Builds the model (the caller frees it with cl_cm_free). Input arrays are only read. */
void cl_cm_build(const cl_cm_input *in, cl_clock_model *m);
void cl_cm_free(cl_clock_model *m);
/* Whether a collective's name is one whose every end depends on every start. */
int cl_cm_func_is_causal(const char *func);

/* The offset of rank's clock minus the reference clock at own-clock time t: estimate and
 * interval. Returns 1 when bounded, 0 when the interval is unbounded (then lo/hi are +-inf). */
int cl_cm_offset(const cl_clock_model *m, int rank, int64_t t, double *est, double *lo, double *hi);
/* t (rank's own clock) on the reference clock, by the point estimate. */
int64_t cl_cm_align(const cl_clock_model *m, int rank, int64_t t);
/* The error of an aligned difference between ranks r and s at reference time t: the true value
 * of an aligned lateness L of r over s lies in [L + *lo, L + *hi]. Exactly 0 for ranks of one
 * clock. Returns 0 (lo/hi +-inf) when unbounded. */
int cl_cm_pair_error(const cl_clock_model *m, int r, int s, int64_t t, double *lo, double *hi);
/* Whether an aligned lateness of rank r over rank s (r later, ns > 0) at reference time t is
 * outside the clock error: true lateness certainly > 0. */
int cl_cm_lateness_called(const cl_clock_model *m, int r, int s, int64_t t, double lateness_ns);
#endif

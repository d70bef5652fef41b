/* perm_test.h: the straggler test's null model and its tail bound. In a healthy job the ranks
 * of a unit (a step, else one collective) are exchangeable: which of them made the others wait,
 * and for how long, is a random assignment of the unit's effects to its participants,
 * independently from unit to unit. One participant's total effect then has the permutation
 * distribution of a sum of independent draws, one uniform draw from each unit's values: counted
 * exactly where the values, leveled to 1/32 of the cap, make that cheap, else its tail bounded
 * with the exact moment generating function (Chernoff); either way the p-value is exact or a
 * rigorous upper bound whatever the number of units or participants. Families of hypotheses:
 * every unit (k = 1), and every k-th unit at each phase (k = 2 .. max_period: a rank late every
 * k-th step, ranks taking turns), combined by weighted Bonferroni over participants and
 * families so that the chance of naming anyone in a healthy job is at most alpha. No I/O. */
#ifndef COMMLENS_ANALYSE_PERM_TEST_H
#define COMMLENS_ANALYSE_PERM_TEST_H
#include <stddef.h>
#include <stdint.h>

/* One participant's effect in one unit (> 0; participants without an entry have 0). */
typedef struct { int32_t who; double v; } cl_pt_entry;
/* A unit: its entries e[first .. first+count), its participants (>= count, >= 1), and its
 * place in time (a step number; units are given in increasing index). */
typedef struct { uint32_t first, count; int32_t nparts; int64_t index; } cl_pt_unit;
/* A participant's result: p is its smallest adjusted p-value over the families (<= 1), k and
 * phase the family that gave it (k = 1: every unit; k >= 2: units whose index is phase
 * modulo k); t its capped total in that family, mean what chance gives there, others the
 * mean total of the other participants there. */
typedef struct { double p; int32_t k, phase; double t, mean, others; } cl_pt_result;

/* log P(sum over units of X_u >= t), each X_u one uniform draw from the unit's nparts values
 * (its entries' v, zeros for the rest): the Chernoff bound with the exact moment generating
 * function (0 when t is at most the mean, -inf when t exceeds the largest possible sum). Each
 * value counts as min(v, cap) (cap <= 0: as it is). */
double cl_pt_log_tail(const cl_pt_unit *u, size_t nu, const cl_pt_entry *e, double cap, double t);
/* Runs every family: out[w] for w in [0, nwho) (p = 1, k = 0 for a participant with no
 * effect). nhyp: the participants tested (the Bonferroni count); entries are capped at the 98th
 * percentile of the units' largest effects, and at most the third largest (a function of the
 * data that no permutation changes: the test stays exact, and a huge stall or two no longer
 * hide a steady straggler). */
void cl_pt_run(const cl_pt_unit *u, size_t nu, const cl_pt_entry *e, int nwho, int nhyp, double alpha,
               int max_period, cl_pt_result *out);
/* The cap cl_pt_run applies (0 when no unit has an effect). */
double cl_pt_cap(const cl_pt_unit *u, size_t nu, const cl_pt_entry *e);
#endif

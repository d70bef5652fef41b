/* timers.c: see timers.h. Bits grow with the highest seq seen, bounded by CL_TMARK_MAX_SPAN per
 * (comm, func) whatever a file claims; never trusts a seq for more than a bit index. */
#include "tools/commlens/model/timers.h"
#include "tools/commlens/base/util.h"
#include <stdlib.h>
#include <string.h>

#define EARLY 65536   /* seqs below the first one seen kept for a (comm, func) */

static cl_tmark *entry(cl_tmarks *t, uint64_t comm, int32_t func, int64_t seq) {
  if (t->last < t->n && t->m[t->last].comm == comm && t->m[t->last].func == func) return &t->m[t->last];
  for (size_t i = 0; i < t->n; i++)
    if (t->m[i].comm == comm && t->m[i].func == func) { t->last = i; return &t->m[i]; }
  if (t->n == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 8;
    t->m = cl_xrealloc(t->m, t->cap * sizeof *t->m);
  }
  t->last = t->n;
  /* rows come in the order collectives finished, not quite that of their seqs: room below */
  int64_t base = (seq > EARLY ? seq - EARLY : 0) & ~(int64_t)63;   /* whole words: ranks compare by word */
  t->m[t->n] = (cl_tmark){.comm = comm, .func = func, .base = base, .top = base};
  return &t->m[t->n++];
}

void cl_tmarks_note(cl_tmarks *t, uint64_t comm, int32_t func, int64_t seq, int out) {
  if (seq < 0) return;
  cl_tmark *m = entry(t, comm, func, seq);
  if (seq < m->base || seq - m->base >= CL_TMARK_MAX_SPAN) { t->n_over++; return; }
  int64_t k = seq - m->base;
  size_t need = (size_t)(k >> 6) + 1;
  if (need > m->words) {
    size_t w = m->words ? m->words : 16;
    while (w < need) w *= 2;
    m->seen = cl_xrealloc(m->seen, w * sizeof *m->seen);
    m->out = cl_xrealloc(m->out, w * sizeof *m->out);
    memset(m->seen + m->words, 0, (w - m->words) * sizeof *m->seen);
    memset(m->out + m->words, 0, (w - m->words) * sizeof *m->out);
    m->words = w;
  }
  m->seen[k >> 6] |= 1ull << (k & 63);
  if (out) m->out[k >> 6] |= 1ull << (k & 63);
  if (seq >= m->top) m->top = seq + 1;
  t->n_seen++;
  t->n_out += out != 0;
}

const cl_tmark *cl_tmarks_find(const cl_tmarks *t, uint64_t comm, int32_t func) {
  for (size_t i = 0; i < t->n; i++)
    if (t->m[i].comm == comm && t->m[i].func == func) return &t->m[i];
  return NULL;
}

void cl_tmarks_free(cl_tmarks *t) {
  for (size_t i = 0; i < t->n; i++) { free(t->m[i].seen); free(t->m[i].out); }
  free(t->m);
  memset(t, 0, sizeof *t);
}

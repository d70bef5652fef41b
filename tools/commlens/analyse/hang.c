/* hang.c: see hang.h. Reads each dump's commlensFlight with json-c; nothing in it is trusted:
 * ranks outside [0, nranks), absurd sizes and wrong types are skipped. */
#include "tools/commlens/analyse/hang.h"
#include "common/utf8.h"
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

static int64_t get_int(json_object *o, const char *k, int64_t dflt) {
  json_object *v;
  return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : dflt;
}
static void get_str(json_object *o, const char *k, char *out, size_t n) {
  json_object *v;
  out[0] = 0;
  if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string)) return;
  const char *s = json_object_get_string(v);
  cl_utf8_clean(s, strlen(s), out, n);
}
static uint64_t get_channels(json_object *o, const char *k) {
  json_object *v;
  uint64_t set = 0;
  if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_array)) return 0;
  for (size_t i = 0; i < json_object_array_length(v); i++) {
    json_object *c = json_object_array_get_idx(v, i);
    int64_t ch = json_object_is_type(c, json_type_int) ? json_object_get_int64(c) : -1;
    if (ch >= 0 && ch < 64) set |= 1ull << ch;
  }
  return set;
}
static uint64_t parse_hex(const char *s) { return strtoull(s, NULL, 16); }

static cl_hang_comm *comm_get(cl_hang *h, uint64_t comm, int nranks) {
  for (size_t i = 0; i < h->comms.n; i++) if (h->comms.a[i].comm == comm) return &h->comms.a[i];
  if (nranks < 1 || nranks > CL_HANG_MAX_RANKS || h->comms.n >= CL_HANG_MAX_COMMS ||
      h->n_members + (size_t)nranks > h->member_budget) {
    size_t i = 0;
    while (i < h->left_out.n && h->left_out.a[i] != comm) i++;
    if (i == h->left_out.n && i < CL_HANG_MAX_COMMS) CL_PUSH(h->left_out, comm);
    return NULL;
  }
  h->n_members += (size_t)nranks;
  cl_hang_comm c = {.comm = comm, .seq = -1, .nranks = nranks};
  c.members = cl_xcalloc((size_t)nranks, sizeof *c.members);
  for (int r = 0; r < nranks; r++) { c.members[r].rank = -1; c.members[r].last_started = -1; }
  CL_PUSH(h->comms, c);
  return &h->comms.a[h->comms.n - 1];
}

/* One dump, parsed once: its root, what wrote it, when (at_us), and its world rank. */
typedef struct { json_object *root; const char *trigger; double at; int rank; } dump_t;
static int is_hang(const char *trigger) { return !strcmp(trigger, "hang"); }
/* Placement order: a rank is placed from the last dump of its that it meets, so hang dumps come
 * after the others and, within a kind, newer after older. */
static int cmp_dump(const void *a, const void *b) {
  const dump_t *x = a, *y = b;
  int hx = is_hang(x->trigger), hy = is_hang(y->trigger);
  if (hx != hy) return hx - hy;
  return x->at < y->at ? -1 : x->at > y->at;
}

/* Calls fn for every communicator object of every dump, in placement order. */
typedef void (*comm_fn)(cl_hang *h, const dump_t *d, json_object *c);
static void each_comm(const dump_t *ds, size_t nd, cl_hang *h, comm_fn fn) {
  for (size_t i = 0; i < nd; i++) {
    json_object *comms;
    if (!json_object_object_get_ex(ds[i].root, "comms", &comms) || !json_object_is_type(comms, json_type_array)) continue;
    for (size_t k = 0; k < json_object_array_length(comms) && k < CL_HANG_MAX_COMMS; k++) {
      json_object *c = json_object_array_get_idx(comms, k);
      if (json_object_is_type(c, json_type_object)) fn(h, &ds[i], c);
    }
  }
}

static json_object *not_done_list(json_object *c) {
  json_object *nd;
  return json_object_object_get_ex(c, "not_done", &nd) && json_object_is_type(nd, json_type_array) ? nd : NULL;
}

/* Pass 1: each communicator's stuck collective, the lowest seq a dump shows stuck: not done in a
 * hang dump, or (with no hang dump) not done for CL_HANG_AGE_S or more. The longest wait seen
 * is kept for the answer when nothing is stuck. */
static void find_stuck(cl_hang *h, const dump_t *d, json_object *c) {
  if (h->any_hang && !is_hang(d->trigger)) return;
  json_object *nd = not_done_list(c);
  char hex[32];
  get_str(c, "comm", hex, sizeof hex);
  for (size_t i = 0; nd && i < json_object_array_length(nd); i++) {
    json_object *x = json_object_array_get_idx(nd, i);
    int64_t seq = get_int(x, "seq", -1), age = get_int(x, "age_ms", 0);
    if (seq < 0) continue;
    if (!h->longest.known || age > h->longest.age_ms) {
      h->longest = (cl_hang_longest){ .known = 1, .comm = parse_hex(hex), .seq = seq, .age_ms = age, .rank = d->rank };
      get_str(x, "func", h->longest.func, sizeof h->longest.func);
    }
    if (!h->any_hang && age < (int64_t)CL_HANG_AGE_S * 1000) continue;   /* in flight, not stuck */
    cl_hang_comm *hc = comm_get(h, parse_hex(hex), (int)get_int(c, "nranks", -1));
    if (!hc) return;
    if (!hc->name[0]) get_str(c, "name", hc->name, sizeof hc->name);
    if (hc->seq < 0 || seq < hc->seq) { hc->seq = seq; get_str(x, "func", hc->func, sizeof hc->func); }
  }
}

/* Pass 2: where each dumped rank stood on that collective. */
static void place_rank(cl_hang *h, const dump_t *d, json_object *c) {
  char hex[32];
  get_str(c, "comm", hex, sizeof hex);
  uint64_t comm = parse_hex(hex);
  cl_hang_comm *hc = NULL;
  for (size_t i = 0; i < h->comms.n && !hc; i++) if (h->comms.a[i].comm == comm) hc = &h->comms.a[i];
  int64_t cr = get_int(c, "rank", -1);
  if (!hc || cr < 0 || cr >= hc->nranks) return;
  cl_hang_member *m = &hc->members[cr];
  *m = (cl_hang_member){ .rank = d->rank, .last_started = get_int(c, "last_started_seq", -1) };
  snprintf(m->trigger, sizeof m->trigger, "%s", d->trigger);
  m->state = m->last_started < hc->seq ? CL_HANG_NOT_REACHED : CL_HANG_DONE;
  json_object *nd = not_done_list(c);
  for (size_t i = 0; nd && i < json_object_array_length(nd); i++) {
    json_object *x = json_object_array_get_idx(nd, i);
    if (get_int(x, "seq", -1) != hc->seq) continue;
    m->state = CL_HANG_NOT_DONE;
    m->channels_not_done = get_channels(x, "channels_not_done");
    m->age_ms = get_int(x, "age_ms", 0);
  }
}

void cl_hang_analyse(const cl_job *job, cl_hang *h) {
  memset(h, 0, sizeof *h);
  dump_t *ds = cl_xcalloc(job->dumps.n + 1, sizeof *ds);
  size_t nd = 0, bytes = 0;
  for (size_t i = 0; i < job->dumps.n; i++) bytes += strlen(job->dumps.a[i].flight);
  h->member_budget = CL_HANG_MEMBERS_FREE + bytes;
  if (h->member_budget > CL_HANG_MAX_MEMBERS) h->member_budget = CL_HANG_MAX_MEMBERS;
  for (size_t i = 0; i < job->dumps.n; i++) {
    json_object *root = json_tokener_parse(job->dumps.a[i].flight), *v;
    if (!root || !json_object_is_type(root, json_type_object)) { json_object_put(root); continue; }
    dump_t *d = &ds[nd++];
    d->root = root;
    d->rank = job->dumps.a[i].rank;
    d->trigger = json_object_object_get_ex(root, "trigger", &v) && json_object_is_type(v, json_type_string)
                 ? json_object_get_string(v) : "";
    d->at = json_object_object_get_ex(root, "at_us", &v) ? json_object_get_double(v) : 0;
    if (!(d->at == d->at)) d->at = 0;   /* NaN orders nothing */
    h->n_hang_dumps += is_hang(d->trigger);
  }
  h->n_dumps = (int)nd;
  h->any_hang = h->n_hang_dumps > 0;
  qsort(ds, nd, sizeof *ds, cmp_dump);
  each_comm(ds, nd, h, find_stuck);
  each_comm(ds, nd, h, place_rank);
  for (size_t i = 0; i < nd; i++) json_object_put(ds[i].root);
  free(ds);
}

void cl_hang_free(cl_hang *h) {
  for (size_t i = 0; i < h->comms.n; i++) free(h->comms.a[i].members);
  free(h->comms.a);
  free(h->left_out.a);
  memset(h, 0, sizeof *h);
}

const char *cl_hang_state_name(cl_hang_state s) {
  switch (s) {
  case CL_HANG_NOT_REACHED: return "never reached it";
  case CL_HANG_NOT_DONE: return "started, not done";
  case CL_HANG_DONE: return "done";
  default: return "no dump (never reached it, or could not dump)";
  }
}

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
  if (nranks < 1 || nranks > CL_HANG_MAX_RANKS || h->comms.n >= CL_HANG_MAX_COMMS || h->n_members + (size_t)nranks > CL_HANG_MAX_MEMBERS) return NULL;
  h->n_members += (size_t)nranks;
  cl_hang_comm c = {.comm = comm, .seq = -1, .nranks = nranks};
  c.members = cl_xcalloc((size_t)nranks, sizeof *c.members);
  for (int r = 0; r < nranks; r++) { c.members[r].rank = -1; c.members[r].last_started = -1; }
  CL_PUSH(h->comms, c);
  return &h->comms.a[h->comms.n - 1];
}

/* Calls fn for every communicator object of every dump, with what wrote that dump ("hang",
 * "signal", "late"; "" when it does not say). */
typedef void (*comm_fn)(cl_hang *h, const cl_rank *r, json_object *c, const char *trigger);
static void each_comm(const cl_job *job, cl_hang *h, comm_fn fn) {
  for (int i = 0; i < job->n; i++) {
    const cl_rank *r = job->r[i];
    if (!r->info.flight) continue;
    json_object *root = json_tokener_parse(r->info.flight), *comms, *tg;
    const char *trigger = root && json_object_object_get_ex(root, "trigger", &tg) &&
                          json_object_is_type(tg, json_type_string) ? json_object_get_string(tg) : "";
    if (root && json_object_object_get_ex(root, "comms", &comms) && json_object_is_type(comms, json_type_array))
      for (size_t k = 0; k < json_object_array_length(comms) && k < CL_HANG_MAX_COMMS; k++) {
        json_object *c = json_object_array_get_idx(comms, k);
        if (json_object_is_type(c, json_type_object)) fn(h, r, c, trigger);
      }
    json_object_put(root);
  }
}

static int is_hang(const char *trigger) { return !strcmp(trigger, "hang"); }
static void note_hang(cl_hang *h, const cl_rank *r, json_object *c, const char *trigger) {
  (void)r; (void)c;
  if (is_hang(trigger)) h->any_hang = 1;
}

static json_object *not_done_list(json_object *c) {
  json_object *nd;
  return json_object_object_get_ex(c, "not_done", &nd) && json_object_is_type(nd, json_type_array) ? nd : NULL;
}

/* Pass 1: each communicator's stuck collective, the lowest seq any dump shows not done. */
static void find_stuck(cl_hang *h, const cl_rank *r, json_object *c, const char *trigger) {
  (void)r;
  if (h->any_hang && !is_hang(trigger)) return;
  json_object *nd = not_done_list(c);
  char hex[32];
  get_str(c, "comm", hex, sizeof hex);
  cl_hang_comm *hc = nd && json_object_array_length(nd) ? comm_get(h, parse_hex(hex), (int)get_int(c, "nranks", -1)) : NULL;
  if (!hc) return;
  if (!hc->name[0]) get_str(c, "name", hc->name, sizeof hc->name);
  for (size_t i = 0; i < json_object_array_length(nd); i++) {
    json_object *x = json_object_array_get_idx(nd, i);
    int64_t seq = get_int(x, "seq", -1);
    if (seq >= 0 && (hc->seq < 0 || seq < hc->seq)) { hc->seq = seq; get_str(x, "func", hc->func, sizeof hc->func); }
  }
}

/* Pass 2: where each dumped rank stood on that collective. */
static void place_rank(cl_hang *h, const cl_rank *r, json_object *c, const char *trigger) {
  char hex[32];
  get_str(c, "comm", hex, sizeof hex);
  uint64_t comm = parse_hex(hex);
  cl_hang_comm *hc = NULL;
  for (size_t i = 0; i < h->comms.n && !hc; i++) if (h->comms.a[i].comm == comm) hc = &h->comms.a[i];
  int64_t cr = get_int(c, "rank", -1);
  if (!hc || cr < 0 || cr >= hc->nranks) return;
  cl_hang_member *m = &hc->members[cr];
  m->rank = r->rank;
  m->last_started = get_int(c, "last_started_seq", -1);
  snprintf(m->trigger, sizeof m->trigger, "%s", trigger);
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
  for (int i = 0; i < job->n; i++) h->n_dumps += job->r[i]->info.flight != NULL;
  if (!h->n_dumps) return;
  each_comm(job, h, note_hang);
  each_comm(job, h, find_stuck);
  each_comm(job, h, place_rank);
}

void cl_hang_free(cl_hang *h) {
  for (size_t i = 0; i < h->comms.n; i++) free(h->comms.a[i].members);
  free(h->comms.a);
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

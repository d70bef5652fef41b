/* trace_read.c: the streaming scan behind cl_trace_scan (see trace_read.h): the top-level walk
 * of a rank file's JSON, as a state machine over what gz_read.c delivers, each event read by
 * json_scan.c; resumes at the next event line after damage. It must never load a whole file
 * into memory or parse events through json-c. */
#include "tools/commlens/read/trace_read.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A flight-recorder dump's commlensFlight object, kept as its text for analyse/hang.c (only a
 * well-formed object of at most 1 MiB; a repeated one replaces the first). */
static void take_flight(cl_info *in, const char *s, size_t n) {
  if (n > (1u << 20) || n < 2 || *s != '{' || !cl_json_valid(s, n)) return;
  char *c = malloc(n + 1);
  if (!c) return;
  memcpy(c, s, n);
  c[n] = 0;
  free(in->flight);
  in->flight = c;
}

enum { ST_OPEN, ST_KEY, ST_VALUE, ST_ELEM, ST_DONE };
enum { K_OTHER, K_HEADER, K_STATS, K_EVENTS, K_FLIGHT };

/* After damage, the event array resumes at the next event line: a '{' opening the new data
 * (past a separating comma) or one that follows a newline. Returns its position, or NULL
 * when [p, e) holds none yet. */
static const char *next_event_line(const char *p, const char *e, int at_cut) {
  if (at_cut) {
    const char *q = cl_json_ws(p, e);
    if (q < e && *q == ',') q = cl_json_ws(q + 1, e);
    if (q < e && *q == '{') return q;
  }
  for (const char *q = p; q + 1 < e && (q = memchr(q, '\n', (size_t)(e - q - 1))); q++)
    if (q[1] == '{') return q + 1;
  return NULL;
}

int cl_trace_scan(const char *path, cl_ev_fn fn, void *arg, cl_info *info, int header_only) {
  memset(info, 0, sizeof *info);
  info->cuda_dev = -1;
  info->rank = -1; info->format = -1;
  info->st_colls = info->st_colls_gpu_lost = -1;   /* not said until a tail says so */
  info->st_est_colls = -1;
  cl_reader r;
  if (cl_reader_open(&r, path, info) != 0) { info->bad = 1; return -1; }
  int state = ST_OPEN, key = K_OTHER;
  int resync = 0, at_cut = 0;   /* skipping to the next event line after damage (at_cut: from the new data) */
  cl_ev ev;
  for (;;) {
    if (r.resynced) {   /* a fill resumed at a new gzip member: the value pending before it is lost */
      r.resynced = 0;
      if (state != ST_ELEM && !(state != ST_OPEN && info->saw_events && !info->events_closed)) {
        info->bad = 1; break;   /* the damage took the header or the end: nothing to resume into */
      }
      state = ST_ELEM; r.pos = r.cut; resync = at_cut = 1;
    }
    const char *b = r.buf + r.pos, *e = r.buf + r.len;
    if (resync) {
      const char *q = next_event_line(b, e, at_cut);
      if (q) { r.pos = (size_t)(q - r.buf); resync = at_cut = 0; continue; }
      const char *w = cl_json_ws(b, e);
      if (at_cut && w < e && *w == ',') w = cl_json_ws(w + 1, e);
      if (!at_cut || w < e) { at_cut = 0; if (r.len > r.pos + 1) r.pos = r.len - 1; }   /* keep a last newline */
      if (!cl_reader_fill(&r) && !r.resynced) break;
      continue;
    }
    const char *p = cl_json_ws(b, e);
    r.pos = (size_t)(p - r.buf);
    if (p == e) { if (!cl_reader_fill(&r) && !r.resynced) break; continue; }
    int bad = 0;
    const char *q = NULL;
    if (state == ST_OPEN) {
      if (*p != '{') { snprintf(info->msg, sizeof info->msg, "not a JSON object trace"); info->bad = 1; break; }
      r.pos++; state = ST_KEY; continue;
    }
    if (state == ST_KEY) {
      if (*p == ',') { r.pos++; continue; }
      if (*p == '}') { state = ST_DONE; break; }
      if (*p != '"') { bad = 1; }
      else if ((q = cl_json_str(p, e)) != NULL) {
        const char *k = p + 1; int kl = (int)(q - 1 - k);
        q = cl_json_ws(q, e);
        if (q < e && *q != ':') bad = 1;
        else if (q < e) {
          q = cl_json_ws(q + 1, e);
          if (q < e) {
            cl_str_t ks = {k, kl};
            key = cl_str_eq(ks, "traceEvents") ? K_EVENTS : cl_str_eq(ks, "commlens") ? K_HEADER :
                  cl_str_eq(ks, "commlensStats") ? K_STATS : cl_str_eq(ks, "commlensFlight") ? K_FLIGHT : K_OTHER;
            r.pos = (size_t)(q - r.buf); state = ST_VALUE; continue;
          }
        }
      }
    } else if (state == ST_VALUE) {
      if (key == K_EVENTS && *p == '[') {
        info->saw_events = 1; r.pos++; state = ST_ELEM;
        if (header_only && info->has_header) { state = ST_DONE; break; }
        continue;
      }
      q = cl_json_skip(p, e, &bad);
      if (q) {
        if (key == K_HEADER) cl_info_header(info, p, (size_t)(q - p));
        else if (key == K_STATS) cl_info_stats(info, p, (size_t)(q - p));
        else if (key == K_FLIGHT) take_flight(info, p, (size_t)(q - p));
        r.pos = (size_t)(q - r.buf); state = ST_KEY; continue;
      }
    } else if (state == ST_ELEM) {
      if (*p == ',') { r.pos++; continue; }
      if (*p == ']') { info->events_closed = 1; r.pos++; state = ST_KEY; continue; }
      if (*p == '{') {
        q = cl_ev_scan(p, e, &ev, &bad);
        if (q) {
          info->n_events++; info->bytes_events += q - p;
          if (fn) fn(&ev, arg);
          r.pos = (size_t)(q - r.buf); continue;
        }
      } else {
        q = cl_json_skip(p, e, &bad);
        if (q) { r.pos = (size_t)(q - r.buf); continue; }
      }
    }
    if (bad) {
      if (!info->n_skipped && !r.n_damage)
        snprintf(info->msg, sizeof info->msg, "invalid JSON at uncompressed byte %llu of the %s",
                 (unsigned long long)(r.out_base + (uint64_t)(p - r.buf)),
                 state == ST_ELEM ? "event array (after the last complete event)" : "top-level object");
      info->bad = 1;
      if (state != ST_ELEM || header_only) break;
      info->n_skipped++;   /* damage inside the event array: resume at the next event line */
      r.pos++; resync = 1; at_cut = 0; continue;
    }
    if (!cl_reader_fill(&r) && !r.resynced) break;   /* value runs past the end of the data */
  }
  if (r.n_damage) {   /* the gzip damage explains any JSON damage after it: say it instead */
    snprintf(info->msg, sizeof info->msg, "%s", r.dmsg);
    info->n_gz_damage = r.n_damage;
    info->bad = 1;
  }
  if (state != ST_DONE && !info->bad) info->truncated = 1;
  if (state == ST_ELEM || (info->bad && info->saw_events)) info->truncated = 1;
  cl_reader_close(&r);
  if (info->has_header && cl_info_refused(info)) return -1;
  if (!info->has_header) {
    if (!info->msg[0] || !info->bad)
      snprintf(info->msg, sizeof info->msg, "not a commlens trace (no \"commlens\" header object%s)",
               info->saw_events ? "" : ", no traceEvents");
    return -1;
  }
  return 0;
}

void cl_info_free(cl_info *in) {
  free(in->flight);
  free(in->version); free(in->host); free(in->job); free(in->rank_source); free(in->boot_id); free(in->clock_id);
  in->version = in->host = in->job = in->rank_source = in->boot_id = in->clock_id = in->flight = NULL;
}

/* tags.c (render): the report's v7 sections: each rank's exposure split into waiting for peers
 * and transferring, and the table by user tag (analyse/tags.h), as text and as JSON. Only
 * jobs with kernel phases or tags get them; reads the analysis, computes nothing. */
#include "tools/commlens/render/report.h"
#include <json-c/json.h>
#include <math.h>

static int any_split(const cl_job *job, const cl_tags *t) {
  for (int i = 0; i < job->n; i++) if (t->exp_xfer[i] >= 0) return 1;
  return 0;
}

void cl_render_tags_text(cl_job *job, cl_analysis *an, int top, FILE *o) {
  const cl_tags *t = &an->tags;
  char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32], lab[48];
  if (any_split(job, t)) {
    fprintf(o, "\nExposed communication split (v7 kernel phases: initial_sync = the GPU waiting for its peers, the rest transferring)\n");
    fprintf(o, "  %5s  %-16s %18s %14s\n", "rank", "host", "waiting for peers", "transferring");
    for (int i = 0, shown = 0; i < job->n && shown < top; i++) {
      if (t->exp_xfer[i] < 0) continue;
      shown++;
      fprintf(o, "  %5d  %s %18s %14s\n", job->r[i]->rank, cl_show_col(cl_rank_host(job->r[i]), 16),
              cl_fmt_time(b1, sizeof b1, t->exp_wait[i]), cl_fmt_time(b2, sizeof b2, t->exp_xfer[i]));
    }
  }
  if (!t->n) return;
  const cl_tag_row *w = &t->row[0];
  fprintf(o, "\nBy user tag (v7 userTag; wait caused = the others' wait for the last arrival in its instances)\n");
  if (w->wait_caused_ns > 0)
    fprintf(o, "  tag %s waits most: %s caused in %lld instance(s), %lld called late\n", cl_tag_label(t, w, lab, sizeof lab),
            cl_fmt_time(b1, sizeof b1, w->wait_caused_ns), (long long)w->n_inst, (long long)w->n_called);
  fprintf(o, "  %-16s %7s %11s %11s %11s %11s %11s %11s %12s\n", "tag", "colls", "GPU time", "exposed", "exp. waiting",
          "exp. xfer", "GPU wait", "compute", "wait caused");
  for (size_t k = 0; k < t->n && (int)k < top; k++) {
    const cl_tag_row *r = &t->row[k];
    fprintf(o, "  %-16.16s %7lld %11s %11s %11s %11s %11s %11s %12s\n", cl_tag_label(t, r, lab, sizeof lab),
            (long long)r->n_colls, cl_fmt_time(b1, sizeof b1, r->gpu_ns), cl_fmt_time(b2, sizeof b2, r->exposed_ns),
            cl_fmt_time(b3, sizeof b3, r->exposed_wait_ns), cl_fmt_time(b4, sizeof b4, r->exposed_xfer_ns),
            cl_fmt_time(b5, sizeof b5, r->sync_wait_ns), cl_fmt_time(b6, sizeof b6, r->compute_ns),
            cl_fmt_time(b7, sizeof b7, r->wait_caused_ns));
  }
  if (t->n > (size_t)top) fprintf(o, "  ... %zu more tag row(s) (--top N)\n", t->n - (size_t)top);
  if (t->capped) fprintf(o, "  %lld distinct tags: the %d that caused the most waiting are named, the rest are \"other\"\n",
                         (long long)t->n_distinct, CL_TAG_LABELS_MAX - 1);
}

static json_object *jd(double v) { return json_object_new_double(round(v * 1000) / 1000); }

void cl_render_tags_json(cl_job *job, cl_analysis *an, json_object *root) {
  const cl_tags *t = &an->tags;
  char lab[48];
  if (any_split(job, t)) {
    json_object *a = json_object_new_array();
    for (int i = 0; i < job->n; i++) {
      if (t->exp_xfer[i] < 0) continue;
      json_object *x = json_object_new_object();
      json_object_object_add(x, "rank", json_object_new_int(job->r[i]->rank));
      json_object_object_add(x, "waiting_for_peers_ns", jd(t->exp_wait[i]));
      json_object_object_add(x, "transferring_ns", jd(t->exp_xfer[i]));
      json_object_array_add(a, x);
    }
    json_object_object_add(root, "exposure_split", a);
  }
  if (!t->n) return;
  json_object *a = json_object_new_array();
  for (size_t k = 0; k < t->n; k++) {
    const cl_tag_row *r = &t->row[k];
    json_object *x = json_object_new_object();
    json_object_object_add(x, "tag", json_object_new_string(cl_tag_label(t, r, lab, sizeof lab)));
    json_object_object_add(x, "colls", json_object_new_int64(r->n_colls));
    json_object_object_add(x, "instances", json_object_new_int64(r->n_inst));
    json_object_object_add(x, "gpu_ns", jd(r->gpu_ns));
    json_object_object_add(x, "exposed_ns", jd(r->exposed_ns));
    json_object_object_add(x, "exposed_waiting_ns", jd(r->exposed_wait_ns));
    json_object_object_add(x, "exposed_transferring_ns", jd(r->exposed_xfer_ns));
    json_object_object_add(x, "gpu_wait_ns", jd(r->sync_wait_ns));
    json_object_object_add(x, "compute_ns", jd(r->compute_ns));
    json_object_object_add(x, "wait_caused_ns", jd(r->wait_caused_ns));
    json_object_object_add(x, "called_late", json_object_new_int64(r->n_called));
    json_object_array_add(a, x);
  }
  json_object_object_add(root, "by_tag", a);
  json_object_object_add(root, "tags_distinct", json_object_new_int64(t->n_distinct));
  json_object_object_add(root, "tags_capped", json_object_new_boolean(t->capped));
}

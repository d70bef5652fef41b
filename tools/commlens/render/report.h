/* report.h: `commlens report`'s text and JSON forms of the analysis (render/text.c,
 * render/json.c) and the labels every form shares (render/labels.c). They read the analysis
 * (analyse/analysis.h) and compute nothing. */
#ifndef COMMLENS_CLI_RENDER_REPORT_H
#define COMMLENS_CLI_RENDER_REPORT_H
#include "tools/commlens/analyse/analysis.h"
#include <stdio.h>

/* The text tables, `top` rows each, of an analysed job. */
void cl_render_text(cl_job *job, cl_analysis *an, int top, FILE *out);
/* Every row as one JSON object. */
void cl_render_json(cl_job *job, cl_analysis *an, FILE *out);
/* What the flight dumps say (a hang per communicator, else that there is none) and the earlier
 * attempts of the job: the report's first lines when there are any (render/text.c). */
void cl_render_hang_text(const cl_job *job, const cl_hang *h, FILE *out);
/* The verdict, the clock model and the steps: the report's first lines (render/verdict.c). */
void cl_render_verdict_text(cl_job *job, cl_analysis *an, int top, FILE *out);
/* The channel verdict: "Channels: <headline>", then the other ranks with a slow channel or
 * channel stalls ("  also rank R: ..."), up to top lines in all. */
void cl_render_channel_lines(const cl_job *job, const cl_channels_an *ch, int top, FILE *out);
/* The clock model, one line per clock ("  clock K: host H, rank(s) ...: one clock (same boot),
 * offset 0 exactly; vs host P: +O in [lo, hi], drift, from <source> (N instance(s))"). */
void cl_render_clock_lines(const cl_job *job, const cl_clock_model *m, FILE *out);
/* The same as the documented objects verdict, clock_model and steps (docs/verdict.md), added
 * to root. */
struct json_object;
void cl_render_verdict_json(cl_job *job, cl_analysis *an, struct json_object *root);
/* The v7 sections (render/tags.c): exposure split and the table by user tag; nothing for a
 * job without kernel phases or tags. */
void cl_render_tags_text(cl_job *job, cl_analysis *an, int top, FILE *out);
void cl_render_tags_json(cl_job *job, cl_analysis *an, struct json_object *root);
/* "host" or "host:GPU", whole (base/util.h cl_ring_buf: valid for the next 7 calls of either). */
const char *cl_rank_host(const cl_rank *r);
#endif

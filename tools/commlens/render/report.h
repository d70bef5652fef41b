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
/* "host" or "host:GPU" (a thread-local buffer, valid for 4 calls). */
const char *cl_rank_host(const cl_rank *r);
#endif

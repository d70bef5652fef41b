/* html.h: `commlens report --html FILE`: the report as one self-contained HTML page. */
#ifndef COMMLENS_CLI_HTML_H
#define COMMLENS_CLI_HTML_H
#include "tools/commlens/analyse/analysis.h"

/* Writes the page for an analysed job to path (through path.tmp, renamed when complete) and
 * says so on stderr. Returns 0, or -1 with the reason on stderr. */
int cl_report_html(cl_job *job, cl_analysis *an, const char *path);
#endif

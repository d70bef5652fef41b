/* html.h: `commlens report --html FILE`: the report as one self-contained HTML page. */
#ifndef COMMLENS_CLI_HTML_H
#define COMMLENS_CLI_HTML_H
#include "report.h"

/* Writes the page for an aligned job (instances built) to path (through path.tmp, renamed
 * when complete) and says so on stderr. Returns 0, or -1 with the reason on stderr. */
int cl_report_html(cl_job *job, const char *path);
#endif

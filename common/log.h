/* log.h: the plugin's one logging path. Messages go through NCCL's logger when NCCL gave us
 * one (ABI v4+), else to stderr (warnings only). cl_log_once() says a thing at most once per
 * process, for the "one clear message" rule. */
#ifndef COMMLENS_LOG_H
#define COMMLENS_LOG_H
typedef void (*cl_logger_fn)(int level, unsigned long flags, const char *file, int line,
                             const char *fmt, ...);
enum { CL_LOG_WARN = 2, CL_LOG_INFO = 3 };
void cl_log_set_logger(cl_logger_fn fn);
void cl_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `key` identifies the message: the second and later calls with the same key are silent. */
void cl_log_once(const char *key, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void cl_log_reset_once(void);   /* tests: every message may be said once again */
/* A fork child: the once-table starts empty, its lock made anew (the forking thread is the
 * child's only one; another may have held it). */
void cl_log_after_fork_child(void);
#endif

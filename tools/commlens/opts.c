/* opts.c: getopt_long driven by a subcommand's option table (opts.h), the --help text made
 * from the same table, and the usage errors (exit status 2 is the caller's). Options go
 * through getopt_long in return-in-order mode, so operands and options mix freely whatever
 * POSIXLY_CORRECT says, and "--" ends the options. */
#include "tools/commlens/opts.h"
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* getopt_long's value for table entry i: above every char, so a short letter never collides */
#define LONG_VAL(i) (256 + (i))

static int n_opts(const cl_cmd *cmd) { int n = 0; while (cmd->opts[n].name) n++; return n; }

void cl_opts_init(cl_opts *p, const cl_cmd *cmd, int argc, char **argv) {
  memset(p, 0, sizeof *p);
  p->cmd = cmd; p->argc = argc; p->argv = argv;
  int n = n_opts(cmd);
  struct option *lo = calloc((size_t)n + 1, sizeof *lo);
  /* '-': operands come back in order as option 1; ':': a missing value is ':' not '?' */
  size_t k = 0;
  p->shortopts[k++] = '-'; p->shortopts[k++] = ':';
  for (int i = 0; lo && i < n; i++) {
    const cl_opt *o = &cmd->opts[i];
    lo[i] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL, LONG_VAL(i) };
    if (o->short_name && k + 3 < sizeof p->shortopts) {
      p->shortopts[k++] = o->short_name;
      if (o->arg) p->shortopts[k++] = ':';
    }
  }
  p->shortopts[k] = 0;
  p->longopts = lo;
  optind = 0;    /* glibc: 0 starts a fresh scan of a new argv */
  opterr = 0;    /* our own messages name the command and the option's value */
}

void cl_opts_free(cl_opts *p) { free(p->longopts); p->longopts = NULL; }

static const cl_opt *by_short(const cl_cmd *cmd, int c) {
  for (const cl_opt *o = cmd->opts; o->name; o++) if (o->short_name && o->short_name == c) return o;
  return NULL;
}

int cl_opts_usage_error(const cl_cmd *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "commlens %s: ", cmd->name);
  va_start(ap, fmt); vfprintf(stderr, fmt, ap); va_end(ap);
  fprintf(stderr, "\nTry 'commlens %s --help'.\n", cmd->name);
  return CL_OPTS_BAD;
}

/* An unknown long option: name the ones it could have meant when it is a prefix of several. */
static int bad_long(const cl_cmd *cmd, const char *arg) {
  const char *s = arg + 2, *eq = strchr(s, '=');
  size_t n = eq ? (size_t)(eq - s) : strlen(s);
  char cands[256] = ""; int nc = 0;
  for (const cl_opt *o = cmd->opts; o->name; o++)
    if (n && !strncmp(o->name, s, n)) {
      size_t l = strlen(cands);
      snprintf(cands + l, sizeof cands - l, "%s--%s", nc++ ? ", " : "", o->name);
    }
  if (nc > 1) return cl_opts_usage_error(cmd, "option '%.*s' is ambiguous: %s", (int)(n + 2), arg, cands);
  return cl_opts_usage_error(cmd, "unknown option '%.*s'", (int)(n + 2), arg);
}

int cl_opts_next(cl_opts *p, const char **val) {
  const cl_cmd *cmd = p->cmd;
  *val = NULL;
  if (p->after_dashdash) {
    if (optind < p->argc) { *val = p->argv[optind++]; return CL_OPTS_OPERAND; }
    return CL_OPTS_END;
  }
  int c = getopt_long(p->argc, p->argv, p->shortopts, (const struct option *)p->longopts, NULL);
  if (c == -1) {   /* the end, or "--": whatever follows is operands */
    p->after_dashdash = 1;
    return cl_opts_next(p, val);
  }
  if (c == 1) { *val = optarg; return CL_OPTS_OPERAND; }
  if (c >= LONG_VAL(0)) { *val = optarg; return cmd->opts[c - LONG_VAL(0)].id; }
  if (c == ':') {   /* a value is missing: optopt is the long value or the letter */
    const cl_opt *o = optopt >= LONG_VAL(0) ? &cmd->opts[optopt - LONG_VAL(0)] : by_short(cmd, optopt);
    if (o && optopt >= LONG_VAL(0)) return cl_opts_usage_error(cmd, "option '--%s' needs a value (%s)", o->name, o->arg);
    if (o) return cl_opts_usage_error(cmd, "option '-%c' needs a value (%s)", o->short_name, o->arg);
    return cl_opts_usage_error(cmd, "an option needs a value");
  }
  if (c == '?') {
    if (optopt >= LONG_VAL(0)) return cl_opts_usage_error(cmd, "option '--%s' takes no value", cmd->opts[optopt - LONG_VAL(0)].name);
    if (optopt) return cl_opts_usage_error(cmd, "unknown option '-%c'", optopt);
    const char *arg = optind > 0 && optind <= p->argc ? p->argv[optind - 1] : "";
    if (!strncmp(arg, "--", 2)) return bad_long(cmd, arg);
    return cl_opts_usage_error(cmd, "unknown option '%s'", arg);
  }
  const cl_opt *o = by_short(cmd, c);
  if (!o) return cl_opts_usage_error(cmd, "unknown option '-%c'", c);
  *val = optarg;
  return o->id;
}

#define HELP_COLS 100

/* "  -o, --output OUT" / "      --json": the left column of one help line */
static int opt_label(const cl_opt *o, char *b, size_t n) {
  if (o->short_name) return snprintf(b, n, "  -%c, --%s%s%s", o->short_name, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
  return snprintf(b, n, "      --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

void cl_opts_help(const cl_cmd *cmd, FILE *o) {
  char b[128]; int w = 0;
  for (const cl_opt *x = cmd->opts; x->name; x++) { int l = opt_label(x, b, sizeof b); if (l > w) w = l; }
  fprintf(o, "usage: commlens %s [OPTIONS]%s%s\n%s\n\noptions:\n", cmd->name, cmd->operands[0] ? " " : "", cmd->operands,
          cmd->summary);
  for (const cl_opt *x = cmd->opts; x->name; x++) {
    opt_label(x, b, sizeof b);
    /* the help text wrapped at HELP_COLS, continuation lines under its first word */
    int start = fprintf(o, "%-*s  ", w, b), col = start;
    for (const char *h = x->help; *h;) {
      while (*h == ' ') h++;
      const char *sp = h;
      while (*sp && *sp != ' ') sp++;
      int wl = (int)(sp - h);
      if (!wl) break;
      if (col > start && col + 1 + wl > HELP_COLS) { fprintf(o, "\n%*s", start, ""); col = start; }
      else if (col > start) { fputc(' ', o); col++; }
      col += fprintf(o, "%.*s", wl, h);
      h = sp;
    }
    fputc('\n', o);
  }
  if (cmd->epilog) fprintf(o, "\n%s", cmd->epilog);
}

int cl_opts_int(const cl_cmd *cmd, const char *opt, const char *val, long lo, long hi, long *out) {
  char *e; errno = 0;
  long v = strtol(val, &e, 10);
  if (e == val || *e || errno || v < lo || v > hi) {
    cl_opts_usage_error(cmd, "option '%s' expects an integer from %ld to %ld, not '%s'", opt, lo, hi, val);
    return -1;
  }
  *out = v;
  return 0;
}

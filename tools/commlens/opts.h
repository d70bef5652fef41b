/* opts.h: the command line's one option table per subcommand, read by both the parser
 * (getopt_long) and the --help text, so what a command accepts and what its help says cannot
 * drift apart. Knows nothing of what the options mean. */
#ifndef COMMLENS_CLI_OPTS_H
#define COMMLENS_CLI_OPTS_H
#include <stdio.h>

/* One option: its id (what the parser returns), long name (without "--"), short letter (0:
 * none), value name (NULL: a flag that takes no value) and one line of help. */
typedef struct {
  int id;
  const char *name;
  char short_name;
  const char *arg;
  const char *help;
} cl_opt;

/* The help entry every subcommand lists (its id is CL_OPT_HELP). */
enum { CL_OPT_HELP = 1, CL_OPT_FIRST_FREE };
#define CL_OPT_HELP_ENTRY { CL_OPT_HELP, "help", 'h', NULL, "show this help and exit" }

/* A subcommand: name, synopsis of its operands, one line on what it does, its option table
 * (ended by an entry with a NULL name) and a closing paragraph for --help (may be NULL). */
typedef struct {
  const char *name, *operands, *summary;
  const cl_opt *opts;
  const char *epilog;
} cl_cmd;

/* Parser state over argv[0..argc) of one subcommand (argv[0] is the subcommand's name).
 * Options and operands may come in any order; "--" ends the options. */
typedef struct {
  const cl_cmd *cmd;
  int argc; char **argv;
  void *longopts;           /* struct option[], owned */
  char shortopts[96];
  int after_dashdash;       /* operands after "--" are being handed out */
} cl_opts;

enum { CL_OPTS_END = 0, CL_OPTS_OPERAND = -1, CL_OPTS_BAD = -2 };

void cl_opts_init(cl_opts *p, const cl_cmd *cmd, int argc, char **argv);
/* The next option's id with its value in *val (NULL for a flag), CL_OPTS_OPERAND with the
 * operand in *val, CL_OPTS_END when argv is used up, or CL_OPTS_BAD after printing what is
 * wrong (unknown or ambiguous option, missing value, value given to a flag) and how to get
 * help to stderr: the caller exits with status 2. */
int cl_opts_next(cl_opts *p, const char **val);
void cl_opts_free(cl_opts *p);

/* Writes the command's --help text, generated from its table. */
void cl_opts_help(const cl_cmd *cmd, FILE *o);
/* Prints "commlens CMD: <message>" and the pointer to --help to stderr; returns CL_OPTS_BAD. */
int cl_opts_usage_error(const cl_cmd *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses a value that must be an integer in [lo, hi]; on anything else prints why (naming the
 * option) and returns -1. */
int cl_opts_int(const cl_cmd *cmd, const char *opt, const char *val, long lo, long hi, long *out);
#endif

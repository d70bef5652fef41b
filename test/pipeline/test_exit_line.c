/* test_exit_line.c: what a job prints at exit. By default (COMMLENS_SUMMARY=line) the process
 * that holds world rank 0 prints exactly one line to stderr, where the files are and the command
 * that reads them, and every other process nothing; a process driving several GPUs counts as
 * rank 0 when one of its GPUs is. COMMLENS_SUMMARY=print adds each rank's table, file and off
 * print nothing. The line never points to files that were not made, and its path is one shell
 * word a terminal shows as it is. */
#include "harness.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define POINTER "commlens: this job's profiles are in "

/* one process, one GPU: a short job (its rank from the environment) */
H_CHILD(one_gpu) { h_short_job(4, NULL); }

/* one process driving two GPUs as ranks `base` and `base + 1` of a communicator of 4 */
static void two_gpus(int base) {
  h_plugin p;
  REQUIRE(h_open(&p, NULL, 5) == 0, "open");
  void *ctx[2];
  for (int d = 0; d < 2; d++) {
    REQUIRE(h_cuda_set_device(NULL, d) == 0, "no stand-in libcuda");
    h_comm_info info = {0xe0e0ull, "", 1, 4, base + d};
    REQUIRE(h_init(&p, &ctx[d], &info) == 0, "init on GPU %d", d);
  }
  for (int s = 0; s < 3; s++)
    for (int d = 0; d < 2; d++) h_drive_coll(&p, ctx[d], NULL, (uint64_t)s, NULL);
  for (int d = 0; d < 2; d++) h_finalize(&p, ctx[d]);
  h_close(&p);
}
H_CHILD(gpus_0_1) { two_gpus(0); }
H_CHILD(gpus_2_3) { two_gpus(2); }

/* Runs child `name` with COMMLENS_DIR=dir and `extra`, its stderr into a file; returns that text
 * (the caller frees it). */
static char *run_stderr(const char *name, const char *dir, const char *const *extra) {
  char direnv[PATH_MAX + 16], errpath[PATH_MAX];
  snprintf(direnv, sizeof direnv, "COMMLENS_DIR=%s", dir);
  snprintf(errpath, sizeof errpath, "%s/commlens-stderr-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  const char *env[10] = {direnv, "COMMLENS_SUMMARY", "COMMLENS_CUPTI=0", "RANK", "COMMLENS_RANK"};
  int k = 5;
  for (int i = 0; extra && extra[i] && k < 9; i++) env[k++] = extra[i];
  env[k] = NULL;
  fflush(stderr);
  int saved = dup(2), fd = mkstemp(errpath);
  if (saved < 0 || fd < 0) { CHECK(0, "cannot capture stderr in %s", errpath); return strdup(""); }
  dup2(fd, 2);
  close(fd);
  int rc = h_spawn(name, env);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  CHECK(rc == 0, "case %s exited %d (dir %s)", name, rc, dir);
  char *text = h_read_file(errpath, NULL);
  unlink(errpath);
  return text ? text : strdup("");
}

/* Lines of `text` that start with `prefix`. */
static int count_lines(const char *text, const char *prefix) {
  int n = 0;
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (!strncmp(l, prefix, strlen(prefix))) n++;
  return n;
}

/* The one line for `dir`, whole: its real path, and the command that reads it. */
static void check_pointer(const char *text, const char *dir) {
  char real[PATH_MAX], want[3 * PATH_MAX];
  REQUIRE(realpath(dir, real), "no directory %s", dir);
  snprintf(want, sizeof want, POINTER "%s; read them with: commlens report %s\n", real, real);
  CHECK(count_lines(text, POINTER) == 1 && strstr(text, want), "want exactly the line\n  %s got:\n%s", want, text);
}

TL_TEST(rank_0_says_one_line_and_the_others_nothing) {
  char dir[256];
  h_fresh_dir(dir, sizeof dir);
  char *t0 = run_stderr("one_gpu", dir, (const char *const[]){"RANK=0", NULL});
  check_pointer(t0, dir);
  CHECK(count_lines(t0, "commlens") == 1, "rank 0 said more than one line:\n%s", t0);
  char *t1 = run_stderr("one_gpu", dir, (const char *const[]){"RANK=1", NULL});
  CHECK(!strstr(t1, "commlens"), "rank 1 said something:\n%s", t1);
  char *sums[4];
  int n = h_find_files(dir, ".summary.txt", sums, 4);
  CHECK(n == 2, "%d summary files, want one per rank", n);
  for (int i = 0; i < n; i++) free(sums[i]);
  free(t0);
  free(t1);
  if (!tl_cur_failed) h_rm_rf(dir);
}

TL_TEST(print_adds_each_ranks_table_file_and_off_say_nothing) {
  char dir[256];
  h_fresh_dir(dir, sizeof dir);
  char *p0 = run_stderr("one_gpu", dir, (const char *const[]){"RANK=0", "COMMLENS_SUMMARY=print", NULL});
  char *p1 = run_stderr("one_gpu", dir, (const char *const[]){"RANK=1", "COMMLENS_SUMMARY=print", NULL});
  check_pointer(p0, dir);
  CHECK(count_lines(p0, "commlens[rank 0] ") >= 3, "rank 0's table is not on stderr:\n%s", p0);
  CHECK(count_lines(p1, "commlens[rank 1] ") >= 3 && !strstr(p1, POINTER), "rank 1: its table alone, got:\n%s", p1);
  char *f0 = run_stderr("one_gpu", dir, (const char *const[]){"RANK=0", "COMMLENS_SUMMARY=file", NULL});
  char *o0 = run_stderr("one_gpu", dir, (const char *const[]){"RANK=0", "COMMLENS_SUMMARY=off", NULL});
  CHECK(!strstr(f0, "commlens") && !strstr(o0, "commlens"), "file or off said something:\n%s\n%s", f0, o0);
  free(p0); free(p1); free(f0); free(o0);
  if (!tl_cur_failed) h_rm_rf(dir);
}

/* a process of several GPUs is rank 0's when one of them is world rank 0 */
TL_TEST(a_process_of_several_gpus_says_it_once_when_it_holds_rank_0) {
  char dir[256];
  h_fresh_dir(dir, sizeof dir);
  char *a = run_stderr("gpus_0_1", dir, NULL);
  char *b = run_stderr("gpus_2_3", dir, NULL);
  check_pointer(a, dir);
  CHECK(!strstr(b, "commlens"), "the process of ranks 2 and 3 said something:\n%s", b);
  free(a);
  free(b);
  if (!tl_cur_failed) h_rm_rf(dir);
}

/* no files, no line: an output directory that cannot be made (a file stands in its way) */
TL_TEST(no_line_when_the_files_were_not_made) {
  char dir[256], blocked[300];
  h_fresh_dir(dir, sizeof dir);
  snprintf(blocked, sizeof blocked, "%s/file/sub", dir);
  mkdir(dir, 0755);
  char path[300];
  snprintf(path, sizeof path, "%s/file", dir);
  FILE *f = fopen(path, "w");
  REQUIRE(f, "cannot create %s", path);
  fclose(f);
  char *t = run_stderr("one_gpu", blocked, (const char *const[]){"RANK=0", NULL});
  CHECK(!strstr(t, POINTER), "pointed to files it did not write:\n%s", t);
  free(t);
  if (!tl_cur_failed) h_rm_rf(dir);
}

/* a directory named with a quote, a space and an escape sequence: the line carries it as one
 * shell word (bash reads back the very path) and no control byte reaches the terminal */
TL_TEST(the_path_is_one_shell_word_without_control_bytes) {
  char base[256], dir[400];
  h_fresh_dir(base, sizeof base);
  mkdir(base, 0755);
  snprintf(dir, sizeof dir, "%s/it's a \033[31mdir", base);
  char *t = run_stderr("one_gpu", dir, (const char *const[]){"RANK=0", NULL});
  CHECK(count_lines(t, POINTER) == 1, "want one line, got:\n%s", t);
  CHECK(!strchr(t, '\033'), "an escape byte reached stderr:\n%s", t);
  const char *w = strstr(t, "commlens report ");
  if (w) {
    w += strlen("commlens report ");
    char script[300], cmd[400], real[PATH_MAX];
    snprintf(script, sizeof script, "%s/read_back.sh", base);
    FILE *s = fopen(script, "w");
    REQUIRE(s, "cannot write %s", script);
    fprintf(s, "printf %%s %.*s\n", (int)strcspn(w, "\n"), w);
    fclose(s);
    snprintf(cmd, sizeof cmd, "bash %s", script);
    FILE *p = popen(cmd, "r");
    char got[PATH_MAX] = "";
    size_t n = p ? fread(got, 1, sizeof got - 1, p) : 0;
    got[n] = 0;
    if (p) pclose(p);
    CHECK(realpath(dir, real) && !strcmp(got, real), "bash read back '%s', want '%s'", got, dir);
  }
  free(t);
  if (!tl_cur_failed) h_rm_rf(base);
}

H_MAIN("pipeline/exit_line")

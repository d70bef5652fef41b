/* test_prom.c: COMMLENS_PROM, the live metrics in the Prometheus text format: the exposition
 * text itself (escaping, families, values) and a whole job through the ABI that leaves a file
 * the format's grammar accepts (test/tools/check_prom.py) with the job's counts in it. */
#include "harness.h"
#include "exporters/prom.h"
#include "exporters/summary.h"
#include "exporters/strbuf.h"
#include "common/nccl.h"
#include "common/grow.h"
#include "common/clock.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/newfile.h"
#include "common/utf8.h"
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

/* A label value with a quote, a backslash and a newline is escaped; every family has one HELP
 * and TYPE; GPU seconds keep nanosecond precision. */
TL_TEST(exposition_text) {
  cl_summary *sum = cl_summary_new();
  cl_summary_add(sum, "AllReduce", 1 << 20, 2, 123456789);
  cl_summary_add(sum, "AllReduce", 1 << 20, 2, 0);
  cl_prom_rank r = {.rank = 3, .gpu = 1, .host = "node\"a\\b\nc", .job = "j1", .version = "0.1.0", .abi = 5,
                    .events = 10, .calls = 40, .per_call_ns = 30, .colls = 2, .colls_timed = 1,
                    .has_exposure = 1, .comm_ns = 2000000000, .exposed_ns = 5};
  cl_sb b = {0};
  cl_prom_format(&b, &r, sum);
  REQUIRE(b.p, "no text");
  CHECK(strstr(b.p, "host=\"node\\\"a\\\\b\\nc\""), "label value not escaped: %s", b.p);
  CHECK(strstr(b.p, "commlens_collectives_total{rank=\"3\",gpu=\"1\",host=\"node\\\"a\\\\b\\nc\",job=\"j1\",func=\"AllReduce\",size_min_bytes=\"1048576\"} 2\n"),
        "collective count: %s", b.p);
  CHECK(strstr(b.p, "size_min_bytes=\"1048576\"} 0.123456789\n"), "GPU seconds: %s", b.p);
  CHECK(strstr(b.p, "commlens_exposed_communication_seconds_total{rank=\"3\",gpu=\"1\""), "no exposure");
  CHECK(strstr(b.p, "commlens_communication_seconds_total{rank=\"3\",gpu=\"1\",host=\"node\\\"a\\\\b\\nc\",job=\"j1\"} 2.000000000\n"),
        "communication seconds: %s", b.p);
  int helps = 0, types = 0;
  for (const char *p = b.p; (p = strstr(p, "# HELP ")); p++) helps++;
  for (const char *p = b.p; (p = strstr(p, "# TYPE ")); p++) types++;
  CHECK(helps == types && helps >= 10, "%d HELP and %d TYPE lines", helps, types);
  char path[256], cmd[400];
  snprintf(path, sizeof path, "%s/commlens-prom-unit-%d.prom", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  CHECK(cl_prom_write(path, &r, sum) == 0, "write %s", path);
  snprintf(cmd, sizeof cmd, "python3 test/tools/check_prom.py %s", path);
  CHECK(system(cmd) == 0, "check_prom.py rejects %s", path);
  unlink(path);
  sb_free(&b);
  cl_summary_free(sum);
}

H_CHILD(job) { h_short_job(7, NULL); }
/* Entries of dir, "." and ".." aside. */
static int entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *de; d && (de = readdir(d));) n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
  if (d) closedir(d);
  return n;
}

/* A job with COMMLENS_PROM=DIR leaves one metrics file per rank that the grammar accepts, with
 * the job's collectives, and no temporary file behind. */
TL_TEST(job_writes_metrics) {
  char dir[256], prom[300], env_dir[300], env_prom[320];
  h_fresh_dir(dir, sizeof dir);
  snprintf(prom, sizeof prom, "%s/metrics", dir);
  snprintf(env_dir, sizeof env_dir, "COMMLENS_DIR=%s", dir);
  snprintf(env_prom, sizeof env_prom, "COMMLENS_PROM=%s", prom);
  const char *env[] = {env_dir, env_prom, "COMMLENS_SUMMARY=off", NULL};
  CHECK(h_spawn("job", env) == 0, "job failed");
  char *files[4];
  int n = h_find_files(prom, ".prom", files, 4);
  CHECK(n == 1, "%d metrics files in %s, want 1", n, prom);
  int nt = entries(prom) - n;
  CHECK(nt == 0, "%d temporary files left", nt);
  if (n == 1) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "python3 test/tools/check_prom.py '%s'", files[0]);
    CHECK(system(cmd) == 0, "check_prom.py rejects %s", files[0]);
    if (system("command -v promtool >/dev/null 2>&1") == 0) {   /* Prometheus' own checker, where installed */
      snprintf(cmd, sizeof cmd, "promtool check metrics < '%s'", files[0]);
      CHECK(system(cmd) == 0, "promtool rejects %s", files[0]);
    } else fprintf(stderr, "  note: promtool not installed (Debian: prometheus); checked by check_prom.py only\n");
    FILE *f = fopen(files[0], "r");
    char buf[1 << 16];
    size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[len] = 0;
    if (f) fclose(f);
    CHECK(strstr(buf, "commlens_collectives_total{") && strstr(buf, "func=\"AllReduce\"") && strstr(buf, "} 7\n"),
          "7 AllReduce not in the metrics:\n%s", buf);
  }
  for (int i = 0; i < n; i++) free(files[i]);
  if (!tl_cur_failed) h_rm_rf(dir);
}

/* Another user plants a symlink or a hard link at the name the temporary file once had
 * (<file>.tmp) to a file of theirs or ours: it is never opened; the metrics land in <file>
 * (0644, for node-exporter), and no temporary is left. */
TL_TEST(planted_links_at_the_temporary_name_are_never_opened) {
  char dir[256], path[300], tmp[320], victim[320];
  h_fresh_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/rank0.prom", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  snprintf(victim, sizeof victim, "%s/victim", dir);
  cl_summary *sum = cl_summary_new();
  cl_summary_add(sum, "AllReduce", 1 << 20, 2, 1000);
  cl_prom_rank r = {.rank = 0, .gpu = 0, .host = "h", .job = "j", .version = "0.1.0", .abi = 5, .colls = 1};
  for (int kind = 0; kind < 2; kind++) {
    FILE *v = fopen(victim, "w");
    REQUIRE(v && fputs("precious\n", v) >= 0 && fclose(v) == 0, "victim");
    unlink(tmp);
    REQUIRE((kind ? link(victim, tmp) : symlink(victim, tmp)) == 0, "plant %s", kind ? "hard link" : "symlink");
    umask(077);                                   /* the file's mode must not depend on the job's umask */
    CHECK(cl_prom_write(path, &r, sum) == 0, "write");
    umask(022);
    size_t len = 0;
    char *vs = h_read_file(victim, &len);
    CHECK(vs && !strcmp(vs, "precious\n"), "%s: the victim was written through it (%zu bytes)",
          kind ? "hard link" : "symlink", len);
    free(vs);
    char *ps = h_read_file(path, NULL);
    CHECK(ps && strstr(ps, "commlens_collectives_total{"), "no metrics in %s", path);
    free(ps);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644, "mode %o, want 644", st.st_mode & 07777);
    int n = entries(dir);                         /* the victim, the plant, the metrics: nothing else */
    CHECK(n == 3, "%d files in %s", n, dir);
  }
  cl_summary_free(sum);
  if (!tl_cur_failed) h_rm_rf(dir);
}

H_MAIN("exporters/prom")

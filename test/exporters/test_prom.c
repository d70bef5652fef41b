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
#include "tools/replay/replay.h"
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

/* Per communicator: counts, bytes, queue time and the kernel-time histogram (cumulative
 * buckets, +Inf = _count, _sum exact); communicators past CL_PROM_COMMS share comm="other";
 * several ranks in one exposition name each family once. Checked by check_prom.py and, where
 * installed, by promtool. */
static int count_of(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p++) n++;
  return n;
}
TL_TEST(per_communicator_families) {
  cl_prom_comms t = {0};
  for (int i = 0; i < 3; i++) cl_prom_comms_add(&t, 0xaa, 1000, 1, 2000000, 1000000);   /* 2 ms kernels */
  cl_prom_comms_add(&t, 0xaa, 1000, 0, 0, 0);                                             /* untimed */
  cl_prom_comms_add(&t, 0xbb, 8, 1, 3000000, 0);                                          /* exactly on a bound */
  for (uint64_t h = 1; h <= CL_PROM_COMMS + 2; h++) cl_prom_comms_add(&t, 0x1000 + h, 1, 1, 5, 0);
  CHECK(t.n == CL_PROM_COMMS, "%d communicators with their own series", t.n);
  CHECK(t.other.colls == 4 && t.other.timed == 4, "other: %llu", (unsigned long long)t.other.colls);
  cl_prom_rank r[2] = {{.rank = 3, .gpu = 1, .host = "h", .job = "j1", .version = "0.1.0", .abi = 5, .comms = &t},
                       {.rank = 4, .gpu = 0, .host = "h", .job = "j1", .version = "0.1.0", .abi = 5, .comms = &t}};
  cl_sb b = {0};
  cl_prom_format(&b, r, NULL);
  REQUIRE(b.p, "no text");
  const char *L = "{rank=\"3\",gpu=\"1\",host=\"h\",job=\"j1\",comm=\"00000000000000aa\"";
  static const char *const want[][2] = {
    {"commlens_comm_collectives_total", "} 4"}, {"commlens_comm_bytes_total", "} 4000"},
    {"commlens_comm_queue_seconds_total", "} 0.003000000"},
    {"commlens_comm_kernel_seconds_bucket", ",le=\"0.001\"} 0"}, {"commlens_comm_kernel_seconds_bucket", ",le=\"0.003\"} 3"},
    {"commlens_comm_kernel_seconds_bucket", ",le=\"+Inf\"} 3"}, {"commlens_comm_kernel_seconds_sum", "} 0.006000000"},
    {"commlens_comm_kernel_seconds_count", "} 3"},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    char line[400];
    snprintf(line, sizeof line, "%s%s%s\n", want[i][0], L, want[i][1]);
    CHECK(strstr(b.p, line), "no %s in:\n%s", line, b.p);
  }
  CHECK(strstr(b.p, "comm=\"00000000000000bb\",le=\"0.003\"} 1\n"), "3 ms is in the le=0.003 bucket");
  CHECK(strstr(b.p, "commlens_comm_collectives_total{rank=\"3\",gpu=\"1\",host=\"h\",job=\"j1\",comm=\"other\"} 4\n"), "other");
  CHECK(count_of(b.p, "comm=") == (CL_PROM_COMMS + 1) * (3 + CL_PROM_BUCKETS + 3), "series per comm");
  sb_reset(&b);
  const cl_summary *sums[2] = {NULL, NULL};
  cl_prom_format_ranks(&b, r, sums, 2);
  CHECK(count_of(b.p, "# TYPE commlens_comm_kernel_seconds histogram") == 1, "one TYPE for two ranks");
  CHECK(count_of(b.p, "commlens_comm_kernel_seconds_count{rank=\"4\"") == CL_PROM_COMMS + 1, "rank 4's series");
  char path[256], cmd[400];
  snprintf(path, sizeof path, "%s/commlens-prom-comms-%d.prom", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  FILE *f = fopen(path, "w");
  REQUIRE(f && fwrite(b.p, 1, b.len, f) == b.len && fclose(f) == 0, "write %s", path);
  snprintf(cmd, sizeof cmd, "python3 test/tools/check_prom.py %s", path);
  CHECK(system(cmd) == 0, "check_prom.py rejects %s", path);
  if (system("command -v promtool >/dev/null 2>&1") == 0) {
    snprintf(cmd, sizeof cmd, "promtool check metrics < '%s'", path);
    CHECK(system(cmd) == 0, "promtool rejects %s", path);
  }
  unlink(path);
  sb_free(&b);
}

/* A real run (NCCL 2.28.3 on 2x H200, three communicators, test/data/real) replayed through
 * the plugin with COMMLENS_PROM, one process per rank: each rank's file has one series per
 * communicator, labelled with the communicator's hash, the same three on both ranks; every
 * operation counted once (the per-communicator counts add up to the per-function ones) and
 * GPU-timed (KernelCh timers), with kernel time in the histogram. */
/* In a rank process whose communicators are finalized (the writer stopped and wrote its metrics
 * as they stand): its metrics files copied to $H_COPY (the process removes its own at exit). */
static void copy_own_metrics(void) {
  const char *prom = getenv("COMMLENS_PROM"), *to = getenv("H_COPY");
  char *files[8], tag[32];
  int n = h_find_files(prom, ".prom", files, 8), copied = 0;
  snprintf(tag, sizeof tag, "-%d", (int)getpid());
  for (int i = 0; i < n; i++) {
    size_t len = 0;
    char *t = strstr(files[i], tag) ? h_read_file(files[i], &len) : NULL, dst[700];
    snprintf(dst, sizeof dst, "%s/%s", to, strrchr(files[i], '/') + 1);
    FILE *f = t ? fopen(dst, "wb") : NULL;
    if (f) { copied += fwrite(t, 1, len, f) == len; fclose(f); }
    free(t);
    free(files[i]);
  }
  CHECK(copied == 1, "%d metrics files of this process copied from %s", copied, prom);
}
H_CHILD(replay_real) {
  rp_stats st;
  REQUIRE(rp_replay(getenv("H_REC"), NULL, &st) == 0, "replay %s: %s", getenv("H_REC"), st.err);
  copy_own_metrics();
}
typedef struct { char comm[3][17]; uint64_t colls[3], timed[3]; int n; uint64_t func_total; double kernel_s; } comm_counts;
/* Reads one .prom file's per-communicator counts and the per-function total. */
static void read_counts(const char *text, comm_counts *c) {
  memset(c, 0, sizeof *c);
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    const char *cm = strstr(l, "comm=\""), *end = strchr(l, '\n'), *sp = strchr(l, '}');
    if (!sp || (end && sp > end)) continue;
    double v = strtod(sp + 1, NULL);
    if (!strncmp(l, "commlens_collectives_total{", 27)) c->func_total += (uint64_t)v;
    if (!cm || (end && cm > end)) continue;
    int k = 0;
    while (k < c->n && strncmp(c->comm[k], cm + 6, 16)) k++;
    if (k == c->n && c->n < 3 && !strncmp(l, "commlens_comm_collectives_total{", 32)) memcpy(c->comm[c->n++], cm + 6, 16);
    if (k >= c->n) continue;
    if (!strncmp(l, "commlens_comm_collectives_total{", 32)) c->colls[k] = (uint64_t)v;
    if (!strncmp(l, "commlens_comm_kernel_seconds_count{", 35)) c->timed[k] = (uint64_t)v;
    if (!strncmp(l, "commlens_comm_kernel_seconds_sum{", 33)) c->kernel_s += v;
  }
}
TL_TEST(a_real_run_has_a_series_per_communicator_the_same_on_every_rank) {
  char dir[256], prom[300], env_prom[320], rec[256], copy[300], env_copy[320];
  h_fresh_dir(dir, sizeof dir);
  snprintf(prom, sizeof prom, "%s/metrics", dir);
  snprintf(env_prom, sizeof env_prom, "COMMLENS_PROM=%s", prom);
  snprintf(copy, sizeof copy, "%s/copies", dir);
  snprintf(env_copy, sizeof env_copy, "H_COPY=%s", copy);
  mkdir(copy, 0755);
  comm_counts c[2];
  for (int r = 0; r < 2; r++) {
    char env_dir[300], env_rec[300], env_rank[16], *files[4];
    snprintf(env_dir, sizeof env_dir, "COMMLENS_DIR=%s/traces", dir);
    snprintf(rec, sizeof rec, "test/data/real/nccl2.28.3-h200x2-multicomm-r%d.rec.gz", r);
    snprintf(env_rec, sizeof env_rec, "H_REC=%s", rec);
    snprintf(env_rank, sizeof env_rank, "RANK=%d", r);
    const char *env[] = {env_dir, env_prom, env_rec, env_rank, env_copy, "COMMLENS_EVENTS=full", "COMMLENS_CUPTI=0",
                         "COMMLENS_SUMMARY=off", NULL};
    CHECK(h_spawn("replay_real", env) == 0, "replay of %s failed", rec);
    CHECK(h_find_files(prom, ".prom", files, 4) == 0, "rank %d's metrics file outlived its process", r);
    int n = h_find_files(copy, ".prom", files, 4);
    REQUIRE(n == r + 1, "%d metrics files after rank %d", n, r);
    char *text = NULL;
    for (int i = 0; i < n; i++) {
      char want[32];
      snprintf(want, sizeof want, "commlens-r%d-", r);
      if (strstr(files[i], want)) text = h_read_file(files[i], NULL);
      free(files[i]);
    }
    REQUIRE(text, "no metrics file of rank %d", r);
    read_counts(text, &c[r]);
    free(text);
    CHECK(c[r].n == 3, "rank %d: %d communicators", r, c[r].n);
    uint64_t sum = 0;
    for (int k = 0; k < c[r].n; k++) {
      sum += c[r].colls[k];
      CHECK(c[r].colls[k] > 0 && c[r].timed[k] == c[r].colls[k], "rank %d comm %s: %llu operations, %llu timed", r,
            c[r].comm[k], (unsigned long long)c[r].colls[k], (unsigned long long)c[r].timed[k]);
    }
    CHECK(sum == c[r].func_total && sum > 0, "rank %d: %llu per communicator, %llu per function", r,
          (unsigned long long)sum, (unsigned long long)c[r].func_total);
    CHECK(c[r].kernel_s > 0, "rank %d: no kernel time", r);
  }
  for (int k = 0; k < c[0].n; k++) {
    int found = 0;
    for (int j = 0; j < c[1].n; j++) found |= !strcmp(c[0].comm[k], c[1].comm[j]);
    CHECK(found, "communicator %s of rank 0 is not on rank 1", c[0].comm[k]);
  }
  if (!tl_cur_failed) h_rm_rf(dir);
}

H_CHILD(job) {
  h_short_job(7, NULL);
  copy_own_metrics();
}
/* Entries of dir, "." and ".." aside. */
static int entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *de; d && (de = readdir(d));) n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
  if (d) closedir(d);
  return n;
}

/* A job with COMMLENS_PROM=DIR writes one metrics file per rank that the grammar accepts, with
 * the job's collectives once its communicators are finalized; once the process ends neither it
 * nor a temporary file is left (a finished process is not live). */
TL_TEST(job_writes_metrics) {
  char dir[256], prom[300], env_dir[300], env_prom[320], copy[300], env_copy[320];
  h_fresh_dir(dir, sizeof dir);
  snprintf(prom, sizeof prom, "%s/metrics", dir);
  snprintf(env_dir, sizeof env_dir, "COMMLENS_DIR=%s", dir);
  snprintf(env_prom, sizeof env_prom, "COMMLENS_PROM=%s", prom);
  snprintf(copy, sizeof copy, "%s/copies", dir);
  snprintf(env_copy, sizeof env_copy, "H_COPY=%s", copy);
  mkdir(copy, 0755);
  const char *env[] = {env_dir, env_prom, env_copy, "COMMLENS_SUMMARY=off", NULL};
  CHECK(h_spawn("job", env) == 0, "job failed");
  char *files[4];
  int nt = entries(prom);
  CHECK(nt == 0, "%d files left in %s by a finished process", nt, prom);
  int n = h_find_files(copy, ".prom", files, 4);
  CHECK(n == 1, "%d metrics files in %s, want 1", n, copy);
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

/* test_summary.c: the plugin's exit summary (exporters/summary.c, plugin/output/rank_output.c)
 * with names a job hands it: COMMLENS_SUMMARY=print and the .summary.txt show them as a terminal
 * would without acting on them, and the .summary.json keeps them exact. */
#include "harness.h"
#include <fcntl.h>
#include <json-c/json.h>
#include <unistd.h>

/* COMMLENS_SUMMARY=print: names from NCCL's descriptors and the output path reach stderr and
 * the summary text shown, never acted on (control characters as \xNN, newline too: no line of
 * their own), and the summary's JSON keeps them exact. Its stderr goes to $SUMMARY_STDERR. */
#define HOSTILE_FUNC "A\x1b[2J\r\"R\nforged\tx"
H_CHILD(hostile_summary_names) {
  int fd = open(getenv("SUMMARY_STDERR"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0 && dup2(fd, 2) == 2, "stderr to a file");
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  h_opts o = {.func = HOSTILE_FUNC};
  for (int i = 0; i < 3; i++) h_drive_coll(&p, ctx, &o, (uint64_t)i, NULL);
  h_finalize(&p, ctx);
  h_close(&p);
}
static void no_terminal_controls(const char *what, const char *t) {
  int forged = 0;
  for (const char *l = t; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) forged += !strncmp(l, "forged", 6);
  CHECK(t && !strpbrk(t, "\x1b\r\t") && !forged && strstr(t, "A\\x1b[2J\\x0d\"R\\x0aforged\\x09x") &&
        strstr(t, "d\\x1bx"), "%s: a control character or a forged line reached it:\n%s", what, t ? t : "(none)");
}
TL_TEST(printed_summary_shows_names_never_obeys_them) {
  char dir[256], sub[400], kv[500], errkv[500], errp[400];
  h_fresh_dir(dir, sizeof dir);
  snprintf(sub, sizeof sub, "%s/d\x1bx", dir);
  snprintf(kv, sizeof kv, "COMMLENS_DIR=%s", sub);
  snprintf(errp, sizeof errp, "%s/stderr", dir);
  snprintf(errkv, sizeof errkv, "SUMMARY_STDERR=%s", errp);
  int rc = h_spawn("hostile_summary_names", (const char *const[]){kv, errkv, "COMMLENS_SUMMARY=print", "COMMLENS_CUPTI=0", NULL});
  CHECK(rc == 0, "child exited %d (dir %s)", rc, dir);
  char *err = h_read_file(errp, NULL);
  no_terminal_controls("stderr", err);
  free(err);
  char *sums[2];
  int n = h_find_files(sub, ".summary.txt", sums, 2);
  REQUIRE(n == 1, "%d summaries in %s", n, sub);
  char *text = h_read_file(sums[0], NULL);
  no_terminal_controls("summary.txt", text);
  free(text);
  char json[700];
  snprintf(json, sizeof json, "%.*s.summary.json", (int)(strstr(sums[0], ".summary.txt") - sums[0]), sums[0]);
  json_object *o = json_object_from_file(json), *rows = h_json_get(o, "collectives");
  json_object *f = rows && json_object_array_length(rows) ? h_json_get(json_object_array_get_idx(rows, 0), "func") : NULL;
  CHECK(f && !strcmp(json_object_get_string(f), HOSTILE_FUNC), "summary.json: %s",
        o ? json_object_to_json_string(o) : "(does not parse)");
  if (o) json_object_put(o);
  free(sums[0]);
  if (!tl_cur_failed) h_rm_rf(dir);
}

H_MAIN("exporters/summary")

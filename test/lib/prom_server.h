/* prom_server.h: a real Prometheus for tests, on loopback: the textfiles of a directory served
 * over HTTP by a small file server (a child process, one path per file), a Prometheus process
 * scraping them with the shipped rules, and queries through its HTTP API. Everything is
 * bounded in time and killed by ps_stop. */
#ifndef COMMLENS_TEST_PROM_SERVER_H
#define COMMLENS_TEST_PROM_SERVER_H
#include <json-c/json.h>
#include <sys/types.h>

/* The Prometheus binary: $PROMETHEUS, else prometheus on PATH, else /usr/bin/prometheus; NULL
 * when none (the caller skips with a message). Static buffer. */
const char *ps_prometheus(void);

typedef struct {
  char dir[512];         /* its config, data and log */
  pid_t files_pid, prom_pid;
  int files_port, prom_port;
  pid_t node_pid;        /* node_exporter's watchdog (ps_node_start) */
  int node_port;
} ps_server;

/* Serves the files of `files_dir` (GET /<name>) from a child process on a free loopback port.
 * 0, or -1 with a message on stderr. */
int ps_serve_files(ps_server *s, const char *files_dir);
/* Starts Prometheus in s->dir (made by the caller) scraping every `scrape_s` seconds the files
 * named in `names` (NULL-terminated) on the file server, one target each (metrics_path = the
 * file; honor_labels: the files' job label is the job's), evaluating `rules` (a path) every
 * `scrape_s` seconds; waits (up to 60 s) until it answers ready. 0, or -1 with a message. */
int ps_start(ps_server *s, const char *const *names, const char *rules, int scrape_s);
/* An instant query; the "result" array of its answer (the caller frees the returned root
 * through *root), NULL on any error (said on stderr). */
json_object *ps_query(ps_server *s, const char *promql, json_object **root);
/* node_exporter (Debian prometheus-node-exporter): $NODE_EXPORTER, else prometheus-node-exporter
 * or node_exporter on PATH; NULL when none. Static buffer. */
const char *ps_node_exporter(void);
/* Starts node_exporter with its textfile collector alone, reading `textfile_dir`, on a free
 * loopback port (s->node_port), its log in s->dir/node_exporter.log; it stops by itself after
 * life_s seconds or when the caller's process ends (a watchdog child holds it). Waits (up to
 * 60 s) until it answers. 0, or -1 with a message. */
int ps_node_start(ps_server *s, const char *textfile_dir, int life_s);
/* node_exporter's /metrics body (malloc'd), NULL when it does not answer 200. */
char *ps_node_metrics(ps_server *s);
/* Kills Prometheus, the file server and node_exporter (SIGTERM, then SIGKILL after 10 s) and
 * reaps them. */
void ps_stop(ps_server *s);
#endif

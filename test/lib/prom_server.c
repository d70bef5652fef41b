/* prom_server.c: see prom_server.h (Prometheus, its file server, node_exporter). The file
 * server and the API client speak the least HTTP that Prometheus and its API need (HTTP/1.0,
 * one request per connection); every wait has a bound, every child is reaped. */
#include "prom_server.h"
#include "harness.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* $env if executable, else the first of names on PATH, else fallback (may be NULL); NULL when
 * none is there. Static buffer. */
static const char *find_bin(const char *env, const char *const *names, const char *fallback) {
  static char path[1024];
  const char *e = getenv(env);
  if (e && *e) return access(e, X_OK) == 0 ? e : NULL;
  const char *p = getenv("PATH");
  for (int i = 0; names[i]; i++) {
    char *copy = strdup(p ? p : ""), *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
      snprintf(path, sizeof path, "%s/%s", d, names[i]);
      if (access(path, X_OK) == 0) { free(copy); return path; }
    }
    free(copy);
  }
  if (!fallback) return NULL;
  snprintf(path, sizeof path, "%s", fallback);
  return access(path, X_OK) == 0 ? path : NULL;
}
const char *ps_prometheus(void) {
  return find_bin("PROMETHEUS", (const char *const[]){"prometheus", NULL}, "/usr/bin/prometheus");
}
const char *ps_node_exporter(void) {
  return find_bin("NODE_EXPORTER", (const char *const[]){"prometheus-node-exporter", "node_exporter", NULL},
                  "/usr/bin/prometheus-node-exporter");
}

/* A listening socket on 127.0.0.1 at a port the kernel chose; its port into *port. */
static int listen_loopback(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t l = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &l) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* One request of the file server: "GET /<name> ..." where name has no '/' and does not start
 * with '.'; anything else is 404. */
static void serve_one(int c, const char *dir) {
  char req[2048];
  size_t n = 0;
  struct pollfd pf = {c, POLLIN, 0};
  while (n < sizeof req - 1 && !memmem(req, n, "\r\n\r\n", 4) && poll(&pf, 1, 5000) == 1) {
    ssize_t r = read(c, req + n, sizeof req - 1 - n);
    if (r <= 0) break;
    n += (size_t)r;
  }
  req[n] = 0;
  char name[256] = "", path[1024];
  const char *sp = strchr(req, ' ');
  if (!strncmp(req, "GET /", 5) && sp) {
    size_t l = strcspn(req + 5, " ?");
    if (l && l < sizeof name) { memcpy(name, req + 5, l); name[l] = 0; }
  }
  char *body = NULL;
  size_t len = 0;
  if (name[0] && name[0] != '.' && !strchr(name, '/')) {
    snprintf(path, sizeof path, "%s/%s", dir, name);
    body = h_read_file(path, &len);
  }
  char head[256];
  int hl = body ? snprintf(head, sizeof head, "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                                               "Content-Length: %zu\r\nConnection: close\r\n\r\n", len)
                : snprintf(head, sizeof head, "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  if (write_all(c, head, (size_t)hl) == 0 && body) write_all(c, body, len);
  free(body);
}

int ps_serve_files(ps_server *s, const char *files_dir) {
  int fd = listen_loopback(&s->files_port);
  if (fd < 0) { fprintf(stderr, "  file server: no loopback socket: %s\n", strerror(errno)); return -1; }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
      int c = accept(fd, NULL, NULL);
      if (c < 0) { if (errno == EINTR) continue; _exit(1); }
      serve_one(c, files_dir);
      close(c);
    }
  }
  close(fd);
  if (pid < 0) return -1;
  s->files_pid = pid;
  return 0;
}

/* GET path from 127.0.0.1:port; the body (malloc'd) and the status code into *status. */
static char *http_get(int port, const char *path, int *status) {
  *status = -1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (fd < 0) return NULL;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { close(fd); return NULL; }
  char req[8192];
  int l = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
  if (l <= 0 || l >= (int)sizeof req || write_all(fd, req, (size_t)l) != 0) { close(fd); return NULL; }
  size_t n = 0, cap = 65536;
  char *buf = malloc(cap + 1);
  struct pollfd pf = {fd, POLLIN, 0};
  while (buf && poll(&pf, 1, 10000) == 1) {
    if (n == cap) { char *nb = realloc(buf, 2 * cap + 1); if (!nb) break; buf = nb; cap *= 2; }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  if (!buf) return NULL;
  buf[n] = 0;
  char *body = strstr(buf, "\r\n\r\n");
  if (!body || sscanf(buf, "HTTP/%*s %d", status) != 1) { free(buf); return NULL; }
  memmove(buf, body + 4, strlen(body + 4) + 1);
  return buf;
}

/* A port no one listens on now (bound, then released; Prometheus may lose a race for it, and
 * ps_start then tries another). */
static int free_port(void) {
  int port = -1, fd = listen_loopback(&port);
  if (fd >= 0) close(fd);
  return port;
}

static int write_config(ps_server *s, const char *const *names, const char *rules, int scrape_s) {
  char path[700];
  snprintf(path, sizeof path, "%s/prometheus.yml", s->dir);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "global:\n  scrape_interval: %ds\n  scrape_timeout: %ds\n  evaluation_interval: %ds\n"
             "rule_files:\n  - %s\nscrape_configs:\n  - job_name: commlens-files\n    honor_labels: true\n"
             "    static_configs:\n", scrape_s, scrape_s, scrape_s, rules);
  for (int i = 0; names[i]; i++)
    fprintf(f, "      - targets: ['127.0.0.1:%d']\n        labels: {__metrics_path__: '/%s', instance: '%s'}\n",
            s->files_port, names[i], names[i]);
  return fclose(f);
}

/* In a child: runs argv[0] with its stdout and stderr appended to logp; never returns. */
static void exec_logged(const char *logp, const char *const *argv) {
  int lf = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (lf >= 0) { dup2(lf, 1); dup2(lf, 2); }
  execv(argv[0], (char *const *)argv);
  _exit(127);
}

/* Waits (up to 60 s) until the server child *pid answers GET path on port with 200: 0. Else
 * -1, the child reaped (it exited: it lost the port, the caller tries another) or killed, and
 * *pid 0. */
static int wait_ready(pid_t *pid, int port, const char *path) {
  uint64_t deadline = h_monotonic_ns() + 60000000000ull;
  while (h_monotonic_ns() < deadline) {
    int st = 0;
    if (waitpid(*pid, &st, WNOHANG) == *pid) { *pid = 0; return -1; }
    char *b = http_get(port, path, &st);
    free(b);
    if (st == 200) return 0;
    usleep(100000);
  }
  kill(*pid, SIGKILL);
  waitpid(*pid, NULL, 0);
  *pid = 0;
  return -1;
}

int ps_start(ps_server *s, const char *const *names, const char *rules, int scrape_s) {
  const char *bin = ps_prometheus();
  if (!bin || write_config(s, names, rules, scrape_s) != 0) { fprintf(stderr, "  prometheus: no binary or config\n"); return -1; }
  for (int attempt = 0; attempt < 3; attempt++) {
    s->prom_port = free_port();
    char cfg[700], data[700], listen[64], logp[700];
    snprintf(cfg, sizeof cfg, "--config.file=%s/prometheus.yml", s->dir);
    snprintf(data, sizeof data, "--storage.tsdb.path=%s/data", s->dir);
    snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", s->prom_port);
    snprintf(logp, sizeof logp, "%s/prometheus.log", s->dir);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
      exec_logged(logp, (const char *const[]){bin, cfg, data, listen, "--log.level=warn", "--web.enable-lifecycle", NULL});
    }
    if (pid < 0) return -1;
    s->prom_pid = pid;
    if (wait_ready(&s->prom_pid, s->prom_port, "/-/ready") == 0) return 0;
  }
  fprintf(stderr, "  prometheus did not become ready (log: %s/prometheus.log)\n", s->dir);
  return -1;
}

json_object *ps_query(ps_server *s, const char *promql, json_object **root) {
  *root = NULL;
  char path[6000] = "/api/v1/query?query=";
  size_t o = strlen(path);
  for (const unsigned char *c = (const unsigned char *)promql; *c && o + 4 < sizeof path; c++) {
    if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("-_.~", *c))
      path[o++] = (char)*c;
    else o += (size_t)snprintf(path + o, sizeof path - o, "%%%02X", *c);
  }
  path[o] = 0;
  int st = 0;
  char *body = http_get(s->prom_port, path, &st);
  if (!body || st != 200) { fprintf(stderr, "  query %s: HTTP %d %s\n", promql, st, body ? body : ""); free(body); return NULL; }
  *root = json_tokener_parse(body);
  free(body);
  json_object *data = h_json_get(*root, "data"), *res = h_json_get(data, "result");
  if (!res || !json_object_is_type(res, json_type_array)) { fprintf(stderr, "  query %s: no result\n", promql); return NULL; }
  return res;
}

int ps_node_start(ps_server *s, const char *textfile_dir, int life_s) {
  const char *bin = ps_node_exporter();
  if (!bin) { fprintf(stderr, "  node_exporter: no binary\n"); return -1; }
  char exe[1024];
  snprintf(exe, sizeof exe, "%s", bin);
  for (int attempt = 0; attempt < 3; attempt++) {
    s->node_port = free_port();
    char dirarg[700], listen[64], logp[700];
    snprintf(dirarg, sizeof dirarg, "--collector.textfile.directory=%s", textfile_dir);
    snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", s->node_port);
    snprintf(logp, sizeof logp, "%s/node_exporter.log", s->dir);
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {   /* the watchdog: dies with the test or after life_s, and node_exporter with it */
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      alarm((unsigned)life_s);
      pid_t ne = fork();
      if (ne == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1) _exit(1);
        exec_logged(logp, (const char *const[]){exe, "--collector.disable-defaults", "--collector.textfile", dirarg, listen, NULL});
      }
      int st = 0;
      if (ne > 0) waitpid(ne, &st, 0);
      _exit(0);
    }
    if (pid < 0) return -1;
    s->node_pid = pid;
    if (wait_ready(&s->node_pid, s->node_port, "/metrics") == 0) return 0;
  }
  fprintf(stderr, "  node_exporter did not answer (log: %s/node_exporter.log)\n", s->dir);
  return -1;
}

char *ps_node_metrics(ps_server *s) {
  int st = 0;
  char *b = http_get(s->node_port, "/metrics", &st);
  if (st != 200) { free(b); return NULL; }
  return b;
}

static void end_child(pid_t *pid) {
  if (*pid <= 0) return;
  kill(*pid, SIGTERM);
  uint64_t deadline = h_monotonic_ns() + 10000000000ull;
  while (waitpid(*pid, NULL, WNOHANG) == 0) {
    if (h_monotonic_ns() > deadline) { kill(*pid, SIGKILL); waitpid(*pid, NULL, 0); break; }
    usleep(20000);
  }
  *pid = 0;
}

void ps_stop(ps_server *s) {
  end_child(&s->prom_pid);
  end_child(&s->files_pid);
  end_child(&s->node_pid);
}

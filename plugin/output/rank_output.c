/* rank_output.c: see rank_output.h. File names, the header, the stats tail and the summary
 * text of one rank; nothing here decides what to do about a failure. */
#include "plugin/output/rank_output.h"
#include "common/config.h"
#include "common/log.h"
#include "common/newfile.h"
#include "common/utf8.h"
#include "plugin/output/identity.h"
#include "exporters/digest.h"
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int mkdir_p(const char *dir) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
  struct stat st;
  if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode)) { errno = ENOTDIR; return -1; }
  return 0;
}

/* A host name safe inside a file name. */
static void safe_name(char *out, size_t n, const char *in) {
  size_t k = 0;
  for (; *in && k + 1 < n; in++)
    out[k++] = (*in == '/' || *in == ' ' || (unsigned char)*in < 0x20) ? '_' : *in;
  out[k] = 0;
}

void cl_out_name(cl_rank_output *o, const char *dir, int gzip, const cl_out_who *w) {
  char host[128], gpu[24] = "";
  safe_name(host, sizeof host, cl_proc.host);
  if (w->dev >= 0) snprintf(gpu, sizeof gpu, "-g%d", w->dev);
  o->who = *w;
  snprintf(o->base, sizeof o->base, "%s/commlens-r%d-%s-%d%s", dir, w->rank, host, (int)cl_proc.pid, gpu);
  snprintf(o->path, sizeof o->path, "%s.trace.json%s", o->base, gzip ? ".gz" : "");
}

int cl_out_prepare(const char *dir, const char **what) {
  *what = "cannot create the output directory";
  return mkdir_p(dir);
}

int cl_out_create(cl_rank_output *o, const char *dir, int gzip, const char **what, const char **where) {
  *where = dir;
  if (mkdir_p(dir) != 0) { *what = "cannot create the output directory"; return -1; }
  *where = o->path;
  char taken[sizeof o->path];
  snprintf(taken, sizeof taken, "%s", o->path);
  int fresh, fd = cl_file_create_new(o->path, sizeof o->path, o->base, gzip ? ".trace.json.gz" : ".trace.json", 0644, &fresh);
  o->file = fd >= 0 ? cl_tfile_open(fd, gzip) : NULL;
  if (!o->file) {
    if (fd >= 0) unlink(o->path);
    *what = "cannot create the trace file";
    return -1;
  }
  if (fresh) {   /* an earlier process's file, or a planted one or a link: never written through */
    snprintf(o->base, sizeof o->base, "%.*s", (int)(strlen(o->path) - strlen(gzip ? ".trace.json.gz" : ".trace.json")), o->path);
    cl_log(CL_LOG_WARN, "%s exists (another process's file or a planted link); not touching it, writing the trace to %s",
           taken, o->path);
  }
  return 0;
}

/* A summary file <base><suffix>, new (a fresh name beside it if that one is taken). */
static FILE *summary_file(const cl_rank_output *o, const char *suffix) {
  char path[1500];
  int fresh, fd = o->file || o->dfd_open ? cl_file_create_new(path, sizeof path, o->base, suffix, 0644, &fresh) : -1;
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (fd >= 0 && !f) close(fd);
  return f;
}

/* The header object: who wrote the file, its clock and what it recorded (trace and digest). */
static void header_obj(cl_sb *b, const cl_out_who *w) {
  sb_puts(b, "{\"format\":1,\"version\":");
  sb_jstr(b, COMMLENS_VERSION);
  sb_printf(b, ",\"abi\":%d,\"host\":", cl_proc.abi);
  sb_jstr(b, cl_proc.host);
  cl_clock_identity_json(b, cl_proc.boot_id, cl_cfg.clock_id, &cl_proc.sync);
  sb_printf(b, ",\"os_pid\":%d,\"start_unix_ns\":%lld,\"rank\":%d,\"rank_source\":", (int)cl_proc.pid,
            (long long)(cl_proc.start_ns + (uint64_t)cl_proc.realtime_offset_ns), w->rank);
  sb_jstr(b, w->rank_source);
  sb_puts(b, ",\"job\":");
  sb_jstr(b, cl_proc.job);
  sb_printf(b, ",\"cuda_device\":%d,\"clock\":{\"realtime_offset_ns\":%lld,\"offset_error_ns\":%lld},"
            "\"mask\":%u,\"events\":", w->dev, (long long)cl_proc.realtime_offset_ns,
            (long long)cl_proc.offset_err_ns, cl_cfg.mask);
  sb_jstr(b, cl_cfg.events_name);
  sb_puts(b, "}");
}
static void header(cl_sb *b, const cl_out_who *w) {
  sb_puts(b, "{\"displayTimeUnit\":\"ns\",\"commlens\":");
  header_obj(b, w);
  sb_puts(b, ",\"traceEvents\":[");
}

void cl_out_header(cl_rank_output *o, cl_ct *ct) {
  const cl_out_who *w = &o->who;
  cl_sb hdr = {0};
  header(&hdr, w);
  o->head_len = hdr.len;
  char pname[256];
  if (w->dev >= 0) snprintf(pname, sizeof pname, "rank %d (%s, GPU %d)", w->rank, cl_proc.host, w->dev);
  else snprintf(pname, sizeof pname, "rank %d (%s)", w->rank, cl_proc.host);
  ct_process_meta(ct, pname, w->rank);
  cl_sb *body = ct_body(ct);
  sb_put(&hdr, body->p, body->len);
  sb_reset(body);
  sb_put(body, hdr.p, hdr.len);   /* the header goes out with the first flush */
  sb_free(&hdr);
}

int cl_out_flush(cl_rank_output *o, cl_ct *ct, const cl_sb *tail) {
  cl_sb *body = ct_body(ct);
  int err = 0;
  size_t skip = 0;
  /* The header first, alone: a first flush that meets a full disk then leaves a valid trace
   * with no events, not a cut one (trace_file.c puts the last complete flush back). */
  if (o->head_len && o->head_len < body->len && o->file && !cl_tfile_failed(o->file) &&
      cl_tfile_flush(o->file, body->p, o->head_len, tail->p, tail->len) == 0)
    skip = o->head_len;
  o->head_len = 0;
  if (o->file && !cl_tfile_failed(o->file) &&
      cl_tfile_flush(o->file, body->p + skip, body->len - skip, tail->p, tail->len) != 0)
    err = cl_tfile_failed(o->file);
  sb_reset(body);
  return err;
}

/* t as a terminal shows it (common/utf8.h: controls but the text's own newlines as \xNN). */
static void put_shown(FILE *f, const char *t, size_t n) {
  const unsigned char *p = (const unsigned char *)t, *e = p + n;
  while (p < e) {
    char piece[CL_UTF8_SHOWN_MAX];
    size_t adv, w = cl_utf8_shown(p, e, 1, piece, &adv);
    fwrite(piece, 1, w, f);
    p += adv;
  }
}

void cl_out_summary(const cl_rank_output *o, const char *head, uint64_t events, uint64_t dropped,
                    const cl_summary *sum, const char *gpu, const char *exposure, int print) {
  /* the text once, names and paths shown (never acted on), then to the file and to stderr */
  char *text = NULL;
  size_t tn = 0, sn = 0;
  FILE *m = open_memstream(&text, &tn);
  char prefix[64], path[4 * sizeof o->path + 1];
  snprintf(prefix, sizeof prefix, "commlens[rank %d] ", o->who.rank);
  for (int pass = 0; m && pass < 2; pass++) {
    if (pass == 1 && !print) break;
    const char *pre = pass == 0 ? "" : prefix;
    fprintf(m, "%s%s\n", pre, head);
    cl_summary_print(sum, m, pre);
    if (gpu) fprintf(m, "%s%s\n", pre, gpu);
    if (exposure) fprintf(m, "%sexposure (JSON): %s\n", pre, exposure);
    if (o->file) { cl_utf8_show(o->path, path, sizeof path); fprintf(m, "%strace: %s\n", pre, path); }
    if (o->dfd_open) { cl_utf8_show(o->dpath, path, sizeof path); fprintf(m, "%sdigest: %s\n", pre, path); }
    if (pass == 0) { fflush(m); sn = tn; }   /* the file's part ends here */
  }
  if (m && fclose(m) == 0 && text) {
    FILE *f = summary_file(o, ".summary.txt");
    if (f) { put_shown(f, text, sn); fclose(f); }
    if (print) put_shown(stderr, text + sn, tn - sn);
  }
  free(text);
  FILE *f = summary_file(o, ".summary.json");
  if (f) {
    fprintf(f, "{\"rank\":%d,\"abi\":%d,\"events\":%llu,\"dropped\":%llu,\"collectives\":", o->who.rank,
            cl_proc.abi, (unsigned long long)events, (unsigned long long)dropped);
    cl_summary_json(sum, f);
    fprintf(f, "}\n");
    fclose(f);
  }
}

/* The UTF-8 sequence at p (or the one byte that starts none), its length; *esc when a terminal
 * must not get it as it is: a C0 or C1 control, DEL, or no well-formed sequence. */
static size_t word_piece(const unsigned char *p, const unsigned char *e, int *esc) {
  size_t l = cl_utf8_len(p, e);
  *esc = l == 0 || *p < 0x20 || *p == 0x7f || (l == 2 && p[0] == 0xc2 && p[1] < 0xa0);
  return l ? l : 1;
}

/* `s` as one shell word that a terminal shows as it is: plain when every byte is safe, in single
 * quotes when nothing needs escaping, else in $'...' with those bytes as \xNN. `out` holds at
 * least 4 * strlen(s) + 4 bytes. */
static void shell_word(char *out, const char *s) {
  const unsigned char *c, *e = (const unsigned char *)s + strlen(s);
  int plain = *s != 0, escape = 0, esc = 0;
  for (c = (const unsigned char *)s; c < e; c++)
    if (!(isascii(*c) && (isalnum(*c) || strchr("_./+,:@%=-", *c)))) plain = 0;
  if (plain) { strcpy(out, s); return; }
  for (c = (const unsigned char *)s; c < e; escape |= esc) c += word_piece(c, e, &esc);
  char *o = out + sprintf(out, escape ? "$'" : "'");
  for (c = (const unsigned char *)s; c < e;) {
    size_t l = word_piece(c, e, &esc);
    for (size_t i = 0; i < l; i++, c++) {
      if (esc) o += sprintf(o, "\\x%02x", *c);
      else if (*c == '\'') o += sprintf(o, escape ? "\\'" : "'\\''");
      else if (*c == '\\' && escape) o += sprintf(o, "\\\\");
      else *o++ = (char)*c;
    }
  }
  strcpy(o, "'");
}

/* (the buffers on the heap: the exit path may run on a thread with a small stack) */
void cl_out_pointer(const char *dir) {
  char *real = realpath(dir, NULL);
  const char *d = real ? real : dir;
  size_t n = strlen(d), cap = 8 * n + 128;
  char *word = malloc(4 * n + 4), *line = malloc(cap);
  if (word && line) {
    shell_word(word, d);
    int k = snprintf(line, cap, "commlens: this job's profiles are in %s; read them with: commlens report %s\n", word, word);
    if (k > 0 && (size_t)k < cap && write(STDERR_FILENO, line, (size_t)k) < 0) { /* nowhere to say it */ }
  }
  free(word);
  free(line);
  free(real);
}

void cl_out_close(cl_rank_output *o) {
  cl_tfile_close(o->file);
  o->file = NULL;
  if (o->dfd_open) close(o->dfd);
  o->dfd_open = 0;
}

int cl_out_append_digest(cl_rank_output *o, const void *p, size_t n) {
  const char *c = p;
  if (!o->dfd_open) return EBADF;
  while (n) {
    ssize_t k = write(o->dfd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return k < 0 ? errno : ENOSPC;
    c += k;
    n -= (size_t)k;
  }
  return 0;
}

int cl_out_create_digest(cl_rank_output *o, const char **what) {
  int fresh, fd = cl_file_create_new(o->dpath, sizeof o->dpath, o->base, ".digest", 0644, &fresh);
  if (fd < 0) { *what = "cannot create the digest file"; return -1; }
  if (fresh) cl_log(CL_LOG_WARN, "%s.digest exists (another process's file or a planted link); not touching it, "
                    "writing the digest to %s", o->base, o->dpath);
  o->dfd = fd;
  o->dfd_open = 1;
  cl_sb hdr = {0};
  header_obj(&hdr, &o->who);
  cl_dg_buf head = {0};
  int err = hdr.oom || cl_digest_file_head(&head, hdr.p, hdr.len) != 0 ? ENOMEM
            : cl_out_append_digest(o, head.p, head.len);
  sb_free(&hdr);
  free(head.p);
  if (err) { *what = "cannot write the digest file"; errno = err; return -1; }
  return 0;
}

/* test_config.c: the settings parser (common/config.c). Every numeric COMMLENS_* setting has a
 * range: a value outside it, or not a number at all (nan, inf, exponents, signs, spaces, values
 * that overflow once scaled), is refused with one warning that names the setting and what it
 * wants, and the default applies. Values inside the range are taken exactly. */
#include "tl.h"
#include "common/config.h"
#include "common/log.h"
#include "plugin/output/identity.h"
#include <stdarg.h>

extern char **environ;
static char g_log[8192];
static int g_nlog;
static void capture(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level; (void)flags; (void)file; (void)line;
  size_t k = strlen(g_log);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_log + k, sizeof g_log - k, fmt, ap);
  va_end(ap);
  k = strlen(g_log);
  if (k + 1 < sizeof g_log) { g_log[k] = '\n'; g_log[k + 1] = 0; }
  g_nlog++;
}
/* Loads the configuration with only name=value set among the COMMLENS_* variables. */
static void load_with(const char *name, const char *value) {
  for (int again = 1; again;) {
    again = 0;
    for (char **e = environ; *e; e++)
      if (!strncmp(*e, "COMMLENS_", 9)) {
        char k[256];
        snprintf(k, sizeof k, "%.*s", (int)(strchr(*e, '=') - *e), *e);
        unsetenv(k);
        again = 1;
        break;
      }
  }
  if (name) setenv(name, value, 1);
  g_log[0] = 0;
  g_nlog = 0;
  cl_log_set_logger(capture);
  cl_config_load();
}

static const struct { const char *name, *value, *says; } g_bad[] = {
  {"COMMLENS_WINDOW", "time:nan-5", "time:A-B"}, {"COMMLENS_WINDOW", "time:inf-", "time:A-B"},
  {"COMMLENS_WINDOW", "time:1e300-", "time:A-B"}, {"COMMLENS_WINDOW", "time:-1-5", "time:A-B"},
  {"COMMLENS_WINDOW", "time:1-1e20", "time:A-B"}, {"COMMLENS_WINDOW", "time:20000000000-", "time:A-B"},
  {"COMMLENS_WINDOW", "time:0x10-", "time:A-B"}, {"COMMLENS_WINDOW", "time: 1-2", "time:A-B"},
  {"COMMLENS_WINDOW", "time:1.0000000001-", "time:A-B"}, {"COMMLENS_WINDOW", "time:5-5", "time:A-B"},
  {"COMMLENS_WINDOW", "coll:nan-", "coll:A-B"}, {"COMMLENS_WINDOW", "coll:1.5-3", "coll:A-B"},
  {"COMMLENS_WINDOW", "coll:18446744073709551615-", "coll:A-B"}, {"COMMLENS_WINDOW", "coll:99999999999999999999-", "coll:A-B"},
  {"COMMLENS_WINDOW", "coll:3-2", "coll:A-B"}, {"COMMLENS_WINDOW", "coll:1-2x", "coll:A-B"},
  {"COMMLENS_BUFFER_MB", "0", "1..65536"}, {"COMMLENS_BUFFER_MB", "65537", "1..65536"},
  {"COMMLENS_BUFFER_MB", "-5", "1..65536"}, {"COMMLENS_BUFFER_MB", " 8", "1..65536"},
  {"COMMLENS_BUFFER_MB", "+8", "1..65536"}, {"COMMLENS_BUFFER_MB", "1e3", "1..65536"},
  {"COMMLENS_BUFFER_MB", "18446744073709551617", "1..65536"},
  {"COMMLENS_RING_KB", "15", "16..1048576"}, {"COMMLENS_RING_KB", "1048577", "16..1048576"},
  {"COMMLENS_FLUSH_MS", "9", "10..250"}, {"COMMLENS_FLUSH_MS", "251", "10..250"}, {"COMMLENS_FLUSH_MS", "nan", "10..250"},
  {"COMMLENS_EXIT_WAIT_S", "0", "1..600"}, {"COMMLENS_EXIT_WAIT_S", "601", "1..600"}, {"COMMLENS_EXIT_WAIT_S", "inf", "1..600"},
  {"COMMLENS_RANK", "16777217", "0..16777216"}, {"COMMLENS_RANK", "-1", "0..16777216"},
  {"COMMLENS_RANK", "4294967296", "0..16777216"},
  {"COMMLENS_EVENTS", "0", "1..0xffff"}, {"COMMLENS_EVENTS", "65536", "1..0xffff"},
  {"COMMLENS_PROM_S", "0", "1..60"}, {"COMMLENS_PROM_S", "61", "1..60"}, {"COMMLENS_PROM_S", "1.5", "1..60"},
};

TL_TEST(bad_numbers_are_refused_with_their_range_and_the_default_applies) {
  load_with(NULL, NULL);
  cl_config def = cl_cfg;
  for (size_t i = 0; i < sizeof g_bad / sizeof g_bad[0]; i++) {
    load_with(g_bad[i].name, g_bad[i].value);
    CHECK(g_nlog == 1 && strstr(g_log, g_bad[i].name) && strstr(g_log, g_bad[i].says),
          "%s=\"%s\": want one warning naming it and \"%s\"; got %d:\n%s", g_bad[i].name, g_bad[i].value,
          g_bad[i].says, g_nlog, g_log);
    CHECK(cl_cfg.window == def.window && cl_cfg.win_start == def.win_start && cl_cfg.win_stop == def.win_stop &&
          cl_cfg.buffer_bytes == def.buffer_bytes && cl_cfg.ring_bytes == def.ring_bytes &&
          cl_cfg.flush_ms == def.flush_ms && cl_cfg.exit_wait_ms == def.exit_wait_ms && cl_cfg.rank == def.rank &&
          cl_cfg.mask == def.mask && cl_cfg.prom_s == def.prom_s, "%s=\"%s\": a setting changed", g_bad[i].name, g_bad[i].value);
  }
}

TL_TEST(good_values_are_taken_exactly) {
  load_with("COMMLENS_WINDOW", "time:1.5-2.000000001");
  CHECK(g_nlog == 0 && cl_cfg.window == CL_WIN_TIME && cl_cfg.win_start == 1500000000ull && cl_cfg.win_stop == 2000000001ull,
        "time window %llu-%llu; log %s", (unsigned long long)cl_cfg.win_start, (unsigned long long)cl_cfg.win_stop, g_log);
  load_with("COMMLENS_WINDOW", "coll:10-");
  CHECK(g_nlog == 0 && cl_cfg.window == CL_WIN_COLL && cl_cfg.win_start == 10 && cl_cfg.win_stop == UINT64_MAX, "coll window");
  load_with("COMMLENS_WINDOW", "time:18446744073-");     /* the largest whole second that fits */
  CHECK(g_nlog == 0 && cl_cfg.win_start == 18446744073000000000ull, "largest time %llu", (unsigned long long)cl_cfg.win_start);
  load_with("COMMLENS_BUFFER_MB", "65536");
  CHECK(g_nlog == 0 && cl_cfg.buffer_bytes == 65536ull << 20, "buffer");
  load_with("COMMLENS_RANK", "16777216");
  CHECK(g_nlog == 0 && cl_cfg.rank == 16777216, "rank");
  load_with(NULL, NULL);
  CHECK(cl_cfg.prom_s == 5, "COMMLENS_PROM_S default %d", cl_cfg.prom_s);
  load_with("COMMLENS_PROM_S", "1");
  CHECK(g_nlog == 0 && cl_cfg.prom_s == 1, "COMMLENS_PROM_S=1: %d", cl_cfg.prom_s);
  load_with("COMMLENS_PROM_S", "60");
  CHECK(g_nlog == 0 && cl_cfg.prom_s == 60, "COMMLENS_PROM_S=60: %d", cl_cfg.prom_s);
  load_with("COMMLENS_EVENTS", "0x70f");   /* the default GPU timing (sampled) adds KernelLaunch and KernelCh */
  CHECK(g_nlog == 0 && cl_cfg.mask == (0x70fu | CL_MASK_KERNEL_LAUNCH | 0x40u), "mask %#x", cl_cfg.mask);
  load_with("COMMLENS_CUPTI", "kernels");
  CHECK(g_nlog == 0 && cl_cfg.cupti == CL_CUPTI_KERNELS && cl_cfg.mask == (CL_MASK_DEFAULT | CL_MASK_KERNEL_LAUNCH) &&
        CL_MASK_DEFAULT == 0x570Fu, "kernels: level %d mask %#x", cl_cfg.cupti, cl_cfg.mask);
  load_with("COMMLENS_CUPTI_SAMPLE", "0.05:3600");
  CHECK(g_nlog == 0 && cl_cfg.sample_on_ns == 50000000ull && cl_cfg.sample_period_ns == 3600000000000ull,
        "sample %llu:%llu", (unsigned long long)cl_cfg.sample_on_ns, (unsigned long long)cl_cfg.sample_period_ns);
}

TL_TEST(a_refused_value_is_shown_escaped) {
  load_with("COMMLENS_FLUSH_MS", "1\x1b[2J\xff");
  CHECK(g_nlog == 1 && !strchr(g_log, '\x1b') && !strchr(g_log, '\xff') && strstr(g_log, "\\x1b[2J\\xff"),
        "log: %s", g_log);
}

/* COMMLENS_CLOCK_ID names a clock in a trace header and a report: only a short plain name. */
TL_TEST(a_clock_id_is_a_short_plain_name) {
  load_with("COMMLENS_CLOCK_ID", "replay-4242-1732560000123456789");
  CHECK(g_nlog == 0 && !strcmp(cl_cfg.clock_id, "replay-4242-1732560000123456789"), "clock id \"%s\"; log %s",
        cl_cfg.clock_id, g_log);
  static const char *bad[] = {"", "a b", "x\"y", "\xc3\xa9", "a/b",
                              "0123456789012345678901234567890123456789012345678901234567890123"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    load_with("COMMLENS_CLOCK_ID", bad[i]);
    CHECK(g_nlog == 1 && strstr(g_log, "COMMLENS_CLOCK_ID") && !cl_cfg.clock_id[0], "\"%s\" taken as \"%s\" (%d warnings)",
          bad[i], cl_cfg.clock_id, g_nlog);
  }
  load_with(NULL, NULL);
  CHECK(!cl_cfg.clock_id[0], "a clock id without the variable");
}

TL_MAIN("common/config")

/* COMMLENS_OUTPUT: the digest by default, the trace when the full event set is asked for (to
 * look at the detail), and what is said when it is said; a bad value warns and keeps the default. */
TL_TEST(output_defaults_to_the_digest_and_full_events_to_the_trace) {
  load_with(NULL, NULL);
  CHECK(cl_cfg.output == CL_OUT_DIGEST, "default output %u", cl_cfg.output);
  load_with("COMMLENS_EVENTS", "full");
  CHECK(cl_cfg.output == CL_OUT_TRACE, "COMMLENS_EVENTS=full: output %u", cl_cfg.output);
  load_with("COMMLENS_OUTPUT", "both");
  CHECK(cl_cfg.output == (CL_OUT_TRACE | CL_OUT_DIGEST), "both: %u", cl_cfg.output);
  load_with("COMMLENS_OUTPUT", "trace");
  CHECK(cl_cfg.output == CL_OUT_TRACE, "trace: %u", cl_cfg.output);
  setenv("COMMLENS_EVENTS", "full", 1);
  setenv("COMMLENS_OUTPUT", "digest", 1);
  g_log[0] = 0;
  cl_config_load();
  CHECK(cl_cfg.output == CL_OUT_DIGEST, "digest with full events: %u", cl_cfg.output);
  load_with("COMMLENS_OUTPUT", "json");
  CHECK(cl_cfg.output == CL_OUT_DIGEST && strstr(g_log, "COMMLENS_OUTPUT") && strstr(g_log, "digest, trace or both"),
        "bad value: output %u, log: %s", cl_cfg.output, g_log);
  unsetenv("COMMLENS_OUTPUT");
  unsetenv("COMMLENS_EVENTS");
}

/* Integer settings are decimal whatever their leading zeros (strtoull's base 0 read "010" as
 * octal 8 and refused "09"); a sign, a space or a base prefix is refused. The launcher's rank
 * variables are read by the same parser. */
TL_TEST(integer_settings_are_decimal) {
  load_with("COMMLENS_RANK", "010");
  CHECK(g_nlog == 0 && cl_cfg.rank == 10, "COMMLENS_RANK=010: rank %d; log %s", cl_cfg.rank, g_log);
  load_with("COMMLENS_HANG_S", "060");
  CHECK(g_nlog == 0 && cl_cfg.hang_s == 60, "COMMLENS_HANG_S=060: %d s; log %s", cl_cfg.hang_s, g_log);
  load_with("COMMLENS_RANK", "09");
  CHECK(g_nlog == 0 && cl_cfg.rank == 9, "COMMLENS_RANK=09: rank %d; log %s", cl_cfg.rank, g_log);
  load_with("COMMLENS_LATE_MS", "0x10");
  CHECK(g_nlog == 1 && cl_cfg.late_ms == 0, "COMMLENS_LATE_MS=0x10: %d ms; log %s", cl_cfg.late_ms, g_log);
  load_with("COMMLENS_FLIGHT_S", "0030");
  CHECK(g_nlog == 0 && cl_cfg.flight_s == 30, "COMMLENS_FLIGHT_S=0030: %d s; log %s", cl_cfg.flight_s, g_log);
  static const char *const launcher[][3] = {{"010", "10"}, {"07", "7"}, {" 5", NULL}, {"+5", NULL}, {"0x3", NULL},
                                            {"5 ", NULL}, {"-0", NULL}};
  load_with(NULL, NULL);
  for (size_t i = 0; i < sizeof launcher / sizeof launcher[0]; i++) {
    setenv("RANK", launcher[i][0], 1);
    cl_identity_settle(-1, 5);
    int want = launcher[i][1] ? atoi(launcher[i][1]) : (int)cl_proc.pid;
    CHECK(cl_proc.rank == want && !strcmp(cl_proc.rank_source, launcher[i][1] ? "RANK" : "pid"),
          "RANK=\"%s\": rank %d from %s, want %d", launcher[i][0], cl_proc.rank, cl_proc.rank_source, want);
  }
  unsetenv("RANK");
}

/* COMMLENS_TIMERS: sampled by default (0.5% of wall time at 10 us a timed collective), another
 * budget and cost taken exactly, all; every collective timed when COMMLENS_EVENTS asks for
 * KernelCh itself; a bad value warns and keeps the default. The flight recorder is on by default,
 * light, within 16 MiB; set, it keeps every event. */
TL_TEST(timers_sampled_by_default_and_the_flight_recorder_on) {
  load_with(NULL, NULL);
  CHECK(cl_cfg.timers == CL_TIMERS_SAMPLED && cl_cfg.timers_budget_ppm == 5000 && cl_cfg.timers_cost_ns == 10000,
        "default timers %d %llu ppm %llu ns", cl_cfg.timers, (unsigned long long)cl_cfg.timers_budget_ppm,
        (unsigned long long)cl_cfg.timers_cost_ns);
  CHECK(cl_cfg.flight_s == 60 && cl_cfg.flight_light && cl_cfg.flight_bytes == 16ull << 20 && !cl_flight_detailed(),
        "default flight %d s light %d %llu bytes", cl_cfg.flight_s, cl_cfg.flight_light, (unsigned long long)cl_cfg.flight_bytes);
  load_with("COMMLENS_TIMERS", "sampled:0.25:7.5");
  CHECK(g_nlog == 0 && cl_cfg.timers == CL_TIMERS_SAMPLED && cl_cfg.timers_budget_ppm == 2500 &&
        cl_cfg.timers_cost_ns == 7500, "sampled:0.25:7.5: %llu ppm %llu ns", (unsigned long long)cl_cfg.timers_budget_ppm,
        (unsigned long long)cl_cfg.timers_cost_ns);
  load_with("COMMLENS_TIMERS", "all");
  CHECK(g_nlog == 0 && cl_cfg.timers == CL_TIMERS_ALL, "all: %d", cl_cfg.timers);
  load_with("COMMLENS_EVENTS", "default+kernelch");
  CHECK(cl_cfg.timers == CL_TIMERS_ALL, "kernelch asked for: timers %d", cl_cfg.timers);
  static const char *bad[] = {"some", "sampled:", "sampled:0", "sampled:101", "sampled:0.5:0.01", "sampled:0.5:10:1",
                              "sampled:nan", "sampled:0.0001"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    load_with("COMMLENS_TIMERS", bad[i]);
    CHECK(g_nlog == 1 && strstr(g_log, "COMMLENS_TIMERS") && cl_cfg.timers == CL_TIMERS_SAMPLED &&
          cl_cfg.timers_budget_ppm == 5000 && cl_cfg.timers_cost_ns == 10000, "\"%s\": %d warnings, %llu ppm: %s", bad[i],
          g_nlog, (unsigned long long)cl_cfg.timers_budget_ppm, g_log);
  }
  load_with("COMMLENS_FLIGHT_S", "30");
  CHECK(cl_cfg.flight_s == 30 && !cl_cfg.flight_light && cl_flight_detailed(), "set: detailed");
  load_with("COMMLENS_FLIGHT_S", "0");
  CHECK(!cl_cfg.flight_s && !cl_flight_detailed(), "0: off");
}

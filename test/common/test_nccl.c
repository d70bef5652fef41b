/* test_nccl.c: the one copy of NCCL arithmetic (common/nccl.c) that the plugin's summary and
 * the CLI's report share: bus-bandwidth factors for 1, 2 and 8 ranks, element sizes, byte
 * counts, and the summary's busbw computed through it. */
#include "tl.h"
#include "common/nccl.h"
#include "exporters/summary.h"
#include "common/grow.h"
#include <math.h>
#include <stdio.h>

static int near(double a, double b) { return fabs(a - b) < 1e-12; }

TL_TEST(busbw_factors_follow_nccl_tests) {
  /* n = 1: nothing crosses a bus for the (n-1)/n collectives; n = 2 and 8 as nccl-tests */
  CHECK(near(cl_busbw_factor("AllReduce", 1), 0.0), "AllReduce n=1");
  CHECK(near(cl_busbw_factor("AllReduce", 2), 1.0), "AllReduce n=2");
  CHECK(near(cl_busbw_factor("AllReduce", 8), 1.75), "AllReduce n=8");
  const char *nm1[] = {"AllGather", "ReduceScatter", "AlltoAll"};
  for (int i = 0; i < 3; i++) {
    CHECK(near(cl_busbw_factor(nm1[i], 1), 0.0), "%s n=1", nm1[i]);
    CHECK(near(cl_busbw_factor(nm1[i], 2), 0.5), "%s n=2", nm1[i]);
    CHECK(near(cl_busbw_factor(nm1[i], 8), 0.875), "%s n=8", nm1[i]);
  }
  const char *one[] = {"Broadcast", "Reduce", "Send", "Recv", "SendRecv"};
  for (int i = 0; i < 5; i++)
    for (int n = 1; n <= 8; n *= 2) CHECK(near(cl_busbw_factor(one[i], n), 1.0), "%s n=%d", one[i], n);
  CHECK(near(cl_busbw_factor("allreduce", 8), 1.75), "names match in any case");
  CHECK(near(cl_busbw_factor("AllToAll", 8), 0.875), "AllToAll spelling");
  CHECK(near(cl_busbw_factor("AllReduce", 0), 0.0) && near(cl_busbw_factor("AllReduce", -1), 0.0),
        "unknown rank count gives no bandwidth");
  CHECK(near(cl_busbw_factor(NULL, 8), 1.0), "no name");
}

TL_TEST(datatype_sizes_and_bytes) {
  CHECK(cl_datatype_size("ncclFloat32") == 4 && cl_datatype_size("ncclBfloat16") == 2 &&
        cl_datatype_size("ncclFloat64") == 8 && cl_datatype_size("ncclInt8") == 1, "sizes");
  CHECK(cl_datatype_size("Unknown") == 1 && cl_datatype_size(NULL) == 1, "unknown names");
  static const struct { const char *n; int sz; } every[] = {   /* ncclDataType_t, NCCL 2.19 .. 2.30 */
    {"ncclInt8", 1}, {"ncclUint8", 1}, {"ncclChar", 1}, {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1},
    {"ncclFloat16", 2}, {"ncclHalf", 2}, {"ncclBfloat16", 2}, {"ncclInt32", 4}, {"ncclUint32", 4},
    {"ncclInt", 4}, {"ncclFloat32", 4}, {"ncclFloat", 4}, {"ncclInt64", 8}, {"ncclUint64", 8},
    {"ncclFloat64", 8}, {"ncclDouble", 8}, {"ncclInt6", 1}, {"ncclFloat3", 1}, {"ncclFloat322", 1}, {"nccl", 1}};
  for (size_t i = 0; i < sizeof every / sizeof every[0]; i++)
    CHECK(cl_datatype_size(every[i].n) == every[i].sz, "%s: %d, want %d", every[i].n, cl_datatype_size(every[i].n),
          every[i].sz);
  CHECK(cl_coll_bytes("AllReduce", 1000, "ncclFloat32", 8) == 4000, "AllReduce bytes");
  CHECK(cl_coll_bytes("AllGather", 1000, "ncclFloat32", 8) == 32000, "AllGather counts every rank");
  CHECK(cl_coll_bytes("ReduceScatter", 10, "ncclHalf", 2) == 40, "ReduceScatter");
  CHECK(cl_coll_bytes("allgather", 10, "ncclInt8", 4) == 40 && cl_coll_bytes("REDUCESCATTER", 10, "ncclInt8", 4) == 40,
        "names in any case");
  CHECK(cl_coll_bytes("AllGatherV", 10, "ncclInt8", 4) == 10 && cl_coll_bytes("AllGathe", 10, "ncclInt8", 4) == 10 &&
        cl_coll_bytes("All@ather", 10, "ncclInt8", 4) == 10 && cl_coll_bytes("", 10, "ncclInt8", 4) == 10,
        "only the whole name, letters only");
  CHECK(cl_coll_bytes("AllGather", 10, "ncclInt8", 0) == 10 && cl_coll_bytes(NULL, 10, "ncclInt8", 4) == 10,
        "no rank count, no name");
  CHECK(cl_coll_bytes_per_rank("AllGather") && cl_coll_bytes_per_rank("reducescatter") &&
        !cl_coll_bytes_per_rank("AllReduce") && !cl_coll_bytes_per_rank("AllGatherV") && !cl_coll_bytes_per_rank(NULL),
        "the functions whose size counts every rank (the assembler remembers it by name)");
}

/* The summary's busbw is algbw times the shared factor, for 1, 2 and 8 ranks. */
TL_TEST(summary_uses_the_shared_factor) {
  int ranks[] = {1, 2, 8};
  for (int i = 0; i < 3; i++) {
    cl_summary *s = cl_summary_new();
    cl_summary_add(s, "AllReduce", 1u << 20, ranks[i], 1000000);   /* 1 MiB in 1 ms */
    char buf[2048] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    cl_summary_json(s, f);
    fclose(f);
    double alg = -1, bus = -1;
    const char *pa = strstr(buf, "\"algbw_gbs\":"), *pb = strstr(buf, "\"busbw_gbs\":");
    REQUIRE(pa && pb, "no bandwidths in %s", buf);
    sscanf(pa + 12, "%lf", &alg);
    sscanf(pb + 12, "%lf", &bus);
    CHECK(fabs(bus - alg * cl_busbw_factor("AllReduce", ranks[i])) < 1e-3, "n=%d: busbw %f algbw %f",
          ranks[i], bus, alg);
    cl_summary_free(s);
  }
}

/* Rows are found by the name's address as a hint, always compared in full: one buffer that
 * names two collectives in turn makes two rows, and rows re-sorted by a print mid-run are
 * still found. */
typedef struct { int n; uint64_t count[4]; char func[4][24]; } rows_seen;
static void see_row(void *arg, const cl_summary_row *r) {
  rows_seen *v = arg;
  if (v->n < 4) { v->count[v->n] = r->count; snprintf(v->func[v->n], sizeof v->func[0], "%s", r->func); }
  v->n++;
}
TL_TEST(summary_rows_found_by_name_not_address) {
  cl_summary *s = cl_summary_new();
  char name[24];
  for (int i = 0; i < 30; i++) {
    snprintf(name, sizeof name, "%s", i % 3 ? "AllReduce" : "AllGather");   /* one address, two names */
    cl_summary_add(s, name, 4096, 2, 1000);
    if (i == 10) {   /* a print sorts the rows in place */
      FILE *f = fopen("/dev/null", "w");
      if (f) { cl_summary_print(s, f, ""); fclose(f); }
    }
  }
  rows_seen v = {0};
  cl_summary_each(s, see_row, &v);
  CHECK(v.n == 2, "%d rows", v.n);
  for (int i = 0; i < 2 && i < v.n; i++) {
    uint64_t want = !strcmp(v.func[i], "AllGather") ? 10 : 20;
    CHECK(v.count[i] == want, "%s: %llu collectives (want %llu)", v.func[i], (unsigned long long)v.count[i],
          (unsigned long long)want);
  }
  cl_summary_free(s);
}

/* NCCL's names are static: a row found once by a name's text is found again by its address,
 * a second address with the same text finds the same row, and a name lent for one call
 * (cl_summary_add) is still compared by its text beside them. */
TL_TEST(summary_static_names_found_by_address_and_text) {
  static const char ar1[] = "AllReduce", ar2[] = "AllReduce", ag[] = "AllGather";
  cl_summary *s = cl_summary_new();
  char lent[24];
  for (int i = 0; i < 12; i++) {
    cl_summary_add_static(s, i % 3 == 2 ? ag : i % 2 ? ar2 : ar1, 4096, 2, 1000);
    snprintf(lent, sizeof lent, "%s", i % 2 ? "AllGather" : "Broadcast");
    cl_summary_add(s, lent, 4096, 2, 1000);
  }
  rows_seen v = {0};
  cl_summary_each(s, see_row, &v);
  CHECK(v.n == 3, "%d rows", v.n);
  for (int i = 0; i < 3 && i < v.n; i++) {
    uint64_t want = !strcmp(v.func[i], "AllReduce") ? 8 : !strcmp(v.func[i], "AllGather") ? 10 : 6;
    CHECK(v.count[i] == want, "%s: %llu collectives (want %llu)", v.func[i], (unsigned long long)v.count[i],
          (unsigned long long)want);
  }
  cl_summary_free(s);
}

TL_MAIN("common/nccl")

# commlens build. `make` builds the plugin and the CLI; `make test` builds and runs every test
# suite; `make demo` runs the main job; `make deps` installs the build's packages. Only deps,
# test and demo install anything (see "dependencies" below).
CC      ?= cc
CUDA    ?= /usr/local/cuda
BUILD   ?= build
# the one version (VERSION, semver): the CLI's, the plugin's trace header's, the wheel's
VERSION := $(shell cat VERSION)
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -fPIC -I. -Iinclude -I$(CUDA)/include \
               -DCOMMLENS_VERSION=\"$(VERSION)\"
OPT     ?= -O2
SAN     ?=
# x86-64: thread-locals through TLS descriptors, not __tls_get_addr calls (the hot path reads its
# thread's ring on every event: bench/replay_cost.c, 8% of its instructions per collective); not
# under the sanitizers, whose runtimes follow dynamic TLS through __tls_get_addr
TLS     := $(if $(SAN),,$(if $(filter x86_64,$(shell uname -m)),-mtls-dialect=gnu2))
CFLAGS  := $(CFLAGS_BASE) $(OPT) $(SAN) $(TLS) $(EXTRA_CFLAGS)
LIB_SRC := $(wildcard common/*.c plugin/*.c plugin/*/*.c exporters/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB     := $(BUILD)/libnccl-profiler-commlens.so
LIBLINK := $(BUILD)/libnccl-profiler.so
# the CLI: tools/commlens/ (main, options) and its stage folders tools/commlens/<stage>/
CLI_SRC := $(wildcard tools/commlens/*.c tools/commlens/*/*.c common/*.c)   # common/: config table, log, clock, NCCL arithmetic
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
CLI_HDR := $(wildcard tools/commlens/*.h tools/commlens/*/*.h)
CLI     := $(BUILD)/commlens
Q       := @

.PHONY: all deps lib cli test soak demo clean bench examples
all: lib cli

# ---- dependencies ----
# Each target needs only what it uses. The plugin: a C compiler, libc and CUDA's headers (CUPTI
# types; libcupti is loaded at run time), and zlib if present (without it: no gzip output and no
# ABI recording, said once). The CLI and the tests: json-c and zlib. The goals deps, test and
# demo install the missing Debian packages where a package source answers (we are root on fresh
# machines); every other goal (all, lib, cli, wheel...) never calls apt-get: it builds what it can
# and says in one line what is missing and that `make deps` installs it. make decides how to
# build (the zlib flag, whether there is a CLI) as it reads this file, so the install runs while
# it reads, before anything is built: for test and demo once per build directory (an offline GPU
# node does not wait on apt-get at every run), for deps each time it is asked. The tests' own
# tools (protoc, chromium, prometheus, clang, python3-venv) are installed by `make test` alone,
# in mk/*.mk.
JSONC_INC ?= /usr/include/json-c/json.h
ZLIB_INC  ?= /usr/include/zlib.h
CUPTI_INC ?= $(CUDA)/include/cupti.h
APT_WANT := $(if $(wildcard $(JSONC_INC)),,libjson-c-dev) $(if $(wildcard $(ZLIB_INC)),,zlib1g-dev)
ifneq ($(and $(filter deps test demo,$(MAKECMDGOALS)),$(strip $(APT_WANT))),)
ifneq ($(or $(filter deps,$(MAKECMDGOALS)),$(if $(wildcard $(BUILD)/.apt-tried),,first)),)
$(info installing build dependencies ($(strip $(APT_WANT))))
APT_RC := $(shell mkdir -p $(BUILD) && touch $(BUILD)/.apt-tried && \
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_WANT)) >$(BUILD)/apt.log 2>&1; echo $$?)
endif
endif
# (test -f, not $(wildcard): make caches directories, and apt-get may just have filled them)
HAVE_JSONC := $(shell test -f $(JSONC_INC) && echo yes)
HAVE_ZLIB  := $(shell test -f $(ZLIB_INC) && echo yes)
HAVE_CUPTI := $(shell test -f $(CUPTI_INC) && echo yes)
ifeq ($(HAVE_ZLIB),)
CFLAGS += -DCOMMLENS_NO_ZLIB
ZLIB_LIBS :=
NO_ZLIB_WHY := zlib headers missing ($(ZLIB_INC))$(if $(filter-out 0,$(APT_RC)), and apt-get could not install zlib1g-dev (see $(BUILD)/apt.log))
$(info commlens: $(NO_ZLIB_WHY): the plugin is built without gzip output and ABI recording; `make deps` installs zlib1g-dev)
else
ZLIB_LIBS := -lz
endif
NO_CLI_WHY := $(strip $(if $(HAVE_JSONC),,json-c headers missing ($(JSONC_INC)))$(if $(or $(HAVE_JSONC),$(HAVE_ZLIB)),,;)$(if $(HAVE_ZLIB),, zlib headers missing ($(ZLIB_INC))))
NO_CLI_HOW := `make deps` installs libjson-c-dev and zlib1g-dev where apt-get can (elsewhere: json-c-devel and zlib-devel), then run make again
# What deps says: what is still missing and why; with all there, nothing unless asked by name.
DEPS_MISSING := $(strip $(if $(HAVE_JSONC),,libjson-c-dev) $(if $(HAVE_ZLIB),,zlib1g-dev))
DEPS_WHY := $(if $(APT_RC),apt-get could not install it (see $(BUILD)/apt.log),apt-get was tried once for $(BUILD) before; `make deps` tries again)
DEPS_ASKED := $(filter deps,$(MAKECMDGOALS))

.PHONY: deps
deps:
	$(Q)$(if $(DEPS_MISSING),echo "make deps: $(DEPS_MISSING) missing: $(DEPS_WHY)"$(if $(DEPS_ASKED),; exit 1),$(if $(DEPS_ASKED),echo "make deps: json-c and zlib are installed",:))
	$(Q)$(if $(HAVE_CUPTI),:,echo "make deps: CUDA's headers are missing ($(CUPTI_INC)), which the plugin needs: set CUDA=<toolkit dir>")

# ---- the plugin ----
lib: $(LIB) $(LIBLINK)
# The plugin's objects (with common/ and exporters/) as one archive: the .so is made from it,
# and the tests, fuzzers and benchmarks link it to reach the internals (each build directory,
# sanitizer variants included, has its own).
LIB_A := $(BUILD)/libcommlens.a
$(LIB_A): $(LIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $(LIB_OBJ)
$(BUILD)/obj/%.o: %.c $(wildcard include/commlens/*.h common/*.h plugin/*.h plugin/*/*.h exporters/*.h) VERSION
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -fvisibility=hidden -c $< -o $@
$(BUILD)/obj/tools/%.o: tools/%.c $(wildcard include/commlens/*.h common/*.h) $(CLI_HDR) VERSION
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@
ifeq ($(HAVE_CUPTI),)
$(LIB):
	@echo "commlens plugin not built: CUDA headers missing ($(CUPTI_INC)); set CUDA=<toolkit dir>"; exit 1
else
$(LIB): $(LIB_A) plugin/exports.map
	$(Q)$(CC) $(CFLAGS) -shared -o $@ -Wl,--whole-archive $(LIB_A) -Wl,--no-whole-archive -Wl,--version-script=plugin/exports.map \
	  -Wl,-z,nodelete -Wl,-z,now -Wl,--no-undefined -lpthread -ldl $(ZLIB_LIBS)
	@echo "built $@"
endif
$(LIBLINK): $(LIB)
	$(Q)ln -sf $(notdir $(LIB)) $@

# ---- the CLI ----
ifeq ($(strip $(NO_CLI_WHY)),)
cli: $(CLI)
else
cli:
	@echo "commlens CLI not built: $(strip $(NO_CLI_WHY))$(if $(filter-out 0,$(APT_RC)), and apt-get could not install them (see $(BUILD)/apt.log)); $(NO_CLI_HOW)"
endif
# The CLI's own objects but main.o (common/ is in LIB_A): the tests and fuzz/fuzz_cli.c link it.
CLI_A := $(BUILD)/libcommlens-cli.a
CLI_LIB_OBJ := $(filter-out $(BUILD)/obj/common/% $(BUILD)/obj/tools/commlens/main.o,$(CLI_OBJ))
$(CLI_A): $(CLI_LIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $(CLI_LIB_OBJ)
$(CLI): $(CLI_OBJ)
	$(Q)mkdir -p $(BUILD)
	$(Q)$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) -ljson-c -lz -lm -lpthread
	@echo "built $@"

# ---- tests: every test/<suite>/test_*.c is one program; test/lib/*.c (with the plugin driver
# and the replay engine of tools/replay/) is linked into each ----
# Unit tests reach the internals through their headers and link the archives (no test
# includes a .c file).
TEST_LIB_SRC := $(wildcard test/lib/*.c) tools/replay/driver.c tools/replay/replay.c
TEST_SRC := $(wildcard test/*/test_*.c)
TEST_BIN := $(TEST_SRC:%.c=$(BUILD)/%)
TEST_HDR := $(wildcard common/*.h plugin/*.h plugin/*/*.h exporters/*.h) $(CLI_HDR)
$(BUILD)/test/%: test/%.c $(TEST_LIB_SRC) $(wildcard test/lib/*.h tools/replay/*.h include/commlens/*.h) $(TEST_HDR) $(CLI_A) $(LIB_A) VERSION | test-deps
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Itest/lib -o $@ $< $(TEST_LIB_SRC) $(CLI_A) $(LIB_A) -ljson-c -lz -ldl -lpthread -lm
# mk/*.mk add variants (sanitizers, fuzz runs) as prerequisites and as run.sh arguments in
# TEST_MORE, so one run.sh call prints every suite and one closing total.
# The tests read traces with json-c and zlib: without them they cannot run at all.
.PHONY: test-deps
test-deps:
	$(Q)if [ -n "$(strip $(NO_CLI_WHY))" ]; then echo "make test: cannot build the tests: $(strip $(NO_CLI_WHY)); $(NO_CLI_HOW)"; exit 1; fi
test: deps test-deps lib cli $(TEST_BIN)
	$(Q)COMMLENS_LIB=$(abspath $(LIB)) COMMLENS_CLI=$(abspath $(CLI)) BUILD=$(BUILD) \
	  sh test/run.sh $(TEST_BIN) $(TEST_MORE)

# ---- benchmarks (on demand) ----
# Builds the helpers, then prices the default mode on the CPU (bench/replay_cost.c): per-unit
# times, and instruction counts under callgrind compared with bench/replay_cost.baseline (10% more
# fails `make bench` with REGRESSION). BENCH_ARGS=--update-baseline rewrites the baseline.
BENCH_ARGS ?=
bench: lib
	$(Q)$(MAKE) -s -C bench BUILD=$(abspath $(BUILD)) LIB=$(abspath $(LIB))
	$(Q)if command -v valgrind >/dev/null; then cg=--callgrind; else echo "valgrind missing: no instruction counts"; cg=; fi; \
	  $(BUILD)/bench-replay-cost --lib $(LIB) $$cg $(BENCH_ARGS)

# make test SOAK_RUNS times beside busy loops on every core (issue: a CI that never flakes).
SOAK_RUNS ?= 30
soak:
	$(Q)BUILD=$(BUILD) sh test/soak.sh $(SOAK_RUNS)

demo: deps lib cli
	$(Q)sh examples/demo.sh $(abspath $(BUILD))

# Further targets live in mk/*.mk, one concern per fragment (replay tool, sanitizers, fuzzing).
include $(wildcard mk/*.mk)

clean:
	rm -rf $(BUILD)

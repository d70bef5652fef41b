# commlens build. `make` builds the plugin and the CLI; `make test` builds and runs every test
# suite; `make demo` runs the main job. Dependencies are installed on first use (deps target).
CC      ?= cc
CUDA    ?= /usr/local/cuda
BUILD   ?= build
VERSION := 0.1.0
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -fPIC -I. -Iinclude -I$(CUDA)/include \
               -DCOMMLENS_VERSION=\"$(VERSION)\"
OPT     ?= -O2
SAN     ?=
CFLAGS  := $(CFLAGS_BASE) $(OPT) $(SAN) $(EXTRA_CFLAGS)
LIB_SRC := $(wildcard common/*.c plugin/*.c plugin/*/*.c exporters/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB     := $(BUILD)/libnccl-profiler-commlens.so
LIBLINK := $(BUILD)/libnccl-profiler.so
CLI_SRC := $(wildcard tools/commlens/*.c common/*.c)   # common/: config table, log, clock, NCCL arithmetic
CLI     := $(BUILD)/commlens
Q       := @

.PHONY: all lib cli test demo deps clean bench examples
all: deps lib cli

# ---- dependencies (Debian packages; we are root on fresh machines) ----
DEPS_STAMP := $(BUILD)/.deps
deps: $(DEPS_STAMP)
$(DEPS_STAMP):
	$(Q)mkdir -p $(BUILD)
	$(Q)if [ ! -f /usr/include/json-c/json.h ] || [ ! -f /usr/include/zlib.h ]; then \
	  echo "installing build dependencies (libjson-c-dev zlib1g-dev)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libjson-c-dev zlib1g-dev) >$(BUILD)/apt.log 2>&1 \
	  || { cat $(BUILD)/apt.log; exit 1; }; fi
	$(Q)touch $@

# ---- the plugin ----
lib: $(LIB) $(LIBLINK)
$(BUILD)/obj/%.o: %.c $(wildcard include/commlens/*.h common/*.h plugin/*.h plugin/*/*.h exporters/*.h) | $(DEPS_STAMP)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -fvisibility=hidden -c $< -o $@
$(LIB): $(LIB_OBJ) plugin/exports.map
	$(Q)$(CC) $(CFLAGS) -shared -o $@ $(LIB_OBJ) -Wl,--version-script=plugin/exports.map \
	  -Wl,-z,nodelete -Wl,-z,now -Wl,--no-undefined -lpthread -ldl -lz
	@echo "built $@"
$(LIBLINK): $(LIB)
	$(Q)ln -sf $(notdir $(LIB)) $@

# ---- the CLI ----
cli: $(CLI)
$(CLI): $(CLI_SRC) $(wildcard tools/commlens/*.h include/commlens/*.h) | $(DEPS_STAMP)
	$(Q)mkdir -p $(BUILD)
	$(Q)$(CC) $(CFLAGS) -Itools/commlens -o $@ $(CLI_SRC) -ljson-c -lz -lm -lpthread
	@echo "built $@"

# ---- tests: every test/<suite>/test_*.c is one program; test/lib/*.c is linked into each ----
TEST_LIB_SRC := $(wildcard test/lib/*.c)
TEST_SRC := $(wildcard test/*/test_*.c)
TEST_BIN := $(TEST_SRC:%.c=$(BUILD)/%)
# Some suites #include plugin or CLI sources to test internals: rebuild them when those change.
TEST_INCLUDED := $(wildcard common/*.[ch] plugin/*.[ch] plugin/*/*.[ch] exporters/*.[ch] tools/commlens/*.[ch])
$(BUILD)/test/%: test/%.c $(TEST_LIB_SRC) $(wildcard test/lib/*.h include/commlens/*.h) $(TEST_INCLUDED) | $(DEPS_STAMP)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Itest/lib -Itools/commlens -o $@ $< $(TEST_LIB_SRC) -ljson-c -lz -ldl -lpthread -lm
# mk/*.mk add variants (sanitizers, fuzz runs) as prerequisites and as run.sh arguments in
# TEST_MORE, so one run.sh call prints every suite and one closing total.
test: deps lib cli $(TEST_BIN)
	$(Q)COMMLENS_LIB=$(abspath $(LIB)) COMMLENS_CLI=$(abspath $(CLI)) BUILD=$(BUILD) \
	  sh test/run.sh $(TEST_BIN) $(TEST_MORE)

# ---- benchmarks (on demand) ----
bench: lib
	$(Q)$(MAKE) -s -C bench BUILD=$(abspath $(BUILD)) LIB=$(abspath $(LIB))

demo: all
	$(Q)sh examples/demo.sh $(abspath $(BUILD))

# Further targets live in mk/*.mk, one concern per fragment (replay tool, sanitizers, fuzzing).
include $(wildcard mk/*.mk)

clean:
	rm -rf $(BUILD)

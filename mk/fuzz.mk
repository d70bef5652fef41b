# fuzz.mk: libFuzzer targets (fuzz/fuzz_abi.c over the plugin's ABI tables, fuzz/fuzz_cli.c
# over the CLI's trace reader, fuzz/fuzz_join.c over the CUPTI join and the participants,
# fuzz/fuzz_replay.c over real NCCL call streams mutated record by record, fuzz/fuzz_config.c over
# the COMMLENS_* settings parser, fuzz/fuzz_gz.c over the CLI's gzip trace reader,
# fuzz/fuzz_pftrace.c over the merge's Perfetto protobuf writer, fuzz/fuzz_digest.c over the
# CLI's digest reader, its conversion to a trace and the report's model of it, fuzz/fuzz_flight.c
# over flight-recorder dumps (attempts, the hang analysis and its report); the last two with the
# memory oracle of fuzz/mem_oracle.h), built with clang into
# $(BUILD)/fuzz. `make test` replays
# every input kept in fuzz/regress/<target>/ (each once crashed something) and fuzzes each
# target for FUZZ_TEST_SECONDS from every 16th input of fuzz/corpus/<target>/ with a fixed seed; `make fuzz
# FUZZ_SECONDS=3600` fuzzes each target longer (new inputs go to $(BUILD)/fuzz/work/,
# crashes to $(BUILD)/fuzz/crashes/: copy them into fuzz/regress/<target>/ once fixed).
# `make test FUZZ=0` skips the fuzz runs; `make fuzz-coverage` reports the corpora's line
# coverage. Installs clang and its runtime when missing.

FUZZ ?= 1
FUZZ_TEST_SECONDS ?= 20
FUZZ_SECONDS ?= 600
FUZZ_CC ?= clang
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := $(CFLAGS_BASE) -O1 $(FUZZ_SAN)
FUZZ_TARGETS := abi cli join replay config gz pftrace digest flight
FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)
FUZZ_STAMP := $(FUZZ_DIR)/.clang

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS) $(BUILD)/libcommlens-fakecuda.so

# clang with libFuzzer's runtime (Debian: clang + libclang-rt-<ver>-dev).
$(FUZZ_STAMP): | test-deps
	$(Q)mkdir -p $(FUZZ_DIR)
	$(Q)echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' > $(FUZZ_DIR)/probe.c
	$(Q)if ! $(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_DIR)/probe.c -o $(FUZZ_DIR)/probe >/dev/null 2>&1; then \
	  echo "installing clang and libFuzzer (clang libclang-rt-dev)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang && \
	   v=$$(clang --version | sed -nE 's/.*clang version ([0-9]+).*/\1/p' | head -n 1) && \
	   DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libclang-rt-$$v-dev) >$(FUZZ_DIR)/apt.log 2>&1 \
	  || { cat $(FUZZ_DIR)/apt.log; exit 1; }; \
	  $(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_DIR)/probe.c -o $(FUZZ_DIR)/probe || exit 1; fi
	$(Q)touch $@

# The targets, built into $(1) with compile flags $(2): once with the sanitizers (fuzzing,
# make test) and once with coverage instrumentation (make fuzz-coverage).
define FUZZ_VARIANT
$(1)/obj/%.o: %.c $$(wildcard include/commlens/*.h common/*.h plugin/*.h plugin/*/*.h exporters/*.h) $$(CLI_HDR) | $$(FUZZ_STAMP)
	$$(Q)mkdir -p $$(dir $$@)
	$$(Q)$$(FUZZ_CC) $(2) -fsanitize=fuzzer-no-link -c $$< -o $$@
# Each variant's own archives of the plugin (with common/ and exporters/) and of the CLI.
$(1)/libcommlens.a: $$(LIB_SRC:%.c=$(1)/obj/%.o)
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
$(1)/libcommlens-cli.a: $$(filter-out %/main.o,$$(filter $(1)/obj/tools/%,$$(CLI_SRC:%.c=$(1)/obj/%.o)))
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
$(1)/fuzz_abi: fuzz/fuzz_abi.c fuzz/trace_check.h $(1)/libcommlens.a | $$(FUZZ_STAMP)
	$$(Q)$$(FUZZ_CC) $(2) -fsanitize=fuzzer -o $$@ $$(filter %.c %.a,$$^) -ljson-c -lz -ldl -lpthread -lm
$(1)/fuzz_join: fuzz/fuzz_join.c $(1)/libcommlens.a | $$(FUZZ_STAMP)
	$$(Q)$$(FUZZ_CC) $(2) -fsanitize=fuzzer -o $$@ $$(filter %.c %.a,$$^) -ljson-c -lz -ldl -lpthread -lm
# The replay target drives the plugin linked into it through tools/replay's engine (-rdynamic:
# the replayer finds ncclProfiler_vN in the program itself, so the whole archive goes in).
$(1)/fuzz_replay: fuzz/fuzz_replay.c fuzz/trace_check.h $$(TEST_LIB_SRC) $(1)/libcommlens.a | $$(FUZZ_STAMP)
	$$(Q)$$(FUZZ_CC) $(2) -Itest/lib -fsanitize=fuzzer -rdynamic -o $$@ $$(filter %.c,$$^) \
	  -Wl,--whole-archive $(1)/libcommlens.a -Wl,--no-whole-archive -ljson-c -lz -ldl -lpthread -lm
$(1)/fuzz_config: fuzz/fuzz_config.c $(1)/libcommlens.a | $$(FUZZ_STAMP)
	$$(Q)$$(FUZZ_CC) $(2) -fsanitize=fuzzer -o $$@ $$(filter %.c %.a,$$^) -lpthread
# The CLI's targets: the CLI's archive (its sources but main.c) and the plugin's (common/).
$(1)/fuzz_cli $(1)/fuzz_gz $(1)/fuzz_pftrace $(1)/fuzz_digest $(1)/fuzz_flight: $(1)/fuzz_%: fuzz/fuzz_%.c fuzz/pft_check.h fuzz/rank_files.h fuzz/mem_oracle.h $(1)/libcommlens-cli.a $(1)/libcommlens.a | $$(FUZZ_STAMP)
	$$(Q)$$(FUZZ_CC) $(2) -fsanitize=fuzzer -o $$@ $$(filter %.c %.a,$$^) -ljson-c -lz -lpthread -lm
endef
$(eval $(call FUZZ_VARIANT,$(FUZZ_DIR),$(FUZZ_CFLAGS)))

# Line coverage of plugin/, common/, exporters/ and tools/commlens/ reached by the kept corpora
# (fuzz/corpus/<target> and fuzz/regress/<target>), with clang's source-based coverage.
FCOV_DIR := $(BUILD)/fuzzcov
$(eval $(call FUZZ_VARIANT,$(FCOV_DIR),$(CFLAGS_BASE) -O1 -fprofile-instr-generate -fcoverage-mapping))
.PHONY: fuzz-coverage
fuzz-coverage: $(FUZZ_TARGETS:%=$(FCOV_DIR)/fuzz_%) $(BUILD)/libcommlens-fakecuda.so
	$(Q)sh fuzz/coverage.sh $(FCOV_DIR) $(FUZZ_TARGETS)

# One bounded run per target inside `make test` (fuzz/run.sh prints the suite line).
ifeq ($(FUZZ),1)
test: $(FUZZ_BINS)
TEST_MORE += --clear $(foreach t,$(FUZZ_TARGETS),--cmd 'sh fuzz/run.sh $(FUZZ_DIR)/fuzz_$(t) $(t) $(FUZZ_TEST_SECONDS) $(FUZZ_DIR)')
endif

fuzz: $(FUZZ_BINS) $(BUILD)/libcommlens-fakecuda.so
	$(Q)for t in $(FUZZ_TARGETS); do sh fuzz/run.sh $(FUZZ_DIR)/fuzz_$$t $$t $(FUZZ_SECONDS) $(FUZZ_DIR) long || exit 1; done

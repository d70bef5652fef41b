# fuzz.mk: libFuzzer targets (fuzz/fuzz_abi.c over the plugin's ABI tables, fuzz/fuzz_cli.c
# over the CLI's trace reader, fuzz/fuzz_join.c over the CUPTI join and the participants), built with clang into $(BUILD)/fuzz. `make test` replays
# every input kept in fuzz/regress/<target>/ (each once crashed something) and fuzzes each
# target for FUZZ_TEST_SECONDS from fuzz/corpus/<target>/ with a fixed seed; `make fuzz
# FUZZ_SECONDS=3600` fuzzes each target longer (new inputs go to $(BUILD)/fuzz/work/,
# crashes to $(BUILD)/fuzz/crashes/: copy them into fuzz/regress/<target>/ once fixed).
# `make test FUZZ=0` skips the fuzz runs. Installs clang and its runtime when missing.

FUZZ ?= 1
FUZZ_TEST_SECONDS ?= 20
FUZZ_SECONDS ?= 600
FUZZ_CC ?= clang
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := $(CFLAGS_BASE) -O1 $(FUZZ_SAN)
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_CLI_OBJ := $(filter-out %/main.o,$(CLI_SRC:%.c=$(FUZZ_DIR)/obj/%.o))
FUZZ_BINS := $(FUZZ_DIR)/fuzz_abi $(FUZZ_DIR)/fuzz_cli $(FUZZ_DIR)/fuzz_join
FUZZ_STAMP := $(FUZZ_DIR)/.clang

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)

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

$(FUZZ_DIR)/obj/%.o: %.c $(wildcard include/commlens/*.h common/*.h plugin/*.h plugin/*/*.h exporters/*.h tools/commlens/*.h) | $(FUZZ_STAMP)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -Itools/commlens -c $< -o $@

$(FUZZ_DIR)/fuzz_abi: fuzz/fuzz_abi.c $(FUZZ_LIB_OBJ) | $(FUZZ_STAMP)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ -ljson-c -lz -ldl -lpthread -lm
$(FUZZ_DIR)/fuzz_join: fuzz/fuzz_join.c $(FUZZ_LIB_OBJ) | $(FUZZ_STAMP)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ -ljson-c -lz -ldl -lpthread -lm
$(FUZZ_DIR)/fuzz_cli: fuzz/fuzz_cli.c $(FUZZ_CLI_OBJ) | $(FUZZ_STAMP)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -Itools/commlens -fsanitize=fuzzer -o $@ $^ -ljson-c -lz -lpthread -lm

# One bounded run per target inside `make test` (fuzz/run.sh prints the suite line).
ifeq ($(FUZZ),1)
test: $(FUZZ_BINS)
TEST_MORE += --clear $(foreach t,abi cli join,--cmd 'sh fuzz/run.sh $(FUZZ_DIR)/fuzz_$(t) $(t) $(FUZZ_TEST_SECONDS) $(FUZZ_DIR)')
endif

fuzz: $(FUZZ_BINS)
	$(Q)for t in abi cli join; do sh fuzz/run.sh $(FUZZ_DIR)/fuzz_$$t $$t $(FUZZ_SECONDS) $(FUZZ_DIR) long || exit 1; done

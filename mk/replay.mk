# commlens-replay: plays a COMMLENS_RECORD recording (test/data/real/*.rec.gz) through the
# plugin, no NCCL or GPU needed. Not part of `all`; `test` and `demo` build it.
REPLAY     := $(BUILD)/commlens-replay
REPLAY_SRC := tools/replay/main.c tools/replay/replay.c tools/replay/driver.c

.PHONY: replay
replay: $(REPLAY)
$(REPLAY): $(REPLAY_SRC) $(wildcard tools/replay/*.h include/commlens/*.h) | test-deps
	$(Q)mkdir -p $(BUILD)
	$(Q)$(CC) $(CFLAGS) -o $@ $(REPLAY_SRC) -ljson-c $(ZLIB_LIBS) -ldl -lpthread -lm \
	  -Wl,--export-dynamic-symbol=clock_gettime   # --virtual-clock: the plugin resolves it here
	@echo "built $@"

test: $(REPLAY)
demo: $(if $(strip $(NO_CLI_WHY)),,$(REPLAY))   # needs json-c (it reads traces); demo goes on without it
# sanitizer variants (mk/sanitize.mk) build test-bins into $(BUILD)/<variant>: the tool too, so
# test/abi/test_real_runs finds a matching one next to the library it tests
test-bins: $(REPLAY)

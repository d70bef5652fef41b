# sanitize.mk: the whole test suite again under AddressSanitizer+UndefinedBehaviorSanitizer and
# under ThreadSanitizer, as part of `make test`. Each variant is a recursive build of the plugin,
# the CLI and every test program into $(BUILD)/asan or $(BUILD)/tsan (test programs carry the
# sanitizer runtime; the plugin they dlopen uses it). Reports go to log files that test/run.sh
# checks after the variant ran: a report anywhere (a child process, the CLI) fails the suite
# `<variant>/sanitizer`, even where the exit status alone would not show it.
# `make test SANITIZE=0` skips both variants; `make test-asan` / `make test-tsan` run one alone.

SANITIZE ?= 1
ASAN_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
TSAN_SAN := -fsanitize=thread
# -O1 makes gcc see truncations -O2 does not (test/tools/synth_gen.h); not an error there.
SAN_EXTRA_CFLAGS := -Wno-format-truncation
# detect_leaks=0: the test programs themselves leak by design (paths, parsed traces in
# children that exit); plugin leaks are checked by the fuzzers' LeakSanitizer instead.
ASAN_RUN_OPTS := ASAN_OPTIONS=halt_on_error=1:exitcode=23:detect_leaks=0:abort_on_error=0:log_path=$(abspath $(BUILD))/asan/san-logs/asan \
                 UBSAN_OPTIONS=halt_on_error=1:exitcode=23:print_stacktrace=1:log_path=$(abspath $(BUILD))/asan/san-logs/ubsan
# die_after_fork=0: test_fork forks a multi-threaded process on purpose (the profiled job may);
# second_deadlock_stack: better lock reports.
TSAN_RUN_OPTS := TSAN_OPTIONS=halt_on_error=1:exitcode=23:die_after_fork=0:second_deadlock_stack=1:log_path=$(abspath $(BUILD))/tsan/san-logs/tsan

.PHONY: test-bins san-build-asan san-build-tsan test-asan test-tsan
# Everything `make test` runs, built (used by the variant builds below).
test-bins: test-deps lib cli $(TEST_BIN)

# $(1)=variant $(2)=sanitizer flags
define SAN_VARIANT
san-build-$(1):
	$$(Q)$$(MAKE) -s --no-print-directory -j2 BUILD=$$(BUILD)/$(1) SAN="$(2)" OPT=-O1 EXTRA_CFLAGS="$(SAN_EXTRA_CFLAGS)" SANITIZE=0 FUZZ=0 test-bins >/dev/null
	$$(Q)rm -rf $$(BUILD)/$(1)/san-logs && mkdir -p $$(BUILD)/$(1)/san-logs
endef
$(eval $(call SAN_VARIANT,asan,$(ASAN_SAN)))
$(eval $(call SAN_VARIANT,tsan,$(TSAN_SAN)))

# The suites each variant runs. Under ThreadSanitizer, the process-level fault suite (fork of a
# threaded process, SIGKILL/SIGTERM of exec'd children, 100 dlclose/reload cycles) and the
# real-run replays (dozens of exec'd children) are left out: TSan does not support fork after
# threads or unloading instrumented code, and exec'd TSan children intermittently fail to map
# their shadow memory on this machine ("failed to allocate ... errno 12"). Those suites run
# plain and under ASan+UBSan; TSan keeps every concurrency suite (stress, ABI, replay, robust).
# The recorded verdict data (test/tools/test_verdict_data.c) is one thread reading 36 real traces
# (70 s under TSan on a busy 2-core machine, for no thread to check): plain and ASan only. The
# digest suite (test/tools/test_digest.c) replays the real runs in exec'd children, as
# test_real_runs does: plain and ASan only. The verdict's calibration on simulated jobs
# (test/tools/test_calibration.c) and its permutation test (test/tools/test_perm_test.c) are one
# thread of arithmetic: plain and ASan only.
TSAN_SKIP := test/faults/test_faults.c test/abi/test_real_runs.c test/tools/test_multirank.c \
             test/tools/test_verdict_data.c test/tools/test_digest.c test/tools/test_calibration.c \
             test/tools/test_perm_test.c
san_tests = $(if $(filter tsan,$(1)),$(filter-out $(TSAN_SKIP),$(TEST_SRC)),$(TEST_SRC))

# run.sh arguments for one variant: its binaries, with its library, CLI and options.
san_run_args = --clear --prefix $(1)/ --env COMMLENS_LIB=$(abspath $(BUILD)/$(1)/$(notdir $(LIB))) \
  --env COMMLENS_CLI=$(abspath $(BUILD)/$(1)/commlens) --env COMMLENS_SANITIZED=$(1) \
  $(foreach o,$(2),--env $(o)) $(patsubst %.c,$(BUILD)/$(1)/%,$(call san_tests,$(1))) --check-san-logs $(BUILD)/$(1)/san-logs

test-asan: san-build-asan
	$(Q)sh test/run.sh $(call san_run_args,asan,$(ASAN_RUN_OPTS))
test-tsan: san-build-tsan
	$(Q)sh test/run.sh $(call san_run_args,tsan,$(TSAN_RUN_OPTS))

ifeq ($(SANITIZE),1)
test: san-build-asan san-build-tsan
TEST_MORE += $(call san_run_args,asan,$(ASAN_RUN_OPTS)) $(call san_run_args,tsan,$(TSAN_RUN_OPTS))
endif

# `make stress STRESS_SECONDS=600`: the concurrency stress (test/faults/test_stress.c) for
# longer, plain and under ThreadSanitizer.
STRESS_SECONDS ?= 60
.PHONY: stress
stress: test-bins san-build-tsan
	$(Q)COMMLENS_STRESS_SECONDS=$(STRESS_SECONDS) sh test/run.sh \
	  --env COMMLENS_LIB=$(abspath $(LIB)) --env COMMLENS_CLI=$(abspath $(CLI)) $(BUILD)/test/faults/test_stress \
	  --clear --prefix tsan/ --env COMMLENS_LIB=$(abspath $(BUILD)/tsan/$(notdir $(LIB))) --env COMMLENS_SANITIZED=tsan \
	  $(foreach o,$(TSAN_RUN_OPTS),--env $(o)) $(BUILD)/tsan/test/faults/test_stress --check-san-logs $(BUILD)/tsan/san-logs

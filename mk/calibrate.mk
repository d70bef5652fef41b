# calibrate.mk: the straggler verdict's calibration benchmark (bench/calibrate.c): 10,000 and
# more simulated jobs with known truth (test/sim/jobsim.c), written by the plugin's digest writer
# and judged by the CLI's own reader and verdict; prints the tables of false accusations per
# layout and recall by effect size and frequency. On demand, at nice 19:
# `make calibrate CALIBRATE_ARGS="--workers 2 --scale 1"` (about 20 minutes on two free cores).
CALIBRATE := $(BUILD)/bench-calibrate
CALIBRATE_ARGS ?=
$(CALIBRATE): bench/calibrate.c test/sim/jobsim.c test/sim/jobsim.h $(CLI_A) $(LIB_A) | test-deps
	$(Q)$(CC) $(CFLAGS) -o $@ bench/calibrate.c test/sim/jobsim.c $(CLI_A) $(LIB_A) -ljson-c -lz -ldl -lpthread -lm
.PHONY: calibrate
calibrate: $(CALIBRATE)
	$(Q)nice -n 19 $(CALIBRATE) $(CALIBRATE_ARGS)
# The simulator reads jobs back with the CLI's loader: it is linked into the calibration suite
# (and the benchmark) only, not into every test program (test/lib/), nor the fuzzers.
$(BUILD)/test/tools/test_calibration: TEST_LIB_SRC += test/sim/jobsim.c
$(BUILD)/test/tools/test_calibration: test/sim/jobsim.c test/sim/jobsim.h

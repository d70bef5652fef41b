# hostile.mk: the "hostile neighbour" test (test/faults/hostile_neighbour.sh) as its own group of
# `make test`: a second user plants hard links, symlinks, FIFOs and files at every path the
# plugin and the CLI write; the job and the CLI must change nothing outside their output,
# neither crash nor hang, and the trace must be complete. It skips, saying why, without root.
HOSTILE ?= 1
ifeq ($(HOSTILE),1)
TEST_MORE += --clear --cmd 'sh test/faults/hostile_neighbour.sh $(abspath $(BUILD))'
endif

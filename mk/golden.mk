# golden.mk: the CLI's outputs (report text, --json, --html, merge as JSON and pftrace) for every
# kept trace directory, byte for byte against test/data/golden/ (test/tools/check_outputs.sh;
# its failure prints the command that regenerates the goldens when a change is intended).
GOLDEN ?= 1
ifeq ($(GOLDEN),1)
TEST_MORE += --clear --cmd 'sh test/tools/check_outputs.sh $(abspath $(CLI))'
endif

# wheel.mk: `make wheel`, the package pip installs (tools/wheel/build_wheel.py): the plugin, the
# CLI linked statically against json-c and zlib (it needs only glibc at run time) and the Python
# module python/commlens, as $(BUILD)/dist/commlens-<VERSION>-py3-none-manylinux_2_NN_x86_64.whl,
# NN the newest glibc its binaries need (at most WHEEL_GLIBC_MAX, else the build fails).
# `make test` builds it, installs it into a fresh venv with pip and reads test/data with it
# (test/tools/check_wheel.sh). Python's venv module comes from Debian's python3-venv: tried once
# per build directory where it is missing (log: $(BUILD)/venv-apt.log).
WHEEL_GLIBC_MAX ?= 2.34
WHEEL_CLI  := $(BUILD)/wheel/commlens
WHEEL_DIST := $(BUILD)/dist
VENV_STAMP := $(BUILD)/.venv-tried

.PHONY: wheel
ifeq ($(strip $(NO_CLI_WHY)),)
$(WHEEL_CLI): $(CLI_OBJ)
	$(Q)mkdir -p $(dir $@)
	$(Q)for a in libjson-c.a libz.a; do [ "$$($(CC) -print-file-name=$$a)" != "$$a" ] || \
	  { echo "make wheel: $$a is missing (the wheel's CLI links json-c and zlib statically: Debian's libjson-c-dev and zlib1g-dev ship them)"; exit 1; }; done
	$(Q)$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) -Wl,-Bstatic -ljson-c -lz -Wl,-Bdynamic -lm -lpthread
wheel: $(LIB) $(WHEEL_CLI)
	$(Q)python3 tools/wheel/build_wheel.py --plugin $(LIB) --cli $(WHEEL_CLI) --out $(WHEEL_DIST) --glibc-max $(WHEEL_GLIBC_MAX)
else
wheel:
	@echo "make wheel: cannot build the CLI: $(strip $(NO_CLI_WHY)); $(NO_CLI_HOW)"; exit 1
endif

$(VENV_STAMP):
	$(Q)mkdir -p $(BUILD)
	$(Q)if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then \
	  echo "installing python3-venv (the wheel's install test)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv) >$(BUILD)/venv-apt.log 2>&1 \
	  || echo "python3-venv could not be installed (see $(BUILD)/venv-apt.log): the wheel test checks the wheel but cannot install it"; fi
	$(Q)touch $@

WHEEL ?= 1
ifeq ($(WHEEL),1)
test: wheel $(VENV_STAMP)
TEST_MORE += --clear --cmd 'sh test/tools/check_wheel.sh $(abspath $(BUILD))'
endif

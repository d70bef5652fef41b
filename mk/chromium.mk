# chromium.mk: the headless browser that test/tools/test_html.c opens the HTML report in
# (`commlens report --html`). `make test` tries once per build directory to install Debian's
# chromium where no browser is found; where that fails (offline, no package source) the test
# says so and skips its browser checks. The log of the attempt: $(BUILD)/chromium-apt.log.
CHROMIUM_STAMP := $(BUILD)/.chromium-tried

$(CHROMIUM_STAMP):
	$(Q)mkdir -p $(BUILD)
	$(Q)if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
	  echo "installing chromium (the HTML report's browser test)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >$(BUILD)/chromium-apt.log 2>&1 \
	  || echo "chromium could not be installed (see $(BUILD)/chromium-apt.log): test_html skips its browser checks"; fi
	$(Q)touch $@

test: $(CHROMIUM_STAMP)

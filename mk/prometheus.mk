# prometheus.mk: Prometheus and promtool (Debian's prometheus package), which
# test/exporters/test_prom_live.c runs: the shipped rules' unit test (promtool test rules) and a
# real Prometheus scraping the plugin's live metrics. `make test` tries once per build directory
# to install the package where prometheus or promtool is missing; where that fails (offline, no
# package source) the test says so and skips. The log of the attempt: $(BUILD)/prometheus-apt.log.
PROMETHEUS_STAMP := $(BUILD)/.prometheus-tried

$(PROMETHEUS_STAMP): | $(CHROMIUM_STAMP)   # one apt-get at a time under make -j
	$(Q)mkdir -p $(BUILD)
	$(Q)if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then \
	  echo "installing prometheus (the live straggler test: a real Prometheus and promtool)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus) \
	    >$(BUILD)/prometheus-apt.log 2>&1 \
	  || echo "prometheus could not be installed (see $(BUILD)/prometheus-apt.log): test_prom_live skips its checks"; fi
	$(Q)touch $@

test: $(PROMETHEUS_STAMP)

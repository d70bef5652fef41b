# prometheus_node.mk: Prometheus' node exporter (Debian's prometheus-node-exporter), which
# test/exporters/test_prom_textfile.c runs with its textfile collector over the plugin's
# COMMLENS_PROM files (a restart, two processes of one rank, a finished job). `make test` tries
# once per build directory to install the package where the binary is missing; where that fails
# (offline, no package source) the test says so and checks the files alone. The log of the
# attempt: $(BUILD)/node-exporter-apt.log.
NODE_EXPORTER_STAMP := $(BUILD)/.node-exporter-tried

$(NODE_EXPORTER_STAMP): | $(PROMETHEUS_STAMP)   # one apt-get at a time under make -j
	$(Q)mkdir -p $(BUILD)
	$(Q)if ! command -v prometheus-node-exporter >/dev/null 2>&1 && ! command -v node_exporter >/dev/null 2>&1; then \
	  echo "installing prometheus-node-exporter (the textfile collector test)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus-node-exporter) \
	    >$(BUILD)/node-exporter-apt.log 2>&1 \
	  || echo "prometheus-node-exporter could not be installed (see $(BUILD)/node-exporter-apt.log): test_prom_textfile checks the files without it"; fi
	$(Q)touch $@

test: $(NODE_EXPORTER_STAMP)

# protoc.mk: protoc (Debian's protobuf-compiler), with which test/tools/test_cli.c decodes the
# merge's Perfetto protobuf output independently of our encoder. `make test` tries once per build
# directory to install it where it is missing; where that fails (offline, no package source) the
# test says so and skips that check. The log of the attempt: $(BUILD)/protoc-apt.log.
PROTOC_STAMP := $(BUILD)/.protoc-tried

$(PROTOC_STAMP): | $(NODE_EXPORTER_STAMP)   # one apt-get at a time under make -j
	$(Q)mkdir -p $(BUILD)
	$(Q)if ! command -v protoc >/dev/null 2>&1; then \
	  echo "installing protobuf-compiler (protoc: the merge's protobuf check)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler) >$(BUILD)/protoc-apt.log 2>&1 \
	  || echo "protoc could not be installed (see $(BUILD)/protoc-apt.log): test_cli skips its protobuf check"; fi
	$(Q)touch $@

test: $(PROTOC_STAMP)

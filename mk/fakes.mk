# Stand-ins for the GPU's libraries, for tests and replays without a GPU (test/fakes/).
# A stand-in libcuda (soname libcuda.so.1) that tells the plugin which GPU is current on each
# thread: tests and replays of jobs that drive several GPUs from one process load it.
FAKE_CUDA := $(BUILD)/libcommlens-fakecuda.so
$(FAKE_CUDA): test/fakes/fake_cuda.c
	$(Q)mkdir -p $(BUILD)
	$(Q)$(CC) $(CFLAGS) -shared -Wl,-soname,libcuda.so.1 -o $@ $<
# A stand-in libcupti (COMMLENS_CUPTI_LIB): synthetic activity buffers, refusals, a held flush.
FAKE_CUPTI := $(BUILD)/libcommlens-fakecupti.so
$(FAKE_CUPTI): test/fakes/fake_cupti.c
	$(Q)mkdir -p $(BUILD)
	$(Q)$(CC) $(CFLAGS) -shared -o $@ $<
# A stand-in libnccl (soname libnccl.so.2) that only tells its version: the v7 layout gate.
FAKE_NCCL := $(BUILD)/libcommlens-fakenccl.so
$(FAKE_NCCL): test/fakes/fake_nccl.c
	$(Q)mkdir -p $(BUILD)
	$(Q)$(CC) $(CFLAGS) -shared -Wl,-soname,libnccl.so.2 -o $@ $<
replay: $(FAKE_CUDA)
bench: $(FAKE_CUDA) $(FAKE_CUPTI)
test: $(FAKE_CUDA) $(FAKE_CUPTI) $(FAKE_NCCL)
test-bins: $(FAKE_CUDA) $(FAKE_CUPTI) $(FAKE_NCCL)
demo: $(FAKE_CUDA)

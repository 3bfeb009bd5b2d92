# libFuzzer targets: every tests/fuzz/fuzz_<name>.c is one target (it
# defines LLVMFuzzerTestOneInput) and tests/fuzz/corpus/<name>/ holds its
# committed seeds. Adding a target is adding those two; see
# docs/internals/FUZZING.md.
#
#   make fuzz                         every target for FUZZ_SECONDS (30) each
#   make fuzz FUZZ_TARGETS="config"   some of them
#   make fuzz FUZZ_SECONDS=0          replay the committed seeds only
#   make fuzz FUZZ_JOBS=1             one target at a time (default: one per core)
#
# The targets and the whole library are built by a sub-make with FUZZ=1
# (clang, -fsanitize=fuzzer-no-link,address,undefined, in build/fuzz), so
# that the coverage of every module guides the fuzzer.
FUZZ_SECONDS ?= 30
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.c,%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_TARGETS ?= $(FUZZ_NAMES)
FUZZ_DIR     := $(BUILD)/fuzz

.PHONY: fuzz fuzz-build

ifneq ($(FUZZ),)
fuzz-build: $(FUZZ_TARGETS:%=$(OUT)/tests/fuzz/fuzz_%)

$(OUT)/tests/fuzz/fuzz_%: $(OBJ)/tests/fuzz/fuzz_%.o $(IMAGE_O) $(OUT)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)
else
fuzz:
	@bash scripts/setup.sh build
	@$(MAKE) --no-print-directory FUZZ=1 FUZZ_TARGETS="$(FUZZ_TARGETS)" fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_TARGETS)
endif

# Keep the targets' objects (make would delete them as intermediates).
.SECONDARY: $(FUZZ_NAMES:%=$(OBJ)/tests/fuzz/fuzz_%.o)

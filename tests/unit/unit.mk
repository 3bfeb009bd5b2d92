# C unit tests of the pure modules: one binary, every tests/unit/test_*.c.
UNIT     := $(OUT)/tests/unit
UNIT_OBJ := $(patsubst %.c,$(OBJ)/%.o,$(wildcard tests/unit/*.c))
TEST_BINS += $(UNIT)

$(UNIT): $(UNIT_OBJ) $(IMAGE_O) $(OUT)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

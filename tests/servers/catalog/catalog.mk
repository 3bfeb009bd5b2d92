# The catalog test upstream: one MCP stdio server binary with fake back ends
# (github, jira, slack, postgres) chosen by --backend.
CATALOG     := $(OUT)/tests/catalog
CATALOG_OBJ := $(patsubst %.c,$(OBJ)/%.o,$(wildcard tests/servers/catalog/*.c))
TEST_BINS   += $(CATALOG)

$(CATALOG): $(CATALOG_OBJ) $(YYJSON_O)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -luv

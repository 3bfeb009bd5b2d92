/* Unit tests of src/proto/mcp.c: protocol versions. */
#include "unit.h"

#include "proto/mcp.h"

#include <stdlib.h>

TEST(mcp_legacy_versions)
{
	CHECK(sl_mcp_legacy_version("2025-11-25"));
	CHECK(sl_mcp_legacy_version("2025-06-18"));
	CHECK(sl_mcp_legacy_version("2025-03-26"));
	CHECK(sl_mcp_legacy_version(SL_MCP_LATEST_LEGACY));
	/* The stateless era is not a session-era version. */
	CHECK(!sl_mcp_legacy_version(SL_MCP_MODERN));
	CHECK(!sl_mcp_legacy_version("2024-11-05"));
	CHECK(!sl_mcp_legacy_version(""));
	CHECK(!sl_mcp_legacy_version("2025-11-2"));
	CHECK(!sl_mcp_legacy_version("2025-11-25 "));
	CHECK(!sl_mcp_legacy_version("2025-11-25x"));
}

TEST(mcp_versions_newest_first)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *a = sl_mcp_versions(d);
	char *s = sl_json_write_mut_val(a, NULL);
	CHECK_STR(s, "[\"2026-07-28\",\"2025-11-25\",\"2025-06-18\",\"2025-03-26\"]");
	free(s);
	yyjson_mut_doc_free(d);
}

/* MCP version handling. */
#include "proto/mcp.h"

#include <string.h>

static const char *legacy[] = { "2025-11-25", "2025-06-18", "2025-03-26" };

bool sl_mcp_legacy_version(const char *v)
{
	for (size_t i = 0; i < SL_COUNT(legacy); i++)
		if (strcmp(v, legacy[i]) == 0)
			return true;
	return false;
}

yyjson_mut_val *sl_mcp_versions(yyjson_mut_doc *d)
{
	yyjson_mut_val *a = yyjson_mut_arr(d);
	yyjson_mut_arr_add_str(d, a, SL_MCP_MODERN);
	for (size_t i = 0; i < SL_COUNT(legacy); i++)
		yyjson_mut_arr_add_str(d, a, legacy[i]);
	return a;
}

/* Unit tests of src/proto/mcp.c: protocol versions. */
#include "unit.h"

#include "proto/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(mcp_legacy_versions)
{
	CHECK(sl_mcp_legacy_version("2025-11-25"));
	CHECK(sl_mcp_legacy_version("2025-06-18"));
	CHECK(sl_mcp_legacy_version("2025-03-26"));
	CHECK(sl_mcp_legacy_version(SL_MCP_LATEST_LEGACY));
	/* The stateless era is not a session-era version. */
	CHECK(!sl_mcp_legacy_version(SL_MCP_MODERN));
	CHECK(sl_mcp_legacy_version("2024-11-05"));
	CHECK(!sl_mcp_legacy_version("2024-10-07"));
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
	CHECK_STR(s, "[\"2026-07-28\",\"2025-11-25\",\"2025-06-18\",\"2025-03-26\",\"2024-11-05\"]");
	free(s);
	yyjson_mut_doc_free(d);
}

/* Maps msg (JSON text) for version v and returns it as JSON text. */
static char *mapped(const char *msg, const char *v)
{
	yyjson_doc *in = yyjson_read(msg, strlen(msg), 0);
	yyjson_mut_doc *d = yyjson_doc_mut_copy(in, NULL);
	char *s;

	sl_mcp_era_map(d, yyjson_mut_doc_get_root(d), v);
	s = sl_json_write_mut_val(yyjson_mut_doc_get_root(d), NULL);
	yyjson_doc_free(in);
	yyjson_mut_doc_free(d);
	return s;
}

#define CHECK_MAP(msg, v, want)                         \
	do {                                            \
		char *got_ = mapped((msg), (v));        \
		CHECK_STR(got_, (want));                \
		if (strcmp(got_, (want)))               \
			fprintf(stderr, "  got %s\n", got_); \
		free(got_);                             \
	} while (0)

TEST(mcp_era_map_tool_results)
{
	const char *audio = "{\"id\":1,\"result\":{\"content\":[{\"type\":\"audio\",\"data\":\"AAAA\","
			    "\"mimeType\":\"audio/wav\"},{\"type\":\"resource_link\",\"uri\":\"file:///a\","
			    "\"name\":\"a\"}]}}";
	CHECK_MAP(audio, "2024-11-05",
		  "{\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"[audio: audio/wav, 3 bytes "
		  "omitted]\"},{\"type\":\"text\",\"text\":\"[resource link: a <file:///a>]\"}]}}");
	/* 2025-03-26 has audio but no resource links. */
	CHECK_MAP(audio, "2025-03-26",
		  "{\"id\":1,\"result\":{\"content\":[{\"type\":\"audio\",\"data\":\"AAAA\",\"mimeType\":"
		  "\"audio/wav\"},{\"type\":\"text\",\"text\":\"[resource link: a <file:///a>]\"}]}}");
	CHECK_MAP(audio, "2025-11-25", audio);
	CHECK_MAP(audio, "2026-07-28", audio);
	/* base64 padding counts no bytes */
	CHECK_MAP("{\"result\":{\"content\":[{\"type\":\"audio\",\"data\":\"AAA=\"}]}}", "2024-11-05",
		  "{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"[audio: unknown type, 2 bytes "
		  "omitted]\"}]}}");
	/* structuredContent alone becomes text; beside content it is dropped */
	CHECK_MAP("{\"result\":{\"structuredContent\":{\"n\":1}}}", "2025-03-26",
		  "{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"n\\\":1}\"}]}}");
	CHECK_MAP("{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"structuredContent\":{}}}",
		  "2024-11-05", "{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}");
	CHECK_MAP("{\"result\":{\"content\":[],\"structuredContent\":{}}}", "2025-06-18",
		  "{\"result\":{\"content\":[],\"structuredContent\":{}}}");
}

TEST(mcp_era_map_lists_and_initialize)
{
	CHECK_MAP("{\"result\":{\"tools\":[{\"name\":\"q\",\"title\":\"Q\",\"inputSchema\":{},\"outputSchema\":{},"
		  "\"annotations\":{},\"icons\":[],\"execution\":{}}]}}", "2024-11-05",
		  "{\"result\":{\"tools\":[{\"name\":\"q\",\"inputSchema\":{}}]}}");
	CHECK_MAP("{\"result\":{\"tools\":[{\"name\":\"q\",\"title\":\"Q\",\"annotations\":{},\"icons\":[]}]}}",
		  "2025-06-18", "{\"result\":{\"tools\":[{\"name\":\"q\",\"title\":\"Q\",\"annotations\":{}}]}}");
	CHECK_MAP("{\"result\":{\"prompts\":[{\"name\":\"p\",\"title\":\"P\",\"arguments\":[{\"name\":\"a\","
		  "\"title\":\"A\"}]}],\"resources\":[{\"uri\":\"u\",\"name\":\"r\",\"title\":\"R\",\"size\":3}]}}",
		  "2024-11-05",
		  "{\"result\":{\"prompts\":[{\"name\":\"p\",\"arguments\":[{\"name\":\"a\"}]}],\"resources\":"
		  "[{\"uri\":\"u\",\"name\":\"r\",\"size\":3}]}}");
	CHECK_MAP("{\"result\":{\"protocolVersion\":\"2024-11-05\",\"capabilities\":{\"tools\":{},"
		  "\"completions\":{},\"logging\":{}}}}", "2024-11-05",
		  "{\"result\":{\"protocolVersion\":\"2024-11-05\",\"capabilities\":{\"tools\":{},\"logging\":{}}}}");
	/* prompt messages, sampling requests and progress */
	CHECK_MAP("{\"result\":{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"resource_link\","
		  "\"uri\":\"x:y\",\"name\":\"n\",\"description\":\"d\"}}]}}", "2024-11-05",
		  "{\"result\":{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":"
		  "\"[resource link: n <x:y>: d]\"}}]}}");
	CHECK_MAP("{\"method\":\"notifications/progress\",\"params\":{\"progress\":1,\"message\":\"m\"}}",
		  "2024-11-05", "{\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}");
	CHECK_MAP("{\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[{\"content\":"
		  "{\"type\":\"audio\",\"data\":\"\"}}]}}", "2024-11-05",
		  "{\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[{\"content\":{\"type\":"
		  "\"text\",\"text\":\"[audio: unknown type, 0 bytes omitted]\"}}]}}");
	/* not an object, no result: left alone */
	CHECK_MAP("[1]", "2024-11-05", "[1]");
	CHECK_MAP("{\"result\":[]}", "2024-11-05", "{\"result\":[]}");
}

TEST(mcp_era_caps_and_methods)
{
	const char *caps = "{\"roots\":{},\"sampling\":{},\"elicitation\":{},\"tasks\":{}}";
	yyjson_doc *in = yyjson_read(caps, strlen(caps), 0);
	yyjson_doc *c = sl_mcp_era_caps(yyjson_doc_get_root(in), "2024-11-05");
	char *s = sl_json_write_val(yyjson_doc_get_root(c), NULL);
	CHECK_STR(s, "{\"roots\":{},\"sampling\":{}}");
	free(s);
	yyjson_doc_free(c);
	c = sl_mcp_era_caps(yyjson_doc_get_root(in), "2025-06-18");
	s = sl_json_write_val(yyjson_doc_get_root(c), NULL);
	CHECK_STR(s, "{\"roots\":{},\"sampling\":{},\"elicitation\":{}}");
	free(s);
	yyjson_doc_free(c);
	c = sl_mcp_era_caps(NULL, "2025-11-25");
	CHECK(yyjson_is_obj(yyjson_doc_get_root(c)));
	yyjson_doc_free(c);
	yyjson_doc_free(in);

	CHECK(!sl_mcp_has_method("2024-11-05", "elicitation/create"));
	CHECK(!sl_mcp_has_method("2025-03-26", "elicitation/create"));
	CHECK(sl_mcp_has_method("2025-06-18", "elicitation/create"));
	CHECK(sl_mcp_has_method(NULL, "elicitation/create"));
	CHECK(sl_mcp_has_method("2024-11-05", "sampling/createMessage"));
	CHECK_STR(sl_mcp_versions_text(), "2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05");
}

/* MCP Apps (SEP-1865): a tool's View and who may call it, from JSON text. */
static bool tool_says(const char *json, int what)
{
	yyjson_doc *doc = yyjson_read(json, strlen(json), 0);
	yyjson_val *t = yyjson_doc_get_root(doc);
	bool r = what == 0 ? sl_mcp_tool_app_only(t) : sl_mcp_tool_app_callable(t);
	yyjson_doc_free(doc);
	return r;
}

TEST(mcp_apps_tool_meta)
{
	yyjson_doc *doc;
	const char *both = "{\"_meta\":{\"ui\":{\"resourceUri\":\"ui://a/x\"},\"ui/resourceUri\":\"ui://a/y\"}}";
	const char *old = "{\"_meta\":{\"ui/resourceUri\":\"ui://a/y\"}}";

	/* The nested key first, the older flat one alone, nothing else. */
	doc = yyjson_read(both, strlen(both), 0);
	CHECK_STR(sl_mcp_tool_ui_uri(yyjson_doc_get_root(doc)), "ui://a/x");
	yyjson_doc_free(doc);
	doc = yyjson_read(old, strlen(old), 0);
	CHECK_STR(sl_mcp_tool_ui_uri(yyjson_doc_get_root(doc)), "ui://a/y");
	yyjson_doc_free(doc);
	CHECK(sl_mcp_tool_ui_uri(NULL) == NULL);

	/* Visibility: without the array both may; an array decides; hostile
	 * shapes are no array (default) or name nobody. */
	CHECK(!tool_says("{\"name\":\"t\"}", 0));
	CHECK(tool_says("{\"name\":\"t\"}", 1));
	CHECK(tool_says("{\"_meta\":{\"ui\":{\"visibility\":[\"app\"]}}}", 0));
	CHECK(tool_says("{\"_meta\":{\"ui\":{\"visibility\":[\"app\"]}}}", 1));
	CHECK(!tool_says("{\"_meta\":{\"ui\":{\"visibility\":[\"model\",\"app\"]}}}", 0));
	CHECK(!tool_says("{\"_meta\":{\"ui\":{\"visibility\":[\"model\"]}}}", 0));
	CHECK(!tool_says("{\"_meta\":{\"ui\":{\"visibility\":[\"model\"]}}}", 1));
	CHECK(tool_says("{\"_meta\":{\"ui\":{\"visibility\":[]}}}", 0));
	CHECK(!tool_says("{\"_meta\":{\"ui\":{\"visibility\":[]}}}", 1));
	CHECK(tool_says("{\"_meta\":{\"ui\":{\"visibility\":[1,null,{\"model\":1}]}}}", 0));
	CHECK(!tool_says("{\"_meta\":{\"ui\":{\"visibility\":\"model\"}}}", 0));
	CHECK(tool_says("{\"_meta\":{\"ui\":{\"visibility\":\"model\"}}}", 1));
	CHECK(!tool_says("{\"_meta\":{\"ui\":[\"app\"]}}", 0));
}

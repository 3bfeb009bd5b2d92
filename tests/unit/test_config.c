/* Unit tests of src/config/config.c through sl_config_parse and
 * sl_config_child_env. */
#include "unit.h"

#include "config/config.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static struct sl_err err;

/* Parses text as "test.json"; returns the config or NULL (err set). */
static struct sl_config *parse(const char *text)
{
	struct sl_config *c = NULL;
	err.msg[0] = '\0';
	if (sl_config_parse("test.json", text, strlen(text), &c, &err) != SL_OK)
		return NULL;
	return c;
}

/* Expects the parse to fail with every one of the parts in the message. */
static void parse_fails(const char *text, const char *part1, const char *part2)
{
	struct sl_config *c = parse(text);
	CHECK(c == NULL);
	sl_config_unref(c);
	CHECK(strstr(err.msg, "test.json") != NULL);
	if (part1 && !strstr(err.msg, part1)) {
		printf("  \"%s\" lacks \"%s\"\n", err.msg, part1);
		CHECK(0);
	}
	if (part2 && !strstr(err.msg, part2)) {
		printf("  \"%s\" lacks \"%s\"\n", err.msg, part2);
		CHECK(0);
	}
}

static bool has_warning(const struct sl_config *c, const char *part1, const char *part2)
{
	for (size_t i = 0; c && i < c->nwarnings; i++)
		if (strstr(c->warnings[i], part1) && (!part2 || strstr(c->warnings[i], part2)))
			return true;
	return false;
}

TEST(config_minimal)
{
	struct sl_config *c = parse("{\"mcpServers\":{\"fs\":{\"command\":\"npx\","
				    "\"args\":[\"-y\",\"server-fs\"]}}}");
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_STR(c->path, "test.json");
	CHECK_INT(c->nservers, 1);
	CHECK_STR(c->servers[0].name, "fs");
	CHECK_STR(c->servers[0].command, "npx");
	CHECK_INT(c->servers[0].nargs, 2);
	CHECK_STR(c->servers[0].args[0], "-y");
	CHECK_STR(c->servers[0].args[1], "server-fs");
	CHECK(c->servers[0].args[2] == NULL);
	CHECK_INT(c->servers[0].nenv, 0);
	CHECK(c->servers[0].cwd == NULL);
	CHECK(c->servers[0].error == NULL);
	CHECK(!c->servers[0].disabled);
	CHECK_INT(c->servers[0].timeout_ms, 0);
	CHECK_INT(c->nwarnings, 0);
	sl_config_unref(c);
}

TEST(config_defaults)
{
	struct sl_config *c = parse("{\"mcpServers\":{}}");
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_INT(c->nservers, 0);
	CHECK_INT(c->exposure, SL_EXPOSE_PASSTHROUGH);
	CHECK_INT(c->log_level, SL_LOG_INFO);
	CHECK(c->log_file == NULL);
	CHECK_INT(c->call_timeout_ms, 60000);
	CHECK_INT(c->startup_timeout_ms, 30000);
	CHECK_INT(c->restart_max_backoff_ms, 30000);
	CHECK_INT(c->max_request_bytes, 4u << 20);
	CHECK_INT(c->max_upstream_message_bytes, 32u << 20);
	CHECK_INT(c->max_tools, 2000);
	sl_config_unref(c);
}

TEST(config_no_servers_object_fails)
{
	parse_fails("{}", "mcpServers", NULL);
	parse_fails("{\"sluice\":{}}", "mcpServers", NULL);
	parse_fails("[]", "object", NULL);
	parse_fails("{\"mcpServers\":[]}", "mcpServers", NULL);
}

TEST(config_vscode_servers)
{
	struct sl_config *c = parse("{\"servers\":{\"gh\":{\"type\":\"stdio\",\"command\":\"gh-mcp\"}},"
				    "\"inputs\":[]}");
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_INT(c->nservers, 1);
	CHECK_STR(c->servers[0].name, "gh");
	CHECK_STR(c->servers[0].command, "gh-mcp");
	CHECK(c->servers[0].error == NULL);
	sl_config_unref(c);
}

TEST(config_both_server_keys_fail)
{
	parse_fails("{\"mcpServers\":{\"a\":{\"command\":\"x\"}},\"servers\":{\"b\":{\"command\":\"y\"}}}",
		    "mcpServers", "servers");
	parse_fails("{\"servers\":{},\"mcpServers\":{}}", "not both", NULL);
}

TEST(config_invalid_json_position)
{
	/* Line 3 column 10 holds the stray 'x'. */
	const char *text = "{\n  \"mcpServers\": {\n    \"a\": x\n  }\n}\n";
	parse_fails(text, "test.json:3:10", "invalid JSON");
	/* With a multibyte character before the error: columns count
	 * characters. Line 3: `  "é": ,` -> the ',' is column 8. */
	parse_fails("{\"mcpServers\":{},\n\"sluice\": {\n  \"\xc3\xa9\": ,\n}}", "test.json:3:8", NULL);
}

TEST(config_too_deep_is_refused_naming_the_limit)
{
	/* 100,000 levels under an unknown key: refused before anything walks
	 * it, with the file and the limit; exactly at the limit it loads. */
	size_t n = 100000, pre = strlen("{\"mcpServers\":{},\"x\":");
	char *s = malloc(pre + 2 * n + 2);
	struct sl_config *c;

	memcpy(s, "{\"mcpServers\":{},\"x\":", pre);
	memset(s + pre, '[', n);
	memset(s + pre + n, ']', n);
	memcpy(s + pre + 2 * n, "}", 2);
	parse_fails(s, "test.json", "nested deeper than 128 levels");
	n = SL_JSON_DEPTH_MAX - 1;
	memset(s + pre, '[', n);
	memset(s + pre + n, ']', n);
	memcpy(s + pre + 2 * n, "}", 2);
	c = parse(s);
	CHECK(c != NULL);
	if (c)
		sl_config_unref(c);
	free(s);
}

TEST(config_comments_and_trailing_commas)
{
	struct sl_config *c = parse("// a comment\n{\n  /* block */\n  \"mcpServers\": {\n"
				    "    \"a\": {\"command\": \"x\", \"args\": [\"1\", \"2\",],},\n  },\n}\n");
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_INT(c->nservers, 1);
	CHECK_INT(c->servers[0].nargs, 2);
	sl_config_unref(c);
}

TEST(config_unknown_keys_warn)
{
	struct sl_config *c = parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"colour\":\"red\"}},"
				    "\"topExtra\":1,\"sluice\":{\"fancyMode\":true}}");
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_INT(c->nwarnings, 3);
	CHECK(has_warning(c, "\"topExtra\"", NULL));
	CHECK(has_warning(c, "\"fancyMode\"", "sluice"));
	CHECK(has_warning(c, "\"colour\"", "mcpServers.a"));
	sl_config_unref(c);
}

TEST(config_wrong_types_name_key_path)
{
	parse_fails("{\"mcpServers\":{\"srv\":{\"command\":5}}}", "mcpServers.srv", "command");
	parse_fails("{\"mcpServers\":{\"srv\":{\"command\":\"\"}}}", "mcpServers.srv", "command");
	parse_fails("{\"mcpServers\":{\"srv\":{\"command\":\"x\",\"args\":\"-v\"}}}", "mcpServers.srv", "args");
	parse_fails("{\"mcpServers\":{\"srv\":{\"command\":\"x\",\"args\":[1]}}}", "mcpServers.srv", "args");
	parse_fails("{\"mcpServers\":{\"srv\":{\"command\":\"x\",\"env\":[]}}}", "mcpServers.srv", "env");
	parse_fails("{\"mcpServers\":{\"srv\":{\"command\":\"x\",\"env\":{\"A\":1}}}}", "mcpServers.srv", "env");
	parse_fails("{\"mcpServers\":{\"srv\":{\"command\":\"x\",\"env\":{\"A=B\":\"1\"}}}}",
		    "mcpServers.srv", "env");
	parse_fails("{\"mcpServers\":{\"srv\":{\"command\":\"x\",\"cwd\":1}}}", "mcpServers.srv", "cwd");
	parse_fails("{\"mcpServers\":{\"srv\":{\"command\":\"x\",\"disabled\":\"yes\"}}}",
		    "mcpServers.srv", "disabled");
	parse_fails("{\"mcpServers\":{\"srv\":{\"command\":\"x\",\"prefix\":\"no\"}}}",
		    "mcpServers.srv", "prefix");
	parse_fails("{\"mcpServers\":{\"srv\":{\"command\":\"x\",\"timeout\":0}}}", "mcpServers.srv", "timeout");
	parse_fails("{\"mcpServers\":{\"srv\":{\"command\":\"x\",\"timeout\":\"5\"}}}", "mcpServers.srv",
		    "timeout");
	parse_fails("{\"mcpServers\":{\"srv\":{\"command\":\"x\",\"type\":3}}}", "mcpServers.srv", "type");
	parse_fails("{\"mcpServers\":{\"srv\":{\"args\":[]}}}", "mcpServers.srv", "command");
	parse_fails("{\"mcpServers\":{\"srv\":[]}}", "mcpServers.srv", NULL);
	parse_fails("{\"servers\":{\"v\":{\"command\":true}}}", "servers.v", "command");
	parse_fails("{\"mcpServers\":{},\"sluice\":[]}", "sluice", NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"logFile\":3}}", "sluice.logFile", NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"logLevel\":\"loud\"}}", "sluice.logLevel", NULL);
}

TEST(config_server_fields)
{
	struct sl_config *c = parse("{\"mcpServers\":{\"s\":{\"command\":\"c\",\"cwd\":\"/tmp\","
				    "\"disabled\":true,\"timeout\":1500,\"env\":{\"K\":\"v\"}}}}");
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_STR(c->servers[0].cwd, "/tmp");
	CHECK(c->servers[0].disabled);
	CHECK(!c->servers[0].unprefixed);
	CHECK_INT(c->servers[0].timeout_ms, 1500);
	CHECK_INT(c->servers[0].nenv, 1);
	CHECK_STR(c->servers[0].env[0].key, "K");
	CHECK_STR(c->servers[0].env[0].value, "v");
	CHECK(c->servers[0].args != NULL && c->servers[0].args[0] == NULL);
	sl_config_unref(c);
}

TEST(config_server_prefix)
{
	struct sl_config *c = parse("{\"mcpServers\":{\"a\":{\"command\":\"c\",\"prefix\":false},"
				    "\"b\":{\"command\":\"c\",\"prefix\":true}}}");
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK(c->servers[0].unprefixed);
	CHECK(!c->servers[1].unprefixed);
	sl_config_unref(c);
}

TEST(config_remote_servers)
{
	struct sl_config *c;
	setenv("SLUICE_T_TOKEN", "s3cret", 1);
	unsetenv("SLUICE_T_UNSET_VAR");
	c = parse("{\"mcpServers\":{\"r\":{\"url\":\"https://x/mcp\","
		  "\"headers\":{\"Authorization\":\"Bearer ${SLUICE_T_TOKEN}\",\"X-A\":\"b\"}},"
		  "\"h\":{\"type\":\"streamable-http\",\"url\":\"http://y\"},"
		  "\"s\":{\"type\":\"sse\",\"url\":\"http://z/sse\"},"
		  "\"u\":{\"url\":\"http://w\",\"headers\":{\"K\":\"${SLUICE_T_UNSET_VAR}\"}},"
		  "\"ok\":{\"command\":\"x\"}}}");
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_INT(c->nservers, 5);
	CHECK(c->servers[0].error == NULL);
	CHECK_INT(c->servers[0].transport, SL_TRANSPORT_HTTP);
	CHECK_STR(c->servers[0].url, "https://x/mcp");
	CHECK_INT(c->servers[0].nheaders, 2);
	CHECK_STR(c->servers[0].headers[0].key, "Authorization");
	CHECK_STR(c->servers[0].headers[0].value, "Bearer s3cret");
	CHECK_INT(c->servers[1].transport, SL_TRANSPORT_HTTP);
	CHECK_INT(c->servers[2].transport, SL_TRANSPORT_SSE);
	/* An unset variable in a header fails that server alone, naming the header. */
	CHECK(c->servers[3].error && strstr(c->servers[3].error, "headers.K") != NULL);
	CHECK_INT(c->servers[4].transport, SL_TRANSPORT_STDIO);
	CHECK(c->servers[4].error == NULL);
	sl_config_unref(c);

	parse_fails("{\"mcpServers\":{\"r\":{\"url\":\"file:///etc/passwd\"}}}", "mcpServers.r", "http://");
	parse_fails("{\"mcpServers\":{\"r\":{\"url\":\"http://x\",\"command\":\"y\"}}}", "mcpServers.r", "not both");
	parse_fails("{\"mcpServers\":{\"r\":{\"type\":\"http\"}}}", "mcpServers.r", "missing \"url\"");
	parse_fails("{\"mcpServers\":{\"r\":{\"type\":\"stdio\",\"url\":\"http://x\"}}}", "mcpServers.r", "\"stdio\"");
	parse_fails("{\"mcpServers\":{\"r\":{\"url\":\"http://x\",\"headers\":{\"A\":\"1\\r\\nB: 2\"}}}}",
		    "mcpServers.r", "single-line");
	parse_fails("{\"mcpServers\":{\"r\":{\"url\":\"http://x\",\"headers\":{\"A\":1}}}}", "mcpServers.r", "headers");
	/* A variable that brings a newline into a header is refused after expansion. */
	setenv("SLUICE_T_NL", "a\r\nInjected: 1", 1);
	parse_fails("{\"mcpServers\":{\"r\":{\"url\":\"http://x\",\"headers\":{\"A\":\"${SLUICE_T_NL}\"}}}}",
		    "headers.A", "more than one line");
	parse_fails("{\"mcpServers\":{\"r\":{\"command\":\"x\",\"env\":{\"A=B\":\"1\"}}}}", "env",
		    "without '='");
	parse_fails("{\"mcpServers\":{\"r\":{\"command\":\"x\",\"env\":{\"A\":1}}}}", "env",
		    "must be strings");
}

/* oauth.tokenExchange exchanges each caller's own token (perUser) with a
 * client the authorization server knows (a pre-registered one). */
TEST(config_token_exchange)
{
	struct sl_config *c;

	c = parse("{\"mcpServers\":{\"r\":{\"url\":\"http://x\",\"oauth\":{\"perUser\":true,"
		  "\"tokenExchange\":true,\"clientId\":\"c\",\"clientSecret\":\"s\"}},"
		  "\"d\":{\"url\":\"http://y\",\"oauth\":{\"perUser\":true}}}}");
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK(c->servers[0].oauth.token_exchange);
	CHECK(!c->servers[1].oauth.token_exchange); /* the default */
	sl_config_unref(c);
	parse_fails("{\"mcpServers\":{\"r\":{\"url\":\"http://x\",\"oauth\":{\"tokenExchange\":true,"
		    "\"clientId\":\"c\",\"clientSecret\":\"s\"}}}}", "mcpServers.r", "needs \"perUser\"");
	parse_fails("{\"mcpServers\":{\"r\":{\"url\":\"http://x\",\"oauth\":{\"perUser\":true,"
		    "\"tokenExchange\":true}}}}", "mcpServers.r", "needs \"clientId\"");
	parse_fails("{\"mcpServers\":{\"r\":{\"url\":\"http://x\",\"oauth\":{\"perUser\":true,"
		    "\"tokenExchange\":true,\"clientId\":\"c\"}}}}", "mcpServers.r",
		    "registered beforehand");
	parse_fails("{\"mcpServers\":{\"r\":{\"url\":\"http://x\",\"oauth\":{\"perUser\":true,"
		    "\"tokenExchange\":1}}}}", "tokenExchange", NULL);
}

TEST(config_duplicate_server_names)
{
	parse_fails("{\"mcpServers\":{\"a\":{\"command\":\"x\"},\"a\":{\"command\":\"y\"}}}", "a",
		    "duplicate");
}

TEST(config_invalid_server_names)
{
	parse_fails("{\"mcpServers\":{\"has space\":{\"command\":\"x\"}}}", "has space", "server names");
	parse_fails("{\"mcpServers\":{\"a/b\":{\"command\":\"x\"}}}", "a/b", NULL);
	parse_fails("{\"mcpServers\":{\"\":{\"command\":\"x\"}}}", "server names", NULL);
	parse_fails("{\"mcpServers\":{\"caf\xc3\xa9\":{\"command\":\"x\"}}}", "server names", NULL);
	parse_fails("{\"mcpServers\":{\"a:b\":{\"command\":\"x\"}}}", "server names", NULL);
	/* 65 characters is one too many; 64 is fine. */
	{
		char text[256], name[70];
		struct sl_config *c;
		memset(name, 'n', 65);
		name[65] = '\0';
		snprintf(text, sizeof(text), "{\"mcpServers\":{\"%s\":{\"command\":\"x\"}}}", name);
		parse_fails(text, "server names", NULL);
		name[64] = '\0';
		snprintf(text, sizeof(text), "{\"mcpServers\":{\"%s\":{\"command\":\"x\"}}}", name);
		c = parse(text);
		CHECK(c != NULL);
		sl_config_unref(c);
	}
	{
		struct sl_config *c = parse("{\"mcpServers\":{\"A-b_c.9\":{\"command\":\"x\"}}}");
		CHECK(c != NULL);
		sl_config_unref(c);
	}
}

TEST(config_env_expansion)
{
	struct sl_config *c;
	setenv("SLUICE_T_CMD", "/usr/bin/tool", 1);
	setenv("SLUICE_T_TOKEN", "s3cret", 1);
	setenv("SLUICE_T_DIR", "/srv/work", 1);
	c = parse("{\"mcpServers\":{\"s\":{\"command\":\"${SLUICE_T_CMD}\","
		  "\"args\":[\"--token=${env:SLUICE_T_TOKEN}\",\"${SLUICE_T_DIR}/${SLUICE_T_TOKEN}\",\"$HOME\",\"$\",\"}{\"],"
		  "\"env\":{\"TOKEN\":\"Bearer ${SLUICE_T_TOKEN}!\"},\"cwd\":\"${env:SLUICE_T_DIR}/sub\"}}}");
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK(c->servers[0].error == NULL);
	CHECK_STR(c->servers[0].command, "/usr/bin/tool");
	CHECK_INT(c->servers[0].nargs, 5);
	CHECK_STR(c->servers[0].args[0], "--token=s3cret");
	CHECK_STR(c->servers[0].args[1], "/srv/work/s3cret");
	CHECK_STR(c->servers[0].args[2], "$HOME"); /* only ${...} is expanded */
	CHECK_STR(c->servers[0].args[3], "$");
	CHECK_STR(c->servers[0].args[4], "}{");
	CHECK_STR(c->servers[0].env[0].value, "Bearer s3cret!");
	CHECK_STR(c->servers[0].cwd, "/srv/work/sub");
	sl_config_unref(c);
}

TEST(config_unset_variable_fails_only_that_server)
{
	struct sl_config *c;
	unsetenv("SLUICE_T_UNSET_VAR");
	setenv("SLUICE_T_SET", "ok", 1);
	c = parse("{\"mcpServers\":{"
		  "\"good\":{\"command\":\"x\",\"args\":[\"${SLUICE_T_SET}\"]},"
		  "\"bad\":{\"command\":\"x\",\"env\":{\"K\":\"${SLUICE_T_UNSET_VAR}\"}},"
		  "\"badcmd\":{\"command\":\"${env:SLUICE_T_UNSET_VAR}\"},"
		  "\"badarg\":{\"command\":\"x\",\"args\":[\"a\",\"${SLUICE_T_UNSET_VAR}\"]},"
		  "\"badcwd\":{\"command\":\"x\",\"cwd\":\"${SLUICE_T_UNSET_VAR}\"}}}");
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_INT(c->nservers, 5);
	CHECK(c->servers[0].error == NULL);
	CHECK_STR(c->servers[0].args[0], "ok");
	for (size_t i = 1; i < 5; i++) {
		CHECK(c->servers[i].error != NULL);
		CHECK(c->servers[i].error && strstr(c->servers[i].error, "SLUICE_T_UNSET_VAR") != NULL);
	}
	CHECK(c->servers[1].error && strstr(c->servers[1].error, "env.K") != NULL);
	CHECK(c->servers[3].error && strstr(c->servers[3].error, "args[1]") != NULL);
	CHECK(c->servers[4].error && strstr(c->servers[4].error, "cwd") != NULL);
	sl_config_unref(c);
}

TEST(config_unterminated_reference)
{
	struct sl_config *c = parse("{\"mcpServers\":{\"s\":{\"command\":\"x\",\"args\":[\"${OOPS\"]},"
				    "\"t\":{\"command\":\"y\"}}}");
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK(c->servers[0].error != NULL && strstr(c->servers[0].error, "unterminated") != NULL);
	CHECK(c->servers[1].error == NULL);
	sl_config_unref(c);
}

static const char *fake_getenv(const char *name)
{
	if (strcmp(name, "A") == 0)
		return "alpha";
	if (strcmp(name, "EMPTY") == 0)
		return "";
	if (strcmp(name, "LONG") == 0)
		return "0123456789012345678901234567890123456789";
	return NULL;
}

TEST(config_expand_direct)
{
	struct sl_err e;
	char *s;
	s = sl_config_expand("${A}-${env:A}-${EMPTY}-${LONG}${LONG}", fake_getenv, &e);
	CHECK_STR(s, "alpha-alpha--0123456789012345678901234567890123456789"
		     "0123456789012345678901234567890123456789");
	free(s);
	s = sl_config_expand("", fake_getenv, &e);
	CHECK_STR(s, "");
	free(s);
	s = sl_config_expand("plain $A {A}", fake_getenv, &e);
	CHECK_STR(s, "plain $A {A}");
	free(s);
	e.msg[0] = '\0';
	CHECK(sl_config_expand("x ${NOPE} y", fake_getenv, &e) == NULL);
	CHECK(strstr(e.msg, "NOPE") != NULL);
	e.msg[0] = '\0';
	CHECK(sl_config_expand("x ${A", fake_getenv, &e) == NULL);
	CHECK(strstr(e.msg, "unterminated") != NULL);
	e.msg[0] = '\0';
	CHECK(sl_config_expand("${}", fake_getenv, &e) == NULL);
	CHECK(e.msg[0] != '\0');
	e.msg[0] = '\0';
	CHECK(sl_config_expand("${env:}", fake_getenv, &e) == NULL);
	CHECK(e.msg[0] != '\0');
}

TEST(config_sluice_settings)
{
	struct sl_config *c = parse("{\"mcpServers\":{},\"sluice\":{\"exposure\":\"router\",\"logLevel\":\"debug\","
				    "\"logFile\":\"/tmp/s.log\",\"callTimeoutMs\":1000,\"startupTimeoutMs\":2000,"
				    "\"restartMaxBackoffMs\":3000,\"maxRequestBytes\":1024,"
				    "\"maxUpstreamMessageBytes\":1073741824,\"maxToolsPerServer\":100000}}");
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_INT(c->exposure, SL_EXPOSE_ROUTER);
	CHECK_INT(c->log_level, SL_LOG_DEBUG);
	CHECK_STR(c->log_file, "/tmp/s.log");
	CHECK_INT(c->call_timeout_ms, 1000);
	CHECK_INT(c->startup_timeout_ms, 2000);
	CHECK_INT(c->restart_max_backoff_ms, 3000);
	CHECK_INT(c->max_request_bytes, 1024);
	CHECK_INT(c->max_upstream_message_bytes, 1073741824);
	CHECK_INT(c->max_tools, 100000);
	CHECK_INT(c->nwarnings, 0);
	sl_config_unref(c);

	c = parse("{\"mcpServers\":{},\"sluice\":{\"exposure\":\"hybrid\"}}");
	CHECK(c != NULL && c->exposure == SL_EXPOSE_HYBRID);
	sl_config_unref(c);
	c = parse("{\"mcpServers\":{},\"sluice\":{\"exposure\":\"passthrough\"}}");
	CHECK(c != NULL && c->exposure == SL_EXPOSE_PASSTHROUGH);
	sl_config_unref(c);
	CHECK_STR(sl_exposure_name(SL_EXPOSE_PASSTHROUGH), "passthrough");
	CHECK_STR(sl_exposure_name(SL_EXPOSE_ROUTER), "router");
	CHECK_STR(sl_exposure_name(SL_EXPOSE_HYBRID), "hybrid");
}

TEST(config_sluice_range_checks)
{
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"exposure\":\"all\"}}", "sluice.exposure", NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"exposure\":1}}", "sluice.exposure", NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"callTimeoutMs\":0}}", "sluice.callTimeoutMs", NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"callTimeoutMs\":86400001}}", "sluice.callTimeoutMs", NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"callTimeoutMs\":-5}}", "sluice.callTimeoutMs", NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"callTimeoutMs\":1.5}}", "sluice.callTimeoutMs", NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"callTimeoutMs\":\"100\"}}", "sluice.callTimeoutMs", NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"startupTimeoutMs\":3600001}}", "sluice.startupTimeoutMs",
		    NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"restartMaxBackoffMs\":0}}", "sluice.restartMaxBackoffMs",
		    NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"maxRequestBytes\":1023}}", "sluice.maxRequestBytes",
		    "1024");
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"maxUpstreamMessageBytes\":1073741825}}",
		    "sluice.maxUpstreamMessageBytes", NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"maxToolsPerServer\":0}}", "sluice.maxToolsPerServer", NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"maxToolsPerServer\":100001}}", "sluice.maxToolsPerServer",
		    NULL);
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"maxRequestBytes\":99999999999999999999999}}",
		    "sluice.maxRequestBytes", NULL);
}

static bool env_has(char **env, const char *kv)
{
	for (char **e = env; *e; e++)
		if (strcmp(*e, kv) == 0)
			return true;
	return false;
}

static bool env_has_name(char **env, const char *name)
{
	size_t n = strlen(name);
	for (char **e = env; *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return true;
	return false;
}

TEST(config_child_env_allowlist)
{
	char *envp[] = {
		"PATH=/usr/bin:/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "LC_CTYPE=UTF-8",
		"TMPDIR=/tmp", "HTTPS_PROXY=http://proxy:3128", "https_proxy=http://p:1",
		"NO_PROXY=localhost", "SSL_CERT_FILE=/etc/ssl/cert.pem", "NODE_EXTRA_CA_CERTS=/ca.pem",
		"AWS_SECRET_ACCESS_KEY=abc", "GITHUB_TOKEN=ghp_x", "OPENAI_API_KEY=sk", "PATHOLOGICAL=1",
		"HOMEDIR=/x", "LD_PRELOAD=/evil.so", "SSH_AUTH_SOCK=/tmp/agent", "LC_=x", "NOEQUALS",
		NULL,
	};
	struct sl_server_config s;
	char **env;
	size_t n = 0;

	memset(&s, 0, sizeof(s));
	env = sl_config_child_env(&s, envp);
	CHECK(env != NULL);
	for (char **e = env; *e; e++)
		n++;
	CHECK(env_has(env, "PATH=/usr/bin:/bin"));
	CHECK(env_has(env, "HOME=/home/u"));
	CHECK(env_has(env, "LANG=C.UTF-8"));
	CHECK(env_has(env, "LC_ALL=C"));
	CHECK(env_has(env, "LC_CTYPE=UTF-8"));
	CHECK(env_has(env, "TMPDIR=/tmp"));
	CHECK(env_has(env, "HTTPS_PROXY=http://proxy:3128"));
	CHECK(env_has(env, "https_proxy=http://p:1"));
	CHECK(env_has(env, "NO_PROXY=localhost"));
	CHECK(env_has(env, "SSL_CERT_FILE=/etc/ssl/cert.pem"));
	CHECK(env_has(env, "NODE_EXTRA_CA_CERTS=/ca.pem"));
	CHECK(!env_has_name(env, "AWS_SECRET_ACCESS_KEY"));
	CHECK(!env_has_name(env, "GITHUB_TOKEN"));
	CHECK(!env_has_name(env, "OPENAI_API_KEY"));
	CHECK(!env_has_name(env, "PATHOLOGICAL"));
	CHECK(!env_has_name(env, "HOMEDIR"));
	CHECK(!env_has_name(env, "LD_PRELOAD"));
	CHECK(!env_has_name(env, "SSH_AUTH_SOCK"));
	CHECK(!env_has_name(env, "LC_"));
	CHECK(!env_has(env, "NOEQUALS"));
	CHECK_INT(n, 11);
	sl_config_env_free(env);
}

TEST(config_child_env_entry_overrides)
{
	char *envp[] = { "PATH=/usr/bin", "HOME=/home/u", "GITHUB_TOKEN=from-gateway", NULL };
	struct sl_kv kv[] = {
		{ "PATH", "/opt/bin" },
		{ "GITHUB_TOKEN", "declared" },
		{ "EXTRA", "1" },
	};
	struct sl_server_config s;
	char **env;
	size_t n = 0, paths = 0;

	memset(&s, 0, sizeof(s));
	s.env = kv;
	s.nenv = SL_COUNT(kv);
	env = sl_config_child_env(&s, envp);
	for (char **e = env; *e; e++) {
		n++;
		if (strncmp(*e, "PATH=", 5) == 0)
			paths++;
	}
	CHECK_INT(paths, 1);
	CHECK(env_has(env, "PATH=/opt/bin"));
	CHECK(!env_has(env, "PATH=/usr/bin"));
	CHECK(env_has(env, "HOME=/home/u"));
	/* Declared by the entry: passes, with the declared value only. */
	CHECK(env_has(env, "GITHUB_TOKEN=declared"));
	CHECK(!env_has(env, "GITHUB_TOKEN=from-gateway"));
	CHECK(env_has(env, "EXTRA=1"));
	CHECK_INT(n, 4);
	sl_config_env_free(env);
}

TEST(config_child_env_empty)
{
	struct sl_server_config s;
	char *envp[] = { NULL };
	char **env;
	memset(&s, 0, sizeof(s));
	env = sl_config_child_env(&s, envp);
	CHECK(env != NULL && env[0] == NULL);
	sl_config_env_free(env);
	env = sl_config_child_env(&s, NULL);
	CHECK(env != NULL && env[0] == NULL);
	sl_config_env_free(env);
}

TEST(config_load_missing_file)
{
	struct sl_config *c = NULL;
	struct sl_err e;
	CHECK(sl_config_load("/nonexistent/sluice-test.json", &c, &e) < 0);
	CHECK(c == NULL);
	CHECK(strstr(e.msg, "/nonexistent/sluice-test.json") != NULL);
}

/* JSON objects may repeat a key and yyjson keeps both; the parser must not
 * index a fresh array with the count from the first one. (Two args then one
 * keeps the stray write inside malloc's slack so this fails rather than
 * crashing; valgrind shows the invalid write.) */
TEST(config_repeated_args_key)
{
	struct sl_config *c = parse("{\"mcpServers\":{\"s\":{\"command\":\"x\","
				    "\"args\":[\"a\",\"b\"],\"args\":[\"d\"]}}}");
	if (!c) {
		CHECK(strstr(err.msg, "args") != NULL);
		return;
	}
	CHECK(c->servers[0].nargs <= 2);
	CHECK(c->servers[0].args[0] != NULL);
	sl_config_unref(c);
}

TEST(config_repeated_env_key)
{
	struct sl_config *c = parse("{\"mcpServers\":{\"s\":{\"command\":\"x\","
				    "\"env\":{\"A\":\"1\"},\"env\":{\"B\":\"2\"}}}}");
	if (!c) {
		CHECK(strstr(err.msg, "env") != NULL);
		return;
	}
	CHECK(c->servers[0].nenv <= 1);
	CHECK(c->servers[0].env[0].key != NULL);
	sl_config_unref(c);
}

/* Repeated scalar keys: one value wins and nothing leaks (the leak shows
 * under valgrind only). */
TEST(config_repeated_scalar_keys)
{
	struct sl_config *c = parse("{\"mcpServers\":{\"s\":{\"command\":\"x\",\"command\":\"y\","
				    "\"cwd\":\"/a\",\"cwd\":\"/b\"}},"
				    "\"sluice\":{\"logFile\":\"/l1\",\"logFile\":\"/l2\"}}");
	if (!c)
		return;
	CHECK(strcmp(c->servers[0].command, "x") == 0 || strcmp(c->servers[0].command, "y") == 0);
	CHECK(c->servers[0].cwd != NULL && c->servers[0].cwd[0] == '/');
	CHECK(c->log_file != NULL && strncmp(c->log_file, "/l", 2) == 0);
	sl_config_unref(c);
}

/* docs/CONFIG.md is `sluice config-reference`; `make docs` writes it again. */
TEST(config_reference_is_current)
{
	const char *slash = strrchr(__FILE__, '/');
	char path[512], *text = NULL, *file = NULL;
	size_t len = 0, flen = 0;
	FILE *f = open_memstream(&text, &len);

	sl_config_reference(f);
	fclose(f);
	snprintf(path, sizeof(path), "%.*s../../docs/CONFIG.md",
		 slash ? (int)(slash - __FILE__ + 1) : 0, __FILE__);
	f = fopen(path, "re");
	CHECK(f != NULL);
	if (f) {
		file = malloc(len + 2);
		flen = fread(file, 1, len + 1, f);
		fclose(f);
	}
	if (!file || flen != len || memcmp(file, text, len) != 0) {
		printf("  %s differs from `sluice config-reference`: run make docs\n", path);
		CHECK(0);
	}
	free(file);
	free(text);
}

/* sluice.profiles (docs/PROFILES.md): what a profile is read as. */
#define PROFILE_SERVERS "{\"mcpServers\":{\"github\":{\"command\":\"x\"},\"jira\":{\"command\":\"x\"}},"

TEST(config_profiles_read)
{
	struct sl_config *c = parse(PROFILE_SERVERS "\"sluice\":{\"exposure\":\"router\",\"profiles\":{"
				    "\"ops\":{\"servers\":[\"git*\"],\"rename\":{\"github.list_issues\":\"issues\"},"
				    "\"exposure\":\"passthrough\"},"
				    "\"research_2\":{\"tools\":[\"jira.*\",\"github.search_*\"]},"
				    "\"default\":{\"servers\":[\"jira\"]}}}}");
	const struct sl_profile *p;
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_INT(c->nprofiles, 3);
	p = sl_config_profile(c, "ops");
	CHECK(p && p->exposure_set && p->exposure == SL_EXPOSE_PASSTHROUGH);
	CHECK(p && p->servers && !strcmp(p->servers[0], "git*") && !p->servers[1] && !p->tools);
	CHECK(p && p->nrename == 1 && !strcmp(p->rename[0].key, "github.list_issues") &&
	      !strcmp(p->rename[0].value, "issues"));
	p = sl_config_profile(c, "research_2");
	/* No exposure of its own: sluice.exposure's, decided when used. */
	CHECK(p && !p->exposure_set && !p->servers && p->tools && !strcmp(p->tools[1], "github.search_*"));
	CHECK(sl_config_profile(c, NULL) == sl_config_profile(c, "default"));
	CHECK(sl_config_profile(c, "nope") == NULL);
	CHECK(!c->code_enabled);
	CHECK_INT(c->nwarnings, 0);
	sl_config_unref(c);

	/* A profile in code mode needs the sandbox, not execute_code everywhere. */
	c = parse(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"p\":{\"exposure\":\"code\"}}}}");
	CHECK(c && c->code_enabled && !c->code_offered);
	sl_config_unref(c);
	/* A servers glob that names no server is said, not fatal. */
	c = parse(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"p\":{\"servers\":[\"gitlab\"]}}}}");
	CHECK(c != NULL);
	CHECK(has_warning(c, "sluice.profiles.p.servers", "\"gitlab\" matches no configured server"));
	sl_config_unref(c);
}

TEST(config_profiles_refused)
{
	/* Names: [a-z0-9_-]{1,64}. */
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"Ops\":{}}}}", "\"Ops\" is not a profile name",
		    "[a-z0-9_-]");
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a/b\":{}}}}", "not a profile name", NULL);
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"\":{}}}}", "not a profile name", NULL);
	{
		char text[512], name[70];
		memset(name, 'p', 65);
		name[65] = '\0';
		snprintf(text, sizeof(text), PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"%s\":{}}}}", name);
		parse_fails(text, "not a profile name", NULL);
	}
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":{},\"a\":{}}}}", "sluice.profiles.a",
		    "given twice");
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":[]}}", "sluice.profiles", NULL);
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":[]}}}", "sluice.profiles.a",
		    "must be an object");
	/* Its keys: strict, typed. */
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":{\"exposure\":\"mixed\"}}}}",
		    "sluice.profiles.a.exposure", "\"router\"");
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":{\"server\":[\"x\"]}}}}",
		    "sluice.profiles.a", "unknown key \"server\"");
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":{\"servers\":[]}}}}",
		    "sluice.profiles.a.servers", "1 to 256");
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":{\"tools\":[\"\"]}}}}",
		    "sluice.profiles.a.tools", NULL);
	/* Renames: an exact "server.tool", a valid and unique new name, never
	 * the gateway's own, for a tool the profile shows. */
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":{\"rename\":{\"github\":\"x\"}}}}}",
		    "sluice.profiles.a.rename", "\"server.tool\"");
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":{\"rename\":{\"github.x\":\"a b\"}}}}}",
		    "sluice.profiles.a.rename", "[A-Za-z0-9_-]");
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":{\"rename\":{\"github.x\":7}}}}}",
		    "sluice.profiles.a.rename", NULL);
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":{\"rename\":{\"github.x\":\"y\","
		    "\"jira.z\":\"y\"}}}}}", "\"github.x\" and \"jira.z\" would both be \"y\"", NULL);
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":{\"rename\":{\"github.x\":\"y\","
		    "\"github.x\":\"z\"}}}}}", "\"github.x\" is renamed twice", NULL);
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":{\"rename\":{\"github.x\":"
		    "\"search_tools\"}}}}}", "is a tool of the gateway's own", NULL);
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":{\"servers\":[\"jira\"],"
		    "\"rename\":{\"github.x\":\"y\"}}}}}", "sluice.profiles.a", "renames \"github.x\"");
	parse_fails(PROFILE_SERVERS "\"sluice\":{\"profiles\":{\"a\":{\"tools\":[\"github.list_*\"],"
		    "\"rename\":{\"github.x\":\"y\"}}}}}", "which its servers or tools leave out", NULL);
	/* At most SL_PROFILES_MAX profiles. */
	{
		struct sl_buf b;
		sl_buf_init(&b, SIZE_MAX);
		(void)!sl_buf_appends(&b, PROFILE_SERVERS "\"sluice\":{\"profiles\":{");
		for (int i = 0; i <= SL_PROFILES_MAX; i++)
			(void)!sl_buf_printf(&b, "%s\"p%d\":{}", i ? "," : "", i);
		(void)!sl_buf_appends(&b, "}}}");
		parse_fails(b.data, "sluice.profiles", "more than 64");
		sl_buf_dispose(&b);
	}
}

TEST(config_http_tls)
{
	struct sl_config *c;
	char cwd[4096];

	/* Paths are taken from the config file's directory, or the current
	 * one when the file is named without one ("test.json"). */
	c = parse("{\"mcpServers\":{},\"sluice\":{\"http\":{\"tls\":{\"certFile\":\"certs/s.pem\","
		  "\"keyFile\":\"/etc/k.pem\"}}}}");
	CHECK(c != NULL);
	if (c && getcwd(cwd, sizeof(cwd))) {
		char want[4200];
		snprintf(want, sizeof(want), "%s/certs/s.pem", cwd);
		CHECK_STR(c->http.tls.cert_file, want);
		CHECK_STR(c->http.tls.key_file, "/etc/k.pem");
	}
	sl_config_unref(c);
	c = parse("{\"mcpServers\":{}}");
	CHECK(c != NULL && c->http.tls.cert_file == NULL && c->http.tls.key_file == NULL);
	sl_config_unref(c);

	parse_fails("{\"mcpServers\":{},\"sluice\":{\"http\":{\"tls\":{\"certFile\":\"a.pem\"}}}}",
		    "sluice.http.tls", "needs \"certFile\" and \"keyFile\"");
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"http\":{\"tls\":{\"certFile\":\"a\","
		    "\"keyFile\":\"b\",\"caFile\":\"c\"}}}}", "sluice.http.tls", "caFile");
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"http\":{\"tls\":{\"certFile\":\"\","
		    "\"keyFile\":\"b\"}}}}", "sluice.http.tls.certFile", "must be a path");
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"http\":{\"tls\":true}}}", "sluice.http.tls",
		    "must be an object");
}

/* sluice.oauth.keyFile is a path like the TLS files: from the config file's
 * directory, ${VAR} expanded, and an unset variable fails the key (it once
 * went through the server-entry parser and wrote a server's error field
 * into the OAuth section). */
TEST(config_oauth_key_file)
{
	struct sl_config *c;
	char cwd[4096];

	c = parse("{\"mcpServers\":{},\"sluice\":{\"oauth\":{\"keyFile\":\"keys/t.key\"}}}");
	CHECK(c != NULL);
	if (c && getcwd(cwd, sizeof(cwd))) {
		char want[4200];
		snprintf(want, sizeof(want), "%s/keys/t.key", cwd);
		CHECK_STR(c->oauth.key_file, want);
	}
	sl_config_unref(c);
	unsetenv("SLUICE_TEST_UNSET_KEY");
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"oauth\":{\"keyFile\":"
		    "\"${SLUICE_TEST_UNSET_KEY}\"}}}", "sluice.oauth.keyFile", "SLUICE_TEST_UNSET_KEY");
	parse_fails("{\"mcpServers\":{},\"sluice\":{\"oauth\":{\"keyFile\":\"\"}}}",
		    "sluice.oauth.keyFile", "must be a path");
}

TEST(config_path_resolution)
{
	struct sl_err e;
	char *p = sl_config_path("/srv/sluice/c.json", "tls/cert.pem", &e);
	CHECK_STR(p, "/srv/sluice/tls/cert.pem");
	free(p);
	p = sl_config_path("/srv/sluice/c.json", "/abs/k.pem", &e);
	CHECK_STR(p, "/abs/k.pem");
	free(p);
	setenv("SL_TEST_TLS_DIR", "/run/secrets", 1);
	p = sl_config_path("/srv/c.json", "${SL_TEST_TLS_DIR}/k.pem", &e);
	CHECK_STR(p, "/run/secrets/k.pem");
	free(p);
	CHECK(sl_config_path("/srv/c.json", "${SL_TEST_TLS_UNSET}/k.pem", &e) == NULL);
}

/* sluice.http.publicUrl: where a browser reaches the gateway (the web
 * login's pages and its redirect URI). */
TEST(config_public_url)
{
	/* The "http" object, and the publicUrl it makes (NULL: none). */
	static const char *const good[][2] = {
		{ "{\"publicUrl\": \"https://mcp.example.com/gw//\"}", "https://mcp.example.com/gw" },
		{ "{\"publicUrl\": \"http://127.0.0.1:8080\"}", "http://127.0.0.1:8080" },
		/* Unset: the origin of the resource, else none. */
		{ "{\"auth\": {\"resource\": \"https://mcp.example.com:8443/mcp\", "
		  "\"authorizationServers\": [\"https://as.example.com\"]}}", "https://mcp.example.com:8443" },
		{ "{}", NULL },
	};
	for (size_t i = 0; i < SL_COUNT(good); i++) {
		char *text = sl_printf("{\"mcpServers\": {}, \"sluice\": {\"http\": %s}}", good[i][0]);
		struct sl_config *c = parse(text);
		CHECK(c != NULL);
		if (c && good[i][1])
			CHECK_STR(c->http.public_url, good[i][1]);
		else if (c)
			CHECK(c->http.public_url == NULL);
		sl_config_unref(c);
		free(text);
	}
	static const char *const bad[][2] = {
		{ "\"http://mcp.example.com\"", "loopback" },
		{ "\"https://mcp.example.com/?a=b\"", "query" },
		{ "\"https://mcp.example.com/#x\"", "fragment" },
		{ "\"mcp.example.com\"", "absolute" },
		{ "3", NULL },
	};
	for (size_t i = 0; i < SL_COUNT(bad); i++) {
		char *text = sl_printf("{\"mcpServers\": {}, \"sluice\": {\"http\": {\"publicUrl\": "
				       "%s}}}", bad[i][0]);
		parse_fails(text, "sluice.http.publicUrl", bad[i][1]);
		free(text);
	}
}

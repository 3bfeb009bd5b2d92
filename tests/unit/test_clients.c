/* Unit tests of src/cli/clients.c: MCP client files -> sluice entries,
 * the identity that finds duplicates, the install rewrite, and the bounds
 * on hostile files. */
#include "unit.h"
#include "cli/clients.h"
#include "core/buf.h"
#include "core/json.h"

#include <stdio.h>
#include <stdlib.h>

static int parse(enum sl_client_kind k, const char *text, const char *project,
		 struct sl_client_set *set, struct sl_err *err)
{
	struct sl_client_ctx cx = { .home = "/home/me", .project = project };
	return sl_client_parse(k, "f.json", text, strlen(text), &cx, set, err);
}

/* The entry of server i as compact JSON (caller frees). */
static char *entry(const struct sl_client_set *set, size_t i)
{
	return set->v[i].entry ? yyjson_mut_val_write(set->v[i].entry, 0, NULL) : NULL;
}

#define ENTRY_IS(set, i, want)                  \
	do {                                    \
		char *e_ = entry(set, i);       \
		CHECK_STR(e_, want);            \
		free(e_);                       \
	} while (0)

TEST(clients_vscode_inputs_and_workspace)
{
	static const char f[] =
		"{ // comments are allowed\n"
		"  \"inputs\": [{\"type\": \"promptString\", \"id\": \"gh-pat\", \"password\": true}],\n"
		"  \"servers\": {\n"
		"    \"github\": {\"type\": \"stdio\", \"command\": \"npx\", \"args\": [\"-y\", \"gh\"],\n"
		"               \"env\": {\"TOKEN\": \"${input:gh-pat}\", \"HOME_DIR\": \"${env:HOME}\"}},\n"
		"    \"fetch\": {\"command\": \"uvx\", \"cwd\": \"${workspaceFolder}/x\"},\n"
		"    \"docs\": {\"type\": \"http\", \"url\": \"https://d.example/mcp\"},\n"
		"  }\n}";
	struct sl_client_set set;
	struct sl_err err;

	CHECK_INT(parse(SL_CLIENT_VSCODE, f, "/work/p", &set, &err), 0);
	CHECK_INT(set.n, 3);
	ENTRY_IS(&set, 0, "{\"command\":\"npx\",\"args\":[\"-y\",\"gh\"],"
			  "\"env\":{\"TOKEN\":\"${GH_PAT}\",\"HOME_DIR\":\"${HOME}\"}}");
	CHECK(set.v[0].notes && strstr(set.v[0].notes, "${input:gh-pat} -> ${GH_PAT}"));
	ENTRY_IS(&set, 1, "{\"command\":\"uvx\",\"cwd\":\"/work/p/x\"}");
	ENTRY_IS(&set, 2, "{\"url\":\"https://d.example/mcp\"}");
	/* The variables install passes on, with the client's own spelling. */
	CHECK_INT(set.nvars, 2);
	CHECK_STR(set.vars[0].var, "GH_PAT");
	CHECK_STR(set.vars[0].ref, "${input:gh-pat}");
	CHECK_STR(set.vars[1].var, "HOME");
	CHECK(set.vars[1].ref == NULL);
	sl_client_set_dispose(&set);

	/* The user file has no workspace: that server alone is refused. */
	CHECK_INT(parse(SL_CLIENT_VSCODE, f, NULL, &set, &err), 0);
	CHECK(set.v[0].entry && !set.v[1].entry && set.v[2].entry);
	CHECK(set.v[1].problem && strstr(set.v[1].problem, "${workspaceFolder} outside a project"));
	sl_client_set_dispose(&set);
}

TEST(clients_claude_code_projects_and_defaults)
{
	static const char f[] =
		"{\"numStartups\": 3, \"mcpServers\": {\"a\": {\"type\": \"sse\", \"url\": "
		"\"https://s.example/sse\", \"headers\": {\"Authorization\": \"Bearer ${TOK}\"}}},"
		" \"projects\": {\"/home/me/web\": {\"mcpServers\": {\"db\": {\"command\": \"pg\","
		" \"args\": [\"${DB:-postgres://localhost}\"]}}}, \"/x\": {\"allowedTools\": []}}}";
	struct sl_client_set set;
	struct sl_err err;

	CHECK_INT(parse(SL_CLIENT_CLAUDE_CODE, f, NULL, &set, &err), 0);
	CHECK_INT(set.n, 2);
	ENTRY_IS(&set, 0, "{\"type\":\"sse\",\"url\":\"https://s.example/sse\","
			  "\"headers\":{\"Authorization\":\"Bearer ${TOK}\"}}");
	/* A reference is no literal secret. */
	CHECK(set.v[0].notes == NULL);
	CHECK(set.v[0].scope == NULL);
	ENTRY_IS(&set, 1, "{\"command\":\"pg\",\"args\":[\"${DB}\"]}");
	CHECK_STR(set.v[1].scope, "project /home/me/web");
	CHECK(set.v[1].notes && strstr(set.v[1].notes, "the default of ${DB} dropped"));
	sl_client_set_dispose(&set);
}

TEST(clients_windsurf_zed_desktop_shapes)
{
	struct sl_client_set set;
	struct sl_err err;

	CHECK_INT(parse(SL_CLIENT_WINDSURF,
			"{\"mcpServers\": {\"r\": {\"serverUrl\": \"https://w.example/mcp\"},"
			" \"off\": {\"command\": \"x\", \"disabled\": true}}}", NULL, &set, &err), 0);
	ENTRY_IS(&set, 0, "{\"url\":\"https://w.example/mcp\"}");
	ENTRY_IS(&set, 1, "{\"command\":\"x\",\"disabled\":true}");
	sl_client_set_dispose(&set);

	CHECK_INT(parse(SL_CLIENT_ZED,
			"// settings\n{\"context_servers\": {"
			"\"old\": {\"command\": {\"path\": \"/bin/m\", \"args\": [\"-s\"], \"env\": {\"A\": \"b\"}}},"
			"\"new\": {\"source\": \"custom\", \"command\": \"m\", \"args\": [], \"enabled\": false},"
			"\"ext\": {\"source\": \"extension\", \"settings\": {}},}}", NULL, &set, &err), 0);
	CHECK_INT(set.n, 3);
	ENTRY_IS(&set, 0, "{\"command\":\"/bin/m\",\"args\":[\"-s\"],\"env\":{\"A\":\"b\"}}");
	ENTRY_IS(&set, 1, "{\"command\":\"m\",\"args\":[],\"disabled\":true}");
	CHECK(set.v[2].client_only && !set.v[2].entry && !set.v[2].problem);
	sl_client_set_dispose(&set);

	/* Claude Desktop: a literal token is kept, and said. */
	CHECK_INT(parse(SL_CLIENT_CLAUDE_DESKTOP,
			"{\"mcpServers\": {\"gh\": {\"command\": \"npx\", \"env\": "
			"{\"GITHUB_TOKEN\": \"ghp_x\", \"LANG\": \"C\"}}}}", NULL, &set, &err), 0);
	ENTRY_IS(&set, 0, "{\"command\":\"npx\",\"env\":{\"GITHUB_TOKEN\":\"ghp_x\",\"LANG\":\"C\"}}");
	CHECK(set.v[0].notes && strstr(set.v[0].notes, "env.GITHUB_TOKEN: a literal secret"));
	CHECK(!strstr(set.v[0].notes, "ghp_x"));
	CHECK(!strstr(set.v[0].notes, "LANG"));
	sl_client_set_dispose(&set);
}

TEST(clients_refused_servers_say_why)
{
	static const struct {
		const char *server, *why;
	} cases[] = {
		{ "{\"command\": \"x\", \"url\": \"https://a\"}", "both a command and a url" },
		{ "{\"args\": []}", "neither a command nor a url" },
		{ "{\"command\": \"x\", \"args\": \"-v\"}", "args must be an array of strings" },
		{ "{\"command\": \"x\", \"env\": {\"A\": 1}}", "env.A must be a string" },
		{ "{\"command\": \"${command:pick}\"}", "${command:pick} is a reference sluice cannot" },
		{ "{\"command\": \"x\", \"args\": [\"${A:-${B}}\"]}", "a nested reference" },
		{ "{\"command\": \"x\", \"args\": [\"${OPEN\"]}", "an unterminated ${" },
		{ "{\"command\": \"a\\u0000b\"}", "command holds a NUL character" },
		{ "{\"url\": \"ftp://x\"}", "url must start with http:// or https://" },
		{ "{\"url\": \"https://x\", \"type\": \"ws\"}", "a url with type \"ws\"" },
		{ "{\"command\": \"x\", \"type\": \"http\"}", "a command with a type other than stdio" },
		{ "[1]", "not an object" },
	};
	for (size_t i = 0; i < SL_COUNT(cases); i++) {
		char *f = sl_printf("{\"mcpServers\": {\"s\": %s}}", cases[i].server);
		struct sl_client_set set;
		struct sl_err err;
		CHECK_INT(parse(SL_CLIENT_CURSOR, f, NULL, &set, &err), 0);
		CHECK_INT(set.n, 1);
		CHECK(set.v[0].entry == NULL);
		CHECK(set.v[0].problem && strstr(set.v[0].problem, cases[i].why));
		if (!set.v[0].problem || !strstr(set.v[0].problem, cases[i].why))
			printf("  case %zu: %s\n", i, set.v[0].problem ? set.v[0].problem : "(none)");
		sl_client_set_dispose(&set);
		free(f);
	}
}

TEST(clients_hostile_names_are_escaped_or_refused)
{
	struct sl_client_set set;
	struct sl_err err;
	char *f, *big;

	/* A forged table line and a terminal escape in a name: refused, and
	 * what is shown holds no control character. */
	CHECK_INT(parse(SL_CLIENT_CURSOR,
			"{\"mcpServers\": {\"x\\nfake  cursor  /etc/passwd  added\\u001b[2J\": "
			"{\"command\": \"x\"}, \"my server (v2)\": {\"command\": \"y\"}}}",
			NULL, &set, &err), 0);
	CHECK_INT(set.n, 2);
	CHECK(set.v[0].entry == NULL);
	CHECK(strstr(set.v[0].problem, "control characters"));
	CHECK(!strchr(set.v[0].shown, '\n') && !strchr(set.v[0].shown, '\x1b'));
	CHECK(strstr(set.v[0].shown, "\\n") && strstr(set.v[0].shown, "\\x1b"));
	/* Spaces and brackets: renamed to a sluice name, and said. */
	CHECK_STR(set.v[1].name, "my-server-v2-");
	CHECK(set.v[1].entry && set.v[1].notes && strstr(set.v[1].notes, "renamed from"));
	sl_client_set_dispose(&set);

	/* A name of 300 bytes: refused, shown cut. */
	big = sl_alloc(301);
	memset(big, 'n', 300);
	f = sl_printf("{\"mcpServers\": {\"%s\": {\"command\": \"x\"}}}", big);
	CHECK_INT(parse(SL_CLIENT_CURSOR, f, NULL, &set, &err), 0);
	CHECK(set.v[0].entry == NULL && strstr(set.v[0].problem, "a name of 300 bytes"));
	CHECK(strlen(set.v[0].shown) < 100);
	CHECK(strlen(set.v[0].name) == 64);
	sl_client_set_dispose(&set);
	free(f);
	free(big);
}

TEST(clients_hostile_files_are_refused_whole)
{
	struct sl_client_set set;
	struct sl_err err;
	struct sl_client_ctx cx = { 0 };
	size_t n = SL_CLIENT_MAX_BYTES + 1;
	char *big = sl_alloc(n + 1), *deep;
	struct sl_buf b;

	memset(big, ' ', n);
	big[0] = '{';
	big[n - 1] = '}';
	CHECK_INT(sl_client_parse(SL_CLIENT_ZED, "f.json", big, n, &cx, &set, &err), SL_ERR_TOO_LARGE);
	CHECK(strstr(err.msg, "over 4194304 bytes"));
	free(big);

	deep = sl_alloc(1000);
	strcpy(deep, "{\"mcpServers\": ");
	for (int i = 0; i < 200; i++)
		strcat(deep, "[");
	for (int i = 0; i < 200; i++)
		strcat(deep, "]");
	strcat(deep, "}");
	CHECK_INT(parse(SL_CLIENT_CURSOR, deep, NULL, &set, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, "depth limit"));
	free(deep);

	CHECK_INT(parse(SL_CLIENT_CURSOR, "{\"mcpServers\": {\"a\": {}", NULL, &set, &err), SL_ERR_INVALID);
	CHECK(strncmp(err.msg, "f.json:1:", 9) == 0);
	CHECK_INT(parse(SL_CLIENT_CURSOR, "[]", NULL, &set, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, "not a JSON object"));
	CHECK_INT(parse(SL_CLIENT_VSCODE, "{\"servers\": []}", NULL, &set, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, "servers must be an object"));

	/* More servers than the bound. */
	sl_buf_init(&b, 1 << 20);
	CHECK_INT(sl_buf_appends(&b, "{\"mcpServers\": {"), 0);
	for (int i = 0; i <= SL_CLIENT_MAX_SERVERS; i++)
		CHECK_INT(sl_buf_printf(&b, "%s\"s%d\": {\"command\": \"x\"}", i ? "," : "", i), 0);
	CHECK_INT(sl_buf_appends(&b, "}}"), 0);
	CHECK_INT(parse(SL_CLIENT_CURSOR, b.data, NULL, &set, &err), SL_ERR_TOO_LARGE);
	CHECK(strstr(err.msg, "over 1000 servers"));
	sl_buf_dispose(&b);
}

TEST(clients_identity)
{
	struct sl_client_set a, b;
	struct sl_err err;
	char *ia, *ib;

	/* Key order, "streamable-http" and an empty headers object make no
	 * difference; a header does. */
	CHECK_INT(parse(SL_CLIENT_CLAUDE_CODE,
			"{\"mcpServers\": {\"x\": {\"command\": \"c\", \"env\": {\"A\": \"1\", \"B\": \"2\"}},"
			" \"y\": {\"type\": \"streamable-http\", \"url\": \"https://u\", \"headers\": {}},"
			" \"z\": {\"url\": \"https://u\", \"headers\": {\"K\": \"v\"}}}}", NULL, &a, &err), 0);
	CHECK_INT(parse(SL_CLIENT_CURSOR,
			"{\"mcpServers\": {\"x\": {\"env\": {\"B\": \"2\", \"A\": \"1\"}, \"command\": \"c\", \"args\": []},"
			" \"y\": {\"url\": \"https://u\"}}}", NULL, &b, &err), 0);
	ia = sl_client_identity(a.v[0].entry);
	ib = sl_client_identity(b.v[0].entry);
	CHECK_STR(ia, ib);
	free(ia);
	free(ib);
	ia = sl_client_identity(a.v[1].entry);
	ib = sl_client_identity(b.v[1].entry);
	CHECK_STR(ia, ib);
	free(ib);
	ib = sl_client_identity(a.v[2].entry);
	CHECK(strcmp(ia, ib) != 0);
	free(ia);
	free(ib);
	sl_client_set_dispose(&a);
	sl_client_set_dispose(&b);
}

static char *install(enum sl_client_kind k, const char *text, const char *url,
		     const struct sl_client_set *refs, struct sl_err *err)
{
	struct sl_client_install in = { "/usr/bin/sluice", "/home/me/s.json", url, refs };
	char *out = NULL;
	size_t len;
	yyjson_doc *d;

	if (sl_client_install_text(k, text, strlen(text), &in, &out, &len, err) < 0)
		return NULL;
	/* Back to one line, for comparing. */
	d = yyjson_read(out, len, 0);
	free(out);
	out = yyjson_write(d, 0, NULL);
	yyjson_doc_free(d);
	return out;
}

TEST(clients_install_rewrite)
{
	static const char vs[] =
		"{\"inputs\": [{\"id\": \"t\"}], \"servers\": {\"a\": {\"command\": \"x\", \"env\": "
		"{\"T\": \"${input:t}\", \"H\": \"${env:HOST}\"}}}, \"other\": 1}";
	struct sl_client_set set;
	struct sl_err err;
	char *out;

	CHECK_INT(parse(SL_CLIENT_VSCODE, vs, NULL, &set, &err), 0);
	out = install(SL_CLIENT_VSCODE, vs, NULL, &set, &err);
	CHECK_STR(out, "{\"inputs\":[{\"id\":\"t\"}],\"servers\":{\"sluice\":{\"type\":\"stdio\","
		       "\"command\":\"/usr/bin/sluice\",\"args\":[\"serve\",\"--config\","
		       "\"/home/me/s.json\"],\"env\":{\"T\":\"${input:t}\",\"HOST\":\"${env:HOST}\"}}},"
		       "\"other\":1}");
	free(out);
	sl_client_set_dispose(&set);

	out = install(SL_CLIENT_WINDSURF, "{\"mcpServers\": {}}", "http://127.0.0.1:8370/mcp", NULL, &err);
	CHECK_STR(out, "{\"mcpServers\":{\"sluice\":{\"serverUrl\":\"http://127.0.0.1:8370/mcp\"}}}");
	free(out);
	out = install(SL_CLIENT_CLAUDE_CODE,
		      "{\"projects\": {\"/p\": {\"mcpServers\": {\"a\": {}}, \"k\": 2}}}",
		      "http://h/mcp", NULL, &err);
	/* A project's own list stays Claude Code's: it is not the user-wide
	 * config's to take (docs/IMPORT.md, project servers). */
	CHECK_STR(out, "{\"projects\":{\"/p\":{\"mcpServers\":{\"a\":{}},\"k\":2}},\"mcpServers\":"
		       "{\"sluice\":{\"type\":\"http\",\"url\":\"http://h/mcp\"}}}");
	free(out);
	out = install(SL_CLIENT_ZED, "/* c */ {\"context_servers\": {\"e\": {\"settings\": {}},"
		      " \"m\": {\"command\": \"x\"}}, \"theme\": \"t\",}", NULL, NULL, &err);
	CHECK_STR(out, "{\"context_servers\":{\"sluice\":{\"command\":\"/usr/bin/sluice\",\"args\":"
		       "[\"serve\",\"--config\",\"/home/me/s.json\"]},\"e\":{\"settings\":{}}},"
		       "\"theme\":\"t\"}");
	free(out);
	/* An extension's server named "sluice" would be replaced: refused. */
	CHECK(install(SL_CLIENT_ZED, "{\"context_servers\": {\"sluice\": {\"settings\": {}}}}",
		      NULL, NULL, &err) == NULL);
	CHECK(strstr(err.msg, "extension's server named \"sluice\""));
	CHECK(install(SL_CLIENT_CLAUDE_DESKTOP, "{}", "http://h/mcp", NULL, &err) == NULL);
	CHECK(strstr(err.msg, "takes no remote server"));
	CHECK(install(SL_CLIENT_CURSOR, "{\"mcpServers\": ", NULL, NULL, &err) == NULL);
}

TEST(clients_names)
{
	for (int k = 0; k < SL_CLIENT_COUNT; k++)
		CHECK_INT(sl_client_by_name(sl_client_name((enum sl_client_kind)k)), k);
	CHECK_INT(sl_client_by_name("emacs"), -1);
	CHECK_STR(sl_client_key(SL_CLIENT_ZED), "context_servers");
	CHECK_STR(sl_client_key(SL_CLIENT_VSCODE), "servers");
}

/* Claude Code's record of a project's .mcp.json servers: disabled wins,
 * enabled or enableAllProjectMcpServers approves, anything else is not
 * approved; only the project's own key counts in ~/.claude.json. */
TEST(clients_claude_code_approvals)
{
	static const char claude[] =
		"{\"projects\": {\"/p\": {\"enabledMcpjsonServers\": [\"a\", \"r\", 7],"
		" \"disabledMcpjsonServers\": [\"r\"]},"
		" \"/other\": {\"enableAllProjectMcpServers\": true}}}";
	static const char all[] = "{\"enableAllProjectMcpServers\": true}";
	static const char not_array[] = "{\"enabledMcpjsonServers\": \"a\"}";
	struct sl_client_approvals a;
	struct sl_err err;
	char *big;
	size_t n;

	sl_client_approvals_init(&a);
	CHECK_INT(sl_client_approvals_add(&a, "c", claude, strlen(claude), "/p", &err), 0);
	CHECK_INT(sl_client_approval(&a, "a"), SL_CLIENT_APPROVED);
	CHECK_INT(sl_client_approval(&a, "r"), SL_CLIENT_REJECTED);
	CHECK_INT(sl_client_approval(&a, "u"), SL_CLIENT_UNAPPROVED);
	/* A settings.json at its top level: enableAll approves the rest, never r. */
	CHECK_INT(sl_client_approvals_add(&a, "s", all, strlen(all), NULL, &err), 0);
	CHECK_INT(sl_client_approval(&a, "u"), SL_CLIENT_APPROVED);
	CHECK_INT(sl_client_approval(&a, "r"), SL_CLIENT_REJECTED);
	sl_client_approvals_dispose(&a);

	/* Another project's record says nothing about this one. */
	sl_client_approvals_init(&a);
	CHECK_INT(sl_client_approvals_add(&a, "c", claude, strlen(claude), "/q", &err), 0);
	CHECK_INT(sl_client_approval(&a, "a"), SL_CLIENT_UNAPPROVED);
	/* Hostile records: a list that is no array, or over the bound, is
	 * refused whole, leaving what was read. */
	CHECK(sl_client_approvals_add(&a, "c", not_array, strlen(not_array), NULL, &err) < 0);
	CHECK(strstr(err.msg, "must be an array"));
	big = sl_alloc(16 + 4 * (SL_CLIENT_MAX_SERVERS + 1) + 4);
	n = (size_t)sprintf(big, "{\"enabledMcpjsonServers\": [");
	for (int i = 0; i <= SL_CLIENT_MAX_SERVERS; i++)
		n += (size_t)sprintf(big + n, "%s\"\"", i ? "," : "");
	n += (size_t)sprintf(big + n, "]}");
	CHECK_INT(sl_client_approvals_add(&a, "c", big, n, NULL, &err), SL_ERR_TOO_LARGE);
	CHECK_INT(sl_client_approval(&a, ""), SL_CLIENT_UNAPPROVED);
	free(big);
	sl_client_approvals_dispose(&a);
}

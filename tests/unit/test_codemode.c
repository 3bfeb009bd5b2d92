/* Unit tests of src/gateway/codemode.c: how the host resolves the names a
 * program uses (tools.<server>.<tool>, raw names or identifiers) against
 * the upstreams and the catalog. Upstreams are built by hand: only their
 * names are read. */
#include "unit.h"

#include "auth/caller.h"
#include "config/config.h"
#include "fixture.h"
#include "gateway/codemode.h"
#include "gateway/view.h"
#include "pipeline/gen.h"

#include <stdio.h>

struct names {
	struct sl_upstream u1, u2;
	struct sl_upstream *ups[2];
	struct sl_entry entries[3];
	struct sl_gateway gw;
	struct sl_view v;             /* the whole catalog, or a profile's */
	struct sl_map own;            /* git-hub's tools by name (sl_catalog_find) */
};

/* git-hub has get-x and get.x (both tools.git_hub.get_x) and list;
 * 1password has no tools. */
static void names_init(struct names *n)
{
	static char n1[] = "git-hub", n2[] = "1password";
	memset(n, 0, sizeof(*n));
	n->u1.name = n1;
	n->u2.name = n2;
	n->ups[0] = &n->u1;
	n->ups[1] = &n->u2;
	n->gw.ups = n->ups;
	n->gw.nups = 2;
	n->entries[0] = (struct sl_entry){ .up = &n->u1, .name = "get-x" };
	n->entries[1] = (struct sl_entry){ .up = &n->u1, .name = "get.x" };
	n->entries[2] = (struct sl_entry){ .up = &n->u1, .name = "list-all" };
	n->gw.catalog.tools.v = n->entries;
	n->gw.catalog.tools.n = 3;
	sl_map_init(&n->own);
	for (size_t i = 0; i < 3; i++)
		sl_map_put(&n->own, n->entries[i].name, &n->entries[i]);
	sl_map_init(&n->gw.catalog.tools.by_server);
	sl_map_put(&n->gw.catalog.tools.by_server, n1, &n->own);
	n->v.gw = &n->gw;
}

static void names_dispose(struct names *n)
{
	sl_map_dispose(&n->own);
	sl_map_dispose(&n->gw.catalog.tools.by_server);
}

static bool refused(struct names *n, const char *server, const char *tool, const char *want)
{
	struct sl_sandbox_tool t;
	struct sl_err err = { "" };
	int rc = sl_codemode_resolve(&n->v, server, tool, &t, &err);
	if (rc != SL_ERR_NOT_FOUND || !strstr(err.msg, want)) {
		printf("  %s.%s: rc %d, \"%s\", want \"%s\"\n", server, tool, rc, err.msg, want);
		return false;
	}
	return true;
}

static bool resolved(struct names *n, const char *server, const char *tool,
		     struct sl_upstream *want_up, const char *want_tool)
{
	struct sl_sandbox_tool t = { 0 };
	struct sl_err err = { "" };
	if (sl_codemode_resolve(&n->v, server, tool, &t, &err) != SL_OK || t.server != want_up ||
	    strcmp(t.server_name, want_up->name) != 0 || strcmp(t.tool, want_tool) != 0) {
		printf("  %s.%s: \"%s\"\n", server, tool, err.msg);
		return false;
	}
	return true;
}

TEST(codemode_resolve_names)
{
	struct names n;
	names_init(&n);
	/* raw names and identifiers both reach a tool, by its raw names */
	CHECK(resolved(&n, "git-hub", "get-x", &n.u1, "get-x"));
	CHECK(resolved(&n, "git_hub", "list_all", &n.u1, "list-all"));
	CHECK(resolved(&n, "git_hub", "get.x", &n.u1, "get.x"));
	CHECK(sl_codemode_server(&n.v, "_1password") == &n.u2);
	CHECK(sl_codemode_server(&n.v, "1password") == &n.u2);
	names_dispose(&n);
}

TEST(codemode_resolve_refusals)
{
	struct names n;
	names_init(&n);
	CHECK(refused(&n, "git_hub", "nope", "server 'git-hub' has no tool 'nope'"));
	CHECK(refused(&n, "_1password", "get-x", "server '1password' has no tool 'get-x'"));
	CHECK(refused(&n, "git-hub", "get_x", "tools.git-hub.get_x is ambiguous"));
	CHECK(refused(&n, "git-hub", "get_x", "use tools[\"git-hub\"][\"raw-name\"]"));
	CHECK(refused(&n, "GIT-HUB", "get-x", "unknown server 'GIT-HUB'"));
	CHECK(sl_codemode_server(&n.v, "GIT-HUB") == NULL);
	names_dispose(&n);
}

/* A profile's view (docs/PROFILES.md): only its servers and tools exist,
 * a renamed tool answers to its new name only, and an identifier that was
 * ambiguous in the whole catalog may not be in the profile. */
TEST(codemode_resolve_in_a_profile)
{
	static char *servers[] = { "git-*", NULL };
	static char *tools[] = { "git-hub.get-x", "git-hub.list-*", NULL };
	static struct sl_kv rename[] = { { "git-hub.list-all", "everything" } };
	struct sl_profile prof = { .name = "ops", .servers = servers, .tools = tools,
				   .rename = rename, .nrename = 1 };
	struct names n;
	names_init(&n);
	n.v.profile = &prof;
	CHECK(resolved(&n, "git_hub", "everything", &n.u1, "list-all"));
	CHECK(refused(&n, "git_hub", "list_all", "server 'git-hub' has no tool 'list_all'"));
	CHECK(refused(&n, "git-hub", "list-all", "server 'git-hub' has no tool 'list-all'"));
	CHECK(refused(&n, "git-hub", "get.x", "has no tool 'get.x'"));
	CHECK(resolved(&n, "git_hub", "get_x", &n.u1, "get-x"));
	CHECK(refused(&n, "1password", "get-x", "unknown server '1password'"));
	CHECK(sl_view_local(&n.v, &n.entries[2]) && !strcmp(sl_view_local(&n.v, &n.entries[2]), "everything"));
	CHECK(sl_view_local(&n.v, &n.entries[1]) == NULL);
	CHECK(sl_view_admits(&n.v, "git-hub", "list-new"));
	CHECK(!sl_view_admits(&n.v, "git-hub", "list-all"));
	CHECK(!sl_view_admits(&n.v, "git-hub", "delete"));
	/* A new name another tool of the profile has in the catalog is not
	 * applied: the tool keeps its name, and nothing is shadowed. */
	rename[0].value = "get-x";
	CHECK(resolved(&n, "git-hub", "list-all", &n.u1, "list-all"));
	CHECK(resolved(&n, "git-hub", "get-x", &n.u1, "get-x"));
	CHECK(!strcmp(sl_view_local(&n.v, &n.entries[2]), "list-all"));
	rename[0].value = "everything";
	/* A profile a reload removed shows nothing. */
	n.v.gone = true;
	CHECK(refused(&n, "git_hub", "everything", "unknown server 'git_hub'"));
	names_dispose(&n);
}

/* A tool the policy denies to the program's caller is not there: the same
 * message as a missing tool, and it makes no identifier ambiguous. */
TEST(codemode_resolve_hides_denied_tools)
{
	struct names n;
	struct sl_err err = { "" };
	struct sl_sandbox_tool t;
	struct sl_gen *gen = t_gen_sluice("{\"policy\":{\"rules\":[{\"match\":\"git-hub.get.x\","
					  "\"notWho\":[\"group:sre\"],\"action\":\"deny\"}]}}", &err);
	static const char list[] = "[{\"name\":\"get-x\"},{\"name\":\"get.x\"},{\"name\":\"list-all\"}]";
	yyjson_doc *defs = yyjson_read(list, sizeof(list) - 1, 0);
	struct sl_caller *sre = sl_caller_new("token"), *dev = sl_caller_new("token");
	char missing[200], hidden[200];

	CHECK(gen != NULL && defs != NULL);
	if (!gen || !defs)
		return;
	names_init(&n);
	n.gw.gen = gen;
	for (size_t i = 0; i < 3; i++)
		n.entries[i].def = yyjson_arr_get(yyjson_doc_get_root(defs), i);
	sl_caller_set_subject(sre, NULL, "alice");
	sl_caller_add_group(sre, "sre");
	sl_caller_set_subject(dev, NULL, "bob");

	/* bob (and nobody at all): get.x does not exist, so get_x is get-x. */
	n.v.who = dev;
	CHECK_INT(sl_codemode_resolve(&n.v, "git_hub", "get_x", &t, &err), SL_OK);
	CHECK_STR(t.tool, "get-x");
	CHECK_INT(sl_codemode_resolve(&n.v, "git_hub", "get.x", &t, &err), SL_ERR_NOT_FOUND);
	snprintf(hidden, sizeof(hidden), "%s", err.msg);
	CHECK_INT(sl_codemode_resolve(&n.v, "git_hub", "get,x", &t, &err), SL_ERR_NOT_FOUND);
	snprintf(missing, sizeof(missing), "%s", err.msg);
	/* "did you mean" offers only what bob may call, for either name. */
	CHECK_STR(hidden, "server 'git-hub' has no tool 'get.x'; did you mean 'get_x'?");
	CHECK_STR(missing, "server 'git-hub' has no tool 'get,x'; did you mean 'get_x'?");
	CHECK_INT(sl_codemode_resolve(&n.v, "git_hub", "get.y", &t, &err), SL_ERR_NOT_FOUND);
	CHECK_STR(err.msg, "server 'git-hub' has no tool 'get.y'");
	n.v.who = NULL;
	CHECK_INT(sl_codemode_resolve(&n.v, "git_hub", "get_x", &t, &err), SL_OK);
	/* alice (group sre) sees both, as before. */
	n.v.who = sre;
	CHECK_INT(sl_codemode_resolve(&n.v, "git_hub", "get.x", &t, &err), SL_OK);
	CHECK_STR(t.tool, "get.x");
	CHECK_INT(sl_codemode_resolve(&n.v, "git_hub", "get_x", &t, &err), SL_ERR_NOT_FOUND);
	CHECK(strstr(err.msg, "is ambiguous") != NULL);
	sl_caller_unref(sre);
	sl_caller_unref(dev);
	yyjson_doc_free(defs);
	sl_gen_unref(gen);
	names_dispose(&n);
}

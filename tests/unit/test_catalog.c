/* Unit tests of src/upstream/catalog.c: exposed names, URIs, and collision
 * handling in sl_catalog_rebuild over hand-built upstreams. */
#include "unit.h"

#include "upstream/catalog.h"

#include <stdio.h>
#include <stdlib.h>

static bool valid_exposed(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > SL_EXPOSED_MAX)
		return false;
	for (; *s; s++)
		if (!(('a' <= *s && *s <= 'z') || ('A' <= *s && *s <= 'Z') ||
		      ('0' <= *s && *s <= '9') || *s == '_' || *s == '-'))
			return false;
	return true;
}

TEST(catalog_name_plain)
{
	char out[SL_EXPOSED_MAX + 1];
	sl_catalog_name("github", "create_issue", false, out);
	CHECK_STR(out, "github__create_issue");
	sl_catalog_name("a-b", "C-9", false, out);
	CHECK_STR(out, "a-b__C-9");
}

TEST(catalog_name_sanitised)
{
	char out[SL_EXPOSED_MAX + 1];
	sl_catalog_name("my.server", "get tool/v2", false, out);
	CHECK(valid_exposed(out));
	CHECK(strncmp(out, "my_server__get_tool_v2", 22) == 0);
	sl_catalog_name("s", "caf\xc3\xa9:x", false, out);
	CHECK(valid_exposed(out));
	CHECK(strncmp(out, "s__caf", 6) == 0);
}

TEST(catalog_name_length_limit)
{
	char out[SL_EXPOSED_MAX + 1];
	char tool[300];
	/* "srv__" + 59 = 64: fits exactly, plain. */
	memset(tool, 't', 59);
	tool[59] = '\0';
	sl_catalog_name("srv", tool, false, out);
	CHECK_INT(strlen(out), 64);
	CHECK(strncmp(out, "srv__", 5) == 0 && strcmp(out + 5, tool) == 0);
	/* One more: the hash form, still at most 64. */
	memset(tool, 't', 60);
	tool[60] = '\0';
	sl_catalog_name("srv", tool, false, out);
	CHECK(strlen(out) <= SL_EXPOSED_MAX);
	CHECK(valid_exposed(out));
	CHECK(strncmp(out, "srv__ttt", 8) == 0);
	/* Very long inputs. */
	memset(tool, 'x', 299);
	tool[299] = '\0';
	sl_catalog_name(tool, tool, false, out);
	CHECK(strlen(out) <= SL_EXPOSED_MAX);
	CHECK(valid_exposed(out));
}

TEST(catalog_name_long_names_stay_unique)
{
	char a[SL_EXPOSED_MAX + 1], b[SL_EXPOSED_MAX + 1], c[SL_EXPOSED_MAX + 1];
	char t1[200], t2[200];
	memset(t1, 'q', 150);
	t1[150] = '\0';
	memcpy(t2, t1, sizeof(t1));
	t1[149] = '1';
	t2[149] = '2';
	sl_catalog_name("server", t1, false, a);
	sl_catalog_name("server", t2, false, b);
	CHECK(strlen(a) <= SL_EXPOSED_MAX && strlen(b) <= SL_EXPOSED_MAX);
	CHECK(strcmp(a, b) != 0);
	/* Long server names differing at their end, too. */
	memset(t1, 's', 120);
	t1[120] = '\0';
	memcpy(t2, t1, 121);
	t2[119] = 'S';
	sl_catalog_name(t1, "tool", false, a);
	sl_catalog_name(t2, "tool", false, b);
	CHECK(strcmp(a, b) != 0);
	/* The split point matters: ("ab","c") vs ("a","bc") in hash form. */
	sl_catalog_name("ab", "c", true, a);
	sl_catalog_name("a", "bc", true, b);
	CHECK(strcmp(a, b) != 0);
	sl_catalog_name("ab", "c", true, c);
	CHECK_STR(a, c);
}

TEST(catalog_name_suffix_stable)
{
	char a[SL_EXPOSED_MAX + 1], b[SL_EXPOSED_MAX + 1], p[SL_EXPOSED_MAX + 1];
	sl_catalog_name("a.b", "x", true, a);
	sl_catalog_name("a.b", "x", true, b);
	CHECK_STR(a, b);
	CHECK(valid_exposed(a));
	sl_catalog_name("a.b", "x", false, p);
	CHECK(strcmp(a, p) != 0);
	/* The suffix form keeps the readable prefix and adds "_" + 8 hex. */
	CHECK(strncmp(a, "a_b__x_", 7) == 0);
	CHECK_INT(strlen(a), 7 + 8);
	for (size_t i = 7; i < strlen(a); i++)
		CHECK(strchr("0123456789abcdef", a[i]) != NULL);
	/* Names that sanitise alike get different suffixes. */
	sl_catalog_name("a_b", "x", true, b);
	CHECK(strcmp(a, b) != 0);
}

TEST(catalog_uri_round_trip)
{
	const char *origs[] = { "file:///home/u/notes.md", "https://example.com/a/b?c=d",
				"db://x/y/z", "plain", "", "a/b/c" };
	for (size_t i = 0; i < SL_COUNT(origs); i++) {
		char *u = sl_catalog_uri("my-srv.1", origs[i]);
		char *server = NULL;
		const char *orig = NULL;
		CHECK(strncmp(u, SL_URI_PREFIX "my-srv.1/", strlen(SL_URI_PREFIX) + 9) == 0);
		CHECK(sl_catalog_split_uri(u, &server, &orig));
		CHECK_STR(server, "my-srv.1");
		CHECK_STR(orig, origs[i]);
		free(server);
		free(u);
	}
}

TEST(catalog_split_uri_rejects)
{
	char *server = NULL;
	const char *orig = NULL;
	CHECK(!sl_catalog_split_uri("file:///x", &server, &orig));
	CHECK(!sl_catalog_split_uri("sluice:///x", &server, &orig));
	CHECK(!sl_catalog_split_uri("sluice://srv", &server, &orig));
	CHECK(!sl_catalog_split_uri("sluice:/srv/x", &server, &orig));
	CHECK(!sl_catalog_split_uri("SLUICE://srv/x", &server, &orig));
	CHECK(!sl_catalog_split_uri("", &server, &orig));
	CHECK(!sl_catalog_split_uri("xsluice://srv/x", &server, &orig));
	CHECK(server == NULL);
	CHECK(orig == NULL);
}

/* A hand-built upstream with tools parsed from JSON. */
struct fake_up {
	struct sl_upstream u;
	struct sl_server_config cfg;
	yyjson_doc *doc;
	yyjson_val *items[8];
};

static void fake_init(struct fake_up *f, const char *name, const char *tools_json)
{
	yyjson_val *a, *it;
	size_t i, n;
	memset(f, 0, sizeof(*f));
	f->u.name = (char *)name;
	f->doc = yyjson_read(tools_json, strlen(tools_json), 0);
	CHECK(f->doc != NULL);
	a = yyjson_doc_get_root(f->doc);
	yyjson_arr_foreach(a, i, n, it) {
		if (i < SL_COUNT(f->items))
			f->items[f->u.tools.n++] = it;
	}
	f->u.tools.items = f->items;
}

static void fake_dispose(struct fake_up *f)
{
	yyjson_doc_free(f->doc);
}

TEST(catalog_rebuild_plain_names)
{
	struct fake_up a, b;
	struct sl_upstream *ups[2];
	struct sl_catalog c;
	const struct sl_entry *e;

	fake_init(&a, "gh", "[{\"name\":\"create_issue\"},{\"name\":\"list\"}]");
	fake_init(&b, "fs", "[{\"name\":\"read\"},{\"name\":\"list\"}]");
	ups[0] = &a.u;
	ups[1] = &b.u;
	sl_catalog_init(&c);
	CHECK(sl_catalog_rebuild(&c, ups, 2));
	CHECK_INT(c.tools.n, 4);
	CHECK_INT(c.prompts.n, 0);
	e = sl_catalog_tool(&c, "gh__list");
	CHECK(e != NULL && e->up == &a.u && strcmp(e->name, "list") == 0);
	e = sl_catalog_tool(&c, "fs__list");
	CHECK(e != NULL && e->up == &b.u && e->def == b.items[1]);
	CHECK(sl_catalog_tool(&c, "fs__create_issue") == NULL);
	e = sl_catalog_find(&c, "gh", "create_issue");
	CHECK(e != NULL && strcmp(e->exposed, "gh__create_issue") == 0);
	CHECK(sl_catalog_find(&c, "gh", "read") == NULL);

	/* Same input: unchanged, version not bumped. */
	{
		uint64_t v = c.version;
		CHECK(!sl_catalog_rebuild(&c, ups, 2));
		CHECK(c.version == v);
		/* Dropping an upstream changes the set. */
		CHECK(sl_catalog_rebuild(&c, ups, 1));
		CHECK(c.version == v + 1);
		CHECK_INT(c.tools.n, 2);
		CHECK(sl_catalog_tool(&c, "fs__read") == NULL);
	}
	sl_catalog_dispose(&c);
	fake_dispose(&a);
	fake_dispose(&b);
}

TEST(catalog_rebuild_collision_never_shadows)
{
	struct fake_up a, b, o;
	struct sl_upstream *ups[3];
	struct sl_catalog c;
	const struct sl_entry *ea, *eb;
	char na[SL_EXPOSED_MAX + 1], nb[SL_EXPOSED_MAX + 1];

	fake_init(&a, "a.b", "[{\"name\":\"x\"}]");
	fake_init(&b, "a_b", "[{\"name\":\"x\"}]");
	fake_init(&o, "other", "[{\"name\":\"x\"}]");
	ups[0] = &a.u;
	ups[1] = &b.u;
	ups[2] = &o.u;
	sl_catalog_init(&c);
	CHECK(sl_catalog_rebuild(&c, ups, 3));
	CHECK_INT(c.tools.n, 3);
	/* Neither takes the shared plain name. */
	CHECK(sl_catalog_tool(&c, "a_b__x") == NULL);
	ea = sl_catalog_find(&c, "a.b", "x");
	eb = sl_catalog_find(&c, "a_b", "x");
	CHECK(ea != NULL && eb != NULL);
	if (!ea || !eb)
		goto out;
	CHECK(strcmp(ea->exposed, eb->exposed) != 0);
	sl_catalog_name("a.b", "x", true, na);
	sl_catalog_name("a_b", "x", true, nb);
	CHECK_STR(ea->exposed, na);
	CHECK_STR(eb->exposed, nb);
	/* Both reachable by their exposed names. */
	CHECK(sl_catalog_tool(&c, na) == ea && ea->up == &a.u);
	CHECK(sl_catalog_tool(&c, nb) == eb && eb->up == &b.u);
	/* An unrelated tool keeps its plain name. */
	CHECK(sl_catalog_tool(&c, "other__x") != NULL);
out:
	sl_catalog_dispose(&c);
	fake_dispose(&a);
	fake_dispose(&b);
	fake_dispose(&o);
}

TEST(catalog_rebuild_every_exposed_name_unique)
{
	/* Names built to collide in several ways: sanitising, the "__"
	 * separator, and a tool literally named like another's exposed name. */
	struct fake_up a, b, d;
	struct sl_upstream *ups[3];
	struct sl_catalog c;
	int dups = 0;

	fake_init(&a, "a", "[{\"name\":\"b__c\"},{\"name\":\"t.1\"},{\"name\":\"t_1\"}]");
	fake_init(&b, "a__b", "[{\"name\":\"c\"}]");
	fake_init(&d, "d", "[{\"name\":\"x\"}]");
	ups[0] = &a.u;
	ups[1] = &b.u;
	ups[2] = &d.u;
	sl_catalog_init(&c);
	(void)sl_catalog_rebuild(&c, ups, 3);
	CHECK_INT(c.tools.n, 5);
	for (size_t i = 0; i < c.tools.n; i++) {
		CHECK(valid_exposed(c.tools.v[i].exposed));
		CHECK(sl_catalog_tool(&c, c.tools.v[i].exposed) == &c.tools.v[i]);
		for (size_t j = 0; j < i; j++)
			if (strcmp(c.tools.v[i].exposed, c.tools.v[j].exposed) == 0)
				dups++;
	}
	CHECK_INT(dups, 0);
	CHECK(sl_catalog_tool(&c, "d__x") != NULL);
	sl_catalog_dispose(&c);
	fake_dispose(&a);
	fake_dispose(&b);
	fake_dispose(&d);
}

TEST(catalog_rebuild_plain_name_equal_to_hash_form)
{
	/* One tool's name is too long and gets the hash form; another tool's
	 * plain name is exactly that string. Both must stay reachable. */
	char longname[100], hashed[SL_EXPOSED_MAX + 1], json[400];
	struct fake_up a;
	struct sl_upstream *ups[1];
	struct sl_catalog c;
	const struct sl_entry *el, *eh;

	memset(longname, 'L', 80);
	longname[80] = '\0';
	sl_catalog_name("s", longname, false, hashed);
	CHECK(strncmp(hashed, "s__", 3) == 0);
	snprintf(json, sizeof(json), "[{\"name\":\"%s\"},{\"name\":\"%s\"}]", longname, hashed + 3);
	fake_init(&a, "s", json);
	ups[0] = &a.u;
	sl_catalog_init(&c);
	(void)sl_catalog_rebuild(&c, ups, 1);
	CHECK_INT(c.tools.n, 2);
	el = sl_catalog_find(&c, "s", longname);
	eh = sl_catalog_find(&c, "s", hashed + 3);
	CHECK(el != NULL && eh != NULL);
	if (el && eh) {
		CHECK(strcmp(el->exposed, eh->exposed) != 0);
		CHECK(sl_catalog_tool(&c, el->exposed) == el);
		CHECK(sl_catalog_tool(&c, eh->exposed) == eh);
	}
	sl_catalog_dispose(&c);
	fake_dispose(&a);
}

/* "prefix": false: the server's own names, unless taken. */
static void fake_unprefixed(struct fake_up *f)
{
	f->cfg.unprefixed = true;
	f->u.cfg = &f->cfg;
}

static bool reserved_for_test(const char *name)
{
	return strcmp(name, "execute_code") == 0;
}

TEST(catalog_unprefixed_names)
{
	struct fake_up a, b, p;
	struct sl_upstream *ups[3];
	struct sl_catalog c;
	const struct sl_entry *e;
	char name[SL_EXPOSED_MAX + 1], longname[200], json[400];

	memset(longname, 'n', 129);
	longname[129] = '\0';
	snprintf(json, sizeof(json), "[{\"name\":\"test_simple_text\"},{\"name\":\"get.v2\"},"
		 "{\"name\":\"shared\"},{\"name\":\"execute_code\"},{\"name\":\"has space\"},"
		 "{\"name\":\"%s\"}]", longname);
	fake_init(&a, "conf", json);
	fake_unprefixed(&a);
	fake_init(&b, "other", "[{\"name\":\"shared\"},{\"name\":\"x\"}]");
	fake_unprefixed(&b);
	fake_init(&p, "pre", "[{\"name\":\"test_simple_text\"}]");
	ups[0] = &a.u;
	ups[1] = &b.u;
	ups[2] = &p.u;
	sl_catalog_init(&c);
	c.reserved = reserved_for_test;
	CHECK(sl_catalog_rebuild(&c, ups, 3));
	CHECK_INT(c.tools.n, 9);
	/* Kept as they are, dots included (MCP names allow them). */
	e = sl_catalog_tool(&c, "test_simple_text");
	CHECK(e != NULL && e->up == &a.u);
	e = sl_catalog_tool(&c, "get.v2");
	CHECK(e != NULL && e->up == &a.u && strcmp(e->name, "get.v2") == 0);
	CHECK(sl_catalog_tool(&c, "x") != NULL);
	/* The prefixed server is unaffected. */
	CHECK(sl_catalog_tool(&c, "pre__test_simple_text") != NULL);
	/* Two unprefixed servers share a name: both fall back, neither wins. */
	CHECK(sl_catalog_tool(&c, "shared") == NULL);
	CHECK(sl_catalog_tool(&c, "conf__shared") != NULL);
	CHECK(sl_catalog_tool(&c, "other__shared") != NULL);
	/* A gateway tool's name, an invalid name, an overlong name: prefixed. */
	CHECK(sl_catalog_tool(&c, "execute_code") == NULL);
	CHECK(sl_catalog_tool(&c, "conf__execute_code") != NULL);
	CHECK(sl_catalog_tool(&c, "has space") == NULL);
	e = sl_catalog_find(&c, "conf", "has space");
	CHECK(e != NULL && strcmp(e->exposed, "conf__has_space") == 0);
	e = sl_catalog_find(&c, "conf", longname);
	sl_catalog_name("conf", longname, false, name);
	CHECK(e != NULL && strcmp(e->exposed, name) == 0);
	sl_catalog_dispose(&c);
	fake_dispose(&a);
	fake_dispose(&b);
	fake_dispose(&p);
}

TEST(catalog_unprefixed_prefixed_collision)
{
	/* An unprefixed tool literally named like a prefixed server's exposed
	 * name: the prefixed one keeps it, the unprefixed one falls back. */
	struct fake_up a, b;
	struct sl_upstream *ups[2];
	struct sl_catalog c;
	const struct sl_entry *e;

	fake_init(&a, "u", "[{\"name\":\"p__t\"}]");
	fake_unprefixed(&a);
	fake_init(&b, "p", "[{\"name\":\"t\"}]");
	ups[0] = &a.u;
	ups[1] = &b.u;
	sl_catalog_init(&c);
	(void)sl_catalog_rebuild(&c, ups, 2);
	e = sl_catalog_tool(&c, "p__t");
	CHECK(e != NULL && e->up == &b.u);
	e = sl_catalog_tool(&c, "u__p__t");
	CHECK(e != NULL && e->up == &a.u);
	sl_catalog_dispose(&c);
	fake_dispose(&a);
	fake_dispose(&b);
}

TEST(catalog_rebuild_duplicate_names_of_one_server_keep_the_first)
{
	/* Prefixed and unprefixed: each name of a server is exposed once, for
	 * its first definition; another server's same name is unaffected. */
	for (int plain = 0; plain < 2; plain++) {
		struct fake_up a, b;
		struct sl_upstream *ups[2];
		struct sl_catalog c;
		const struct sl_entry *e;

		fake_init(&a, "a", "[{\"name\":\"echo\",\"n\":1},{\"name\":\"x\"},"
			  "{\"name\":\"echo\",\"n\":2},{\"name\":\"echo\",\"n\":3}]");
		fake_init(&b, "b", "[{\"name\":\"echo\"}]");
		if (plain)
			fake_unprefixed(&a);
		ups[0] = &a.u;
		ups[1] = &b.u;
		sl_catalog_init(&c);
		(void)sl_catalog_rebuild(&c, ups, 2);
		CHECK_INT(c.tools.n, 3);
		for (size_t i = 0; i < c.tools.n; i++)
			for (size_t j = 0; j < i; j++)
				CHECK(strcmp(c.tools.v[i].exposed, c.tools.v[j].exposed) != 0);
		e = sl_catalog_find(&c, "a", "echo");
		CHECK(e != NULL && e->def == a.items[0]);
		CHECK(sl_catalog_tool(&c, plain ? "echo" : "a__echo") == e);
		CHECK(sl_catalog_find(&c, "b", "echo") != NULL);
		sl_catalog_dispose(&c);
		fake_dispose(&a);
		fake_dispose(&b);
	}
}

TEST(catalog_rebuild_name_with_nul_left_out)
{
	/* "ab\u0000cd" is not "ab": it is left out, and does not stand in for
	 * (or shadow) a real "ab". */
	struct fake_up a;
	struct sl_upstream *ups[1];
	struct sl_catalog c;
	const struct sl_entry *e;

	fake_init(&a, "a", "[{\"name\":\"ab\\u0000cd\"},{\"name\":\"ab\",\"n\":2},"
		  "{\"name\":\"\\u0000\"},{\"name\":\"ok\"}]");
	ups[0] = &a.u;
	sl_catalog_init(&c);
	(void)sl_catalog_rebuild(&c, ups, 1);
	CHECK_INT(c.tools.n, 2);
	e = sl_catalog_tool(&c, "a__ab");
	CHECK(e != NULL && e->def == a.items[1]);
	CHECK(sl_catalog_tool(&c, "a__ok") != NULL);
	for (size_t i = 0; i < c.tools.n; i++)
		CHECK(strlen(c.tools.v[i].name) ==
		      yyjson_get_len(yyjson_obj_get(c.tools.v[i].def, "name")));
	sl_catalog_dispose(&c);
	fake_dispose(&a);
}

static void fake_resources(struct fake_up *f, yyjson_doc **doc, yyjson_val **items, size_t cap,
			   const char *json, bool templates)
{
	yyjson_val *it;
	size_t i, n;
	struct sl_item_list *l = templates ? &f->u.templates : &f->u.resources;
	*doc = yyjson_read(json, strlen(json), 0);
	CHECK(*doc != NULL);
	l->items = items;
	yyjson_arr_foreach(yyjson_doc_get_root(*doc), i, n, it)
		if (l->n < cap)
			items[l->n++] = it;
}

/* sl_catalog_uri_owner, the last URI it gave kept in *held until the next. */
static struct sl_upstream *owner(struct sl_catalog *c, const char *uri, char **held)
{
	free(*held);
	*held = NULL;
	return sl_catalog_uri_owner(c, uri, held);
}

TEST(catalog_unprefixed_uris)
{
	struct fake_up a, b, p;
	struct sl_upstream *ups[3];
	struct sl_catalog c;
	yyjson_doc *ra, *ta, *rb, *rp;
	yyjson_val *ia[4], *ita[4], *ib[4], *ip[4];
	char *orig = NULL;
	char *s;

	fake_init(&a, "a", "[]");
	fake_unprefixed(&a);
	fake_resources(&a, &ra, ia, 4, "[{\"uri\":\"test://static-text\"},{\"uri\":\"x://both\"},"
		       "{\"uri\":\"sluice://b/y\"}]", false);
	fake_resources(&a, &ta, ita, 4, "[{\"uriTemplate\":\"test://template/{id}/data\"}]", true);
	fake_init(&b, "b", "[]");
	fake_unprefixed(&b);
	fake_resources(&b, &rb, ib, 4, "[{\"uri\":\"x://both\"},{\"uri\":\"y\"}]", false);
	fake_init(&p, "p", "[]");
	fake_resources(&p, &rp, ip, 4, "[{\"uri\":\"test://static-text\"}]", false);
	ups[0] = &a.u;
	ups[1] = &b.u;
	ups[2] = &p.u;
	sl_catalog_init(&c);
	(void)sl_catalog_rebuild(&c, ups, 3);

	/* Exposed as they are, except when shared or when they look like ours. */
	s = sl_catalog_expose_uri(&c, &a.u, "test://static-text");
	CHECK_STR(s, "test://static-text");
	free(s);
	s = sl_catalog_expose_uri(&c, &p.u, "test://static-text");
	CHECK_STR(s, "sluice://p/test://static-text");
	free(s);
	s = sl_catalog_expose_uri(&c, &b.u, "x://both");
	CHECK_STR(s, "sluice://b/x://both");
	free(s);
	s = sl_catalog_expose_uri(&c, &a.u, "sluice://b/y");
	CHECK_STR(s, "sluice://a/sluice://b/y");
	free(s);
	/* A URI only another server lists, named by a (a resource link, a
	 * View): it would read back to b, so it is a's namespaced one. */
	s = sl_catalog_expose_uri(&c, &a.u, "y");
	CHECK_STR(s, "sluice://a/y");
	free(s);
	s = sl_catalog_expose_uri(&c, &b.u, "y");
	CHECK_STR(s, "y");
	free(s);

	/* Reading back: listed resource, namespaced form, template. */
	CHECK(owner(&c, "test://static-text", &orig) == &a.u);
	CHECK_STR(orig, "test://static-text");
	CHECK(owner(&c, "y", &orig) == &b.u);
	CHECK(owner(&c, "sluice://p/test://static-text", &orig) == &p.u);
	CHECK_STR(orig, "test://static-text");
	CHECK(owner(&c, "sluice://b/x://both", &orig) == &b.u);
	CHECK_STR(orig, "x://both");
	CHECK(owner(&c, "sluice://a/sluice://b/y", &orig) == &a.u);
	CHECK_STR(orig, "sluice://b/y");
	CHECK(owner(&c, "sluice://nobody/z", &orig) == NULL);
	CHECK(owner(&c, "test://template/123/data", &orig) == &a.u);
	/* Two unprefixed servers: a shared or unknown URI names neither. */
	CHECK(owner(&c, "x://both", &orig) == NULL);
	CHECK(owner(&c, "test://template/12/3/data", &orig) == NULL);
	CHECK(owner(&c, "test://template//data", &orig) == NULL);
	CHECK(owner(&c, "test://unknown", &orig) == NULL);
	/* One unprefixed server: an unknown URI is its (it may serve more than
	 * it lists). */
	(void)sl_catalog_rebuild(&c, ups, 1);
	CHECK(owner(&c, "test://unknown", &orig) == &a.u);
	CHECK_STR(orig, "test://unknown");
	(void)sl_catalog_rebuild(&c, ups + 2, 1);
	CHECK(owner(&c, "test://unknown", &orig) == NULL);

	free(orig);
	sl_catalog_dispose(&c);
	yyjson_doc_free(ra);
	yyjson_doc_free(ta);
	yyjson_doc_free(rb);
	yyjson_doc_free(rp);
	fake_dispose(&a);
	fake_dispose(&b);
	fake_dispose(&p);
}


/* MCP Apps: a View's ui:// URI keeps its scheme, "ui://<server>/<rest>",
 * and reads back to its server; an unprefixed server's own ui:// URI is
 * kept unless its authority names a server. */
TEST(catalog_ui_uris)
{
	struct fake_up a, p, q;
	struct sl_upstream *ups[3];
	struct sl_catalog c;
	yyjson_doc *ra, *ta, *rp, *rq;
	yyjson_val *ia[4], *ita[4], *ip[4], *iq[4];
	char *orig = NULL, *s;

	fake_init(&a, "a", "[]");
	fake_unprefixed(&a);
	fake_resources(&a, &ra, ia, 4, "[{\"uri\":\"ui://own/app.html\"},{\"uri\":\"ui://p/x\"}]", false);
	fake_resources(&a, &ta, ita, 4, "[{\"uriTemplate\":\"file:///t/{id}\"}]", true);
	fake_init(&p, "p", "[{\"name\":\"get-time\",\"_meta\":{\"ui\":{\"resourceUri\":"
		  "\"ui://get-time/mcp-app.html\"}}},{\"name\":\"old\",\"_meta\":"
		  "{\"ui/resourceUri\":\"ui://unlisted/v.html\"}}]");
	fake_resources(&p, &rp, ip, 4, "[{\"uri\":\"ui://get-time/mcp-app.html\"},{\"uri\":\"file:///p\"},"
		       "{\"uri\":\"file:///t/9\"}]", false);
	fake_init(&q, "q", "[]");
	fake_resources(&q, &rq, iq, 4, "[{\"uri\":\"ui://get-time/mcp-app.html\"},{\"uri\":\"file:///q\"}]", false);
	ups[0] = &a.u;
	ups[1] = &p.u;
	ups[2] = &q.u;
	sl_catalog_init(&c);
	(void)sl_catalog_rebuild(&c, ups, 3);

	/* Two prefixed servers with the same View URI stay apart. */
	s = sl_catalog_expose_uri(&c, &p.u, "ui://get-time/mcp-app.html");
	CHECK_STR(s, "ui://p/get-time/mcp-app.html");
	free(s);
	s = sl_catalog_expose_uri(&c, &q.u, "ui://get-time/mcp-app.html");
	CHECK_STR(s, "ui://q/get-time/mcp-app.html");
	free(s);
	CHECK(owner(&c, "ui://p/get-time/mcp-app.html", &orig) == &p.u);
	CHECK_STR(orig, "ui://get-time/mcp-app.html");
	CHECK(owner(&c, "ui://q/get-time/mcp-app.html", &orig) == &q.u);
	CHECK_STR(orig, "ui://get-time/mcp-app.html");
	/* The sluice:// form of it still names it. */
	CHECK(owner(&c, "sluice://q/ui://get-time/mcp-app.html", &orig) == &q.u);
	CHECK_STR(orig, "ui://get-time/mcp-app.html");

	/* Unprefixed: kept, unless it would read as server p's. */
	s = sl_catalog_expose_uri(&c, &a.u, "ui://own/app.html");
	CHECK_STR(s, "ui://own/app.html");
	free(s);
	/* A prefixed server naming another's View names its own. */
	s = sl_catalog_expose_uri(&c, &q.u, "ui://p/get-time/mcp-app.html");
	CHECK_STR(s, "ui://q/p/get-time/mcp-app.html");
	free(s);
	CHECK(owner(&c, "ui://q/p/get-time/mcp-app.html", &orig) == &q.u);
	CHECK_STR(orig, "ui://p/get-time/mcp-app.html");
	CHECK(owner(&c, "ui://own/app.html", &orig) == &a.u);
	CHECK_STR(orig, "ui://own/app.html");
	s = sl_catalog_expose_uri(&c, &a.u, "ui://p/x");
	CHECK_STR(s, "ui://a/p/x");
	free(s);
	CHECK(owner(&c, "ui://a/p/x", &orig) == &a.u);
	CHECK_STR(orig, "ui://p/x");
	CHECK(owner(&c, "ui://p/x", &orig) == &p.u);
	CHECK_STR(orig, "ui://x");

	/* A View reads by its server's own URIs: what only p, a server with
	 * Views, lists or names; not what q, which has none, lists; not what
	 * both list. */
	CHECK(owner(&c, "file:///p", &orig) == &p.u);
	CHECK_STR(orig, "file:///p");
	CHECK(owner(&c, "ui://unlisted/v.html", &orig) == &p.u);
	CHECK_STR(orig, "ui://unlisted/v.html");
	CHECK(owner(&c, "file:///q", &orig) == &a.u); /* the only unprefixed one's guess */
	CHECK(owner(&c, "ui://get-time/mcp-app.html", &orig) == &p.u);
	/* An unprefixed server's template claims it first: no shadowing. */
	CHECK(owner(&c, "file:///t/9", &orig) == &a.u);

	/* Not one of ours, hostile or empty: no server, or the only
	 * unprefixed one's. */
	CHECK(owner(&c, "ui://", &orig) == &a.u);
	CHECK(owner(&c, "ui:///x", &orig) == &a.u);
	CHECK_STR(orig, "ui:///x");
	(void)sl_catalog_rebuild(&c, ups + 1, 2);
	CHECK(owner(&c, "ui://nobody/x", &orig) == NULL);
	CHECK(owner(&c, "file:///q", &orig) == NULL);
	CHECK(orig == NULL);
	CHECK(owner(&c, "ui://pp/x", &orig) == NULL);

	free(orig);
	sl_catalog_dispose(&c);
	yyjson_doc_free(ra);
	yyjson_doc_free(ta);
	yyjson_doc_free(rp);
	yyjson_doc_free(rq);
	fake_dispose(&a);
	fake_dispose(&p);
	fake_dispose(&q);
}

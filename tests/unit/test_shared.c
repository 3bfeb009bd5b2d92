/* Unit tests of src/shared/: the URL and key names (url.c), the config keys
 * of sluice.shared.redis, the pin messages and which pin wins (pins.c), and
 * the pin store as pins.c sees it (struct sl_pin_store from sl_pinning_link,
 * stages/pinning.c): its observer and put, which carry pins between
 * replicas. No Redis: tests/e2e/shared.test.mjs runs one. */
#include "unit.h"

#include "config/config.h"
#include "core/json.h"
#include "shared/pins.h"
#include "shared/url.h"
#include "stages/pinning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool url_ok(const char *url, const char *host, int port, const char *path, int db)
{
	struct sl_redis_addr a;
	struct sl_err err;
	bool ok;

	if (sl_redis_url_parse(url, &a, &err) < 0) {
		printf("  %s: %s\n", url, err.msg);
		return false;
	}
	ok = a.port == port && a.db == db &&
	     (host ? a.host && strcmp(a.host, host) == 0 : a.host == NULL) &&
	     (path ? a.unix_path && strcmp(a.unix_path, path) == 0 : a.unix_path == NULL);
	sl_redis_addr_dispose(&a);
	return ok;
}

static bool url_fails(const char *url, const char *part)
{
	struct sl_redis_addr a = { 0 };
	struct sl_err err;
	if (sl_redis_url_parse(url, &a, &err) == 0) {
		sl_redis_addr_dispose(&a);
		return false;
	}
	if (!strstr(err.msg, part))
		printf("  %s: %s\n", url, err.msg);
	return strstr(err.msg, part) != NULL && a.host == NULL;
}

TEST(shared_redis_url)
{
	CHECK(url_ok("redis://127.0.0.1", "127.0.0.1", 6379, NULL, 0));
	CHECK(url_ok("redis://127.0.0.1:6380/2", "127.0.0.1", 6380, NULL, 2));
	CHECK(url_ok("redis://cache.internal/", "cache.internal", 6379, NULL, 0));
	CHECK(url_ok("redis://[::1]:7000/15", "::1", 7000, NULL, 15));
	CHECK(url_ok("unix:/run/redis/redis.sock", NULL, 0, "/run/redis/redis.sock", 0));
	CHECK(url_ok("unix:/run/r.sock?db=3", NULL, 0, "/run/r.sock", 3));
	CHECK(url_fails("redis://:secret@127.0.0.1", "password in the URL is refused"));
	CHECK(url_fails("redis://user:pw@h:1/0", "sluice.shared.redis.password"));
	CHECK(url_fails("rediss://h", "TLS"));
	CHECK(url_fails("http://h", "must start with"));
	CHECK(url_fails("redis://h:0", "port"));
	CHECK(url_fails("redis://h:65536", "port"));
	CHECK(url_fails("redis://h:12ab", "port"));
	CHECK(url_fails("redis://h/x", "database number"));
	CHECK(url_fails("redis://h/100001", "database number"));
	CHECK(url_fails("redis://", "no host"));
	CHECK(url_fails("redis://:6379", "no host"));
	CHECK(url_fails("redis://[::1", "closing"));
	CHECK(url_fails("redis://h?x=1", "query"));
	CHECK(url_fails("unix:relative.sock", "absolute path"));
	CHECK(url_fails("unix:/s?database=1", "?db=N"));
}

TEST(shared_key_names)
{
	char *k = sl_redis_key("sluice:", "pins"), *f = sl_shared_pins_field("gh#0123", "list");
	CHECK_STR(k, "sluice:pins");
	CHECK_STR(f, "gh#0123\nlist");
	free(k);
	free(f);
}

static struct sl_config *parse_cfg(const char *shared, struct sl_err *err)
{
	char *text = sl_printf("{\"mcpServers\":{},\"sluice\":{\"shared\":%s}}", shared);
	struct sl_config *c = NULL;
	err->msg[0] = '\0';
	if (sl_config_parse("t.json", text, strlen(text), &c, err) < 0)
		c = NULL;
	free(text);
	return c;
}

static bool cfg_fails(const char *shared, const char *part)
{
	struct sl_err err;
	struct sl_config *c = parse_cfg(shared, &err);
	if (c) {
		sl_config_unref(c);
		return false;
	}
	if (!strstr(err.msg, part))
		printf("  %s\n", err.msg);
	return strstr(err.msg, part) != NULL;
}

TEST(shared_config_keys)
{
	struct sl_err err;
	struct sl_config *c;
	char *text;

	/* Without the section: off, nothing to connect to. */
	text = sl_strdup("{\"mcpServers\":{}}");
	CHECK_INT(sl_config_parse("t.json", text, strlen(text), &c, &err), 0);
	CHECK(!c->redis.on && c->redis.url == NULL);
	sl_config_unref(c);
	free(text);

	c = parse_cfg("{\"redis\":{\"url\":\"redis://127.0.0.1:6390/1\"}}", &err);
	CHECK(c != NULL);
	if (c) {
		CHECK(c->redis.on);
		CHECK_STR(c->redis.url, "redis://127.0.0.1:6390/1");
		CHECK(c->redis.password == NULL);
		CHECK_STR(c->redis.key_prefix, "sluice:");
		CHECK_INT(c->redis.connect_timeout_ms, 2000);
		CHECK_INT(c->redis.command_timeout_ms, 1000);
		CHECK_INT(c->redis.max_pending, 1024);
		CHECK_INT(c->redis.max_reply_bytes, 16u << 20);
		sl_config_unref(c);
	}
	setenv("SL_TEST_REDIS_PW", "s3cret", 1);
	c = parse_cfg("{\"redis\":{\"url\":\"unix:/tmp/r.sock\",\"password\":\"${SL_TEST_REDIS_PW}\","
		      "\"keyPrefix\":\"team-a:\",\"connectTimeoutMs\":500,\"commandTimeoutMs\":250,"
		      "\"maxPending\":1,\"maxReplyBytes\":4096}}", &err);
	CHECK(c != NULL);
	if (c) {
		CHECK_STR(c->redis.password, "s3cret");
		CHECK_STR(c->redis.key_prefix, "team-a:");
		CHECK_INT(c->redis.connect_timeout_ms, 500);
		CHECK_INT(c->redis.command_timeout_ms, 250);
		CHECK_INT(c->redis.max_pending, 1);
		CHECK_INT(c->redis.max_reply_bytes, 4096);
		sl_config_unref(c);
	}
	CHECK(cfg_fails("{\"redis\":{}}", "needs \"url\""));
	CHECK(cfg_fails("{\"redis\":{\"url\":\"redis://:pw@h\"}}", "sluice.shared.redis.password"));
	CHECK(cfg_fails("{\"redis\":{\"url\":\"redis://h\",\"maxPending\":0}}", "maxPending"));
	CHECK(cfg_fails("{\"redis\":{\"url\":\"redis://h\",\"maxReplyBytes\":10}}", "maxReplyBytes"));
	CHECK(cfg_fails("{\"redis\":{\"url\":\"redis://h\",\"password\":\"${SL_TEST_UNSET_PW}\"}}",
			"SL_TEST_UNSET_PW"));
	CHECK(cfg_fails("{\"redis\":{\"url\":\"redis://h\",\"colour\":1}}", "colour"));
	CHECK(cfg_fails("{\"redis\":\"redis://h\"}", "redis"));
	CHECK(cfg_fails("{\"memcached\":{}}", "memcached"));
}

static yyjson_doc *pin_doc(const char *sha, const char *at, bool automatic)
{
	char *s = sl_printf("{\"sha256\":\"%s\",\"pinnedAt\":\"%s\"%s}", sha, at,
			    automatic ? ",\"automatic\":true" : "");
	yyjson_doc *d = sl_json_read(s, strlen(s), SL_JSON_READ_FLAGS, NULL);
	free(s);
	return d;
}

TEST(shared_pin_messages_and_which_pin_wins)
{
	yyjson_doc *early = pin_doc("aa", "2026-12-01T10:00:00Z", false);
	yyjson_doc *late = pin_doc("bb", "2026-12-01T11:00:00Z", false);
	yyjson_doc *auto_early = pin_doc("cc", "2026-12-01T09:00:00Z", true);
	yyjson_doc *auto_late = pin_doc("dd", "2026-12-01T12:00:00Z", true);
	yyjson_val *e = yyjson_doc_get_root(early), *l = yyjson_doc_get_root(late);
	yyjson_val *ae = yyjson_doc_get_root(auto_early), *al = yyjson_doc_get_root(auto_late);
	yyjson_doc *doc;
	yyjson_val *entry;
	const char *key, *tool;
	size_t len;
	char *msg;

	/* Approvals: the later wins (last writer wins per tool key). */
	CHECK(sl_shared_pins_newer(l, e));
	CHECK(!sl_shared_pins_newer(e, l));
	CHECK(!sl_shared_pins_newer(e, e));
	CHECK(sl_shared_pins_newer(e, NULL));
	CHECK(!sl_shared_pins_newer(NULL, e));
	/* A person's approval beats an automatic pin, whatever the times. */
	CHECK(sl_shared_pins_newer(e, al));
	CHECK(!sl_shared_pins_newer(al, e));
	CHECK(!sl_shared_pins_newer(ae, l));
	/* Of two automatic pins (first sights) the earlier wins. */
	CHECK(sl_shared_pins_newer(ae, al));
	CHECK(!sl_shared_pins_newer(al, ae));

	msg = sl_shared_pins_message("gh#01", "list", l, &len);
	CHECK(sl_shared_pins_parse(msg, len, &doc, &key, &tool, &entry));
	CHECK_STR(key, "gh#01");
	CHECK_STR(tool, "list");
	CHECK_STR(sl_json_str(entry, "sha256"), "bb");
	yyjson_doc_free(doc);
	free(msg);
	msg = sl_shared_pins_message("gh#01", "list", NULL, &len);
	CHECK(sl_shared_pins_parse(msg, len, &doc, &key, &tool, &entry));
	CHECK(entry == NULL);
	yyjson_doc_free(doc);
	free(msg);
	CHECK(!sl_shared_pins_parse("{\"key\":\"k\",\"tool\":\"t\"}", 22, &doc, &key, &tool, &entry));
	CHECK(!sl_shared_pins_parse("{\"key\":\"k\",\"tool\":\"t\",\"pin\":{}}", 30, &doc, &key, &tool,
				    &entry));
	CHECK(!sl_shared_pins_parse("not json", 8, &doc, &key, &tool, &entry));
	yyjson_doc_free(early);
	yyjson_doc_free(late);
	yyjson_doc_free(auto_early);
	yyjson_doc_free(auto_late);
}

struct heard {
	int n;
	char last[128];
	bool removed;
};

static void on_heard(void *ctx, const char *key, const char *tool, yyjson_val *entry)
{
	struct heard *h = ctx;
	h->n++;
	snprintf(h->last, sizeof(h->last), "%s.%s", key, tool);
	h->removed = entry == NULL;
}

/* What replicas exchange: every change the store makes is told once; one
 * put from another replica is stored (file included) and not told back. */
TEST(shared_pin_store_observer_and_put)
{
	char tmpl[] = "/tmp/sluice-shared-unit-XXXXXX", *dir = sl_strdup(mkdtemp(tmpl));
	char *text = sl_printf("{\"mcpServers\":{},\"sluice\":{\"pinning\":{\"stateDir\":\"%s\"}}}", dir);
	char *cmd = sl_printf("rm -rf '%s'", dir);
	const char *j1 = "{\"name\":\"t\",\"description\":\"one\"}";
	yyjson_doc *v1 = sl_json_read(j1, strlen(j1), SL_JSON_READ_FLAGS, NULL);
	yyjson_val *d1 = yyjson_doc_get_root(v1), *got;
	yyjson_doc *remote = pin_doc("9999999999999999999999999999999999999999999999999999999999999999",
				     "2030-01-01T00:00:00Z", false);
	struct sl_config *cfg = NULL;
	struct sl_pins *pins = NULL, *again = NULL;
	struct sl_pin_store link;
	struct heard h = { 0 };
	struct sl_err err;
	size_t n;
	bool changed;

	CHECK_INT(sl_config_parse("t.json", text, strlen(text), &cfg, &err), 0);
	CHECK_INT(sl_pinning_open(cfg, yyjson_obj_get(cfg->sluice, "pinning"), false, &pins, &err), 0);
	link = sl_pinning_link(pins); /* the store as shared/pins.c sees it */
	CHECK(link.self == pins);
	link.observe(link.self, on_heard, &h);
	CHECK_INT(sl_pinning_approve(pins, "s#1", &d1, 1, &err), 0);
	CHECK_INT(h.n, 1);
	CHECK_STR(h.last, "s#1.t");
	CHECK(!h.removed);
	CHECK(yyjson_obj_get(link.servers(link.self), "s#1") != NULL);
	got = link.entry(link.self, "s#1", "t");
	CHECK(got && !sl_json_true(got, "automatic")); /* a person's approval */

	CHECK_INT(link.put(link.self, "s#1", "t", yyjson_doc_get_root(remote), &changed, &err), 0);
	CHECK(changed);
	CHECK_INT(h.n, 1); /* not told back */
	CHECK_INT(link.put(link.self, "s#1", "t", yyjson_doc_get_root(remote), &changed, &err), 0);
	CHECK(!changed);
	/* In the file too: another store of the directory reads it. */
	CHECK_INT(sl_pinning_open(cfg, yyjson_obj_get(cfg->sluice, "pinning"), false, &again, &err), 0);
	CHECK_STR(sl_json_str(sl_pinning_entry(again, "s#1", "t"), "pinnedAt"), "2030-01-01T00:00:00Z");
	sl_pinning_close(again);

	CHECK_INT(sl_pinning_forget(pins, "s#1", "t", &n, &err), 0);
	CHECK_INT(n, 1);
	CHECK_INT(h.n, 2);
	CHECK(h.removed);
	CHECK_INT(link.put(link.self, "s#1", "t", NULL, &changed, &err), 0);
	CHECK(!changed);
	link.observe(link.self, NULL, NULL);
	CHECK_INT(sl_pinning_approve(pins, "s#1", &d1, 1, &err), 0);
	CHECK_INT(h.n, 2);

	sl_pinning_close(pins);
	sl_config_unref(cfg);
	yyjson_doc_free(v1);
	yyjson_doc_free(remote);
	(void)!system(cmd);
	free(cmd);
	free(text);
	free(dir);
}

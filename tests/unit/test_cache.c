/* Unit tests of src/stages/cache.c: hit and miss, key = server + tool +
 * canonical arguments, TTL, LRU eviction under maxBytes, what is never
 * stored, and selection by glob and by readOnlyHint. The hooks are driven
 * directly on hand-built calls. */
#include "unit.h"

#include "auth/caller.h"
#include "core/json.h"
#include "pipeline/call.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fixture.h"

/* The cache's state under test (one at a time). */
static void *cst;

static void cache_off(void)
{
	if (cst)
		sl_stage_cache.fini(cst);
	cst = NULL;
}

static const char TOOLS[] =
	"[{\"name\":\"get_issue\",\"annotations\":{\"readOnlyHint\":true}},"
	" {\"name\":\"merge\",\"annotations\":{\"destructiveHint\":true}},"
	" {\"name\":\"plain\"}]";

struct cup {
	struct sl_upstream u;
	struct sl_server_config cfg;
	yyjson_doc *doc;
	yyjson_val *items[4];
};

static void cup_init(struct cup *f, const char *name)
{
	yyjson_val *a, *it;
	size_t i, n;
	memset(f, 0, sizeof(*f));
	f->u.name = (char *)name;
	f->cfg.name = (char *)name;
	f->u.cfg = &f->cfg;
	f->doc = yyjson_read(TOOLS, strlen(TOOLS), 0);
	a = yyjson_doc_get_root(f->doc);
	yyjson_arr_foreach(a, i, n, it) f->items[f->u.tools.n++] = it;
	f->u.tools.items = f->items;
}

static int cache_config(const char *json)
{
	struct sl_err err = { 0 };
	yyjson_doc *d = json ? yyjson_read(json, strlen(json), 0) : NULL;
	int rc;

	cache_off();
	rc = sl_stage_cache.init(NULL, NULL, yyjson_doc_get_root(d), &cst, &err);
	yyjson_doc_free(d);
	return rc;
}

static struct sl_call *mk(struct cup *u, const char *tool, const char *args)
{
	yyjson_doc *d = yyjson_read(args, strlen(args), 0);
	yyjson_mut_doc *m = yyjson_doc_mut_copy(d, NULL);
	yyjson_doc_free(d);
	return sl_call_new(t_gen_bare(), SL_ORIGIN_DIRECT, &u->u, tool, m, 1000, NULL, NULL, NULL);
}

/* The caller of the calls through() makes (a reference; NULL: anonymous). */
static struct sl_caller *who;

/* Runs the request hook; on a miss, "dispatches" with result and runs the
 * response hook. Returns whether it was a hit; *text gets the first text. */
static bool through(struct cup *u, const char *tool, const char *args, const char *result,
		    char *text, size_t tn)
{
	struct sl_call *c = mk(u, tool, args);
	c->who = sl_caller_ref(who);
	enum sl_stage_rc rc = sl_stage_cache.request(cst, c);
	bool hit = rc == SL_STAGE_DONE;
	CHECK(rc != SL_STAGE_ERROR && rc != SL_STAGE_AGAIN);
	if (hit) {
		CHECK(c->cache_hit);
		CHECK(c->outcome == SL_OUTCOME_OK);
		CHECK(c->result && c->result == yyjson_doc_get_root(c->result_doc));
		CHECK(sl_stage_cache.response(cst, c) != SL_STAGE_ERROR);
	} else {
		CHECK(!c->cache_hit);
		c->outcome = SL_OUTCOME_OK;
		c->result_doc = yyjson_read(result, strlen(result), 0);
		c->result = yyjson_doc_get_root(c->result_doc);
		CHECK(sl_stage_cache.response(cst, c) != SL_STAGE_ERROR);
	}
	if (text) {
		const char *t = sl_json_str(yyjson_arr_get_first(sl_json_arr(c->result, "content")), "text");
		snprintf(text, tn, "%s", t ? t : "");
	}
	sl_call_free(c);
	return hit;
}

#define R(t) "{\"content\":[{\"type\":\"text\",\"text\":\"" t "\"}]}"

TEST(cache_hit_after_miss_and_key_parts)
{
	struct cup gh, gl;
	char text[64];
	cup_init(&gh, "github");
	cup_init(&gl, "gitlab");
	CHECK_INT(cache_config("{\"tools\":[\"git*.get_*\", \"github.plain\"]}"), 0);
	CHECK(!through(&gh, "get_issue", "{\"n\":1,\"r\":\"a\"}", R("one"), text, sizeof(text)));
	CHECK_STR(text, "one");
	/* Same arguments in another key order: the canonical key hits. */
	CHECK(through(&gh, "get_issue", "{\"r\":\"a\",\"n\":1}", R("upstream"), text, sizeof(text)));
	CHECK_STR(text, "one");
	/* Other arguments, other tool, other server: misses. */
	CHECK(!through(&gh, "get_issue", "{\"n\":2,\"r\":\"a\"}", R("two"), text, sizeof(text)));
	CHECK_STR(text, "two");
	CHECK(!through(&gh, "plain", "{\"n\":1,\"r\":\"a\"}", R("plain"), NULL, 0));
	CHECK(!through(&gl, "get_issue", "{\"n\":1,\"r\":\"a\"}", R("gl"), text, sizeof(text)));
	CHECK(through(&gl, "get_issue", "{\"n\":1,\"r\":\"a\"}", R("x"), text, sizeof(text)));
	CHECK_STR(text, "gl");
	CHECK(through(&gh, "get_issue", "{\"n\":2,\"r\":\"a\"}", R("x"), text, sizeof(text)));
	CHECK_STR(text, "two");
	cache_off();
	yyjson_doc_free(gh.doc);
	yyjson_doc_free(gl.doc);
}

static struct sl_caller *person(const char *issuer, const char *subject)
{
	struct sl_caller *c = sl_caller_new("jwt");
	sl_caller_set_subject(c, issuer, subject);
	return c;
}

/* A perUser server answers each person with that person's own rights: one
 * person's cached answer is never another's, whatever profile or method
 * (a subject string alone is not a person); a shared-credential server's
 * answer is the same for every caller (policy decided before the cache). */
TEST(cache_per_user_server_keys_by_person)
{
	struct cup gh, pub;
	char text[64];
	struct sl_caller *alice = person("https://as.example", "alice");
	struct sl_caller *bob = person("https://as.example", "bob");
	struct sl_caller *other = person("https://other.example", "alice");

	cup_init(&gh, "github");
	gh.cfg.oauth.per_user = true;
	cup_init(&pub, "public");
	CHECK_INT(cache_config("{\"tools\":[\"*.get_*\"]}"), 0);
	who = alice;
	CHECK(!through(&gh, "get_issue", "{\"n\":1}", R("alice's"), text, sizeof(text)));
	CHECK(through(&gh, "get_issue", "{\"n\":1}", R("x"), text, sizeof(text)));
	CHECK_STR(text, "alice's");
	who = bob;
	CHECK(!through(&gh, "get_issue", "{\"n\":1}", R("bob's"), text, sizeof(text)));
	CHECK_STR(text, "bob's");
	who = other;
	CHECK(!through(&gh, "get_issue", "{\"n\":1}", R("other's"), text, sizeof(text)));
	CHECK_STR(text, "other's");
	who = alice;
	CHECK(through(&gh, "get_issue", "{\"n\":1}", R("x"), text, sizeof(text)));
	CHECK_STR(text, "alice's");
	CHECK(!through(&pub, "get_issue", "{\"n\":1}", R("same"), text, sizeof(text)));
	who = bob;
	CHECK(through(&pub, "get_issue", "{\"n\":1}", R("x"), text, sizeof(text)));
	CHECK_STR(text, "same");
	who = NULL;
	cache_off();
	sl_caller_unref(alice);
	sl_caller_unref(bob);
	sl_caller_unref(other);
	yyjson_doc_free(gh.doc);
	yyjson_doc_free(pub.doc);
}

TEST(cache_selection_glob_and_read_only)
{
	struct cup gh;
	cup_init(&gh, "github");
	/* Only the glob: merge and get_issue are not selected. */
	CHECK_INT(cache_config("{\"tools\":[\"github.plain\"]}"), 0);
	CHECK(!through(&gh, "get_issue", "{}", R("a"), NULL, 0));
	CHECK(!through(&gh, "get_issue", "{}", R("a"), NULL, 0));
	CHECK(!through(&gh, "plain", "{}", R("p"), NULL, 0));
	CHECK(through(&gh, "plain", "{}", R("p"), NULL, 0));
	/* readOnly: tools annotated readOnlyHint too, and nothing else. */
	CHECK_INT(cache_config("{\"readOnly\":true}"), 0);
	CHECK(!through(&gh, "get_issue", "{}", R("a"), NULL, 0));
	CHECK(through(&gh, "get_issue", "{}", R("a"), NULL, 0));
	CHECK(!through(&gh, "merge", "{}", R("m"), NULL, 0));
	CHECK(!through(&gh, "merge", "{}", R("m"), NULL, 0));
	CHECK(!through(&gh, "plain", "{}", R("p"), NULL, 0));
	CHECK(!through(&gh, "plain", "{}", R("p"), NULL, 0));
	/* Absent section, or one selecting nothing: off. */
	CHECK_INT(cache_config(NULL), 0);
	CHECK(!through(&gh, "get_issue", "{}", R("a"), NULL, 0));
	CHECK(!through(&gh, "get_issue", "{}", R("a"), NULL, 0));
	CHECK_INT(cache_config("{\"ttlMs\":1000}"), 0);
	CHECK(!through(&gh, "plain", "{}", R("a"), NULL, 0));
	CHECK(!through(&gh, "plain", "{}", R("a"), NULL, 0));
	/* Bad config is an init error. */
	CHECK(cache_config("{\"tools\":\"github.*\"}") < 0);
	CHECK(cache_config("{\"tools\":[1]}") < 0);
	CHECK(cache_config("{\"ttlMs\":-1}") < 0);
	CHECK(cache_config("{\"maxBytes\":10}") < 0);
	CHECK(cache_config("{\"readonly\":true}") < 0);
	cache_off();
	yyjson_doc_free(gh.doc);
}

TEST(cache_ttl_expiry)
{
	struct cup gh;
	cup_init(&gh, "github");
	CHECK_INT(cache_config("{\"tools\":[\"*\"],\"ttlMs\":30}"), 0);
	CHECK(!through(&gh, "plain", "{}", R("a"), NULL, 0));
	CHECK(through(&gh, "plain", "{}", R("a"), NULL, 0));
	usleep(60 * 1000);
	CHECK(!through(&gh, "plain", "{}", R("b"), NULL, 0));
	CHECK(through(&gh, "plain", "{}", R("b"), NULL, 0));
	cache_off();
	yyjson_doc_free(gh.doc);
}

TEST(cache_lru_eviction_under_max_bytes)
{
	struct cup gh;
	char big[3][700], args[32];
	cup_init(&gh, "github");
	/* Each entry costs ~600 bytes of JSON plus overhead: two fit in 1600. */
	for (int i = 0; i < 3; i++) {
		memset(big[i], 'a' + i, 560);
		big[i][560] = '\0';
		char *r = sl_printf(R("%s"), big[i]);
		snprintf(big[i], sizeof(big[i]), "%s", r);
		free(r);
	}
	CHECK_INT(cache_config("{\"tools\":[\"github.*\"],\"maxBytes\":1600}"), 0);
	for (int i = 0; i < 2; i++) {
		snprintf(args, sizeof(args), "{\"i\":%d}", i);
		CHECK(!through(&gh, "plain", args, big[i], NULL, 0));
	}
	/* Touch 0, so 1 is the least recently used. */
	CHECK(through(&gh, "plain", "{\"i\":0}", big[0], NULL, 0));
	CHECK(!through(&gh, "plain", "{\"i\":2}", big[2], NULL, 0));
	CHECK(through(&gh, "plain", "{\"i\":0}", big[0], NULL, 0));
	CHECK(through(&gh, "plain", "{\"i\":2}", big[2], NULL, 0));
	/* 1 was evicted (and is stored again, evicting 0, the LRU now). */
	CHECK(!through(&gh, "plain", "{\"i\":1}", big[1], NULL, 0));
	CHECK(!through(&gh, "plain", "{\"i\":0}", big[0], NULL, 0));
	/* A result larger than maxBytes on its own is never stored. */
	{
		char huge[2100];
		memset(huge, 'z', 2000);
		huge[2000] = '\0';
		char *r = sl_printf(R("%s"), huge);
		CHECK(!through(&gh, "plain", "{\"huge\":1}", r, NULL, 0));
		CHECK(!through(&gh, "plain", "{\"huge\":1}", r, NULL, 0));
		free(r);
	}
	cache_off();
	yyjson_doc_free(gh.doc);
}

TEST(cache_never_stores_errors_denials_failures)
{
	struct cup gh;
	struct sl_call *c;
	cup_init(&gh, "github");
	CHECK_INT(cache_config("{\"tools\":[\"*\"]}"), 0);
	/* isError results. */
	CHECK(!through(&gh, "plain", "{\"e\":1}",
		       "{\"isError\":true,\"content\":[{\"type\":\"text\",\"text\":\"no\"}]}", NULL, 0));
	CHECK(!through(&gh, "plain", "{\"e\":1}", R("ok"), NULL, 0));
	CHECK(through(&gh, "plain", "{\"e\":1}", R("ok"), NULL, 0));
	/* Denied, failed, cancelled, rpc_error: the response hook stores nothing. */
	for (int o = SL_OUTCOME_RPC_ERROR; o <= SL_OUTCOME_CANCELLED; o++) {
		c = mk(&gh, "plain", "{\"o\":1}");
		CHECK(sl_stage_cache.request(cst, c) == SL_STAGE_NEXT);
		if (o == SL_OUTCOME_RPC_ERROR) {
			c->result_doc = yyjson_read("{\"code\":-1,\"message\":\"x\"}", 26, 0);
			c->rpc_error = yyjson_doc_get_root(c->result_doc);
			c->outcome = SL_OUTCOME_RPC_ERROR;
		} else {
			sl_call_set_error(c, (enum sl_outcome)o, "nope");
		}
		CHECK(sl_stage_cache.response(cst, c) == SL_STAGE_DECLINED);
		sl_call_free(c);
	}
	c = mk(&gh, "plain", "{\"o\":1}");
	CHECK(sl_stage_cache.request(cst, c) == SL_STAGE_NEXT);
	sl_call_free(c);
	/* A stage's rewritten result (mresult) is what gets stored. */
	c = mk(&gh, "plain", "{\"m\":1}");
	CHECK(sl_stage_cache.request(cst, c) == SL_STAGE_NEXT);
	c->outcome = SL_OUTCOME_OK;
	c->result_doc = yyjson_read(R("raw secret"), strlen(R("raw secret")), 0);
	c->result = yyjson_doc_get_root(c->result_doc);
	{
		yyjson_mut_val *m = sl_call_result_mut(c);
		yyjson_mut_val *blk = yyjson_mut_arr_get_first(yyjson_mut_obj_get(m, "content"));
		yyjson_mut_obj_remove_key(blk, "text");
		yyjson_mut_obj_add_str(c->doc, blk, "text", "[REDACTED:test]");
	}
	CHECK(sl_stage_cache.response(cst, c) == SL_STAGE_NEXT);
	sl_call_free(c);
	{
		char text[64];
		CHECK(through(&gh, "plain", "{\"m\":1}", R("x"), text, sizeof(text)));
		CHECK_STR(text, "[REDACTED:test]");
	}
	cache_off();
	yyjson_doc_free(gh.doc);
}

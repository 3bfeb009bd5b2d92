/* Unit tests of sessions across replicas: the sealed session id and the
 * session record (src/shared/sessions.c), sluice.shared.secret and the
 * sealing key derived from it (pipeline/gen.c). No Redis:
 * tests/e2e/adopt.test.mjs runs one. */
#include "unit.h"

#include "config/config.h"
#include "fixture.h"
#include "pipeline/gen.h"
#include "shared/sessions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t key[32] = { 7, 1, 2 };
static const uint8_t other[32] = { 8 };

TEST(shared_session_id_seal)
{
	char id[SL_SESSION_ID_MAX], bad[SL_SESSION_ID_MAX];

	sl_session_id_make(key, "alice", id);
	CHECK_INT(strlen(id), 65);
	CHECK(id[32] == '.');
	for (size_t i = 0; id[i]; i++) /* visible ASCII (MCP transports) */
		CHECK(id[i] >= 0x21 && id[i] <= 0x7e);
	CHECK(sl_session_id_check(key, id, "alice"));
	/* Another caller, another key: refused. */
	CHECK(!sl_session_id_check(key, id, "bob"));
	CHECK(!sl_session_id_check(key, id, ""));
	CHECK(!sl_session_id_check(other, id, "alice"));
	/* Any change of the random part or the tag is caught. */
	for (size_t i = 0; i < 65; i += 7) {
		if (i == 32)
			continue;
		memcpy(bad, id, sizeof(bad));
		bad[i] = bad[i] == '0' ? '1' : '0';
		CHECK(!sl_session_id_check(key, bad, "alice"));
	}
	/* Malformed: short, long, other characters, a legacy random id. */
	CHECK(!sl_session_id_check(key, "", "alice"));
	CHECK(!sl_session_id_check(key, "0123456789abcdef0123456789abcdef", "alice"));
	snprintf(bad, sizeof(bad), "%s0", id);
	CHECK(!sl_session_id_check(key, bad, "alice"));
	memcpy(bad, id, sizeof(bad));
	bad[3] = 'A';
	CHECK(!sl_session_id_check(key, bad, "alice"));
	memcpy(bad, id, sizeof(bad));
	bad[32] = '-';
	CHECK(!sl_session_id_check(key, bad, "alice"));
	/* Two ids differ. */
	sl_session_id_make(key, "alice", bad);
	CHECK(strcmp(id, bad) != 0);
	/* Anonymous callers have ids too. */
	sl_session_id_make(key, "", id);
	CHECK(sl_session_id_check(key, id, ""));
	CHECK(!sl_session_id_check(key, id, "alice"));
}

TEST(shared_session_record_round_trip)
{
	const char *subs[] = { "everything+test://static/resource/1", "x://y" };
	const char *ctext = "{\"elicitation\":{}}", *itext = "{\"name\":\"c\",\"version\":\"1\"}";
	yyjson_doc *caps = yyjson_read(ctext, strlen(ctext), 0);
	yyjson_doc *info = yyjson_read(itext, strlen(itext), 0);
	struct sl_session_record in = { 0 }, out;
	struct sl_err err;
	size_t len;
	char *json;

	in.caller = "alice";
	in.version = "2025-11-25";
	in.caps = yyjson_doc_get_root(caps);
	in.client_info = yyjson_doc_get_root(info);
	in.log_level = "warning";
	in.subs = subs;
	in.nsubs = 2;
	json = sl_session_record_build(&in, &len);
	CHECK(json != NULL);
	CHECK_INT(sl_session_record_parse(json, len, "alice", &out, &err), 0);
	CHECK_STR(out.version, "2025-11-25");
	CHECK(yyjson_is_obj(yyjson_obj_get(out.caps, "elicitation")));
	CHECK_STR(yyjson_get_str(yyjson_obj_get(out.client_info, "name")), "c");
	CHECK_STR(out.log_level, "warning");
	CHECK_INT(out.nsubs, 2);
	CHECK_STR(out.subs[0], subs[0]);
	CHECK_STR(out.subs[1], subs[1]);
	sl_session_record_dispose(&out);
	/* A level no MCP version has is left out, so the record stays valid. */
	in.log_level = "loud";
	free(json);
	json = sl_session_record_build(&in, &len);
	CHECK_INT(sl_session_record_parse(json, len, "alice", &out, &err), 0);
	CHECK(out.log_level == NULL);
	sl_session_record_dispose(&out);
	/* The record is for one caller only. */
	CHECK(sl_session_record_parse(json, len, "bob", &out, &err) < 0);
	CHECK(strstr(err.msg, "another caller") != NULL);
	free(json);
	yyjson_doc_free(caps);
	yyjson_doc_free(info);
}

static bool refused(const char *json, const char *part)
{
	struct sl_session_record rec;
	struct sl_err err;

	if (sl_session_record_parse(json, strlen(json), "alice", &rec, &err) == 0) {
		printf("  taken: %.80s\n", json);
		sl_session_record_dispose(&rec);
		return false;
	}
	if (!strstr(err.msg, part))
		printf("  %.80s: %s\n", json, err.msg);
	return strstr(err.msg, part) != NULL && rec.doc == NULL && rec.subs == NULL;
}

#define GOOD_HEAD "{\"v\":1,\"caller\":\"alice\",\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}"

TEST(shared_session_record_hostile)
{
	char *big, *many;
	size_t n;

	{
		struct sl_session_record rec;
		struct sl_err err;
		const char *ok = GOOD_HEAD ",\"subscriptions\":[]}";
		CHECK_INT(sl_session_record_parse(ok, strlen(ok), "alice", &rec, &err), 0);
		sl_session_record_dispose(&rec);
	}
	CHECK(refused("", "not a JSON object"));
	CHECK(refused("[]", "not a JSON object"));
	CHECK(refused("{\"v\":1", "not a JSON object"));
	CHECK(refused("nul", "not a JSON object"));
	CHECK(refused("{\"v\":2,\"caller\":\"alice\"}", "unknown version"));
	CHECK(refused("{\"v\":\"1\",\"caller\":\"alice\"}", "unknown version"));
	CHECK(refused("{\"v\":1}", "another caller"));
	CHECK(refused("{\"v\":1,\"caller\":7}", "another caller"));
	CHECK(refused("{\"v\":1,\"caller\":\"alice\",\"protocolVersion\":\"2026-07-28\","
		      "\"capabilities\":{},\"subscriptions\":[]}", "protocol version"));
	CHECK(refused("{\"v\":1,\"caller\":\"alice\",\"protocolVersion\":1,\"capabilities\":{},"
		      "\"subscriptions\":[]}", "protocol version"));
	CHECK(refused("{\"v\":1,\"caller\":\"alice\",\"protocolVersion\":\"2025-06-18\","
		      "\"capabilities\":[],\"subscriptions\":[]}", "capabilities"));
	CHECK(refused(GOOD_HEAD ",\"clientInfo\":\"x\",\"subscriptions\":[]}", "clientInfo"));
	CHECK(refused(GOOD_HEAD ",\"logLevel\":\"loud\",\"subscriptions\":[]}", "logLevel"));
	CHECK(refused(GOOD_HEAD ",\"logLevel\":3,\"subscriptions\":[]}", "logLevel"));
	CHECK(refused(GOOD_HEAD "}", "subscriptions"));
	CHECK(refused(GOOD_HEAD ",\"subscriptions\":{}}", "subscriptions"));
	CHECK(refused(GOOD_HEAD ",\"subscriptions\":[1]}", "not a URI"));
	CHECK(refused(GOOD_HEAD ",\"subscriptions\":[\"\"]}", "not a URI"));
	CHECK(refused(GOOD_HEAD ",\"subscriptions\":[\"a\\u0000b\"]}", "not a URI"));
	/* Deep nesting is refused by the JSON gate, not a crash. */
	n = 60000;
	big = sl_alloc(n + 1);
	memset(big, '[', n);
	big[n] = '\0';
	CHECK(refused(big, "not a JSON object"));
	free(big);
	/* Over 64 KiB: refused before parsing. */
	n = SL_SESSION_RECORD_MAX + 10;
	big = sl_alloc(n + 1);
	memset(big, ' ', n);
	memcpy(big, GOOD_HEAD ",\"subscriptions\":[]}", strlen(GOOD_HEAD ",\"subscriptions\":[]}"));
	big[n] = '\0';
	CHECK(refused(big, "over its bound"));
	free(big);
	/* More subscriptions than a session may have. */
	many = sl_alloc(2 * (SL_SESSION_RECORD_SUBS + 1) * 8 + 200);
	n = (size_t)sprintf(many, GOOD_HEAD ",\"subscriptions\":[");
	for (int i = 0; i <= SL_SESSION_RECORD_SUBS; i++)
		n += (size_t)sprintf(many + n, "%s\"u%d\"", i ? "," : "", i);
	sprintf(many + n, "]}");
	CHECK(refused(many, "too many subscriptions"));
	free(many);
}

TEST(shared_session_record_bound_on_build)
{
	static char uri[2000];
	const char **subs = sl_alloc(64 * sizeof(*subs));
	struct sl_session_record in = { 0 };
	size_t len;

	memset(uri, 'u', sizeof(uri) - 1);
	for (int i = 0; i < 64; i++)
		subs[i] = uri;
	in.caller = "";
	in.version = "2025-11-25";
	in.subs = subs;
	in.nsubs = 64; /* 128 KB of URIs */
	CHECK(sl_session_record_build(&in, &len) == NULL);
	free(subs);
}

static struct sl_gen *gen_with(const char *shared, struct sl_err *err)
{
	char *text = sl_printf("{\"shared\":%s}", shared);
	struct sl_gen *g = t_gen_sluice(text, err);
	free(text);
	return g;
}

TEST(shared_secret_key)
{
	struct sl_err err;
	struct sl_gen *a, *b, *c, *d, *e;

	setenv("SL_TEST_SHARED_SECRET", "0123456789abcdef0123456789abcdef-x", 1);
	a = gen_with("{\"secret\":\"${SL_TEST_SHARED_SECRET}\"}", &err);
	b = gen_with("{\"secret\":\"0123456789abcdef0123456789abcdef-x\"}", &err);
	c = gen_with("{\"secret\":\"0123456789abcdef0123456789abcdef-y\"}", &err);
	d = gen_with("{}", &err);
	CHECK(a && b && c && d);
	if (a && b && c && d) {
		/* One secret, one key (two replicas); another secret, another. */
		CHECK(a->key_shared && b->key_shared && c->key_shared && !d->key_shared);
		CHECK(memcmp(a->key, b->key, 32) == 0);
		CHECK(memcmp(a->key, c->key, 32) != 0);
		CHECK(memcmp(a->key, d->key, 32) != 0);
		/* The key is not the secret itself. */
		CHECK(memcmp(a->key, "0123456789abcdef0123456789abcdef", 32) != 0);
		CHECK_STR(a->cfg->shared_secret, "0123456789abcdef0123456789abcdef-x");
		/* A reload keeps the key. */
		CHECK_INT(sl_gen_new(d->cfg, a, a->stages, a->nstages, &e, &err), 0);
		CHECK(e->key_shared && memcmp(e->key, a->key, 32) == 0);
		/* Its secret changed (removed): that waits for a restart. */
		CHECK(strstr(e->restart_only, "shared.secret") != NULL);
		sl_gen_unref(e);
		CHECK_INT(sl_gen_new(b->cfg, a, a->stages, a->nstages, &e, &err), 0);
		CHECK(strstr(e->restart_only, "shared.secret") == NULL);
		sl_gen_unref(e);
	}
	sl_gen_unref(a);
	sl_gen_unref(b);
	sl_gen_unref(c);
	sl_gen_unref(d);
	/* Too short, empty, unset: refused without echoing it. */
	CHECK(gen_with("{\"secret\":\"short-secret\"}", &err) == NULL);
	CHECK(strstr(err.msg, "sluice.shared.secret") && strstr(err.msg, "32 characters") &&
	      !strstr(err.msg, "short-secret"));
	CHECK(gen_with("{\"secret\":\"\"}", &err) == NULL);
	CHECK(gen_with("{\"secret\":\"${SL_TEST_UNSET_SECRET_X}\"}", &err) == NULL);
	CHECK(gen_with("{\"secret\":32}", &err) == NULL);
}

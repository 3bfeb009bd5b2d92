/* Unit tests of src/shared/fleet.c's pure parts: replica ids, the entries
 * read back from Redis (untrusted: shape, sizes, controls, ids, times) and
 * alive/gone. tests/e2e/fleet.test.mjs runs the heartbeat against Redis. */
#include "unit.h"

#include "config/config.h"
#include "shared/fleet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOW 1800000000000ull

static bool parses(const char *field, const char *json, struct sl_fleet_member *m, const char **why)
{
	return sl_fleet_parse(field, strlen(field), json, strlen(json), NOW, m, why);
}

TEST(fleet_replica_ids)
{
	char id[SL_FLEET_ID_MAX + 1], pid[32];

	CHECK(sl_fleet_id_ok("host-1:8371"));
	CHECK(!sl_fleet_id_ok(""));
	CHECK(!sl_fleet_id_ok(NULL));
	CHECK(!sl_fleet_id_ok("a b"));
	CHECK(!sl_fleet_id_ok("a\x1b[2Jb"));
	CHECK(!sl_fleet_id_ok("caf\xc3\xa9"));
	memset(id, 'x', SL_FLEET_ID_MAX);
	id[SL_FLEET_ID_MAX] = 0;
	CHECK(sl_fleet_id_ok(id));
	{
		char longer[SL_FLEET_ID_MAX + 2];
		memset(longer, 'x', sizeof(longer) - 1);
		longer[sizeof(longer) - 1] = 0;
		CHECK(!sl_fleet_id_ok(longer));
	}
	sl_fleet_default_id(id, sizeof(id));
	snprintf(pid, sizeof(pid), ":%ld", (long)getpid());
	CHECK(sl_fleet_id_ok(id));
	CHECK(strlen(id) > strlen(pid) && !strcmp(id + strlen(id) - strlen(pid), pid));
	/* A small buffer keeps the pid and cuts the host name. */
	{
		char small[12];
		sl_fleet_default_id(small, sizeof(small));
		CHECK(strlen(small) <= 11 && strstr(small, ":") != NULL);
	}
}

TEST(fleet_replica_id_config)
{
	struct sl_config *cfg = NULL;
	struct sl_err err;
	const char *ok = "{\"mcpServers\": {}, \"sluice\": {\"shared\": {\"replicaId\": \"eu-1:8371\"}}}";
	const char *bad = "{\"mcpServers\": {}, \"sluice\": {\"shared\": {\"replicaId\": \"a\\u001bb\"}}}";
	const char *empty = "{\"mcpServers\": {}, \"sluice\": {\"shared\": {\"replicaId\": \"\"}}}";

	CHECK(sl_config_parse("t.json", ok, strlen(ok), &cfg, &err) == 0);
	if (cfg) {
		CHECK_STR(cfg->replica_id, "eu-1:8371");
		sl_config_unref(cfg);
	}
	cfg = NULL;
	CHECK(sl_config_parse("t.json", bad, strlen(bad), &cfg, &err) < 0);
	CHECK(strstr(err.msg, "replicaId") && strstr(err.msg, "printable ASCII"));
	CHECK(sl_config_parse("t.json", empty, strlen(empty), &cfg, &err) < 0);
}

TEST(fleet_entries)
{
	struct sl_fleet_member m;
	const char *why;
	char big[SL_FLEET_ENTRY_MAX + 64];

	CHECK(parses("h:1", "{\"id\":\"h:1\",\"pid\":1,\"version\":\"0.1.0\",\"started\":1799999990000,"
		     "\"lastSeen\":1799999999000,\"listen\":\"127.0.0.1:8371\",\"sessions\":2,"
		     "\"programs\":1,\"upstreams\":{\"up\":1,\"total\":2}}", &m, &why));
	CHECK_STR(m.id, "h:1");
	CHECK_STR(m.listen, "127.0.0.1:8371");
	CHECK_INT(m.pid, 1);
	CHECK_INT(m.sessions, 2);
	CHECK_INT(m.ups_up, 1);
	CHECK_INT(m.ups_total, 2);
	CHECK_INT(m.seen_ms, 1799999999000ull);
	/* Optional members may be absent. */
	CHECK(parses("h:2", "{\"id\":\"h:2\",\"lastSeen\":1799999999000}", &m, &why));
	CHECK_STR(m.version, "");
	/* What is ignored, with why. */
	CHECK(!parses("h:1", "[1]", &m, &why) && !strcmp(why, "not a JSON object"));
	CHECK(!parses("h:1", "{\"id\":\"h:1\",\"lastSeen\":", &m, &why));
	CHECK(!parses("h:1", "{\"id\":\"h:2\",\"lastSeen\":1799999999000}", &m, &why) &&
	      strstr(why, "field"));
	CHECK(!parses("h:1", "{\"id\":\"h:1\"}", &m, &why)); /* never seen */
	CHECK(!parses("h:1", "{\"id\":\"h:1\",\"lastSeen\":-5}", &m, &why));
	CHECK(!parses("h:1", "{\"id\":\"h:1\",\"lastSeen\":1.5}", &m, &why));
	CHECK(!parses("h:1", "{\"id\":\"h:1\",\"lastSeen\":1799999999000,\"pid\":\"1\"}", &m, &why));
	CHECK(!parses("h:1", "{\"id\":\"h:1\",\"lastSeen\":1799999999000,\"upstreams\":[]}", &m, &why));
	/* A terminal escape in a string: ignored, never shown. */
	CHECK(!parses("h:1", "{\"id\":\"h:1\",\"lastSeen\":1799999999000,\"listen\":\"\\u001b[2J\"}",
		      &m, &why));
	CHECK(!parses("h:1", "{\"id\":\"h:1\",\"lastSeen\":1799999999000,\"version\":\"a\\u0000b\"}",
		      &m, &why));
	/* A field with a control character cannot be an id. */
	CHECK(!parses("h\n1", "{\"id\":\"h\\n1\",\"lastSeen\":1799999999000}", &m, &why));
	/* Too long a string, too big an entry. */
	memset(big, 'v', 300);
	snprintf(big + 300, sizeof(big) - 300, "\",\"id\":\"h:1\",\"lastSeen\":1799999999000}");
	memcpy(big, "{\"listen\":\"", 11);
	CHECK(!parses("h:1", big, &m, &why));
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	memcpy(big, "{\"id\":\"h:1\",\"lastSeen\":1799999999000}", 36);
	CHECK(!parses("h:1", big, &m, &why) && !strcmp(why, "too big"));
	/* From the far future (alive forever, never pruned): ignored. */
	CHECK(!parses("h:1", "{\"id\":\"h:1\",\"lastSeen\":1800003700000}", &m, &why) &&
	      strstr(why, "future"));
	/* A little skew is fine. */
	CHECK(parses("h:1", "{\"id\":\"h:1\",\"lastSeen\":1800000005000}", &m, &why));
	/* Nesting beyond the depth limit. */
	{
		char deep[2200];
		size_t n = 0;
		n += (size_t)snprintf(deep, sizeof(deep), "{\"id\":\"h:1\",\"lastSeen\":1,\"x\":");
		for (int i = 0; i < 1000; i++)
			deep[n++] = '[';
		for (int i = 0; i < 1000; i++)
			deep[n++] = ']';
		deep[n++] = '}';
		deep[n] = 0;
		CHECK(!parses("h:1", deep, &m, &why));
	}
}

TEST(fleet_alive_or_gone)
{
	CHECK_STR(sl_fleet_state(NOW, NOW), "alive");
	CHECK_STR(sl_fleet_state(NOW - 3 * SL_FLEET_BEAT_MS, NOW), "alive");
	CHECK_STR(sl_fleet_state(NOW - 3 * SL_FLEET_BEAT_MS - 1, NOW), "gone");
	CHECK_STR(sl_fleet_state(NOW + 1000, NOW), "alive"); /* a clock a little ahead */
}

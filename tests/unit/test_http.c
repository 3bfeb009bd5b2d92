/* Unit tests of the HTTP transport's pure checks: the operator's pages
 * (src/transport/http_operator.c: the peer's own address, IPv4 127/8, ::1,
 * and IPv4 loopback mapped into IPv6 on a dual-stack socket, or
 * sluice.http.adminToken as a bearer; sluice.http.proxies and
 * allowedHosts as parsed and matched), and an adopted session's event ids
 * (src/transport/http_session.c). */
#include "unit.h"

#include "config/config.h"
#include "core/buf.h"
#include "transport/http.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

static bool v4(const char *a)
{
	struct sockaddr_in s = { .sin_family = AF_INET };
	inet_pton(AF_INET, a, &s.sin_addr);
	return sl_http_peer_loopback((struct sockaddr *)&s);
}

static bool v6(const char *a)
{
	struct sockaddr_in6 s = { .sin6_family = AF_INET6 };
	inet_pton(AF_INET6, a, &s.sin6_addr);
	return sl_http_peer_loopback((struct sockaddr *)&s);
}

TEST(http_status_peer_is_loopback_only)
{
	CHECK(v4("127.0.0.1"));
	CHECK(v4("127.255.0.9"));
	CHECK(!v4("10.0.0.1"));
	CHECK(!v4("192.168.1.20"));
	CHECK(!v4("0.0.0.0"));
	CHECK(!v4("128.0.0.1"));
	CHECK(v6("::1"));
	CHECK(v6("::ffff:127.0.0.1"));
	CHECK(!v6("::ffff:10.0.0.1"));
	CHECK(!v6("fe80::1"));
	CHECK(!v6("::"));
	CHECK(!sl_http_peer_loopback(NULL));
}

#define ADMIN "0123456789abcdef0123456789abcdef"

TEST(http_admin_token_is_exact_bearer)
{
	CHECK(sl_http_admin_token_ok(ADMIN, "Bearer " ADMIN));
	CHECK(sl_http_admin_token_ok(ADMIN, "bearer " ADMIN));
	CHECK(!sl_http_admin_token_ok(ADMIN, "Bearer " ADMIN "x"));
	CHECK(!sl_http_admin_token_ok(ADMIN, "Bearer 0123456789abcdef"));
	CHECK(!sl_http_admin_token_ok(ADMIN, "Basic " ADMIN));
	CHECK(!sl_http_admin_token_ok(ADMIN, ADMIN));
	CHECK(!sl_http_admin_token_ok(ADMIN, "Bearer "));
	CHECK(!sl_http_admin_token_ok(ADMIN, NULL));
	/* No token configured: nothing opens the pages from afar. */
	CHECK(!sl_http_admin_token_ok(NULL, "Bearer " ADMIN));
	CHECK(!sl_http_admin_token_ok(NULL, "Bearer "));
}

/* A Last-Event-ID names a stream of this process (resumed, or refused as
 * before) or one another replica issued before this one adopted the
 * session (a new stream instead of a 404). */
TEST(http_event_id_foreign_is_outside_our_numbers)
{
	/* A session of ours: streams 1..3. */
	CHECK(!sl_http_event_id_foreign("1-0", 1, 3));
	CHECK(!sl_http_event_id_foreign("3-17", 1, 3));
	CHECK(sl_http_event_id_foreign("4-1", 1, 3));
	CHECK(sl_http_event_id_foreign("0-1", 1, 3));
	/* No stream yet: every number is another's. */
	CHECK(sl_http_event_id_foreign("1-1", 1, 0));
	/* Adopted, numbered from a base: the old holder's "2-3" is foreign. */
	CHECK(sl_http_event_id_foreign("2-3", 20000001, 2));
	CHECK(!sl_http_event_id_foreign("20000002-3", 20000001, 2));
	CHECK(sl_http_event_id_foreign("20000003-3", 20000001, 2));
	/* At the top of the range: no overflow. */
	CHECK(!sl_http_event_id_foreign("4294967295-1", 4294967295u, 1));
	/* Malformed: not foreign (refused as a bad Last-Event-ID). */
	CHECK(!sl_http_event_id_foreign("x", 1, 3));
	CHECK(!sl_http_event_id_foreign("9-1x", 1, 3));
	CHECK(!sl_http_event_id_foreign("9", 1, 3));
	CHECK(!sl_http_event_id_foreign("", 1, 3));
	CHECK(!sl_http_event_id_foreign(NULL, 1, 3));
}

static struct sl_config *http_cfg(const char *http, struct sl_err *err)
{
	struct sl_config *c = NULL;
	char *text = sl_printf("{\"mcpServers\":{},\"sluice\":{\"http\":%s}}", http);
	int rc = sl_config_parse("t.json", text, strlen(text), &c, err);
	free(text);
	return rc == SL_OK ? c : NULL;
}

static bool proxy4(const struct sl_config *c, const char *a)
{
	struct sockaddr_in s = { .sin_family = AF_INET };
	inet_pton(AF_INET, a, &s.sin_addr);
	return sl_http_peer_proxy(&c->http, (struct sockaddr *)&s);
}

static bool proxy6(const struct sl_config *c, const char *a)
{
	struct sockaddr_in6 s = { .sin6_family = AF_INET6 };
	inet_pton(AF_INET6, a, &s.sin6_addr);
	return sl_http_peer_proxy(&c->http, (struct sockaddr *)&s);
}

/* sluice.http.proxies (issue 32, finding 3): addresses and CIDR ranges,
 * IPv4 also as seen on a dual-stack socket; what is not one is refused
 * with the entry named. */
TEST(http_proxies_match_addresses_and_ranges)
{
	struct sl_err err;
	struct sl_config *c = http_cfg("{\"proxies\":[\"127.0.0.1\",\"10.1.0.0/16\",\"fd00::/8\","
				       "\"::1\",\"192.168.7.9/31\"]}", &err);
	const char *bad[] = { "[\"127.0.0.1/33\"]", "[\"localhost\"]", "[\"10.0.0.0/\"]",
			      "[\"10.0.0.0/-1\"]", "[\"::1/129\"]", "[\"\"]", "[1]", "\"127.0.0.1\"",
			      "[\"10.0.0.0/8x\"]" };

	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_INT(c->http.nproxies, 5);
	CHECK(proxy4(c, "127.0.0.1"));
	CHECK(!proxy4(c, "127.0.0.2"));
	CHECK(proxy4(c, "10.1.255.3"));
	CHECK(!proxy4(c, "10.2.0.1"));
	CHECK(proxy4(c, "192.168.7.8") && proxy4(c, "192.168.7.9") && !proxy4(c, "192.168.7.10"));
	CHECK(proxy6(c, "::ffff:127.0.0.1"));
	CHECK(proxy6(c, "::ffff:10.1.0.1"));
	CHECK(proxy6(c, "fd12::1"));
	CHECK(!proxy6(c, "fe80::1"));
	CHECK(proxy6(c, "::1"));
	CHECK(!proxy6(c, "::2"));
	CHECK(!sl_http_peer_proxy(&c->http, NULL));
	sl_config_unref(c);
	/* None configured: no peer is a proxy. */
	c = http_cfg("{}", &err);
	CHECK(c && !proxy4(c, "127.0.0.1"));
	sl_config_unref(c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *h = sl_printf("{\"proxies\":%s}", bad[i]);
		CHECK(http_cfg(h, &err) == NULL);
		CHECK(strstr(err.msg, "sluice.http.proxies") != NULL);
		free(h);
	}
}

/* sluice.http.allowedHosts: host names, lower-cased; a port, a scheme, a
 * wildcard or too many are refused. */
TEST(http_allowed_hosts_are_names)
{
	struct sl_err err;
	struct sl_config *c = http_cfg("{\"allowedHosts\":[\"MCP.Example.com\",\"gw-1.internal\"]}",
				       &err);
	const char *bad[] = { "[\"mcp.example.com:443\"]", "[\"https://mcp.example.com\"]",
			      "[\"*.example.com\"]", "[\"\"]", "[\".example.com\"]", "[7]", "\"x\"" };

	CHECK(c != NULL);
	if (c) {
		CHECK_STR(c->http.allowed_hosts[0], "mcp.example.com");
		CHECK_STR(c->http.allowed_hosts[1], "gw-1.internal");
		CHECK(c->http.allowed_hosts[2] == NULL);
		sl_config_unref(c);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *h = sl_printf("{\"allowedHosts\":%s}", bad[i]);
		CHECK(http_cfg(h, &err) == NULL);
		CHECK(strstr(err.msg, "sluice.http.allowedHosts") != NULL);
		free(h);
	}
	{
		struct sl_buf b;
		sl_buf_init(&b, 4096);
		(void)!sl_buf_appends(&b, "{\"allowedHosts\":[");
		for (int i = 0; i <= SL_HTTP_NAMES_MAX; i++)
			(void)!sl_buf_printf(&b, "%s\"h%d.example\"", i ? "," : "", i);
		(void)!sl_buf_appends(&b, "]}");
		CHECK(http_cfg(b.data, &err) == NULL);
		CHECK(strstr(err.msg, "at most 64") != NULL);
		sl_buf_dispose(&b);
	}
}

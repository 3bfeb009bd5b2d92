/* Unit tests of the HTTP transport's pure checks: the operator's pages
 * (src/transport/http_operator.c: the peer's own address, IPv4 127/8, ::1,
 * and IPv4 loopback mapped into IPv6 on a dual-stack socket, or
 * sluice.http.adminToken as a bearer), and an adopted session's event ids
 * (src/transport/http_session.c). */
#include "unit.h"

#include "transport/http.h"

#include <arpa/inet.h>
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

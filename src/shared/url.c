/*
 * sluice.shared.redis.url, parsed (url.h). Strict on purpose: a typo in the
 * address of the shared state is found by `sluice check`, not by a replica
 * that quietly serves with local state forever.
 */
#include "shared/url.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* A whole decimal number in [0, max] spelled by s[0..n). */
static int number(const char *s, size_t n, long max)
{
	long v = 0;
	if (n == 0 || n > 9)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v <= max ? (int)v : -1;
}

static int parse_unix(const char *p, struct sl_redis_addr *a, struct sl_err *err)
{
	const char *q = strchr(p, '?');
	size_t n = q ? (size_t)(q - p) : strlen(p);
	int db = 0;

	if (n == 0 || p[0] != '/') {
		sl_err_set(err, "\"unix:\" must be followed by an absolute path");
		return SL_ERR_INVALID;
	}
	if (q && (strncmp(q, "?db=", 4) != 0 ||
		  (db = number(q + 4, strlen(q + 4), SL_REDIS_MAX_DB)) < 0)) {
		sl_err_set(err, "after the socket's path only \"?db=N\" is understood");
		return SL_ERR_INVALID;
	}
	*a = (struct sl_redis_addr){ .unix_path = sl_strndup(p, n), .db = db };
	return SL_OK;
}

static int parse_tcp(const char *p, struct sl_redis_addr *a, struct sl_err *err)
{
	const char *end = p + strcspn(p, "/?#"), *colon, *host = p, *host_end;
	int port = SL_REDIS_PORT, db = 0;

	if (memchr(p, '@', (size_t)(end - p))) {
		sl_err_set(err, "a password in the URL is refused: use sluice.shared.redis.password "
			   "(the URL is shown by `sluice status` and in logs)");
		return SL_ERR_INVALID;
	}
	if (*p == '[') { /* [v6 address] */
		host = p + 1;
		host_end = memchr(host, ']', (size_t)(end - host));
		if (!host_end) {
			sl_err_set(err, "an IPv6 address needs its closing \"]\"");
			return SL_ERR_INVALID;
		}
		colon = host_end + 1 < end && host_end[1] == ':' ? host_end + 1 : NULL;
		if (host_end + 1 < end && !colon) {
			sl_err_set(err, "unexpected text after \"]\"");
			return SL_ERR_INVALID;
		}
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		host_end = colon ? colon : end;
	}
	if (host_end == host) {
		sl_err_set(err, "no host");
		return SL_ERR_INVALID;
	}
	if (colon && (port = number(colon + 1, (size_t)(end - colon - 1), 65535)) <= 0) {
		sl_err_set(err, "the port must be a number from 1 to 65535");
		return SL_ERR_INVALID;
	}
	if (*end == '/' && end[1] && (db = number(end + 1, strlen(end + 1), SL_REDIS_MAX_DB)) < 0) {
		sl_err_set(err, "the path must be a database number (\"/0\")");
		return SL_ERR_INVALID;
	}
	if (*end == '?' || *end == '#') {
		sl_err_set(err, "a query or fragment is not understood");
		return SL_ERR_INVALID;
	}
	*a = (struct sl_redis_addr){ .host = sl_strndup(host, (size_t)(host_end - host)),
				     .port = port, .db = db };
	return SL_OK;
}

int sl_redis_url_parse(const char *url, struct sl_redis_addr *a, struct sl_err *err)
{
	if (strncmp(url, "unix:", 5) == 0)
		return parse_unix(url + 5, a, err);
	if (strncmp(url, "redis://", 8) == 0)
		return parse_tcp(url + 8, a, err);
	if (strncmp(url, "rediss://", 9) == 0) {
		sl_err_set(err, "TLS to Redis (rediss://) is not supported yet: use a loopback or "
			   "unix socket address, or a TLS tunnel");
		return SL_ERR_INVALID;
	}
	sl_err_set(err, "must start with \"redis://\" or \"unix:\"");
	return SL_ERR_INVALID;
}

void sl_redis_addr_dispose(struct sl_redis_addr *a)
{
	free(a->host);
	free(a->unix_path);
	*a = (struct sl_redis_addr){ 0 };
}

char *sl_redis_key(const char *prefix, const char *name)
{
	return sl_printf("%s%s", prefix, name);
}

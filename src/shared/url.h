/*
 * The pure part of the shared state layer (docs/internals/REPLICAS.md):
 * where Redis is (sluice.shared.redis.url) and what keys are called. No
 * I/O, no hiredis: the config module checks a URL with it, and unit tests
 * cover it whole.
 *
 * API:
 *   struct sl_redis_addr a;
 *   if (sl_redis_url_parse("redis://127.0.0.1:6379/2", &a, &err) < 0) ...
 *   a.host "127.0.0.1", a.port 6379, a.db 2 (or a.unix_path "/run/redis.sock")
 *   sl_redis_addr_dispose(&a);
 *   key = sl_redis_key("sluice:", "pins");        "sluice:pins", owned
 */
#ifndef SL_SHARED_URL_H
#define SL_SHARED_URL_H

#include "core/common.h"

#define SL_REDIS_PORT 6379
#define SL_REDIS_MAX_DB 100000 /* Redis has 16 by default; a config can raise it */

struct sl_redis_addr {
	char *host;      /* TCP: a name or an address ("[::1]" without brackets); NULL: unix */
	int port;
	char *unix_path; /* a unix socket; NULL: TCP */
	int db;          /* SELECT db; 0 is not sent */
};

/* "redis://host[:port][/db]" or "unix:/path[?db=N]". User information
 * (a password in the URL) is refused: sluice.shared.redis.password keeps it
 * out of logs and `sluice status`, which show the URL. On success *a is the
 * caller's to dispose; on failure err says why and *a is untouched. */
int sl_redis_url_parse(const char *url, struct sl_redis_addr *a, struct sl_err *err) SL_MUST_USE;
void sl_redis_addr_dispose(struct sl_redis_addr *a);
/* prefix + name, owned by the caller. */
char *sl_redis_key(const char *prefix, const char *name);

#endif

/*
 * The Streamable HTTP front end: the single MCP endpoint /mcp served with
 * libmicrohttpd, driven from the gateway's libuv loop (MHD's epoll fd is
 * watched by a uv_poll, its timeout by a uv_timer). See
 * docs/internals/HTTP.md for the rules.
 *
 *   session era (2025-11-25, 2025-06-18, 2025-03-26): one struct
 *   sl_session per Mcp-Session-Id; POST answers in JSON or SSE, GET opens
 *   the session's stream, DELETE ends it.
 *   2026-07-28: POST only, no sessions; each request gets a short-lived
 *   session of its own.
 *
 * API:
 *   if (sl_http_start(loop, gw, cfg, "127.0.0.1:8370", &h, &err) < 0) ... err.msg
 *   on SIGHUP: sl_http_tls_load(h, newcfg, &t, &err), then sl_http_tls_swap(h, newcfg, t)
 *   sl_http_stop(h);   ends every session and stops listening
 *   sl_http_free(h);   from the loop, after stop
 */
#ifndef SL_TRANSPORT_HTTP_H
#define SL_TRANSPORT_HTTP_H

#include "gateway/session.h"

struct sl_http;
struct sl_tls;

/* Listens on listen ("host:port"; port 0 picks one, logged), over HTTPS
 * when cfg has sluice.http.tls. Fails with a clear message on a bad
 * address, a non-loopback address without an authentication method
 * (sluice.http.bearerToken or sluice.http.auth), a certificate or key that
 * does not load (naming the file), a libmicrohttpd without HTTPS, or a port
 * that cannot be bound. cfg and gw are borrowed for the transport's life. */
int sl_http_start(uv_loop_t *loop, struct sl_gateway *gw, const struct sl_config *cfg,
		  const char *listen, struct sl_http **out, struct sl_err *err) SL_MUST_USE;
/* A reload's new certificate, in two steps so that a reload is taken whole
 * or not at all (serve's SIGHUP): sl_http_tls_load reads the files cfg's
 * sluice.http.tls names into *out (the caller's reference), failing with
 * sl_tls_load's message while nothing changes; *out is NULL when there is
 * nothing to load (plain HTTP), or when cfg would turn TLS on or off, which
 * takes a restart (logged). sl_http_tls_swap(h, cfg, t) (t consumed, NULL
 * is no change) makes t the credentials of every later handshake; the old
 * ones stay in memory until every connection accepted before the swap has
 * closed. Connections and sessions are untouched. */
int sl_http_tls_load(struct sl_http *h, const struct sl_config *cfg, struct sl_tls **out,
		     struct sl_err *err) SL_MUST_USE;
void sl_http_tls_swap(struct sl_http *h, const struct sl_config *cfg, struct sl_tls *t);
void sl_http_stop(struct sl_http *h);
/* A loopback peer: an IPv4 address in 127.0.0.0/8, ::1, or an IPv4-mapped
 * 127.x (the peer's own address, never a header). */
struct sockaddr;
bool sl_http_peer_loopback(const struct sockaddr *sa);
/* Whether the peer is one of sluice.http.proxies (cfg): a reverse proxy
 * whose requests come from elsewhere. Pure. */
struct sl_http_config;
bool sl_http_peer_proxy(const struct sl_http_config *cfg, const struct sockaddr *sa);
/* Whether a request may see the operator's pages (/status, /metrics,
 * /admin): from a local peer (loopback, not one of sluice.http.proxies,
 * and carrying no header a proxy adds: never relayed), or carrying
 * `Authorization: Bearer <sluice.http.adminToken>`. */
struct MHD_Connection;
bool sl_http_operator_allowed(struct sl_http *h, struct MHD_Connection *c);
/* Whether an Authorization header value is "Bearer <token>" (scheme in any
 * case), compared in constant time; false when token is NULL. Pure. */
bool sl_http_admin_token_ok(const char *token, const char *authorization);

/* Whether a Last-Event-ID names a stream this process never issued for the
 * session whose streams it numbered first..first+count-1: one another
 * replica issued before this one adopted the session. False for a value that
 * is not "<stream>-<n>" (refused as before). Pure. */
bool sl_http_event_id_foreign(const char *last, uint32_t first, uint32_t count);
void sl_http_free(struct sl_http *h);
/* "host:port" it listens on, the port bound when 0 was asked (the fleet's
 * heartbeat shows it); into out, cut to size. */
void sl_http_address(const struct sl_http *h, char *out, size_t size);

#endif

/*
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) of this gateway: the
 * document that tells a client which authorization servers issue tokens
 * for it, and where it is served. Everything is built from
 * sluice.http.auth.resource, never from a request's Host header, so that
 * a forged Host cannot point a client at another server.
 *
 * MCP 2025-11-25 / 2026-07-28 authorization: servers MUST implement RFC
 * 9728; the 401's WWW-Authenticate carries resource_metadata.
 */
#ifndef SL_AUTH_METADATA_H
#define SL_AUTH_METADATA_H

#include "config/config.h"

/* The metadata's URL: the resource's origin, /.well-known/oauth-protected-
 * resource, then the resource's path (RFC 9728 §3.1). */
char *sl_prm_url(const char *resource);
/* Whether an HTTP request path is one the document is served at: the
 * path-suffixed form of sl_prm_url, or the bare well-known path. */
bool sl_prm_path(const char *resource, const char *path);
/* The document (JSON), for a configured resource. */
char *sl_prm_document(const struct sl_auth_config *a, size_t *len);

#endif

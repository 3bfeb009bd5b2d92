/*
 * MCP protocol constants and era helpers (no I/O).
 *
 * Two eras: the session era (2025-11-25, 2025-06-18, 2025-03-26) with an
 * initialize handshake, and 2026-07-28, stateless, where every request
 * carries its protocol version and client capabilities in params._meta.
 */
#ifndef SL_PROTO_MCP_H
#define SL_PROTO_MCP_H

#include "core/json.h"

#define SL_MCP_LATEST_LEGACY "2025-11-25"
#define SL_MCP_MODERN "2026-07-28"

/* _meta keys of 2026-07-28 requests and results. */
#define SL_MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define SL_MCP_META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define SL_MCP_META_CLIENT "io.modelcontextprotocol/clientInfo"
#define SL_MCP_META_SERVER "io.modelcontextprotocol/serverInfo"
#define SL_MCP_META_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"

/* Method names the gateway itself sends or routes by. */
#define SL_MCP_INITIALIZE "initialize"
#define SL_MCP_INITIALIZED "notifications/initialized"
#define SL_MCP_CANCELLED "notifications/cancelled"
#define SL_MCP_PROGRESS "notifications/progress"
#define SL_MCP_ROOTS_CHANGED "notifications/roots/list_changed"
#define SL_MCP_ELICIT "elicitation/create"
#define SL_MCP_LISTEN "subscriptions/listen"
#define SL_MCP_SUBSCRIPTIONS_ACK "notifications/subscriptions/acknowledged"

/* HTTP headers (MCP 2025-11-25 transports; 2026-07-28 HTTP). */
#define SL_MCP_HDR_SESSION "Mcp-Session-Id"
#define SL_MCP_HDR_VERSION "MCP-Protocol-Version"
#define SL_MCP_HDR_METHOD "Mcp-Method"
#define SL_MCP_HDR_NAME "Mcp-Name"

/* MCP 2026-07-28 error codes. */
#define SL_MCP_MISSING_CAPABILITY (-32021)
#define SL_MCP_UNSUPPORTED_VERSION (-32022)

/* True for a session-era version sluice speaks. */
bool sl_mcp_legacy_version(const char *v);
/* The versions sluice serves, newest first, as a JSON array in d. */
yyjson_mut_val *sl_mcp_versions(yyjson_mut_doc *d);

#endif

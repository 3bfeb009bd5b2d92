/*
 * MCP protocol constants and era helpers (no I/O).
 *
 * Two eras: the session era (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)
 * with an initialize handshake, and 2026-07-28, stateless, where every request
 * carries its protocol version and client capabilities in params._meta.
 */
#ifndef SL_PROTO_MCP_H
#define SL_PROTO_MCP_H

#include "core/json.h"

#define SL_MCP_LATEST_LEGACY "2025-11-25"
#define SL_MCP_OLDEST "2024-11-05"
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
/* Claude Code: a tool loaded at once, never deferred behind its tool search */
#define SL_MCP_META_ALWAYS_LOAD "anthropic/alwaysLoad"

/* MCP Apps (SEP-1865, the io.modelcontextprotocol/ui extension, stable
 * 2026-01-26): a tool names its View, a ui:// resource of its server, in
 * _meta.ui.resourceUri (or the deprecated _meta["ui/resourceUri"]), and
 * says in _meta.ui.visibility who may call it (default ["model", "app"]). */
#define SL_MCP_UI_EXT "io.modelcontextprotocol/ui"
#define SL_MCP_UI_SCHEME "ui://"
#define SL_MCP_UI_LEGACY_KEY "ui/resourceUri"
#define SL_MCP_UI_MIME "text/html;profile=mcp-app"

/* MCP 2026-07-28 error codes. */
#define SL_MCP_MISSING_CAPABILITY (-32021)
#define SL_MCP_UNSUPPORTED_VERSION (-32022)

/* True for a session-era version sluice speaks. */
bool sl_mcp_legacy_version(const char *v);
/* The versions sluice serves, newest first, as a JSON array in d. */
yyjson_mut_val *sl_mcp_versions(yyjson_mut_doc *d);
/* The versions sluice speaks, newest first, as text ("2026-07-28, 2025-11-25,
 * ..."), for messages. Static storage. */
const char *sl_mcp_versions_text(void);

/*
 * What older session-era versions lack (docs/internals/SESSIONS.md, "Older
 * versions"). Versions are dates, so "older" is a string comparison; a
 * version this table does not know (NULL, 2026-07-28) lacks nothing.
 */

/* False when method is a request that version v lacks (elicitation/create
 * before 2025-06-18): a peer of that version must not send or receive it. */
bool sl_mcp_has_method(const char *v, const char *method);
/* The client capabilities caps minus those version v lacks (elicitation
 * before 2025-06-18, tasks before 2025-11-25), as a new document whose root
 * is the object (the caller frees it). caps may be NULL: an empty object. */
yyjson_doc *sl_mcp_era_caps(yyjson_val *caps, const char *v);
/* Rewrites msg, a JSON-RPC message of d about to go to a peer that speaks
 * v, so that it uses nothing v lacks: content blocks v has no type for
 * become text blocks describing them, structuredContent becomes a text
 * block when there is no content, and fields of tools, resources, prompts,
 * capabilities and progress that v lacks are dropped. Everything else is
 * left as it is; a no-op for the latest versions. */
void sl_mcp_era_map(yyjson_mut_doc *d, yyjson_mut_val *msg, const char *v);

/* The ui:// resource tool (a tools/list entry) names as its View, or NULL:
 * _meta.ui.resourceUri, else _meta["ui/resourceUri"]. Borrowed from tool. */
const char *sl_mcp_tool_ui_uri(yyjson_val *tool);
/* MCP Apps visibility: a tool whose _meta.ui.visibility is an array without
 * "model" is for its View only (a host must not list it to the model); one
 * whose array lacks "app" must not be called by a View. Without the array
 * both may. */
bool sl_mcp_tool_app_only(yyjson_val *tool);
bool sl_mcp_tool_app_callable(yyjson_val *tool);

/* An elicitation's requestedSchema asking one yes/no question: a required
 * boolean property key, shown as title, false by default (MCP elicitation:
 * a flat object of primitive properties). */
yyjson_mut_val *sl_mcp_yes_no_schema(yyjson_mut_doc *d, const char *key, const char *title);

#endif

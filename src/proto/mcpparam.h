/*
 * Tool parameters mirrored into HTTP headers (MCP 2026-07-28 Streamable
 * HTTP "Custom Headers from Tool Parameters", SEP-2243): a property of a
 * tool's inputSchema may carry "x-mcp-header": "Name", and a tools/call
 * over HTTP then carries the argument as `Mcp-Param-Name: value`, plain
 * when it is header-safe ASCII, else `=?base64?...?=`. No I/O.
 *
 * The declarations are checked as the spec requires of a client (else the
 * tool is left out of the catalog): a non-empty RFC 9110 token, unique
 * ignoring case, on a string, integer or boolean property reached from the
 * root through `properties` alone. sluice adds its own bounds: at most
 * SL_MCPPARAM_MAX declarations, names of at most SL_MCPPARAM_NAME_MAX
 * characters, at most SL_MCPPARAM_DEPTH properties deep; a value whose
 * encoding is over SL_MCPPARAM_VALUE_MAX is not mirrored.
 *
 * API:
 *   if (!sl_mcpparam_check(schema, why, sizeof(why))) leave the tool out
 *   n = sl_mcpparam_headers(schema, args, hs, SL_MCPPARAM_MAX);   toward a server
 *   ...add "Mcp-Param-<hs[i].name>: <hs[i].value>"; sl_mcpparam_headers_free(hs, n);
 *   why = sl_mcpparam_mismatch(schema, args, get_header, ctx);     from a client
 */
#ifndef SL_PROTO_MCPPARAM_H
#define SL_PROTO_MCPPARAM_H

#include "core/json.h"

#include <stdbool.h>
#include <stddef.h>

#define SL_MCPPARAM_PREFIX "Mcp-Param-"
#define SL_MCPPARAM_MAX 32          /* declarations in one tool's inputSchema */
#define SL_MCPPARAM_NAME_MAX 64     /* characters of one x-mcp-header value */
#define SL_MCPPARAM_DEPTH 8         /* properties steps from the root to one */
#define SL_MCPPARAM_VALUE_MAX 8192  /* bytes of one header value, encoded */

/* One header to send: name is the x-mcp-header value (borrowed from the
 * schema), value the encoded argument (owned). */
struct sl_mcpparam_header {
	const char *name;
	char *value;
};

/* True when schema's x-mcp-header declarations (if any) are valid; else
 * false with why (a sentence naming the property). schema may be NULL. */
bool sl_mcpparam_check(yyjson_val *schema, char *why, size_t n);
/* True when schema declares any x-mcp-header. */
bool sl_mcpparam_any(yyjson_val *schema);
/* The headers a tools/call with args carries for a valid schema: one per
 * declaration whose argument is present, not null, and of its type (at
 * most max). Returns how many were written to out. */
size_t sl_mcpparam_headers(yyjson_val *schema, yyjson_val *args, struct sl_mcpparam_header *out,
			   size_t max);
void sl_mcpparam_headers_free(struct sl_mcpparam_header *h, size_t n);
/* The header value for v (a string, integer or boolean): plain when it is
 * header-safe ASCII without leading or trailing whitespace and not the
 * sentinel's shape, else =?base64?<base64 of its UTF-8>?=. Malloc'd; NULL
 * for another type or an integer outside JavaScript's safe range. */
char *sl_mcpparam_encode(yyjson_val *v);
/* The bytes a header value stands for (decoded when it is the base64
 * sentinel), malloc'd with a NUL after them, their count in *len; NULL
 * when it holds a character a header value may not (a control, non-ASCII)
 * or is a sentinel that is not base64. */
char *sl_mcpparam_decode(const char *h, size_t *len);

/* A tools/call's headers against its tool's (valid) schema, as a server
 * checks them: get(ctx, name) is the request's Mcp-Param-<name> header,
 * or NULL. NULL when they agree; else why (a static sentence, or in buf):
 * a declared argument present without its header, a header whose value
 * is malformed or differs from the argument (integers compared as
 * numbers), a header for an argument that is absent. */
const char *sl_mcpparam_mismatch(yyjson_val *schema, yyjson_val *args,
				 const char *(*get)(void *ctx, const char *name), void *ctx,
				 char *buf, size_t n);

#endif

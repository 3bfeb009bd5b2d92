/*
 * The stdio front end: one MCP session on the gateway's stdin and stdout
 * (MCP stdio transport: one JSON-RPC message per line, UTF-8, nothing but
 * MCP on stdout; logs go to stderr). Works with pipes, terminals and files.
 *
 * API:
 *   t = sl_stdio_start(loop, gw, max_line, on_end, ctx);  on_end when stdin ends
 *   sl_stdio_free(t);   from the loop, after on_end
 */
#ifndef SL_TRANSPORT_STDIO_H
#define SL_TRANSPORT_STDIO_H

#include "gateway/session.h"

struct sl_stdio;

typedef void (*sl_stdio_end_fn)(void *ctx);

struct sl_stdio *sl_stdio_start(uv_loop_t *loop, struct sl_gateway *gw, size_t max_line,
				sl_stdio_end_fn on_end, void *ctx);
/* Stops reading, closes the session (cancelling its calls). */
void sl_stdio_close(struct sl_stdio *t);
void sl_stdio_free(struct sl_stdio *t);
struct sl_session *sl_stdio_session(struct sl_stdio *t);

#endif

/*
 * The router's gateway tools: search_tools, describe_tools, list_servers,
 * list_tools and invoke_tool (router mode), search_tools and describe_tools
 * (code mode), or search_tools alone (hybrid mode). This is the thin front:
 * ranking and TypeScript signatures are src/discovery/'s.
 */
#ifndef SL_GATEWAY_ROUTER_H
#define SL_GATEWAY_ROUTER_H

#include "gateway/session.h"

struct sl_view;

/* Appends the gateway tools of v's mode to arr (in d). */
void sl_router_list(const struct sl_view *v, yyjson_mut_doc *d, yyjson_mut_val *arr);
/* True for a name the gateway answers itself in some mode (the router's
 * tools, execute_code): an upstream tool never takes it unprefixed, nor
 * does a profile's rename. */
bool sl_router_reserved(const char *name);
/* True if name is a gateway tool in v's mode. */
bool sl_router_handles(const struct sl_view *v, const char *name);
/* Runs gateway tool name for request m (taken). */
void sl_router_call(struct sl_session *s, struct sl_msg *m, bool modern, const char *name,
		    yyjson_val *args);

#endif

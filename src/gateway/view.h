/*
 * A session's view of the catalog: which servers and tools its profile
 * (sluice.profiles, docs/PROFILES.md) shows, under which names, in which
 * exposure mode. Every place that lists, finds or calls a tool, a server,
 * a resource or a prompt for a session asks here, so that an entry outside
 * the view is unknown everywhere alike (tools/list and tools/call, the
 * router's tools, search_tools and describe_tools, a program's
 * tools.<server>.<tool>, resources, prompts, completions, notifications).
 *
 * The view is computed from the gateway's current config at each use, and
 * is never kept: a reload that changes or removes a profile applies to
 * its sessions' next request (a removed profile's view shows nothing; the
 * HTTP front end answers 404 before a session is reached).
 *
 * Names. A tool keeps its catalog names unless its profile renames it:
 * the new name is then its whole name in passthrough and hybrid (exposed),
 * and its name within its server in router and code modes (local). A
 * rename is applied only when no other tool of the view has that name in
 * the catalog (either kind), so names in a view stay unique; the gateway
 * warns of the others when the catalog changes (sl_view_warn). The old
 * names of a renamed tool name nothing in its view.
 *
 * API:
 *   struct sl_view v;
 *   sl_view_of(gw, s->caller, &v);
 *   if (v.exposure == SL_EXPOSE_ROUTER) ...; if (v.code) ...execute_code
 *   for each catalog entry e: if ((name = sl_view_exposed(&v, e))) list it as name
 *   e = sl_view_tool(&v, "github__x");          tools/call
 *   e = sl_view_find(&v, u, "x");               invoke_tool, programs
 *   e = sl_view_app_tool(&v, "x");              tools/call from an MCP Apps View
 */
#ifndef SL_GATEWAY_VIEW_H
#define SL_GATEWAY_VIEW_H

#include "gateway/gateway.h"

struct sl_caller;

struct sl_view {
	const struct sl_gateway *gw;
	const struct sl_caller *who;      /* borrowed: whose view (policy hides per caller) */
	const struct sl_profile *profile; /* NULL: the whole catalog */
	enum sl_exposure exposure;
	bool code;                        /* execute_code is offered */
	bool gone;                        /* its profile was removed: nothing is shown */
};

/* The view of who's profile (NULL, or no profile: the default's) in gw's
 * current config. Never fails; see gone. */
void sl_view_of(const struct sl_gateway *gw, const struct sl_caller *who, struct sl_view *v);
/* The whole catalog in sluice.exposure (no session: sluice exec). */
void sl_view_all(const struct sl_gateway *gw, struct sl_view *v);
/* Whether the profile shows server u (by its configured name). */
bool sl_view_server(const struct sl_view *v, const struct sl_upstream *u);
/* Whether the profile shows server's tool (its own name), whether or not
 * the catalog lists it, and the name is not the old name of a rename. */
bool sl_view_admits(const struct sl_view *v, const char *server, const char *tool);
/* The name of catalog tool e in v: exposed (passthrough and hybrid) or
 * local (its name within its server); NULL when v does not show it, and
 * local is NULL for a tool only MCP Apps Views may call (the model's ways
 * to name tools: the router, search, programs). Borrowed from the catalog
 * or the config. */
const char *sl_view_exposed(const struct sl_view *v, const struct sl_entry *e);
const char *sl_view_local(const struct sl_view *v, const struct sl_entry *e);
/* The catalog tool an exposed name (tools/call), or u's local name,
 * names in v; NULL: unknown in this view. */
const struct sl_entry *sl_view_tool(const struct sl_view *v, const char *exposed);
const struct sl_entry *sl_view_find(const struct sl_view *v, const struct sl_upstream *u,
				    const char *local);
/* MCP Apps: the tool a View names by its server's own name (a View knows
 * no gateway, so its tools/call says "get-time", not "basic__get-time"):
 * the one tool of that own name, in v and callable by a View
 * (_meta.ui.visibility, if any, names "app"), among the servers of v that
 * have Views (a tool with _meta.ui.resourceUri); NULL if none, or if two
 * such servers have it. For a name no exposed tool has. */
const struct sl_entry *sl_view_app_tool(const struct sl_view *v, const char *name);
/* Whether the tool v serves as name carries _meta["anthropic/alwaysLoad"]:
 * it matches the profile's alwaysLoad globs, else sluice.alwaysLoad's,
 * else sluice's own tools (sl_always_load_default). */
bool sl_view_always_load(const struct sl_view *v, const char *name);
/* Logs each rename of each profile that the current catalog keeps from
 * applying (its new name is another tool's): once per catalog change. */
void sl_view_warn(const struct sl_gateway *gw);

#endif

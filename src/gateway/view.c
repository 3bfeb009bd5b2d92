/* A session's view of the catalog: see view.h. */
#include "gateway/view.h"
#include "auth/caller.h"
#include "core/glob.h"
#include "core/log.h"
#include "proto/mcp.h"

#include <stdlib.h>
#include <string.h>

void sl_view_of(const struct sl_gateway *gw, const struct sl_caller *who, struct sl_view *v)
{
	const char *name = who ? who->profile : NULL;
	const struct sl_profile *p = sl_config_profile(gw->gen->cfg, name);

	memset(v, 0, sizeof(*v));
	v->gw = gw;
	v->who = who;
	v->profile = p;
	/* Named but not configured: a reload removed it under the session. */
	v->gone = name && !p;
	v->exposure = p && p->exposure_set ? p->exposure : gw->gen->cfg->exposure;
	v->code = !v->gone && (gw->gen->cfg->code_offered || v->exposure == SL_EXPOSE_CODE);
}

bool sl_view_always_load(const struct sl_view *v, const char *name)
{
	const char *const *globs = v->profile && v->profile->always_load ?
		(const char *const *)v->profile->always_load :
		v->gw->gen->cfg->always_load ? (const char *const *)v->gw->gen->cfg->always_load :
		sl_always_load_default;

	for (size_t i = 0; globs[i]; i++)
		if (sl_glob_match(globs[i], name))
			return true;
	return false;
}

void sl_view_all(const struct sl_gateway *gw, struct sl_view *v)
{
	memset(v, 0, sizeof(*v));
	v->gw = gw;
	v->exposure = gw->gen->cfg->exposure;
	v->code = gw->gen->cfg->code_enabled;
}

static bool server_named(const struct sl_view *v, const char *server)
{
	if (v->gone)
		return false;
	if (!v->profile || !v->profile->servers)
		return true;
	for (size_t i = 0; v->profile->servers[i]; i++)
		if (sl_glob_match(v->profile->servers[i], server))
			return true;
	return false;
}

bool sl_view_server(const struct sl_view *v, const struct sl_upstream *u)
{
	return server_named(v, u->name);
}

/* The profile's servers and tools globs, names aside. Asked for every
 * tool of a listing: "server.tool" is made on the stack when it fits. */
static bool shows(const struct sl_view *v, const char *server, const char *tool)
{
	size_t ns, nt;
	bool hit = false;
	char buf[256], *full = buf;

	if (!server_named(v, server))
		return false;
	if (!v->profile || !v->profile->tools)
		return true;
	ns = strlen(server);
	nt = strlen(tool);
	if (ns + nt + 2 > sizeof(buf))
		full = sl_alloc(ns + nt + 2);
	memcpy(full, server, ns);
	full[ns] = '.';
	memcpy(full + ns + 1, tool, nt + 1);
	for (size_t i = 0; v->profile->tools[i] && !hit; i++)
		hit = sl_glob_match(v->profile->tools[i], full);
	if (full != buf)
		free(full);
	return hit;
}

/* key is "server.tool" for exactly that server and tool. */
static bool key_is(const char *key, const char *server, const char *tool)
{
	size_t n = strlen(server);
	return strncmp(key, server, n) == 0 && key[n] == '.' && strcmp(key + n + 1, tool) == 0;
}

/* The new name the profile configures for server's tool, or NULL. */
static const char *configured(const struct sl_view *v, const char *server, const char *tool)
{
	for (size_t i = 0; v->profile && i < v->profile->nrename; i++)
		if (key_is(v->profile->rename[i].key, server, tool))
			return v->profile->rename[i].value;
	return NULL;
}

static bool in_view(const struct sl_view *v, const struct sl_entry *e)
{
	return shows(v, e->up->name, e->name);
}

/* Another tool of the view that has name in the catalog: exposed, or as
 * its own name within e's server. */
static const struct sl_entry *taken(const struct sl_view *v, const struct sl_entry *e,
				    const char *name)
{
	const struct sl_catalog *c = &v->gw->catalog;
	const struct sl_entry *o = sl_catalog_tool(c, name);
	if (o && o != e && in_view(v, o))
		return o;
	o = sl_catalog_find(c, e->up->name, name);
	if (o && o != e && in_view(v, o))
		return o;
	return NULL;
}

/* e's new name in v, if its rename applies. */
static const char *renamed(const struct sl_view *v, const struct sl_entry *e)
{
	const char *r = configured(v, e->up->name, e->name);
	return r && !taken(v, e, r) ? r : NULL;
}

bool sl_view_admits(const struct sl_view *v, const char *server, const char *tool)
{
	return shows(v, server, tool) && !configured(v, server, tool);
}

const char *sl_view_exposed(const struct sl_view *v, const struct sl_entry *e)
{
	const char *r;
	if (!in_view(v, e))
		return NULL;
	r = renamed(v, e);
	return r ? r : e->exposed;
}

const char *sl_view_local(const struct sl_view *v, const struct sl_entry *e)
{
	const char *r;
	/* MCP Apps: a tool only its View may call has no name for the model,
	 * in the router's lists, search or a program (SEP-1865 visibility). */
	if (!in_view(v, e) || sl_mcp_tool_app_only(e->def))
		return NULL;
	r = renamed(v, e);
	return r ? r : e->name;
}

/* The catalog tool a rename's key names, or NULL: looked up at each of the
 * key's dots (a server's or a tool's name may hold one); of several
 * readings, the first in the catalog, as a scan of it would find. */
static const struct sl_entry *by_key(const struct sl_view *v, const char *key)
{
	const struct sl_catalog *c = &v->gw->catalog;
	const struct sl_entry *hit = NULL;
	char *server = sl_strdup(key);

	for (char *dot = strchr(server, '.'); dot; dot = strchr(dot + 1, '.')) {
		const struct sl_entry *e;
		*dot = '\0';
		e = sl_catalog_find(c, server, dot + 1);
		*dot = '.';
		if (e && (!hit || e < hit))
			hit = e;
	}
	free(server);
	return hit;
}

/* The tool whose applied rename is name (of server u only, if not NULL). */
static const struct sl_entry *by_new_name(const struct sl_view *v, const struct sl_upstream *u,
					  const char *name)
{
	for (size_t i = 0; v->profile && i < v->profile->nrename; i++) {
		const struct sl_entry *e;
		if (strcmp(v->profile->rename[i].value, name) != 0)
			continue;
		/* New names are unique in a profile (the loader checks). */
		e = by_key(v, v->profile->rename[i].key);
		return e && (!u || e->up == u) && in_view(v, e) && renamed(v, e) ? e : NULL;
	}
	return NULL;
}

/* Whether u has a tool with an MCP Apps View in v. */
static bool has_views(const struct sl_view *v, const struct sl_upstream *u)
{
	const struct sl_catalog *c = &v->gw->catalog;
	for (size_t i = 0; i < c->tools.n; i++)
		if (c->tools.v[i].up == u && sl_mcp_tool_ui_uri(c->tools.v[i].def) &&
		    in_view(v, &c->tools.v[i]))
			return true;
	return false;
}

const struct sl_entry *sl_view_tool(const struct sl_view *v, const char *exposed)
{
	const struct sl_entry *e;
	if (v->gone)
		return NULL;
	if ((e = by_new_name(v, NULL, exposed)))
		return e;
	e = sl_catalog_tool(&v->gw->catalog, exposed);
	return e && in_view(v, e) && !renamed(v, e) ? e : NULL;
}

const struct sl_entry *sl_view_find(const struct sl_view *v, const struct sl_upstream *u,
				    const char *local)
{
	const struct sl_entry *e;
	if (!sl_view_server(v, u))
		return NULL;
	if ((e = by_new_name(v, u, local)))
		return e;
	e = sl_catalog_find(&v->gw->catalog, u->name, local);
	return e && in_view(v, e) && !renamed(v, e) ? e : NULL;
}

const struct sl_entry *sl_view_app_tool(const struct sl_view *v, const char *name)
{
	const struct sl_catalog *c = &v->gw->catalog;
	const struct sl_entry *hit = NULL;

	if (v->gone)
		return NULL;
	for (size_t i = 0; i < c->tools.n; i++) {
		const struct sl_entry *e = &c->tools.v[i];
		if (strcmp(e->name, name) != 0 || !sl_mcp_tool_app_callable(e->def) ||
		    !has_views(v, e->up) || sl_view_find(v, e->up, name) != e)
			continue;
		if (hit)
			return NULL; /* two servers' Views could mean it: neither */
		hit = e;
	}
	return hit;
}

void sl_view_warn(const struct sl_gateway *gw)
{
	for (size_t i = 0; i < gw->gen->cfg->nprofiles; i++) {
		const struct sl_profile *p = &gw->gen->cfg->profiles[i];
		struct sl_view v = { .gw = gw, .profile = p };
		for (size_t j = 0; j < p->nrename; j++) {
			const struct sl_entry *e = by_key(&v, p->rename[j].key), *o;
			if (!e || !in_view(&v, e) || !(o = taken(&v, e, p->rename[j].value)))
				continue;
			sl_log(SL_LOG_WARN, "profile '%s': %s keeps its name: '%s' is the name of "
			       "%s.%s, another tool of the profile", p->name, p->rename[j].key,
			       p->rename[j].value, o->up->name, o->name);
		}
	}
}

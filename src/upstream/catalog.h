/*
 * The merged catalog: every upstream's tools and prompts under one
 * namespace, and resource URIs prefixed reversibly.
 *
 * Exposed names are "server__tool", sanitised to [A-Za-z0-9_-] and at most
 * 64 characters. A name that is too long, or that two entries would share,
 * gets a short hash suffix instead: a tool is never silently shadowed.
 * Resource URIs become "sluice://<server>/<original uri>", but an MCP Apps
 * View's "ui://<rest>" becomes "ui://<server>/<rest>" (its scheme is
 * required), and a ui:// URI whose authority is a server's name is always
 * read as that server's namespaced one.
 *
 * A server configured with "prefix": false keeps its own names and URIs
 * (an MCP name of at most 128 characters of [A-Za-z0-9_.-]). Where such a
 * name is taken by another entry or by one of the gateway's own tools, or
 * such a URI is listed by two servers or looks like one of ours, that entry
 * falls back to the prefixed form, with a warning in the log.
 *
 * One server's entries are unique by name: a name it lists twice is kept
 * for its first definition (the others could never be called apart), and a
 * name containing a NUL is left out (it would be read as a shorter name);
 * both with a warning naming server and entry.
 *
 * Entries borrow from the upstreams' lists: rebuild after any upstream
 * reports a change, before anything reads the catalog again.
 */
#ifndef SL_UPSTREAM_CATALOG_H
#define SL_UPSTREAM_CATALOG_H

#include "core/map.h"
#include "upstream/upstream.h"

#define SL_EXPOSED_MAX 64
#define SL_URI_PREFIX "sluice://"

struct sl_entry {
	char *exposed;            /* owned */
	struct sl_upstream *up;   /* borrowed, lives as long as the gateway */
	yyjson_val *def;          /* the upstream's definition, borrowed */
	const char *name;         /* the upstream's own name for it */
};

struct sl_entries {
	struct sl_entry *v;
	size_t n;
	struct sl_map by_name;   /* exposed name -> entry */
	struct sl_map by_server; /* server name -> struct sl_map * (its own name -> entry) */
};

struct sl_catalog {
	struct sl_entries tools;
	struct sl_entries prompts;
	/* URI of a resource of an unprefixed server -> its upstream, or
	 * SL_CATALOG_TAKEN when two servers list it. */
	struct sl_map uris;
	struct sl_upstream **ups; /* borrowed from the last rebuild */
	size_t nups;
	uint64_t version;         /* bumped by each rebuild that changed the tool names or
				   * received a server's list anew (struct sl_item_list) */
	/* Names the gateway answers itself (set by the owner; NULL: none). */
	bool (*reserved)(const char *name);
};

#define SL_CATALOG_TAKEN ((void *)&sl_catalog_taken)
extern const char sl_catalog_taken;

void sl_catalog_init(struct sl_catalog *c);
void sl_catalog_dispose(struct sl_catalog *c);
/* Rebuilds from the ready (or restarting) upstreams, in config order.
 * Returns true if the set of exposed tool names changed. */
bool sl_catalog_rebuild(struct sl_catalog *c, struct sl_upstream **ups, size_t n);
const struct sl_entry *sl_catalog_tool(const struct sl_catalog *c, const char *exposed);
const struct sl_entry *sl_catalog_prompt(const struct sl_catalog *c, const char *exposed);
/* The entry for server's own tool name, or NULL. Two lookups, whatever
 * the catalog's size. */
const struct sl_entry *sl_catalog_find(const struct sl_catalog *c, const char *server,
				       const char *tool);

/* Writes the exposed name for (server, name) into out (SL_EXPOSED_MAX+1). */
void sl_catalog_name(const char *server, const char *name, bool suffix, char *out);

/* "sluice://<server>/<uri>"; caller frees. */
char *sl_catalog_uri(const char *server, const char *uri);
/* The URI the client sees for u's uri: uri itself for an unprefixed server
 * (unless another server lists it, or it starts with sluice://, or it is a
 * ui:// URI whose authority names a server), else the namespaced form, so
 * that it always reads back to u. Caller frees. */
char *sl_catalog_expose_uri(const struct sl_catalog *c, const struct sl_upstream *u,
			    const char *uri);
/* The upstream a URI from the client names, and in *orig (the caller
 * frees it; set only when an upstream is returned) the URI to send it: a
 * namespaced URI names its server; any other is looked up among the
 * unprefixed servers (a resource only one lists, then a template only one
 * has that matches), then among the servers with MCP Apps Views (the one
 * that lists it or names it as a View: a View reads its server's resources
 * by their own URIs), then it goes to the only unprefixed server. NULL if
 * none. */
struct sl_upstream *sl_catalog_uri_owner(const struct sl_catalog *c, const char *uri,
					 char **orig);
/* Splits a namespaced URI: *server (caller frees) and a pointer into uri to
 * the original. Returns false if uri is not one of ours. */
bool sl_catalog_split_uri(const char *uri, char **server, const char **orig);

#endif

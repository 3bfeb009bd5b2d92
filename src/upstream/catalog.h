/*
 * The merged catalog: every upstream's tools and prompts under one
 * namespace, and resource URIs prefixed reversibly.
 *
 * Exposed names are "server__tool", sanitised to [A-Za-z0-9_-] and at most
 * 64 characters. A name that is too long, or that two entries would share,
 * gets a short hash suffix instead: a tool is never silently shadowed.
 * Resource URIs become "sluice://<server>/<original uri>".
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
	struct sl_map by_name;
};

struct sl_catalog {
	struct sl_entries tools;
	struct sl_entries prompts;
	uint64_t version;         /* bumped by each rebuild that changed the tool names */
};

void sl_catalog_init(struct sl_catalog *c);
void sl_catalog_dispose(struct sl_catalog *c);
/* Rebuilds from the ready (or restarting) upstreams, in config order.
 * Returns true if the set of exposed tool names changed. */
bool sl_catalog_rebuild(struct sl_catalog *c, struct sl_upstream **ups, size_t n);
const struct sl_entry *sl_catalog_tool(const struct sl_catalog *c, const char *exposed);
const struct sl_entry *sl_catalog_prompt(const struct sl_catalog *c, const char *exposed);
/* The entry for server's own tool name, or NULL. */
const struct sl_entry *sl_catalog_find(const struct sl_catalog *c, const char *server,
				       const char *tool);

/* Writes the exposed name for (server, name) into out (SL_EXPOSED_MAX+1). */
void sl_catalog_name(const char *server, const char *name, bool suffix, char *out);

/* "sluice://<server>/<uri>"; caller frees. */
char *sl_catalog_uri(const char *server, const char *uri);
/* Splits a namespaced URI: *server (caller frees) and a pointer into uri to
 * the original. Returns false if uri is not one of ours. */
bool sl_catalog_split_uri(const char *uri, char **server, const char **orig);

#endif

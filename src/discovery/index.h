/*
 * The discovery cache's insides (index.c), shared with signature.c only:
 * what the rest of the gateway sees is discovery.h's.
 *
 * A part is one server's tools as its list arrived: document j of the part
 * is u->tools.items[j], indexed once per (server, list version). Which
 * catalog entry each document is (a list may name a tool twice; the
 * catalog keeps the first) is mapped again when the catalog's version
 * moves, by one walk of the catalog without any per-tool work.
 */
#ifndef SL_DISCOVERY_INDEX_H
#define SL_DISCOVERY_INDEX_H

#include "core/lru.h"
#include "discovery/discovery.h"

#define SL_DISCOVERY_NONE SIZE_MAX

/* A search line's text after "tools.<server><.tool>", kept per document. */
struct sl_discovery_line {
	char *suffix;     /* "(args: ...): Promise<...>  // summary\n"; NULL: not made */
	unsigned samples; /* the inferred results it was made with */
};

struct sl_discovery_part {
	struct sl_upstream *up;   /* valid while it is in the catalog (checked by sync) */
	uint64_t version;         /* up->tools.version it was built from */
	struct sl_bm25 *ix;       /* document j: up->tools.items[j] */
	size_t n;                 /* documents */
	size_t *entry;            /* catalog index of document j, or SL_DISCOVERY_NONE */
	bool *shared_ident;       /* another tool of the list has document j's identifier */
	struct sl_discovery_line *line;
	size_t line_bytes;
	bool seen;                /* in the catalog at the last sync */
};

/* A describe_tools module's body, kept in the cache's modules. */
struct sl_discovery_module {
	struct sl_lru_entry e;  /* keyed by what it was made from */
	char *text;
};

struct sl_discovery_cache {
	struct sl_map parts;                  /* server name -> struct sl_discovery_part * */
	struct sl_discovery_part **order;     /* the catalog's servers, in its order */
	size_t norder, cap;
	bool synced;
	uint64_t cat_version;                 /* of the catalog order and entry are for */
	struct sl_lru modules;                /* describe_tools bodies */
};

/* Brings c up to date with v's catalog: parts of servers whose list
 * changed are rebuilt (each tool counted as indexed), parts of servers
 * gone are dropped, and documents are mapped to catalog entries. */
void sl_discovery_sync(const struct sl_discovery_view *v);
/* The catalog entry of document doc of p, or NULL (not in the catalog). */
const struct sl_entry *sl_discovery_entry(const struct sl_discovery_view *v,
					  const struct sl_discovery_part *p, size_t doc);
/* The part of u after a sync, or NULL (no tools in the catalog). */
struct sl_discovery_part *sl_discovery_part(const struct sl_discovery_view *v,
					    const struct sl_upstream *u);

#endif

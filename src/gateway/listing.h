/*
 * tools/list without per-request work on every definition
 * (docs/internals/LISTING.md).
 *
 * Two stores, both the gateway's:
 *
 * Presented definitions. Each catalog tool as clients see it (a copy of
 * the server's definition that the stages' present hooks cleaned, its MCP
 * Apps _meta URIs namespaced, without its name) is written once as JSON
 * and kept per (server, list version): a server's new list redoes only
 * that server's, a reload redoes them only if a present hook's stage got
 * new state, and a tool whose namespaced URI depends on other servers
 * (one of a server with "prefix": false) is redone when the catalog is.
 * Made on first need (a tool nobody may see is never written).
 *
 * Rendered listings. The catalog part of one tools/list answer, the
 * array's elements as one run of bytes with each tool's offset, kept per
 * view: the profile, exactly which tools under which names the caller may
 * see (computed per request with the stages' visible hooks, compared
 * entry by entry, never trusted to a hash alone), and the client's
 * protocol version (older versions lack fields). Bounded by
 * sluice.limits.maxListings and maxListingBytes (least recently used
 * first); all are dropped when the catalog is rebuilt or the generation
 * changes. So two callers share a listing only when they would see the
 * same bytes.
 *
 * Pagination (sluice.limits.toolsPageSize, MCP pagination): a cursor is
 * "OFFSET.LISTING.TAG": the offset (8 hex digits), the listing's id (16
 * hex digits: a digest of its content, the same on every replica that
 * would answer the same), and sl_seal_tag over both and the caller's
 * identity under the generation's key. It indexes the caller's own
 * current listing only; a cursor whose listing is no longer the caller's,
 * or that sluice did not issue, is refused (-32602).
 *
 * API:
 *   gw->listing = sl_listing_new();  ...  sl_listing_free(gw->listing);
 *   sl_listing_catalog_changed(l);        after each catalog rebuild
 *   sl_listing_reload(l, old, next);      before a reload swaps generations
 *   sl_listing_answer(s, m, modern);      a tools/list request (calls.c)
 */
#ifndef SL_GATEWAY_LISTING_H
#define SL_GATEWAY_LISTING_H

#include "core/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl_listing;
struct sl_gen;
struct sl_session;
struct sl_msg;

struct sl_listing *sl_listing_new(void);
void sl_listing_free(struct sl_listing *l);
/* The catalog was rebuilt: every rendered listing goes, and presented
 * definitions of lists no longer in it go at the next listing. */
void sl_listing_catalog_changed(struct sl_listing *l);
/* A reload replaces generation old by next (both alive): rendered
 * listings go; presented definitions too if a present hook's state, or
 * the stage table, differs between them. */
void sl_listing_reload(struct sl_listing *l, const struct sl_gen *old, const struct sl_gen *next);

/* Answers tools/list request m of s (modern: in 2026-07-28): the
 * catalog's tools of the caller's view, from the rendered listing, then
 * the gateway's own (the router's, execute_code, skills: made per
 * request), the page the cursor names (or the first), with nextCursor
 * when more follow; a cursor that is not a current one of this caller's
 * gets -32602. Never suspends. */
void sl_listing_answer(struct sl_session *s, struct sl_msg *m, bool modern);

/* ---- cursors (exposed for the unit tests) ---- */

#define SL_LISTING_CURSOR_LEN 58 /* 8 + 1 + 16 + 1 + 32 */

/* Writes the cursor for offset in the listing id, bound to the caller's
 * key ("" for none), sealed under key. */
void sl_listing_cursor(const uint8_t key[32], const char *caller, uint64_t id, uint32_t offset,
		       char out[SL_LISTING_CURSOR_LEN + 1]);
/* Reads a cursor: true with *id and *offset when text is exactly one that
 * sl_listing_cursor wrote under key for caller; false for anything else
 * (any other length, character, or tag). */
bool sl_listing_cursor_read(const uint8_t key[32], const char *caller, const char *text, size_t len,
			    uint64_t *id, uint32_t *offset) SL_MUST_USE;

#endif

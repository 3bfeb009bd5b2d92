/*
 * Tool discovery: what search_tools and describe_tools answer, built so a
 * model can write a program against it at once.
 *
 *   bm25.c       tokens (camelCase, snake_case and kebab-case split, light
 *                stemming, a few synonyms) and BM25F ranking over inverted
 *                indexes, one part per server, merged at query time
 *   index.c      the gateway's discovery cache: each server's part of the
 *                index and its signature lines, kept per (server, list
 *                version), and describe_tools modules (bounded)
 *   tsgen.c      JSON Schema -> TypeScript (pure: no gateway state)
 *   infer.c      result types inferred from a tool's first successful results,
 *                for tools without outputSchema (the "discovery" stage)
 *   signature.c  one-line signatures and .d.ts modules from the three above
 *
 * See docs/internals/DISCOVERY.md for the method, the weights, the type
 * mapping and the limits.
 *
 * API:
 *   n = sl_bm25_tokens("listPullRequests", toks, 32);   "list" "pull" "request"
 *   struct sl_bm25 *ix = sl_bm25_new();  sl_bm25_add(ix, doc, field, text) ...
 *   sl_bm25_rank(ix, "open prs", scores);                one part, every score
 *   n = sl_bm25_search(parts, nparts, "open prs", &hits); ranked, across parts
 *   cache = sl_discovery_cache_new();  view.cache = cache;  ...  sl_discovery_cache_free(cache);
 *   ts = sl_ts_new(pretty);  t = sl_ts_type(ts, root, schema, "Name", NULL);
 *   sl_ts_decls(ts, &buf, export);  sl_ts_free(ts);
 *   text = sl_ts_from_json(bytes, len, &n);              the fuzzing entry point
 */
#ifndef SL_DISCOVERY_H
#define SL_DISCOVERY_H

#include "core/buf.h"
#include "core/json.h"

struct sl_catalog;
struct sl_entry;
struct sl_gen;
struct sl_upstream;
struct sl_caller;

/* ---- tokens and ranking (bm25.c) ----------------------------------------- */

#define SL_BM25_TOKEN_MAX 32   /* longer words are cut to this many bytes */

enum sl_bm25_field {
	SL_BM25_SERVER,
	SL_BM25_NAME,         /* the tool's name: weighted highest */
	SL_BM25_DESCRIPTION,  /* description and title */
	SL_BM25_PARAM,        /* parameter names */
	SL_BM25_PARAM_DESC,   /* parameter descriptions */
	SL_BM25_NFIELDS,
};

/* Splits text into lower-case, stemmed, canonical tokens (stop words
 * dropped), each a NUL-terminated string of at most SL_BM25_TOKEN_MAX
 * bytes written to out[i]; returns how many (at most max). */
size_t sl_bm25_tokens(const char *text, char (*out)[SL_BM25_TOKEN_MAX + 1], size_t max);
/* The light stemmer alone, in place. */
void sl_bm25_stem(char *word);

/* One part of an inverted index: documents 0..n-1 (added in order), and
 * for each term the documents that have it with its weighted frequency.
 * A search merges parts: document frequencies and the average length are
 * those of all the parts it is given. */
struct sl_bm25;
struct sl_bm25 *sl_bm25_new(void);
void sl_bm25_free(struct sl_bm25 *ix);
/* Returns the new document's index (0, 1, ...). Documents are added one
 * after the other: text goes to the last one. */
size_t sl_bm25_doc(struct sl_bm25 *ix);
/* Adds text (NULL: nothing) to a field of document doc (the last one). */
void sl_bm25_add(struct sl_bm25 *ix, size_t doc, enum sl_bm25_field f, const char *text);
/* How many documents; the bytes the part holds (an estimate: its arrays,
 * map slots and term keys). */
size_t sl_bm25_count(const struct sl_bm25 *ix);
size_t sl_bm25_bytes(const struct sl_bm25 *ix);
/* The part is complete: its arrays are cut to what they hold (a part is
 * kept for as long as its server's list; documents may still be added). */
void sl_bm25_seal(struct sl_bm25 *ix);
/* Scores every document of one part for query into scores[ndocs] (0: no
 * match). */
void sl_bm25_rank(struct sl_bm25 *ix, const char *query, double *scores);

struct sl_bm25_hit {
	uint32_t part, doc; /* parts[part]'s document doc */
	double score;       /* > 0 */
};
/* The documents of parts[0..nparts) that match query into *hits (caller
 * frees; NULL when none): the best min(best, n) first, in rank order (by
 * score, ties in order of part, then document), the others after them in
 * no order (sl_bm25_best orders more). Reads only the postings of the
 * query's terms; its memory is 24 bytes per posting read. */
size_t sl_bm25_search(const struct sl_bm25 *const *parts, size_t nparts, const char *query,
		      size_t best, struct sl_bm25_hit **hits);
/* Moves the best m of hits[0..n) to the front, in rank order (n log m). */
void sl_bm25_best(struct sl_bm25_hit *hits, size_t n, size_t m);

/* ---- TypeScript from JSON Schema (tsgen.c) -------------------------------- */

struct sl_ts; /* named declarations collected while translating */

/* pretty: declarations over several lines with descriptions as JSDoc;
 * otherwise one line, no comments (for signature lines). */
struct sl_ts *sl_ts_new(bool pretty);
void sl_ts_free(struct sl_ts *ts);
/* The TypeScript type of schema, whose document root is root (for $ref),
 * or NULL when it cannot be translated (the caller writes "unknown"; the
 * declarations this attempt added are withdrawn). Types it refers to are
 * declared in ts under unique names. name (may be NULL): an object type
 * is declared under that name (an interface) and the name returned;
 * item (may be NULL): the same for the objects of an array type. Caller
 * frees the result. Never suspends. */
char *sl_ts_type(struct sl_ts *ts, yyjson_val *root, yyjson_val *schema, const char *name,
		 const char *item);
/* Appends every declaration made so far to b, in order ("export " before
 * each if exported). Returns 0 or SL_ERR_TOO_LARGE (b's cap). */
int sl_ts_decls(struct sl_ts *ts, struct sl_buf *b, bool exported) SL_MUST_USE;
/* The pure entry point (for fuzzing): the bytes of a JSON Schema in,
 * "type Root = ...;" and its declarations out (malloc'd, *len set);
 * "type Root = unknown;" when the bytes are not JSON or not translatable.
 * Never NULL; no gateway state. */
char *sl_ts_from_json(const char *bytes, size_t len, size_t *out_len);
/* text as the body of a one-line JSDoc comment: whitespace runs become one
 * space, it cannot close the comment, and it is cut at 400 bytes on a
 * character boundary. NULL when empty; caller frees. */
char *sl_ts_doc(const char *text);
/* The length of the line or paragraph separator (U+2028, U+2029) or C1
 * control (U+0080..U+009F) at p, in bytes, or 0: characters that must not
 * reach a generated line raw (a "//" comment ends at U+2028). */
size_t sl_ts_break(const char *p);
/* Appends s to b as a TypeScript string literal. */
int sl_ts_quote(struct sl_buf *b, const char *s) SL_MUST_USE;
/* Appends name to b as a property key: as is if it is an identifier,
 * else as a quoted string. */
int sl_ts_key(struct sl_buf *b, const char *name) SL_MUST_USE;

/* ---- inferred result types (infer.c) -------------------------------------- */

#define SL_INFER_SAMPLES 3             /* results merged per tool */
#define SL_INFER_MAX_BYTES (256u << 10) /* larger results are not sampled */
#define SL_INFER_MAX_TOOLS 4096        /* tools with an inferred type */

/* A JSON Schema describing value (depth, keys and items bounded), in d. */
yyjson_mut_val *sl_infer_schema(yyjson_mut_doc *d, yyjson_mut_val *value);
/* What was learnt: the discovery stage's state (sl_gen_state(gen,
 * &sl_stage_discovery)), kept across reloads with the generations. */
struct sl_infer;
struct sl_infer *sl_infer_new(void);
void sl_infer_free(struct sl_infer *in);
/* The inferred result schema of server's tool as JSON text (borrowed
 * until the next call result) and how many results it merges, or NULL
 * (also for in NULL). */
const char *sl_infer_get(const struct sl_infer *in, const char *server, const char *tool,
			 unsigned *samples);
/* Records a successful result (the upstream's result object) of a tool. */
void sl_infer_record(struct sl_infer *in, const char *server, const char *tool,
		     yyjson_val *result);

/* ---- signatures (signature.c) --------------------------------------------- */

enum sl_detail { SL_DETAIL_SIGNATURE, SL_DETAIL_FULL };

/* What search_tools and describe_tools keep between requests, for one
 * catalog (the gateway's): each server's part of the index and its
 * signature lines, made when that server's list changes (keyed on the
 * server and its list's version) and dropped with the server (a line of
 * more than SL_DISCOVERY_LINE_MAX bytes is not kept), and the
 * last SL_DISCOVERY_MODULES_MAX describe_tools modules (at most
 * SL_DISCOVERY_MODULES_BYTES). Not thread-safe: the gateway's loop. */
#define SL_DISCOVERY_LINE_MAX (8u << 10) /* a longer search line is made per answer */
#define SL_DISCOVERY_MODULES_MAX 64
#define SL_DISCOVERY_MODULES_BYTES (16u << 20)
struct sl_discovery_cache;
struct sl_discovery_cache *sl_discovery_cache_new(void);
void sl_discovery_cache_free(struct sl_discovery_cache *c);
/* The bytes the index parts and kept lines hold (for the memory notes). */
size_t sl_discovery_cache_bytes(const struct sl_discovery_cache *c);

/* What one caller sees of the catalog, handed down by whoever owns the
 * caller's view (the gateway's router): discovery knows no session,
 * profile or view, only these. All borrowed for the call. */
struct sl_discovery_view {
	const struct sl_catalog *cat;   /* the merged catalog */
	struct sl_discovery_cache *cache; /* cat's (the gateway's), updated as needed */
	const struct sl_gen *gen;       /* its stages hide and present tools */
	const struct sl_caller *who;    /* whose view (NULL: anonymous) */
	/* e's name within its server in the view, or NULL when the view does
	 * not show it (borrowed from the catalog or the config). */
	const char *(*local)(const void *ctx, const struct sl_entry *e);
	/* The server name names in the view (its configured name or its
	 * identifier), or NULL: unknown there. */
	struct sl_upstream *(*server)(const void *ctx, const char *name);
	/* Whether the view shows server u at all. */
	bool (*shows)(const void *ctx, const struct sl_upstream *u);
	/* The view renames some tools: local may differ from a tool's own
	 * name (else it is the own name or NULL). */
	bool renames;
	const void *ctx;                /* the owner's view, for local, server and shows */
};

/* The catalog tools of server u in catalog order, for one server's
 * listing without a scan of the catalog: *at starts at 0; NULL after the
 * last. The view is not applied (the caller asks local and visible). */
const struct sl_entry *sl_discovery_next(const struct sl_discovery_view *v,
					 const struct sl_upstream *u, size_t *at);

/* search_tools: the answer text for query (k hits, only server's tools when
 * server is not NULL), or NULL with *msg (caller frees) set when the
 * arguments are wrong. Hidden tools (policy, pinning) never appear: the
 * ranked hits are checked in order until k are visible. */
char *sl_discovery_search(const struct sl_discovery_view *v, const char *query, size_t k,
			  const char *server, enum sl_detail detail, char **msg);
/* describe_tools: one .d.ts module for server's tools (all visible ones,
 * or the n named, raw names or identifiers); named tools the view does
 * not show are listed in comments at its top ("did you mean" the closest
 * visible one). NULL with *msg set: an unknown server, or no named tool
 * found. */
/* The edit distance from the unknown name asked to the tool name known
 * when known is close enough to be offered as "did you mean" (1 or 2
 * edits, and at most a third of asked's length), else SIZE_MAX (always
 * for names over 64 bytes). */
size_t sl_discovery_distance(const char *asked, const char *known);
char *sl_discovery_describe(const struct sl_discovery_view *v, const char *server,
			    const char **names, size_t n, char **msg);

#endif

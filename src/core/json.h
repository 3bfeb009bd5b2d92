/*
 * JSON helpers over yyjson: the depth gate every parse of peer JSON goes
 * through, typed getters that return NULL on a missing key or a wrong type,
 * line serialisation, and error positions as line:column.
 *
 * Ownership: getters borrow from the document; sl_json_write* return a
 * malloc'd string the caller frees.
 */
#ifndef SL_CORE_JSON_H
#define SL_CORE_JSON_H

#include "core/common.h"
#include <yyjson.h>

/* Flags for every parse of peer input: big numbers are kept as written. */
#define SL_JSON_READ_FLAGS (YYJSON_READ_BIGNUM_AS_RAW)

/*
 * The depth gate. yyjson parses iteratively, but copying a mutable value,
 * comparing two values, and several of sluice's own walks recurse: a peer
 * that nests 300,000 arrays in 600 KB would overflow the stack. So every
 * parse of JSON from outside the gateway (clients, upstreams, sandbox
 * workers, the config and pins files, texts parsed as JSON) checks the
 * document right after the parse, before anything else reads it, and
 * refuses one that nests more than SL_JSON_DEPTH_MAX levels of arrays and
 * objects ("[]" is one level, a scalar none). Nothing recursive ever sees
 * unchecked input; a recursive walk over a checked value (or one the
 * gateway built around it, a few levels more) needs no bound of its own.
 */
#define SL_JSON_DEPTH_MAX 128
#define SL_JSON_XSTR_(x) #x
#define SL_JSON_XSTR(x) SL_JSON_XSTR_(x)
#define SL_JSON_DEPTH_WHY \
	"JSON nested deeper than " SL_JSON_XSTR(SL_JSON_DEPTH_MAX) " levels (the depth limit)"
/* yyjson_read_err.code of sl_json_read for a document over the limit. */
#define SL_JSON_READ_ERROR_DEPTH ((yyjson_read_code)100)

/* Whether v (may be NULL) nests at most SL_JSON_DEPTH_MAX levels. Iterative,
 * linear in the number of values, no allocation. */
bool sl_json_depth_ok(yyjson_val *v);
/*
 * Parses n bytes of peer JSON with flg and applies the gate. Returns an
 * owned document, or NULL with *err (may be NULL) set: yyjson's error, or
 * code SL_JSON_READ_ERROR_DEPTH, msg SL_JSON_DEPTH_WHY and pos 0.
 */
yyjson_doc *sl_json_read(const char *s, size_t n, yyjson_read_flag flg, yyjson_read_err *err);

/* yyjson_obj_foreach for an object that may be NULL (a schema without
 * "properties"): yyjson's own steps from the NULL pointer, which is
 * undefined behaviour even when the loop never runs. */
#define sl_json_obj_foreach(obj, idx, max, key, val)                               \
	for ((idx) = 0, (max) = yyjson_obj_size(obj),                               \
	    (key) = (max) ? unsafe_yyjson_get_first(obj) : NULL,                   \
	    (val) = (max) ? (key) + 1 : NULL;                                      \
	     (idx) < (max); (idx)++, (key) = unsafe_yyjson_get_next(val), (val) = (key) + 1)

yyjson_val *sl_json_obj(yyjson_val *o, const char *key);
yyjson_val *sl_json_arr(yyjson_val *o, const char *key);
const char *sl_json_str(yyjson_val *o, const char *key);
/* Integer member; returns false if missing or not an integer. */
bool sl_json_int(yyjson_val *o, const char *key, int64_t *out);
bool sl_json_true(yyjson_val *o, const char *key);

/* Writes d (or a value) as one line ending in "\n". */
char *sl_json_write_line(yyjson_mut_doc *d, size_t *len);
char *sl_json_write_val(yyjson_val *v, size_t *len);
char *sl_json_write_mut_val(yyjson_mut_val *v, size_t *len);

/* Sorts every object's members by key (bytes; equal keys keep their
 * order), in place, down to a depth limit (deeper levels keep theirs). */
void sl_json_sort_keys(yyjson_mut_val *v);
/* Canonical JSON of v (v untouched): keys sorted at every level, no
 * whitespace, numbers as written. Caller frees. */
char *sl_json_canonical(yyjson_mut_val *v, size_t *len);

/* 1-based line and column of byte offset pos in s. */
void sl_json_position(const char *s, size_t n, size_t pos, size_t *line, size_t *col);

/*
 * A walk over every string of a mutable value, for stages that rewrite
 * text in place (redaction, tokenize): str is called on each string value
 * (key: its member's key, NULL in an array or at the root), key, when not
 * NULL, on each object key after its value. A callback returns 0 or a
 * negative SL_ERR_* (with err set), which ends the walk. Deeper than
 * max_depth fails with SL_ERR_INVALID, err "JSON nested deeper than N
 * levels". Returns 0 or the first failure.
 */
struct sl_json_strings {
	int (*str)(void *ctx, yyjson_mut_doc *d, yyjson_mut_val *s, yyjson_mut_val *key,
		   struct sl_err *err);
	int (*key)(void *ctx, yyjson_mut_doc *d, yyjson_mut_val *k, struct sl_err *err);
	size_t max_depth;
	void *ctx;
};
int sl_json_walk_strings(const struct sl_json_strings *w, yyjson_mut_doc *d, yyjson_mut_val *v,
			 struct sl_err *err) SL_MUST_USE;

/* A mutable string value copied into d. */
static inline yyjson_mut_val *sl_json_mstr(yyjson_mut_doc *d, const char *s)
{
	return yyjson_mut_strcpy(d, s);
}

#endif

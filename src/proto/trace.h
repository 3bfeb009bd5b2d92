/*
 * W3C Trace Context in a request's _meta (MCP 2026-07-28 "_meta",
 * SEP-414): the keys traceparent, tracestate and baggage, with the W3C
 * Trace Context and W3C Baggage value formats. No I/O.
 *
 * What arrives is hostile: a traceparent that does not parse is ignored
 * (the call starts a trace of its own) and never forwarded, and with it
 * its tracestate; a tracestate over 512 characters or 32 members, or a
 * baggage over 8192 bytes, or either with a character outside its grammar,
 * is dropped alone (W3C: a vendor may discard what it cannot parse).
 *
 * API:
 *   struct sl_trace_ctx t;
 *   sl_trace_ctx_from_meta(&t, params_meta);        the client's, validated
 *   sl_trace_ctx_to_meta(&t, &ours_or_NULL, d, meta) toward an upstream
 *   sl_trace_ctx_dispose(&t);
 */
#ifndef SL_PROTO_TRACE_H
#define SL_PROTO_TRACE_H

#include "core/json.h"

#include <stdbool.h>
#include <stdint.h>

#define SL_TRACEPARENT_LEN 55       /* "00-" 32 hex "-" 16 hex "-" 2 hex */
#define SL_TRACESTATE_MAX_CHARS 512 /* W3C Trace Context 3.3.1.5 */
#define SL_TRACESTATE_MAX_MEMBERS 32
#define SL_BAGGAGE_MAX_BYTES 8192   /* W3C Baggage 3.3.1 */
#define SL_BAGGAGE_MAX_MEMBERS 180  /* W3C Baggage: at least 64; 8192 bytes hold ~2700 */

/* One traceparent: a trace, the span that is the parent of the receiver's,
 * and the flags (bit 0: sampled). valid: parsed (or made) and usable. */
struct sl_trace {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t flags;
	bool valid;
};

/* The context a request carries: its traceparent, and tracestate and
 * baggage (owned, validated; NULL: absent, or dropped as invalid). */
struct sl_trace_ctx {
	struct sl_trace parent;
	char *tracestate;
	char *baggage;
};

/* Parses s[0..n) as a traceparent (version 00 exactly; a later version by
 * its first four fields, as W3C asks of a version-00 reader). False, and
 * *out untouched, when it does not parse: lowercase hex only, trace and
 * span ids not all zero, version ff refused. */
bool sl_trace_parse(const char *s, size_t n, struct sl_trace *out);
/* t as a version-00 traceparent, NUL-terminated. */
void sl_trace_format(const struct sl_trace *t, char out[SL_TRACEPARENT_LEN + 1]);
/* W3C grammar and bounds (see above). */
bool sl_tracestate_valid(const char *s, size_t n);
bool sl_baggage_valid(const char *s, size_t n);

/* The context of a request whose params._meta is meta (may be NULL):
 * zeroed, then whatever of it is valid. */
void sl_trace_ctx_from_meta(struct sl_trace_ctx *t, yyjson_val *meta);
/* A copy of from in to (zeroed first). */
void sl_trace_ctx_copy(struct sl_trace_ctx *to, const struct sl_trace_ctx *from);
/* Writes the context toward an upstream into meta (an object in d),
 * replacing what meta had under the three keys: traceparent is ours when
 * ours is valid (sluice's span: same trace, sluice's span as parent), else
 * t's own unchanged; tracestate and baggage only with a traceparent.
 * Nothing when neither is valid. */
void sl_trace_ctx_to_meta(const struct sl_trace_ctx *t, const struct sl_trace *ours,
			  yyjson_mut_doc *d, yyjson_mut_val *meta);
/* True when sl_trace_ctx_to_meta would write anything. */
bool sl_trace_ctx_any(const struct sl_trace_ctx *t, const struct sl_trace *ours);
void sl_trace_ctx_dispose(struct sl_trace_ctx *t);

#endif

/*
 * Fuzz target: W3C trace context as a client sends it in _meta
 * (src/proto/trace.c): the input is a traceparent, a tracestate and a
 * baggage, separated by newlines, checked alone and as a _meta object.
 *
 * Invariants checked:
 *   - a traceparent that parses formats back to 55 characters that parse
 *     to the same ids and flags, and is the input itself for version 00;
 *   - a tracestate taken is within 512 characters, a baggage within 8192
 *     bytes, neither with a control character but tab (nothing forged
 *     into a header or a log line);
 *   - what sl_trace_ctx_to_meta writes toward an upstream is only what
 *     was taken: no tracestate or baggage without a valid traceparent.
 *
 * fuzz-flags: -max_len=16384
 */
#include "fuzz.h"

#include "proto/trace.h"

#include <string.h>

/* Visible ASCII, space and tab (W3C's OWS): never CR, LF or another control. */
static void no_controls(const char *s)
{
	for (; *s; s++)
		ASSERT(*s == '\t' || ((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *part[3] = { p, p, p };
	size_t len[3] = { 0, 0, 0 };
	struct sl_trace t, again;
	struct sl_trace_ctx ctx;
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *in, *meta;
	yyjson_doc *frozen;
	char out[SL_TRACEPARENT_LEN + 1];

	for (int i = 0; i < 3; i++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		part[i] = p;
		len[i] = (size_t)((nl ? nl : end) - p);
		p = nl ? nl + 1 : end;
	}
	if (sl_trace_parse(part[0], len[0], &t)) {
		ASSERT(t.valid);
		sl_trace_format(&t, out);
		ASSERT(strlen(out) == SL_TRACEPARENT_LEN);
		ASSERT(sl_trace_parse(out, SL_TRACEPARENT_LEN, &again));
		ASSERT(!memcmp(&t, &again, sizeof(t)));
		if (part[0][0] == '0' && part[0][1] == '0')
			ASSERT(len[0] == SL_TRACEPARENT_LEN && !memcmp(out, part[0], len[0]));
	}
	if (sl_tracestate_valid(part[1], len[1]))
		ASSERT(len[1] <= SL_TRACESTATE_MAX_CHARS);
	if (sl_baggage_valid(part[2], len[2]))
		ASSERT(len[2] <= SL_BAGGAGE_MAX_BYTES);

	/* As a client's _meta, and toward an upstream. */
	in = yyjson_mut_obj(d);
	yyjson_mut_doc_set_root(d, in);
	yyjson_mut_obj_add_strncpy(d, in, "traceparent", part[0], len[0]);
	yyjson_mut_obj_add_strncpy(d, in, "tracestate", part[1], len[1]);
	yyjson_mut_obj_add_strncpy(d, in, "baggage", part[2], len[2]);
	frozen = yyjson_mut_doc_imut_copy(d, NULL);
	sl_trace_ctx_from_meta(&ctx, yyjson_doc_get_root(frozen));
	meta = yyjson_mut_obj(d);
	sl_trace_ctx_to_meta(&ctx, NULL, d, meta);
	if (!ctx.parent.valid)
		ASSERT(yyjson_mut_obj_size(meta) == 0);
	else {
		no_controls(yyjson_mut_get_str(yyjson_mut_obj_get(meta, "traceparent")));
		if (ctx.tracestate) {
			ASSERT(strlen(ctx.tracestate) <= SL_TRACESTATE_MAX_CHARS);
			no_controls(ctx.tracestate);
		}
		if (ctx.baggage) {
			ASSERT(strlen(ctx.baggage) <= SL_BAGGAGE_MAX_BYTES);
			for (const char *c = ctx.baggage; *c; c++)
				ASSERT(*c == '\t' || ((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f));
		}
	}
	sl_trace_ctx_dispose(&ctx);
	yyjson_doc_free(frozen);
	yyjson_mut_doc_free(d);
	return 0;
}

/*
 * Fuzz target: JSON-RPC framing and parsing, the path of every byte a client
 * or an upstream sends on stdio (src/proto/lines.c, jsonrpc.c, mcp.c).
 *
 * Input: 4 bytes seeding the chunk sizes, then the byte stream. The stream
 * is framed twice, whole and in pseudo-random chunks of 1..97 bytes, with a
 * small line cap so that oversize lines are common; every line is parsed.
 *
 * Invariants checked:
 *   - framing does not depend on how the bytes were chunked (the same lines
 *     and oversize reports, in the same order);
 *   - a line that parses serialises to JSON that parses again to the same
 *     kind, method and id, and serialising that is byte-identical;
 *   - the error line for a line that does not parse is one JSON object
 *     ending in "\n", with the id the parser recovered;
 *   - an id recovered from an oversize line is a string or a number.
 *
 * fuzz-flags: -max_len=8192
 */
#include "fuzz.h"

#include "core/json.h"
#include "proto/jsonrpc.h"
#include "proto/lines.h"
#include "proto/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_CAP 1024

struct run {
	uint64_t h;      /* chained hash of every event */
	size_t events;
};

static void mix(struct run *r, const void *p, size_t n)
{
	r->h = sl_hash64(p, n, r->h);
}

static void check_roundtrip(const struct sl_msg *m)
{
	struct sl_msg m2;
	struct sl_err e;
	size_t len, len2;
	int code;
	char *s = sl_json_write_val(m->root, &len);
	char *s2;

	ASSERT(len > 0 && !memchr(s, '\n', len)); /* still one line */
	ASSERT(sl_msg_parse(&m2, s, len, &code, &e) == SL_OK);
	ASSERT(m2.kind == m->kind);
	ASSERT(!m->method == !m2.method);
	ASSERT(!m->method || strcmp(m->method, m2.method) == 0);
	ASSERT(!m->id == !m2.id);
	if (m->id) {
		char *a = sl_json_write_val(m->id, NULL), *b = sl_json_write_val(m2.id, NULL);
		ASSERT(strcmp(a, b) == 0);
		free(a);
		free(b);
	}
	s2 = sl_json_write_val(m2.root, &len2);
	ASSERT(len == len2 && memcmp(s, s2, len) == 0);
	free(s2);
	sl_msg_dispose(&m2);
	free(s);
}

static void check_error_line(yyjson_val *id, int code, const char *msg)
{
	size_t len;
	char *line = sl_rpc_error_line(id, code, msg, &len);
	yyjson_doc *d;

	ASSERT(len > 0 && line[len - 1] == '\n' && memchr(line, '\n', len) == line + len - 1);
	d = yyjson_read(line, len, 0);
	ASSERT(d && yyjson_is_obj(yyjson_doc_get_root(d)));
	ASSERT(sl_json_int(sl_json_obj(yyjson_doc_get_root(d), "error"), "code", &(int64_t){ 0 }));
	yyjson_doc_free(d);
	free(line);
}

static int on_line(void *ctx, const char *line, size_t len)
{
	struct run *r = ctx;
	struct sl_msg m;
	struct sl_err e;
	int code = 0;

	mix(r, "L", 1);
	mix(r, &len, sizeof(len));
	mix(r, line, len);
	r->events++;
	ASSERT(len <= LINE_CAP);
	ASSERT(!memchr(line, '\n', len));

	if (sl_msg_parse(&m, line, len, &code, &e) == SL_OK) {
		ASSERT(m.kind == SL_MSG_RESPONSE || m.method);
		ASSERT(m.kind != SL_MSG_REQUEST || m.id);
		ASSERT(!m.params || yyjson_is_obj(m.params));
		check_roundtrip(&m);
		if (m.method) {
			/* what the session does with an initialize's version */
			const char *v = sl_json_str(m.params, "protocolVersion");
			if (v)
				(void)sl_mcp_legacy_version(v);
		}
	} else {
		ASSERT(code == SL_RPC_PARSE_ERROR || code == SL_RPC_INVALID_REQUEST ||
		       code == SL_RPC_INVALID_PARAMS);
		ASSERT(e.msg[0] != '\0');
		check_error_line(m.id, code, e.msg);
	}
	sl_msg_dispose(&m);
	return 0;
}

static int on_oversize(void *ctx, const char *head, size_t hl, const char *tail, size_t tl,
		       size_t total)
{
	struct run *r = ctx;
	yyjson_doc *id;

	mix(r, "O", 1);
	mix(r, &total, sizeof(total));
	mix(r, head, hl);
	mix(r, tail, tl);
	r->events++;
	ASSERT(total > LINE_CAP);
	ASSERT(hl <= SL_LINES_EDGE && tl <= SL_LINES_EDGE);
	ASSERT(hl <= total && tl <= total);
	id = sl_rpc_find_id(head, hl, tail, tl);
	if (id) {
		yyjson_val *v = yyjson_doc_get_root(id);
		ASSERT(yyjson_is_str(v) || yyjson_is_num(v));
		check_error_line(v, SL_RPC_INVALID_REQUEST, "too large");
		yyjson_doc_free(id);
	}
	return 0;
}

static const struct sl_lines_ops ops = { on_line, on_oversize };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run whole = { 0 }, chunked = { 0 };
	struct sl_lines l;
	uint32_t seed;
	const char *p;
	size_t n;

	if (size < 4)
		return 0;
	memcpy(&seed, data, 4);
	seed |= 1;
	p = (const char *)data + 4;
	n = size - 4;

	sl_lines_init(&l, LINE_CAP, &ops, &whole);
	ASSERT(sl_lines_feed(&l, p, n) == 0);
	sl_lines_dispose(&l);

	sl_lines_init(&l, LINE_CAP, &ops, &chunked);
	for (size_t off = 0; off < n;) {
		size_t k;
		seed ^= seed << 13;
		seed ^= seed >> 17;
		seed ^= seed << 5;
		k = 1 + seed % 97;
		if (k > n - off)
			k = n - off;
		ASSERT(sl_lines_feed(&l, p + off, k) == 0);
		off += k;
	}
	sl_lines_dispose(&l);

	ASSERT(whole.events == chunked.events);
	ASSERT(whole.h == chunked.h);
	return 0;
}

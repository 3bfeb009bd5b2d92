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
 *   - an id recovered from an oversize line is a string or a number;
 *   - a parsed message mapped for 2024-11-05 (sl_mcp_era_map) still
 *     serialises to JSON that parses, and its capabilities lose elicitation.
 *
 * Then the same bytes drive a generator of deep and wide JSON (tools/call
 * arguments of nested arrays and objects, runs of hundreds of levels or of
 * siblings, up to ~3,500 levels) and check the depth gate: a message
 * nesting at most SL_JSON_DEPTH_MAX levels parses (and survives the
 * recursive canonical form), one nesting more fails with -32600, m.deep and
 * its id, never a crash.
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

/* What the session does before sending to a 2024-11-05 client, and with
 * its capabilities: any message maps to JSON that parses again. */
static void check_era_map(struct sl_msg *m)
{
	yyjson_mut_doc *d = yyjson_doc_mut_copy(m->doc, NULL);
	yyjson_doc *c;
	size_t n;
	char *s;

	ASSERT(d);
	sl_mcp_era_map(d, yyjson_mut_doc_get_root(d), SL_MCP_OLDEST);
	s = sl_json_write_line(d, &n);
	c = yyjson_read(s, n, SL_JSON_READ_FLAGS);
	ASSERT(c);
	yyjson_doc_free(c);
	free(s);
	yyjson_mut_doc_free(d);
	c = sl_mcp_era_caps(m->params ? sl_json_obj(m->params, "capabilities") : NULL, SL_MCP_OLDEST);
	ASSERT(yyjson_is_obj(yyjson_doc_get_root(c)));
	ASSERT(!yyjson_obj_get(yyjson_doc_get_root(c), "elicitation"));
	yyjson_doc_free(c);
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
		check_era_map(&m);
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

#define GEN_BYTES (1u << 18)
#define GEN_LEVELS 4096

struct gen {
	char *s;
	size_t len, open, deepest;
	char closer[GEN_LEVELS];
	bool had[GEN_LEVELS]; /* the open container has a member already */
};

static void put(struct gen *g, const char *p)
{
	size_t n = strlen(p);
	memcpy(g->s + g->len, p, n);
	g->len += n;
}

/* What goes before a value in the innermost open container. */
static void member(struct gen *g)
{
	bool obj = g->closer[g->open - 1] == '}';
	if (g->had[g->open - 1])
		put(g, ",");
	if (obj)
		put(g, "\"k\":");
	g->had[g->open - 1] = true;
}

static void open_ctn(struct gen *g, bool obj)
{
	if (g->open)
		member(g);
	put(g, obj ? "{" : "[");
	g->closer[g->open] = obj ? '}' : ']';
	g->had[g->open++] = false;
	if (g->open > g->deepest)
		g->deepest = g->open;
}

static void close_ctn(struct gen *g)
{
	g->s[g->len++] = g->closer[--g->open];
}

static void check_generated(const uint8_t *d, size_t n)
{
	static const char pre[] = "{\"jsonrpc\":\"2.0\",\"id\":\"g\",\"method\":\"tools/call\","
				  "\"params\":{\"name\":\"x\",\"arguments\":{\"a\":";
	const size_t around = 3; /* root, params, arguments */
	struct gen *g = calloc(1, sizeof(*g));
	struct sl_msg m;
	struct sl_err e;
	int code;

	g->s = malloc(GEN_BYTES);
	put(g, pre);
	open_ctn(g, false);
	for (size_t i = 0; i < n && g->len < GEN_BYTES / 4 && g->open < GEN_LEVELS - 600; i++) {
		unsigned b = d[i], k = 1 + (b >> 3);
		switch (b & 7) {
		case 0: case 1: open_ctn(g, false); break;
		case 2: open_ctn(g, true); break;
		case 3: case 4: if (g->open > 1) close_ctn(g); break;
		case 5: member(g); put(g, "0"); break;
		case 6: for (unsigned j = 0; j < 16 * k; j++) { member(g); put(g, "1"); } break;
		default: for (unsigned j = 0; j < 16 * k; j++) open_ctn(g, false); break;
		}
	}
	while (g->open)
		close_ctn(g);
	put(g, "}}}");

	if (sl_msg_parse(&m, g->s, g->len, &code, &e) == SL_OK) {
		yyjson_mut_doc *md = yyjson_mut_doc_new(NULL);
		ASSERT(around + g->deepest <= SL_JSON_DEPTH_MAX && !m.deep);
		free(sl_json_canonical(yyjson_val_mut_copy(md, m.params), NULL));
		yyjson_mut_doc_free(md);
	} else {
		ASSERT(around + g->deepest > SL_JSON_DEPTH_MAX);
		ASSERT(m.deep && code == SL_RPC_INVALID_REQUEST);
		ASSERT(yyjson_is_str(m.id) && strcmp(yyjson_get_str(m.id), "g") == 0);
		ASSERT(strstr(e.msg, SL_JSON_DEPTH_WHY) != NULL);
	}
	sl_msg_dispose(&m);
	free(g->s);
	free(g);
}

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

	check_generated((const uint8_t *)p, n);
	return 0;
}

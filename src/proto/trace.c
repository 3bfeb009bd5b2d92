/* W3C Trace Context in _meta; see trace.h. */
#include "proto/trace.h"
#include "core/common.h"
#include "core/escape.h"

#include <stdlib.h>
#include <string.h>

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1; /* W3C: lowercase only */
}

/* n bytes from 2n lowercase hex digits; false on anything else. */
static bool unhex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

bool sl_trace_parse(const char *s, size_t n, struct sl_trace *out)
{
	struct sl_trace t = { 0 };
	uint8_t version;

	/* W3C Trace Context 3.2: version "-" trace-id "-" parent-id "-" flags. */
	if (n < SL_TRACEPARENT_LEN || s[2] != '-' || s[35] != '-' || s[52] != '-')
		return false;
	if (!unhex(s, &version, 1) || version == 0xff)
		return false;
	/* Version 00 is exactly 55 characters; a later one may add fields
	 * after a dash, which a version-00 reader ignores. */
	if (version == 0 ? n != SL_TRACEPARENT_LEN : n > SL_TRACEPARENT_LEN && s[55] != '-')
		return false;
	if (!unhex(s + 3, t.trace_id, 16) || !unhex(s + 36, t.span_id, 8) || !unhex(s + 53, &t.flags, 1))
		return false;
	if (all_zero(t.trace_id, 16) || all_zero(t.span_id, 8))
		return false;
	t.valid = true;
	*out = t;
	return true;
}

void sl_trace_format(const struct sl_trace *t, char out[SL_TRACEPARENT_LEN + 1])
{
	/* Each sl_hex ends in a NUL that the next '-' replaces. */
	memcpy(out, "00-", 3);
	sl_hex(t->trace_id, 16, out + 3);
	out[35] = '-';
	sl_hex(t->span_id, 8, out + 36);
	out[52] = '-';
	sl_hex(&t->flags, 1, out + 53);
}

static bool ows(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* W3C Trace Context 3.3.1.3: key = simple-key / tenant-id "@" system-id,
 * lcalpha or digit first, then lcalpha, digits, _ - * /; at most 256. */
static bool tracestate_key(const char *k, size_t n)
{
	size_t at = 0;

	if (!n || n > 256 || !((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= '0' && k[0] <= '9')))
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = k[i];
		if (ch == '@') {
			if (at || i == 0 || i + 1 == n || i > 241 || n - i - 1 > 14)
				return false;
			at = i;
			continue;
		}
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
		      ch == '*' || ch == '/'))
			return false;
	}
	return true;
}

/* value = 0*255(chr) nblk-chr: printable ASCII but , and =, not ending in
 * a space; 1 to 256 characters. */
static bool tracestate_value(const char *v, size_t n)
{
	if (!n || n > 256 || v[n - 1] == ' ')
		return false;
	for (size_t i = 0; i < n; i++)
		if (v[i] < 0x20 || v[i] > 0x7e || v[i] == ',' || v[i] == '=')
			return false;
	return true;
}

bool sl_tracestate_valid(const char *s, size_t n)
{
	size_t members = 0, i = 0;

	if (n > SL_TRACESTATE_MAX_CHARS)
		return false;
	while (i <= n) {
		size_t start = i, end, eq;
		while (i < n && s[i] != ',')
			i++;
		end = i++;
		while (start < end && ows(s[start]))
			start++;
		while (end > start && ows(s[end - 1]))
			end--;
		if (start == end)
			continue; /* W3C: empty list members are allowed */
		if (++members > SL_TRACESTATE_MAX_MEMBERS)
			return false;
		for (eq = start; eq < end && s[eq] != '='; eq++)
			;
		if (eq == end || !tracestate_key(s + start, eq - start) ||
		    !tracestate_value(s + eq + 1, end - eq - 1))
			return false;
	}
	return true;
}

/* RFC 9110 tchar: a baggage key is a token. */
static bool tchar(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

bool sl_baggage_valid(const char *s, size_t n)
{
	size_t members = 0, i = 0;

	if (!n || n > SL_BAGGAGE_MAX_BYTES)
		return false;
	for (size_t j = 0; j < n; j++)
		if ((s[j] < 0x20 && s[j] != '\t') || s[j] > 0x7e)
			return false; /* values are percent-encoded: never a control or non-ASCII byte */
	while (i <= n) {
		size_t start = i, end, k;
		while (i < n && s[i] != ',')
			i++;
		end = i++;
		while (start < end && ows(s[start]))
			start++;
		if (start == end || ++members > SL_BAGGAGE_MAX_MEMBERS)
			return false;
		/* list-member = key OWS "=" OWS value *( OWS ";" OWS property ) */
		for (k = start; k < end && tchar(s[k]); k++)
			;
		if (k == start)
			return false;
		while (k < end && ows(s[k]))
			k++;
		if (k == end || s[k] != '=')
			return false;
	}
	return true;
}

void sl_trace_ctx_from_meta(struct sl_trace_ctx *t, yyjson_val *meta)
{
	yyjson_val *tp = yyjson_obj_get(meta, "traceparent"), *ts, *bg;

	memset(t, 0, sizeof(*t));
	if (!yyjson_is_str(tp) ||
	    !sl_trace_parse(yyjson_get_str(tp), yyjson_get_len(tp), &t->parent))
		return; /* no parent: its tracestate means nothing (W3C 3.3) */
	ts = yyjson_obj_get(meta, "tracestate");
	bg = yyjson_obj_get(meta, "baggage");
	if (yyjson_is_str(ts) && sl_tracestate_valid(yyjson_get_str(ts), yyjson_get_len(ts)) &&
	    strlen(yyjson_get_str(ts)) == yyjson_get_len(ts) && yyjson_get_len(ts))
		t->tracestate = sl_strdup(yyjson_get_str(ts));
	if (yyjson_is_str(bg) && sl_baggage_valid(yyjson_get_str(bg), yyjson_get_len(bg)) &&
	    strlen(yyjson_get_str(bg)) == yyjson_get_len(bg))
		t->baggage = sl_strdup(yyjson_get_str(bg));
}

void sl_trace_ctx_copy(struct sl_trace_ctx *to, const struct sl_trace_ctx *from)
{
	to->parent = from->parent;
	to->tracestate = from->tracestate ? sl_strdup(from->tracestate) : NULL;
	to->baggage = from->baggage ? sl_strdup(from->baggage) : NULL;
}

bool sl_trace_ctx_any(const struct sl_trace_ctx *t, const struct sl_trace *ours)
{
	return (ours && ours->valid) || (t && t->parent.valid);
}

void sl_trace_ctx_to_meta(const struct sl_trace_ctx *t, const struct sl_trace *ours,
			  yyjson_mut_doc *d, yyjson_mut_val *meta)
{
	char tp[SL_TRACEPARENT_LEN + 1];

	yyjson_mut_obj_remove_key(meta, "traceparent");
	yyjson_mut_obj_remove_key(meta, "tracestate");
	yyjson_mut_obj_remove_key(meta, "baggage");
	if (!sl_trace_ctx_any(t, ours))
		return;
	sl_trace_format(ours && ours->valid ? ours : &t->parent, tp);
	yyjson_mut_obj_add_strcpy(d, meta, "traceparent", tp);
	if (t && t->tracestate)
		yyjson_mut_obj_add_strcpy(d, meta, "tracestate", t->tracestate);
	if (t && t->baggage)
		yyjson_mut_obj_add_strcpy(d, meta, "baggage", t->baggage);
}

void sl_trace_ctx_dispose(struct sl_trace_ctx *t)
{
	free(t->tracestate);
	free(t->baggage);
	memset(t, 0, sizeof(*t));
}

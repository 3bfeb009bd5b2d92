/*
 * Fuzz target: the redaction engine (src/stages/redaction.c), built-in
 * patterns, over arbitrary text and JSON.
 *
 * Input: byte 0 picks a secret (kind and characters), byte 1 where to put
 * it; the rest is text. The engine scans prefix + " " + secret + " " +
 * suffix, and, when the input is JSON, the document itself.
 *
 * Invariants checked:
 *   - the secret never survives: its last 16 characters appear in the
 *     output no more often than the fuzzer's own text holds them (a secret
 *     cut in two by an overlapping match is a leak);
 *   - a result is either a failure with no output, nothing replaced with no
 *     output, or n > 0 replacements with NUL-terminated output holding at
 *     least n markers;
 *   - redacting a JSON document keeps it valid JSON, and leaves no
 *     non-empty string under a secret-named key ("password", ...) in clear.
 *
 * fuzz-flags: -max_len=4096 -dict=tests/fuzz/redaction.dict
 */
#include "fuzz.h"

#include "core/json.h"
#include "core/log.h"
#include "pipeline/call.h"
#include "stages/redaction.h"

#include <string.h>

/* The stage's state with the defaults, made once (no section to borrow from). */
static struct sl_redaction *red;

#define UPPER "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define LOWER "abcdefghijklmnopqrstuvwxyz"
#define DIGIT "0123456789"
#define MARK "[REDACTED:"
#define TAIL 16

/* Secrets the fuzzer cannot forge by accident: a fixed prefix and a body
 * of given characters (none of them contradicts its pattern). */
static const struct {
	const char *prefix;
	const char *chars;
	size_t n;
} secrets[] = {
	{ "ghp_", UPPER LOWER DIGIT, 36 },
	{ "AKIA", UPPER DIGIT, 16 },
	{ "npm_", UPPER LOWER DIGIT, 36 },
	{ "glpat-", UPPER LOWER DIGIT, 20 },
	{ "xoxb-", LOWER DIGIT, 30 },
	{ "sk-ant-api03-", UPPER LOWER DIGIT, 40 },
	{ "sk_live_", UPPER LOWER DIGIT, 30 },
	{ "lin_api_", UPPER LOWER DIGIT, 40 },
	{ "SG.", UPPER LOWER DIGIT, 22 }, /* + "." + 43 below */
	{ "AGE-SECRET-KEY-1", "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58 },
};

static size_t make_secret(unsigned sel, char *out)
{
	size_t k = sel % SL_COUNT(secrets), len, m;
	strcpy(out, secrets[k].prefix);
	len = strlen(out);
	m = strlen(secrets[k].chars);
	for (size_t i = 0; i < secrets[k].n; i++)
		out[len++] = secrets[k].chars[(i * 7 + sel / SL_COUNT(secrets) * 13 + 3) % m];
	if (strcmp(secrets[k].prefix, "SG.") == 0) {
		out[len++] = '.';
		for (size_t i = 0; i < 43; i++)
			out[len++] = secrets[k].chars[(i * 11 + sel) % m];
	}
	out[len] = '\0';
	return len;
}

static size_t count(const char *hay, size_t hn, const char *needle, size_t nn)
{
	size_t c = 0;
	for (size_t i = 0; nn && i + nn <= hn; i++)
		if (memcmp(hay + i, needle, nn) == 0)
			c++;
	return c;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sl_err err;
	char s[160], *out;
	void *st = NULL;
	sl_log_set_level(SL_LOG_ERROR);
	if (sl_stage_redaction.init(NULL, NULL, NULL, &st, &err) < 0) {
		fprintf(stderr, "redaction init: %s\n", err.msg);
		abort();
	}
	red = st;
	/* Every secret here is one the engine finds on its own. */
	for (unsigned sel = 0; sel < SL_COUNT(secrets); sel++) {
		size_t n = make_secret(sel, s);
		ASSERT(sl_redact_text(red, s, n, &out) == 1);
		ASSERT(strncmp(out, MARK, strlen(MARK)) == 0 && !strstr(out, s + n - TAIL));
		free(out);
	}
	return 0;
}

static void check_text(const char *in, size_t len, const char *secret, size_t slen,
		       size_t own_tails)
{
	char *out;
	size_t outlen, n = sl_redact_textn(red, in, len, &out, &outlen, NULL);

	if (n == SL_REDACT_FAILED || n == 0) {
		ASSERT(out == NULL);
		/* Not found at all: only possible if the engine failed. */
		ASSERT(!secret || n == SL_REDACT_FAILED);
		return;
	}
	ASSERT(out && out[outlen] == '\0');
	ASSERT(count(out, outlen, MARK, strlen(MARK)) >= n);
	if (secret && count(out, outlen, secret + slen - TAIL, TAIL) > own_tails) {
		fprintf(stderr, "secret %s survived in:\n", secret);
		fwrite(out, 1, outlen, stderr);
		fputc('\n', stderr);
		abort();
	}
	free(out);
}

static bool secret_key(const char *k)
{
	static const char *const names[] = { "password", "api_key", "apiKey", "secret",
					     "access_token", "clientSecret" };
	for (size_t i = 0; i < SL_COUNT(names); i++)
		if (strcmp(k, names[i]) == 0)
			return true;
	return false;
}

static void check_fields(yyjson_val *v, size_t depth)
{
	size_t i, max;
	yyjson_val *k, *e;
	if (depth > 32)
		return;
	if (yyjson_is_arr(v)) {
		yyjson_arr_foreach(v, i, max, e)
			check_fields(e, depth + 1);
	} else if (yyjson_is_obj(v)) {
		yyjson_obj_foreach(v, i, max, k, e) {
			if (secret_key(yyjson_get_str(k)) && yyjson_is_str(e) && yyjson_get_len(e))
				ASSERT(strncmp(yyjson_get_str(e), MARK, strlen(MARK)) == 0);
			check_fields(e, depth + 1);
		}
	}
}

static void check_json(const char *in, size_t len)
{
	yyjson_doc *d = yyjson_read(in, len, SL_JSON_READ_FLAGS);
	yyjson_mut_doc *md;
	size_t n = 0, outlen;
	struct sl_err err;
	char *out;

	if (!d)
		return;
	md = yyjson_doc_mut_copy(d, NULL);
	yyjson_doc_free(d);
	if (sl_redact_json(red, md, yyjson_mut_doc_get_root(md), &n, &err) == SL_OK) {
		out = sl_json_write_mut_val(yyjson_mut_doc_get_root(md), &outlen);
		d = yyjson_read(out, outlen, SL_JSON_READ_FLAGS);
		ASSERT(d);
		check_fields(yyjson_doc_get_root(d), 0);
		yyjson_doc_free(d);
		free(out);
	} else {
		ASSERT(err.msg[0]);
	}
	yyjson_mut_doc_free(md);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char secret[160], *buf;
	size_t slen, at, tl, len;
	const char *text;

	if (size < 2)
		return 0;
	slen = make_secret(data[0], secret);
	text = (const char *)data + 2;
	tl = size - 2;
	at = tl ? data[1] % (tl + 1) : 0;

	check_text(text, tl, NULL, 0, 0);
	check_json(text, tl);

	len = tl + slen + 2;
	buf = malloc(len);
	memcpy(buf, text, at);
	buf[at] = ' ';
	memcpy(buf + at + 1, secret, slen);
	buf[at + 1 + slen] = ' ';
	memcpy(buf + at + 2 + slen, text + at, tl - at);
	check_text(buf, len, secret, slen, count(text, tl, secret + slen - TAIL, TAIL));
	free(buf);
	return 0;
}

/*
 * Fuzz target: the injection guard's scorer (src/stages/guard.c), built-in
 * patterns, over arbitrary bytes: folding (HTML references, \uXXXX
 * escapes, look-alikes, invisible characters), hidden-text tricks (tag
 * characters, zero-width runs, bidi overrides, reversed text), leetspeak
 * and spacing undone, base64 runs decoded, JSON inside text.
 *
 * Invariants checked:
 *   - the score is never negative and the same every time (no state leaks
 *     from one scan into the next), with or without reasons asked for;
 *   - reasons are NUL-terminated within the buffer however small it is,
 *     and present exactly when the score is not 0;
 *   - the text read as one JSON string value scores without crashing.
 *
 * fuzz-flags: -max_len=4096 -dict=tests/fuzz/guard.dict
 */
#include "fuzz.h"

#include "core/log.h"
#include "pipeline/call.h"
#include "stages/guard.h"

#include <string.h>

/* The stage's state with the defaults, made once (no section to borrow from). */
static struct sl_guard *guard;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sl_err err;
	void *st = NULL;
	sl_log_set_level(SL_LOG_ERROR);
	if (sl_stage_guard.init(NULL, NULL, NULL, &st, &err) < 0) {
		fprintf(stderr, "guard init: %s\n", err.msg);
		abort();
	}
	guard = st;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	char why[160], tiny[7];
	int a, b, c;

	a = sl_guard_score_text(guard, s, size);
	ASSERT(a >= 0);
	memset(why, 'x', sizeof(why));
	b = sl_guard_explain(guard, s, size, why, sizeof(why));
	ASSERT(b == a);
	ASSERT(memchr(why, '\0', sizeof(why)));
	ASSERT((a == 0) == (why[0] == '\0'));
	memset(tiny, 'x', sizeof(tiny));
	c = sl_guard_explain(guard, s, size, tiny, sizeof(tiny));
	ASSERT(c == a);
	ASSERT(memchr(tiny, '\0', sizeof(tiny)));
	ASSERT(sl_guard_score_text(guard, s, size) == a);
	return 0;
}

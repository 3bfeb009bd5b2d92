/*
 * Fuzz target: the JSON Schema -> TypeScript generator (src/discovery/
 * tsgen.c), which turns every upstream's inputSchema and outputSchema into
 * declarations a model reads: $ref and $defs (cycles), anyOf/oneOf/allOf,
 * enum and const, tuples, quoted keys, JSDoc from descriptions.
 *
 * Invariants checked:
 *   - the answer is never NULL, is NUL-terminated at its stated length and
 *     begins with the root declaration (after its JSDoc; a type, or an
 *     interface when the root refers to itself);
 *   - it is bounded (the generator's own size limits hold whatever the
 *     schema: no output grows with nesting beyond the cap);
 *   - a description cannot end its JSDoc comment early: a line that opens
 *     one closes it at its end and nowhere before;
 *   - the same bytes give the same text (no state between calls).
 *
 * fuzz-flags: -max_len=8192 -dict=tests/fuzz/schema.dict
 */
#include "fuzz.h"

#include "core/log.h"
#include "discovery/discovery.h"

#include <string.h>

#define OUT_MAX (1u << 20) /* far above the generator's own caps */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sl_log_set_level(SL_LOG_ERROR);
	return 0;
}

/* The generator writes one-line JSDoc comments: a line that opens one
 * closes it at its end and nowhere before (a description's own "*" "/" is
 * escaped), so what follows is code again. */
static void comments_closed(const char *s)
{
	const char *line = s;
	while (*line) {
		const char *nl = strchr(line, '\n'), *p = line, *end;
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		while (*p == ' ')
			p++;
		if (strncmp(p, "/**", 3) == 0) {
			end = strstr(p + 3, "*/");
			ASSERT(end != NULL && end + 2 == line + len);
		}
		line += len + (nl != NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = 0, n2 = 0;
	char *a = sl_ts_from_json((const char *)data, size, &n);
	const char *root;
	char *b;

	ASSERT(a != NULL);
	ASSERT(strlen(a) == n);
	ASSERT(n < OUT_MAX);
	/* After the root's JSDoc, if any; a self-referential root is a named
	 * interface. */
	root = a;
	if (strncmp(root, "/**", 3) == 0) {
		root = strstr(root, "*/\n");
		ASSERT(root != NULL);
		root += 3;
	}
	ASSERT(strncmp(root, "type Root = ", 12) == 0 || strncmp(root, "interface Root {", 16) == 0);
	comments_closed(a);
	b = sl_ts_from_json((const char *)data, size, &n2);
	ASSERT(n2 == n && memcmp(a, b, n) == 0);
	free(a);
	free(b);
	return 0;
}

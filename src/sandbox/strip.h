/*
 * TypeScript in code mode: sucrase's "typescript" transform, bundled and
 * compiled to QuickJS bytecode at build time (scripts/stripper/), loaded
 * once into its own runtime in the zygote, so a forked worker pays only the
 * transform. Its runtime is not the program's: the program can neither see
 * nor change it, and its heap is not charged to the program's limit.
 *
 * API (in the zygote, then in the worker):
 *   s = sl_strip_load(interrupt, opaque);   NULL when it fails to load
 *   sl_strip_run(s, src, len, &out, &err);   0: out is JavaScript (free it)
 *   col = sl_strip_column(in, out, line, col);
 *   col = sl_strip_char_column(text, line, byte_col);
 */
#ifndef SL_SANDBOX_STRIP_H
#define SL_SANDBOX_STRIP_H

#include <stddef.h>

struct sl_strip;

/* Why the stripper refused a program: its message and where (1-based,
 * the column in characters, as sl_strip_column's; 0 when it did not say). */
struct sl_strip_error {
	char message[256];
	unsigned long line, column;
};

/* The stripper's heap, apart from the program's: loaded, it holds about
 * 3 MiB; a program at sluice.codeMode.maxSourceBytes needs a few more. */
#define SL_STRIP_HEAP (48u << 20)

/* interrupt(opaque) is asked now and then while stripping: non-zero stops
 * it (the program's own time and CPU limits). */
struct sl_strip *sl_strip_load(int (*interrupt)(void *opaque), void *opaque);
/* Only tests free one: a worker exits with its stripper. */
void sl_strip_free(struct sl_strip *s);
/* In a worker, before its first transform: the stripper's memory becomes
 * the worker's own (heap.h). A JavaScript program never pays for it. */
void sl_strip_own(struct sl_strip *s);
/* src is len bytes of UTF-8. -1 with err filled: not
 * TypeScript, or out of time or memory (err says which). */
int sl_strip_run(struct sl_strip *s, const char *src, size_t len, char **out, size_t *out_len,
		 struct sl_strip_error *err);

/* The column in `in` (the TypeScript) of column col of line `line` in
 * `out` (what the stripper made of it): sucrase keeps lines but drops
 * types within them. Columns count characters (UTF-8 sequences), 1-based.
 * Each line of out is matched greedily against the same line of in, as a
 * subsequence: right for removed text, approximate for added text (enums,
 * parameter properties), which maps to where it was added. */
unsigned long sl_strip_column(const char *in, const char *out, unsigned long line,
			      unsigned long col);
/* The column in characters (UTF-8 sequences, 1-based) of byte column col
 * (1-based, as the engine counts) of line `line` of text. */
unsigned long sl_strip_char_column(const char *text, unsigned long line, unsigned long col);

#endif

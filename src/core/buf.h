/*
 * A growable byte buffer with a hard size limit (curl's dynbuf discipline):
 * every buffer fed by a peer has a cap, and appending past it fails.
 *
 * API:
 *   struct sl_buf b; sl_buf_init(&b, 1 << 20);
 *   if (sl_buf_append(&b, p, n) < 0) ... over the cap, b unchanged
 *   sl_buf_dispose(&b);
 *
 *   struct sl_blob *k = sl_blob_new(bytes, len);   bytes shared by reference
 *   sl_blob_ref(k); ... sl_blob_unref(k);          freed with the last one
 */
#ifndef SL_CORE_BUF_H
#define SL_CORE_BUF_H

#include "core/common.h"

struct sl_buf {
	char *data;
	size_t len;
	size_t alloc;
	size_t max; /* hard cap on len */
};

void sl_buf_init(struct sl_buf *b, size_t max);
void sl_buf_dispose(struct sl_buf *b);
void sl_buf_reset(struct sl_buf *b);
/* 0 or SL_ERR_TOO_LARGE (nothing appended). Keeps data NUL-terminated. */
int sl_buf_append(struct sl_buf *b, const void *p, size_t n) SL_MUST_USE;
int sl_buf_appends(struct sl_buf *b, const char *s) SL_MUST_USE;
int sl_buf_printf(struct sl_buf *b, const char *fmt, ...) SL_PRINTF(2, 3) SL_MUST_USE;
/* Drops the first n bytes. */
void sl_buf_consume(struct sl_buf *b, size_t n);
/* Hands the bytes to the caller (who frees them) and empties b. */
char *sl_buf_take(struct sl_buf *b, size_t *len);

/*
 * Bytes that outlive their owner's use of them while a write sends them:
 * a rendered tools/list is sent without a copy, and its store may drop it
 * before the write completes. One reference per holder; the event loop is
 * the only thread that takes or drops one.
 */
struct sl_blob {
	size_t refs;
	size_t len;
	char *data;
};

/* Takes data (malloc'd); one reference. */
struct sl_blob *sl_blob_new(char *data, size_t len);
struct sl_blob *sl_blob_ref(struct sl_blob *k);
/* Drops one reference; the last frees the bytes. NULL: nothing. */
void sl_blob_unref(struct sl_blob *k);

#endif

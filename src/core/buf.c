/* Growable, capped byte buffer. */
#include "core/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl_buf_init(struct sl_buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

void sl_buf_dispose(struct sl_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->alloc = 0;
}

void sl_buf_reset(struct sl_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static void grow(struct sl_buf *b, size_t need)
{
	size_t n = b->alloc ? b->alloc : 256;
	while (n < need)
		n *= 2;
	b->data = sl_realloc(b->data, n);
	b->alloc = n;
}

int sl_buf_append(struct sl_buf *b, const void *p, size_t n)
{
	if (n > b->max - b->len)
		return SL_ERR_TOO_LARGE;
	if (b->len + n + 1 > b->alloc)
		grow(b, b->len + n + 1);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return SL_OK;
}

int sl_buf_appends(struct sl_buf *b, const char *s)
{
	return sl_buf_append(b, s, strlen(s));
}

int sl_buf_printf(struct sl_buf *b, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n, rc;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		sl_oom();
	rc = sl_buf_append(b, s, (size_t)n);
	free(s);
	return rc;
}

void sl_buf_consume(struct sl_buf *b, size_t n)
{
	if (n >= b->len) {
		sl_buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

char *sl_buf_take(struct sl_buf *b, size_t *len)
{
	char *d = b->data;
	if (len)
		*len = b->len;
	if (!d)
		d = sl_strdup("");
	b->data = NULL;
	b->len = b->alloc = 0;
	return d;
}

struct sl_blob *sl_blob_new(char *data, size_t len)
{
	struct sl_blob *k = sl_alloc(sizeof(*k));
	k->refs = 1;
	k->len = len;
	k->data = data;
	return k;
}

struct sl_blob *sl_blob_ref(struct sl_blob *k)
{
	k->refs++;
	return k;
}

void sl_blob_unref(struct sl_blob *k)
{
	if (!k || --k->refs)
		return;
	free(k->data);
	free(k);
}

/* Line writes on libuv streams; see write.h. */
#include "event/write.h"

#include <stdlib.h>

struct write_req {
	uv_write_t w;
	char *line;
	struct sl_blob *k;
};

static void on_written(uv_write_t *w, int status)
{
	struct write_req *r = (struct write_req *)w;
	free(r->line);
	sl_blob_unref(r->k);
	free(r);
}

static uv_buf_t buf(char *p, size_t n)
{
	uv_buf_t b;
	b.base = p;
	b.len = n; /* size_t here: uv_buf_init's is 32 bits */
	return b;
}

int sl_write_line(uv_stream_t *s, char *line, size_t len)
{
	return sl_write_spliced(s, line, len, len, NULL, 0, 0);
}

int sl_write_spliced(uv_stream_t *s, char *line, size_t len, size_t at, struct sl_blob *k,
		     size_t off, size_t n)
{
	struct write_req *r = sl_alloc(sizeof(*r));
	uv_buf_t b[3];
	unsigned nb = 0;

	r->line = line;
	r->k = k;
	if (k) {
		if (at)
			b[nb++] = buf(line, at);
		b[nb++] = buf(k->data + off, n);
		b[nb++] = buf(line + at, len - at);
	} else {
		b[nb++] = buf(line, len);
	}
	if (uv_write(&r->w, s, b, nb, on_written) < 0) {
		on_written(&r->w, 0);
		return SL_ERR_IO;
	}
	return SL_OK;
}

/* Line writes on libuv streams; see write.h. */
#include "event/write.h"

#include <stdlib.h>

struct write_req {
	uv_write_t w;
	char *line;
};

static void on_written(uv_write_t *w, int status)
{
	struct write_req *r = (struct write_req *)w;
	free(r->line);
	free(r);
}

int sl_write_line(uv_stream_t *s, char *line, size_t len)
{
	struct write_req *r = sl_alloc(sizeof(*r));
	uv_buf_t b = uv_buf_init(line, (unsigned)len);
	r->line = line;
	if (uv_write(&r->w, s, &b, 1, on_written) < 0) {
		free(line);
		free(r);
		return SL_ERR_IO;
	}
	return SL_OK;
}

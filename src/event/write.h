/*
 * Writing whole lines to libuv streams. The event loop itself is libuv's;
 * this folder holds what runs on it for every owner: these helpers, handle
 * sets (handles.h), libcurl's multi interface on the loop (curl.h) and
 * one-shot HTTP requests (fetch.h).
 *
 * API:
 *   if (sl_write_line(stream, line, len) < 0) ...   line is taken either way
 *   sl_write_spliced(stream, line, len, at, k, off, n)   the same, with bytes
 *                                                        of k sent at line[at]
 */
#ifndef SL_EVENT_WRITE_H
#define SL_EVENT_WRITE_H

#include "core/buf.h"
#include "core/common.h"
#include <uv.h>

/* Queues line (malloc'd, taken) on s; freed once written. 0 or SL_ERR_IO. */
int sl_write_line(uv_stream_t *s, char *line, size_t len) SL_MUST_USE;
/* Queues line[0, at), k->data[off, off + n), line[at, len) on s, without
 * copying k's bytes; line and the reference k are taken either way (k:
 * NULL for none). 0 or SL_ERR_IO. */
int sl_write_spliced(uv_stream_t *s, char *line, size_t len, size_t at, struct sl_blob *k,
		     size_t off, size_t n) SL_MUST_USE;

#endif

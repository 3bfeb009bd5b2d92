/*
 * Writing whole lines to libuv streams. The event loop itself is libuv's;
 * this folder holds what runs on it for every owner: these helpers, handle
 * sets (handles.h), libcurl's multi interface on the loop (curl.h) and
 * one-shot HTTP requests (fetch.h).
 *
 * API:
 *   if (sl_write_line(stream, line, len) < 0) ...   line is taken either way
 */
#ifndef SL_EVENT_WRITE_H
#define SL_EVENT_WRITE_H

#include "core/common.h"
#include <uv.h>

/* Queues line (malloc'd, taken) on s; freed once written. 0 or SL_ERR_IO. */
int sl_write_line(uv_stream_t *s, char *line, size_t len) SL_MUST_USE;

#endif

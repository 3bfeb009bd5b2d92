/*
 * Logging to stderr (or a file): never to stdout, which carries only MCP
 * messages on the stdio transport.
 *
 * API:
 *   sl_log_init(SL_LOG_INFO, NULL);     NULL: stderr
 *   sl_log(SL_LOG_WARN, "upstream %s: %s", name, why);
 */
#ifndef SL_CORE_LOG_H
#define SL_CORE_LOG_H

#include "core/common.h"

enum sl_log_level { SL_LOG_ERROR, SL_LOG_WARN, SL_LOG_INFO, SL_LOG_DEBUG };

/* Opens path for appending (NULL: stderr). Returns 0 or SL_ERR_IO. */
int sl_log_init(enum sl_log_level level, const char *path) SL_MUST_USE;
void sl_log_set_level(enum sl_log_level level);
bool sl_log_enabled(enum sl_log_level level);
/* One line: the message with every control character escaped (see
 * core/escape.h), so peer text in the arguments cannot break or fake one. */
void sl_log(enum sl_log_level level, const char *fmt, ...) SL_PRINTF(2, 3);
void sl_logv(enum sl_log_level level, const char *fmt, va_list ap) SL_PRINTF(2, 0);
/* A status line for a person at a terminal (sluice check's progress):
 * drawn on stderr, erased before each log line and drawn again after it,
 * so log lines scroll above it. NULL erases it. Only for a stderr that is
 * a terminal: it writes "\r" and an erase-line sequence. At most
 * SL_LOG_STATUS_MAX - 1 bytes are kept. */
#define SL_LOG_STATUS_MAX 256
void sl_log_status(const char *text);
/* Parses "error", "warn", "info", "debug". Returns -1 if unknown. */
int sl_log_level_parse(const char *s);

#endif

/*
 * Logging: one line per event, level-filtered, to stderr or a file. Call
 * sites pass peer text (tool names, upstream error messages, a child's
 * stderr) freely: the whole formatted message is escaped here, so no call
 * site can put a raw control character, a line break or a bidi control
 * into the log, and every line is exactly one "sluice LEVEL: " line.
 */
#include "core/log.h"
#include "core/escape.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum sl_log_level cur_level = SL_LOG_INFO;
static FILE *out;

static const char *names[] = { "error", "warn", "info", "debug" };
static char status[SL_LOG_STATUS_MAX]; /* sl_log_status's line, "" when none */

int sl_log_init(enum sl_log_level level, const char *path)
{
	cur_level = level;
	if (!path) {
		out = stderr;
		return SL_OK;
	}
	FILE *f = fopen(path, "ae");
	if (!f)
		return SL_ERR_IO;
	setvbuf(f, NULL, _IOLBF, 0);
	if (out && out != stderr)
		fclose(out);
	out = f;
	return SL_OK;
}

void sl_log_set_level(enum sl_log_level level)
{
	cur_level = level;
}

bool sl_log_enabled(enum sl_log_level level)
{
	return level <= cur_level;
}

int sl_log_level_parse(const char *s)
{
	for (size_t i = 0; i < SL_COUNT(names); i++)
		if (strcmp(s, names[i]) == 0)
			return (int)i;
	return -1;
}

/* The longest message kept; a longer one is cut and says by how much. */
#define MESSAGE_MAX 2048

void sl_logv(enum sl_log_level level, const char *fmt, va_list ap)
{
	char msg[MESSAGE_MAX];
	struct sl_buf line;
	int n;
	size_t len;

	if (level > cur_level)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	len = (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
	/* A cut falls on a character boundary, not inside one. */
	while ((size_t)n > len && len > 0 && ((unsigned char)msg[len] & 0xC0) == 0x80)
		len--;
	sl_buf_init(&line, 6 * sizeof(msg) + 128);
	if (sl_buf_printf(&line, "sluice %s: ", names[level]) < 0 ||
	    sl_escape(&line, msg, len, SL_ESCAPE_LOG) < 0 ||
	    ((size_t)n > len && sl_buf_printf(&line, " [... %zu more bytes]", (size_t)n - len) < 0) ||
	    sl_buf_append(&line, "\n", 1) < 0)
		sl_oom(); /* the cap is above the longest line */
	if (status[0] && (!out || out == stderr)) {
		fprintf(stderr, "\r\033[K%.*s%s", (int)line.len, line.data, status);
		fflush(stderr);
	} else {
		fwrite(line.data, 1, line.len, out ? out : stderr);
	}
	sl_buf_dispose(&line);
}

void sl_log_status(const char *text)
{
	snprintf(status, sizeof(status), "%s", text ? text : "");
	fprintf(stderr, "\r\033[K%s", status);
	fflush(stderr);
}

void sl_log(enum sl_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sl_logv(level, fmt, ap);
	va_end(ap);
}

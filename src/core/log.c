/* Logging: one line per event, level-filtered, to stderr or a file. */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum sl_log_level cur_level = SL_LOG_INFO;
static FILE *out;

static const char *names[] = { "error", "warn", "info", "debug" };

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

void sl_log(enum sl_log_level level, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	int n;

	if (level > cur_level)
		return;
	n = snprintf(line, sizeof(line), "sluice %s: ", names[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	fprintf(out ? out : stderr, "%s\n", line);
}

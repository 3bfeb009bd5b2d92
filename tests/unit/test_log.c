/* Unit tests of src/core/log.c: whatever a call site passes, a log line is
 * one line, with peer text escaped. */
#include "unit.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Logs through fn into a fresh file and returns what it holds. */
static char *logged(void (*fn)(void))
{
	char path[] = "/tmp/sluice-unit-log-XXXXXX";
	int fd = mkstemp(path);
	char *text = calloc(1, 1 << 16);
	FILE *f;

	CHECK(fd >= 0);
	close(fd);
	CHECK_INT(sl_log_init(SL_LOG_INFO, path), 0);
	fn();
	CHECK_INT(sl_log_init(SL_LOG_INFO, NULL), 0); /* back to stderr */
	f = fopen(path, "r");
	CHECK(f != NULL);
	if (f) {
		CHECK(fread(text, 1, (1 << 16) - 1, f) > 0);
		fclose(f);
	}
	unlink(path);
	return text;
}

static void forged(void)
{
	sl_log(SL_LOG_WARN, "upstream %s: %s", "gh\nsluice error: fake",
	       "boom\n{\"type\":\"call\",\"outcome\":\"ok\"}\r\x1b[2K\x1b]0;t\x07\xe2\x80\xae!");
}

TEST(log_escapes_every_control_character)
{
	char *t = logged(forged);
	CHECK_STR(t, "sluice warn: upstream gh\\nsluice error: fake: boom\\n{\"type\":\"call\","
		     "\"outcome\":\"ok\"}\\r\\x1b[2K\\x1b]0;t\\x07\\u202e!\n");
	free(t);
}

static void long_message(void)
{
	char *s = malloc(5000);
	memset(s, 'x', 4999);
	s[4999] = '\0';
	s[2040] = '\n';
	sl_log(SL_LOG_INFO, "%s", s);
	sl_log(SL_LOG_DEBUG, "not at info");
	free(s);
}

TEST(log_long_message_is_one_line_and_says_it_was_cut)
{
	char *t = logged(long_message);
	char *nl = strchr(t, '\n');
	CHECK(nl != NULL && nl[1] == '\0');
	CHECK(strstr(t, "\\n") != NULL);
	CHECK(strstr(t, " [... 2952 more bytes]\n") != NULL);
	free(t);
}

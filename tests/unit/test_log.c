/* Unit tests of src/core/log.c: whatever a call site passes, a log line is
 * one line, with peer text escaped. */
#include "unit.h"
#include "fixture.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>

static void forged(void)
{
	sl_log(SL_LOG_WARN, "upstream %s: %s", "gh\nsluice error: fake",
	       "boom\n{\"type\":\"call\",\"outcome\":\"ok\"}\r\x1b[2K\x1b]0;t\x07\xe2\x80\xae!");
}

TEST(log_escapes_every_control_character)
{
	char *t = t_logged(forged);
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
	char *t = t_logged(long_message);
	char *nl = strchr(t, '\n');
	CHECK(nl != NULL && nl[1] == '\0');
	CHECK(strstr(t, "\\n") != NULL);
	CHECK(strstr(t, " [... 2952 more bytes]\n") != NULL);
	free(t);
}

/* src/cli/login.c: the loopback listener's answers. */
#include "unit.h"

#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

/* The Content-Length is the body's length (it was once written by hand,
 * three bytes too many, and a browser waited for them). */
TEST(login_reply_content_length)
{
	char out[512];

	for (int ok = 0; ok < 2; ok++) {
		size_t n = sl_cli_login_reply(out, sizeof(out), ok);
		char *body = strstr(out, "\r\n\r\n"), *cl = strstr(out, "Content-Length: ");

		CHECK(n > 0 && n == strlen(out));
		CHECK(body != NULL && cl != NULL && cl < body);
		if (!body || !cl)
			continue;
		CHECK_INT(strtol(cl + 16, NULL, 10), (long)strlen(body + 4));
		CHECK(strncmp(out, ok ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.1 404 Not Found\r\n",
			      ok ? 17 : 24) == 0);
	}
	CHECK(strstr(out, "sluice received the login") != NULL);
	CHECK_INT(sl_cli_login_reply(out, 20, true), 0); /* too small: nothing */
}

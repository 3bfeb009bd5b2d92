/* Unit tests of the admin page's pure parts (src/gateway/admin.c): the
 * same-origin rule, the form's bounded fields, the CSRF check; and of what
 * it reads and writes through the audit stage (the tail, the admin line). */
#include "unit.h"
#include "fixture.h"

#include "core/json.h"
#include "gateway/admin.h"
#include "pipeline/gen.h"
#include "stages/audit.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

TEST(admin_same_origin_is_scheme_and_host_exactly)
{
	CHECK(sl_admin_same_origin(false, "127.0.0.1:8370", "http://127.0.0.1:8370", NULL));
	CHECK(sl_admin_same_origin(true, "gw.example:443", "https://gw.example:443", NULL));
	/* Another port of the same host is another origin (another local
	 * server's page), and so is the other scheme. */
	CHECK(!sl_admin_same_origin(false, "127.0.0.1:8370", "http://127.0.0.1:9999", NULL));
	CHECK(!sl_admin_same_origin(false, "127.0.0.1:8370", "https://127.0.0.1:8370", NULL));
	CHECK(!sl_admin_same_origin(true, "127.0.0.1:8370", "http://127.0.0.1:8370", NULL));
	CHECK(!sl_admin_same_origin(false, "127.0.0.1:8370", "http://127.0.0.1:83700", NULL));
	CHECK(!sl_admin_same_origin(false, "127.0.0.1:8370", "http://evil.example", NULL));
	CHECK(!sl_admin_same_origin(false, "127.0.0.1:8370", "null", NULL));
	CHECK(!sl_admin_same_origin(false, NULL, "http://127.0.0.1:8370", NULL));
	/* An Origin decides even when Sec-Fetch-Site says otherwise. */
	CHECK(!sl_admin_same_origin(false, "a:1", "http://b:1", "same-origin"));
	/* Without an Origin, only Sec-Fetch-Site: same-origin. */
	CHECK(sl_admin_same_origin(false, "a:1", NULL, "same-origin"));
	CHECK(!sl_admin_same_origin(false, "a:1", NULL, "same-site"));
	CHECK(!sl_admin_same_origin(false, "a:1", NULL, "cross-site"));
	CHECK(!sl_admin_same_origin(false, "a:1", NULL, NULL));
}

TEST(admin_form_fields_are_bounded_and_taken_once)
{
	struct sl_admin_form f = { 0 };
	char big[sizeof(f.tool) + 1];

	sl_admin_form_field(&f, "action", "approve", 0, 7);
	sl_admin_form_field(&f, "server", "7069", 0, 4);
	/* A value in chunks, as the post processor hands a long one. */
	sl_admin_form_field(&f, "tool", "6772", 0, 4);
	sl_admin_form_field(&f, "tool", "6565", 4, 4);
	sl_admin_form_field(&f, "unknown", "x", 0, 1);
	CHECK(!f.bad);
	CHECK_STR(f.action, "approve");
	CHECK_STR(f.server, "7069");
	CHECK_STR(f.tool, "67726565");
	/* A chunk that does not continue the value. */
	sl_admin_form_field(&f, "tool", "00", 2, 2);
	CHECK(f.bad);

	f = (struct sl_admin_form){ 0 };
	sl_admin_form_field(&f, "action", "reset", 0, 5);
	sl_admin_form_field(&f, "action", "approve", 0, 7); /* repeated: ambiguous */
	CHECK(f.bad);
	CHECK_STR(f.action, "reset");

	f = (struct sl_admin_form){ 0 };
	memset(big, 'a', sizeof(big));
	sl_admin_form_field(&f, "tool", big, 0, sizeof(f.tool) - 1);
	CHECK(!f.bad);
	CHECK_INT(strlen(f.tool), sizeof(f.tool) - 1);
	f = (struct sl_admin_form){ 0 };
	sl_admin_form_field(&f, "tool", big, 0, sizeof(f.tool));
	CHECK(f.bad);
	CHECK_STR(f.tool, "");
	f = (struct sl_admin_form){ 0 };
	sl_admin_form_field(&f, "action", "approve-and-more", 0, 16);
	CHECK(f.bad);
}

TEST(admin_csrf_refuses_anything_but_the_token)
{
	struct sl_admin *a = sl_admin_new(NULL), *b = sl_admin_new(NULL);
	char zeros[SL_ADMIN_CSRF_HEX];

	memset(zeros, '0', sizeof(zeros) - 1);
	zeros[sizeof(zeros) - 1] = '\0';
	CHECK(!sl_admin_csrf_ok(a, NULL));
	CHECK(!sl_admin_csrf_ok(a, ""));
	CHECK(!sl_admin_csrf_ok(a, zeros));
	CHECK(!sl_admin_csrf_ok(a, "00"));
	/* The CSP names the style sheet by its hash, and nothing else runs. */
	CHECK(strstr(sl_admin_csp(a), "default-src 'none'; style-src 'sha256-") ==
	      sl_admin_csp(a));
	CHECK(strstr(sl_admin_csp(a), "form-action 'self'; frame-ancestors 'none'") != NULL);
	CHECK(strstr(sl_admin_csp(a), "script-src") == NULL);
	CHECK_STR(sl_admin_csp(a), sl_admin_csp(b));
	sl_admin_free(a);
	sl_admin_free(b);
}

TEST(admin_audit_line_names_the_action_never_more)
{
	struct timespec ts = { 1700000000, 5000000 };
	size_t len;
	char *line = sl_audit_admin_line("pins.approve", "pin", "gr\"eet\n", "127.0.0.1", "ok",
					 NULL, &ts, &len);
	yyjson_doc *d = yyjson_read(line, len, 0);
	yyjson_val *o = yyjson_doc_get_root(d);

	CHECK(len > 0 && line[len - 1] == '\n');
	CHECK(memchr(line, '\n', len - 1) == NULL);
	CHECK_STR(sl_json_str(o, "type"), "admin");
	CHECK_STR(sl_json_str(o, "time"), "2023-11-14T22:13:20.005Z");
	CHECK_STR(sl_json_str(o, "action"), "pins.approve");
	CHECK_STR(sl_json_str(o, "server"), "pin");
	CHECK_STR(sl_json_str(o, "tool"), "gr\"eet\n");
	CHECK_STR(sl_json_str(o, "peer"), "127.0.0.1");
	CHECK_STR(sl_json_str(o, "outcome"), "ok");
	CHECK(yyjson_is_null(yyjson_obj_get(o, "detail")));
	CHECK(yyjson_is_null(yyjson_obj_get(o, "subject")));
	yyjson_doc_free(d);
	free(line);
}

TEST(admin_audit_tail_is_the_newest_lines_cut)
{
	char dir[] = "/tmp/sluice-admin-XXXXXX", path[128], *json, **lines;
	struct sl_gen *g;
	struct sl_err err;
	size_t n;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/audit.jsonl", dir);
	json = sl_printf("{\"audit\":{\"file\":\"%s\"}}", path);
	g = t_gen_sluice(json, &err);
	CHECK(g != NULL);
	if (!g)
		return;
	/* Empty: no line. */
	CHECK_INT(sl_audit_tail(g, 3, 10, &lines, &n, &err), 0);
	CHECK_INT(n, 0);
	free(lines);
	f = fopen(path, "a");
	for (int i = 0; i < 100; i++)
		fprintf(f, "line %d\n", i);
	fprintf(f, "%s\n", "a-line-far-longer-than-ten-bytes");
	fclose(f);
	CHECK_INT(sl_audit_tail(g, 3, 40, &lines, &n, &err), 0);
	CHECK_INT(n, 3);
	if (n == 3) {
		CHECK_STR(lines[0], "line 98");
		CHECK_STR(lines[1], "line 99");
		CHECK_STR(lines[2], "a-line-far-longer-than-ten-bytes");
	}
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	/* The window is 3 * 11 bytes: the long line fills it (it starts
	 * exactly there, and is whole), and is cut to 10 bytes. */
	CHECK_INT(sl_audit_tail(g, 3, 10, &lines, &n, &err), 0);
	CHECK_INT(n, 1);
	if (n == 1)
		CHECK_STR(lines[0], "a-line-far");
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	/* A window of 4 * 8 bytes inside the long line: no whole line. */
	CHECK_INT(sl_audit_tail(g, 4, 7, &lines, &n, &err), 0);
	CHECK_INT(n, 0);
	free(lines);
	/* The admin line goes to the same file, and is its newest line. */
	sl_audit_admin(g, "pins.reset", "pin", "greet", "::1", "refused", "no pin");
	CHECK_INT(sl_audit_tail(g, 1, 500, &lines, &n, &err), 0);
	CHECK_INT(n, 1);
	if (n == 1) {
		CHECK(strstr(lines[0], "\"type\":\"admin\"") != NULL);
		CHECK(strstr(lines[0], "\"detail\":\"no pin\"") != NULL);
		free(lines[0]);
	}
	free(lines);
	/* A file gone: a clear error. */
	unlink(path);
	CHECK(sl_audit_tail(g, 1, 500, &lines, &n, &err) < 0);
	CHECK(strstr(err.msg, "cannot read") != NULL);
	sl_gen_unref(g);
	free(json);
	rmdir(dir);
}

TEST(admin_audit_tail_without_the_stage_is_empty)
{
	char **lines = (char **)1;
	struct sl_err err;
	size_t n = 7;

	CHECK_INT(sl_audit_tail(t_gen_bare(), 5, 100, &lines, &n, &err), 0);
	CHECK(lines == NULL);
	CHECK_INT(n, 0);
}

/*
 * sluice skills list|show NAME|rm NAME|approve NAME: the saved skills of
 * code mode (gateway/skills.h, docs/internals/SANDBOX.md "Skills"). Only
 * files: no config, no server. Whatever comes from a skill file is printed
 * escaped (control characters, bidi controls, invalid UTF-8), so that a
 * file cannot forge what the terminal shows.
 */
#include "cli/cli.h"
#include "core/buf.h"
#include "core/escape.h"
#include "gateway/skills.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *status_name(enum sl_skill_status st)
{
	switch (st) {
	case SL_SKILL_APPROVED:
		return "ok";
	case SL_SKILL_CHANGED:
		return "changed";
	case SL_SKILL_UNPINNED:
		return "unpinned";
	}
	return "?";
}

/* Prints s[0..len) escaped; with keep_lines, line feeds and tabs stay. */
static void put(const char *s, size_t len, bool keep_lines)
{
	struct sl_buf b;
	const char *end = s + len;

	sl_buf_init(&b, SIZE_MAX);
	while (s < end) {
		size_t n = 0;
		if (keep_lines)
			while (s + n < end && s[n] != '\n' && s[n] != '\t')
				n++;
		else
			n = (size_t)(end - s);
		(void)!sl_escape(&b, s, n, SL_ESCAPE_LOG);
		s += n;
		if (s < end)
			(void)!sl_buf_append(&b, s++, 1);
	}
	fwrite(b.data ? b.data : "", 1, b.len, stdout);
	sl_buf_dispose(&b);
}

static int do_list(const char *dir, const char *pins)
{
	struct sl_err err = { 0 };
	char **names;
	size_t n;
	bool more;

	if (sl_skills_names(dir, &names, &n, &more, &err) < 0) {
		fprintf(stderr, "sluice skills: %s\n", err.msg);
		return 1;
	}
	printf("%-32s %-9s %7s  %s\n", "NAME", "STATUS", "BYTES", "DESCRIPTION");
	for (size_t i = 0; i < n; i++) {
		struct sl_skill sk;
		if (sl_skill_read(dir, names[i], &sk, &err) < 0) {
			printf("%-32s %-9s %7s  ", names[i], "bad", "-");
			put(err.msg, strlen(err.msg), false);
			printf("\n");
			continue;
		}
		printf("%-32s %-9s %7zu  ", sk.name, status_name(sl_skill_status(pins, &sk)), sk.code_len);
		put(sk.description, strcspn(sk.description, "\n"), false);
		printf("\n");
		sl_skill_dispose(&sk);
	}
	if (more)
		printf("(more than %d files: only the first %d are skills)\n", SL_SKILLS_MAX, SL_SKILLS_MAX);
	if (n == 0)
		printf("(no skills in %s)\n", dir ? dir : "(no data directory)");
	sl_skills_names_free(names, n);
	return 0;
}

/* The skill NAME, or a line on stderr saying why not. */
static int read_skill(const char *dir, const char *name, struct sl_skill *sk)
{
	struct sl_err err = { 0 };
	int rc = sl_skill_read(dir, name, sk, &err);

	if (rc < 0)
		fprintf(stderr, "sluice skills: %s\n", rc == SL_ERR_NOT_FOUND ? "no such skill" : err.msg);
	return rc;
}

static int do_show(const char *dir, const char *pins, const char *name)
{
	struct sl_skill sk;

	if (read_skill(dir, name, &sk) < 0)
		return 1;
	printf("name:        %s\nstatus:      %s\nsha256:      %s\ndescription: ", sk.name,
	       status_name(sl_skill_status(pins, &sk)), sk.sha);
	put(sk.description, strlen(sk.description), false);
	if (sk.schema) {
		printf("\ninputSchema: ");
		put(sk.schema, strlen(sk.schema), false);
	}
	printf("\ncode (%zu bytes):\n", sk.code_len);
	put(sk.code, sk.code_len, true);
	printf("\n");
	sl_skill_dispose(&sk);
	return 0;
}

static int do_rm(const char *dir, const char *pins, const char *name)
{
	struct sl_err err = { 0 };
	int rc = sl_skill_remove(dir, name, &err);

	if (rc < 0) {
		fprintf(stderr, "sluice skills: %s\n", rc == SL_ERR_NOT_FOUND ? "no such skill" : err.msg);
		return 1;
	}
	/* Its pin goes too: a file put back later is not trusted by it. */
	if (pins && sl_skill_pin(pins, name, NULL, &err) < 0)
		fprintf(stderr, "sluice skills: the pin stays: %s\n", err.msg);
	printf("removed skill '%s'\n", name);
	return 0;
}

static int do_approve(const char *dir, const char *pins, const char *name)
{
	struct sl_err err = { 0 };
	struct sl_skill sk;
	int rc;

	if (read_skill(dir, name, &sk) < 0)
		return 1;
	rc = sl_skill_pin(pins, name, sk.sha, &err);
	if (rc < 0)
		fprintf(stderr, "sluice skills: %s\n", err.msg);
	else
		printf("approved skill '%s' (sha256 %.12s): read it first with `sluice skills show %s`\n",
		       name, sk.sha, name);
	sl_skill_dispose(&sk);
	return rc < 0 ? 1 : 0;
}

int sl_cli_skills(const char *sub, const char *name)
{
	char *dir = sl_skills_dir(), *pins = sl_skills_pins_file();
	int rc = 2;

	if (sub && strcmp(sub, "list") == 0 && !name) {
		rc = do_list(dir, pins);
	} else if (sub && name && !sl_skill_name_ok(name)) {
		fprintf(stderr, "sluice skills: '%s' is not a skill name ([a-z][a-z0-9_]{0,63})\n", name);
		rc = 2;
	} else if (sub && name && strcmp(sub, "show") == 0) {
		rc = do_show(dir, pins, name);
	} else if (sub && name && strcmp(sub, "rm") == 0) {
		rc = do_rm(dir, pins, name);
	} else if (sub && name && strcmp(sub, "approve") == 0) {
		rc = do_approve(dir, pins, name);
	} else {
		fprintf(stderr, "usage: sluice skills list | show NAME | rm NAME | approve NAME\n");
	}
	free(dir);
	free(pins);
	return rc;
}

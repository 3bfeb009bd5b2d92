/*
 * sluice skills list|show SKILL|rm SKILL|approve SKILL|publish SKILL: the
 * saved skills of code mode (gateway/skills.h, docs/internals/SANDBOX.md
 * "Skills"), on every shelf: SKILL is NAME on the operator's (published)
 * shelf, OWNER/NAME on a caller's, OWNER its key or a prefix of it of at
 * least OWNER_PREFIX_MIN digits naming one shelf (list shows the first
 * OWNER_SHOWN). Only files: no config, no server. Whatever comes from a
 * skill file is printed escaped (control characters, bidi controls,
 * invalid UTF-8), so that a file cannot forge what the terminal shows.
 */
#include "cli/cli.h"
#include "core/buf.h"
#include "core/escape.h"
#include "gateway/skills.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OWNER_PREFIX_MIN 8
#define OWNER_SHOWN 12

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

/* The rows of one shelf; prefix before each name ("" or "OWNER/"). The
 * label of its owner, from its first readable file, goes to *label (NULL:
 * none; free it). */
static void list_shelf(const struct sl_skill_shelf *sh, const char *prefix, char **label,
		       char **names, size_t n)
{
	struct sl_err err = { 0 };

	for (size_t i = 0; i < n; i++) {
		struct sl_skill sk;
		if (sl_skill_read(sh->dir, names[i], &sk, &err) < 0) {
			printf("%s%-*s %-9s %7s  ", prefix, (int)(32 - strlen(prefix)), names[i], "bad", "-");
			put(err.msg, strlen(err.msg), false);
			printf("\n");
			continue;
		}
		printf("%s%-*s %-9s %7zu  ", prefix, (int)(32 - strlen(prefix)), sk.name,
		       status_name(sl_skill_status(sh->pins, &sk)), sk.code_len);
		put(sk.description, strcspn(sk.description, "\n"), false);
		printf("\n");
		if (label && !*label && sk.owner)
			*label = sl_strdup(sk.owner);
		sl_skill_dispose(&sk);
	}
}

static int do_list(void)
{
	struct sl_skill_shelf sh;
	struct sl_err err = { 0 };
	char **names, **owners;
	size_t n, nowners;
	bool more, omore;
	int rc = 0;

	sl_skills_shelf(NULL, &sh);
	if (sl_skills_names(sh.dir, &names, &n, &more, &err) < 0 ||
	    sl_skills_owners(&owners, &nowners, &omore, &err) < 0) {
		fprintf(stderr, "sluice skills: %s\n", err.msg);
		sl_skills_shelf_dispose(&sh);
		return 1;
	}
	printf("%-32s %-9s %7s  %s\n", "NAME", "STATUS", "BYTES", "DESCRIPTION");
	list_shelf(&sh, "", NULL, names, n);
	if (more)
		printf("(more than %d files: only the first %d are skills)\n", SL_SKILLS_MAX, SL_SKILLS_MAX);
	if (n == 0 && nowners == 0)
		printf("(no skills in %s)\n", sh.dir ? sh.dir : "(no data directory)");
	sl_skills_names_free(names, n);
	sl_skills_shelf_dispose(&sh);
	/* Then each caller's shelf, seen by that caller alone. */
	for (size_t o = 0; o < nowners; o++) {
		char prefix[OWNER_SHOWN + 2], *label = NULL;
		snprintf(prefix, sizeof(prefix), "%.*s/", OWNER_SHOWN, owners[o]);
		sl_skills_shelf(owners[o], &sh);
		if (sl_skills_names(sh.dir, &names, &n, &more, &err) < 0) {
			fprintf(stderr, "sluice skills: %s\n", err.msg);
			rc = 1;
		} else {
			list_shelf(&sh, prefix, &label, names, n);
			printf("  (%s*: saved by ", prefix);
			if (label)
				put(label, strlen(label), false);
			else
				printf("a caller");
			printf("; that caller's alone)\n");
			sl_skills_names_free(names, n);
		}
		free(label);
		sl_skills_shelf_dispose(&sh);
	}
	if (omore)
		printf("(more than %d callers' shelves: only the first %d are listed)\n",
		       SL_SKILL_OWNERS_MAX, SL_SKILL_OWNERS_MAX);
	sl_skills_names_free(owners, nowners);
	return rc;
}

/* SKILL as the commands take it (the header): *sh and *name set, or a
 * line on stderr and false. */
static bool resolve(const char *ref, struct sl_skill_shelf *sh, const char **name)
{
	const char *slash = strchr(ref, '/');
	char **owners;
	size_t n, hits = 0, plen;
	const char *hit = NULL;
	struct sl_err err = { 0 };
	bool more;

	*name = slash ? slash + 1 : ref;
	if (!sl_skill_name_ok(*name)) {
		fprintf(stderr, "sluice skills: '%s' is not a skill: NAME or OWNER/NAME, NAME "
			"[a-z][a-z0-9_]{0,63}\n", ref);
		return false;
	}
	if (!slash) {
		sl_skills_shelf(NULL, sh);
		return true;
	}
	plen = (size_t)(slash - ref);
	if (sl_skills_owners(&owners, &n, &more, &err) < 0) {
		fprintf(stderr, "sluice skills: %s\n", err.msg);
		return false;
	}
	for (size_t i = 0; plen >= OWNER_PREFIX_MIN && i < n; i++)
		if (strncmp(owners[i], ref, plen) == 0) {
			hit = owners[i];
			hits++;
		}
	if (hits == 1)
		sl_skills_shelf(hit, sh);
	else
		fprintf(stderr, "sluice skills: '%.*s' %s\n", (int)plen, ref,
			plen < OWNER_PREFIX_MIN ? "is too short: give at least 8 digits of the owner" :
			hits ? "names more than one owner: give more digits" : "names no owner's skills");
	sl_skills_names_free(owners, n);
	return hits == 1;
}

/* A caller's shelf left empty goes, its pins with it: it no longer counts
 * among the SL_SKILL_OWNERS_MAX. */
static void drop_if_empty(const struct sl_skill_shelf *sh)
{
	if (*sh->owner && sh->dir && rmdir(sh->dir) == 0 && sh->pins)
		(void)unlink(sh->pins);
}

/* The skill NAME of sh, or a line on stderr saying why not. */
static int read_skill(const struct sl_skill_shelf *sh, const char *name, struct sl_skill *sk)
{
	struct sl_err err = { 0 };
	int rc = sl_skill_read(sh->dir, name, sk, &err);

	if (rc < 0)
		fprintf(stderr, "sluice skills: %s\n", rc == SL_ERR_NOT_FOUND ? "no such skill" : err.msg);
	return rc;
}

static int do_show(const struct sl_skill_shelf *sh, const char *name)
{
	struct sl_skill sk;

	if (read_skill(sh, name, &sk) < 0)
		return 1;
	printf("name:        %s\nstatus:      %s\nsha256:      %s\nowner:       ", sk.name,
	       status_name(sl_skill_status(sh->pins, &sk)), sk.sha);
	if (!*sh->owner)
		printf("the operator (published to every caller)");
	else {
		printf("%s, for that caller alone", sh->owner);
		if (sk.owner) {
			printf(": ");
			put(sk.owner, strlen(sk.owner), false);
		}
	}
	printf("\ndescription: ");
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

static int do_rm(const struct sl_skill_shelf *sh, const char *name, const char *ref)
{
	struct sl_err err = { 0 };
	int rc = sl_skill_remove(sh->dir, name, &err);

	if (rc < 0) {
		fprintf(stderr, "sluice skills: %s\n", rc == SL_ERR_NOT_FOUND ? "no such skill" : err.msg);
		return 1;
	}
	/* Its pin goes too: a file put back later is not trusted by it. */
	if (sh->pins && sl_skill_pin(sh->pins, name, NULL, &err) < 0)
		fprintf(stderr, "sluice skills: the pin stays: %s\n", err.msg);
	drop_if_empty(sh);
	printf("removed skill '%s'\n", ref);
	return 0;
}

static int do_approve(const struct sl_skill_shelf *sh, const char *name, const char *ref)
{
	struct sl_err err = { 0 };
	struct sl_skill sk;
	int rc;

	if (read_skill(sh, name, &sk) < 0)
		return 1;
	rc = sl_skill_pin(sh->pins, name, sk.sha, &err);
	if (rc < 0)
		fprintf(stderr, "sluice skills: %s\n", err.msg);
	else
		printf("approved skill '%s' (sha256 %.12s): read it first with `sluice skills show %s`\n",
		       ref, sk.sha, ref);
	sl_skill_dispose(&sk);
	return rc < 0 ? 1 : 0;
}

/* A caller's skill onto the operator's shelf, where every caller sees it:
 * what is on disk, pinned there; it leaves the caller's shelf. */
static int do_publish(const struct sl_skill_shelf *sh, const char *name, const char *ref)
{
	struct sl_skill_shelf pub;
	struct sl_err err = { 0 };
	struct sl_skill sk;
	int rc;

	if (!*sh->owner) {
		fprintf(stderr, "sluice skills: '%s' is published already (publish takes OWNER/NAME)\n",
			ref);
		return 2;
	}
	if (read_skill(sh, name, &sk) < 0)
		return 1;
	free(sk.owner);
	sk.owner = NULL;
	sl_skills_shelf(NULL, &pub);
	rc = sl_skill_save(&pub, &sk, &err);
	if (rc < 0) {
		fprintf(stderr, "sluice skills: %s\n", err.msg);
	} else {
		if (sl_skill_remove(sh->dir, name, &err) < 0 || sl_skill_pin(sh->pins, name, NULL, &err) < 0)
			fprintf(stderr, "sluice skills: the caller's copy stays: %s\n", err.msg);
		drop_if_empty(sh);
		printf("published skill '%s' as '%s' (sha256 %.12s) to every caller: read it first "
		       "with `sluice skills show %s`\n", ref, name, sk.sha, name);
	}
	sl_skills_shelf_dispose(&pub);
	sl_skill_dispose(&sk);
	return rc < 0 ? 1 : 0;
}

int sl_cli_skills(const char *sub, const char *ref)
{
	static const char usage[] = "usage: sluice skills list | show SKILL | rm SKILL | approve "
				    "SKILL | publish OWNER/NAME (SKILL: NAME or OWNER/NAME)\n";
	struct sl_skill_shelf sh = { 0 };
	const char *name;
	int rc = 2;

	if (sub && strcmp(sub, "list") == 0 && !ref)
		return do_list();
	if (!sub || !ref || (strcmp(sub, "show") && strcmp(sub, "rm") && strcmp(sub, "approve") &&
			     strcmp(sub, "publish"))) {
		fputs(usage, stderr);
		return 2;
	}
	if (!resolve(ref, &sh, &name))
		return 2;
	if (strcmp(sub, "show") == 0)
		rc = do_show(&sh, name);
	else if (strcmp(sub, "rm") == 0)
		rc = do_rm(&sh, name, ref);
	else if (strcmp(sub, "approve") == 0)
		rc = do_approve(&sh, name, ref);
	else
		rc = do_publish(&sh, name, ref);
	sl_skills_shelf_dispose(&sh);
	return rc;
}

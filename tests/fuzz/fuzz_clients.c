/*
 * Fuzz target: MCP client config files (src/cli/clients.c), which sluice
 * import and install read from the user's disk and treat as untrusted.
 * The input's first byte picks the client (mod 6), the rest is the file.
 *
 * Invariants checked:
 *   - a file is read whole or refused with a message; a refused file
 *     leaves nothing to free;
 *   - every server has a sluice name (1-64 of A-Z a-z 0-9 _ - .) and
 *     exactly one of: an entry, a problem, or (Zed) left to the client;
 *   - what a person reads (the shown name, the scope, the problem, the
 *     notes) holds no control character: a file cannot forge a line of
 *     the table or move the cursor;
 *   - every entry, alone in a config, is one sluice's own loader takes,
 *     and its identity is canonical (the same on a second call);
 *   - install rewrites every file that parses (HTTP for all clients but
 *     Claude Desktop), except a Zed file with an extension's server named
 *     "sluice", which it refuses rather than replace; where every server
 *     was carried over (install
 *     refuses otherwise), reading the result back gives one server,
 *     "sluice", besides the ones left to the client.
 *
 * fuzz-flags: -max_len=8192 -dict=tests/fuzz/clients.dict
 */
#include "fuzz.h"

#include "cli/clients.h"
#include "config/config.h"
#include "core/log.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sl_log_set_level(SL_LOG_ERROR);
	return 0;
}

static bool clean(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static bool name_ok(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len > 64)
		return false;
	for (; *n; n++)
		if (!(('a' <= *n && *n <= 'z') || ('A' <= *n && *n <= 'Z') || ('0' <= *n && *n <= '9') ||
		      *n == '_' || *n == '-' || *n == '.'))
			return false;
	return true;
}

static void check_set(const struct sl_client_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		const struct sl_client_server *s = &set->v[i];
		ASSERT(s->name && name_ok(s->name));
		ASSERT(s->shown && clean(s->shown) && clean(s->scope) && clean(s->problem) &&
		       clean(s->notes));
		ASSERT((s->entry != NULL) + (s->problem != NULL) + s->client_only == 1);
		if (s->entry) {
			char *a = sl_client_identity(s->entry), *b = sl_client_identity(s->entry);
			ASSERT(strcmp(a, b) == 0);
			free(a);
			free(b);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_client_ctx cx = { .home = "/home/f", .project = "/work/p" };
	struct sl_client_set set, back;
	struct sl_err err = { { 0 } };
	enum sl_client_kind k;
	const char *text;
	size_t len, others = 0, refused = 0;
	bool clash = false;
	char *out;
	size_t outlen;

	if (size < 1)
		return 0;
	k = (enum sl_client_kind)(data[0] % SL_CLIENT_COUNT);
	text = (const char *)data + 1;
	len = size - 1;
	if (sl_client_parse(k, "fuzz.json", text, len, &cx, &set, &err) < 0) {
		ASSERT(err.msg[0]);
		return 0;
	}
	check_set(&set);
	/* Zed's extension servers and Claude Code's per-project lists stay
	 * in the file install rewrites. */
	for (size_t i = 0; i < set.n; i++) {
		others += set.v[i].client_only || set.v[i].project;
		refused += set.v[i].problem != NULL;
		clash |= set.v[i].client_only && !strcmp(set.v[i].raw, "sluice");
	}
	{
		struct sl_client_install in = { "/usr/bin/sluice", "/etc/sluice.json",
						k == SL_CLIENT_CLAUDE_DESKTOP ? NULL :
						(data[0] / SL_CLIENT_COUNT) % 2 ? "http://h/mcp" : NULL,
						&set };
		int rc = sl_client_install_text(k, text, len, &in, &out, &outlen, &err);
		ASSERT(clash ? rc < 0 && err.msg[0] : rc == 0);
		if (clash) {
			sl_client_set_dispose(&set);
			return 0;
		}
	}
	ASSERT(sl_client_parse(k, "out.json", out, outlen, &cx, &back, &err) == 0);
	if (refused == 0) {
		ASSERT(back.n == 1 + others);
		for (size_t i = 0; i < back.n; i++) {
			if (!strcmp(back.v[i].name, "sluice") && !back.v[i].client_only &&
			    !back.v[i].project)
				ASSERT(back.v[i].entry);
			else
				ASSERT(back.v[i].client_only || back.v[i].project);
		}
	}
	sl_client_set_dispose(&back);
	free(out);
	sl_client_set_dispose(&set);
	/* The same bytes as Claude Code's record of a project's approvals:
	 * refused whole or read within its bounds, never a crash. */
	{
		struct sl_client_approvals a;
		sl_client_approvals_init(&a);
		if (sl_client_approvals_add(&a, "fuzz.json", text, len, data[0] % 2 ? "/work/p" : NULL,
					    &err) < 0)
			ASSERT(err.msg[0]);
		(void)sl_client_approval(&a, "x");
		sl_client_approvals_dispose(&a);
	}
	return 0;
}

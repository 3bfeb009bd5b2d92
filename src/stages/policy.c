/*
 * Policy: the first stage of the request half. For each call it finds the
 * tool's definition in the server's advertised list (refreshing that list
 * once if the tool is not there), decides allow, deny or confirm from the
 * rules, and for confirm asks the client's human through elicitation,
 * suspending the call until the answer.
 *
 * Rules may name who they apply to (who, notWho: the caller of the call's
 * request, c->who, auth/caller.h). The same rules hide denied tools from
 * tools/list, search_tools, list_tools and describe_tools (the visible
 * hook, with the listing session's caller), so a model never sees what it
 * may not call; programs resolve names through sl_policy_hides and
 * invoke_tool is answered as for a tool the server does not have, so that
 * a hidden tool cannot be told from a missing one.
 *
 * Suspensions and who resumes:
 *   refresh:  our own tools/list request; its callback (which always runs,
 *             also on failure) decides and resumes, or starts a confirm.
 *   confirm:  the call's asker's callback (c->ask: which always runs, with
 *             NULL when the client goes away), our timer (the deadline) or
 *             the cancel hook (the call was cancelled meanwhile), whichever
 *             comes first, resumes; the wait state lives until both the
 *             callback and the timer's close have run. The call's policy
 *             slot (sl_call_ctx) holds its wait, so that the cancel hook
 *             finds it, and the state lists the waits whose call is not
 *             resumed yet (sl_policy_each_wait); a wait leaves both before
 *             it resumes, so nothing that runs later touches a state that
 *             may be gone.
 *   A call cancelled during a refresh is resumed by the refresh's callback
 *   (the cancel hook finds no wait for it).
 */
#include "stages/policy.h"
#include "proto/mcp.h"
#include "config/conf.h"
#include "core/digest.h"
#include "core/buf.h"
#include "core/escape.h"
#include "core/glob.h"
#include "core/json.h"
#include "core/list.h"
#include "core/log.h"
#include "core/map.h"
#include "auth/caller.h"
#include "pipeline/call.h"
#include "shared/once.h"
#include "upstream/upstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CONFIRM_TIMEOUT_DEFAULT_MS 120000
#define REFRESH_MAX_PAGES 50
/* A server's list is refreshed for names it did not advertise at most this
 * often: callers choose those names, and each refresh costs the server a
 * whole tools/list (docs/stages/policy.md, "A tool the server has not
 * advertised"). */
#define REFRESH_INTERVAL_MS 30000
#define SUMMARY_MAX 1000     /* the arguments' part of a confirmation */
#define SUMMARY_KEY_MAX 64   /* bytes of a key shown, before escaping */
#define SUMMARY_VALUE_MAX 80 /* bytes of a string value shown, before escaping */
#define SUMMARY_HASH_HEX 16  /* the arguments' SHA-256, shortened */

struct sl_policy_state {
	struct sl_policy policy;
	/* Signs the requestState of 2026-07-28 confirmations; made with the
	 * state, so it lives as long as this policy does. */
	struct sl_list waits;    /* confirmations whose call is not resumed yet, newest first */
	/* server name -> uint64_t *: when a refresh for an unadvertised name
	 * last started (sl_now_ms); as many as the config names servers */
	struct sl_map refreshed;
	const struct sl_services *svc; /* where approvals are marked used (services->once) */
};

/* What sl_policy_current answers without a state: allow everything. */
static const struct sl_policy allow_all = {
	.def = SL_POLICY_ALLOW,
	.confirm_timeout_ms = CONFIRM_TIMEOUT_DEFAULT_MS,
};

/* ---- rules: pure ------------------------------------------------------- */

static const struct sl_conf_name actions[] = {
	{ "allow", SL_POLICY_ALLOW },
	{ "deny", SL_POLICY_DENY },
	{ "confirm", SL_POLICY_CONFIRM },
	{ NULL, 0 },
};

/* MCP 2025-11-25 tools: the behaviour hints a tool's annotations may carry. */
static const char *const hints[] = { "readOnlyHint", "destructiveHint", "idempotentHint",
				     "openWorldHint" };

const char *sl_policy_action_name(enum sl_policy_action a)
{
	return actions[a].name;
}

static void who_list_dispose(struct sl_policy_who_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].arg);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void sl_policy_dispose(struct sl_policy *p)
{
	for (size_t i = 0; i < p->nrules; i++) {
		free(p->rules[i].match);
		free(p->rules[i].annotation);
		who_list_dispose(&p->rules[i].who);
		who_list_dispose(&p->rules[i].not_who);
	}
	free(p->rules);
	memset(p, 0, sizeof(*p));
	p->def = SL_POLICY_ALLOW;
	p->confirm_timeout_ms = CONFIRM_TIMEOUT_DEFAULT_MS;
}

static int parse_annotation(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			    void *target)
{
	struct sl_policy_rule *r = target;
	for (size_t h = 0; yyjson_is_str(v) && h < SL_COUNT(hints); h++)
		if (strcmp(yyjson_get_str(v), hints[h]) == 0) {
			free(r->annotation);
			r->annotation = sl_strdup(hints[h]);
			return SL_OK;
		}
	return sl_conf_bad(cx, k);
}

/* The selectors' spellings, in the order the messages list them. */
static const struct {
	const char *prefix;      /* with its ':' when an argument follows */
	enum sl_policy_who_kind kind;
} who_kinds[] = {
	{ "sub:", SL_WHO_SUB },
	{ "group:", SL_WHO_GROUP },
	{ "scope:", SL_WHO_SCOPE },
	{ "client:", SL_WHO_CLIENT },
	{ "profile:", SL_WHO_PROFILE },
	{ "anonymous", SL_WHO_ANONYMOUS },
	{ "authenticated", SL_WHO_AUTHENTICATED },
};

#define WHO_SHAPE "one of sub:GLOB, group:NAME, scope:NAME, client:GLOB, profile:NAME, " \
		  "anonymous, authenticated"

/* One selector; where names it ("sluice.policy.rules[3].who[1]"). */
static int parse_selector(struct sl_conf_ctx *cx, const char *where, yyjson_val *v,
			  struct sl_policy_who *out)
{
	const char *s = yyjson_get_str(v), *arg;
	size_t len = yyjson_get_len(v);

	for (size_t i = 0; s && i < SL_COUNT(who_kinds); i++) {
		size_t pl = strlen(who_kinds[i].prefix);
		if (strncmp(s, who_kinds[i].prefix, pl) != 0)
			continue;
		out->kind = who_kinds[i].kind;
		if (who_kinds[i].prefix[pl - 1] != ':')
			return len == pl ? SL_OK : sl_conf_fail(cx, where, "must be " WHO_SHAPE);
		arg = s + pl;
		if (len == pl)
			return sl_conf_fail(cx, where, "\"%s\" needs a value after the colon",
					    who_kinds[i].prefix);
		if (len - pl > SL_POLICY_WHO_ARG_MAX || memchr(arg, '\0', len - pl))
			return sl_conf_fail(cx, where, "the value after \"%s\" must be at most %d "
					    "bytes, with no NUL", who_kinds[i].prefix,
					    SL_POLICY_WHO_ARG_MAX);
		/* RFC 6749 §3.3: a scope token has no space, '"' or '\\'. */
		if (out->kind == SL_WHO_SCOPE && strpbrk(arg, " \"\\"))
			return sl_conf_fail(cx, where, "a scope has no space, '\"' or '\\' (RFC "
					    "6749 §3.3): list each scope as a selector of its own");
		out->arg = sl_strdup(arg);
		return SL_OK;
	}
	return sl_conf_fail(cx, where, "must be " WHO_SHAPE);
}

static int parse_who(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		     void *target)
{
	struct sl_policy_who_list *l = sl_conf_field(target, k);
	yyjson_val *it;
	size_t i, n;
	int rc;

	if (!yyjson_is_arr(v) || yyjson_arr_size(v) == 0 || yyjson_arr_size(v) > SL_POLICY_WHO_MAX)
		return sl_conf_bad(cx, k);
	who_list_dispose(l);
	l->v = sl_alloc(yyjson_arr_size(v) * sizeof(*l->v));
	yyjson_arr_foreach(v, i, n, it) {
		char where[128];
		snprintf(where, sizeof(where), "%s.%s[%zu]", cx->where, k->key, i);
		if ((rc = parse_selector(cx, where, it, &l->v[l->n])) < 0)
			return rc;
		l->n++;
	}
	return SL_OK;
}

#define RULE(field) SL_CONF_AT(struct sl_policy_rule, field)
static const struct sl_conf_key rule_keys[] = {
	{ "match", SL_CONF_STRING, RULE(match), .min = 1,
	  .shape = "a non-empty \"server.tool\" glob",
	  .doc = "A glob on `server.tool` (the server's name in the config, the tool's own name): "
		 "`*` any run of characters (also none, also `.`), `?` exactly one character; "
		 "case-sensitive." },
	{ "annotation", SL_CONF_CUSTOM, RULE(annotation), .parse = parse_annotation,
	  .shape = "one of readOnlyHint, destructiveHint, idempotentHint, openWorldHint",
	  .doc = "Matches when the tool's `annotations` have that hint set to `true` (an absent "
		 "hint never matches, whatever the MCP default)." },
	{ "who", SL_CONF_CUSTOM, RULE(who), .parse = parse_who,
	  .shape = "an array of 1 to 64 selectors, each " WHO_SHAPE, .dflt_doc = "anyone",
	  .doc = "The rule applies when the caller matches **any** selector: `sub:GLOB` (the "
		 "subject), `group:NAME` (a group or role), `scope:NAME`, `client:GLOB` (the OAuth "
		 "client id), `profile:NAME` (the `/mcp/<profile>` route; `profile:default` is "
		 "`/mcp`), `anonymous` (no caller, or one without a subject: stdio, HTTP without "
		 "authentication, the shared `bearerToken`), `authenticated` (a caller with a "
		 "subject). A value after the colon is at most 256 bytes." },
	{ "notWho", SL_CONF_CUSTOM, RULE(not_who), .parse = parse_who,
	  .shape = "an array of 1 to 64 selectors, each " WHO_SHAPE, .dflt_doc = "none",
	  .doc = "The rule applies only when the caller matches **none** of these selectors "
		 "(as in `who`): `{\"match\": \"*.delete_*\", \"notWho\": [\"group:sre\"], "
		 "\"action\": \"deny\"}` leaves deletes to group `sre`." },
	{ "action", SL_CONF_ENUM, RULE(action), .names = actions, .dflt_doc = "required",
	  .doc = "What a call the rule matches gets." },
};
#undef RULE

static const struct sl_conf_section rule_conf = {
	"sluice.policy.rules[]",
	"One rule: it matches when its glob, its annotation, its `who` and its `notWho` all hold, "
	"for those it has (at least one).",
	rule_keys, SL_COUNT(rule_keys), SL_CONF_STRICT, NULL,
};

static int parse_rules(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		       void *target)
{
	struct sl_policy *p = target;
	yyjson_val *o;
	size_t i, n;
	int rc;

	if (!yyjson_is_arr(v))
		return sl_conf_bad(cx, k);
	p->rules = sl_alloc((yyjson_arr_size(v) + 1) * sizeof(*p->rules));
	yyjson_arr_foreach(v, i, n, o) {
		struct sl_policy_rule *r = &p->rules[p->nrules++];
		char where[64];

		snprintf(where, sizeof(where), "sluice.policy.rules[%zu]", i);
		if ((rc = sl_conf_apply(cx, &rule_conf, where, o, r)) < 0)
			return rc;
		if (!yyjson_obj_get(o, "action")) {
			snprintf(where, sizeof(where), "sluice.policy.rules[%zu].action", i);
			return sl_conf_fail(cx, where, "missing");
		}
		if (!r->match && !r->annotation && !r->who.n && !r->not_who.n)
			return sl_conf_fail(cx, where, "needs \"match\", \"annotation\", \"who\" "
					    "or \"notWho\"");
	}
	return SL_OK;
}

#define POL(field) SL_CONF_AT(struct sl_policy, field)
static const struct sl_conf_key policy_keys[] = {
	{ "default", SL_CONF_ENUM, POL(def), .names = actions, .dflt = SL_POLICY_ALLOW,
	  .doc = "The action when no rule matches." },
	{ "rules", SL_CONF_CUSTOM, POL(rules), .parse = parse_rules, .sub = &rule_conf,
	  .shape = "an array of rules", .dflt_doc = "`[]`",
	  .doc = "Checked in order; the **first** matching rule wins (`sluice.policy.rules[]` "
		 "below)." },
	{ "confirmTimeoutMs", SL_CONF_UINT, POL(confirm_timeout_ms), .min = 1,
	  .max = 24ull * 3600 * 1000, .dflt = CONFIRM_TIMEOUT_DEFAULT_MS,
	  .shape = "a positive integer of milliseconds (at most a day)",
	  .doc = "How long a confirmation may wait for the human." },
};
#undef POL

static const struct sl_conf_section policy_conf = {
	"sluice.policy",
	"Which tools may be called, and which need a human's yes first (docs/stages/policy.md). "
	"Denied tools are not listed either.",
	policy_keys, SL_COUNT(policy_keys), SL_CONF_STRICT, NULL,
};

int sl_policy_parse(yyjson_val *section, struct sl_policy *out, struct sl_err *err)
{
	struct sl_policy p = { 0 };
	int rc = sl_conf_load(&policy_conf, section, &p, err);

	if (rc < 0)
		sl_policy_dispose(&p);
	*out = p;
	return rc;
}

static bool who_matches(const struct sl_policy_who *w, const struct sl_caller *who)
{
	bool anonymous = !who || !who->subject;

	switch (w->kind) {
	case SL_WHO_SUB:
		return !anonymous && sl_glob_match(w->arg, who->subject);
	case SL_WHO_GROUP:
		return sl_caller_in_group(who, w->arg);
	case SL_WHO_SCOPE:
		return sl_caller_has_scope(who, w->arg);
	case SL_WHO_CLIENT:
		return who && who->client_id && sl_glob_match(w->arg, who->client_id);
	case SL_WHO_PROFILE:
		/* No caller (stdio, or HTTP without authentication) came
		 * through the default route. */
		if (!who || !who->profile)
			return strcmp(w->arg, "default") == 0;
		return strcmp(w->arg, who->profile) == 0;
	case SL_WHO_ANONYMOUS:
		return anonymous;
	case SL_WHO_AUTHENTICATED:
		return !anonymous;
	}
	return false;
}

static bool any_matches(const struct sl_policy_who_list *l, const struct sl_caller *who)
{
	for (size_t i = 0; i < l->n; i++)
		if (who_matches(&l->v[i], who))
			return true;
	return false;
}

bool sl_policy_rule_for(const struct sl_policy_rule *r, const struct sl_caller *who)
{
	return (!r->who.n || any_matches(&r->who, who)) &&
	       (!r->not_who.n || !any_matches(&r->not_who, who));
}

enum sl_policy_action sl_policy_decide(const struct sl_policy *p, const struct sl_caller *who,
				       const char *server, const char *tool,
				       yyjson_val *annotations, bool skip_annotation_rules,
				       int *rule)
{
	enum sl_policy_action a = p->def;
	/* Asked for every tool of a listing: "server.tool" is made once, on
	 * the stack when it fits, and only if a rule matches names. */
	char buf[256], *full = NULL;

	*rule = -1;
	for (size_t i = 0; i < p->nrules; i++) {
		const struct sl_policy_rule *r = &p->rules[i];
		if (r->annotation && (skip_annotation_rules || !yyjson_is_obj(annotations) ||
				      !sl_json_true(annotations, r->annotation)))
			continue;
		if (r->match && !full) {
			size_t ns = strlen(server), nt = strlen(tool);
			full = ns + nt + 2 > sizeof(buf) ? sl_alloc(ns + nt + 2) : buf;
			memcpy(full, server, ns);
			full[ns] = '.';
			memcpy(full + ns + 1, tool, nt + 1);
		}
		if (r->match && !sl_glob_match(r->match, full))
			continue;
		if (!sl_policy_rule_for(r, who))
			continue;
		*rule = (int)i;
		a = r->action;
		break;
	}
	if (full != buf)
		free(full);
	return a;
}

/* Whether any decision of p can be a deny: its default, or a rule's. */
static bool may_deny(const struct sl_policy *p)
{
	if (p->def == SL_POLICY_DENY)
		return true;
	for (size_t i = 0; i < p->nrules; i++)
		if (p->rules[i].action == SL_POLICY_DENY)
			return true;
	return false;
}

bool sl_policy_hides(const struct sl_policy *p, const struct sl_caller *who, const char *server,
		     yyjson_val *tool)
{
	int rule;
	const char *name;

	/* Asked for every tool of a listing: the tool is not even read when
	 * nothing in p can deny. */
	if (!may_deny(p))
		return false;
	name = sl_json_str(tool, "name");
	return name && sl_policy_decide(p, who, server, name, sl_json_obj(tool, "annotations"),
					false, &rule) == SL_POLICY_DENY;
}

/* "who group:sre|sub:a*" into b, after ", " when b has text. */
static void who_text(struct sl_buf *b, const char *key, const struct sl_policy_who_list *l)
{
	if (!l->n)
		return;
	(void)!sl_buf_printf(b, "%s%s ", b->len ? ", " : "", key);
	for (size_t i = 0; i < l->n; i++) {
		const char *prefix = "";
		for (size_t k = 0; k < SL_COUNT(who_kinds); k++)
			if (who_kinds[k].kind == l->v[i].kind)
				prefix = who_kinds[k].prefix;
		(void)!sl_buf_printf(b, "%s%s%s", i ? "|" : "", prefix, l->v[i].arg ? l->v[i].arg : "");
	}
}

void sl_policy_rule_text(const struct sl_policy_rule *r, char *out, size_t n)
{
	struct sl_buf b;

	/* Config text, bounded by the selector caps; out cuts it to n. */
	sl_buf_init(&b, SIZE_MAX);
	if (r->match)
		(void)!sl_buf_printf(&b, "match \"%s\"", r->match);
	if (r->annotation)
		(void)!sl_buf_printf(&b, "%sannotation %s", b.len ? ", " : "", r->annotation);
	who_text(&b, "who", &r->who);
	who_text(&b, "notWho", &r->not_who);
	snprintf(out, n, "%.*s", (int)b.len, b.data ? b.data : "");
	sl_buf_dispose(&b);
}

const struct sl_policy *sl_policy_current(const struct sl_policy_state *ps)
{
	return ps ? &ps->policy : &allow_all;
}

/* ---- the confirmation's summary of the arguments -------------------------- */

/* Keys whose values never go into the summary: policy runs before the
 * redaction stage, so the human's dialog must not show a secret. */
static bool secret_key(const char *k)
{
	static const char *const words[] = { "token", "secret", "password", "passwd", "apikey",
					     "api_key", "private", "auth", "credential", "cookie",
					     "session" };
	for (size_t i = 0; i < SL_COUNT(words); i++)
		if (strcasestr(k, words[i]))
			return true;
	return false;
}

/* s JSON-quoted with every control and bidi character escaped, at most
 * max of its bytes (cut on a character boundary), and how many were left
 * out after the closing quote, where no string can put text. */
static int quoted(struct sl_buf *b, const char *s, size_t len, size_t max)
{
	size_t cut = len;
	int rc;

	if (cut > max) {
		cut = max;
		while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
			cut--;
	}
	rc = sl_escape(b, s, cut, SL_ESCAPE_QUOTED);
	if (rc == 0 && cut < len)
		rc = sl_buf_printf(b, " (+%zu more bytes)", len - cut);
	return rc;
}

/* One argument: `  "key": value`, key and string value quoted. */
static int summary_entry(struct sl_buf *b, yyjson_mut_val *k, yyjson_mut_val *v)
{
	int rc = sl_buf_appends(b, "\n  ");
	char *s;

	rc = rc ? rc : quoted(b, yyjson_mut_get_str(k), yyjson_mut_get_len(k), SUMMARY_KEY_MAX);
	rc = rc ? rc : sl_buf_appends(b, ": ");
	if (rc)
		return rc;
	if (secret_key(yyjson_mut_get_str(k)))
		return sl_buf_appends(b, "[hidden]");
	if (yyjson_mut_is_str(v))
		return quoted(b, yyjson_mut_get_str(v), yyjson_mut_get_len(v), SUMMARY_VALUE_MAX);
	if (yyjson_mut_is_obj(v))
		return sl_buf_printf(b, "{%zu keys}", yyjson_mut_obj_size(v));
	if (yyjson_mut_is_arr(v))
		return sl_buf_printf(b, "[%zu items]", yyjson_mut_arr_size(v));
	s = sl_json_write_mut_val(v, NULL);
	rc = sl_buf_appends(b, s ? s : "?");
	free(s);
	return rc;
}

char *sl_policy_summary(yyjson_mut_val *args, size_t max)
{
	struct sl_buf b, entry;
	yyjson_mut_val *k, *v;
	size_t i, n, rest = 0, rest_keys = 0;

	/* An entry is bounded by the key and value caps, so entry's cap only
	 * guards against a mistake; what does not fit in max is counted. */
	sl_buf_init(&b, max + 1);
	sl_buf_init(&entry, 64 * 1024);
	yyjson_mut_obj_foreach(args, i, n, k, v) {
		sl_buf_reset(&entry);
		if (summary_entry(&entry, k, v) < 0)
			sl_oom();
		if (rest_keys == 0 && b.len + entry.len <= max && sl_buf_append(&b, entry.data, entry.len) == 0)
			continue;
		rest += entry.len;
		rest_keys++;
	}
	sl_buf_dispose(&entry);
	if (n == 0 && sl_buf_appends(&b, " (none)") < 0)
		sl_oom();
	if (rest_keys) {
		char *more = sl_printf("%s\n  ... %zu more bytes in %zu more key%s", b.data ? b.data : "",
				       rest, rest_keys, rest_keys == 1 ? "" : "s");
		sl_buf_dispose(&b);
		return more;
	}
	return sl_buf_take(&b, NULL);
}

/* What the person is asked: the tool's full identity, the arguments' hash
 * and the arguments one per line. Every piece of peer text (the tool name,
 * keys, values) is quoted and escaped, so none can pass for the dialog's
 * own words, a line of its own or a key boundary. The hash is the one the
 * audit stage takes (canonical JSON, SHA-256), of the arguments as policy
 * sees them, before redaction. */
static char *confirm_message(const struct sl_call *c, const char *reason)
{
	struct sl_buf b;
	size_t len;
	char *canon = sl_json_canonical(c->args, &len), hash[SL_SHA256_HEX], *summary;
	int rc;

	sl_sha256_hex(canon, len, hash);
	free(canon);
	summary = sl_policy_summary(c->args, SUMMARY_MAX);
	sl_buf_init(&b, SIZE_MAX);
	rc = sl_buf_appends(&b, "Allow the tool ");
	rc = rc ? rc : sl_escape(&b, c->tool, strlen(c->tool), SL_ESCAPE_QUOTED);
	rc = rc ? rc : sl_buf_appends(&b, " of server ");
	rc = rc ? rc : sl_escape(&b, c->up->name, strlen(c->up->name), SL_ESCAPE_QUOTED);
	rc = rc ? rc : sl_buf_printf(&b, " to run? (sluice policy: %s)\nArguments (SHA-256 %.*s, %zu keys):%s",
				     reason, SUMMARY_HASH_HEX, hash, yyjson_mut_obj_size(c->args), summary);
	if (rc < 0)
		sl_oom();
	free(summary);
	return sl_buf_take(&b, NULL);
}

/* ---- the stage -------------------------------------------------------- */

static int policy_init(const struct sl_config *cfg, const struct sl_services *svc,
		       yyjson_val *section, void **state, struct sl_err *err)
{
	struct sl_policy_state *ps;
	struct sl_policy p;
	int rc;

	*state = NULL;
	rc = sl_policy_parse(section, &p, err);
	if (rc < 0)
		return rc;
	ps = sl_alloc(sizeof(*ps));
	ps->policy = p;
	ps->svc = svc;
	sl_list_init(&ps->waits);
	sl_map_init(&ps->refreshed);
	*state = ps;
	return SL_OK;
}

static void free_when(const char *key, void *value, void *ctx)
{
	free(value);
}

static void policy_fini(void *state)
{
	struct sl_policy_state *ps = state;
	if (!ps)
		return;
	/* Every wait still listed holds its call, and the call holds this
	 * state: none is left here. */
	sl_policy_dispose(&ps->policy);
	sl_map_each(&ps->refreshed, free_when, NULL);
	sl_map_dispose(&ps->refreshed);
	free(ps);
}

static bool policy_visible(void *state, const struct sl_caller *who,
			    const struct sl_upstream *up, yyjson_val *tool)
{
	struct sl_policy_state *ps = state;
	return !sl_policy_hides(&ps->policy, who, up->name, tool);
}

void sl_policy_reason(const struct sl_policy *p, int rule, char *out, size_t n)
{
	char text[500];
	if (rule < 0) {
		snprintf(out, n, "the default action (%s)", sl_policy_action_name(p->def));
		return;
	}
	sl_policy_rule_text(&p->rules[rule], text, sizeof(text));
	snprintf(out, n, "rule %d (%s)", rule + 1, text);
}

/* A confirmation in progress, or (once set) the claim of an approval
 * waiting for the shared store's verdict. */
struct wait {
	struct sl_once_wait *once; /* the claim's, while it waits (no timer, no link) */
	struct sl_call *c;       /* NULL once resumed */
	struct sl_list link;     /* while c is set: in its state's waits */
	uv_timer_t timer;
	char reason[600];
	bool answered;           /* the elicitation callback ran */
	bool closed;             /* the timer's handle is closed */
};

static void wait_maybe_free(struct wait *w)
{
	if (!w->c && w->answered && w->closed)
		free(w);
}

static void on_timer_closed(uv_handle_t *h)
{
	struct wait *w = h->data;
	w->closed = true;
	wait_maybe_free(w);
}

/* Ends the wait: allow or deny, then resume the call exactly once. */
static void settle(struct wait *w, bool allow, const char *why)
{
	struct sl_call *c = w->c;
	if (!c)
		return;
	sl_list_remove(&w->link);
	sl_call_set_ctx(c, &sl_stage_policy, NULL);
	w->c = NULL;
	uv_timer_stop(&w->timer);
	uv_close((uv_handle_t *)&w->timer, on_timer_closed);
	sl_call_human_wait(c, false);
	sl_log(SL_LOG_DEBUG, "policy: %s.%s: stopped waiting: %s", c->up->name, c->tool,
	       allow ? "approved" : why);
	if (!allow && c->outcome == SL_OUTCOME_PENDING)
		sl_call_set_error(c, SL_OUTCOME_DENIED, "policy: %s.%s needs confirmation by %s, and %s",
				  c->up->name, c->tool, w->reason, why);
	sl_call_resume(c);
}

static void on_answer(void *ctx, const char *action, yyjson_val *content)
{
	struct wait *w = ctx;
	w->answered = true;
	if (!action)
		settle(w, false, "no answer came (the client went away or the request failed)");
	else if (strcmp(action, "accept") == 0 && sl_json_true(content, "approve"))
		settle(w, true, NULL);
	else if (strcmp(action, "accept") == 0)
		settle(w, false, "the user did not approve it");
	else if (strcmp(action, "decline") == 0)
		settle(w, false, "the user declined");
	else
		settle(w, false, "the user cancelled the confirmation");
	wait_maybe_free(w);
}

static void on_deadline(uv_timer_t *t)
{
	settle(t->data, false, "no answer came in time");
}

/* A call cancelled meanwhile finishes now, not when the human answers (the
 * answer that comes later is dropped). A call cancelled during a refresh
 * has no wait: the refresh's callback resumes it. */
static void claim_settle(struct wait *w, enum sl_once_verdict v, const char *why);

static void policy_cancel(void *state, struct sl_call *c)
{
	struct wait *w = sl_call_ctx(c, &sl_stage_policy);
	if (w && w->once)
		claim_settle(w, SL_ONCE_UNSURE, "the call was cancelled");
	else if (w)
		settle(w, false, "the call was cancelled"); /* c and perhaps state are gone now */
}

void sl_policy_each_wait(const struct sl_policy_state *ps, sl_policy_wait_fn *fn, void *ctx)
{
	const struct sl_list *n;

	if (!ps)
		return;
	sl_list_each(n, &ps->waits) {
		const struct wait *w = sl_list_entry(n, const struct wait, link);
		if (w->c)
			fn(ctx, w->c, w->reason);
	}
}

/* ---- confirmation on 2026-07-28: input_required with a protected state ---- */

/* The requestState, "sluice-confirm.NONCE.EXPIRY.MAC", binds the answer to
 * this exact call of this caller: a fresh nonce (the approval's id, for
 * its single use), the caller's identity digest, server, tool, the
 * canonical arguments, and an expiry, sealed (core/digest.h) under the
 * generation's key, which never leaves this process and survives reloads
 * (a confirmation asked before one still verifies after it; the rules in
 * force decide again). An approval is used once (shared/once.h): a retry
 * sent again is refused, here and on every replica sharing the store. */
#define CONFIRM_PREFIX "sluice-confirm."

static char *state_what(struct sl_call *c, const char *nonce)
{
	size_t alen;
	char *args = sl_json_canonical(c->args, &alen), ahash[SL_SHA256_HEX], anon[SL_SHA256_HEX];

	sl_sha256_hex(args, alen, ahash);
	free(args);
	if (!c->who)
		sl_caller_identity_digest(NULL, NULL, NULL, NULL, anon);
	return sl_printf("sluice-confirm\n%s\n%s\n%s\n%s\n%s", nonce, c->who ? c->who->key : anon,
			 c->up->name, c->tool, ahash);
}

/* Whether state is one of c's, unexpired: its nonce in nonce and its
 * expiry in *expiry. */
static bool state_valid(struct sl_call *c, const char *state, char nonce[SL_SEAL_ID_HEX + 1],
			unsigned long long *expiry)
{
	size_t skip = strlen(CONFIRM_PREFIX) + SL_SEAL_ID_HEX + 1;
	const char *seal;
	char *what;
	bool ok;

	if (strncmp(state, CONFIRM_PREFIX, strlen(CONFIRM_PREFIX)) != 0 || strlen(state) < skip ||
	    state[skip - 1] != '.')
		return false;
	seal = state + skip;
	memcpy(nonce, state + strlen(CONFIRM_PREFIX), SL_SEAL_ID_HEX);
	nonce[SL_SEAL_ID_HEX] = '\0';
	/* Lowercase hex only: the nonce is the approval's id, one spelling. */
	if (strspn(nonce, "0123456789abcdef") != SL_SEAL_ID_HEX)
		return false;
	what = state_what(c, nonce);
	ok = sl_seal_check(c->gen->key, sizeof(c->gen->key), seal, what) == SL_SEAL_OK;
	free(what);
	*expiry = sl_seal_expiry(seal);
	return ok;
}

/* The approval's verdict: the call goes on once, or is refused saying why. */
static bool claim_apply(struct sl_call *c, enum sl_once_verdict v, const char *why)
{
	if (v == SL_ONCE_FIRST)
		return true;
	if (c->outcome != SL_OUTCOME_PENDING)
		return false; /* cancelled meanwhile */
	if (v == SL_ONCE_USED)
		sl_call_set_error(c, SL_OUTCOME_DENIED, "policy: the approval of %s.%s was used "
				  "already: an approval (its requestState) runs its call once, and this "
				  "retry did not run it again; call the tool again to be asked again",
				  c->up->name, c->tool);
	else
		sl_call_set_error(c, SL_OUTCOME_DENIED, "policy: the approval of %s.%s was not used: "
				  "%s; the call was not made; call the tool again to be asked again",
				  c->up->name, c->tool, why);
	return false;
}

static void claim_settle(struct wait *w, enum sl_once_verdict v, const char *why)
{
	struct sl_call *c = w->c;

	if (w->once) {
		sl_once_cancel(w->once);
		w->once = NULL;
	}
	sl_call_set_ctx(c, &sl_stage_policy, NULL);
	free(w);
	claim_apply(c, v, why);
	sl_call_resume(c);
}

static void on_claimed(void *ctx, enum sl_once_verdict v, const char *why)
{
	struct wait *w = ctx;
	w->once = NULL; /* answered: nothing to cancel */
	claim_settle(w, v, why);
}

/* When a confirmation expiring at expiry was asked (confirm_mrtr). */
static unsigned long long issued(const struct sl_policy_state *ps, unsigned long long expiry)
{
	unsigned long long life = (ps->policy.confirm_timeout_ms + 999) / 1000;

	return expiry > life ? expiry - life : 0;
}

/* An approval that verified: marked used, then the call goes on (NEXT),
 * is refused (DONE), or waits for the shared store (AGAIN). */
static enum sl_stage_rc claim(struct sl_policy_state *ps, struct sl_call *c, const char *nonce,
			      unsigned long long expiry)
{
	struct sl_once_wait *ow = NULL;
	struct wait *w = sl_alloc(sizeof(*w));
	const char *why;
	enum sl_once_verdict v = sl_once_claim(ps->svc ? ps->svc->once : NULL,
					       ps->svc ? ps->svc->redis : NULL, "confirm", nonce,
					       issued(ps, expiry), expiry, on_claimed, w, &ow, &why);

	if (v == SL_ONCE_WAIT) {
		w->c = c;
		w->once = ow;
		sl_call_set_ctx(c, &sl_stage_policy, w);
		return SL_STAGE_AGAIN;
	}
	free(w);
	return claim_apply(c, v, why) ? SL_STAGE_NEXT : SL_STAGE_DONE;
}

static enum sl_stage_rc confirm_mrtr(struct sl_policy_state *ps, struct sl_call *c,
				     const char *reason)
{
	yyjson_mut_val *resp = c->input_responses ? yyjson_mut_obj_get(c->input_responses, "confirm") : NULL;
	yyjson_mut_val *r, *reqs, *q, *params;
	unsigned long long expiry;
	uint8_t raw[SL_SEAL_ID_HEX / 2];
	char *msg, *state, *what, *sealed, nonce[SL_SEAL_ID_HEX + 1];

	if (resp && c->request_state) {
		const char *action = yyjson_mut_get_str(yyjson_mut_obj_get(resp, "action"));
		yyjson_mut_val *content = yyjson_mut_obj_get(resp, "content");
		if (!state_valid(c, c->request_state, nonce, &expiry)) {
			sl_call_set_error(c, SL_OUTCOME_DENIED, "policy: the confirmation for %s.%s came "
					  "back with a requestState that is not ours, is for another call "
					  "or another caller, or expired; the call is refused", c->up->name,
					  c->tool);
			return SL_STAGE_DONE;
		}
		if (action && strcmp(action, "accept") == 0 &&
		    yyjson_mut_is_true(yyjson_mut_obj_get(content, "approve")))
			return claim(ps, c, nonce, expiry);
		sl_call_set_error(c, SL_OUTCOME_DENIED, "policy: %s.%s needs confirmation by %s, and %s",
				  c->up->name, c->tool, reason,
				  !action || strcmp(action, "accept") == 0 ? "the user did not approve it" :
				  strcmp(action, "decline") == 0 ? "the user declined" :
				  "the user cancelled the confirmation");
		return SL_STAGE_DONE;
	}
	/* MCP 2026-07-28 MRTR: ask through an input_required result. */
	expiry = sl_seal_now() + (ps->policy.confirm_timeout_ms + 999) / 1000;
	sl_random(raw, sizeof(raw));
	sl_hex(raw, sizeof(raw), nonce);
	what = state_what(c, nonce);
	sealed = sl_seal(c->gen->key, sizeof(c->gen->key), expiry, what);
	state = sl_printf(CONFIRM_PREFIX "%s.%s", nonce, sealed);
	free(sealed);
	free(what);
	msg = confirm_message(c, reason);
	r = yyjson_mut_obj(c->doc);
	reqs = yyjson_mut_obj(c->doc);
	q = yyjson_mut_obj(c->doc);
	params = yyjson_mut_obj(c->doc);
	yyjson_mut_obj_add_str(c->doc, params, "mode", "form");
	yyjson_mut_obj_add_strcpy(c->doc, params, "message", msg);
	yyjson_mut_obj_add_val(c->doc, params, "requestedSchema",
			       sl_mcp_yes_no_schema(c->doc, "approve", "Approve this call"));
	yyjson_mut_obj_add_str(c->doc, q, "method", "elicitation/create");
	yyjson_mut_obj_add_val(c->doc, q, "params", params);
	yyjson_mut_obj_add_val(c->doc, reqs, "confirm", q);
	yyjson_mut_obj_add_str(c->doc, r, "resultType", "input_required");
	yyjson_mut_obj_add_val(c->doc, r, "inputRequests", reqs);
	yyjson_mut_obj_add_strcpy(c->doc, r, "requestState", state);
	c->input_required = r;
	c->outcome = SL_OUTCOME_INPUT_REQUIRED;
	free(state);
	free(msg);
	return SL_STAGE_DONE;
}

static enum sl_stage_rc confirm(struct sl_policy_state *ps, struct sl_call *c,
				const char *reason)
{
	struct wait *w;
	yyjson_mut_doc *d;
	yyjson_mut_val *schema;
	char *msg;
	bool asked;

	if (c->mrtr)
		return confirm_mrtr(ps, c, reason);
	if (!sl_call_can_ask(c)) {
		sl_call_set_error(c, SL_OUTCOME_DENIED,
				  "policy: %s.%s needs confirmation by %s, but %s, so nobody can be "
				  "asked; the call is refused", c->up->name, c->tool, reason,
				  c->ask.elicit ? "the client does not support elicitation" :
				  "there is no client session");
		return SL_STAGE_DONE;
	}
	w = sl_alloc(sizeof(*w));
	snprintf(w->reason, sizeof(w->reason), "%s", reason);

	msg = confirm_message(c, reason);

	d = yyjson_mut_doc_new(NULL);
	if (!d)
		sl_oom();
	schema = sl_mcp_yes_no_schema(d, "approve", "Approve this call");

	w->c = c;
	uv_timer_init(c->up->loop, &w->timer);
	w->timer.data = w;
	asked = sl_call_ask(c, msg, d, schema, on_answer, w);
	free(msg);
	yyjson_mut_doc_free(d);
	if (!asked) {
		w->c = NULL;
		w->answered = true;
		uv_close((uv_handle_t *)&w->timer, on_timer_closed);
		sl_call_set_error(c, SL_OUTCOME_DENIED, "policy: %s.%s needs confirmation by %s, but "
				  "the client could not be asked; the call is refused", c->up->name,
				  c->tool, reason);
		return SL_STAGE_DONE;
	}
	sl_list_push_front(&ps->waits, &w->link);
	sl_call_set_ctx(c, &sl_stage_policy, w);
	uv_timer_start(&w->timer, on_deadline, ps->policy.confirm_timeout_ms, 0);
	sl_call_human_wait(c, true);
	sl_log(SL_LOG_DEBUG, "policy: asking the client to confirm %s.%s", c->up->name, c->tool);
	return SL_STAGE_AGAIN;
}

static void unadvertised(struct sl_call *c, const char *detail)
{
	sl_call_set_error(c, SL_OUTCOME_DENIED, "policy: server '%s' has no tool '%s' (%s): "
			  "only tools a server advertises can be called", c->up->name, c->tool, detail);
}

/* Why a tool sluice has not seen is refused; also the answer for a tool
 * hidden from the caller, so that the two cannot be told apart. */
#define NOT_LISTED "not in its tools list, also after a refresh"

/* Applies the rules to a tool the server advertises (def). */
static enum sl_stage_rc decide(struct sl_policy_state *ps, struct sl_call *c, yyjson_val *def)
{
	int rule;
	char reason[600];
	const struct sl_caller *who = c->who;
	enum sl_policy_action a = sl_policy_decide(&ps->policy, who, c->up->name, c->tool,
						   sl_json_obj(def, "annotations"), false, &rule);

	sl_policy_reason(&ps->policy, rule, reason, sizeof(reason));
	switch (a) {
	case SL_POLICY_ALLOW:
		return SL_STAGE_NEXT;
	case SL_POLICY_DENY:
		/* invoke_tool and programs name tools through the listings,
		 * which hide this one from this caller: to it the tool does
		 * not exist, and the answer says so in the same words as for
		 * one that really does not. A direct tools/call names the
		 * exposed tool and is told the rule. */
		if (c->origin == SL_ORIGIN_ROUTER || c->origin == SL_ORIGIN_CODE) {
			sl_log(SL_LOG_DEBUG, "policy: %s.%s is denied to %s by %s; answered as a "
			       "tool the server does not have", c->up->name, c->tool,
			       sl_caller_name(who), reason);
			unadvertised(c, NOT_LISTED);
			return SL_STAGE_DONE;
		}
		sl_call_set_error(c, SL_OUTCOME_DENIED, "policy: %s.%s is denied by %s", c->up->name,
				  c->tool, reason);
		return SL_STAGE_DONE;
	default:
		return confirm(ps, c, reason);
	}
}

static yyjson_val *find_tool(yyjson_val *const *items, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		const char *s = sl_json_str(items[i], "name");
		if (s && strcmp(s, name) == 0)
			return items[i];
	}
	return NULL;
}

/* A refresh of the server's tools list, for a tool it did not advertise. */
struct refresh {
	struct sl_policy_state *ps; /* the call holds it alive until resumed */
	struct sl_call *c;
	int pages;
};

static bool refresh_page(struct refresh *r, yyjson_val *cursor, struct sl_err *err);

static void refresh_end(struct refresh *r, enum sl_stage_rc rc)
{
	struct sl_call *c = r->c;
	free(r);
	if (rc != SL_STAGE_AGAIN)
		sl_call_resume(c); /* an outcome set here skips to the response half */
}

static void on_refresh(void *ctx, struct sl_reply *rep)
{
	struct refresh *r = ctx;
	struct sl_call *c = r->c;
	struct sl_err err;
	yyjson_val *arr, *it, *cursor, *hit = NULL;
	size_t i, n;

	if (c->outcome == SL_OUTCOME_CANCELLED) {
		refresh_end(r, SL_STAGE_DONE);
		return;
	}
	if (rep->kind != SL_REPLY_RESULT) {
		unadvertised(c, rep->kind == SL_REPLY_FAILED ? rep->why :
			     "its tools list could not be refreshed");
		refresh_end(r, SL_STAGE_DONE);
		return;
	}
	arr = sl_json_arr(rep->msg->result, "tools");
	yyjson_arr_foreach(arr, i, n, it)
		if (!hit && yyjson_is_obj(it) && sl_json_str(it, "name") &&
		    strcmp(sl_json_str(it, "name"), c->tool) == 0)
			hit = it;
	if (hit) {
		/* def is borrowed from the reply: decide before it goes. The
		 * gateway's list lacks it: fetched again, as on list_changed, so
		 * that the next call finds it without a refresh of its own. */
		sl_log(SL_LOG_INFO, "policy: server '%s' advertises '%s' after a refresh of its list",
		       c->up->name, c->tool);
		sl_upstream_relist_tools(c->up);
		refresh_end(r, decide(r->ps, c, hit));
		return;
	}
	cursor = yyjson_obj_get(rep->msg->result, "nextCursor");
	if (yyjson_is_str(cursor) && ++r->pages < REFRESH_MAX_PAGES) {
		if (refresh_page(r, cursor, &err))
			return;
		unadvertised(c, err.msg);
	} else {
		unadvertised(c, NOT_LISTED);
	}
	refresh_end(r, SL_STAGE_DONE);
}

static bool refresh_page(struct refresh *r, yyjson_val *cursor, struct sl_err *err)
{
	struct sl_call *c = r->c;
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *params;
	bool ok;

	if (!d)
		sl_oom();
	params = yyjson_mut_obj(d);
	yyjson_mut_doc_set_root(d, params);
	if (cursor)
		yyjson_mut_obj_add_val(d, params, "cursor", yyjson_val_mut_copy(d, cursor));
	ok = sl_upstream_request(c->up, "tools/list", d, params, c->up->gcfg->call_timeout_ms,
				 on_refresh, NULL, r, err) != NULL;
	yyjson_mut_doc_free(d);
	return ok;
}

static enum sl_stage_rc policy_request(void *state, struct sl_call *c)
{
	struct sl_policy_state *ps = state;
	yyjson_val *def = find_tool(c->up->tools.items, c->up->tools.n, c->tool);
	uint64_t now = sl_now_ms(), *last;
	struct refresh *r;
	struct sl_err err;

	if (def)
		return decide(ps, c, def);
	/* Not in the list we hold: the server may have added it without telling
	 * (no list_changed). Ask once; only what it advertises may run. Not
	 * again within REFRESH_INTERVAL_MS of the last such refresh of this
	 * server (one in flight included): a caller inventing names would
	 * otherwise make the server list its tools for each one. */
	if (!(last = sl_map_get(&ps->refreshed, c->up->name))) {
		last = sl_alloc(sizeof(*last));
		*last = 0;
		sl_map_put(&ps->refreshed, c->up->name, last);
	} else if (now - *last < REFRESH_INTERVAL_MS) {
		unadvertised(c, NOT_LISTED);
		return SL_STAGE_DONE;
	}
	*last = now;
	r = sl_alloc(sizeof(*r));
	r->ps = ps;
	r->c = c;
	if (!refresh_page(r, NULL, &err)) {
		free(r);
		unadvertised(c, err.msg);
		return SL_STAGE_DONE;
	}
	return SL_STAGE_AGAIN;
}

const struct sl_stage sl_stage_policy = {
	.name = "policy",
	.conf = &policy_conf,
	.init = policy_init,
	.fini = policy_fini,
	.visible = policy_visible,
	.request = policy_request,
	.cancel = policy_cancel,
};

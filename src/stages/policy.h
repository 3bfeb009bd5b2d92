/*
 * Policy: which tools may be called, and which need a human's yes first.
 *
 * Config, sluice.policy:
 *   { "default": "allow" | "deny" | "confirm",         (default "allow")
 *     "rules": [ { "match": "github.merge_*", "action": "deny" },
 *                { "match": "*.delete_*", "notWho": ["group:sre"], "action": "deny" },
 *                { "annotation": "destructiveHint", "action": "confirm" } ],
 *     "confirmTimeoutMs": 120000 }
 * A rule matches when its glob (on "server.tool"; * any run, ? one
 * character), its annotation hint (true in the tool's annotations), its
 * "who" (the caller matches one of the selectors) and its "notWho" (the
 * caller matches none) all hold, for those it has; the first matching rule
 * wins, else the default. Selectors: sub:GLOB, group:NAME, scope:NAME,
 * client:GLOB, profile:NAME (profile:default is the /mcp route), anonymous
 * (no caller, or one without a subject), authenticated (the others).
 *
 * The stage (sl_stage_policy) hides denied tools, refuses denied calls,
 * refuses calls of tools the server does not advertise (after one refresh
 * of its list), and asks the human through elicitation for confirm. Its
 * state (struct sl_policy_state) holds the parsed policy and the key that
 * signs 2026-07-28 confirmations.
 *
 * API (pure, for the stage, `sluice policy check` and the unit tests):
 *   struct sl_policy p;
 *   if (sl_policy_parse(section, &p, &err) < 0) ... err names the key
 *   a = sl_policy_decide(&p, who, "github", "merge_pull_request", annotations, false, &rule);
 *   sl_policy_dispose(&p);
 *   p = sl_policy_current(sl_gen_state(gen, &sl_stage_policy));  a generation's policy
 */
#ifndef SL_STAGES_POLICY_H
#define SL_STAGES_POLICY_H

#include "auth/caller.h"
#include "core/common.h"
#include <yyjson.h>

#define SL_POLICY_WHO_MAX 64      /* selectors in one rule's who or notWho */
#define SL_POLICY_WHO_ARG_MAX 256 /* bytes after a selector's "kind:" */

enum sl_policy_action { SL_POLICY_ALLOW, SL_POLICY_DENY, SL_POLICY_CONFIRM };

/* The stage's state, made by its init for a generation. */
struct sl_policy_state;

enum sl_policy_who_kind {
	SL_WHO_SUB,           /* arg: a glob on the subject */
	SL_WHO_GROUP,         /* arg: a group or role, exactly */
	SL_WHO_SCOPE,         /* arg: a scope, exactly */
	SL_WHO_CLIENT,        /* arg: a glob on the OAuth client id */
	SL_WHO_PROFILE,       /* arg: a profile name; "default" is the /mcp route */
	SL_WHO_ANONYMOUS,     /* no caller, or one without a subject */
	SL_WHO_AUTHENTICATED, /* a caller with a subject */
};

/* One selector of a rule's who or notWho. */
struct sl_policy_who {
	enum sl_policy_who_kind kind;
	char *arg;                 /* owned; NULL for anonymous and authenticated */
};

/* A list of selectors: matches when any one does. n is 0 when the key is
 * absent (never when it is given: an empty list is refused at load). */
struct sl_policy_who_list {
	struct sl_policy_who *v;
	size_t n;
};

struct sl_policy_rule {
	char *match;       /* glob on "server.tool", or NULL */
	char *annotation;  /* a hint that must be true, or NULL */
	struct sl_policy_who_list who;     /* the caller matches one (n 0: anyone) */
	struct sl_policy_who_list not_who; /* the caller matches none (n 0: anyone) */
	enum sl_policy_action action;
};

struct sl_policy {
	enum sl_policy_action def;
	struct sl_policy_rule *rules;
	size_t nrules;
	uint64_t confirm_timeout_ms;
};

/* Parses sluice.policy (section may be NULL: allow everything). On error
 * err says which key (sluice.policy.rules[N].action ...) and out is empty. */
int sl_policy_parse(yyjson_val *section, struct sl_policy *out, struct sl_err *err) SL_MUST_USE;
void sl_policy_dispose(struct sl_policy *p);

/* The decision for server.tool called by who (borrowed; NULL: anonymous,
 * as over stdio or HTTP without authentication). annotations: the tool's
 * annotations object (borrowed, may be NULL). *rule is the 0-based index of
 * the rule that decided, or -1 for the default. With skip_annotation_rules,
 * rules that name an annotation are not considered (the tool is not at
 * hand). */
enum sl_policy_action sl_policy_decide(const struct sl_policy *p, const struct sl_caller *who,
				       const char *server, const char *tool,
				       yyjson_val *annotations, bool skip_annotation_rules,
				       int *rule);
/* The tool (its definition as the server lists it) is denied to who, so
 * that to who it does not exist: the listings leave it out, and programs
 * and invoke_tool answer as for a tool that is not there. */
bool sl_policy_hides(const struct sl_policy *p, const struct sl_caller *who, const char *server,
		     yyjson_val *tool);
/* The rule's who and notWho let who (NULL: anonymous) through: the rule
 * applies to that caller when its glob and annotation hold too. */
bool sl_policy_rule_for(const struct sl_policy_rule *r, const struct sl_caller *who);

const char *sl_policy_action_name(enum sl_policy_action a);
/* What decided (rule, as sl_policy_decide set it): "rule 2 (match
 * \"github.merge_*\")" or "the default action (deny)", into out. */
void sl_policy_reason(const struct sl_policy *p, int rule, char *out, size_t n);
/* What the rule matches on: "match \"github.merge_*\"", "annotation
 * destructiveHint", "who group:sre|sub:alice", "notWho ...", joined by ", ". */
void sl_policy_rule_text(const struct sl_policy_rule *r, char *out, size_t n);
/* The policy of a stage state (borrowed: lives as long as ps); with ps
 * NULL (no policy stage in the generation), one that allows everything. */
const struct sl_policy *sl_policy_current(const struct sl_policy_state *ps);

/* The arguments' part of a confirmation: one line per key ("\n  " before
 * each), `"key": value` with keys and string values JSON-quoted and escaped
 * (core/escape.h) and cut with a "(+N more bytes)" mark outside the quotes,
 * objects and arrays as {N keys} and [N items], secret-looking keys'
 * values [hidden]; " (none)" for no key. The entries that do not fit in
 * max bytes are left out and counted on a last line "  ... N more bytes in
 * K more keys". Caller frees. */
char *sl_policy_summary(yyjson_mut_val *args, size_t max);

/* The calls of ps (NULL: none) waiting for their client's human to confirm
 * them (elicitation, session era): fn(ctx, call, reason) for each, newest
 * first; reason is the rule that asked. Changes nothing (the admin page
 * lists them, gateway/admin.c). */
struct sl_call;
typedef void sl_policy_wait_fn(void *ctx, const struct sl_call *c, const char *reason);
void sl_policy_each_wait(const struct sl_policy_state *ps, sl_policy_wait_fn *fn, void *ctx);

struct sl_stage;
extern const struct sl_stage sl_stage_policy; /* pipeline/call.h */

#endif

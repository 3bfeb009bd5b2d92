/*
 * Policy: which tools may be called, and which need a human's yes first.
 *
 * Config, sluice.policy:
 *   { "default": "allow" | "deny" | "confirm",         (default "allow")
 *     "rules": [ { "match": "github.merge_*", "action": "deny" },
 *                { "annotation": "destructiveHint", "action": "confirm" } ],
 *     "confirmTimeoutMs": 120000 }
 * A rule matches when its glob (on "server.tool"; * any run, ? one
 * character) and its annotation hint (true in the tool's annotations) both
 * hold, for those it has; the first matching rule wins, else the default.
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
 *   a = sl_policy_decide(&p, "github", "merge_pull_request", annotations, &rule);
 *   sl_policy_dispose(&p);
 *   p = sl_policy_current(sl_gen_state(gen, &sl_stage_policy));  a generation's policy
 */
#ifndef SL_STAGES_POLICY_H
#define SL_STAGES_POLICY_H

#include "core/common.h"
#include <yyjson.h>

enum sl_policy_action { SL_POLICY_ALLOW, SL_POLICY_DENY, SL_POLICY_CONFIRM };

/* The stage's state, made by its init for a generation. */
struct sl_policy_state;

struct sl_policy_rule {
	char *match;       /* glob on "server.tool", or NULL */
	char *annotation;  /* a hint that must be true, or NULL */
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

/* Glob match of the whole string: '*' any run (also empty, also '.'), '?'
 * exactly one UTF-8 character, everything else literally. */
bool sl_policy_glob(const char *pattern, const char *s);

/* The decision for server.tool. annotations: the tool's annotations object
 * (borrowed, may be NULL). *rule is the 0-based index of the rule that
 * decided, or -1 for the default. With skip_annotation_rules, rules that
 * name an annotation are not considered (the tool is not at hand). */
enum sl_policy_action sl_policy_decide(const struct sl_policy *p, const char *server,
				       const char *tool, yyjson_val *annotations,
				       bool skip_annotation_rules, int *rule);

const char *sl_policy_action_name(enum sl_policy_action a);
/* "match \"github.merge_*\"", "annotation destructiveHint", or both. */
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

struct sl_stage;
extern const struct sl_stage sl_stage_policy; /* pipeline/call.h */

#endif

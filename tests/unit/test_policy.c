/* The policy's pure parts: config parsing, rule evaluation, summaries;
 * and the stage's state. */
#include "stages/policy.h"
#include "core/json.h"
#include "pipeline/call.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>

static yyjson_doc *parse_json(const char *s)
{
	return yyjson_read(s, strlen(s), 0);
}

static int parse_policy(const char *json, struct sl_policy *p, struct sl_err *err)
{
	yyjson_doc *d = parse_json(json);
	int rc = sl_policy_parse(yyjson_doc_get_root(d), p, err);
	yyjson_doc_free(d);
	return rc;
}

TEST(policy_parse_defaults)
{
	struct sl_policy p;
	struct sl_err err;
	int rule;
	CHECK_INT(sl_policy_parse(NULL, &p, &err), 0);
	CHECK_INT(p.def, SL_POLICY_ALLOW);
	CHECK_INT(p.nrules, 0);
	CHECK(p.confirm_timeout_ms > 0);
	CHECK_INT(sl_policy_decide(&p, NULL, "a", "b", NULL, false, &rule), SL_POLICY_ALLOW);
	CHECK_INT(rule, -1);
	sl_policy_dispose(&p);
}

TEST(policy_parse_errors_name_the_key)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
		{ "[]", "sluice.policy: must be an object" },
		{ "{\"default\":\"maybe\"}", "sluice.policy.default" },
		{ "{\"defualt\":\"deny\"}", "sluice.policy: unknown key \"defualt\" (known: default, rules, confirmTimeoutMs)" },
		{ "{\"rules\":{}}", "sluice.policy.rules: must be an array" },
		{ "{\"rules\":[1]}", "sluice.policy.rules[0]: must be an object" },
		{ "{\"rules\":[{\"match\":\"a.*\",\"action\":\"allow\"},{\"match\":\"b\"}]}",
		  "sluice.policy.rules[1].action: missing" },
		{ "{\"rules\":[{\"match\":\"a.*\",\"action\":\"block\"}]}",
		  "sluice.policy.rules[0].action: must be" },
		{ "{\"rules\":[{\"match\":\"\",\"action\":\"deny\"}]}", "sluice.policy.rules[0].match" },
		{ "{\"rules\":[{\"match\":7,\"action\":\"deny\"}]}", "sluice.policy.rules[0].match" },
		{ "{\"rules\":[{\"annotation\":\"dangerousHint\",\"action\":\"deny\"}]}",
		  "sluice.policy.rules[0].annotation" },
		{ "{\"rules\":[{\"action\":\"deny\"}]}", "sluice.policy.rules[0]: needs" },
		{ "{\"rules\":[{\"match\":\"a\",\"action\":\"deny\",\"when\":1}]}",
		  "sluice.policy.rules[0]: unknown key \"when\" (known: match, annotation, who, notWho, action)" },
		{ "{\"confirmTimeoutMs\":0}", "sluice.policy.confirmTimeoutMs" },
		{ "{\"confirmTimeoutMs\":\"5s\"}", "sluice.policy.confirmTimeoutMs" },
	};
	for (size_t i = 0; i < SL_COUNT(cases); i++) {
		struct sl_policy p;
		struct sl_err err = { { 0 } };
		CHECK(parse_policy(cases[i].json, &p, &err) < 0);
		CHECK(strstr(err.msg, cases[i].want) != NULL);
		CHECK_INT(p.nrules, 0);
	}
}

TEST(policy_first_matching_rule_wins)
{
	struct sl_policy p;
	struct sl_err err;
	int rule;
	CHECK_INT(parse_policy("{\"default\":\"deny\",\"rules\":["
			       "{\"match\":\"github.merge_*\",\"action\":\"confirm\"},"
			       "{\"match\":\"github.*\",\"action\":\"allow\"},"
			       "{\"match\":\"github.merge_pull_request\",\"action\":\"deny\"}]}",
			       &p, &err), 0);
	CHECK_INT(p.def, SL_POLICY_DENY);
	CHECK_INT(p.nrules, 3);
	CHECK_INT(sl_policy_decide(&p, NULL, "github", "merge_pull_request", NULL, false, &rule),
		  SL_POLICY_CONFIRM);
	CHECK_INT(rule, 0);
	CHECK_INT(sl_policy_decide(&p, NULL, "github", "echo", NULL, false, &rule), SL_POLICY_ALLOW);
	CHECK_INT(rule, 1);
	CHECK_INT(sl_policy_decide(&p, NULL, "jira", "echo", NULL, false, &rule), SL_POLICY_DENY);
	CHECK_INT(rule, -1);
	sl_policy_dispose(&p);
}

TEST(policy_annotation_rules)
{
	struct sl_policy p;
	struct sl_err err;
	int rule;
	yyjson_doc *destr = parse_json("{\"destructiveHint\":true}");
	yyjson_doc *safe = parse_json("{\"destructiveHint\":false,\"readOnlyHint\":true}");
	yyjson_doc *odd = parse_json("{\"destructiveHint\":\"yes\"}");
	char text[200];

	CHECK_INT(parse_policy("{\"rules\":["
			       "{\"annotation\":\"destructiveHint\",\"match\":\"jira.*\",\"action\":\"deny\"},"
			       "{\"annotation\":\"destructiveHint\",\"action\":\"confirm\"},"
			       "{\"annotation\":\"readOnlyHint\",\"action\":\"allow\"},"
			       "{\"match\":\"*\",\"action\":\"deny\"}]}", &p, &err), 0);
	CHECK_INT(sl_policy_decide(&p, NULL, "github", "merge_pull_request", yyjson_doc_get_root(destr),
				   false, &rule), SL_POLICY_CONFIRM);
	CHECK_INT(rule, 1);
	/* Both conditions of a rule must hold. */
	CHECK_INT(sl_policy_decide(&p, NULL, "jira", "delete_issue", yyjson_doc_get_root(destr), false,
				   &rule), SL_POLICY_DENY);
	CHECK_INT(rule, 0);
	CHECK_INT(sl_policy_decide(&p, NULL, "github", "list_issues", yyjson_doc_get_root(safe), false,
				   &rule), SL_POLICY_ALLOW);
	CHECK_INT(rule, 2);
	/* Only a boolean true counts; no annotations at all match no hint. */
	CHECK_INT(sl_policy_decide(&p, NULL, "github", "x", yyjson_doc_get_root(odd), false, &rule),
		  SL_POLICY_DENY);
	CHECK_INT(rule, 3);
	CHECK_INT(sl_policy_decide(&p, NULL, "github", "x", NULL, false, &rule), SL_POLICY_DENY);
	CHECK_INT(rule, 3);
	/* Without the tool at hand (sluice policy check), annotation rules are skipped. */
	CHECK_INT(sl_policy_decide(&p, NULL, "github", "merge_pull_request", yyjson_doc_get_root(destr),
				   true, &rule), SL_POLICY_DENY);
	CHECK_INT(rule, 3);
	sl_policy_rule_text(&p.rules[0], text, sizeof(text));
	CHECK_STR(text, "match \"jira.*\", annotation destructiveHint");
	sl_policy_rule_text(&p.rules[1], text, sizeof(text));
	CHECK_STR(text, "annotation destructiveHint");
	sl_policy_rule_text(&p.rules[3], text, sizeof(text));
	CHECK_STR(text, "match \"*\"");
	sl_policy_dispose(&p);
	yyjson_doc_free(destr);
	yyjson_doc_free(safe);
	yyjson_doc_free(odd);
}

static char *summary_of(const char *json, size_t max)
{
	yyjson_doc *d = parse_json(json);
	yyjson_mut_doc *md = yyjson_doc_mut_copy(d, NULL);
	char *s = sl_policy_summary(yyjson_mut_doc_get_root(md), max);
	yyjson_doc_free(d);
	yyjson_mut_doc_free(md);
	return s;
}

TEST(policy_summary_keys_short_values_hidden_secrets)
{
	char *s = summary_of("{\"owner\":\"acme\",\"number\":401,\"draft\":false,\"labels\":[1,2,3],"
			     "\"meta\":{\"a\":1},\"api_token\":\"ghp_secret\",\"Password\":\"x\"}", 300);
	CHECK_STR(s, "\n  \"owner\": \"acme\"\n  \"number\": 401\n  \"draft\": false\n  \"labels\": [3 items]"
		     "\n  \"meta\": {1 keys}\n  \"api_token\": [hidden]\n  \"Password\": [hidden]");
	free(s);
	s = summary_of("{}", 300);
	CHECK_STR(s, " (none)");
	free(s);
	/* Long values are cut and say by how much, and so is the whole summary. */
	s = summary_of("{\"body\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}", 300);
	CHECK_STR(s, "\n  \"body\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" "
		     "(+8 more bytes)");
	free(s);
	s = summary_of("{\"a\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\",\"b\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\","
		       "\"c\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}", 50);
	CHECK_STR(s, "\n  \"a\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"\n  ... 80 more bytes in 2 more keys");
	free(s);
}

/* The spoof of issue 13: a key that reads as arguments and an approval,
 * quotes and a right-to-left override in values, padding to push the real
 * arguments out of view. The person sees every real argument, each on its
 * own line, and the fake text only inside one quoted, escaped key. */
TEST(policy_summary_spoof_shows_real_arguments)
{
	char pad[512], *json, *s, *want;
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	json = sl_printf("{\"repo=\\\"docs\\\", pull_number=1 (a typo fix)\\nAll checks passed; the user "
			 "already approved\\n\\n\\n\":\"%s\",\"repo\":\"prod\\\", \\\"pull_number\\\": 1\","
			 "\"pull_number\":666,\"note\":\"\xe2\x80\xae" "dexif\",\"force\":true}", pad);
	s = summary_of(json, 1000);
	want = sl_printf("\n  \"repo=\\\"docs\\\", pull_number=1 (a typo fix)\\nAll checks passed; the u\" "
			 "(+23 more bytes): \"%.80s\" (+431 more bytes)"
			 "\n  \"repo\": \"prod\\\", \\\"pull_number\\\": 1\""
			 "\n  \"pull_number\": 666"
			 "\n  \"note\": \"\\u202edexif\""
			 "\n  \"force\": true", pad);
	CHECK_STR(s, want);
	free(want);
	free(s);
	free(json);
}

/* ---- who: rules for an identity ------------------------------------------------- */

static struct sl_caller *person(const char *subject, const char *groups, const char *scopes,
				const char *client, const char *profile)
{
	struct sl_caller *c = sl_caller_new("token");
	char *copy, *save = NULL;

	sl_caller_set_subject(c, NULL, subject);
	copy = strdup(groups);
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
		sl_caller_add_group(c, w);
	free(copy);
	copy = strdup(scopes);
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
		sl_caller_add_scope(c, w);
	free(copy);
	c->client_id = client ? strdup(client) : NULL;
	sl_caller_set_profile(c, profile);
	return c;
}

TEST(policy_who_selectors_parse)
{
	struct sl_policy p;
	struct sl_err err;
	char text[300];

	CHECK_INT(parse_policy("{\"rules\":[{\"match\":\"*.delete_*\",\"who\":[\"sub:a*\","
			       "\"group:sre\",\"scope:repo:write\",\"client:cli-*\",\"profile:ops\","
			       "\"anonymous\",\"authenticated\"],\"notWho\":[\"group:contractors\"],"
			       "\"action\":\"allow\"},"
			       "{\"who\":[\"anonymous\"],\"action\":\"deny\"}]}", &p, &err), 0);
	CHECK_INT(p.nrules, 2);
	CHECK_INT(p.rules[0].who.n, 7);
	CHECK_INT(p.rules[0].who.v[0].kind, SL_WHO_SUB);
	CHECK_STR(p.rules[0].who.v[0].arg, "a*");
	CHECK_INT(p.rules[0].who.v[2].kind, SL_WHO_SCOPE);
	CHECK_STR(p.rules[0].who.v[2].arg, "repo:write"); /* only the first colon separates */
	CHECK_INT(p.rules[0].who.v[4].kind, SL_WHO_PROFILE);
	CHECK_INT(p.rules[0].who.v[5].kind, SL_WHO_ANONYMOUS);
	CHECK(p.rules[0].who.v[5].arg == NULL);
	CHECK_INT(p.rules[0].not_who.n, 1);
	CHECK_INT(p.rules[1].not_who.n, 0);
	sl_policy_rule_text(&p.rules[0], text, sizeof(text));
	CHECK_STR(text, "match \"*.delete_*\", who sub:a*|group:sre|scope:repo:write|client:cli-*|"
			"profile:ops|anonymous|authenticated, notWho group:contractors");
	/* A rule may be about who alone. */
	sl_policy_rule_text(&p.rules[1], text, sizeof(text));
	CHECK_STR(text, "who anonymous");
	sl_policy_dispose(&p);
}

TEST(policy_who_errors_name_the_selector)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
		{ "{\"rules\":[{\"match\":\"a\",\"action\":\"deny\"},{\"match\":\"a\",\"action\":\"deny\"},"
		  "{\"match\":\"a\",\"action\":\"deny\"},{\"match\":\"a\",\"who\":[\"group:sre\",\"role:x\"],"
		  "\"action\":\"deny\"}]}",
		  "sluice.policy.rules[3].who[1]: must be one of sub:GLOB, group:NAME, scope:NAME, "
		  "client:GLOB, profile:NAME, anonymous, authenticated" },
		{ "{\"rules\":[{\"who\":[\"group:\"],\"action\":\"deny\"}]}",
		  "sluice.policy.rules[0].who[0]: \"group:\" needs a value after the colon" },
		{ "{\"rules\":[{\"who\":[\"anonymous:x\"],\"action\":\"deny\"}]}",
		  "sluice.policy.rules[0].who[0]: must be one of" },
		{ "{\"rules\":[{\"who\":[\"Group:sre\"],\"action\":\"deny\"}]}",
		  "sluice.policy.rules[0].who[0]: must be one of" },
		{ "{\"rules\":[{\"notWho\":[7],\"action\":\"deny\"}]}",
		  "sluice.policy.rules[0].notWho[0]: must be one of" },
		{ "{\"rules\":[{\"who\":[],\"action\":\"deny\"}]}",
		  "sluice.policy.rules[0].who: must be an array of 1 to 64 selectors" },
		{ "{\"rules\":[{\"who\":\"group:sre\",\"action\":\"deny\"}]}",
		  "sluice.policy.rules[0].who: must be an array of 1 to 64 selectors" },
		{ "{\"rules\":[{\"who\":[\"scope:read write\"],\"action\":\"deny\"}]}",
		  "sluice.policy.rules[0].who[0]: a scope has no space" },
		{ "{\"rules\":[{\"who\":[\"sub:a\\u0000b\"],\"action\":\"deny\"}]}",
		  "sluice.policy.rules[0].who[0]: the value after \"sub:\" must be at most 256 bytes, "
		  "with no NUL" },
		{ "{\"rules\":[{\"action\":\"deny\"}]}",
		  "sluice.policy.rules[0]: needs \"match\", \"annotation\", \"who\" or \"notWho\"" },
	};
	char big[400], many[64 * 12 + 100];
	struct sl_policy p;
	struct sl_err err;
	size_t n;

	for (size_t i = 0; i < SL_COUNT(cases); i++) {
		memset(&err, 0, sizeof(err));
		CHECK(parse_policy(cases[i].json, &p, &err) < 0);
		if (!strstr(err.msg, cases[i].want))
			printf("  got \"%s\"\n  want \"%s\"\n", err.msg, cases[i].want);
		CHECK(strstr(err.msg, cases[i].want) != NULL);
		CHECK_INT(p.nrules, 0);
	}
	/* The bounds: 256 bytes after the colon, 64 selectors. */
	snprintf(big, sizeof(big), "{\"rules\":[{\"who\":[\"sub:%0257d\"],\"action\":\"deny\"}]}", 0);
	CHECK(parse_policy(big, &p, &err) < 0);
	CHECK(strstr(err.msg, "at most 256 bytes") != NULL);
	snprintf(big, sizeof(big), "{\"rules\":[{\"who\":[\"sub:%0256d\"],\"action\":\"deny\"}]}", 0);
	CHECK_INT(parse_policy(big, &p, &err), 0);
	sl_policy_dispose(&p);
	n = (size_t)snprintf(many, sizeof(many), "{\"rules\":[{\"action\":\"deny\",\"who\":[");
	for (int i = 0; i < 65; i++)
		n += (size_t)snprintf(many + n, sizeof(many) - n, "%s\"group:g%d\"", i ? "," : "", i);
	snprintf(many + n, sizeof(many) - n, "]}]}");
	CHECK(parse_policy(many, &p, &err) < 0);
	CHECK(strstr(err.msg, "sluice.policy.rules[0].who: must be an array of 1 to 64") != NULL);
}

TEST(policy_who_selectors_match)
{
	struct sl_policy p;
	struct sl_err err;
	int rule;
	struct sl_caller *alice = person("alice", "sre,dev", "", "cli-42", NULL);
	struct sl_caller *bob = person("bob", "dev", "", NULL, "ops");
	struct sl_caller *carol = person("carol", "", "read", "web", NULL);
	struct sl_caller *shared = sl_caller_new("token"); /* bearerToken: no subject */

	/* One rule per selector kind, each allowing "t.<kind>"; the rest is denied. */
	CHECK_INT(parse_policy("{\"default\":\"deny\",\"rules\":["
			       "{\"match\":\"t.sub\",\"who\":[\"sub:al*\"],\"action\":\"allow\"},"
			       "{\"match\":\"t.group\",\"who\":[\"group:sre\"],\"action\":\"allow\"},"
			       "{\"match\":\"t.scope\",\"who\":[\"scope:read\"],\"action\":\"allow\"},"
			       "{\"match\":\"t.client\",\"who\":[\"client:cli-*\"],\"action\":\"allow\"},"
			       "{\"match\":\"t.ops\",\"who\":[\"profile:ops\"],\"action\":\"allow\"},"
			       "{\"match\":\"t.default\",\"who\":[\"profile:default\"],\"action\":\"allow\"},"
			       "{\"match\":\"t.anon\",\"who\":[\"anonymous\"],\"action\":\"allow\"},"
			       "{\"match\":\"t.auth\",\"who\":[\"authenticated\"],\"action\":\"allow\"},"
			       "{\"match\":\"t.any\",\"who\":[\"sub:bob\",\"scope:read\"],\"action\":\"allow\"},"
			       "{\"match\":\"t.none\",\"notWho\":[\"group:dev\",\"anonymous\"],\"action\":\"allow\"}"
			       "]}", &p, &err), 0);
#define ALLOWED(who, tool) (sl_policy_decide(&p, who, "t", tool, NULL, false, &rule) == SL_POLICY_ALLOW)
	CHECK(ALLOWED(alice, "sub") && !ALLOWED(bob, "sub") && !ALLOWED(NULL, "sub"));
	CHECK(!ALLOWED(shared, "sub")); /* no subject matches no glob, not even "*" */
	CHECK(ALLOWED(alice, "group") && !ALLOWED(bob, "group") && !ALLOWED(NULL, "group"));
	CHECK(ALLOWED(carol, "scope") && !ALLOWED(alice, "scope") && !ALLOWED(NULL, "scope"));
	CHECK(ALLOWED(alice, "client") && !ALLOWED(carol, "client") && !ALLOWED(bob, "client"));
	CHECK(ALLOWED(bob, "ops") && !ALLOWED(alice, "ops") && !ALLOWED(NULL, "ops"));
	/* profile:default is the caller without a profile, and no caller at all. */
	CHECK(ALLOWED(alice, "default") && ALLOWED(NULL, "default") && ALLOWED(shared, "default"));
	CHECK(!ALLOWED(bob, "default"));
	CHECK(ALLOWED(NULL, "anon") && ALLOWED(shared, "anon") && !ALLOWED(alice, "anon"));
	CHECK(ALLOWED(alice, "auth") && !ALLOWED(NULL, "auth") && !ALLOWED(shared, "auth"));
	/* who: any selector; notWho: none of them. */
	CHECK(ALLOWED(bob, "any") && ALLOWED(carol, "any") && !ALLOWED(alice, "any"));
	CHECK(ALLOWED(carol, "none") && !ALLOWED(alice, "none") && !ALLOWED(bob, "none"));
	CHECK(!ALLOWED(NULL, "none"));
	CHECK_INT(sl_policy_decide(&p, carol, "t", "none", NULL, false, &rule), SL_POLICY_ALLOW);
	CHECK_INT(rule, 9);
	CHECK_INT(sl_policy_decide(&p, alice, "t", "none", NULL, false, &rule), SL_POLICY_DENY);
	CHECK_INT(rule, -1);
#undef ALLOWED
	sl_policy_dispose(&p);
	sl_caller_unref(alice);
	sl_caller_unref(bob);
	sl_caller_unref(carol);
	sl_caller_unref(shared);
}

/* The idioms docs/stages/policy.md shows, first match wins. */
TEST(policy_who_idioms)
{
	struct sl_policy two, one, ro;
	struct sl_err err;
	int rule;
	struct sl_caller *alice = person("alice", "sre", "", NULL, NULL);
	struct sl_caller *bob = person("bob", "", "", NULL, NULL);
	struct sl_caller *carol = person("carol", "", "read", NULL, NULL);
	struct sl_caller *dave = person("dave", "", "read,write", NULL, NULL);
	yyjson_doc *destr = parse_json("{\"destructiveHint\":true}");
	yyjson_doc *reads = parse_json("{\"readOnlyHint\":true}");
	yyjson_doc *list = parse_json("{\"name\":\"list_issues\",\"annotations\":{\"readOnlyHint\":true}}");
	yyjson_doc *merge = parse_json("{\"name\":\"merge_pull_request\",\"annotations\":{}}");
	yyjson_val *d = yyjson_doc_get_root(destr), *r = yyjson_doc_get_root(reads);

	/* Only group sre may delete: two rules ... */
	CHECK_INT(parse_policy("{\"rules\":["
			       "{\"match\":\"*.delete_*\",\"who\":[\"group:sre\"],\"action\":\"allow\"},"
			       "{\"match\":\"*.delete_*\",\"action\":\"deny\"},"
			       "{\"annotation\":\"destructiveHint\",\"action\":\"confirm\"}]}", &two, &err), 0);
	CHECK_INT(sl_policy_decide(&two, alice, "jira", "delete_issue", d, false, &rule), SL_POLICY_ALLOW);
	CHECK_INT(sl_policy_decide(&two, bob, "jira", "delete_issue", d, false, &rule), SL_POLICY_DENY);
	CHECK_INT(sl_policy_decide(&two, NULL, "jira", "delete_issue", d, false, &rule), SL_POLICY_DENY);
	/* ... or one with notWho, where sre falls through to the later rules. */
	CHECK_INT(parse_policy("{\"rules\":["
			       "{\"match\":\"*.delete_*\",\"notWho\":[\"group:sre\"],\"action\":\"deny\"},"
			       "{\"annotation\":\"destructiveHint\",\"action\":\"confirm\"}]}", &one, &err), 0);
	CHECK_INT(sl_policy_decide(&one, alice, "jira", "delete_issue", d, false, &rule), SL_POLICY_CONFIRM);
	CHECK_INT(rule, 1);
	CHECK_INT(sl_policy_decide(&one, bob, "jira", "delete_issue", d, false, &rule), SL_POLICY_DENY);
	CHECK_INT(rule, 0);
	/* A read scope sees only read-only tools (unless it also has write). */
	CHECK_INT(parse_policy("{\"rules\":["
			       "{\"who\":[\"scope:read\"],\"annotation\":\"readOnlyHint\",\"action\":\"allow\"},"
			       "{\"who\":[\"scope:read\"],\"notWho\":[\"scope:write\"],\"action\":\"deny\"}]}",
			       &ro, &err), 0);
	CHECK(!sl_policy_hides(&ro, carol, "github", yyjson_doc_get_root(list)));
	CHECK(sl_policy_hides(&ro, carol, "github", yyjson_doc_get_root(merge)));
	CHECK(!sl_policy_hides(&ro, bob, "github", yyjson_doc_get_root(merge)));
	CHECK_INT(sl_policy_decide(&ro, carol, "github", "list_issues", r, false, &rule), SL_POLICY_ALLOW);
	CHECK_INT(sl_policy_decide(&ro, carol, "github", "merge_pull_request", d, false, &rule),
		  SL_POLICY_DENY);
	CHECK_INT(sl_policy_decide(&ro, carol, "github", "add_tool", NULL, false, &rule), SL_POLICY_DENY);
	CHECK_INT(sl_policy_decide(&ro, dave, "github", "merge_pull_request", d, false, &rule),
		  SL_POLICY_ALLOW);
	CHECK_INT(sl_policy_decide(&ro, bob, "github", "merge_pull_request", d, false, &rule),
		  SL_POLICY_ALLOW);
	sl_policy_dispose(&two);
	sl_policy_dispose(&one);
	sl_policy_dispose(&ro);
	yyjson_doc_free(destr);
	yyjson_doc_free(reads);
	yyjson_doc_free(list);
	yyjson_doc_free(merge);
	sl_caller_unref(alice);
	sl_caller_unref(bob);
	sl_caller_unref(carol);
	sl_caller_unref(dave);
}

TEST(policy_stage_state)
{
	yyjson_doc *sec = parse_json("{\"default\":\"deny\",\"rules\":"
				     "[{\"match\":\"github.*\",\"action\":\"allow\"},"
				     "{\"who\":[\"group:sre\"],\"action\":\"allow\"}]}");
	struct sl_caller *sre = person("alice", "sre", "", NULL, NULL);
	struct sl_caller *dev = person("bob", "dev", "", NULL, NULL);
	yyjson_doc *bad = parse_json("{\"default\":\"maybe\"}");
	yyjson_doc *tool = parse_json("{\"name\":\"echo\"}");
	struct sl_upstream gh = { .name = "github" }, jira = { .name = "jira" };
	struct sl_err err = { { 0 } };
	void *st = NULL, *none = NULL;
	const struct sl_policy *p;

	CHECK_INT(sl_stage_policy.init(NULL, NULL, yyjson_doc_get_root(sec), &st, &err), 0);
	CHECK(st != NULL);
	p = sl_policy_current(st);
	CHECK_INT(p->def, SL_POLICY_DENY);
	CHECK_INT(p->nrules, 2);
	CHECK(sl_stage_policy.visible(st, NULL, &gh, yyjson_doc_get_root(tool)));
	CHECK(!sl_stage_policy.visible(st, NULL, &jira, yyjson_doc_get_root(tool)));
	/* The hook decides for the caller it is given. */
	CHECK(sl_stage_policy.visible(st, sre, &jira, yyjson_doc_get_root(tool)));
	CHECK(!sl_stage_policy.visible(st, dev, &jira, yyjson_doc_get_root(tool)));
	/* No section: allow everything. */
	CHECK_INT(sl_stage_policy.init(NULL, NULL, NULL, &none, &err), 0);
	CHECK_INT(sl_policy_current(none)->def, SL_POLICY_ALLOW);
	CHECK(sl_stage_policy.visible(none, NULL, &jira, yyjson_doc_get_root(tool)));
	/* Without a state (no policy stage): allow everything too. */
	CHECK_INT(sl_policy_current(NULL)->def, SL_POLICY_ALLOW);
	CHECK_INT(sl_policy_current(NULL)->nrules, 0);
	sl_stage_policy.fini(none);
	/* A bad section: the message names the key, no state is left. */
	none = NULL;
	CHECK(sl_stage_policy.init(NULL, NULL, yyjson_doc_get_root(bad), &none, &err) < 0);
	CHECK(none == NULL);
	CHECK(strstr(err.msg, "sluice.policy.default") != NULL);
	/* The first state is untouched by the others. */
	CHECK_INT(sl_policy_current(st)->def, SL_POLICY_DENY);
	sl_stage_policy.fini(st);
	yyjson_doc_free(sec);
	yyjson_doc_free(bad);
	yyjson_doc_free(tool);
	sl_caller_unref(sre);
	sl_caller_unref(dev);
}

/* The policy's pure parts: globs, config parsing, rule evaluation, summaries;
 * and the stage's state. */
#include "stages/policy.h"
#include "core/json.h"
#include "pipeline/call.h"
#include "unit.h"

#include <stdlib.h>

TEST(policy_glob_literals_and_stars)
{
	CHECK(sl_policy_glob("github.merge_pull_request", "github.merge_pull_request"));
	CHECK(!sl_policy_glob("github.merge_pull_request", "github.merge_pull_requests"));
	CHECK(!sl_policy_glob("github.merge", "github.merge_pull_request"));
	CHECK(sl_policy_glob("github.merge_*", "github.merge_pull_request"));
	CHECK(sl_policy_glob("github.*", "github.echo"));
	CHECK(!sl_policy_glob("github.*", "gitlab.echo"));
	CHECK(sl_policy_glob("*", "x.y"));
	CHECK(sl_policy_glob("*", ""));
	CHECK(sl_policy_glob("*.delete_*", "jira.delete_issue"));
	CHECK(sl_policy_glob("*.*_issue", "jira.delete_issue"));
	CHECK(!sl_policy_glob("*.delete_*", "jira.create_issue"));
	CHECK(sl_policy_glob("git*.*merge*", "github.merge_pull_request"));
	CHECK(sl_policy_glob("**a**", "bab"));
	CHECK(!sl_policy_glob("", "a"));
	CHECK(sl_policy_glob("", ""));
	/* Case matters: tool names are case-sensitive identifiers. */
	CHECK(!sl_policy_glob("GitHub.*", "github.echo"));
}

TEST(policy_glob_question_mark)
{
	CHECK(sl_policy_glob("jira.get_?ssue", "jira.get_issue"));
	CHECK(!sl_policy_glob("jira.get_?ssue", "jira.get_ssue"));
	CHECK(sl_policy_glob("a?c", "a\xc3\xa9" "c")); /* one UTF-8 character, two bytes */
	CHECK(!sl_policy_glob("a??c", "a\xc3\xa9" "c"));
	CHECK(sl_policy_glob("s.?*", "s.x"));
	CHECK(!sl_policy_glob("s.?*", "s."));
}

TEST(policy_glob_many_stars_is_fast)
{
	char s[4001];
	memset(s, 'a', 4000);
	s[4000] = '\0';
	/* Exponential backtracking would not finish. */
	CHECK(!sl_policy_glob("*a*a*a*a*a*a*a*a*a*a*b", s));
}

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
	CHECK_INT(sl_policy_decide(&p, "a", "b", NULL, false, &rule), SL_POLICY_ALLOW);
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
		  "sluice.policy.rules[0]: unknown key \"when\" (known: match, annotation, action)" },
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
	CHECK_INT(sl_policy_decide(&p, "github", "merge_pull_request", NULL, false, &rule),
		  SL_POLICY_CONFIRM);
	CHECK_INT(rule, 0);
	CHECK_INT(sl_policy_decide(&p, "github", "echo", NULL, false, &rule), SL_POLICY_ALLOW);
	CHECK_INT(rule, 1);
	CHECK_INT(sl_policy_decide(&p, "jira", "echo", NULL, false, &rule), SL_POLICY_DENY);
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
	CHECK_INT(sl_policy_decide(&p, "github", "merge_pull_request", yyjson_doc_get_root(destr),
				   false, &rule), SL_POLICY_CONFIRM);
	CHECK_INT(rule, 1);
	/* Both conditions of a rule must hold. */
	CHECK_INT(sl_policy_decide(&p, "jira", "delete_issue", yyjson_doc_get_root(destr), false,
				   &rule), SL_POLICY_DENY);
	CHECK_INT(rule, 0);
	CHECK_INT(sl_policy_decide(&p, "github", "list_issues", yyjson_doc_get_root(safe), false,
				   &rule), SL_POLICY_ALLOW);
	CHECK_INT(rule, 2);
	/* Only a boolean true counts; no annotations at all match no hint. */
	CHECK_INT(sl_policy_decide(&p, "github", "x", yyjson_doc_get_root(odd), false, &rule),
		  SL_POLICY_DENY);
	CHECK_INT(rule, 3);
	CHECK_INT(sl_policy_decide(&p, "github", "x", NULL, false, &rule), SL_POLICY_DENY);
	CHECK_INT(rule, 3);
	/* Without the tool at hand (sluice policy check), annotation rules are skipped. */
	CHECK_INT(sl_policy_decide(&p, "github", "merge_pull_request", yyjson_doc_get_root(destr),
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

TEST(policy_stage_state)
{
	yyjson_doc *sec = parse_json("{\"default\":\"deny\",\"rules\":"
				     "[{\"match\":\"github.*\",\"action\":\"allow\"}]}");
	yyjson_doc *bad = parse_json("{\"default\":\"maybe\"}");
	yyjson_doc *tool = parse_json("{\"name\":\"echo\"}");
	struct sl_upstream gh = { .name = "github" }, jira = { .name = "jira" };
	struct sl_err err = { { 0 } };
	void *st = NULL, *none = NULL;
	const struct sl_policy *p;

	CHECK_INT(sl_stage_policy.init(NULL, yyjson_doc_get_root(sec), &st, &err), 0);
	CHECK(st != NULL);
	p = sl_policy_current(st);
	CHECK_INT(p->def, SL_POLICY_DENY);
	CHECK_INT(p->nrules, 1);
	CHECK(sl_stage_policy.visible(st, NULL, &gh, yyjson_doc_get_root(tool)));
	CHECK(!sl_stage_policy.visible(st, NULL, &jira, yyjson_doc_get_root(tool)));
	/* No section: allow everything. */
	CHECK_INT(sl_stage_policy.init(NULL, NULL, &none, &err), 0);
	CHECK_INT(sl_policy_current(none)->def, SL_POLICY_ALLOW);
	CHECK(sl_stage_policy.visible(none, NULL, &jira, yyjson_doc_get_root(tool)));
	/* Without a state (no policy stage): allow everything too. */
	CHECK_INT(sl_policy_current(NULL)->def, SL_POLICY_ALLOW);
	CHECK_INT(sl_policy_current(NULL)->nrules, 0);
	sl_stage_policy.fini(none);
	/* A bad section: the message names the key, no state is left. */
	none = NULL;
	CHECK(sl_stage_policy.init(NULL, yyjson_doc_get_root(bad), &none, &err) < 0);
	CHECK(none == NULL);
	CHECK(strstr(err.msg, "sluice.policy.default") != NULL);
	/* The first state is untouched by the others. */
	CHECK_INT(sl_policy_current(st)->def, SL_POLICY_DENY);
	sl_stage_policy.fini(st);
	yyjson_doc_free(sec);
	yyjson_doc_free(bad);
	yyjson_doc_free(tool);
}

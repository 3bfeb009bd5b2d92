/* core/glob.h: the name globs of policy rules, profiles and `sluice policy`. */
#include "core/glob.h"
#include "unit.h"

#include <string.h>

TEST(glob_literals_and_stars)
{
	CHECK(sl_glob_match("github.merge_pull_request", "github.merge_pull_request"));
	CHECK(!sl_glob_match("github.merge_pull_request", "github.merge_pull_requests"));
	CHECK(!sl_glob_match("github.merge", "github.merge_pull_request"));
	CHECK(sl_glob_match("github.merge_*", "github.merge_pull_request"));
	CHECK(sl_glob_match("github.*", "github.echo"));
	CHECK(!sl_glob_match("github.*", "gitlab.echo"));
	CHECK(sl_glob_match("*", "x.y"));
	CHECK(sl_glob_match("*", ""));
	CHECK(sl_glob_match("*.delete_*", "jira.delete_issue"));
	CHECK(sl_glob_match("*.*_issue", "jira.delete_issue"));
	CHECK(!sl_glob_match("*.delete_*", "jira.create_issue"));
	CHECK(sl_glob_match("git*.*merge*", "github.merge_pull_request"));
	CHECK(sl_glob_match("**a**", "bab"));
	CHECK(!sl_glob_match("", "a"));
	CHECK(sl_glob_match("", ""));
	/* Case matters: tool names are case-sensitive identifiers. */
	CHECK(!sl_glob_match("GitHub.*", "github.echo"));
}

TEST(glob_question_mark)
{
	CHECK(sl_glob_match("jira.get_?ssue", "jira.get_issue"));
	CHECK(!sl_glob_match("jira.get_?ssue", "jira.get_ssue"));
	CHECK(sl_glob_match("a?c", "a\xc3\xa9" "c")); /* one UTF-8 character, two bytes */
	CHECK(!sl_glob_match("a??c", "a\xc3\xa9" "c"));
	CHECK(sl_glob_match("s.?*", "s.x"));
	CHECK(!sl_glob_match("s.?*", "s."));
}

TEST(glob_many_stars_is_fast)
{
	char s[4001];
	memset(s, 'a', 4000);
	s[4000] = '\0';
	/* Exponential backtracking would not finish. */
	CHECK(!sl_glob_match("*a*a*a*a*a*a*a*a*a*a*b", s));
}

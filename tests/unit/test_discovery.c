/* Unit tests of src/discovery/: tokens, stemming, BM25F ranking (the
 * inverted index's parts against the textbook formula, and the cache that
 * rebuilds one server's part), the JSON Schema -> TypeScript generator
 * (with the corpus in tests/fixtures/schemas) and result type inference. */
#include "unit.h"

#include "discovery/discovery.h"
#include "pipeline/call.h"
#include "pipeline/gen.h"
#include "pipeline/metrics.h"
#include "upstream/catalog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static char toks[64][SL_BM25_TOKEN_MAX + 1];

/* The tokens of text joined by spaces. */
static const char *tokens(const char *text)
{
	static char out[1024];
	size_t n = sl_bm25_tokens(text, toks, 64), l = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		l += (size_t)snprintf(out + l, sizeof(out) - l, "%s%s", i ? " " : "", toks[i]);
	return out;
}

TEST(discovery_tokens_split_names)
{
	CHECK_STR(tokens("listPullRequests"), "list pull request");
	CHECK_STR(tokens("get_issue-comments"), "get issu comment");
	CHECK_STR(tokens("HTMLParser v2Api"), "html parser v2 api");
	CHECK_STR(tokens("The issues of a repository"), "issu repo");
	CHECK_STR(tokens("open PRs in repos"), "open pull request repo");
	CHECK_STR(tokens("  ,,, "), "");
	CHECK_STR(tokens(NULL), "");
	/* Longer words are cut, not dropped. */
	CHECK_STR(tokens("abcdefghijklmnopqrstuvwxyzabcdefghij"), "abcdefghijklmnopqrstuvwxyzabcdef");
	CHECK_INT(sl_bm25_tokens("a b c d e f g h i j k l", toks, 3), 0);
	CHECK_INT(sl_bm25_tokens("one two three four", toks, 3), 3);
}

TEST(discovery_stemmer_joins_forms)
{
	static const char *const pairs[][2] = {
		{ "issues", "issu" }, { "issue", "issu" }, { "messages", "messag" },
		{ "message", "messag" }, { "queries", "query" }, { "query", "query" },
		{ "listing", "list" }, { "listed", "list" }, { "merged", "merg" }, { "merge", "merg" },
		{ "status", "status" }, { "statuses", "status" }, { "string", "string" },
		{ "running", "run" }, { "indexes", "index" }, { "index", "index" },
		{ "classes", "class" }, { "committed", "commit" }, { "pr", "pr" }, { "tickets", "ticket" },
	};
	for (size_t i = 0; i < SL_COUNT(pairs); i++) {
		char w[40];
		strcpy(w, pairs[i][0]);
		sl_bm25_stem(w);
		if (strcmp(w, pairs[i][1]) != 0)
			fprintf(stderr, "stem(%s) = %s, want %s\n", pairs[i][0], w, pairs[i][1]);
		CHECK_STR(w, pairs[i][1]);
	}
}

static size_t best(const double *scores, size_t n)
{
	size_t b = 0;
	for (size_t i = 1; i < n; i++)
		if (scores[i] > scores[b])
			b = i;
	return b;
}

TEST(discovery_bm25_ranks_by_field_weight_and_synonyms)
{
	struct sl_bm25 *ix = sl_bm25_new();
	double s[4];
	size_t d;

	d = sl_bm25_doc(ix); /* 0: the word in the name */
	sl_bm25_add(ix, d, SL_BM25_NAME, "create_ticket");
	sl_bm25_add(ix, d, SL_BM25_DESCRIPTION, "Create a ticket in a project.");
	d = sl_bm25_doc(ix); /* 1: only in a parameter's description */
	sl_bm25_add(ix, d, SL_BM25_NAME, "add_comment");
	sl_bm25_add(ix, d, SL_BM25_PARAM_DESC, "The ticket to comment on.");
	d = sl_bm25_doc(ix); /* 2: an issue, not a ticket */
	sl_bm25_add(ix, d, SL_BM25_NAME, "create_issue");
	sl_bm25_add(ix, d, SL_BM25_DESCRIPTION, "Open a new issue in a repository.");
	d = sl_bm25_doc(ix); /* 3: nothing in common */
	sl_bm25_add(ix, d, SL_BM25_NAME, "list_channels");
	CHECK_INT(d, 3);

	sl_bm25_rank(ix, "tickets", s);
	CHECK_INT(best(s, 4), 0);
	CHECK(s[0] > s[1] && s[1] > 0);
	CHECK(s[2] > 0);        /* ticket finds issue, at a lower weight */
	CHECK(s[0] > s[2]);
	CHECK(s[3] == 0);

	sl_bm25_rank(ix, "new bug in a repo", s);
	CHECK_INT(best(s, 4), 2); /* bug ~ issue, repo = repository */
	sl_bm25_rank(ix, "zzz", s);
	CHECK(s[0] == 0 && s[1] == 0 && s[2] == 0 && s[3] == 0);
	sl_bm25_rank(ix, "", s);
	CHECK(s[0] == 0);
	sl_bm25_free(ix);
}

/* ---- the inverted index against the formula ------------------------------- */

/* Tools as the index reads them: name, description, then parameter names
 * and descriptions (the search_tools fields; the server is the part). */
static const struct {
	const char *server, *name, *desc, *params[2][2];
} docs[] = {
	{ "github", "list_pull_requests", "List the pull requests of a repository.",
	  { { "state", "Open, closed or all." }, { "repo", "The repository name." } } },
	{ "github", "merge_pull_request", "Merge an open pull request into its base branch.",
	  { { "merge_method", "How to merge." }, { "pull_number", "The PR number." } } },
	{ "github", "create_issue", "Open a new issue in a repository.",
	  { { "title", "The issue's title." }, { "body", "Text of the issue." } } },
	{ "jira", "create_ticket", "Create a ticket in a project.",
	  { { "project", "The project key." }, { "summary", "One line about the ticket." } } },
	{ "jira", "add_comment", "Add a comment to an issue or a ticket.",
	  { { "ticket", "The ticket to comment on." }, { "text", "The comment." } } },
	{ "jira", "search_issues", "Search issues with JQL.",
	  { { "jql", "A JQL query." }, { NULL, NULL } } },
	{ "slack", "post_message", "Post a message to a channel.",
	  { { "channel", "The channel id." }, { "text", "The message text; merge requests welcome." } } },
	{ "slack", "list_channels", "List the channels of the workspace.", { { NULL, NULL } } },
};

static void add_doc(struct sl_bm25 *ix, size_t i)
{
	size_t d = sl_bm25_doc(ix);
	sl_bm25_add(ix, d, SL_BM25_SERVER, docs[i].server);
	sl_bm25_add(ix, d, SL_BM25_NAME, docs[i].name);
	sl_bm25_add(ix, d, SL_BM25_DESCRIPTION, docs[i].desc);
	for (size_t p = 0; p < 2 && docs[i].params[p][0]; p++) {
		sl_bm25_add(ix, d, SL_BM25_PARAM, docs[i].params[p][0]);
		sl_bm25_add(ix, d, SL_BM25_PARAM_DESC, docs[i].params[p][1]);
	}
}

/* The weighted count of term in text, and how many tokens text has. */
static double count_in(const char *text, const char *term, double w, double *len)
{
	char t[64][SL_BM25_TOKEN_MAX + 1];
	size_t n = sl_bm25_tokens(text, t, 64);
	double c = 0;
	for (size_t i = 0; i < n; i++)
		c += strcmp(t[i], term) == 0;
	*len += w * (double)n;
	return w * c;
}

/* BM25F as DISCOVERY.md writes it (k1 1.2, b 0.75, the field weights),
 * one document at a time, for the words of query (no synonyms: each
 * query word must be its own token). */
static void reference(const char *query, double *scores)
{
	char q[8][SL_BM25_TOKEN_MAX + 1];
	size_t nq = sl_bm25_tokens(query, q, 8), n = SL_COUNT(docs);
	double tf[SL_COUNT(docs)][8], len[SL_COUNT(docs)], avg = 0;

	for (size_t d = 0; d < n; d++) {
		len[d] = 0;
		for (size_t t = 0; t < nq; t++) {
			double l = 0, *lp = t == 0 ? &len[d] : &l;
			tf[d][t] = count_in(docs[d].server, q[t], 1.5, lp) + count_in(docs[d].name, q[t], 3, lp) +
				   count_in(docs[d].desc, q[t], 1, lp);
			for (size_t p = 0; p < 2 && docs[d].params[p][0]; p++)
				tf[d][t] += count_in(docs[d].params[p][0], q[t], 0.75, lp) +
					    count_in(docs[d].params[p][1], q[t], 0.4, lp);
		}
		avg += len[d];
	}
	avg /= (double)n;
	for (size_t d = 0; d < n; d++)
		scores[d] = 0;
	for (size_t t = 0; t < nq; t++) {
		double df = 0, idf;
		for (size_t d = 0; d < n; d++)
			df += tf[d][t] > 0;
		idf = log(1 + ((double)n - df + 0.5) / (df + 0.5));
		for (size_t d = 0; d < n; d++)
			if (tf[d][t] > 0)
				scores[d] += idf * tf[d][t] * 2.2 / (tf[d][t] + 1.2 * (0.25 + 0.75 * len[d] / avg));
	}
}

TEST(discovery_bm25_parts_rank_as_one_index_and_as_the_formula)
{
	static const char *const queries[] = {
		"merge pull request", "comment on a project", "list channels", "repository title body",
		"message text", "project summary", "nothing here", "open pull request of the repo",
	};
	struct sl_bm25 *one = sl_bm25_new(), *part[3];
	const struct sl_bm25 *parts[3];
	size_t first[3] = { 0, 3, 6 }, n = SL_COUNT(docs);

	for (size_t i = 0; i < n; i++)
		add_doc(one, i);
	for (size_t p = 0; p < 3; p++) {
		part[p] = sl_bm25_new();
		for (size_t i = first[p]; i < (p == 2 ? n : first[p + 1]); i++)
			add_doc(part[p], i);
		parts[p] = part[p];
	}
	CHECK_INT(sl_bm25_count(part[2]), 2);
	CHECK(sl_bm25_bytes(one) > 0);
	for (size_t q = 0; q < SL_COUNT(queries); q++) {
		double want[SL_COUNT(docs)], got[SL_COUNT(docs)];
		struct sl_bm25_hit *hits;
		size_t nh = sl_bm25_search(parts, 3, queries[q], SIZE_MAX, &hits), matched = 0;

		reference(queries[q], want);
		sl_bm25_rank(one, queries[q], got);
		for (size_t d = 0; d < n; d++) {
			if (fabs(got[d] - want[d]) > 1e-9)
				fprintf(stderr, "%s: doc %zu scores %g, want %g\n", queries[q], d, got[d], want[d]);
			CHECK(fabs(got[d] - want[d]) <= 1e-9);
			matched += want[d] > 0;
		}
		/* Three parts: the same documents, scores and order as one. */
		CHECK_INT(nh, matched);
		for (size_t i = 0; i < nh; i++) {
			size_t d = first[hits[i].part] + hits[i].doc;
			CHECK(hits[i].score == got[d]);
			if (i > 0)
				CHECK(hits[i - 1].score > hits[i].score ||
				      (hits[i - 1].score == hits[i].score &&
				       first[hits[i - 1].part] + hits[i - 1].doc < d));
		}
		/* Only the best 2 asked in order: the same 2 first. */
		{
			struct sl_bm25_hit *two;
			CHECK_INT(sl_bm25_search(parts, 3, queries[q], 2, &two), nh);
			for (size_t i = 0; i < nh && i < 2; i++)
				CHECK(two[i].part == hits[i].part && two[i].doc == hits[i].doc &&
				      two[i].score == hits[i].score);
			free(two);
		}
		free(hits);
	}
	sl_bm25_free(one);
	for (size_t p = 0; p < 3; p++)
		sl_bm25_free(part[p]);
}

TEST(discovery_bm25_best_orders_the_first_m)
{
	struct sl_bm25_hit all[300], some[300];
	uint32_t x = 12345;

	for (size_t i = 0; i < SL_COUNT(all); i++) {
		x = x * 1103515245u + 12345u;
		/* Few distinct scores: ties are ordered by part, then doc. */
		all[i] = (struct sl_bm25_hit){ (x >> 8) % 3, (uint32_t)i, (double)((x >> 16) % 40) + 1 };
	}
	memcpy(some, all, sizeof(all));
	sl_bm25_best(all, SL_COUNT(all), SL_COUNT(all));
	for (size_t m = 1; m <= 40; m += 13) {
		memcpy(some, all, sizeof(all));
		/* Shuffled the other way round first. */
		for (size_t i = 0; i < SL_COUNT(some) / 2; i++) {
			struct sl_bm25_hit t = some[i];
			some[i] = some[SL_COUNT(some) - 1 - i];
			some[SL_COUNT(some) - 1 - i] = t;
		}
		sl_bm25_best(some, SL_COUNT(some), m);
		for (size_t i = 0; i < m; i++)
			CHECK(some[i].part == all[i].part && some[i].doc == all[i].doc);
	}
	for (size_t i = 1; i < SL_COUNT(all); i++)
		CHECK(all[i - 1].score > all[i].score || (all[i - 1].score == all[i].score &&
		      (all[i - 1].part < all[i].part ||
		       (all[i - 1].part == all[i].part && all[i - 1].doc < all[i].doc))));
}

/* ---- the cache: one server's part rebuilt ------------------------------------ */

struct fake_server {
	struct sl_upstream u;
	yyjson_doc *doc;
	yyjson_val *items[8];
};

static void fake_list(struct fake_server *f, const char *json, uint64_t version)
{
	yyjson_val *it;
	size_t i, n;
	yyjson_doc_free(f->doc);
	f->doc = yyjson_read(json, strlen(json), 0);
	CHECK(f->doc != NULL);
	f->u.tools.n = 0;
	yyjson_arr_foreach(yyjson_doc_get_root(f->doc), i, n, it)
		if (i < SL_COUNT(f->items))
			f->items[f->u.tools.n++] = it;
	f->u.tools.items = f->items;
	f->u.tools.version = version;
}

static const char *own_name(const void *ctx, const struct sl_entry *e)
{
	(void)ctx;
	return e->name;
}

static struct sl_upstream *server_named(const void *ctx, const char *name)
{
	struct fake_server *const *f = ctx;
	for (size_t i = 0; i < 2; i++)
		if (strcmp(f[i]->u.name, name) == 0)
			return &f[i]->u;
	return NULL;
}

static bool shows_all(const void *ctx, const struct sl_upstream *u)
{
	(void)ctx;
	(void)u;
	return true;
}

TEST(discovery_cache_rebuilds_only_the_server_whose_list_changed)
{
	struct fake_server a = { 0 }, b = { 0 }, *both[2] = { &a, &b };
	struct sl_upstream *ups[2] = { &a.u, &b.u };
	struct sl_gen gen = { 0 };
	struct sl_catalog cat;
	struct sl_discovery_view v;
	char *text, *msg = NULL;
	uint64_t *indexed;

	gen.metrics = sl_metrics_new(100);
	indexed = &gen.metrics->work[SL_METRICS_INDEXED];
	a.u.name = "github";
	b.u.name = "jira";
	fake_list(&a, "[{\"name\":\"create_issue\",\"description\":\"Open an issue.\"},"
		  "{\"name\":\"list_commits\",\"description\":\"Commits of a branch.\"}]", 1);
	fake_list(&b, "[{\"name\":\"create_ticket\",\"description\":\"Create a ticket.\"},"
		  "{\"name\":\"add_comment\"},{\"name\":\"add_comment\",\"description\":\"a twin\"}]", 2);
	sl_catalog_init(&cat);
	(void)sl_catalog_rebuild(&cat, ups, 2);
	v = (struct sl_discovery_view){ .cat = &cat, .cache = sl_discovery_cache_new(), .gen = &gen,
					.local = own_name, .server = server_named, .shows = shows_all,
					.ctx = both };

	text = sl_discovery_search(&v, "ticket", 5, NULL, SL_DETAIL_SIGNATURE, &msg);
	CHECK(text && strncmp(text, "tools.jira.create_ticket(", 25) == 0);
	CHECK(text && strstr(text, "tools.github.create_issue(")); /* ticket ~ issue */
	free(text);
	CHECK_INT(*indexed, 5); /* every tool of both lists, the twin too */
	CHECK_INT(gen.metrics->work[SL_METRICS_SIGNATURE], 2);
	/* The same catalog: nothing indexed or signed again. */
	free(sl_discovery_search(&v, "ticket", 5, NULL, SL_DETAIL_SIGNATURE, &msg));
	free(sl_discovery_search(&v, "comment", 5, "jira", SL_DETAIL_SIGNATURE, &msg));
	CHECK_INT(*indexed, 5);
	/* The twin is not in the catalog: one add_comment line. */
	text = sl_discovery_search(&v, "comment", 5, "jira", SL_DETAIL_SIGNATURE, &msg);
	CHECK(text && strstr(text, "add_comment") && !strstr(strstr(text, "add_comment") + 1, "add_comment"));
	free(text);
	CHECK_INT(gen.metrics->work[SL_METRICS_SIGNATURE], 3);

	/* github's list changes: its part alone is made again. */
	fake_list(&a, "[{\"name\":\"create_issue\",\"description\":\"Open an issue.\"},"
		  "{\"name\":\"list_commits\",\"description\":\"Commits of a branch.\"},"
		  "{\"name\":\"merge_pull_request\",\"description\":\"Merge a PR.\"}]", 3);
	(void)sl_catalog_rebuild(&cat, ups, 2);
	text = sl_discovery_search(&v, "merge pr", 5, NULL, SL_DETAIL_SIGNATURE, &msg);
	CHECK(text && strncmp(text, "tools.github.merge_pull_request(", 32) == 0);
	free(text);
	CHECK_INT(*indexed, 5 + 3);
	/* jira's lines were kept: its create_ticket is not signed again. */
	free(sl_discovery_search(&v, "ticket", 1, NULL, SL_DETAIL_SIGNATURE, &msg));
	CHECK_INT(gen.metrics->work[SL_METRICS_SIGNATURE], 4);

	/* A server gone from the catalog: its part is dropped, its tools
	 * no longer found, and the rest not indexed again. */
	(void)sl_catalog_rebuild(&cat, ups, 1);
	text = sl_discovery_search(&v, "ticket", 5, NULL, SL_DETAIL_SIGNATURE, &msg);
	CHECK(text && !strstr(text, "jira"));
	free(text);
	CHECK_INT(*indexed, 8);
	CHECK(sl_discovery_cache_bytes(v.cache) > 0);

	sl_discovery_cache_free(v.cache);
	sl_catalog_dispose(&cat);
	sl_metrics_unref(gen.metrics);
	yyjson_doc_free(a.doc);
	yyjson_doc_free(b.doc);
}

/* A stage that hides every tool of server "hidden". */
static bool hide_server(void *state, const struct sl_caller *who, const struct sl_upstream *up,
			yyjson_val *tool)
{
	(void)state;
	(void)who;
	(void)tool;
	return strcmp(up->name, "hidden") != 0;
}

static const struct sl_stage hider = { .name = "hider", .visible = hide_server };

TEST(discovery_search_skips_hidden_hits_past_the_ordered_ones)
{
	struct fake_server a = { 0 }, b = { 0 }, *both[2] = { &a, &b };
	struct sl_upstream *ups[2] = { &a.u, &b.u };
	const struct sl_stage *const stages[1] = { &hider };
	struct sl_stage_slot *slots[1] = { NULL };
	struct sl_gen gen = { 0 };
	struct sl_catalog cat;
	struct sl_discovery_view v;
	struct sl_buf la, lb;
	char *text, *msg = NULL;
	yyjson_val *items_a[64], *items_b[64];

	gen.stages = stages;
	gen.nstages = 1;
	gen.slots = slots;
	a.u.name = "hidden";
	b.u.name = "shown";
	/* 60 hidden tools that match best (the word in their names), then
	 * 10 shown ones that have it in their descriptions only. */
	sl_buf_init(&la, SIZE_MAX);
	sl_buf_init(&lb, SIZE_MAX);
	(void)!sl_buf_appends(&la, "[");
	(void)!sl_buf_appends(&lb, "[");
	for (int i = 0; i < 60; i++)
		(void)!sl_buf_printf(&la, "%s{\"name\":\"merge_branch_%d\",\"description\":\"Merge.\"}",
				     i ? "," : "", i);
	for (int i = 0; i < 10; i++)
		(void)!sl_buf_printf(&lb, "%s{\"name\":\"tool_%d\",\"description\":\"Can merge%s.\"}",
				     i ? "," : "", i, i == 7 ? " and merge" : "");
	(void)!sl_buf_appends(&la, "]");
	(void)!sl_buf_appends(&lb, "]");
	a.doc = yyjson_read(la.data, la.len, 0);
	b.doc = yyjson_read(lb.data, lb.len, 0);
	CHECK(a.doc && b.doc);
	for (size_t i = 0; i < 60; i++)
		items_a[i] = yyjson_arr_get(yyjson_doc_get_root(a.doc), i);
	for (size_t i = 0; i < 10; i++)
		items_b[i] = yyjson_arr_get(yyjson_doc_get_root(b.doc), i);
	a.u.tools = (struct sl_item_list){ .items = items_a, .n = 60, .version = 7 };
	b.u.tools = (struct sl_item_list){ .items = items_b, .n = 10, .version = 8 };
	sl_catalog_init(&cat);
	(void)sl_catalog_rebuild(&cat, ups, 2);
	v = (struct sl_discovery_view){ .cat = &cat, .cache = sl_discovery_cache_new(), .gen = &gen,
					.local = own_name, .server = server_named, .shows = shows_all,
					.ctx = both };

	/* The best visible ones, in rank order: tool_7 (the word twice),
	 * then the others in list order (equal scores). */
	text = sl_discovery_search(&v, "merge", 5, NULL, SL_DETAIL_SIGNATURE, &msg);
	CHECK(text != NULL);
	if (text) {
		CHECK(!strstr(text, "hidden") && !strstr(text, "merge_branch"));
		CHECK(strncmp(text, "tools.shown.tool_7(", 19) == 0);
		CHECK(strstr(text, "\ntools.shown.tool_0(") && strstr(text, "\ntools.shown.tool_3(") &&
		      !strstr(text, "tool_4("));
		CHECK(strstr(text, "tool_0(") < strstr(text, "tool_1(") &&
		      strstr(text, "tool_2(") < strstr(text, "tool_3("));
	}
	free(text);
	/* Only hidden tools match: nothing, said as for no match at all. */
	text = sl_discovery_search(&v, "branch", 5, NULL, SL_DETAIL_SIGNATURE, &msg);
	CHECK_STR(text, "no tools match");
	free(text);

	sl_discovery_cache_free(v.cache);
	sl_catalog_dispose(&cat);
	sl_buf_dispose(&la);
	sl_buf_dispose(&lb);
	yyjson_doc_free(a.doc);
	yyjson_doc_free(b.doc);
}

/* ---- TypeScript ------------------------------------------------------------- */

static char *ts_of(const char *schema)
{
	size_t n;
	return sl_ts_from_json(schema, strlen(schema), &n);
}

static void check_ts(const char *schema, const char *want)
{
	char *got = ts_of(schema);
	if (strcmp(got, want) != 0)
		fprintf(stderr, "schema %s\n got: %s\nwant: %s\n", schema, got, want);
	CHECK_STR(got, want);
	free(got);
}

TEST(discovery_ts_mapping_table)
{
	static const char *const cases[][2] = {
		{ "{\"type\":\"string\"}", "type Root = string;\n" },
		{ "{\"type\":\"integer\"}", "type Root = number;\n" },
		{ "true", "type Root = unknown;\n" },
		{ "false", "type Root = never;\n" },
		{ "{}", "type Root = unknown;\n" },
		{ "{\"type\":[\"string\",\"null\"]}", "type Root = string | null;\n" },
		{ "{\"type\":\"string\",\"nullable\":true}", "type Root = string | null;\n" },
		{ "{\"enum\":[\"a\",2,true,null]}", "type Root = \"a\" | 2 | true | null;\n" },
		{ "{\"const\":\"x\\\"y\"}", "type Root = \"x\\\"y\";\n" },
		{ "{\"enum\":[]}", "type Root = never;\n" },
		{ "{\"type\":\"array\",\"items\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"number\"}]}}",
		  "type Root = (string | number)[];\n" },
		{ "{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"number\"}],"
		  "\"items\":false,\"minItems\":1}", "type Root = [string, number?];\n" },
		{ "{\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"minItems\":1}",
		  "type Root = [string, ...unknown[]];\n" },
		{ "{\"type\":\"object\",\"properties\":{\"a-b\":{\"type\":\"string\"},\"c\":{\"type\":"
		  "\"number\",\"description\":\"C */ here\"}},\"required\":[\"a-b\"]}",
		  "interface Root {\n  \"a-b\": string;\n  /** C *\\/ here */\n  c?: number;\n}\n" },
		{ "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"number\"}}",
		  "interface Root {\n  [key: string]: number;\n}\n" },
		{ "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},"
		  "\"additionalProperties\":{\"type\":\"number\"}}",
		  "interface Root {\n  a?: string;\n  [key: string]: number | string | undefined;\n}\n" },
		{ "{\"type\":\"object\",\"additionalProperties\":false}",
		  "interface Root {\n  [key: string]: never;\n}\n" },
		{ "{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}},"
		  "{\"required\":[\"a\"]}]}", "interface Root {\n  a?: string;\n}\n" },
		{ "{\"oneOf\":[{\"type\":\"string\"},{}]}", "type Root = unknown;\n" },
		{ "{\"$ref\":\"#/$defs/A\",\"$defs\":{\"A\":{\"type\":\"string\",\"description\":\"An A\"}}}",
		  "type Root = A;\n/** An A */\ntype A = string;\n" },
		{ "{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#\"}}}",
		  "interface Root {\n  next?: Root;\n}\n" },
		/* What it cannot translate is unknown, never half a type. */
		{ "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"strnig\"}}}", "type Root = unknown;\n" },
		{ "{\"$ref\":\"#/$defs/A\",\"$defs\":{\"A\":{\"$ref\":\"#/$defs/A\"}}}", "type Root = unknown;\n" },
		{ "{\"$ref\":\"other.json#/x\"}", "type Root = unknown;\n" },
		{ "{\"type\":\"object\",\"properties\":[1]}", "type Root = unknown;\n" },
		{ "{\"anyOf\":{}}", "type Root = unknown;\n" },
		{ "{\"type\":5}", "type Root = unknown;\n" },
		{ "[1,2", "type Root = unknown;\n" },
		{ "", "type Root = unknown;\n" },
		{ "42", "type Root = unknown;\n" },
	};
	for (size_t i = 0; i < SL_COUNT(cases); i++)
		check_ts(cases[i][0], cases[i][1]);
}

TEST(discovery_ts_depth_limit_and_size)
{
	/* 200 levels of arrays: unknown below the limit, no crash. */
	char s[16384];
	size_t l = 0;
	for (int i = 0; i < 200; i++)
		l += (size_t)snprintf(s + l, sizeof(s) - l, "{\"type\":\"array\",\"items\":");
	l += (size_t)snprintf(s + l, sizeof(s) - l, "{\"type\":\"string\"}");
	for (int i = 0; i < 200; i++)
		s[l++] = '}';
	s[l] = '\0';
	char *t = ts_of(s);
	CHECK(strstr(t, "unknown[]") != NULL);
	CHECK(strstr(t, "string") == NULL);
	free(t);
}

static char *fixture(const char *name, size_t *len)
{
	const char *slash = strrchr(__FILE__, '/');
	char path[512];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%.*s../fixtures/schemas/%s",
		 slash ? (int)(slash - __FILE__ + 1) : 0, __FILE__, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	*len = fread(buf, 1, (size_t)n, f);
	fclose(f);
	return buf;
}

TEST(discovery_ts_corpus)
{
	/* Which fixtures translate and which are unknown; tsc checks the rest
	 * (tests/e2e/discovery.test.mjs). */
	static const struct { const char *file; const char *has; } corpus[] = {
		{ "ref-defs.json", "owner: User;" },
		{ "recursive-tree.json", "children: Node[];" },
		{ "root-recursion.json", "sub?: Root[];" },
		{ "json-value.json", "type Json = string | number | boolean | null | Json[] | {" },
		{ "unions.json", "list?: (string | number)[];" },
		{ "allof.json", "{id: string} & {created?: string}" },
		{ "enums-consts.json", "big?: 123456789012345678901234567890;" },
		{ "tuples.json", "rest?: [string, boolean, ...number[]];" },
		{ "nullable.json", "c?: C | null;" },
		{ "additional.json", "[key: string]: boolean | string | number | undefined;" },
		{ "quoted-keys.json", "\"kebab-case\": string;" },
		{ "descriptions.json", "/** Line one. Line two with *\\/ inside and /* opener. */" },
		{ "booleans.json", "nothing?: never;" },
		{ "escaped-pointer.json", "Promise?: PromiseType;" },
		{ "deep.json", "a?: unknown;" },
		{ "zod-style.json", "oldText: string;" },
		{ "type-list-object.json", "value?: number[] | string;" },
		{ "name-clash.json", "c?: ArrayType;" },
		{ "not-translatable.json", NULL },
		{ "external-ref.json", NULL },
		{ "missing-ref.json", NULL },
		{ "ref-cycle.json", NULL },
	};
	for (size_t i = 0; i < SL_COUNT(corpus); i++) {
		size_t len, n;
		char *s = fixture(corpus[i].file, &len), *t;
		CHECK(s != NULL);
		if (!s)
			continue;
		t = sl_ts_from_json(s, len, &n);
		if (corpus[i].has ? !strstr(t, corpus[i].has) : strcmp(t, "type Root = unknown;\n") != 0)
			fprintf(stderr, "%s:\n%s\n", corpus[i].file, t);
		if (corpus[i].has)
			CHECK(strstr(t, corpus[i].has) != NULL);
		else
			CHECK_STR(t, "type Root = unknown;\n");
		free(t);
		free(s);
	}
}

TEST(discovery_ts_names_are_unique_and_failures_withdrawn)
{
	static const char sa[] = "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\"}}}";
	static const char sbad[] = "{\"type\":\"object\",\"properties\":{\"u\":{\"$ref\":\"#/$defs/U\"},"
				   "\"z\":{\"type\":\"nope\"}},\"$defs\":{\"U\":{\"type\":\"string\"}}}";
	yyjson_doc *a = yyjson_read(sa, strlen(sa), 0), *bad = yyjson_read(sbad, strlen(sbad), 0);
	struct sl_ts *ts = sl_ts_new(false);
	struct sl_buf b;
	char *t1, *t2, *t3;

	CHECK(a && bad);
	t1 = sl_ts_type(ts, yyjson_doc_get_root(a), yyjson_doc_get_root(a), "get_thing", NULL);
	t2 = sl_ts_type(ts, yyjson_doc_get_root(a), yyjson_doc_get_root(a), "get_thing", NULL);
	t3 = sl_ts_type(ts, yyjson_doc_get_root(bad), yyjson_doc_get_root(bad), "bad", NULL);
	CHECK_STR(t1, "GetThing");
	CHECK_STR(t2, "GetThing2");
	CHECK(t3 == NULL);
	sl_buf_init(&b, 1 << 16);
	CHECK_INT(sl_ts_decls(ts, &b, true), 0);
	CHECK_STR(b.data, "export interface GetThing {x?: string}\nexport interface GetThing2 {x?: string}\n");
	sl_buf_dispose(&b);
	free(t1);
	free(t2);
	sl_ts_free(ts);
	yyjson_doc_free(a);
	yyjson_doc_free(bad);
}

/* ---- inference -------------------------------------------------------------- */

static char *inferred(const char *json)
{
	yyjson_doc *d = yyjson_read(json, strlen(json), 0);
	yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *v = yyjson_val_mut_copy(m, yyjson_doc_get_root(d));
	char *s = sl_json_write_mut_val(sl_infer_schema(m, v), NULL);
	yyjson_mut_doc_free(m);
	yyjson_doc_free(d);
	return s;
}

TEST(discovery_infer_schema_from_values)
{
	char *s = inferred("[{\"a\":1,\"b\":\"x\"},{\"a\":2,\"c\":null},{\"a\":3,\"b\":null}]");
	CHECK_STR(s, "{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
		  "\"number\"},\"b\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]},\"c\":{\"type\":"
		  "\"null\"}},\"required\":[\"a\"]}}");
	free(s);
	s = inferred("[]");
	CHECK_STR(s, "{\"type\":\"array\"}");
	free(s);
	s = inferred("\"text\"");
	CHECK_STR(s, "{\"type\":\"string\"}");
	free(s);
	/* Deep values stop at the depth limit. */
	s = inferred("{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":1}}}}}}}}");
	CHECK(strstr(s, "\"number\"") == NULL);
	free(s);
}

TEST(discovery_infer_records_first_results_per_tool)
{
	static const char *const results[] = {
		"{\"content\":[{\"type\":\"text\",\"text\":\"[{\\\"id\\\":1,\\\"name\\\":\\\"a\\\"}]\"}]}",
		"{\"content\":[],\"structuredContent\":{\"x\":true}}",
		"{\"content\":[{\"type\":\"text\",\"text\":\"[{\\\"id\\\":2}]\"}]}",
		"{\"content\":[{\"type\":\"text\",\"text\":\"[{\\\"id\\\":\\\"late\\\"}]\"}]}",
	};
	yyjson_doc *d[4];
	unsigned n = 0;
	struct sl_infer *in = sl_infer_new();

	CHECK(sl_infer_get(in, "srv", "list", NULL) == NULL);
	for (size_t i = 0; i < 4; i++)
		d[i] = yyjson_read(results[i], strlen(results[i]), 0);
	sl_infer_record(in, "srv", "list", yyjson_doc_get_root(d[0]));
	CHECK_STR(sl_infer_get(in, "srv", "list", &n), "{\"type\":\"array\",\"items\":{\"type\":\"object\","
		  "\"properties\":{\"id\":{\"type\":\"number\"},\"name\":{\"type\":\"string\"}},\"required\":"
		  "[\"id\",\"name\"]}}");
	CHECK_INT(n, 1);
	sl_infer_record(in, "srv", "other", yyjson_doc_get_root(d[1]));
	CHECK_STR(sl_infer_get(in, "srv", "other", NULL), "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":"
		  "\"boolean\"}},\"required\":[\"x\"]}");
	sl_infer_record(in, "srv", "list", yyjson_doc_get_root(d[2]));
	CHECK(strstr(sl_infer_get(in, "srv", "list", &n), "\"required\":[\"id\"]") != NULL);
	CHECK_INT(n, 2);
	/* Only the first SL_INFER_SAMPLES results count. */
	sl_infer_record(in, "srv", "list", yyjson_doc_get_root(d[2]));
	sl_infer_record(in, "srv", "list", yyjson_doc_get_root(d[3]));
	CHECK_INT(SL_INFER_SAMPLES, 3);
	CHECK(strstr(sl_infer_get(in, "srv", "list", &n), "\"id\":{\"type\":\"number\"}") != NULL);
	CHECK_INT(n, 3);
	sl_infer_free(in);
	for (size_t i = 0; i < 4; i++)
		yyjson_doc_free(d[i]);
}

/* Found by the schema fuzz target: an object schema without "properties"
 * (only additionalProperties, inside anyOf and a $ref cycle) walked its
 * properties from a NULL pointer, undefined behaviour that UBSan reports
 * (make test SAN=address,undefined runs this). */
TEST(discovery_ts_object_without_properties)
{
	const char *s = "{\"$defs\":{\"Json\":{\"anyOf\":[{\"type\":\"string\"},"
			"{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/Json\"}},"
			"{\"type\":\"object\",\"additionalProperties\":{\"$ref\":\"#/$defs/Json\"}}]}},"
			"\"type\":\"object\",\"additionalProperties\":{\"type\":\"number\"},"
			"\"properties\":{\"data\":{\"$ref\":\"#/$defs/Json\"}}}";
	size_t n;
	char *t = sl_ts_from_json(s, strlen(s), &n);
	CHECK(strstr(t, "[key: string]: number") != NULL);
	CHECK(strstr(t, "data?: Json") != NULL);
	CHECK(strstr(t, "type Json = ") != NULL);
	free(t);
	t = sl_ts_from_json("{\"type\":\"object\"}", 17, &n);
	CHECK_STR(t, "interface Root {\n  [key: string]: unknown;\n}\n");
	free(t);
}

/* Line and paragraph separators (and C1 controls) never reach a generated
 * line raw: a "//" comment would end at U+2028, leaving invalid TypeScript. */
TEST(discovery_ts_separators_do_not_break_lines)
{
	struct sl_buf b;
	char *d = sl_ts_doc("Reads a file.\xe2\x80\xa8" "Then\xe2\x80\xa9more\xc2\x85" "end");
	CHECK_STR(d, "Reads a file. Then more end");
	free(d);
	CHECK(sl_ts_doc("\xe2\x80\xa8\xe2\x80\xa9") == NULL);
	sl_buf_init(&b, 256);
	CHECK(sl_ts_quote(&b, "a\xe2\x80\xa8" "b\xe2\x80\xa9" "c\xe2\x82\xac") == 0);
	CHECK(b.len == 20 && memcmp(b.data, "\"a\\u2028b\\u2029c\xe2\x82\xac\"", 20) == 0);
	sl_buf_dispose(&b);
	CHECK_INT(sl_ts_break("\xe2\x80\xa8"), 3);
	CHECK_INT(sl_ts_break("\xe2\x82\xac"), 0); /* the euro sign is text */
}

/* "did you mean": one or two edits, at most a third of the asked name. */
TEST(discovery_close_names)
{
	CHECK(sl_discovery_distance("list_isues", "list_issues") == 1);
	CHECK(sl_discovery_distance("lsit_issues", "list_issues") == 2);
	CHECK(sl_discovery_distance("list_issues", "list_issues") == SIZE_MAX);
	CHECK(sl_discovery_distance("merge_pull_request", "get_pull_request") == SIZE_MAX);
	CHECK(sl_discovery_distance("ab", "ac") == SIZE_MAX);
	CHECK(sl_discovery_distance("ech", "echo") == 1);
	char longer[80];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[79] = '\0';
	CHECK(sl_discovery_distance(longer, longer + 1) == SIZE_MAX);
}

/*
 * github.c: the fake GitHub back end.
 *
 * Data: five repositories under the owner "acme" (api, web, infra, mobile,
 * docs).  Each has 20 issues (300 with --large-results), numbered from 1,
 * twelve pull requests numbered 401..412, a few files and 25 commits.
 * Comment counts are skewed towards zero; in each repository three issues
 * stand out with 200-r, 180-r and 160-r comments (r the repository index), so
 * the most commented issues are well defined, per repository and overall.
 *
 * Cross-back-end join: five pull requests name Jira tickets, always and only
 * OPS-2, OPS-3, OPS-5, OPS-7 and OPS-8 (see jira_refs), in the title
 * ("OPS-3: ...") and the body ("Fixes OPS-3.").  No other text names OPS-.
 * search_pull_requests finds them by key (whole words, so OPS-1 finds none).
 *
 * Writes (create_issue, add_comment, merge_pull_request) answer as GitHub
 * would but change nothing: every call sees the same data.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"

#define OWNER    "acme"
#define NREPOS   5
#define NPULLS   12
#define PR_BASE  400
#define NCOMMITS 25

static const struct repo {
	const char *name;
	const char *description;
	const char *language;
	int stars, forks;
	const char *components[6];
} repos[NREPOS] = {
	{ "api", "Public REST and GraphQL API of the Acme platform", "Go", 1840, 212,
	  { "rate limiter", "auth middleware", "pagination", "webhook delivery",
	    "GraphQL resolver", "billing endpoint" } },
	{ "web", "Customer-facing web application", "TypeScript", 960, 140,
	  { "checkout page", "login form", "dashboard charts", "settings panel",
	    "search box", "dark mode" } },
	{ "infra", "Terraform modules and Kubernetes manifests", "HCL", 310, 45,
	  { "ingress controller", "database backups", "autoscaling policy",
	    "secrets rotation", "CI runners", "DNS records" } },
	{ "mobile", "iOS and Android application", "Kotlin", 720, 88,
	  { "push notifications", "offline sync", "onboarding flow", "image cache",
	    "deep links", "crash reporter" } },
	{ "docs", "Developer documentation site", "MDX", 150, 60,
	  { "API reference", "quickstart guide", "SDK examples", "changelog page",
	    "search index", "navigation sidebar" } },
};

static const char *const logins[] = {
	"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi",
	"ivan", "judy", "mallory", "oscar",
};

static const struct label {
	const char *name, *color;
} labels[] = {
	{ "bug", "d73a4a" }, { "enhancement", "a2eeef" }, { "documentation", "0075ca" },
	{ "good first issue", "7057ff" }, { "help wanted", "008672" },
	{ "performance", "fbca04" }, { "security", "b60205" }, { "needs triage", "ededed" },
};
#define NLABELS (sizeof(labels) / sizeof(labels[0]))

static const char *const verbs[] = {
	"Fix", "Investigate", "Improve", "Add tests for", "Refactor", "Document",
	"Speed up", "Harden",
};
static const char *const qualifiers[] = {
	"on large payloads", "for enterprise tenants", "after the v2 upgrade",
	"in staging", "under load", "when the cache is cold", "on slow networks",
	"for new accounts",
};

/* The pull requests that name Jira tickets: repository, PR index, ticket. */
static const struct jira_ref {
	int repo, pr, ticket;
} jira_refs[] = {
	{ 0, 2, 3 }, { 0, 7, 8 }, { 1, 5, 7 }, { 2, 1, 2 }, { 3, 4, 5 },
};

static int issue_count(const struct cat_server *srv)
{
	return srv->large ? 300 : 20;
}

/* ---- lookups ---------------------------------------------------------------- */

static int find_repo(struct cat_req *rq)
{
	const char *owner = cat_arg_str(rq, "owner", "");
	const char *name = cat_arg_str(rq, "repo", "");
	for (int i = 0; i < NREPOS && !strcmp(owner, OWNER); i++)
		if (!strcmp(repos[i].name, name))
			return i;
	cat_fail(rq, "Not Found: repository %.100s/%.100s does not exist", owner, name);
	return -1;
}

/* The three standout issues of a repository, by comment count. */
static void top_issues(const struct cat_server *srv, int r, int top[3])
{
	struct cat_rng rng;
	int n = issue_count(srv);
	cat_rng_seed(&rng, "github top acme/%s %d", repos[r].name, n);
	for (int k = 0; k < 3; k++) {
		int v;
		do
			v = (int)cat_rng_range(&rng, 1, n);
		while ((k > 0 && v == top[0]) || (k > 1 && v == top[1]));
		top[k] = v;
	}
}

static int64_t comment_count(const struct cat_server *srv, int r, int number,
			     struct cat_rng *rng)
{
	int top[3];
	top_issues(srv, r, top);
	for (int k = 0; k < 3; k++)
		if (top[k] == number)
			return 200 - 20 * k - r;
	/* Most issues see little discussion, some a lot. */
	return cat_rng_range(rng, 0, 99) < 70 ? cat_rng_range(rng, 0, 12)
					       : cat_rng_range(rng, 13, 140);
}

static void add_user(yyjson_mut_doc *doc, yyjson_mut_val *o, const char *key,
		     const char *login)
{
	yyjson_mut_val *u = yyjson_mut_obj_add_obj(doc, o, key);
	yyjson_mut_obj_add_strcpy(doc, u, "login", login);
	char url[128];
	snprintf(url, sizeof(url), "https://github.com/%.64s", login ? login : "ghost");
	yyjson_mut_obj_add_strcpy(doc, u, "html_url", url);
}

/* ---- records ---------------------------------------------------------------- */

struct issue_info {
	bool open;
	int64_t comments;
	unsigned labels;   /* bit set over labels[] */
	int64_t created, updated;
};

static struct issue_info issue_info(const struct cat_server *srv, int r,
				    int number, struct cat_rng *rng)
{
	struct issue_info in;
	cat_rng_seed(rng, "github issue acme/%s %d", repos[r].name, number);
	in.open = cat_rng_range(rng, 0, 9) < 6;
	in.comments = comment_count(srv, r, number, rng);
	in.labels = 0;
	int nl = (int)cat_rng_range(rng, 0, 3);
	for (int k = 0; k < nl; k++)
		in.labels |= 1u << cat_rng_range(rng, 0, NLABELS - 1);
	/* Higher numbers are newer: spread over 2024 and the first half of 2025. */
	int64_t span = 540LL * 86400;
	in.created = CAT_EPOCH_2024 + span * number / (issue_count(srv) + 1) +
		     cat_rng_range(rng, 0, 86400);
	in.updated = in.created + cat_rng_range(rng, 3600, 45LL * 86400);
	return in;
}

static yyjson_mut_val *make_issue(const struct cat_server *srv, yyjson_mut_doc *doc,
				  int r, int number)
{
	struct cat_rng rng;
	struct issue_info in = issue_info(srv, r, number, &rng);
	const struct repo *rp = &repos[r];
	const char *component = CAT_PICK(&rng, rp->components);
	char title[200], body[800], url[160], created[32], updated[32];
	snprintf(title, sizeof(title), "%s %s %s", CAT_PICK(&rng, verbs), component,
		 CAT_PICK(&rng, qualifiers));
	body[0] = '\0';
	cat_prose(&rng, body, sizeof(body), (size_t)cat_rng_range(&rng, 280, 500), component);
	snprintf(url, sizeof(url), "https://github.com/" OWNER "/%s/issues/%d", rp->name, number);
	cat_iso_date(created, in.created);
	cat_iso_date(updated, in.updated);

	yyjson_mut_val *o = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_int(doc, o, "id", 10000000 + r * 100000 + number);
	yyjson_mut_obj_add_int(doc, o, "number", number);
	yyjson_mut_obj_add_strcpy(doc, o, "title", title);
	yyjson_mut_obj_add_strcpy(doc, o, "body", body);
	yyjson_mut_obj_add_str(doc, o, "state", in.open ? "open" : "closed");
	yyjson_mut_val *ls = yyjson_mut_obj_add_arr(doc, o, "labels");
	for (size_t k = 0; k < NLABELS; k++) {
		if (!(in.labels & (1u << k)))
			continue;
		yyjson_mut_val *l = yyjson_mut_arr_add_obj(doc, ls);
		yyjson_mut_obj_add_str(doc, l, "name", labels[k].name);
		yyjson_mut_obj_add_str(doc, l, "color", labels[k].color);
	}
	yyjson_mut_obj_add_int(doc, o, "comments", in.comments);
	add_user(doc, o, "user", CAT_PICK(&rng, logins));
	if (cat_rng_range(&rng, 0, 2) == 0)
		yyjson_mut_obj_add_null(doc, o, "assignee");
	else
		add_user(doc, o, "assignee", CAT_PICK(&rng, logins));
	yyjson_mut_obj_add_strcpy(doc, o, "created_at", created);
	yyjson_mut_obj_add_strcpy(doc, o, "updated_at", updated);
	if (in.open)
		yyjson_mut_obj_add_null(doc, o, "closed_at");
	else
		yyjson_mut_obj_add_strcpy(doc, o, "closed_at", updated);
	yyjson_mut_obj_add_strcpy(doc, o, "html_url", url);
	return o;
}

static const struct jira_ref *pr_ref(int r, int i)
{
	for (size_t k = 0; k < sizeof(jira_refs) / sizeof(jira_refs[0]); k++)
		if (jira_refs[k].repo == r && jira_refs[k].pr == i)
			return &jira_refs[k];
	return NULL;
}

struct pr_info {
	bool open, merged;
};

static struct pr_info pr_info(int r, int i)
{
	struct cat_rng rng;
	cat_rng_seed(&rng, "github pr state acme/%s %d", repos[r].name, i);
	struct pr_info p = { .open = i > NPULLS - 4 };
	p.merged = !p.open && cat_rng_range(&rng, 0, 3) != 0;
	return p;
}

static yyjson_mut_val *make_pull(yyjson_mut_doc *doc, int r, int i)
{
	struct cat_rng rng;
	const struct repo *rp = &repos[r];
	const struct jira_ref *ref = pr_ref(r, i);
	struct pr_info st = pr_info(r, i);
	int number = PR_BASE + i;
	cat_rng_seed(&rng, "github pr acme/%s %d", rp->name, i);
	const char *component = CAT_PICK(&rng, rp->components);
	char title[200], body[900], url[160], created[32], updated[32], ref_name[80];
	char head_sha[41], key[16] = "";
	if (ref)
		snprintf(key, sizeof(key), "OPS-%d", ref->ticket);
	snprintf(title, sizeof(title), "%s%s%s %s %s", key, ref ? ": " : "",
		 CAT_PICK(&rng, verbs), component, CAT_PICK(&rng, qualifiers));
	if (ref)
		snprintf(body, sizeof(body), "Fixes %s.", key);
	else
		body[0] = '\0';
	cat_prose(&rng, body, sizeof(body), (size_t)cat_rng_range(&rng, 250, 450), component);
	snprintf(url, sizeof(url), "https://github.com/" OWNER "/%s/pull/%d", rp->name, number);
	snprintf(ref_name, sizeof(ref_name), "%s/%s-%d", CAT_PICK(&rng, logins),
		 rp->name, number);
	int64_t t = CAT_EPOCH_2024 + 400LL * 86400 + i * 3LL * 86400 +
		    cat_rng_range(&rng, 0, 86400);
	cat_iso_date(created, t);
	cat_iso_date(updated, t + cat_rng_range(&rng, 3600, 6LL * 86400));
	cat_hex(&rng, head_sha, 40);

	yyjson_mut_val *o = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_int(doc, o, "id", 20000000 + r * 100000 + number);
	yyjson_mut_obj_add_int(doc, o, "number", number);
	yyjson_mut_obj_add_strcpy(doc, o, "title", title);
	yyjson_mut_obj_add_strcpy(doc, o, "body", body);
	yyjson_mut_obj_add_str(doc, o, "state", st.open ? "open" : "closed");
	yyjson_mut_obj_add_bool(doc, o, "merged", st.merged);
	yyjson_mut_obj_add_bool(doc, o, "draft", st.open && cat_rng_range(&rng, 0, 3) == 0);
	add_user(doc, o, "user", CAT_PICK(&rng, logins));
	yyjson_mut_val *head = yyjson_mut_obj_add_obj(doc, o, "head");
	yyjson_mut_obj_add_strcpy(doc, head, "ref", ref_name);
	yyjson_mut_obj_add_strcpy(doc, head, "sha", head_sha);
	yyjson_mut_val *base = yyjson_mut_obj_add_obj(doc, o, "base");
	yyjson_mut_obj_add_str(doc, base, "ref", "main");
	yyjson_mut_obj_add_int(doc, o, "additions", cat_rng_range(&rng, 1, 900));
	yyjson_mut_obj_add_int(doc, o, "deletions", cat_rng_range(&rng, 0, 400));
	yyjson_mut_obj_add_int(doc, o, "changed_files", cat_rng_range(&rng, 1, 30));
	yyjson_mut_obj_add_int(doc, o, "comments", cat_rng_range(&rng, 0, 25));
	yyjson_mut_obj_add_strcpy(doc, o, "created_at", created);
	yyjson_mut_obj_add_strcpy(doc, o, "updated_at", updated);
	if (st.merged)
		yyjson_mut_obj_add_strcpy(doc, o, "merged_at", updated);
	else
		yyjson_mut_obj_add_null(doc, o, "merged_at");
	yyjson_mut_obj_add_strcpy(doc, o, "html_url", url);
	return o;
}

/* Files: a README, one source file in the language of the repository, CI. */
static const char *const source_paths[NREPOS] = {
	"cmd/server/main.go", "src/app.ts", "modules/cluster/main.tf",
	"app/src/main/kotlin/com/acme/MainActivity.kt", "docs/index.mdx",
};

static const char *const source_bodies[NREPOS] = {
	"package main\n\nimport (\n\t\"log\"\n\t\"net/http\"\n)\n\n"
	"// rateLimiter allows 100 requests per second per API key.\n"
	"func rateLimiter(next http.Handler) http.Handler {\n\treturn next // TODO: enforce limits\n}\n\n"
	"func main() {\n\tlog.Fatal(http.ListenAndServe(\":8080\", rateLimiter(http.DefaultServeMux)))\n}\n",
	"import { createApp } from './framework';\n\n"
	"// The checkout page loads lazily to keep the first paint fast.\n"
	"export const app = createApp({ routes: ['/', '/checkout', '/settings'] });\n"
	"// TODO: remove the legacy login form once SSO ships.\n",
	"module \"cluster\" {\n  source       = \"../eks\"\n  node_count   = 6\n"
	"  # TODO: tune the autoscaling policy for the nightly batch jobs\n  min_nodes    = 3\n}\n",
	"package com.acme\n\nclass MainActivity : AppCompatActivity() {\n"
	"    // Push notifications are registered after the onboarding flow.\n"
	"    override fun onCreate(state: Bundle?) {\n        super.onCreate(state)\n"
	"        // TODO: restore offline sync state\n    }\n}\n",
	"---\ntitle: Acme developer documentation\n---\n\n"
	"# Welcome\n\nStart with the quickstart guide, then read the API reference.\n",
};

static const char *file_content(int r, const char *path, char *buf, size_t cap)
{
	const struct repo *rp = &repos[r];
	if (!strcmp(path, "README.md"))
		snprintf(buf, cap,
			 "# " OWNER "/%s\n\n%s.\n\n## Getting started\n\n```\nmake setup\nmake test\n```\n\n"
			 "Written in %s. Issues and pull requests welcome.\n",
			 rp->name, rp->description, rp->language);
	else if (!strcmp(path, ".github/workflows/ci.yml"))
		snprintf(buf, cap,
			 "name: ci\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
			 "    steps:\n      - uses: actions/checkout@v4\n      - run: make test  # %s\n",
			 rp->name);
	else if (!strcmp(path, source_paths[r]))
		snprintf(buf, cap, "%s", source_bodies[r]);
	else
		return NULL;
	return buf;
}

static const char *const common_paths[] = { "README.md", ".github/workflows/ci.yml" };

static yyjson_mut_val *make_file(yyjson_mut_doc *doc, int r, const char *path,
				 const char *content, bool with_content)
{
	struct cat_rng rng;
	char sha[41], url[300];
	cat_rng_seed(&rng, "github file acme/%s %s", repos[r].name, path);
	cat_hex(&rng, sha, 40);
	snprintf(url, sizeof(url), "https://github.com/" OWNER "/%s/blob/main/%s",
		 repos[r].name, path);
	const char *slash = strrchr(path, '/');
	yyjson_mut_val *o = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_str(doc, o, "type", "file");
	yyjson_mut_obj_add_strcpy(doc, o, "name", slash ? slash + 1 : path);
	yyjson_mut_obj_add_strcpy(doc, o, "path", path);
	yyjson_mut_obj_add_strcpy(doc, o, "sha", sha);
	yyjson_mut_obj_add_uint(doc, o, "size", strlen(content));
	yyjson_mut_obj_add_strcpy(doc, o, "html_url", url);
	if (with_content) {
		yyjson_mut_obj_add_str(doc, o, "encoding", "utf-8");
		yyjson_mut_obj_add_strcpy(doc, o, "content", content);
	}
	return o;
}

/* ---- handlers --------------------------------------------------------------- */

static yyjson_mut_val *make_repo(yyjson_mut_doc *doc, const struct cat_server *srv, int r)
{
	const struct repo *rp = &repos[r];
	char full[64], url[128];
	snprintf(full, sizeof(full), OWNER "/%s", rp->name);
	snprintf(url, sizeof(url), "https://github.com/%s", full);
	int open = 0;
	struct cat_rng rng;
	for (int n = 1; n <= issue_count(srv); n++)
		open += issue_info(srv, r, n, &rng).open;
	yyjson_mut_val *o = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_int(doc, o, "id", 5000 + r);
	yyjson_mut_obj_add_str(doc, o, "name", rp->name);
	yyjson_mut_obj_add_strcpy(doc, o, "full_name", full);
	yyjson_mut_obj_add_str(doc, o, "description", rp->description);
	yyjson_mut_obj_add_bool(doc, o, "private", r == 2);
	yyjson_mut_obj_add_str(doc, o, "language", rp->language);
	yyjson_mut_obj_add_int(doc, o, "stargazers_count", rp->stars);
	yyjson_mut_obj_add_int(doc, o, "forks_count", rp->forks);
	yyjson_mut_obj_add_int(doc, o, "open_issues_count", open);
	yyjson_mut_obj_add_str(doc, o, "default_branch", "main");
	yyjson_mut_obj_add_strcpy(doc, o, "html_url", url);
	return o;
}

static int list_repos(struct cat_req *rq)
{
	const char *owner = cat_arg_str(rq, "owner", OWNER);
	const char *type = cat_arg_str(rq, "type", "all");
	if (strcmp(owner, OWNER)) {
		cat_fail(rq, "Not Found: no organization or user %.100s", owner);
		return CAT_OK;
	}
	rq->data = yyjson_mut_arr(rq->doc);
	for (int r = 0; r < NREPOS; r++) {
		bool priv = r == 2;
		if ((!strcmp(type, "public") && priv) || (!strcmp(type, "private") && !priv))
			continue;
		yyjson_mut_arr_append(rq->data, make_repo(rq->doc, rq->srv, r));
	}
	return CAT_OK;
}

static bool has_labels(struct cat_req *rq, unsigned set)
{
	yyjson_val *want = yyjson_obj_get(rq->args, "labels");
	size_t i, n;
	yyjson_val *v;
	yyjson_arr_foreach(want, i, n, v) {
		bool found = false;
		for (size_t k = 0; k < NLABELS; k++)
			if ((set & (1u << k)) && !strcasecmp(labels[k].name, yyjson_get_str(v)))
				found = true;
		if (!found)
			return false;
	}
	return true;
}

struct sort_key {
	int number;
	int64_t key;
};

static int cmp_desc(const void *a, const void *b)
{
	const struct sort_key *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? 1 : -1;
	return y->number - x->number;
}

static int list_issues(struct cat_req *rq)
{
	int r = find_repo(rq);
	if (r < 0)
		return CAT_OK;
	const char *state = cat_arg_str(rq, "state", "all");
	const char *sort = cat_arg_str(rq, "sort", "created");
	bool asc = !strcmp(cat_arg_str(rq, "direction", "desc"), "asc");
	int64_t per_page = cat_arg_int(rq, "per_page", 0);
	int64_t page = cat_arg_int(rq, "page", 1);
	int n = issue_count(rq->srv);
	struct sort_key *keys = cat_xmalloc(sizeof(*keys) * (size_t)n);
	size_t nk = 0;
	struct cat_rng rng;
	for (int number = 1; number <= n; number++) {
		struct issue_info in = issue_info(rq->srv, r, number, &rng);
		if ((!strcmp(state, "open") && !in.open) || (!strcmp(state, "closed") && in.open))
			continue;
		if (!has_labels(rq, in.labels))
			continue;
		int64_t key = !strcmp(sort, "comments") ? in.comments
			    : !strcmp(sort, "updated") ? in.updated : in.created;
		keys[nk++] = (struct sort_key){ number, key };
	}
	qsort(keys, nk, sizeof(*keys), cmp_desc);
	for (size_t k = 0; asc && k < nk / 2; k++) {
		struct sort_key t = keys[k];
		keys[k] = keys[nk - 1 - k];
		keys[nk - 1 - k] = t;
	}
	size_t from = 0, to = nk;
	if (per_page > 0) {
		from = (size_t)((page - 1) * per_page);
		to = from + (size_t)per_page;
		if (from > nk)
			from = nk;
		if (to > nk)
			to = nk;
	}
	rq->data = yyjson_mut_arr(rq->doc);
	for (size_t k = from; k < to; k++)
		yyjson_mut_arr_append(rq->data, make_issue(rq->srv, rq->doc, r, keys[k].number));
	free(keys);
	return CAT_OK;
}

static int get_issue(struct cat_req *rq)
{
	int r = find_repo(rq);
	if (r < 0)
		return CAT_OK;
	int64_t number = cat_arg_int(rq, "issue_number", 0);
	if (number < 1 || number > issue_count(rq->srv)) {
		cat_fail(rq, "Not Found: issue #%lld does not exist in acme/%s",
			 (long long)number, repos[r].name);
		return CAT_OK;
	}
	rq->data = make_issue(rq->srv, rq->doc, r, (int)number);
	return CAT_OK;
}

static int create_issue(struct cat_req *rq)
{
	int r = find_repo(rq);
	if (r < 0)
		return CAT_OK;
	yyjson_mut_doc *doc = rq->doc;
	int number = issue_count(rq->srv) + 1;
	char url[160];
	snprintf(url, sizeof(url), "https://github.com/" OWNER "/%s/issues/%d",
		 repos[r].name, number);
	yyjson_mut_val *o = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_int(doc, o, "id", 10000000 + r * 100000 + number);
	yyjson_mut_obj_add_int(doc, o, "number", number);
	yyjson_mut_obj_add_strcpy(doc, o, "title", cat_arg_str(rq, "title", ""));
	yyjson_mut_obj_add_strcpy(doc, o, "body", cat_arg_str(rq, "body", ""));
	yyjson_mut_obj_add_str(doc, o, "state", "open");
	yyjson_mut_val *ls = yyjson_mut_obj_add_arr(doc, o, "labels");
	size_t i, n;
	yyjson_val *v;
	yyjson_arr_foreach(yyjson_obj_get(rq->args, "labels"), i, n, v) {
		yyjson_mut_val *l = yyjson_mut_arr_add_obj(doc, ls);
		yyjson_mut_obj_add_strcpy(doc, l, "name", yyjson_get_str(v));
		yyjson_mut_obj_add_str(doc, l, "color", "ededed");
	}
	yyjson_mut_obj_add_int(doc, o, "comments", 0);
	add_user(doc, o, "user", "catalog-bot");
	yyjson_mut_obj_add_str(doc, o, "created_at", "2025-07-01T12:00:00Z");
	yyjson_mut_obj_add_str(doc, o, "updated_at", "2025-07-01T12:00:00Z");
	yyjson_mut_obj_add_strcpy(doc, o, "html_url", url);
	rq->data = o;
	return CAT_OK;
}

static int add_comment(struct cat_req *rq)
{
	int r = find_repo(rq);
	if (r < 0)
		return CAT_OK;
	int64_t number = cat_arg_int(rq, "issue_number", 0);
	bool is_pull = number > PR_BASE && number <= PR_BASE + NPULLS;
	if ((number < 1 || number > issue_count(rq->srv)) && !is_pull) {
		cat_fail(rq, "Not Found: issue #%lld does not exist in acme/%s",
			 (long long)number, repos[r].name);
		return CAT_OK;
	}
	yyjson_mut_doc *doc = rq->doc;
	char url[200];
	snprintf(url, sizeof(url), "https://github.com/" OWNER "/%s/issues/%lld#issuecomment-900001",
		 repos[r].name, (long long)number);
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_int(doc, rq->data, "id", 900001);
	yyjson_mut_obj_add_int(doc, rq->data, "issue_number", number);
	yyjson_mut_obj_add_strcpy(doc, rq->data, "body", cat_arg_str(rq, "body", ""));
	add_user(doc, rq->data, "user", "catalog-bot");
	yyjson_mut_obj_add_str(doc, rq->data, "created_at", "2025-07-01T12:00:00Z");
	yyjson_mut_obj_add_strcpy(doc, rq->data, "html_url", url);
	return CAT_OK;
}

static int list_pull_requests(struct cat_req *rq)
{
	int r = find_repo(rq);
	if (r < 0)
		return CAT_OK;
	const char *state = cat_arg_str(rq, "state", "open");
	const char *base = cat_arg_str(rq, "base", "main");
	int64_t per_page = cat_arg_int(rq, "per_page", 30);
	rq->data = yyjson_mut_arr(rq->doc);
	if (strcmp(base, "main"))
		return CAT_OK;
	int64_t count = 0;
	for (int i = NPULLS; i >= 1 && count < per_page; i--) {
		struct pr_info st = pr_info(r, i);
		if ((!strcmp(state, "open") && !st.open) || (!strcmp(state, "closed") && st.open))
			continue;
		yyjson_mut_arr_append(rq->data, make_pull(rq->doc, r, i));
		count++;
	}
	return CAT_OK;
}

static int pull_index(struct cat_req *rq, int r)
{
	int64_t number = cat_arg_int(rq, "pull_number", 0);
	if (number <= PR_BASE || number > PR_BASE + NPULLS) {
		cat_fail(rq, "Not Found: pull request #%lld does not exist in acme/%s",
			 (long long)number, repos[r].name);
		return -1;
	}
	return (int)(number - PR_BASE);
}

static int get_pull_request(struct cat_req *rq)
{
	int r = find_repo(rq), i;
	if (r < 0 || (i = pull_index(rq, r)) < 0)
		return CAT_OK;
	rq->data = make_pull(rq->doc, r, i);
	return CAT_OK;
}

static int merge_pull_request(struct cat_req *rq)
{
	int r = find_repo(rq), i;
	if (r < 0 || (i = pull_index(rq, r)) < 0)
		return CAT_OK;
	struct pr_info st = pr_info(r, i);
	if (!st.open) {
		cat_fail(rq, "Pull request #%d is not mergeable: it is already %s",
			 PR_BASE + i, st.merged ? "merged" : "closed");
		return CAT_OK;
	}
	struct cat_rng rng;
	char sha[41];
	cat_rng_seed(&rng, "github merge acme/%s %d %s", repos[r].name, i,
		     cat_arg_str(rq, "merge_method", "merge"));
	cat_hex(&rng, sha, 40);
	rq->data = yyjson_mut_obj(rq->doc);
	yyjson_mut_obj_add_strcpy(rq->doc, rq->data, "sha", sha);
	yyjson_mut_obj_add_bool(rq->doc, rq->data, "merged", true);
	yyjson_mut_obj_add_str(rq->doc, rq->data, "message", "Pull Request successfully merged");
	return CAT_OK;
}

static bool contains_ci(const char *hay, const char *needle)
{
	return strcasestr(hay, needle) != NULL;
}

static int search_code(struct cat_req *rq)
{
	char q[512];
	snprintf(q, sizeof(q), "%s", cat_arg_str(rq, "q", ""));
	int64_t per_page = cat_arg_int(rq, "per_page", 30);
	/* Terms must all match; repo:owner/name and path:prefix qualify. */
	char *terms[16];
	int nterms = 0;
	const char *only_repo = NULL, *only_path = NULL;
	char *save = NULL;
	for (char *t = strtok_r(q, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (!strncmp(t, "repo:", 5))
			only_repo = t + 5;
		else if (!strncmp(t, "path:", 5))
			only_path = t + 5;
		else if (nterms < 16)
			terms[nterms++] = t;
	}
	if (!nterms && !only_repo && !only_path) {
		cat_fail(rq, "Validation Failed: the search query is empty");
		return CAT_OK;
	}
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_val *items = yyjson_mut_arr(doc);
	int64_t total = 0;
	char buf[2048], full[64];
	for (int r = 0; r < NREPOS; r++) {
		snprintf(full, sizeof(full), OWNER "/%s", repos[r].name);
		if (only_repo && strcmp(only_repo, full))
			continue;
		const char *paths[3] = { common_paths[0], common_paths[1], source_paths[r] };
		for (int f = 0; f < 3; f++) {
			const char *content = file_content(r, paths[f], buf, sizeof(buf));
			bool ok = !only_path || !strncmp(paths[f], only_path, strlen(only_path));
			for (int k = 0; ok && k < nterms; k++)
				ok = contains_ci(content, terms[k]) || contains_ci(paths[f], terms[k]);
			if (!ok)
				continue;
			total++;
			if (total > per_page)
				continue;
			yyjson_mut_val *it = make_file(doc, r, paths[f], content, false);
			yyjson_mut_val *repo = yyjson_mut_obj_add_obj(doc, it, "repository");
			yyjson_mut_obj_add_strcpy(doc, repo, "full_name", full);
			yyjson_mut_arr_append(items, it);
		}
	}
	yyjson_mut_obj_add_int(doc, rq->data, "total_count", total);
	yyjson_mut_obj_add_bool(doc, rq->data, "incomplete_results", false);
	yyjson_mut_obj_add_val(doc, rq->data, "items", items);
	return CAT_OK;
}

/* A term matches as a whole word: "OPS-1" must not find "OPS-10". */
static bool has_word_ci(const char *hay, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = hay; n && (p = strcasestr(p, word)); p++) {
		bool left = p == hay || !(isalnum((unsigned char)p[-1]) || p[-1] == '-');
		bool right = !(isalnum((unsigned char)p[n]) || p[n] == '-');
		if (left && right)
			return true;
	}
	return false;
}

/* Pull requests of every repository (or of repo:owner/name) whose title or
 * body holds every word of q, newest first per repository. */
static int search_pull_requests(struct cat_req *rq)
{
	char q[512];
	snprintf(q, sizeof(q), "%s", cat_arg_str(rq, "q", ""));
	int64_t per_page = cat_arg_int(rq, "per_page", 30);
	char *terms[16];
	int nterms = 0;
	const char *only_repo = NULL;
	char *save = NULL;
	for (char *t = strtok_r(q, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (!strncmp(t, "repo:", 5))
			only_repo = t + 5;
		else if (nterms < 16)
			terms[nterms++] = t;
	}
	if (!nterms) {
		cat_fail(rq, "Validation Failed: the search query has no words");
		return CAT_OK;
	}
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_val *items = yyjson_mut_arr(doc);
	int64_t total = 0;
	char full[64];
	for (int r = 0; r < NREPOS; r++) {
		snprintf(full, sizeof(full), OWNER "/%s", repos[r].name);
		if (only_repo && strcmp(only_repo, full))
			continue;
		for (int i = NPULLS; i >= 1; i--) {
			yyjson_mut_val *pr = make_pull(doc, r, i);
			const char *title = yyjson_mut_get_str(yyjson_mut_obj_get(pr, "title"));
			const char *body = yyjson_mut_get_str(yyjson_mut_obj_get(pr, "body"));
			bool ok = true;
			for (int k = 0; ok && k < nterms; k++)
				ok = has_word_ci(title, terms[k]) || has_word_ci(body, terms[k]);
			if (!ok || ++total > per_page)
				continue;
			yyjson_mut_val *repo = yyjson_mut_obj_add_obj(doc, pr, "repository");
			yyjson_mut_obj_add_strcpy(doc, repo, "full_name", full);
			yyjson_mut_arr_append(items, pr);
		}
	}
	yyjson_mut_obj_add_int(doc, rq->data, "total_count", total);
	yyjson_mut_obj_add_bool(doc, rq->data, "incomplete_results", false);
	yyjson_mut_obj_add_val(doc, rq->data, "items", items);
	return CAT_OK;
}

static int get_file_contents(struct cat_req *rq)
{
	int r = find_repo(rq);
	if (r < 0)
		return CAT_OK;
	const char *path = cat_arg_str(rq, "path", "");
	while (*path == '/')
		path++;
	char buf[2048];
	const char *content = file_content(r, path, buf, sizeof(buf));
	if (!content) {
		cat_fail(rq, "Not Found: %.200s does not exist in acme/%s", path,
			 repos[r].name);
		return CAT_OK;
	}
	rq->data = make_file(rq->doc, r, path, content, true);
	return CAT_OK;
}

static const char *const commit_subjects[] = {
	"Bump dependencies", "Fix flaky test", "Tidy up logging", "Add metrics",
	"Update README", "Handle empty responses", "Speed up CI", "Refactor config loading",
};

static int list_commits(struct cat_req *rq)
{
	int r = find_repo(rq);
	if (r < 0)
		return CAT_OK;
	int64_t per_page = cat_arg_int(rq, "per_page", 30);
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_arr(doc);
	for (int i = NCOMMITS; i >= 1 && NCOMMITS - i < per_page; i--) {
		struct cat_rng rng;
		cat_rng_seed(&rng, "github commit acme/%s %d", repos[r].name, i);
		char sha[41], date[32], email[64], url[160];
		cat_hex(&rng, sha, 40);
		const char *login = CAT_PICK(&rng, logins);
		cat_iso_date(date, CAT_EPOCH_2024 + 500LL * 86400 + i * 36000LL);
		snprintf(email, sizeof(email), "%s@acme.example", login);
		snprintf(url, sizeof(url), "https://github.com/" OWNER "/%s/commit/%s",
			 repos[r].name, sha);
		yyjson_mut_val *o = yyjson_mut_arr_add_obj(doc, rq->data);
		yyjson_mut_obj_add_strcpy(doc, o, "sha", sha);
		yyjson_mut_val *c = yyjson_mut_obj_add_obj(doc, o, "commit");
		yyjson_mut_obj_add_str(doc, c, "message", CAT_PICK(&rng, commit_subjects));
		yyjson_mut_val *a = yyjson_mut_obj_add_obj(doc, c, "author");
		yyjson_mut_obj_add_strcpy(doc, a, "name", login);
		yyjson_mut_obj_add_strcpy(doc, a, "email", email);
		yyjson_mut_obj_add_strcpy(doc, a, "date", date);
		add_user(doc, o, "author", login);
		yyjson_mut_obj_add_strcpy(doc, o, "html_url", url);
	}
	return CAT_OK;
}

static void stats(const struct cat_server *srv, yyjson_mut_doc *doc, yyjson_mut_val *o)
{
	yyjson_mut_obj_add_int(doc, o, "repositories", NREPOS);
	yyjson_mut_obj_add_int(doc, o, "issues_per_repository", issue_count(srv));
	yyjson_mut_obj_add_int(doc, o, "pull_requests_per_repository", NPULLS);
	yyjson_mut_obj_add_int(doc, o, "commits_per_repository", NCOMMITS);
}

/* ---- the table -------------------------------------------------------------- */

#define P_OWNER "'owner':{'type':'string','description':'Account owning the repository, e.g. acme.'}"
#define P_REPO  "'repo':{'type':'string','description':'Repository name without the owner, e.g. api.'}"
#define P_PER_PAGE "'per_page':{'type':'integer','minimum':1,'maximum':1000,'description':'Results per page.'}"

#define S_USER "{'type':'object','properties':{'login':{'type':'string'},'html_url':{'type':'string'}},'required':['login']}"
#define S_ISSUE "{'type':'object','properties':{" \
	"'id':{'type':'integer'},'number':{'type':'integer','description':'Issue number.'}," \
	"'title':{'type':'string'},'body':{'type':'string'}," \
	"'state':{'type':'string','enum':['open','closed']}," \
	"'labels':{'type':'array','items':{'type':'object','properties':{'name':{'type':'string'},'color':{'type':'string'}},'required':['name','color']}}," \
	"'comments':{'type':'integer','description':'Number of comments.'}," \
	"'user':" S_USER ",'assignee':{'type':['object','null']}," \
	"'created_at':{'type':'string','format':'date-time'},'updated_at':{'type':'string','format':'date-time'}," \
	"'closed_at':{'type':['string','null']},'html_url':{'type':'string'}}," \
	"'required':['number','title','state','labels','comments','user','created_at','html_url']}"
#define S_PULL "{'type':'object','properties':{" \
	"'id':{'type':'integer'},'number':{'type':'integer'},'title':{'type':'string'},'body':{'type':'string'}," \
	"'state':{'type':'string','enum':['open','closed']},'merged':{'type':'boolean'},'draft':{'type':'boolean'}," \
	"'user':" S_USER "," \
	"'head':{'type':'object','properties':{'ref':{'type':'string'},'sha':{'type':'string'}}}," \
	"'base':{'type':'object','properties':{'ref':{'type':'string'}}}," \
	"'additions':{'type':'integer'},'deletions':{'type':'integer'},'changed_files':{'type':'integer'}," \
	"'comments':{'type':'integer'},'created_at':{'type':'string'},'updated_at':{'type':'string'}," \
	"'merged_at':{'type':['string','null']},'html_url':{'type':'string'}}," \
	"'required':['number','title','state','merged','user','head','base','html_url']}"
#define S_FILE_PROPS "'type':{'type':'string','enum':['file']},'name':{'type':'string'},'path':{'type':'string'}," \
	"'sha':{'type':'string'},'size':{'type':'integer'},'html_url':{'type':'string'}"

static const struct cat_tool tools[] = {
	{ "list_repos", "List repositories",
	  "List the repositories of an organization or user.",
	  "{'type':'object','properties':{" P_OWNER ","
	  "'type':{'type':'string','enum':['all','public','private'],'description':'Which repositories to list. Default all.'},"
	  "'sort':{'type':'string','enum':['created','updated','pushed','full_name'],'description':'Sort order.'}},"
	  "'required':['owner']}",
	  NULL, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, list_repos },
	{ "list_issues", "List issues",
	  "List the issues of a repository (all states by default, newest first, every "
	  "matching issue unless per_page is given). Returns a JSON array of issues with "
	  "number, title, body, state, labels, comments (the comment count), user, dates "
	  "and html_url.",
	  "{'type':'object','properties':{" P_OWNER "," P_REPO ","
	  "'state':{'type':'string','enum':['open','closed','all'],'description':'Filter by state. Default all.'},"
	  "'labels':{'type':'array','items':{'type':'string'},'description':'Only issues carrying all these labels.'},"
	  "'sort':{'type':'string','enum':['created','updated','comments'],'description':'Sort field. Default created.'},"
	  "'direction':{'type':'string','enum':['asc','desc'],'description':'Sort direction. Default desc.'},"
	  P_PER_PAGE ","
	  "'page':{'type':'integer','minimum':1,'description':'Page number, from 1, used with per_page.'}},"
	  "'required':['owner','repo']}",
	  NULL, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, list_issues },
	{ "get_issue", "Get an issue",
	  "Get one issue of a repository by number.",
	  "{'type':'object','properties':{" P_OWNER "," P_REPO ","
	  "'issue_number':{'type':'integer','minimum':1,'description':'The issue number.'}},"
	  "'required':['owner','repo','issue_number']}",
	  S_ISSUE, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, get_issue },
	{ "create_issue", "Create an issue",
	  "Open a new issue in a repository.",
	  "{'type':'object','properties':{" P_OWNER "," P_REPO ","
	  "'title':{'type':'string','minLength':1,'description':'Issue title.'},"
	  "'body':{'type':'string','description':'Issue body in Markdown.'},"
	  "'labels':{'type':'array','items':{'type':'string'},'description':'Labels to apply.'},"
	  "'assignees':{'type':'array','items':{'type':'string'},'description':'Logins to assign.'},"
	  "'milestone':{'type':'integer','description':'Milestone number.'}},"
	  "'required':['owner','repo','title']}",
	  NULL, CAT_OPEN_WORLD, create_issue },
	{ "add_comment", "Comment on an issue",
	  "Add a comment to an issue or pull request.",
	  "{'type':'object','properties':{" P_OWNER "," P_REPO ","
	  "'issue_number':{'type':'integer','minimum':1,'description':'Issue or pull request number.'},"
	  "'body':{'type':'string','minLength':1,'description':'Comment text in Markdown.'}},"
	  "'required':['owner','repo','issue_number','body']}",
	  NULL, CAT_OPEN_WORLD, add_comment },
	{ "list_pull_requests", "List pull requests",
	  "List the pull requests of a repository, newest first.",
	  "{'type':'object','properties':{" P_OWNER "," P_REPO ","
	  "'state':{'type':'string','enum':['open','closed','all'],'description':'Filter by state. Default open.'},"
	  "'base':{'type':'string','description':'Only pull requests into this branch.'},"
	  P_PER_PAGE "},"
	  "'required':['owner','repo']}",
	  NULL, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, list_pull_requests },
	{ "get_pull_request", "Get a pull request",
	  "Get one pull request by number.",
	  "{'type':'object','properties':{" P_OWNER "," P_REPO ","
	  "'pull_number':{'type':'integer','minimum':1,'description':'The pull request number.'}},"
	  "'required':['owner','repo','pull_number']}",
	  S_PULL, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, get_pull_request },
	{ "merge_pull_request", "Merge a pull request",
	  "Merge an open pull request into its base branch.",
	  "{'type':'object','properties':{" P_OWNER "," P_REPO ","
	  "'pull_number':{'type':'integer','minimum':1,'description':'The pull request number.'},"
	  "'merge_method':{'type':'string','enum':['merge','squash','rebase'],'description':'How to merge. Default merge.'},"
	  "'commit_title':{'type':'string','description':'Title of the merge commit.'},"
	  "'commit_message':{'type':'string','description':'Extra detail for the merge commit.'}},"
	  "'required':['owner','repo','pull_number']}",
	  "{'type':'object','properties':{'sha':{'type':'string','description':'The merge commit.'},"
	  "'merged':{'type':'boolean'},'message':{'type':'string'}},'required':['sha','merged','message']}",
	  CAT_DESTRUCTIVE | CAT_OPEN_WORLD, merge_pull_request },
	{ "search_pull_requests", "Search pull requests",
	  "Search pull requests across repositories by the words of their title and body "
	  "(whole words, all must match); repo:owner/name narrows the search.",
	  "{'type':'object','properties':{"
	  "'q':{'type':'string','description':'Search query, e.g. OPS-3 repo:acme/api'}," P_PER_PAGE "},"
	  "'required':['q']}",
	  "{'type':'object','properties':{'total_count':{'type':'integer'},'incomplete_results':{'type':'boolean'},"
	  "'items':{'type':'array','items':" S_PULL "}},"
	  "'required':['total_count','items']}",
	  CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, search_pull_requests },
	{ "search_code", "Search code",
	  "Search file contents and paths across repositories. Every word must match; "
	  "qualifiers repo:owner/name and path:prefix narrow the search.",
	  "{'type':'object','properties':{"
	  "'q':{'type':'string','description':'Search query, e.g. TODO repo:acme/api'}," P_PER_PAGE "},"
	  "'required':['q']}",
	  "{'type':'object','properties':{'total_count':{'type':'integer'},'incomplete_results':{'type':'boolean'},"
	  "'items':{'type':'array','items':{'type':'object','properties':{" S_FILE_PROPS ","
	  "'repository':{'type':'object','properties':{'full_name':{'type':'string'}}}}}}},"
	  "'required':['total_count','items']}",
	  CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, search_code },
	{ "get_file_contents", "Get file contents",
	  "Get the contents of a file in a repository.",
	  "{'type':'object','properties':{" P_OWNER "," P_REPO ","
	  "'path':{'type':'string','description':'Path of the file, e.g. README.md'},"
	  "'ref':{'type':'string','description':'Branch, tag or commit. Default the default branch.'}},"
	  "'required':['owner','repo','path']}",
	  "{'type':'object','properties':{" S_FILE_PROPS ","
	  "'encoding':{'type':'string'},'content':{'type':'string'}},"
	  "'required':['type','name','path','sha','size','content']}",
	  CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, get_file_contents },
	{ "list_commits", "List commits",
	  "List the commits of a branch, newest first.",
	  "{'type':'object','properties':{" P_OWNER "," P_REPO ","
	  "'sha':{'type':'string','description':'Branch or commit to start from. Default main.'},"
	  P_PER_PAGE "},"
	  "'required':['owner','repo']}",
	  NULL, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, list_commits },
};

static const struct cat_prompt prompt = {
	"review_pull_request", "Review a pull request",
	"Ask for a review of a pull request of acme/api.",
	"pull_number", "The pull request number, e.g. 402.",
	"Review pull request #{} of acme/api: read it with get_pull_request, check the "
	"linked Jira ticket if the title names one, and list risks and suggestions.",
};

const struct cat_backend cat_github = {
	.name = "github",
	.title = "GitHub (fake)",
	.tools = tools,
	.ntools = sizeof(tools) / sizeof(tools[0]),
	.readme = "# Fake GitHub\n\nFive repositories under **acme**: api, web, infra, mobile, docs.\n"
		  "Each has 20 issues (300 with --large-results), pull requests #401..#412, "
		  "files and commits. Some pull requests name Jira tickets (OPS-n).\n",
	.stats = stats,
	.prompt = &prompt,
};

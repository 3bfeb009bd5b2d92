/*
 * jira.c: the fake Jira back end.
 *
 * Data: two projects, OPS (tickets OPS-1..OPS-40) and PLAT (PLAT-1..PLAT-12),
 * four sprints each, eight users.  Tickets do not list linked pull requests:
 * those are found through the github back end, whose pull requests name
 * OPS-2, OPS-3, OPS-5, OPS-7 and OPS-8.
 *
 * search_issues understands a small JQL: clauses "field op value" joined by
 * AND, then an optional ORDER BY.  Fields: project, key, status, priority,
 * type (issuetype), assignee, reporter, labels, sprint, summary and text
 * (with ~, contains), created and updated (compared as ISO dates).
 * Operators: = != ~ > >= < <= IN (...) and NOT IN (...); EMPTY matches an
 * unassigned ticket.  Anything else is an isError result naming the problem.
 *
 * Writes answer as Jira would but change nothing.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"

static const struct project {
	const char *key, *name, *lead, *description;
	int count;
} projects[] = {
	{ "OPS", "Operations", "alice", "Production operations, incidents and on-call work.", 40 },
	{ "PLAT", "Platform", "bob", "Shared platform services and developer tooling.", 12 },
};
#define NPROJECTS (int)(sizeof(projects) / sizeof(projects[0]))

static const struct user {
	const char *id, *name;
} users[] = {
	{ "alice", "Alice Ng" }, { "bob", "Bob Okafor" }, { "carol", "Carol Diaz" },
	{ "dave", "Dave Kim" }, { "erin", "Erin Walsh" }, { "frank", "Frank Moreau" },
	{ "grace", "Grace Liu" }, { "heidi", "Heidi Berg" },
};
#define NUSERS (int)(sizeof(users) / sizeof(users[0]))

static const char *const statuses[] = { "To Do", "In Progress", "In Review", "Done" };
static const char *const priorities[] = { "Highest", "High", "Medium", "Low", "Lowest" };
static const char *const types[] = { "Bug", "Task", "Story", "Incident" };
static const char *const tlabels[] = { "database", "network", "security", "toil", "customer", "cost" };
#define NTLABELS (int)(sizeof(tlabels) / sizeof(tlabels[0]))

static const char *const components[] = {
	"Postgres failover", "PagerDuty routing", "TLS certificate renewal",
	"Kafka consumer lag", "backup retention", "on-call rotation", "log shipping",
	"Redis eviction", "CDN cache purge", "VPN access", "build cache", "feature flags",
};
static const char *const verbs[] = {
	"Automate", "Fix", "Investigate", "Document", "Alert on", "Reduce cost of",
	"Upgrade", "Audit",
};

struct ticket {
	int project, number;
	char key[16], summary[160], description[800];
	int status, priority, type;
	int assignee;            /* index into users, -1: unassigned */
	int reporter;
	unsigned labels;         /* bit set over tlabels */
	int64_t created, updated;
	int points;
	int sprint;              /* sprint number, 0: backlog */
};

static int sprint_base(int p)
{
	return p == 0 ? 21 : 7;
}

static void make_ticket(int p, int number, struct ticket *t)
{
	struct cat_rng rng;
	memset(t, 0, sizeof(*t));
	cat_rng_seed(&rng, "jira ticket %s-%d", projects[p].key, number);
	t->project = p;
	t->number = number;
	snprintf(t->key, sizeof(t->key), "%s-%d", projects[p].key, number);
	const char *component = CAT_PICK(&rng, components);
	snprintf(t->summary, sizeof(t->summary), "%s %s", CAT_PICK(&rng, verbs), component);
	cat_prose(&rng, t->description, sizeof(t->description),
		  (size_t)cat_rng_range(&rng, 200, 450), component);
	/* Older tickets are more likely to be done. */
	int64_t roll = cat_rng_range(&rng, 0, 99) + (projects[p].count - number) * 2;
	t->status = roll > 110 ? 3 : roll > 80 ? 2 : roll > 45 ? 1 : 0;
	t->priority = (int)cat_rng_range(&rng, 0, 4);
	t->type = (int)cat_rng_range(&rng, 0, 3);
	t->assignee = cat_rng_range(&rng, 0, 4) == 0 ? -1 : (int)cat_rng_range(&rng, 0, NUSERS - 1);
	t->reporter = (int)cat_rng_range(&rng, 0, NUSERS - 1);
	for (int k = (int)cat_rng_range(&rng, 0, 2); k > 0; k--)
		t->labels |= 1u << cat_rng_range(&rng, 0, NTLABELS - 1);
	t->created = CAT_EPOCH_2024 + 300LL * 86400 + number * 4LL * 86400 +
		     cat_rng_range(&rng, 0, 86400);
	t->updated = t->created + cat_rng_range(&rng, 3600, 30LL * 86400);
	static const int points[] = { 1, 2, 3, 5, 8 };
	t->points = points[cat_rng_next(&rng) % 5];
	t->sprint = t->status == 0 && cat_rng_range(&rng, 0, 1) ? 0
		  : sprint_base(p) + (int)cat_rng_range(&rng, 0, 2);
}

static bool parse_key(const char *key, int *p, int *number)
{
	for (int i = 0; i < NPROJECTS; i++) {
		size_t n = strlen(projects[i].key);
		if (strncasecmp(key, projects[i].key, n) || key[n] != '-')
			continue;
		char *end = NULL;
		long v = strtol(key + n + 1, &end, 10);
		if (!*end && v >= 1 && v <= projects[i].count && isdigit((unsigned char)key[n + 1])) {
			*p = i;
			*number = (int)v;
			return true;
		}
	}
	return false;
}

static bool find_ticket(struct cat_req *rq, struct ticket *t)
{
	const char *key = cat_arg_str(rq, "key", "");
	int p, n;
	if (!parse_key(key, &p, &n)) {
		cat_fail(rq, "Issue does not exist or you do not have permission to see it: %.100s", key);
		return false;
	}
	make_ticket(p, n, t);
	return true;
}

static void sprint_name(char *out, size_t cap, int p, int sprint)
{
	snprintf(out, cap, "%s Sprint %d", projects[p].key, sprint);
}

static void add_person(yyjson_mut_doc *doc, yyjson_mut_val *o, const char *key, int u)
{
	if (u < 0) {
		yyjson_mut_obj_add_null(doc, o, key);
		return;
	}
	yyjson_mut_val *v = yyjson_mut_obj_add_obj(doc, o, key);
	yyjson_mut_obj_add_str(doc, v, "accountId", users[u].id);
	yyjson_mut_obj_add_str(doc, v, "displayName", users[u].name);
}

static yyjson_mut_val *ticket_json(yyjson_mut_doc *doc, const struct ticket *t,
				   bool comments)
{
	char created[32], updated[32], url[96], sprint[48];
	cat_iso_date(created, t->created);
	cat_iso_date(updated, t->updated);
	snprintf(url, sizeof(url), "https://acme.atlassian.net/browse/%s", t->key);
	yyjson_mut_val *o = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_strcpy(doc, o, "key", t->key);
	yyjson_mut_obj_add_int(doc, o, "id", 10000 + t->project * 1000 + t->number);
	yyjson_mut_obj_add_str(doc, o, "project", projects[t->project].key);
	yyjson_mut_obj_add_strcpy(doc, o, "summary", t->summary);
	yyjson_mut_obj_add_strcpy(doc, o, "description", t->description);
	yyjson_mut_obj_add_str(doc, o, "status", statuses[t->status]);
	yyjson_mut_obj_add_str(doc, o, "priority", priorities[t->priority]);
	yyjson_mut_obj_add_str(doc, o, "issue_type", types[t->type]);
	add_person(doc, o, "assignee", t->assignee);
	add_person(doc, o, "reporter", t->reporter);
	yyjson_mut_val *ls = yyjson_mut_obj_add_arr(doc, o, "labels");
	for (int k = 0; k < NTLABELS; k++)
		if (t->labels & (1u << k))
			yyjson_mut_arr_add_str(doc, ls, tlabels[k]);
	yyjson_mut_obj_add_int(doc, o, "story_points", t->points);
	if (t->sprint) {
		sprint_name(sprint, sizeof(sprint), t->project, t->sprint);
		yyjson_mut_obj_add_strcpy(doc, o, "sprint", sprint);
	} else {
		yyjson_mut_obj_add_null(doc, o, "sprint");
	}
	yyjson_mut_obj_add_strcpy(doc, o, "created", created);
	yyjson_mut_obj_add_strcpy(doc, o, "updated", updated);
	yyjson_mut_obj_add_strcpy(doc, o, "url", url);
	if (comments) {
		struct cat_rng rng;
		cat_rng_seed(&rng, "jira comments %s", t->key);
		yyjson_mut_val *cs = yyjson_mut_obj_add_arr(doc, o, "comments");
		for (int64_t k = cat_rng_range(&rng, 0, 3), i = 1; i <= k; i++) {
			char body[400] = "", when[32];
			cat_prose(&rng, body, sizeof(body), 80, t->summary);
			cat_iso_date(when, t->created + i * 7200);
			yyjson_mut_val *c = yyjson_mut_arr_add_obj(doc, cs);
			yyjson_mut_obj_add_int(doc, c, "id", (10000 + t->project * 1000 + t->number) * 10 + i);
			add_person(doc, c, "author", (int)cat_rng_range(&rng, 0, NUSERS - 1));
			yyjson_mut_obj_add_strcpy(doc, c, "body", body);
			yyjson_mut_obj_add_strcpy(doc, c, "created", when);
		}
	}
	return o;
}

/* ---- JQL -------------------------------------------------------------------- */

#define MAX_TOKENS 96
#define MAX_VALUES 16

struct token {
	char text[128];
	bool quoted;
};

enum op { OP_EQ, OP_NE, OP_LIKE, OP_GT, OP_GE, OP_LT, OP_LE, OP_IN, OP_NOT_IN };

struct clause {
	char field[32];
	enum op op;
	const char *values[MAX_VALUES];
	int nvalues;
};

struct jql {
	struct token tok[MAX_TOKENS];
	int ntok;
	struct clause cl[16];
	int ncl;
	char order[32];
	bool desc;
};

static int tokenize(struct jql *q, const char *s, char *err, size_t cap)
{
	while (*s) {
		if (isspace((unsigned char)*s)) {
			s++;
			continue;
		}
		if (q->ntok == MAX_TOKENS) {
			snprintf(err, cap, "query too long");
			return -1;
		}
		struct token *t = &q->tok[q->ntok++];
		size_t n = 0;
		if (*s == '"' || *s == '\'') {
			char quote = *s++;
			while (*s && *s != quote && n + 1 < sizeof(t->text))
				t->text[n++] = *s++;
			if (*s != quote) {
				snprintf(err, cap, "unterminated string");
				return -1;
			}
			s++;
			t->quoted = true;
		} else if (strchr("(),", *s)) {
			t->text[n++] = *s++;
		} else if (strchr("=!~<>", *s)) {
			while (*s && strchr("=!~<>", *s) && n < 2)
				t->text[n++] = *s++;
		} else {
			while (*s && !isspace((unsigned char)*s) && !strchr("(),=!~<>\"'", *s) &&
			       n + 1 < sizeof(t->text))
				t->text[n++] = *s++;
		}
		t->text[n] = '\0';
	}
	return 0;
}

static bool word(const struct token *t, const char *w)
{
	return !t->quoted && !strcasecmp(t->text, w);
}

static int parse_jql(struct jql *q, const char *text, char *err, size_t cap)
{
	static const char *const fields[] = {
		"project", "key", "status", "priority", "type", "issuetype", "assignee",
		"reporter", "labels", "sprint", "summary", "text", "created", "updated",
	};
	static const struct { const char *s; enum op op; } ops[] = {
		{ "=", OP_EQ }, { "!=", OP_NE }, { "~", OP_LIKE }, { ">", OP_GT },
		{ ">=", OP_GE }, { "<", OP_LT }, { "<=", OP_LE },
	};
	if (tokenize(q, text, err, cap))
		return -1;
	int i = 0;
	while (i < q->ntok && !word(&q->tok[i], "ORDER")) {
		if (q->ncl == 16) {
			snprintf(err, cap, "too many clauses");
			return -1;
		}
		struct clause *c = &q->cl[q->ncl++];
		const struct token *f = &q->tok[i++];
		bool known = false;
		for (size_t k = 0; k < sizeof(fields) / sizeof(*fields); k++)
			known |= word(f, fields[k]);
		if (!known) {
			snprintf(err, cap, "unknown field '%.60s'", f->text);
			return -1;
		}
		snprintf(c->field, sizeof(c->field), "%s",
			 !strcasecmp(f->text, "issuetype") ? "type" : f->text);
		for (char *p = c->field; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		if (i >= q->ntok) {
			snprintf(err, cap, "expected an operator after '%s'", c->field);
			return -1;
		}
		const struct token *o = &q->tok[i++];
		bool found = false;
		if (word(o, "IN")) {
			c->op = OP_IN;
			found = true;
		} else if (word(o, "NOT") && i < q->ntok && word(&q->tok[i], "IN")) {
			c->op = OP_NOT_IN;
			i++;
			found = true;
		}
		for (size_t k = 0; !found && k < sizeof(ops) / sizeof(*ops); k++)
			if (!o->quoted && !strcmp(o->text, ops[k].s)) {
				c->op = ops[k].op;
				found = true;
			}
		if (!found) {
			snprintf(err, cap, "unknown operator '%.20s'", o->text);
			return -1;
		}
		if (c->op == OP_IN || c->op == OP_NOT_IN) {
			if (i >= q->ntok || strcmp(q->tok[i].text, "(")) {
				snprintf(err, cap, "expected ( after IN");
				return -1;
			}
			i++;
			while (i < q->ntok && strcmp(q->tok[i].text, ")")) {
				if (strcmp(q->tok[i].text, ",") && c->nvalues < MAX_VALUES)
					c->values[c->nvalues++] = q->tok[i].text;
				i++;
			}
			if (i >= q->ntok) {
				snprintf(err, cap, "expected )");
				return -1;
			}
			i++;
		} else {
			if (i >= q->ntok) {
				snprintf(err, cap, "expected a value after '%s'", c->field);
				return -1;
			}
			c->values[c->nvalues++] = q->tok[i++].text;
		}
		if (i < q->ntok && word(&q->tok[i], "OR")) {
			snprintf(err, cap, "OR is not supported here, use IN (...)");
			return -1;
		}
		if (i < q->ntok && word(&q->tok[i], "AND"))
			i++;
		else if (i < q->ntok && !word(&q->tok[i], "ORDER")) {
			snprintf(err, cap, "expected AND or ORDER BY near '%.60s'", q->tok[i].text);
			return -1;
		}
	}
	if (i < q->ntok) {
		i++;
		if (i >= q->ntok || !word(&q->tok[i], "BY") || i + 1 >= q->ntok) {
			snprintf(err, cap, "expected ORDER BY <field>");
			return -1;
		}
		snprintf(q->order, sizeof(q->order), "%s", q->tok[i + 1].text);
		if (strcasecmp(q->order, "created") && strcasecmp(q->order, "updated") &&
		    strcasecmp(q->order, "priority") && strcasecmp(q->order, "key")) {
			snprintf(err, cap, "cannot order by '%.30s'", q->order);
			return -1;
		}
		i += 2;
		if (i < q->ntok && (word(&q->tok[i], "DESC") || word(&q->tok[i], "ASC")))
			q->desc = word(&q->tok[i++], "DESC");
		if (i < q->ntok) {
			snprintf(err, cap, "unexpected '%.60s' after ORDER BY", q->tok[i].text);
			return -1;
		}
	}
	return 0;
}

static int cmp_one(const struct ticket *t, const char *field, const char *v,
		   enum op op)
{
	char date[32];
	if (!strcmp(field, "created") || !strcmp(field, "updated")) {
		cat_iso_date(date, !strcmp(field, "created") ? t->created : t->updated);
		return strncmp(date, v, strlen(v));
	}
	return 0;
}

/* Does one value match the field of the ticket (equality or contains)? */
static bool value_is(const struct ticket *t, const char *field, const char *v,
		     bool like)
{
	if (!strcmp(field, "project"))
		return !strcasecmp(v, projects[t->project].key) ||
		       !strcasecmp(v, projects[t->project].name);
	if (!strcmp(field, "key"))
		return !strcasecmp(v, t->key);
	if (!strcmp(field, "status"))
		return !strcasecmp(v, statuses[t->status]);
	if (!strcmp(field, "priority"))
		return !strcasecmp(v, priorities[t->priority]);
	if (!strcmp(field, "type"))
		return !strcasecmp(v, types[t->type]);
	if (!strcmp(field, "assignee") || !strcmp(field, "reporter")) {
		int u = !strcmp(field, "assignee") ? t->assignee : t->reporter;
		if (u < 0)
			return !strcasecmp(v, "EMPTY") || !strcasecmp(v, "null");
		return !strcasecmp(v, users[u].id) || !strcasecmp(v, users[u].name);
	}
	if (!strcmp(field, "labels")) {
		for (int k = 0; k < NTLABELS; k++)
			if ((t->labels & (1u << k)) && !strcasecmp(v, tlabels[k]))
				return true;
		return false;
	}
	if (!strcmp(field, "sprint")) {
		char name[48];
		sprint_name(name, sizeof(name), t->project, t->sprint);
		if (!t->sprint)
			return !strcasecmp(v, "EMPTY");
		return !strcasecmp(v, name) || atoi(v) == t->sprint;
	}
	if (!strcmp(field, "summary") || !strcmp(field, "text")) {
		bool hit = strcasestr(t->summary, v) != NULL;
		if (!strcmp(field, "text"))
			hit |= strcasestr(t->description, v) != NULL;
		return like ? hit : !strcasecmp(v, t->summary);
	}
	return !strcmp(field, "created") || !strcmp(field, "updated")
		? cmp_one(t, field, v, OP_EQ) == 0 : false;
}

static bool matches(const struct ticket *t, const struct jql *q)
{
	for (int i = 0; i < q->ncl; i++) {
		const struct clause *c = &q->cl[i];
		bool any = false;
		switch (c->op) {
		case OP_EQ:
		case OP_LIKE:
			if (!value_is(t, c->field, c->values[0], c->op == OP_LIKE))
				return false;
			break;
		case OP_NE:
			if (value_is(t, c->field, c->values[0], false))
				return false;
			break;
		case OP_IN:
		case OP_NOT_IN:
			for (int k = 0; k < c->nvalues; k++)
				any |= value_is(t, c->field, c->values[k], false);
			if (any != (c->op == OP_IN))
				return false;
			break;
		case OP_GT: case OP_GE: case OP_LT: case OP_LE: {
			int d = cmp_one(t, c->field, c->values[0], c->op);
			if ((c->op == OP_GT && d <= 0) || (c->op == OP_GE && d < 0) ||
			    (c->op == OP_LT && d >= 0) || (c->op == OP_LE && d > 0))
				return false;
			break;
		}
		}
	}
	return true;
}

static int64_t order_key(const struct ticket *t, const char *order)
{
	if (!strcasecmp(order, "created"))
		return t->created;
	if (!strcasecmp(order, "updated"))
		return t->updated;
	if (!strcasecmp(order, "priority"))
		return -t->priority;  /* Highest first when descending */
	return t->project * 100000 + t->number;
}

static int cmp_tickets(const void *a, const void *b, void *ctx)
{
	const struct jql *sort_by = ctx;
	const struct ticket *x = a, *y = b;
	const char *order = sort_by->order[0] ? sort_by->order : "key";
	int64_t kx = order_key(x, order), ky = order_key(y, order);
	int d = kx < ky ? -1 : kx > ky;
	if (!d)
		d = (x->project * 100000 + x->number) - (y->project * 100000 + y->number);
	return sort_by->desc ? -d : d;
}

/* ---- handlers --------------------------------------------------------------- */

static int search_issues(struct cat_req *rq)
{
	struct jql *q = cat_xmalloc(sizeof(*q));
	memset(q, 0, sizeof(*q));
	char err[200];
	if (parse_jql(q, cat_arg_str(rq, "jql", ""), err, sizeof(err))) {
		cat_fail(rq, "Error in the JQL query: %s", err);
		free(q);
		return CAT_OK;
	}
	int64_t max = cat_arg_int(rq, "max_results", 50);
	int64_t start = cat_arg_int(rq, "start_at", 0);
	struct ticket *all = cat_xmalloc(sizeof(*all) * 52);
	int n = 0;
	for (int p = 0; p < NPROJECTS; p++)
		for (int k = 1; k <= projects[p].count; k++) {
			make_ticket(p, k, &all[n]);
			if (matches(&all[n], q))
				n++;
		}
	qsort_r(all, (size_t)n, sizeof(*all), cmp_tickets, q);
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_int(doc, rq->data, "total", n);
	yyjson_mut_obj_add_int(doc, rq->data, "start_at", start);
	yyjson_mut_obj_add_int(doc, rq->data, "max_results", max);
	yyjson_mut_val *list = yyjson_mut_obj_add_arr(doc, rq->data, "issues");
	for (int64_t i = start; i < n && i < start + max; i++)
		yyjson_mut_arr_append(list, ticket_json(doc, &all[i], false));
	free(all);
	free(q);
	return CAT_OK;
}

static int get_ticket(struct cat_req *rq)
{
	struct ticket t;
	if (find_ticket(rq, &t))
		rq->data = ticket_json(rq->doc, &t, true);
	return CAT_OK;
}

static int find_project(struct cat_req *rq, const char *arg)
{
	const char *key = cat_arg_str(rq, arg, "");
	for (int p = 0; p < NPROJECTS; p++)
		if (!strcasecmp(key, projects[p].key))
			return p;
	cat_fail(rq, "No project could be found with key '%.60s'", key);
	return -1;
}

static int find_user(const char *s)
{
	for (int u = 0; u < NUSERS; u++)
		if (!strcasecmp(s, users[u].id) || !strcasecmp(s, users[u].name))
			return u;
	return -1;
}

static int create_ticket(struct cat_req *rq)
{
	int p = find_project(rq, "project");
	if (p < 0)
		return CAT_OK;
	const char *assignee = cat_arg_str(rq, "assignee", NULL);
	if (assignee && find_user(assignee) < 0) {
		cat_fail(rq, "User '%.60s' does not exist", assignee);
		return CAT_OK;
	}
	char key[16], url[96];
	int number = projects[p].count + 1;
	snprintf(key, sizeof(key), "%s-%d", projects[p].key, number);
	snprintf(url, sizeof(url), "https://acme.atlassian.net/browse/%s", key);
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_strcpy(doc, rq->data, "key", key);
	yyjson_mut_obj_add_int(doc, rq->data, "id", 10000 + p * 1000 + number);
	yyjson_mut_obj_add_strcpy(doc, rq->data, "summary", cat_arg_str(rq, "summary", ""));
	yyjson_mut_obj_add_str(doc, rq->data, "status", "To Do");
	yyjson_mut_obj_add_strcpy(doc, rq->data, "url", url);
	return CAT_OK;
}

static int transition_ticket(struct cat_req *rq)
{
	struct ticket t;
	if (!find_ticket(rq, &t))
		return CAT_OK;
	const char *to = cat_arg_str(rq, "status", "");
	if (!strcasecmp(to, statuses[t.status])) {
		cat_fail(rq, "%s is already in status %s", t.key, statuses[t.status]);
		return CAT_OK;
	}
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_strcpy(doc, rq->data, "key", t.key);
	yyjson_mut_obj_add_str(doc, rq->data, "from", statuses[t.status]);
	yyjson_mut_obj_add_strcpy(doc, rq->data, "to", to);
	return CAT_OK;
}

static int add_comment(struct cat_req *rq)
{
	struct ticket t;
	if (!find_ticket(rq, &t))
		return CAT_OK;
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_int(doc, rq->data, "id", 990001);
	yyjson_mut_obj_add_strcpy(doc, rq->data, "key", t.key);
	yyjson_mut_val *a = yyjson_mut_obj_add_obj(doc, rq->data, "author");
	yyjson_mut_obj_add_str(doc, a, "accountId", "catalog-bot");
	yyjson_mut_obj_add_str(doc, a, "displayName", "Catalog Bot");
	yyjson_mut_obj_add_strcpy(doc, rq->data, "body", cat_arg_str(rq, "body", ""));
	yyjson_mut_obj_add_str(doc, rq->data, "created", "2025-07-01T12:00:00Z");
	return CAT_OK;
}

static int assign_ticket(struct cat_req *rq)
{
	struct ticket t;
	if (!find_ticket(rq, &t))
		return CAT_OK;
	yyjson_val *who = yyjson_obj_get(rq->args, "assignee");
	int u = -1;
	if (yyjson_is_str(who) && (u = find_user(yyjson_get_str(who))) < 0) {
		cat_fail(rq, "User '%.60s' does not exist", yyjson_get_str(who));
		return CAT_OK;
	}
	rq->data = yyjson_mut_obj(rq->doc);
	yyjson_mut_obj_add_strcpy(rq->doc, rq->data, "key", t.key);
	add_person(rq->doc, rq->data, "assignee", u);
	return CAT_OK;
}

static yyjson_mut_val *project_json(yyjson_mut_doc *doc, int p, bool detail)
{
	char url[96];
	snprintf(url, sizeof(url), "https://acme.atlassian.net/browse/%s", projects[p].key);
	yyjson_mut_val *o = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_str(doc, o, "key", projects[p].key);
	yyjson_mut_obj_add_str(doc, o, "name", projects[p].name);
	yyjson_mut_obj_add_str(doc, o, "description", projects[p].description);
	add_person(doc, o, "lead", find_user(projects[p].lead));
	yyjson_mut_obj_add_int(doc, o, "issue_count", projects[p].count);
	yyjson_mut_obj_add_strcpy(doc, o, "url", url);
	if (detail) {
		yyjson_mut_val *ts = yyjson_mut_obj_add_arr(doc, o, "issue_types");
		for (size_t k = 0; k < sizeof(types) / sizeof(*types); k++)
			yyjson_mut_arr_add_str(doc, ts, types[k]);
		yyjson_mut_val *ss = yyjson_mut_obj_add_arr(doc, o, "statuses");
		for (size_t k = 0; k < sizeof(statuses) / sizeof(*statuses); k++)
			yyjson_mut_arr_add_str(doc, ss, statuses[k]);
	}
	return o;
}

static int list_projects(struct cat_req *rq)
{
	rq->data = yyjson_mut_obj(rq->doc);
	yyjson_mut_val *list = yyjson_mut_obj_add_arr(rq->doc, rq->data, "projects");
	for (int p = 0; p < NPROJECTS; p++)
		yyjson_mut_arr_append(list, project_json(rq->doc, p, false));
	return CAT_OK;
}

static int get_project(struct cat_req *rq)
{
	int p = find_project(rq, "key");
	if (p >= 0)
		rq->data = project_json(rq->doc, p, true);
	return CAT_OK;
}

static int list_sprints(struct cat_req *rq)
{
	int p = find_project(rq, "project");
	if (p < 0)
		return CAT_OK;
	const char *want = cat_arg_str(rq, "state", NULL);
	static const char *const states[] = { "closed", "closed", "active", "future" };
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_arr(doc);
	for (int k = 0; k < 4; k++) {
		int number = sprint_base(p) - 2 + k;
		if (want && strcmp(want, states[k]))
			continue;
		char name[48], start[32], end[32];
		sprint_name(name, sizeof(name), p, number);
		int64_t t0 = CAT_EPOCH_2024 + 520LL * 86400 + (k - 2) * 14LL * 86400;
		cat_iso_date(start, t0);
		cat_iso_date(end, t0 + 14LL * 86400);
		yyjson_mut_val *o = yyjson_mut_arr_add_obj(doc, rq->data);
		yyjson_mut_obj_add_int(doc, o, "id", 300 + p * 50 + number);
		yyjson_mut_obj_add_strcpy(doc, o, "name", name);
		yyjson_mut_obj_add_str(doc, o, "state", states[k]);
		yyjson_mut_obj_add_strcpy(doc, o, "start_date", start);
		yyjson_mut_obj_add_strcpy(doc, o, "end_date", end);
		yyjson_mut_obj_add_str(doc, o, "goal", k == 2 ? "Cut paging noise in half"
							    : "Burn down the operations backlog");
	}
	return CAT_OK;
}

static int get_transitions(struct cat_req *rq)
{
	struct ticket t;
	if (!find_ticket(rq, &t))
		return CAT_OK;
	rq->data = yyjson_mut_obj(rq->doc);
	yyjson_mut_obj_add_strcpy(rq->doc, rq->data, "key", t.key);
	yyjson_mut_obj_add_str(rq->doc, rq->data, "status", statuses[t.status]);
	yyjson_mut_val *list = yyjson_mut_obj_add_arr(rq->doc, rq->data, "transitions");
	for (int k = 0; k < 4; k++)
		if (k != t.status)
			yyjson_mut_arr_add_str(rq->doc, list, statuses[k]);
	return CAT_OK;
}

static void stats(const struct cat_server *srv, yyjson_mut_doc *doc, yyjson_mut_val *o)
{
	yyjson_mut_obj_add_int(doc, o, "projects", NPROJECTS);
	yyjson_mut_obj_add_int(doc, o, "tickets", projects[0].count + projects[1].count);
	yyjson_mut_obj_add_int(doc, o, "users", NUSERS);
}

/* ---- the table -------------------------------------------------------------- */

#define P_KEY "'key':{'type':'string','pattern':'^[A-Z]+-[0-9]+$','description':'Ticket key, e.g. OPS-3.'}"
#define S_PERSON "{'type':['object','null'],'properties':{'accountId':{'type':'string'},'displayName':{'type':'string'}}}"
#define S_TICKET "{'type':'object','properties':{" \
	"'key':{'type':'string'},'id':{'type':'integer'},'project':{'type':'string'}," \
	"'summary':{'type':'string'},'description':{'type':'string'}," \
	"'status':{'type':'string','enum':['To Do','In Progress','In Review','Done']}," \
	"'priority':{'type':'string','enum':['Highest','High','Medium','Low','Lowest']}," \
	"'issue_type':{'type':'string'},'assignee':" S_PERSON ",'reporter':" S_PERSON "," \
	"'labels':{'type':'array','items':{'type':'string'}},'story_points':{'type':'integer'}," \
	"'sprint':{'type':['string','null']},'created':{'type':'string'},'updated':{'type':'string'}," \
	"'url':{'type':'string'}," \
	"'comments':{'type':'array','items':{'type':'object','properties':{'id':{'type':'integer'}," \
	"'author':" S_PERSON ",'body':{'type':'string'},'created':{'type':'string'}}}}}," \
	"'required':['key','summary','status','priority','issue_type','url']}"

static const struct cat_tool tools[] = {
	{ "search_issues", "Search tickets",
	  "Search tickets with JQL: clauses joined by AND (fields project, key, status, priority, "
	  "type, assignee, reporter, labels, sprint, summary, text, created, updated; operators "
	  "= != ~ > >= < <= IN NOT IN) and an optional ORDER BY created|updated|priority|key ASC|DESC.",
	  "{'type':'object','properties':{"
	  "'jql':{'type':'string','description':'JQL query, e.g. project = OPS AND status != Done ORDER BY priority DESC'},"
	  "'max_results':{'type':'integer','minimum':1,'maximum':100,'description':'Page size. Default 50.'},"
	  "'start_at':{'type':'integer','minimum':0,'description':'Index of the first result. Default 0.'}},"
	  "'required':['jql']}",
	  "{'type':'object','properties':{'total':{'type':'integer'},'start_at':{'type':'integer'},"
	  "'max_results':{'type':'integer'},'issues':{'type':'array','items':{'type':'object'}}},"
	  "'required':['total','issues']}",
	  CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, search_issues },
	{ "get_ticket", "Get a ticket",
	  "Get one ticket by key, with its comments.",
	  "{'type':'object','properties':{" P_KEY "},'required':['key']}",
	  S_TICKET, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, get_ticket },
	{ "create_ticket", "Create a ticket",
	  "Create a ticket in a project.",
	  "{'type':'object','properties':{"
	  "'project':{'type':'string','description':'Project key, e.g. OPS.'},"
	  "'summary':{'type':'string','minLength':1,'description':'One-line summary.'},"
	  "'issue_type':{'type':'string','enum':['Bug','Task','Story','Incident'],'description':'Kind of ticket.'},"
	  "'description':{'type':'string','description':'Longer description.'},"
	  "'priority':{'type':'string','enum':['Highest','High','Medium','Low','Lowest'],'description':'Priority. Default Medium.'},"
	  "'labels':{'type':'array','items':{'type':'string'},'description':'Labels to apply.'},"
	  "'assignee':{'type':'string','description':'Account id or display name of the assignee.'}},"
	  "'required':['project','summary','issue_type']}",
	  "{'type':'object','properties':{'key':{'type':'string'},'id':{'type':'integer'},"
	  "'summary':{'type':'string'},'status':{'type':'string'},'url':{'type':'string'}},"
	  "'required':['key','id','url']}",
	  CAT_OPEN_WORLD, create_ticket },
	{ "transition_ticket", "Transition a ticket",
	  "Move a ticket to another status.",
	  "{'type':'object','properties':{" P_KEY ","
	  "'status':{'type':'string','enum':['To Do','In Progress','In Review','Done'],'description':'The new status.'},"
	  "'comment':{'type':'string','description':'Optional comment to add with the transition.'}},"
	  "'required':['key','status']}",
	  "{'type':'object','properties':{'key':{'type':'string'},'from':{'type':'string'},'to':{'type':'string'}},"
	  "'required':['key','from','to']}",
	  CAT_IDEMPOTENT | CAT_OPEN_WORLD, transition_ticket },
	{ "add_comment", "Comment on a ticket",
	  "Add a comment to a ticket.",
	  "{'type':'object','properties':{" P_KEY ","
	  "'body':{'type':'string','minLength':1,'description':'Comment text.'}},"
	  "'required':['key','body']}",
	  NULL, CAT_OPEN_WORLD, add_comment },
	{ "assign_ticket", "Assign a ticket",
	  "Assign a ticket to a user, or unassign it with null.",
	  "{'type':'object','properties':{" P_KEY ","
	  "'assignee':{'type':['string','null'],'description':'Account id or display name; null unassigns.'}},"
	  "'required':['key','assignee']}",
	  NULL, CAT_IDEMPOTENT | CAT_OPEN_WORLD, assign_ticket },
	{ "list_projects", "List projects",
	  "List the projects visible to the user.",
	  "{'type':'object','properties':{}}",
	  "{'type':'object','properties':{'projects':{'type':'array','items':{'type':'object','properties':{"
	  "'key':{'type':'string'},'name':{'type':'string'},'description':{'type':'string'},"
	  "'lead':" S_PERSON ",'issue_count':{'type':'integer'},'url':{'type':'string'}},"
	  "'required':['key','name']}}},'required':['projects']}",
	  CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, list_projects },
	{ "get_project", "Get a project",
	  "Get a project by key, with its issue types and statuses.",
	  "{'type':'object','properties':{'key':{'type':'string','description':'Project key, e.g. OPS.'}},"
	  "'required':['key']}",
	  NULL, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, get_project },
	{ "list_sprints", "List sprints",
	  "List the sprints of a project.",
	  "{'type':'object','properties':{"
	  "'project':{'type':'string','description':'Project key, e.g. OPS.'},"
	  "'state':{'type':'string','enum':['active','future','closed'],'description':'Only sprints in this state.'}},"
	  "'required':['project']}",
	  NULL, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, list_sprints },
	{ "get_transitions", "Get transitions",
	  "List the statuses a ticket can move to.",
	  "{'type':'object','properties':{" P_KEY "},'required':['key']}",
	  NULL, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, get_transitions },
};

static const struct cat_prompt prompt = {
	"triage_ticket", "Triage a ticket",
	"Ask for a triage of one ticket.",
	"key", "The ticket key, e.g. OPS-3.",
	"Triage ticket {}: read it with get_ticket, find pull requests that mention it in "
	"the github back end, and propose a priority and an owner.",
};

const struct cat_backend cat_jira = {
	.name = "jira",
	.title = "Jira (fake)",
	.tools = tools,
	.ntools = sizeof(tools) / sizeof(tools[0]),
	.readme = "# Fake Jira\n\nProjects **OPS** (OPS-1..OPS-40) and **PLAT** (PLAT-1..PLAT-12).\n"
		  "search_issues takes a small JQL: `project = OPS AND status != Done ORDER BY priority DESC`.\n"
		  "Linked pull requests live in the github back end.\n",
	.stats = stats,
	.prompt = &prompt,
};

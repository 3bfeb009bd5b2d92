/*
 * generated.c: --tools N, N generated tools beside the back end's, for the
 * scale benchmark (bench/scale.mjs) and the large-catalog tests; and the
 * back end "generated", which has no tools of its own (nor the test
 * tools): with --tools N it lists exactly N.
 *
 * Each tool reads like a real server's: a verb_noun name, a description of
 * two or three sentences, and an inputSchema of two to five described
 * properties (strings, integers, enums, booleans), one or two required. A
 * call answers with its arguments. Everything is seeded from the server's
 * name and the tool's index, so a list reads the same in every run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"

static const char *const verbs[] = {
	"list", "get", "create", "update", "delete", "search", "archive", "export",
	"import", "sync", "approve", "assign", "close", "merge", "rotate", "restore",
};
static const char *const nouns[] = {
	"invoice", "customer", "ticket", "deployment", "repository", "dashboard", "alert",
	"user", "project", "report", "secret", "bucket", "pipeline", "incident", "order",
	"subscription", "webhook", "document", "calendar_event", "contact", "build",
	"release", "schedule", "workspace", "label", "comment", "payment", "shipment",
};
static const char *const params[][2] = {
	{ "id", "The identifier of the record, as returned by the list call." },
	{ "query", "Free text matched against names, titles and descriptions." },
	{ "limit", "How many records to return at most; the server caps it at 100." },
	{ "owner", "The account or organisation that owns the record." },
	{ "since", "Only records changed after this ISO 8601 date." },
	{ "status", "Only records in this state." },
	{ "dry_run", "Validate the request and report what would change, without changing it." },
	{ "note", "A short comment stored with the change and shown in the history." },
	{ "region", "The region the record lives in, such as eu-west-1." },
	{ "page_token", "The token of the page to read, from the previous answer." },
};
#define NPARAMS (sizeof(params) / sizeof(params[0]))
static const char *const sentences[] = {
	"Results are sorted by the time they last changed, newest first.",
	"Requires the read scope; writes also need the write scope.",
	"Use the search call first when only a name is known.",
	"Deleted records are kept for thirty days and can be restored.",
	"Large answers are paged: pass page_token to read the next page.",
	"Dates are ISO 8601 in UTC.",
	"The call is idempotent: repeating it with the same arguments changes nothing more.",
	"Rate limited to sixty calls a minute per token.",
	"Fields the caller may not read are left out of the answer.",
	"Changes are recorded in the audit history with the caller and the note.",
};

#define NSENTENCES (sizeof(sentences) / sizeof(sentences[0]))

static int call_generated(struct cat_req *rq)
{
	rq->data = yyjson_val_mut_copy(rq->doc, rq->args);
	return CAT_OK;
}

static char *schema_for(struct cat_rng *r)
{
	char *s = cat_xmalloc(2048), *p = s;
	size_t nprops = (size_t)cat_rng_range(r, 2, 5), first = (size_t)cat_rng_range(r, 0, NPARAMS - 1);
	size_t nreq = (size_t)cat_rng_range(r, 1, 2);

	p += sprintf(p, "{'type':'object','properties':{");
	for (size_t i = 0; i < nprops; i++) {
		size_t k = (first + i * 3) % NPARAMS;
		const char *type = k == 2 ? "'type':'integer','minimum':1,'maximum':100" :
				   k == 5 ? "'type':'string','enum':['open','closed','pending']" :
				   k == 6 ? "'type':'boolean'" : "'type':'string'";
		p += sprintf(p, "%s'%s':{%s,'description':'%s'}", i ? "," : "", params[k][0], type,
			     params[k][1]);
	}
	p += sprintf(p, "},'required':[");
	for (size_t i = 0; i < nreq && i < nprops; i++)
		p += sprintf(p, "%s'%s'", i ? "," : "", params[(first + i * 3) % NPARAMS][0]);
	sprintf(p, "],'additionalProperties':false}");
	return s;
}

static struct cat_tool *made;
static size_t nmade;

int cat_generate_tools(struct cat_server *srv, size_t n)
{
	made = n ? calloc(n, sizeof(*made)) : NULL;
	if (n && !made)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct cat_tool *t = &made[nmade++];
		struct cat_rng r;
		char name[96], desc[640];
		const char *verb, *noun;

		cat_rng_seed(&r, "generated %s %zu", srv->name, i);
		verb = cat_rng_pick(&r, verbs, sizeof(verbs) / sizeof(verbs[0]));
		noun = cat_rng_pick(&r, nouns, sizeof(nouns) / sizeof(nouns[0]));
		snprintf(name, sizeof(name), "%s_%s_%zu", verb, noun, i);
		size_t k = (size_t)cat_rng_range(&r, 0, (int64_t)NSENTENCES - 1);
		snprintf(desc, sizeof(desc), "%c%s one %s or many in %s. %s %s", verb[0] - 32, verb + 1,
			 noun, srv->name, sentences[k], sentences[(k + 3) % NSENTENCES]);
		t->name = cat_strdup(name);
		t->description = cat_strdup(desc);
		t->input_schema = schema_for(&r);
		t->hints = !strcmp(verb, "list") || !strcmp(verb, "get") || !strcmp(verb, "search") ?
			   CAT_RO : 0;
		t->fn = call_generated;
		if (cat_add_tool(srv, t, NULL) < 0)
			return -1;
	}
	return 0;
}

void cat_generated_free(void)
{
	for (size_t i = 0; i < nmade; i++) {
		free((char *)made[i].name);
		free((char *)made[i].description);
		free((char *)made[i].input_schema);
	}
	free(made);
	made = NULL;
	nmade = 0;
}

static void stats(const struct cat_server *srv, yyjson_mut_doc *doc, yyjson_mut_val *obj)
{
	yyjson_mut_obj_add_uint(doc, obj, "tools", srv->ntools);
}

static const struct cat_prompt prompt = {
	"tool_digest", "Tool digest",
	"Ask which generated tool fits a task.",
	"task", "What the tool should do.",
	"Find the generated tool that can {}: search the list, then describe it.",
};

const struct cat_backend cat_generated = {
	.name = "generated",
	.title = "Generated tools (fake)",
	.readme = "# Generated tools\n\nOnly the tools --tools N generates.\n",
	.stats = stats,
	.prompt = &prompt,
};

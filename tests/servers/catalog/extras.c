/*
 * extras.c: resources, resource templates, prompts and completion.
 *
 * Every back end has the same shape: three fixed resources
 * (catalog://<backend>/readme as markdown, /stats as JSON, /logo.png as a
 * base64 blob), one template catalog://<backend>/item/{id} that resolves for
 * any id, the prompt "summarize" {topic, style?} and one prompt of its own.
 * completion/complete offers the styles of "summarize" and the ids 1, 2, 3 of
 * the item template, filtered by prefix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"

/* A 1x1 PNG. */
static const char logo_png_base64[] =
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

static const char *const styles[] = { "brief", "detailed", "bullet" };
static const char *const item_ids[] = { "1", "2", "3" };

static void uri_of(char *out, size_t cap, const struct cat_server *srv,
		   const char *leaf)
{
	snprintf(out, cap, "catalog://%s/%s", srv->backend->name, leaf);
}

static void add_resource(const struct cat_server *srv, yyjson_mut_doc *doc,
			 yyjson_mut_val *list, const char *leaf, const char *title,
			 const char *mime, const char *description)
{
	char uri[128];
	uri_of(uri, sizeof(uri), srv, leaf);
	yyjson_mut_val *r = yyjson_mut_arr_add_obj(doc, list);
	yyjson_mut_obj_add_strcpy(doc, r, "uri", uri);
	yyjson_mut_obj_add_str(doc, r, "name", leaf);
	yyjson_mut_obj_add_str(doc, r, "title", title);
	yyjson_mut_obj_add_str(doc, r, "description", description);
	yyjson_mut_obj_add_str(doc, r, "mimeType", mime);
}

int cat_resources_list(struct cat_server *srv, yyjson_val *params,
		       yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg, size_t cap)
{
	yyjson_mut_val *res = yyjson_mut_obj(doc);
	yyjson_mut_val *list = yyjson_mut_obj_add_arr(doc, res, "resources");
	add_resource(srv, doc, list, "readme", "Readme", "text/markdown",
		     "What this fake back end serves.");
	add_resource(srv, doc, list, "stats", "Statistics", "application/json",
		     "Record counts of the fake data set.");
	add_resource(srv, doc, list, "logo.png", "Logo", "image/png",
		     "A tiny PNG image (a blob resource).");
	*out = res;
	return 0;
}

int cat_templates_list(struct cat_server *srv, yyjson_val *params,
		       yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg, size_t cap)
{
	char uri[128];
	uri_of(uri, sizeof(uri), srv, "item/{id}");
	yyjson_mut_val *res = yyjson_mut_obj(doc);
	yyjson_mut_val *list = yyjson_mut_obj_add_arr(doc, res, "resourceTemplates");
	yyjson_mut_val *t = yyjson_mut_arr_add_obj(doc, list);
	yyjson_mut_obj_add_strcpy(doc, t, "uriTemplate", uri);
	yyjson_mut_obj_add_str(doc, t, "name", "item");
	yyjson_mut_obj_add_str(doc, t, "title", "Item by id");
	yyjson_mut_obj_add_str(doc, t, "description",
			       "Any item of the back end, by id; every id resolves.");
	yyjson_mut_obj_add_str(doc, t, "mimeType", "application/json");
	*out = res;
	return 0;
}

static yyjson_mut_val *content_of(yyjson_mut_doc *doc, yyjson_mut_val *res,
				  const char *uri, const char *mime)
{
	yyjson_mut_val *list = yyjson_mut_obj_add_arr(doc, res, "contents");
	yyjson_mut_val *c = yyjson_mut_arr_add_obj(doc, list);
	yyjson_mut_obj_add_strcpy(doc, c, "uri", uri);
	yyjson_mut_obj_add_str(doc, c, "mimeType", mime);
	return c;
}

static void add_json_text(yyjson_mut_doc *doc, yyjson_mut_val *c,
			  yyjson_mut_val *data)
{
	size_t len = 0;
	char *s = yyjson_mut_val_write(data, 0, &len);
	yyjson_mut_obj_add_strncpy(doc, c, "text", s ? s : "{}", s ? len : 2);
	free(s);
}

int cat_resources_read(struct cat_server *srv, yyjson_val *params,
		       yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg, size_t cap)
{
	const char *uri = yyjson_get_str(yyjson_obj_get(params, "uri"));
	if (!uri) {
		snprintf(msg, cap, "Invalid params: uri is required");
		return -32602;
	}
	char prefix[64];
	uri_of(prefix, sizeof(prefix), srv, "");
	size_t plen = strlen(prefix);
	const char *leaf = strncmp(uri, prefix, plen) ? "" : uri + plen;
	yyjson_mut_val *res = yyjson_mut_obj(doc);

	if (!strcmp(leaf, "readme")) {
		yyjson_mut_val *c = content_of(doc, res, uri, "text/markdown");
		yyjson_mut_obj_add_str(doc, c, "text", srv->backend->readme);
	} else if (!strcmp(leaf, "stats")) {
		yyjson_mut_val *c = content_of(doc, res, uri, "application/json");
		yyjson_mut_val *stats = yyjson_mut_obj(doc);
		yyjson_mut_obj_add_str(doc, stats, "backend", srv->backend->name);
		yyjson_mut_obj_add_bool(doc, stats, "large_results", srv->large);
		srv->backend->stats(srv, doc, stats);
		add_json_text(doc, c, stats);
	} else if (!strcmp(leaf, "logo.png")) {
		yyjson_mut_val *c = content_of(doc, res, uri, "image/png");
		yyjson_mut_obj_add_str(doc, c, "blob", logo_png_base64);
	} else if (!strncmp(leaf, "item/", 5) && leaf[5] && !strchr(leaf + 5, '/')) {
		const char *id = leaf + 5;
		yyjson_mut_val *c = content_of(doc, res, uri, "application/json");
		struct cat_rng r;
		cat_rng_seed(&r, "%s item %s", srv->backend->name, id);
		char name[300], created[32];
		snprintf(name, sizeof(name), "%s item %.200s", srv->backend->name, id);
		cat_iso_date(created, CAT_EPOCH_2024 + cat_rng_range(&r, 0, 365 * 86400));
		yyjson_mut_val *item = yyjson_mut_obj(doc);
		yyjson_mut_obj_add_strcpy(doc, item, "id", id);
		yyjson_mut_obj_add_str(doc, item, "backend", srv->backend->name);
		yyjson_mut_obj_add_strcpy(doc, item, "name", name);
		yyjson_mut_obj_add_strcpy(doc, item, "created_at", created);
		yyjson_mut_obj_add_int(doc, item, "score", cat_rng_range(&r, 1, 100));
		add_json_text(doc, c, item);
	} else {
		/* MCP 2025-11-25 resources: unknown resource is -32002. */
		snprintf(msg, cap, "Resource not found");
		return -32002;
	}
	*out = res;
	return 0;
}

static void add_argument(yyjson_mut_doc *doc, yyjson_mut_val *list,
			 const char *name, const char *description, bool required)
{
	yyjson_mut_val *a = yyjson_mut_arr_add_obj(doc, list);
	yyjson_mut_obj_add_str(doc, a, "name", name);
	yyjson_mut_obj_add_str(doc, a, "description", description);
	yyjson_mut_obj_add_bool(doc, a, "required", required);
}

int cat_prompts_list(struct cat_server *srv, yyjson_val *params,
		     yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg, size_t cap)
{
	const struct cat_prompt *bp = srv->backend->prompt;
	yyjson_mut_val *res = yyjson_mut_obj(doc);
	yyjson_mut_val *list = yyjson_mut_obj_add_arr(doc, res, "prompts");
	yyjson_mut_val *p = yyjson_mut_arr_add_obj(doc, list);
	yyjson_mut_obj_add_str(doc, p, "name", "summarize");
	yyjson_mut_obj_add_str(doc, p, "title", "Summarize");
	yyjson_mut_obj_add_str(doc, p, "description",
			       "Summarize a topic from this back end.");
	yyjson_mut_val *args = yyjson_mut_obj_add_arr(doc, p, "arguments");
	add_argument(doc, args, "topic", "What to summarize.", true);
	add_argument(doc, args, "style", "brief, detailed or bullet.", false);

	p = yyjson_mut_arr_add_obj(doc, list);
	yyjson_mut_obj_add_str(doc, p, "name", bp->name);
	yyjson_mut_obj_add_str(doc, p, "title", bp->title);
	yyjson_mut_obj_add_str(doc, p, "description", bp->description);
	args = yyjson_mut_obj_add_arr(doc, p, "arguments");
	add_argument(doc, args, bp->arg, bp->arg_description, true);
	*out = res;
	return 0;
}

static yyjson_mut_val *user_message(yyjson_mut_doc *doc, yyjson_mut_val *res,
				    const char *text)
{
	yyjson_mut_val *list = yyjson_mut_obj_add_arr(doc, res, "messages");
	yyjson_mut_val *m = yyjson_mut_arr_add_obj(doc, list);
	yyjson_mut_obj_add_str(doc, m, "role", "user");
	yyjson_mut_val *c = yyjson_mut_obj_add_obj(doc, m, "content");
	yyjson_mut_obj_add_str(doc, c, "type", "text");
	yyjson_mut_obj_add_strcpy(doc, c, "text", text);
	return m;
}

int cat_prompts_get(struct cat_server *srv, yyjson_val *params,
		    yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg, size_t cap)
{
	const struct cat_prompt *bp = srv->backend->prompt;
	const char *name = yyjson_get_str(yyjson_obj_get(params, "name"));
	yyjson_val *args = yyjson_obj_get(params, "arguments");
	char text[2048];
	yyjson_mut_val *res = yyjson_mut_obj(doc);
	if (name && !strcmp(name, "summarize")) {
		const char *topic = yyjson_get_str(yyjson_obj_get(args, "topic"));
		const char *style = yyjson_get_str(yyjson_obj_get(args, "style"));
		if (!topic) {
			snprintf(msg, cap, "Invalid params: missing required argument: topic");
			return -32602;
		}
		snprintf(text, sizeof(text),
			 "Summarize %.800s using the %s data, in a %.100s style.",
			 topic, srv->backend->title, style ? style : "brief");
		yyjson_mut_obj_add_str(doc, res, "description", "Summarize a topic");
	} else if (name && !strcmp(name, bp->name)) {
		const char *v = yyjson_get_str(yyjson_obj_get(args, bp->arg));
		if (!v) {
			snprintf(msg, cap, "Invalid params: missing required argument: %s",
				 bp->arg);
			return -32602;
		}
		/* The template marks the argument with {}. */
		const char *hole = strstr(bp->text, "{}");
		int head = hole ? (int)(hole - bp->text) : (int)strlen(bp->text);
		snprintf(text, sizeof(text), "%.*s%.800s%s", head, bp->text, v,
			 hole ? hole + 2 : "");
		yyjson_mut_obj_add_str(doc, res, "description", bp->description);
	} else {
		snprintf(msg, cap, "Invalid params: unknown prompt: %.200s",
			 name ? name : "(none)");
		return -32602;
	}
	user_message(doc, res, text);
	*out = res;
	return 0;
}

int cat_complete(struct cat_server *srv, yyjson_val *params,
		 yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg, size_t cap)
{
	yyjson_val *ref = yyjson_obj_get(params, "ref");
	yyjson_val *arg = yyjson_obj_get(params, "argument");
	const char *type = yyjson_get_str(yyjson_obj_get(ref, "type"));
	const char *argname = yyjson_get_str(yyjson_obj_get(arg, "name"));
	const char *value = yyjson_get_str(yyjson_obj_get(arg, "value"));
	if (!type || !argname) {
		snprintf(msg, cap, "Invalid params: ref.type and argument.name are required");
		return -32602;
	}
	if (!value)
		value = "";

	const char *const *pool = NULL;
	size_t npool = 0;
	if (!strcmp(type, "ref/prompt")) {
		const char *name = yyjson_get_str(yyjson_obj_get(ref, "name"));
		if (!name || (strcmp(name, "summarize") &&
			      strcmp(name, srv->backend->prompt->name))) {
			snprintf(msg, cap, "Invalid params: unknown prompt");
			return -32602;
		}
		if (!strcmp(name, "summarize") && !strcmp(argname, "style")) {
			pool = styles;
			npool = sizeof(styles) / sizeof(*styles);
		}
	} else if (!strcmp(type, "ref/resource")) {
		char tmpl[128];
		uri_of(tmpl, sizeof(tmpl), srv, "item/{id}");
		const char *uri = yyjson_get_str(yyjson_obj_get(ref, "uri"));
		if (!uri || strcmp(uri, tmpl)) {
			snprintf(msg, cap, "Invalid params: unknown resource template");
			return -32602;
		}
		if (!strcmp(argname, "id")) {
			pool = item_ids;
			npool = sizeof(item_ids) / sizeof(*item_ids);
		}
	} else {
		snprintf(msg, cap, "Invalid params: unknown ref type");
		return -32602;
	}

	yyjson_mut_val *res = yyjson_mut_obj(doc);
	yyjson_mut_val *c = yyjson_mut_obj_add_obj(doc, res, "completion");
	yyjson_mut_val *values = yyjson_mut_obj_add_arr(doc, c, "values");
	size_t total = 0;
	for (size_t i = 0; i < npool; i++) {
		if (!strncmp(pool[i], value, strlen(value))) {
			yyjson_mut_arr_add_str(doc, values, pool[i]);
			total++;
		}
	}
	yyjson_mut_obj_add_uint(doc, c, "total", total);
	yyjson_mut_obj_add_bool(doc, c, "hasMore", false);
	*out = res;
	return 0;
}

/*
 * Result types inferred from calls, for tools without outputSchema (see
 * discovery.h). The "discovery" stage's finish hook sees every call; the
 * first SL_INFER_SAMPLES successful results of a tool (each at most
 * SL_INFER_MAX_BYTES) are turned into a shape, merged, and kept as a JSON
 * Schema for tsgen. Only the shape is kept, never a value: no string,
 * number or key of a result leaves the call except object keys.
 *
 * Shapes are bounded: MAX_DEPTH levels (deeper is unknown), MAX_KEYS keys
 * per object (more: an open object), MAX_ITEMS items read per array, and
 * MAX_NODES shape nodes per tool.
 */
#include "discovery/discovery.h"
#include "core/map.h"
#include "pipeline/call.h"
#include "sandbox/sandbox.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 6
#define MAX_KEYS 48
#define MAX_ITEMS 32
#define MAX_NODES 2000

enum { K_NULL = 1, K_BOOL = 2, K_NUM = 4, K_STR = 8, K_ARR = 16, K_OBJ = 32 };

struct prop;

struct shape {
	unsigned kinds;
	struct shape *items;  /* K_ARR: the items merged, NULL if none seen */
	struct prop *props;
	size_t nprops;
	unsigned nobjs;       /* objects merged: a key seen in each is required */
	bool open;            /* keys were left out (MAX_KEYS, MAX_NODES) */
	bool deep;            /* below MAX_DEPTH: not described */
};

struct prop {
	char *key;
	struct shape *s;
	unsigned seen;
};

struct rec {
	struct shape *shape;
	size_t nodes;
	unsigned samples;
	char *json;  /* the schema, for tsgen */
};

/* The stage's state: what was learnt per tool. */
struct sl_infer {
	struct sl_map recs; /* "server\ntool" -> struct rec */
	size_t nrecs;
};

static void shape_free(struct shape *s)
{
	if (!s)
		return;
	shape_free(s->items);
	for (size_t i = 0; i < s->nprops; i++) {
		free(s->props[i].key);
		shape_free(s->props[i].s);
	}
	free(s->props);
	free(s);
}

static struct shape *shape_new(size_t *nodes)
{
	if (*nodes >= MAX_NODES)
		return NULL;
	++*nodes;
	return sl_alloc(sizeof(struct shape));
}

static void merge(struct shape *s, yyjson_mut_val *v, int depth, size_t *nodes)
{
	yyjson_mut_val *k, *it;
	size_t i, n;

	switch (yyjson_mut_get_type(v)) {
	case YYJSON_TYPE_NULL: s->kinds |= K_NULL; return;
	case YYJSON_TYPE_BOOL: s->kinds |= K_BOOL; return;
	case YYJSON_TYPE_NUM:
	case YYJSON_TYPE_RAW: s->kinds |= K_NUM; return;
	case YYJSON_TYPE_STR: s->kinds |= K_STR; return;
	case YYJSON_TYPE_ARR: s->kinds |= K_ARR; break;
	case YYJSON_TYPE_OBJ: s->kinds |= K_OBJ; break;
	default: return;
	}
	if (depth >= MAX_DEPTH) {
		s->deep = true;
		return;
	}
	if (yyjson_mut_is_arr(v)) {
		yyjson_mut_arr_foreach(v, i, n, it) {
			if (i >= MAX_ITEMS)
				break;
			if (!s->items && !(s->items = shape_new(nodes)))
				break;
			merge(s->items, it, depth + 1, nodes);
		}
		return;
	}
	s->nobjs++;
	yyjson_mut_obj_foreach(v, i, n, k, it) {
		const char *key = yyjson_mut_get_str(k);
		size_t j;
		for (j = 0; j < s->nprops && strcmp(s->props[j].key, key) != 0; j++)
			;
		if (j == s->nprops) {
			struct shape *ps = s->nprops < MAX_KEYS ? shape_new(nodes) : NULL;
			if (!ps) {
				s->open = true;
				continue;
			}
			s->props = sl_realloc(s->props, (s->nprops + 1) * sizeof(*s->props));
			s->props[j] = (struct prop){ sl_strdup(key), ps, 0 };
			s->nprops++;
		}
		s->props[j].seen++;
		merge(s->props[j].s, it, depth + 1, nodes);
	}
}

static yyjson_mut_val *kind_schema(yyjson_mut_doc *d, const struct shape *s, unsigned kind);

/* A shape as JSON Schema: one kind, or anyOf the kinds seen. */
static yyjson_mut_val *to_schema(yyjson_mut_doc *d, const struct shape *s)
{
	static const unsigned order[] = { K_OBJ, K_ARR, K_STR, K_NUM, K_BOOL, K_NULL };
	yyjson_mut_val *any;
	size_t n = 0;

	if (!s || s->kinds == 0)
		return yyjson_mut_obj(d); /* nothing seen: unknown */
	for (size_t i = 0; i < SL_COUNT(order); i++)
		n += (s->kinds & order[i]) != 0;
	if (n == 1)
		return kind_schema(d, s, s->kinds);
	any = yyjson_mut_arr(d);
	for (size_t i = 0; i < SL_COUNT(order); i++)
		if (s->kinds & order[i])
			yyjson_mut_arr_append(any, kind_schema(d, s, order[i]));
	yyjson_mut_val *o = yyjson_mut_obj(d);
	yyjson_mut_obj_add_val(d, o, "anyOf", any);
	return o;
}

static yyjson_mut_val *kind_schema(yyjson_mut_doc *d, const struct shape *s, unsigned kind)
{
	static const struct { unsigned kind; const char *name; } names[] = {
		{ K_NULL, "null" }, { K_BOOL, "boolean" }, { K_NUM, "number" },
		{ K_STR, "string" }, { K_ARR, "array" }, { K_OBJ, "object" },
	};
	yyjson_mut_val *o = yyjson_mut_obj(d);
	for (size_t i = 0; i < SL_COUNT(names); i++)
		if (names[i].kind == kind)
			yyjson_mut_obj_add_str(d, o, "type", names[i].name);
	if (kind == K_ARR && !s->deep && s->items)
		yyjson_mut_obj_add_val(d, o, "items", to_schema(d, s->items));
	if (kind == K_OBJ && !s->deep) {
		yyjson_mut_val *props = yyjson_mut_obj(d), *req = yyjson_mut_arr(d);
		for (size_t i = 0; i < s->nprops; i++) {
			/* Copied: the shape (and its keys) may be freed first. */
			yyjson_mut_obj_add(props, yyjson_mut_strcpy(d, s->props[i].key),
					   to_schema(d, s->props[i].s));
			if (s->props[i].seen == s->nobjs)
				yyjson_mut_arr_add_strcpy(d, req, s->props[i].key);
		}
		yyjson_mut_obj_add_val(d, o, "properties", props);
		yyjson_mut_obj_add_val(d, o, "required", req);
		if (s->open)
			yyjson_mut_obj_add_val(d, o, "additionalProperties", yyjson_mut_obj(d));
	}
	return o;
}

yyjson_mut_val *sl_infer_schema(yyjson_mut_doc *d, yyjson_mut_val *value)
{
	size_t nodes = 0;
	struct shape *s = shape_new(&nodes);
	yyjson_mut_val *r;
	merge(s, value, 0, &nodes);
	r = to_schema(d, s);
	shape_free(s);
	return r;
}

static char *key_of(const char *server, const char *tool)
{
	return sl_printf("%s\n%s", server, tool);
}

const char *sl_infer_get(const struct sl_infer *in, const char *server, const char *tool,
			 unsigned *samples)
{
	char *key;
	struct rec *r;
	if (!in) /* no discovery stage in the table: nothing learnt */
		return NULL;
	key = key_of(server, tool);
	r = sl_map_get(&in->recs, key);
	free(key);
	if (!r || !r->json)
		return NULL;
	if (samples)
		*samples = r->samples;
	return r->json;
}

void sl_infer_record(struct sl_infer *in, const char *server, const char *tool,
		     yyjson_val *result)
{
	char *key = key_of(server, tool);
	struct rec *r;
	yyjson_mut_doc *d;

	r = sl_map_get(&in->recs, key);
	if (!r) {
		if (in->nrecs >= SL_INFER_MAX_TOOLS) {
			free(key);
			return;
		}
		r = sl_alloc(sizeof(*r));
		r->shape = shape_new(&r->nodes);
		sl_map_put(&in->recs, key, r);
		in->nrecs++;
	}
	free(key);
	if (r->samples >= SL_INFER_SAMPLES)
		return;
	d = yyjson_mut_doc_new(NULL);
	merge(r->shape, sl_program_value(d, result), 0, &r->nodes);
	r->samples++;
	free(r->json);
	r->json = sl_json_write_mut_val(to_schema(d, r->shape), NULL);
	yyjson_mut_doc_free(d);
	if (r->samples == SL_INFER_SAMPLES) { /* final: only the schema is needed */
		shape_free(r->shape);
		r->shape = NULL;
	}
}

static void rec_free(const char *key, void *value, void *ctx)
{
	struct rec *r = value;
	shape_free(r->shape);
	free(r->json);
	free(r);
}

struct sl_infer *sl_infer_new(void)
{
	struct sl_infer *in = sl_alloc(sizeof(*in));
	sl_map_init(&in->recs);
	return in;
}

void sl_infer_free(struct sl_infer *in)
{
	sl_map_each(&in->recs, rec_free, NULL);
	sl_map_dispose(&in->recs);
	free(in);
}

/* The stage: samples the first successful results of each tool. The
 * upstream's own result (before redaction and the governor): its shape is
 * what a program gets, and a result shortened for the context would
 * describe the shortening instead. */
static void infer_finish(void *state, struct sl_call *c)
{
	/* A CreateTaskResult is not the tool's output (its fetch is). */
	if (c->outcome != SL_OUTCOME_OK || !c->result || !c->up || c->task_created ||
	    sl_json_true(c->result, "isError"))
		return;
	if (c->result_doc && yyjson_doc_get_read_size(c->result_doc) > SL_INFER_MAX_BYTES)
		return;
	sl_infer_record(state, c->up->name, c->tool, c->result);
}

static int infer_init(const struct sl_config *cfg, const struct sl_services *svc,
		      yyjson_val *section, void **state, struct sl_err *err)
{
	if (section) {
		sl_err_set(err, "sluice.discovery takes no settings");
		return SL_ERR_INVALID;
	}
	*state = sl_infer_new();
	return SL_OK;
}

static void infer_fini(void *state)
{
	sl_infer_free(state);
}

const struct sl_stage sl_stage_discovery = {
	.name = "discovery",
	.init = infer_init,
	.fini = infer_fini,
	.finish = infer_finish,
};

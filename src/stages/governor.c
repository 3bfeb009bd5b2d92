/*
 * The response governor; see governor.h and docs/stages/governor.md.
 *
 * Shortening keeps the shape a model can use: a JSON array keeps its first
 * items and gains a final marker string saying how many were omitted;
 * long strings are cut with a marker; plain text keeps its head and tail.
 */
#include "stages/governor.h"
#include "stages/results.h"
#include "config/conf.h"
#include "pipeline/call.h"
#include "core/buf.h"
#include "core/list.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH_MAX 64

struct sl_governor {
	bool enabled;
	size_t max_tokens;
	uint64_t ttl_ms;
	size_t store_bytes;
	size_t shared_bytes;
	/* 2026-07-28 callers' results (gateway/kept.h): each request is a
	 * session of its own, so results outlive it here, bound to the
	 * caller; within store_bytes and CALLERS_RESULTS_MAX entries. */
	struct sl_results *callers;
	struct sl_list waits;      /* calls waiting for Redis to hold their result, newest first */
	const struct sl_services *svc; /* the process's: its result keeper, if any */
};

struct gwait {
	struct sl_list link;       /* in the governor's waits */
	struct sl_call *c;
	const struct sl_governor *gov;
	struct sl_kept_wait *kw;
	size_t len;                /* the result's JSON: what the note says it was */
	char id[SL_KEPT_ID_SIZE];
};

#define CALLERS_RESULTS_MAX 4096

bool sl_governor_enabled(const struct sl_governor *gov)
{
	return gov->enabled;
}

size_t sl_governor_max_tokens(const struct sl_governor *gov)
{
	return gov->max_tokens;
}

uint64_t sl_governor_ttl_ms(const struct sl_governor *gov)
{
	return gov->ttl_ms;
}

size_t sl_governor_store_bytes(const struct sl_governor *gov)
{
	return gov->store_bytes;
}

size_t sl_governor_shared_bytes(const struct sl_governor *gov)
{
	return gov->shared_bytes;
}

struct sl_results *sl_governor_callers(const struct sl_governor *gov)
{
	return gov->callers;
}

#define GOV(field) SL_CONF_AT(struct sl_governor, field)
static const struct sl_conf_key governor_keys[] = {
	{ "enabled", SL_CONF_BOOL, GOV(enabled), .dflt = 1,
	  .doc = "`false`: results pass whole and `read_result` is not offered." },
	{ "maxTokens", SL_CONF_UINT, GOV(max_tokens), .min = 100, .max = 1000000, .dflt = 4000,
	  .doc = "The budget per result (tokens are estimated as bytes / 4)." },
	{ "ttlMs", SL_CONF_UINT, GOV(ttl_ms), .min = 1000, .max = UINT64_MAX,
	  .dflt = 30 * 60 * 1000,
	  .doc = "How long a whole result is kept for `read_result` (also in Redis, as its "
		 "expiry, with `sluice.shared.redis`)." },
	{ "maxStoreBytes", SL_CONF_UINT, GOV(store_bytes), .min = 1u << 20, .max = UINT64_MAX,
	  .dflt = 128u << 20,
	  .doc = "Memory cap of a session's store of whole results, and of the one store of "
		 "2026-07-28 callers' results (at most 4096 of them, each readable only by its "
		 "caller); the oldest go first." },
	{ "maxSharedBytes", SL_CONF_UINT, GOV(shared_bytes), .min = 1024, .max = 512u << 20,
	  .dflt = 1u << 20,
	  .doc = "With `sluice.shared.redis`: a whole result up to this size is kept in Redis too, "
		 "so any replica answers `read_result` for it; a larger one stays on the replica "
		 "that made it (its id starts with `r`)." },
};
#undef GOV

static const struct sl_conf_section governor_conf = {
	"sluice.governor",
	"The response governor: a token budget for everything that enters the model's context "
	"(docs/stages/governor.md).",
	governor_keys, SL_COUNT(governor_keys), SL_CONF_STRICT, NULL,
};

static int governor_init(const struct sl_config *cfg, const struct sl_services *svc,
			 yyjson_val *sec, void **state, struct sl_err *err)
{
	struct sl_governor *gov = sl_alloc(sizeof(*gov));
	int rc;

	sl_list_init(&gov->waits);
	rc = sl_conf_load(&governor_conf, sec, gov, err);

	if (rc < 0) {
		free(gov);
		return rc;
	}
	gov->svc = svc;
	gov->callers = sl_results_new(gov->ttl_ms, gov->store_bytes);
	sl_results_set_max_count(gov->callers, CALLERS_RESULTS_MAX);
	*state = gov;
	return SL_OK;
}

static void governor_fini(void *state)
{
	struct sl_governor *gov = state;
	sl_results_free(gov->callers);
	free(gov);
}

/* UTF-8 safe cut: never in the middle of a character. */
static size_t cut_at(const char *s, size_t len, size_t want)
{
	if (want >= len)
		return len;
	while (want > 0 && ((unsigned char)s[want] & 0xC0) == 0x80)
		want--;
	return want;
}

char *sl_governor_cut_text(const char *text, size_t len, size_t budget, const char *id,
			   size_t *out_len)
{
	size_t head = cut_at(text, len, budget * 2 / 3), tail_start, tail;
	char marker[256];
	struct sl_buf b;

	tail = budget / 4;
	tail_start = len > tail ? len - tail : 0;
	while (tail_start < len && ((unsigned char)text[tail_start] & 0xC0) == 0x80)
		tail_start++;
	if (tail_start < head)
		tail_start = head;
	snprintf(marker, sizeof(marker),
		 "\n[sluice: %zu of %zu characters omitted here%s%s%s]\n", tail_start - head, len,
		 id ? "; read them with read_result {\"result_id\": \"" : "", id ? id : "",
		 id ? "\"}" : "");
	sl_buf_init(&b, SIZE_MAX);
	(void)!sl_buf_append(&b, text, head);
	(void)!sl_buf_appends(&b, marker);
	(void)!sl_buf_append(&b, text + tail_start, len - tail_start);
	return sl_buf_take(&b, out_len);
}

/* Shortens v (copied into d) to roughly *budget bytes of JSON. */
static yyjson_mut_val *shorten(yyjson_mut_doc *d, yyjson_val *v, size_t *budget, int depth)
{
	size_t i, n;
	yyjson_val *it, *key;

	if (yyjson_is_str(v)) {
		size_t len = yyjson_get_len(v), keep;
		size_t cap = *budget / 2 > 200 ? *budget / 2 : 200;
		if (len <= cap) {
			*budget = *budget > len + 2 ? *budget - len - 2 : 0;
			return yyjson_val_mut_copy(d, v);
		}
		keep = cut_at(yyjson_get_str(v), len, cap);
		*budget = *budget > keep + 40 ? *budget - keep - 40 : 0;
		char *s = sl_printf("%.*s...[%zu more characters]", (int)keep, yyjson_get_str(v),
				    len - keep);
		yyjson_mut_val *r = yyjson_mut_strcpy(d, s);
		free(s);
		return r;
	}
	if (depth >= DEPTH_MAX || (!yyjson_is_arr(v) && !yyjson_is_obj(v))) {
		size_t len;
		char *s = sl_json_write_val(v, &len);
		free(s);
		*budget = *budget > len ? *budget - len : 0;
		return yyjson_val_mut_copy(d, v);
	}
	if (yyjson_is_arr(v)) {
		yyjson_mut_val *arr = yyjson_mut_arr(d);
		size_t kept = 0;
		n = yyjson_arr_size(v);
		yyjson_arr_foreach(v, i, n, it) {
			/* Always keep the first item, then only what fits. */
			if (kept > 0 && *budget < 64)
				break;
			yyjson_mut_arr_append(arr, shorten(d, it, budget, depth + 1));
			kept++;
		}
		if (kept < n) {
			char *s = sl_printf("[sluice: %zu more items omitted]", n - kept);
			yyjson_mut_arr_add_strcpy(d, arr, s);
			free(s);
		}
		return arr;
	}
	yyjson_mut_val *obj = yyjson_mut_obj(d);
	yyjson_obj_foreach(v, i, n, key, it) {
		size_t kl = yyjson_get_len(key) + 4;
		*budget = *budget > kl ? *budget - kl : 0;
		yyjson_mut_obj_add_val(d, obj, yyjson_get_str(key), shorten(d, it, budget, depth + 1));
	}
	return obj;
}

/* A text block: JSON text is shortened structurally, other text by cutting. */
static yyjson_mut_val *shorten_text_block(yyjson_mut_doc *d, const char *text, size_t len,
					  size_t budget, const char *id)
{
	const char *t = text + strspn(text, " \t\r\n");
	char *out;
	size_t olen;
	yyjson_mut_val *v;

	if (*t == '{' || *t == '[') {
		yyjson_doc *j = sl_json_read(text, len, SL_JSON_READ_FLAGS, NULL);
		if (j) {
			size_t b = budget;
			yyjson_mut_doc *tmp = yyjson_mut_doc_new(NULL);
			yyjson_mut_val *sv = shorten(tmp, yyjson_doc_get_root(j), &b, 0);
			out = sl_json_write_mut_val(sv, &olen);
			yyjson_mut_doc_free(tmp);
			yyjson_doc_free(j);
			v = yyjson_mut_strncpy(d, out, olen);
			free(out);
			return v;
		}
	}
	out = sl_governor_cut_text(text, len, budget, id, &olen);
	v = yyjson_mut_strncpy(d, out, olen);
	free(out);
	return v;
}

/* ---- invoke_tool's fields projection -------------------------------------- */

/* A copy of object o with only the named fields ("a" or "a.b.c"). */
static yyjson_mut_val *project_obj(yyjson_mut_doc *d, yyjson_val *o, yyjson_mut_val *fields,
				   int depth)
{
	yyjson_mut_val *out = yyjson_mut_obj(d), *f;
	size_t i, n;

	yyjson_mut_arr_foreach(fields, i, n, f) {
		const char *path = yyjson_mut_get_str(f), *dot = strchr(path, '.');
		size_t kl = dot ? (size_t)(dot - path) : strlen(path);
		char *key = sl_strndup(path, kl);
		yyjson_val *v = yyjson_obj_get(o, key);

		if (v && !yyjson_mut_obj_get(out, key)) {
			if (dot && yyjson_is_obj(v) && depth < DEPTH_MAX) {
				/* Every field under this key, relative to it. */
				yyjson_mut_val *sub = yyjson_mut_arr(d), *g;
				size_t j, m;
				yyjson_mut_arr_foreach(fields, j, m, g) {
					const char *q = yyjson_mut_get_str(g);
					if (strncmp(q, path, kl) == 0 && q[kl] == '.')
						yyjson_mut_arr_add_strcpy(d, sub, q + kl + 1);
				}
				/* The key is copied: add_val would only borrow it. */
				yyjson_mut_obj_add(out, yyjson_mut_strcpy(d, key), project_obj(d, v, sub, depth + 1));
			} else if (!dot) {
				yyjson_mut_obj_add(out, yyjson_mut_strcpy(d, key), yyjson_val_mut_copy(d, v));
			}
		}
		free(key);
	}
	return out;
}

/* Objects keep only the fields; an array of objects, each of them. */
static yyjson_mut_val *project(yyjson_mut_doc *d, yyjson_val *v, yyjson_mut_val *fields)
{
	if (yyjson_is_obj(v))
		return project_obj(d, v, fields, 0);
	if (yyjson_is_arr(v)) {
		yyjson_mut_val *arr = yyjson_mut_arr(d);
		yyjson_val *it;
		size_t i, n;
		yyjson_arr_foreach(v, i, n, it)
			yyjson_mut_arr_append(arr, yyjson_is_obj(it) ? project_obj(d, it, fields, 0) :
						   yyjson_val_mut_copy(d, it));
		return arr;
	}
	return yyjson_val_mut_copy(d, v);
}

/* Applies c->fields to structuredContent and to text blocks holding JSON. */
static void apply_fields(struct sl_call *c)
{
	yyjson_doc *vd;
	yyjson_val *r = sl_call_result_view(c, &vd), *sc, *b;
	yyjson_mut_val *nr = yyjson_mut_obj(c->doc), *content = yyjson_mut_arr(c->doc);
	size_t i, n;

	yyjson_arr_foreach(sl_json_arr(r, "content"), i, n, b) {
		const char *text = sl_json_str(b, "text");
		yyjson_doc *j = text ? sl_json_read(text, strlen(text), SL_JSON_READ_FLAGS, NULL) : NULL;
		if (j && (yyjson_is_obj(yyjson_doc_get_root(j)) || yyjson_is_arr(yyjson_doc_get_root(j)))) {
			yyjson_mut_doc *tmp = yyjson_mut_doc_new(NULL);
			size_t len;
			char *out = sl_json_write_mut_val(project(tmp, yyjson_doc_get_root(j), c->fields), &len);
			yyjson_mut_val *nb = yyjson_mut_obj(c->doc);
			yyjson_mut_obj_add_str(c->doc, nb, "type", "text");
			yyjson_mut_obj_add_strncpy(c->doc, nb, "text", out, len);
			yyjson_mut_arr_append(content, nb);
			free(out);
			yyjson_mut_doc_free(tmp);
		} else {
			yyjson_mut_arr_append(content, yyjson_val_mut_copy(c->doc, b));
		}
		yyjson_doc_free(j);
	}
	yyjson_mut_obj_add_val(c->doc, nr, "content", content);
	if ((sc = yyjson_obj_get(r, "structuredContent")))
		yyjson_mut_obj_add_val(c->doc, nr, "structuredContent", project(c->doc, sc, c->fields));
	if (sl_json_true(r, "isError"))
		yyjson_mut_obj_add_bool(c->doc, nr, "isError", true);
	c->mresult = nr;
	yyjson_doc_free(vd);
}

/* Replaces the call's result (len bytes of JSON) with its shortened form;
 * id (may be NULL) names the whole one for read_result. */
static void cut_result(const struct sl_governor *gov, struct sl_call *c, const char *id, size_t len)
{
	yyjson_doc *vd;
	yyjson_val *r = sl_call_result_view(c, &vd), *content, *b, *sc;
	yyjson_mut_val *nr, *ncontent, *blk;
	size_t budget, i, n;
	char note[256];

	budget = gov->max_tokens * 4;
	nr = yyjson_mut_obj(c->doc);
	ncontent = yyjson_mut_arr(c->doc);
	content = sl_json_arr(r, "content");
	sc = yyjson_obj_get(r, "structuredContent");
	/* Budget shared by the blocks (and structuredContent, if any). */
	n = yyjson_arr_size(content) + (sc ? 1 : 0);
	yyjson_arr_foreach(content, i, n, b) {
		const char *type = sl_json_str(b, "type"), *text = sl_json_str(b, "text");
		size_t share = budget / (yyjson_arr_size(content) + (sc ? 1 : 0));
		if (type && strcmp(type, "text") == 0 && text) {
			blk = yyjson_mut_obj(c->doc);
			yyjson_mut_obj_add_str(c->doc, blk, "type", "text");
			yyjson_mut_obj_add_val(c->doc, blk, "text",
					       shorten_text_block(c->doc, text, strlen(text), share, id));
			yyjson_mut_arr_append(ncontent, blk);
		} else {
			size_t bl;
			char *bj = sl_json_write_val(b, &bl);
			free(bj);
			if (bl <= share)
				yyjson_mut_arr_append(ncontent, yyjson_val_mut_copy(c->doc, b));
		}
	}
	if (sc) {
		size_t share = budget / (yyjson_arr_size(content) + 1);
		yyjson_mut_obj_add_val(c->doc, nr, "structuredContent", shorten(c->doc, sc, &share, 0));
	}
	snprintf(note, sizeof(note),
		 "[sluice: this result was shortened from about %zu to about %zu tokens%s%s%s]",
		 sl_tokens(len), gov->max_tokens, id ? "; the whole of it: read_result {\"result_id\": \"" : "",
		 id ? id : "", id ? "\"}" : "");
	blk = yyjson_mut_obj(c->doc);
	yyjson_mut_obj_add_str(c->doc, blk, "type", "text");
	yyjson_mut_obj_add_strcpy(c->doc, blk, "text", note);
	yyjson_mut_arr_append(ncontent, blk);
	yyjson_mut_obj_add_val(c->doc, nr, "content", ncontent);
	if (sl_json_true(r, "isError"))
		yyjson_mut_obj_add_bool(c->doc, nr, "isError", true);
	c->mresult = nr;
	yyjson_doc_free(vd);
}

/* The shortened answer waits until Redis has the whole one, so that a
 * read_result on another replica right after finds it. The call holds
 * its generation, so gov outlives the wait; a cancelled call is unlinked
 * at once (the write goes on; its callback is abandoned). */
static void unlink_wait(struct gwait *w)
{
	sl_list_remove(&w->link);
}

static void on_kept(void *ctx, bool ok)
{
	struct gwait *w = ctx;
	struct sl_call *c = w->c;

	unlink_wait(w);
	cut_result(w->gov, c, w->id, w->len);
	free(w);
	sl_call_resume(c);
}

/* The keeper of whole results (governor.h), or NULL. */
static const struct sl_keeper *keeper(const struct sl_governor *gov)
{
	return gov->svc ? gov->svc->keeper : NULL;
}

static void governor_cancel(void *state, struct sl_call *c)
{
	struct sl_governor *gov = state;
	struct sl_list *n;

	sl_list_each(n, &gov->waits) {
		struct gwait *w = sl_list_entry(n, struct gwait, link);
		if (w->c == c) {
			unlink_wait(w);
			keeper(gov)->abandon(w->kw);
			free(w);
			sl_call_resume(c);
			return;
		}
	}
}

static enum sl_stage_rc governor_response(void *state, struct sl_call *c)
{
	struct sl_governor *gov = state;
	yyjson_doc *vd;
	yyjson_val *r;
	size_t len;
	char *json;
	const char *id = NULL;
	char kid[SL_KEPT_ID_SIZE];
	struct gwait *w = NULL;
	const struct sl_keeper *k = keeper(gov);

	/* The projection the caller asked for comes first: it is not the
	 * governor's cut, and applies even with the budget off. */
	if (c->fields && c->outcome == SL_OUTCOME_OK && !sl_json_true(c->result, "isError"))
		apply_fields(c);
	/* Programs get whole results, never shortened ones. */
	if (!gov->enabled || c->origin == SL_ORIGIN_CODE || c->outcome != SL_OUTCOME_OK)
		return SL_STAGE_DECLINED;
	r = sl_call_result_view(c, &vd);
	json = sl_json_write_val(r, &len);
	if (sl_tokens(len) <= gov->max_tokens) {
		free(json);
		yyjson_doc_free(vd);
		return SL_STAGE_DECLINED;
	}
	if (c->session && k) {
		/* Keep what read_result should page through: the text of a lone
		 * text block, else the whole result as JSON. */
		yyjson_val *only = yyjson_arr_size(sl_json_arr(r, "content")) == 1 ?
				   yyjson_arr_get_first(sl_json_arr(r, "content")) : NULL;
		const char *t = only && !yyjson_obj_get(r, "structuredContent") ? sl_json_str(only, "text") : NULL;
		char *keep = t ? sl_strdup(t) : sl_strndup(json, len);
		w = sl_alloc(sizeof(*w));
		if (k->put(gov, c->session, keep, t ? strlen(t) : len, kid, on_kept, w, &w->kw))
			id = kid;
		if (!w->kw) {
			free(w);
			w = NULL;
		}
	}
	free(json);
	yyjson_doc_free(vd);
	if (w) {
		w->c = c;
		w->gov = gov;
		w->len = len;
		snprintf(w->id, sizeof(w->id), "%s", kid);
		sl_list_push_front(&gov->waits, &w->link);
		return SL_STAGE_AGAIN;
	}
	cut_result(gov, c, id, len);
	return SL_STAGE_NEXT;
}

/* A program's final answer enters the context: the budget applies, and
 * the whole answer stays in the session's store for read_result. */
static void governor_output(void *state, struct sl_output *o)
{
	const struct sl_governor *gov = state;
	const struct sl_keeper *k = keeper(gov);
	const char *id = NULL;
	size_t len = o->text ? o->text_len : 0;
	char *cut, kid[SL_KEPT_ID_SIZE];

	if (!o->text || !gov->enabled || sl_tokens(len) <= gov->max_tokens)
		return;
	/* Not waited for (an output hook cannot suspend): a read_result on
	 * another replica within the moment Redis takes may miss it. */
	if (o->session && k && k->put(gov, o->session, sl_strndup(o->text, len), len, kid, NULL, NULL,
				      NULL))
		id = kid;
	cut = sl_governor_cut_text(o->text, len, gov->max_tokens * 4, id, &o->text_len);
	free(o->text);
	o->text = cut;
}

const struct sl_stage sl_stage_governor = {
	.name = "governor",
	.conf = &governor_conf,
	.init = governor_init,
	.fini = governor_fini,
	.response = governor_response,
	.cancel = governor_cancel,
	.output = governor_output,
};

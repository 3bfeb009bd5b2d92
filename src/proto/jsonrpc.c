/* JSON-RPC 2.0 parsing and building (https://www.jsonrpc.org/specification). */
#include "proto/jsonrpc.h"

#include <string.h>

bool sl_rpc_valid_id(yyjson_val *id)
{
	/* MCP: ids are strings or integers, never null. */
	return yyjson_is_str(id) || yyjson_is_int(id);
}

/* Reads the envelope: top-level members only, nothing recursive. */
static int shape(struct sl_msg *m, int *code, struct sl_err *e)
{
	yyjson_val *root = m->root, *jv;

	*code = SL_RPC_INVALID_REQUEST;
	if (!yyjson_is_obj(root)) {
		sl_err_set(e, "Invalid Request: %s", yyjson_is_arr(root) ?
			   "batches are not supported" : "a message must be a JSON object");
		return SL_ERR_INVALID;
	}
	m->id = yyjson_obj_get(root, "id");
	if (m->id && !sl_rpc_valid_id(m->id)) {
		m->id = NULL;
		sl_err_set(e, SL_RPC_BAD_ID_WHY);
		return SL_ERR_INVALID;
	}
	jv = yyjson_obj_get(root, "jsonrpc");
	if (!yyjson_is_str(jv) || strcmp(yyjson_get_str(jv), "2.0") != 0) {
		sl_err_set(e, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
		return SL_ERR_INVALID;
	}
	jv = yyjson_obj_get(root, "method");
	if (jv) {
		if (!yyjson_is_str(jv)) {
			sl_err_set(e, "Invalid Request: \"method\" must be a string");
			return SL_ERR_INVALID;
		}
		m->method = yyjson_get_str(jv);
		m->params = yyjson_obj_get(root, "params");
		if (m->params && !yyjson_is_obj(m->params)) {
			*code = SL_RPC_INVALID_PARAMS;
			sl_err_set(e, "Invalid params: \"params\" must be an object");
			return SL_ERR_INVALID;
		}
		m->kind = m->id ? SL_MSG_REQUEST : SL_MSG_NOTIFICATION;
		return SL_OK;
	}
	m->result = yyjson_obj_get(root, "result");
	m->error = yyjson_obj_get(root, "error");
	if (!m->id || (!m->result == !m->error) || (m->error && !yyjson_is_obj(m->error))) {
		sl_err_set(e, "Invalid Request: neither a request nor a response");
		return SL_ERR_INVALID;
	}
	m->kind = SL_MSG_RESPONSE;
	return SL_OK;
}

int sl_msg_parse(struct sl_msg *m, const char *s, size_t n, int *code, struct sl_err *e)
{
	yyjson_read_err rerr;
	yyjson_doc *doc = yyjson_read_opts((char *)s, n, SL_JSON_READ_FLAGS, NULL, &rerr);

	if (!doc) {
		memset(m, 0, sizeof(*m));
		*code = SL_RPC_PARSE_ERROR;
		sl_err_set(e, "Parse error: %s at byte %zu", rerr.msg, rerr.pos);
		return SL_ERR_INVALID;
	}
	return sl_msg_take(m, doc, code, e);
}

int sl_msg_take(struct sl_msg *m, yyjson_doc *doc, int *code, struct sl_err *e)
{
	int rc;

	memset(m, 0, sizeof(*m));
	m->doc = doc;
	m->root = yyjson_doc_get_root(m->doc);
	rc = shape(m, code, e);
	if (rc == SL_OK && !sl_json_depth_ok(m->root)) {
		m->deep = true;
		*code = SL_RPC_INVALID_REQUEST;
		sl_err_set(e, "Invalid Request: " SL_JSON_DEPTH_WHY);
		rc = SL_ERR_INVALID;
	}
	return rc;
}

/* The id value starting at s[i] (an integer or a simple string), as a doc;
 * *end is set past it. */
static yyjson_doc *id_at(const char *s, size_t n, size_t i, size_t *end)
{
	size_t j = i;
	if (j < n && s[j] == '"') {
		for (j++; j < n && s[j] != '"'; j++)
			if (s[j] == '\\')
				return NULL;
		if (j >= n)
			return NULL;
		j++;
	} else {
		if (j < n && s[j] == '-')
			j++;
		while (j < n && s[j] >= '0' && s[j] <= '9')
			j++;
		if (j == i || j >= n)
			return NULL;
	}
	*end = j;
	return yyjson_read(s + i, j - i, 0);
}

static const char *find_key(const char *s, size_t n, size_t from, const char *key)
{
	size_t kl = strlen(key);
	for (size_t i = from; i + kl <= n; i++)
		if (memcmp(s + i, key, kl) == 0)
			return s + i;
	return NULL;
}

yyjson_doc *sl_rpc_find_id(const char *head, size_t hl, const char *tail, size_t tl)
{
	const char *k, *stop;
	yyjson_doc *d;
	size_t end;

	/* The tail: the last "id": whose value closes the message. */
	for (size_t i = tl; i-- > 0;) {
		if (i + 5 > tl || memcmp(tail + i, "\"id\":", 5) != 0)
			continue;
		size_t v = i + 5;
		while (v < tl && tail[v] == ' ')
			v++;
		d = id_at(tail, tl, v, &end);
		if (!d)
			break;
		while (end < tl && (tail[end] == ' ' || tail[end] == '\r'))
			end++;
		if (end < tl && tail[end] == '}' && end + 1 == tl)
			return d;
		yyjson_doc_free(d);
		break;
	}
	/* The head: an "id" before the body of the message begins. */
	k = find_key(head, hl, 0, "\"id\":");
	stop = find_key(head, hl, 0, "\"params\"");
	if (!stop)
		stop = find_key(head, hl, 0, "\"result\"");
	if (!k || (stop && stop < k))
		return NULL;
	size_t v = (size_t)(k - head) + 5;
	while (v < hl && head[v] == ' ')
		v++;
	return id_at(head, hl, v, &end);
}

void sl_msg_dispose(struct sl_msg *m)
{
	yyjson_doc_free(m->doc);
	memset(m, 0, sizeof(*m));
}

yyjson_mut_val *sl_rpc_envelope(yyjson_mut_doc *d, yyjson_mut_val *id, const char *method)
{
	yyjson_mut_val *o = yyjson_mut_obj(d);
	yyjson_mut_doc_set_root(d, o);
	yyjson_mut_obj_add_str(d, o, "jsonrpc", "2.0");
	if (id)
		yyjson_mut_obj_add_val(d, o, "id", id);
	if (method)
		yyjson_mut_obj_add_strcpy(d, o, "method", method);
	return o;
}

void sl_rpc_add_error(yyjson_mut_doc *d, yyjson_mut_val *o, int code, const char *message,
		      yyjson_mut_val *data)
{
	yyjson_mut_val *err = yyjson_mut_obj(d);
	yyjson_mut_obj_add_int(d, err, "code", code);
	yyjson_mut_obj_add_strcpy(d, err, "message", message);
	if (data)
		yyjson_mut_obj_add_val(d, err, "data", yyjson_mut_val_mut_copy(d, data));
	yyjson_mut_obj_add_val(d, o, "error", err);
}

static yyjson_mut_doc *doc_new(void)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	if (!d)
		sl_oom();
	return d;
}

yyjson_mut_doc *sl_rpc_response_new(yyjson_val *id, yyjson_mut_val **obj)
{
	yyjson_mut_doc *d = doc_new();
	*obj = sl_rpc_envelope(d, id ? yyjson_val_mut_copy(d, id) : yyjson_mut_null(d), NULL);
	return d;
}

yyjson_mut_doc *sl_rpc_request_new(const char *method, int64_t id, yyjson_mut_val **params)
{
	yyjson_mut_doc *d = doc_new();
	yyjson_mut_val *o = sl_rpc_envelope(d, id >= 0 ? yyjson_mut_sint(d, id) : NULL, method);
	*params = yyjson_mut_obj(d);
	yyjson_mut_obj_add_val(d, o, "params", *params);
	return d;
}

char *sl_rpc_error_line(yyjson_val *id, int code, const char *message, size_t *len)
{
	yyjson_mut_val *o;
	yyjson_mut_doc *d = sl_rpc_response_new(id, &o);
	char *line;

	sl_rpc_add_error(d, o, code, message, NULL);
	line = sl_json_write_line(d, len);
	yyjson_mut_doc_free(d);
	return line;
}

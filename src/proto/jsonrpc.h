/*
 * JSON-RPC 2.0 messages: parse one message into its parts, and build
 * requests, responses and errors. No I/O here.
 *
 * JSON-RPC error codes are made only here and at the transport edge: the
 * rest of the gateway speaks in results (a deny is a reply, a failed tool is
 * an isError result).
 */
#ifndef SL_PROTO_JSONRPC_H
#define SL_PROTO_JSONRPC_H

#include "core/json.h"

enum sl_rpc_code {
	SL_RPC_PARSE_ERROR = -32700,
	SL_RPC_INVALID_REQUEST = -32600,
	SL_RPC_METHOD_NOT_FOUND = -32601,
	SL_RPC_INVALID_PARAMS = -32602,
	SL_RPC_INTERNAL_ERROR = -32603,
	SL_RPC_SERVER_ERROR = -32000,       /* JSON-RPC: implementation-defined (the HTTP edge; busy) */
	SL_RPC_RESOURCE_NOT_FOUND = -32002, /* MCP: resources/read of an unknown URI */
	SL_RPC_HEADER_MISMATCH = -32020,    /* MCP 2026-07-28 over HTTP */
	SL_RPC_URL_ELICITATION = -32042,    /* MCP 2025-11-25: URLElicitationRequiredError */
	/* sluice's own: a tool call refused by a rate limit or quota
	 * (stages/quota.c), data {retryAfterSeconds, limit, scope, window}.
	 * MCP 2026-07-28 basic ("Error Codes"): a new code goes outside the
	 * JSON-RPC reserved range; the same code in every era. */
	SL_RPC_RATE_LIMITED = -31429,
};

struct sl_caller;

enum sl_msg_kind {
	SL_MSG_REQUEST,
	SL_MSG_NOTIFICATION,
	SL_MSG_RESPONSE,
};

struct sl_msg {
	yyjson_doc *doc;     /* owned */
	yyjson_val *root;
	enum sl_msg_kind kind;
	const char *method;  /* requests and notifications */
	yyjson_val *id;      /* requests and responses */
	yyjson_val *params;  /* object, or NULL */
	yyjson_val *result;  /* responses */
	yyjson_val *error;   /* responses */
	/* Well formed but over SL_JSON_DEPTH_MAX (sl_msg_parse failed): every
	 * field above is set, but only top-level members may be read (a
	 * lookup is not recursive); nothing may walk the values. */
	bool deep;
	/* A client's message: who sent it (auth/caller.h; proto never reads
	 * it), set by the session from the credential the transport admitted
	 * the message with, never by parsing. Borrowed from whoever holds the
	 * message: the session while it handles it, then the in-flight request
	 * that keeps it (gateway/session_int.h). NULL: anonymous, or not a
	 * client's message. */
	struct sl_caller *who;
};

/*
 * Parses one message of n bytes and applies the depth gate (core/json.h).
 * On success fills m (which then owns the document). On failure returns
 * SL_ERR_INVALID, sets *code to the JSON-RPC error code to answer with,
 * e->msg to why, and leaves in m->doc/m->id what could be read (the id to
 * answer, or NULL; a message over the depth limit: -32600, m->deep and
 * every field, see above); call sl_msg_dispose either way.
 */
int sl_msg_parse(struct sl_msg *m, const char *s, size_t n, int *code, struct sl_err *e) SL_MUST_USE;
/* The same for a document already read with SL_JSON_READ_FLAGS (a
 * transport that had to look inside the message first): m takes doc,
 * whatever the result. */
int sl_msg_take(struct sl_msg *m, yyjson_doc *doc, int *code, struct sl_err *e) SL_MUST_USE;
void sl_msg_dispose(struct sl_msg *m);
/* JSON-RPC 2.0 and MCP: an id is a string or an integer (MCP: never null);
 * a message with any other id is answered -32600 at once. */
bool sl_rpc_valid_id(yyjson_val *id);
#define SL_RPC_BAD_ID_WHY "Invalid Request: id must be a string or an integer"

/*
 * Finds the top-level id of a message too large to parse, from its first
 * and last bytes: in the head, an "id" before any "params"/"result"; in the
 * tail, an "id" whose value is followed only by the closing brace. Returns
 * a document whose root is the id, or NULL.
 */
yyjson_doc *sl_rpc_find_id(const char *head, size_t hl, const char *tail, size_t tl);

/*
 * The one envelope builder: sets d's root to {"jsonrpc":"2.0"(,"id":id)
 * (,"method":method)} and returns it; the caller adds "params", "result" or
 * "error". id is a value of d of any type (an integer, a string, a big
 * number kept as written: copy a parsed id with yyjson_val_mut_copy); NULL
 * means no id (a notification). method NULL: a response.
 */
yyjson_mut_val *sl_rpc_envelope(yyjson_mut_doc *d, yyjson_mut_val *id, const char *method);
/* Adds "error":{"code","message"(,"data")} to the envelope o; data (a value
 * of any document, may be NULL) is copied. */
void sl_rpc_add_error(yyjson_mut_doc *d, yyjson_mut_val *o, int code, const char *message,
		      yyjson_mut_val *data);
/* Builds {"jsonrpc":"2.0","id":<id>} in a new document (id copied; NULL:
 * null); *obj is its root. */
yyjson_mut_doc *sl_rpc_response_new(yyjson_val *id, yyjson_mut_val **obj);
/* Builds {"jsonrpc":"2.0","method":m,("id":id,)"params":{}}; id < 0 means a notification. */
yyjson_mut_doc *sl_rpc_request_new(const char *method, int64_t id, yyjson_mut_val **params);
/* A complete error response line (with "\n"); id may be NULL (null id). */
char *sl_rpc_error_line(yyjson_val *id, int code, const char *message, size_t *len);

#endif

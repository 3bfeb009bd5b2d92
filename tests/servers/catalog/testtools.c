/*
 * testtools.c: the test tools every back end carries.
 *
 * They exercise what a gateway must survive or relay: echo (exact argument
 * round trip), slow and progress (concurrency, timers, cancellation, progress
 * notifications), fail (isError results), crash (a dying upstream), huge
 * (large results), ask_user (a server-to-client request, elicitation/create),
 * add_tool (notifications/tools/list_changed), log (notifications/message),
 * stderr (noise on stderr) and garbage (non-JSON lines on stdout).
 *
 * slow, progress and ask_user answer later: they take the request over with
 * cat_call_new() and answer from a timer or from the client's reply.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"

static yyjson_mut_val *text_result(yyjson_mut_doc *doc, const char *text,
				   bool is_error)
{
	yyjson_mut_val *res = yyjson_mut_obj(doc);
	yyjson_mut_val *content = yyjson_mut_obj_add_arr(doc, res, "content");
	yyjson_mut_val *block = yyjson_mut_arr_add_obj(doc, content);
	yyjson_mut_obj_add_str(doc, block, "type", "text");
	yyjson_mut_obj_add_strcpy(doc, block, "text", text);
	if (is_error)
		yyjson_mut_obj_add_bool(doc, res, "isError", true);
	return res;
}

static void finish_text(struct cat_call *call, const char *text, bool is_error)
{
	yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
	cat_call_finish(call, doc, text_result(doc, text, is_error));
	yyjson_mut_doc_free(doc);
}

/* ---- echo, fail, crash -------------------------------------------------- */

static int t_echo(struct cat_req *rq)
{
	size_t len = 0;
	char *s = yyjson_val_write(rq->args, 0, &len);
	if (!s) {
		cat_fail(rq, "cannot serialise the arguments");
		return CAT_OK;
	}
	rq->text = yyjson_mut_strncpy(rq->doc, s, len);
	free(s);
	rq->data = yyjson_mut_obj(rq->doc);
	yyjson_mut_obj_add_val(rq->doc, rq->data, "arguments",
			       yyjson_val_mut_copy(rq->doc, rq->args));
	return CAT_OK;
}

static int t_fail(struct cat_req *rq)
{
	yyjson_val *m = yyjson_obj_get(rq->args, "message");
	if (yyjson_is_str(m))
		rq->err = yyjson_mut_strncpy(rq->doc, yyjson_get_str(m), yyjson_get_len(m));
	else
		rq->err = yyjson_mut_str(rq->doc, "the tool failed");
	return CAT_OK;
}

static int t_crash(struct cat_req *rq)
{
	fprintf(stderr, "catalog: crash tool called, exiting with status 3\n");
	_exit(3);
}

/* ---- slow and progress: timers ------------------------------------------ */

static void slow_done(struct cat_call *call)
{
	char text[64];
	snprintf(text, sizeof(text), "slept %lld ms", (long long)call->n);
	finish_text(call, text, false);
}

static int t_slow(struct cat_req *rq)
{
	struct cat_call *call = cat_call_new(rq, slow_done);
	call->n = cat_arg_int(rq, "ms", 0);
	if (cat_call_start_timer(call, (uint64_t)call->n) < 0) {
		cat_call_drop(call);
		cat_fail(rq, "cannot start a timer");
		return CAT_OK;
	}
	return CAT_AGAIN;
}

static void progress_done(struct cat_call *call)
{
	char text[32];
	snprintf(text, sizeof(text), "done %lld", (long long)call->n);
	finish_text(call, text, false);
}

static void progress_step(struct cat_call *call)
{
	call->step++;
	if (call->token) {
		/* MCP 2025-11-25 progress: progress increases with each
		 * notification, and every notification precedes the response. */
		char msg[32];
		snprintf(msg, sizeof(msg), "step %lld", (long long)call->step);
		yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
		yyjson_mut_val *p = yyjson_mut_obj(doc);
		yyjson_mut_obj_add_val(doc, p, "progressToken",
				       yyjson_mut_rawcpy(doc, call->token));
		yyjson_mut_obj_add_int(doc, p, "progress", call->step);
		yyjson_mut_obj_add_int(doc, p, "total", call->n);
		yyjson_mut_obj_add_strcpy(doc, p, "message", msg);
		cat_send_notification(call->srv, "notifications/progress", doc, p);
		yyjson_mut_doc_free(doc);
	}
	if (call->step < call->n) {
		(void)cat_call_start_timer(call, (uint64_t)call->interval);
		return;
	}
	/* SDK 1.x clients run notification handlers a microtask late and drop
	 * the progress handler when the response arrives: a last progress read
	 * in the same chunk as the response is lost.  A short gap avoids that;
	 * interval_ms 0 keeps them back to back, to test exactly that case. */
	if (call->interval > 0 && call->token) {
		call->on_timer = progress_done;
		(void)cat_call_start_timer(call, call->interval < 5 ? (uint64_t)call->interval : 5);
		return;
	}
	progress_done(call);
}

static int t_progress(struct cat_req *rq)
{
	int64_t steps = cat_arg_int(rq, "steps", 0);
	if (steps == 0) {
		rq->text = yyjson_mut_str(rq->doc, "done 0");
		return CAT_OK;
	}
	struct cat_call *call = cat_call_new(rq, progress_step);
	call->n = steps;
	call->interval = cat_arg_int(rq, "interval_ms", 0);
	if (cat_call_start_timer(call, (uint64_t)call->interval) < 0) {
		cat_call_drop(call);
		cat_fail(rq, "cannot start a timer");
		return CAT_OK;
	}
	return CAT_AGAIN;
}

/* ---- ask_user: a request to the client ---------------------------------- */

static void ask_reply(struct cat_call *call, yyjson_val *msg)
{
	yyjson_val *result = yyjson_obj_get(msg, "result");
	if (!result) {
		const char *why = yyjson_get_str(yyjson_obj_get(yyjson_obj_get(msg, "error"),
								"message"));
		char text[512];
		snprintf(text, sizeof(text), "elicitation failed: %.400s",
			 why ? why : "error without a message");
		finish_text(call, text, true);
		return;
	}
	char *s = yyjson_val_write(result, 0, NULL);
	finish_text(call, s ? s : "{}", false);
	free(s);
}

static int t_ask_user(struct cat_req *rq)
{
	/* MCP 2025-11-25 elicitation: only when the client declared it. */
	if (!rq->srv->client_elicitation) {
		cat_fail(rq, "client does not support elicitation");
		return CAT_OK;
	}
	struct cat_call *call = cat_call_new(rq, NULL);
	call->waits_on_client = true;
	call->on_reply = ask_reply;
	char id[48];
	snprintf(id, sizeof(id), "\"catalog-%llu\"",
		 (unsigned long long)++rq->srv->next_out_id);
	call->out_id = cat_strdup(id);

	yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *msg = yyjson_mut_obj(doc);
	yyjson_mut_doc_set_root(doc, msg);
	yyjson_mut_obj_add_str(doc, msg, "jsonrpc", "2.0");
	yyjson_mut_obj_add_val(doc, msg, "id", yyjson_mut_rawcpy(doc, id));
	yyjson_mut_obj_add_str(doc, msg, "method", "elicitation/create");
	yyjson_mut_val *p = yyjson_mut_obj_add_obj(doc, msg, "params");
	yyjson_mut_obj_add_strcpy(doc, p, "message", cat_arg_str(rq, "question", ""));
	yyjson_mut_val *schema = yyjson_mut_obj_add_obj(doc, p, "requestedSchema");
	yyjson_mut_obj_add_str(doc, schema, "type", "object");
	yyjson_mut_val *props = yyjson_mut_obj_add_obj(doc, schema, "properties");
	yyjson_mut_val *answer = yyjson_mut_obj_add_obj(doc, props, "answer");
	yyjson_mut_obj_add_str(doc, answer, "type", "string");
	yyjson_mut_val *req = yyjson_mut_obj_add_arr(doc, schema, "required");
	yyjson_mut_arr_add_str(doc, req, "answer");
	cat_send_doc(rq->srv, doc);
	yyjson_mut_doc_free(doc);
	return CAT_AGAIN;
}

/* ---- the rest ------------------------------------------------------------- */

static int t_huge(struct cat_req *rq)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	size_t n = (size_t)cat_arg_int(rq, "bytes", 0);
	char *buf = cat_xmalloc(n);
	for (size_t i = 0; i < n; i++)
		buf[i] = (i % 64 == 63) ? ' ' : alphabet[(i + i / 64) % 36];
	rq->text = yyjson_mut_strncpy(rq->doc, buf, n);
	free(buf);
	return CAT_OK;
}

static int t_add_tool(struct cat_req *rq)
{
	const char *name = cat_arg_str(rq, "name", "");
	size_t len = strlen(name);
	bool ok = len >= 1 && len <= 128;
	for (size_t i = 0; ok && i < len; i++)
		ok = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789_.-", name[i]) != NULL;
	if (!ok) {
		cat_fail(rq, "invalid tool name: use 1 to 128 of [A-Za-z0-9_.-]");
		return CAT_OK;
	}
	if (cat_find_tool(rq->srv, name)) {
		cat_fail(rq, "tool %s already exists", name);
		return CAT_OK;
	}
	/* cat_test_tools[0] is echo: a dynamic tool echoes too. */
	if (cat_add_tool(rq->srv, &cat_test_tools[0], name) < 0) {
		cat_fail(rq, "too many tools (at most %d)", CAT_MAX_TOOLS);
		return CAT_OK;
	}
	char text[200];
	snprintf(text, sizeof(text), "added tool %s", name);
	rq->text = yyjson_mut_strcpy(rq->doc, text);
	rq->list_changed = true;
	return CAT_OK;
}

static int t_log(struct cat_req *rq)
{
	const char *level = cat_arg_str(rq, "level", "info");
	int idx = 0;
	for (size_t i = 0; i < cat_levels_count; i++)
		if (!strcmp(level, cat_levels[i]))
			idx = (int)i;
	/* MCP 2025-11-25 logging: only messages at or above the set level. */
	if (idx < rq->srv->log_level) {
		rq->text = yyjson_mut_str(rq->doc, "suppressed: below the log level");
		return CAT_OK;
	}
	yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *p = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_str(doc, p, "level", cat_levels[idx]);
	yyjson_mut_obj_add_str(doc, p, "logger", "catalog");
	yyjson_mut_obj_add_strcpy(doc, p, "data", cat_arg_str(rq, "message", ""));
	cat_send_notification(rq->srv, "notifications/message", doc, p);
	yyjson_mut_doc_free(doc);
	rq->text = yyjson_mut_str(rq->doc, "logged");
	return CAT_OK;
}

static int t_stderr(struct cat_req *rq)
{
	int64_t n = cat_arg_int(rq, "lines", 0);
	for (int64_t i = 1; i <= n; i++)
		fprintf(stderr, "catalog: stderr line %lld of %lld\n",
			(long long)i, (long long)n);
	rq->text = yyjson_mut_str(rq->doc, "ok");
	return CAT_OK;
}

static int t_garbage(struct cat_req *rq)
{
	char braces[101];
	memset(braces, '{', 100);
	braces[100] = '\n';
	cat_write_raw(rq->srv, "this is not json\n", 17);
	cat_write_raw(rq->srv, braces, sizeof(braces));
	rq->text = yyjson_mut_str(rq->doc, "ok: wrote two garbage lines to stdout");
	return CAT_OK;
}

/* ---- the table ------------------------------------------------------------ */

#define NO_ARGS "{'type':'object','properties':{},'additionalProperties':false}"

const struct cat_tool cat_test_tools[] = {
	/* echo must stay first: add_tool clones it. */
	{ "echo", "Echo",
	  "Test tool: returns the received arguments object, as JSON text and as "
	  "structuredContent.arguments.",
	  "{'type':'object','description':'Any JSON object; it is returned unchanged.',"
	  "'additionalProperties':true}",
	  "{'type':'object','properties':{'arguments':{'type':'object',"
	  "'description':'The arguments exactly as received.'}},'required':['arguments']}",
	  CAT_RO | CAT_IDEMPOTENT, t_echo },
	{ "slow", "Slow",
	  "Test tool: answers after the given number of milliseconds with the text "
	  "\"slept <ms> ms\". Cancellable with notifications/cancelled.",
	  "{'type':'object','properties':{'ms':{'type':'integer','minimum':0,"
	  "'maximum':600000,'description':'How long to wait before answering, in milliseconds.'}},"
	  "'required':['ms']}",
	  NULL, CAT_RO | CAT_IDEMPOTENT, t_slow },
	{ "fail", "Fail",
	  "Test tool: always returns a result with isError true.",
	  "{'type':'object','properties':{'message':{'type':'string',"
	  "'description':'The error message to return; default: the tool failed.'}}}",
	  NULL, CAT_RO | CAT_IDEMPOTENT, t_fail },
	{ "crash", "Crash",
	  "Test tool: the server process exits with status 3 at once, without answering.",
	  NO_ARGS, NULL, CAT_DESTRUCTIVE, t_crash },
	{ "huge", "Huge",
	  "Test tool: returns one text block of exactly the given number of bytes of "
	  "deterministic printable ASCII.",
	  "{'type':'object','properties':{'bytes':{'type':'integer','minimum':0,"
	  "'maximum':67108864,'description':'Size of the text block in bytes (at most 64 MiB).'}},"
	  "'required':['bytes']}",
	  NULL, CAT_RO | CAT_IDEMPOTENT, t_huge },
	{ "progress", "Progress",
	  "Test tool: if the request carries _meta.progressToken, sends one "
	  "notifications/progress per step every interval_ms, then answers \"done <steps>\". "
	  "Cancellable.",
	  "{'type':'object','properties':{"
	  "'steps':{'type':'integer','minimum':0,'maximum':10000,'description':'Number of progress steps.'},"
	  "'interval_ms':{'type':'integer','minimum':0,'maximum':60000,"
	  "'description':'Delay before each step, in milliseconds.'}},"
	  "'required':['steps','interval_ms']}",
	  NULL, CAT_RO | CAT_IDEMPOTENT, t_progress },
	{ "ask_user", "Ask the user",
	  "Test tool: asks the client a question with elicitation/create and returns the "
	  "client's answer ({action, content}) as JSON text.",
	  "{'type':'object','properties':{'question':{'type':'string',"
	  "'description':'The question shown to the user.'}},'required':['question']}",
	  NULL, CAT_RO, t_ask_user },
	{ "add_tool", "Add a tool",
	  "Test tool: adds a tool with the given name that echoes its arguments, then "
	  "sends notifications/tools/list_changed.",
	  "{'type':'object','properties':{'name':{'type':'string','minLength':1,'maxLength':128,"
	  "'pattern':'^[A-Za-z0-9_.-]+$','description':'Name of the new tool.'}},"
	  "'required':['name']}",
	  NULL, 0, t_add_tool },
	{ "log", "Log",
	  "Test tool: sends a notifications/message with the given level and message.",
	  "{'type':'object','properties':{"
	  "'level':{'type':'string','enum':['debug','info','notice','warning','error',"
	  "'critical','alert','emergency'],'description':'Syslog severity of the message.'},"
	  "'message':{'type':'string','description':'The log message.'}},"
	  "'required':['level','message']}",
	  NULL, CAT_RO, t_log },
	{ "stderr", "Write to stderr",
	  "Test tool: writes the given number of lines to stderr and returns ok.",
	  "{'type':'object','properties':{'lines':{'type':'integer','minimum':0,"
	  "'maximum':1000000,'description':'How many lines to write.'}},'required':['lines']}",
	  NULL, CAT_RO, t_stderr },
	{ "garbage", "Garbage",
	  "Test tool: writes a non-JSON line and a line of 100 '{' to stdout, then "
	  "answers normally.",
	  NO_ARGS, NULL, CAT_RO, t_garbage },
};
const size_t cat_test_tools_count = sizeof(cat_test_tools) / sizeof(cat_test_tools[0]);

/*
 * catalog.h: the catalog test upstream, shared declarations.
 *
 * The catalog is a fake MCP server (stdio, protocol era 2025-11-25) that the
 * gateway's tests, benchmarks and demo run as an upstream.  One binary serves
 * one of four fake back ends chosen by --backend: github, jira, slack or
 * postgres.  Every back end also carries the same test tools (echo, slow,
 * fail, crash, huge, progress, ask_user, add_tool, log, stderr, garbage).
 *
 * Files:
 *   catalog.c    main, the stdio loop, JSON-RPC framing and MCP dispatch
 *   testtools.c  the test tools, including the asynchronous ones (timers)
 *   extras.c     resources, resource templates, prompts and completion
 *   data.c       deterministic data: seeded PRNG, dates, prose
 *   github.c jira.c slack.c postgres.c   one fake back end each
 *   generated.c  --tools N: N generated tools beside the back end's
 *
 * API:
 *   A back end is a struct cat_backend: a table of struct cat_tool (tools
 *   declared as data: name, description, inputSchema and outputSchema as JSON
 *   text, hints, handler), plus the text its resources and prompts use.
 *
 *   A handler gets a struct cat_req whose arguments were already validated
 *   against the tool's inputSchema, and answers in one of four ways:
 *     - set rq->data (a JSON value built in rq->doc) and return CAT_OK: the
 *       result is a text block holding that JSON, plus structuredContent when
 *       the tool declares an outputSchema (data must then be an object);
 *     - set rq->text (a string in rq->doc) and return CAT_OK; with data set
 *       too, text replaces the serialised data in the text block;
 *     - call cat_fail() and return CAT_OK: a result with isError true;
 *     - return CAT_AGAIN after taking over the request with cat_call_new():
 *       it answers later through cat_call_finish().
 *
 * Schemas are written with single quotes inside C string literals, which
 * the loader turns into double quotes: so no schema text may contain an
 * apostrophe.  A schema that does not parse aborts start-up.
 */
#ifndef CATALOG_H
#define CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>
#include "yyjson.h"

#define CAT_OK     0
#define CAT_AGAIN  1

#define CAT_MAX_LINE      (16u * 1024 * 1024)  /* one input message */
#define CAT_MAX_GENERATED 20000                /* --tools N */
#define CAT_MAX_TOOLS     (1024 + CAT_MAX_GENERATED) /* dynamic tools included */
#define CAT_MAX_HUGE      (64u * 1024 * 1024)  /* the huge tool */

/* Tool hints, published as MCP tool annotations. */
#define CAT_RO           (1u << 0)   /* readOnlyHint */
#define CAT_DESTRUCTIVE  (1u << 1)   /* destructiveHint */
#define CAT_IDEMPOTENT   (1u << 2)   /* idempotentHint */
#define CAT_OPEN_WORLD   (1u << 3)   /* openWorldHint */

struct cat_server;
struct cat_req;
struct cat_call;

typedef int cat_tool_fn(struct cat_req *rq);
typedef void cat_call_fn(struct cat_call *call);

struct cat_tool {
	const char *name;
	const char *title;
	const char *description;
	const char *input_schema;   /* JSON text, single-quoted */
	const char *output_schema;  /* JSON text or NULL */
	unsigned hints;
	cat_tool_fn *fn;
};

/* A prompt with one argument, besides the shared "summarize" prompt. */
struct cat_prompt {
	const char *name;
	const char *title;
	const char *description;
	const char *arg;            /* required argument */
	const char *arg_description;
	const char *text;           /* printf format with one %s: the argument */
};

struct cat_backend {
	const char *name;
	const char *title;
	const struct cat_tool *tools;
	size_t ntools;
	const char *readme;         /* markdown for catalog://<name>/readme */
	void (*stats)(const struct cat_server *srv, yyjson_mut_doc *doc,
		      yyjson_mut_val *obj);
	const struct cat_prompt *prompt;
};

/* A tool as served: a static definition, or a dynamic one (add_tool). */
struct cat_tool_rt {
	const struct cat_tool *def;
	char *name;                 /* owned copy, for a dynamic tool only */
	yyjson_doc *input;          /* parsed inputSchema */
	yyjson_doc *output;         /* parsed outputSchema or NULL */
};

/* A tools/call being answered: lives for one handler invocation. */
struct cat_req {
	struct cat_server *srv;
	const struct cat_tool_rt *tool;
	const char *id;             /* raw JSON text of the request id */
	yyjson_val *params;         /* borrowed: the tools/call params */
	yyjson_val *args;           /* borrowed: params.arguments, an object */
	yyjson_mut_doc *doc;        /* where the answer is built */
	yyjson_mut_val *data;       /* out: JSON result data */
	yyjson_mut_val *text;       /* out: the text block, a string in doc */
	yyjson_mut_val *err;        /* out: isError message */
	bool list_changed;          /* out: announce tools/list_changed after */
};

/* A tools/call that answers later (slow, progress, ask_user). */
struct cat_call {
	struct cat_call *next;
	struct cat_server *srv;
	char *id;                   /* raw JSON text of the request id */
	char *token;                /* raw JSON progress token or NULL */
	char *out_id;               /* raw JSON id of our request to the client */
	uv_timer_t timer;
	cat_call_fn *on_timer;
	void (*on_reply)(struct cat_call *call, yyjson_val *msg);
	bool waits_on_client;       /* dropped when stdin closes */
	int64_t n, step, interval;
};

struct cat_server {
	uv_loop_t *loop;
	const struct cat_backend *backend;
	const char *name;           /* serverInfo.name */
	bool large;                 /* --large-results */
	size_t page_size;           /* CATALOG_PAGE_SIZE, 0: no paging */

	union {
		uv_pipe_t pipe;
		uv_tty_t tty;
	} in;
	uv_fs_t in_req;
	bool in_is_file, in_is_stream, eof;
	char rbuf[64 * 1024];
	char *line;                 /* partial input line */
	size_t line_len, line_cap;
	bool discarding;            /* skipping the rest of an oversized line */
	bool out_dead;              /* stdout is gone: discard output */

	yyjson_doc *empty;          /* {}: the arguments of a call without any */
	bool client_elicitation;
	int log_level;              /* minimum level sent, an index of cat_levels */
	uint64_t next_out_id;

	struct cat_tool_rt **tools;
	size_t ntools, tools_cap;
	struct cat_call *calls;
};

/* Back ends and test tools. */
extern const struct cat_backend cat_github, cat_jira, cat_slack, cat_postgres, cat_generated;
extern const struct cat_tool cat_test_tools[];
extern const size_t cat_test_tools_count;
extern const char *const cat_levels[];
extern const size_t cat_levels_count;

/* catalog.c: output and calls. */
void cat_send_doc(struct cat_server *srv, yyjson_mut_doc *doc);
void cat_send_result(struct cat_server *srv, const char *id,
		     yyjson_mut_doc *doc, yyjson_mut_val *result);
void cat_send_notification(struct cat_server *srv, const char *method,
			   yyjson_mut_doc *doc, yyjson_mut_val *params);
void cat_write_raw(struct cat_server *srv, const char *s, size_t n);
yyjson_mut_val *cat_tool_result(struct cat_req *rq);
int cat_add_tool(struct cat_server *srv, const struct cat_tool *def,
		 const char *name);
const struct cat_tool_rt *cat_find_tool(const struct cat_server *srv,
					const char *name);
void cat_fail(struct cat_req *rq, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Takes the request over: the returned call is linked into srv->calls. */
struct cat_call *cat_call_new(struct cat_req *rq, cat_call_fn *on_timer);
int cat_call_start_timer(struct cat_call *call, uint64_t ms);
/* Sends the result built in doc, unlinks and frees the call. */
void cat_call_finish(struct cat_call *call, yyjson_mut_doc *doc,
		     yyjson_mut_val *result);
/* Unlinks and frees the call without an answer. */
void cat_call_drop(struct cat_call *call);
char *cat_strdup(const char *s);
void *cat_xmalloc(size_t n);

/* generated.c: n generated tools (--tools n). */
int cat_generate_tools(struct cat_server *srv, size_t n);
void cat_generated_free(void);

/* extras.c: resources, prompts, completion.  Each returns 0 with *out set,
 * or a JSON-RPC error code with msg filled. */
int cat_resources_list(struct cat_server *srv, yyjson_val *params,
		       yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg, size_t cap);
int cat_templates_list(struct cat_server *srv, yyjson_val *params,
		       yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg, size_t cap);
int cat_resources_read(struct cat_server *srv, yyjson_val *params,
		       yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg, size_t cap);
int cat_prompts_list(struct cat_server *srv, yyjson_val *params,
		     yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg, size_t cap);
int cat_prompts_get(struct cat_server *srv, yyjson_val *params,
		    yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg, size_t cap);
int cat_complete(struct cat_server *srv, yyjson_val *params,
		 yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg, size_t cap);

/* data.c: deterministic data. */
struct cat_rng {
	uint64_t s;
};
void cat_rng_seed(struct cat_rng *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
uint64_t cat_rng_next(struct cat_rng *r);
int64_t cat_rng_range(struct cat_rng *r, int64_t lo, int64_t hi);
const char *cat_rng_pick(struct cat_rng *r, const char *const *v, size_t n);
#define CAT_PICK(r, arr) cat_rng_pick((r), (arr), sizeof(arr) / sizeof((arr)[0]))
void cat_iso_date(char out[32], int64_t epoch);
void cat_hex(struct cat_rng *r, char *out, size_t digits);
/* Appends sentences to out until at least min bytes, never beyond cap-1. */
void cat_prose(struct cat_rng *r, char *out, size_t cap, size_t min,
	       const char *subject);
#define CAT_EPOCH_2024 1704067200  /* 2024-01-01T00:00:00Z */

/* Argument helpers: the value is validated, these only fetch. */
const char *cat_arg_str(const struct cat_req *rq, const char *key,
			const char *dflt);
int64_t cat_arg_int(const struct cat_req *rq, const char *key, int64_t dflt);
bool cat_arg_bool(const struct cat_req *rq, const char *key, bool dflt);

#endif

/*
 * One-shot HTTP requests on the gateway's loop: a GET or a form POST whose
 * answer is read into a bounded buffer and handed to a callback from the
 * loop, never from inside libcurl. For documents sluice reads from a peer
 * it does not trust to be small or quick: an authorization server's
 * metadata and keys, a token introspection answer (src/auth/), and the
 * requests of sluice's own OAuth client: discovery, registration, token
 * and revocation requests (src/oauth/); and the OTLP exports, JSON POSTs,
 * of the telemetry stage and of the audit stage's logs sink
 * (src/stages/telemetry.c, src/stages/audit_otlp.c).
 *
 * libcurl is loaded on first use (event/curl.h); its multi interface runs on
 * the libuv loop through the same socket and timer glue as remote
 * upstreams. No redirect is followed: a document's URL is configured or
 * comes from a metadata document, and a redirect would leave the origin
 * that was checked.
 *
 * API:
 *   struct sl_fetcher *f;
 *   if (sl_fetcher_new(loop, "sluice.http.auth", &f, &err) < 0) ... err.msg
 *   struct sl_fetch_req q = { .url = u, .max_bytes = 65536, .timeout_ms = 5000 };
 *   sl_fetch_start(f, &q, on_done, arg);      on_done(arg, &res) later, once
 *   sl_fetcher_unref(f);                      optional: its requests keep no loop running
 *   sl_fetcher_free(f);                       pending requests end unanswered
 */
#ifndef SL_EVENT_FETCH_H
#define SL_EVENT_FETCH_H

#include "core/common.h"

#include <uv.h>

struct sl_fetcher;

struct sl_fetch_req {
	const char *url;         /* http: or https: */
	const char *form;        /* a form body to POST; NULL: GET */
	const char *json;        /* or a JSON body to POST */
	const char *method;      /* another method, with no body ("DELETE"); NULL: as above */
	const char *bearer;      /* an access token, sent as Authorization: Bearer */
	const char *accept;      /* the Accept header; NULL: application/json */
	const char *user;        /* HTTP Basic credentials (both or neither), sent as */
	const char *password;    /* given: form-encode them first where OAuth says so */
	const char *session_id;  /* an MCP session, sent as Mcp-Session-Id; NULL: none */
	const char *protocol_version; /* an MCP version, sent as MCP-Protocol-Version */
	const char *mcp_method;  /* an MCP 2026-07-28 request's method, sent as Mcp-Method */
	size_t max_bytes;        /* of the answer's body; more fails the request */
	uint64_t timeout_ms;     /* the whole request, connection included */
	/* Runs instead of the callback when the request ends unanswered (the
	 * fetcher freed first), so arg can be freed; NULL: nothing to do. */
	void (*dispose)(void *arg);
};

struct sl_fetch_result {
	long status;             /* the HTTP status; 0 when no answer came */
	const char *body;        /* NUL-terminated, borrowed for the callback */
	size_t len;
	const char *error;       /* NULL: an answer came (any status); else why not */
	const char *www_authenticate; /* its WWW-Authenticate header (the first, at most
				       * SL_FETCH_HEADER_MAX bytes), or NULL */
	const char *session_id;  /* its Mcp-Session-Id header (the same bound), or NULL */
};

#define SL_FETCH_HEADER_MAX 4096

typedef void sl_fetch_fn(void *arg, const struct sl_fetch_result *res);

/* A fetcher on loop; who names the feature in messages. */
int sl_fetcher_new(uv_loop_t *loop, const char *who, struct sl_fetcher **out,
		   struct sl_err *err) SL_MUST_USE;
/* Ends every request (their callbacks never run; their dispose does) and
 * frees f once its handles have closed. */
void sl_fetcher_free(struct sl_fetcher *f);
/* Starts q (its strings are copied). cb(arg, res) runs once, from the loop:
 * with the answer, or with res->error on failure (including a failure to
 * start). Never calls cb before returning. */
void sl_fetch_start(struct sl_fetcher *f, const struct sl_fetch_req *q, sl_fetch_fn *cb,
		    void *arg);
/* From now on f's requests do not keep the loop running (uv_unref), for
 * work that must never delay an exit. Whoever waits for them runs the loop
 * with a referenced handle of its own, a deadline timer. */
void sl_fetcher_unref(struct sl_fetcher *f);
/* Requests started and not yet answered. */
unsigned sl_fetch_pending(const struct sl_fetcher *f);

#endif

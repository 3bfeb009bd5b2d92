/*
 * One-shot HTTP requests: see fetch.h. A finished transfer is moved to a
 * done list inside curl's turn and answered from a zero-delay timer, so a
 * callback may start another request or free the fetcher.
 */
#include "event/fetch.h"
#include "event/curl.h"
#include "event/handles.h"
#include "core/list.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct fetch {
	struct sl_list link;     /* in the fetcher's running or done list */
	struct sl_fetcher *f;
	CURL *easy;
	struct curl_slist *headers;
	char *post;              /* the body to POST, or NULL */
	char *body;
	char *www_auth;          /* the first WWW-Authenticate header */
	char *session_id;        /* the first Mcp-Session-Id header */
	size_t len, cap, max;
	bool over;               /* the body passed max */
	char error[CURL_ERROR_SIZE];
	long status;
	sl_fetch_fn *cb;
	void (*dispose)(void *arg);
	void *arg;
};

struct sl_fetcher {
	uv_loop_t *loop;
	struct sl_curl_loop cl;
	struct sl_handles handles;
	uv_timer_t deliver;      /* answers the done list from the loop */
	struct sl_list running;  /* in curl, newest first */
	struct sl_list done;     /* answered next, oldest first */
	unsigned n;              /* running and done */
};

static void fetch_free(struct fetch *x)
{
	if (x->easy)
		sl_curl.easy_cleanup(x->easy);
	if (x->headers)
		sl_curl.slist_free_all(x->headers);
	free(x->post);
	free(x->body);
	free(x->www_auth);
	free(x->session_id);
	free(x);
}

static struct fetch *fetch_of(struct sl_list *n)
{
	return n ? sl_list_entry(n, struct fetch, link) : NULL;
}

static void on_deliver(uv_timer_t *t);

static void queue_done(struct sl_fetcher *f, struct fetch *x)
{
	sl_list_push_back(&f->done, &x->link);
	uv_timer_start(&f->deliver, on_deliver, 0, 0);
}

static void on_deliver(uv_timer_t *t)
{
	struct sl_fetcher *f = t->data;

	/* One at a time: a callback may free the fetcher, which ends the rest
	 * unanswered (fetch.h). */
	struct fetch *x;

	while ((x = fetch_of(sl_list_first(&f->done)))) {
		struct sl_fetch_result res = { 0 };

		sl_list_remove(&x->link);
		f->n--;
		res.status = x->status;
		res.body = x->body ? x->body : "";
		res.len = x->len;
		res.error = x->error[0] ? x->error : NULL;
		res.www_authenticate = x->www_auth;
		res.session_id = x->session_id;
		x->cb(x->arg, &res);
		fetch_free(x);
		/* A callback that freed f emptied its lists; f itself stays
		 * allocated until its handles have closed, a later turn of the
		 * loop, so reading it here is safe. */
		if (f->handles.ending)
			break;
	}
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct fetch *x = ctx;
	size_t len = size * n;

	if (x->len + len > x->max) {
		x->over = true;
		return 0; /* curl fails the transfer with a write error */
	}
	if (x->len + len + 1 > x->cap) {
		x->cap = x->len + len + 1 > 2 * x->cap ? x->len + len + 1 : 2 * x->cap;
		if (x->cap > x->max + 1)
			x->cap = x->max + 1;
		x->body = sl_realloc(x->body, x->cap);
	}
	memcpy(x->body + x->len, p, len);
	x->len += len;
	x->body[x->len] = '\0';
	return len;
}

/* Keeps the first WWW-Authenticate and Mcp-Session-Id headers of the final
 * answer (a 1xx answer's headers come first and have neither). */
static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct fetch *x = ctx;
	size_t len = size * n, vl;
	const char *v;

	if (!x->www_auth && sl_curl_header(p, len, "www-authenticate", &v, &vl)) {
		if (vl <= SL_FETCH_HEADER_MAX)
			x->www_auth = sl_strndup(v, vl);
	} else if (!x->session_id && sl_curl_header(p, len, "mcp-session-id", &v, &vl)) {
		if (vl <= SL_FETCH_HEADER_MAX)
			x->session_id = sl_strndup(v, vl);
	}
	return len;
}

static void on_curl_after(void *arg)
{
	struct sl_fetcher *f = arg;
	CURLMsg *m;
	int left;

	while ((m = sl_curl.multi_info_read(f->cl.multi, &left))) {
		struct fetch *x;
		if (m->msg != CURLMSG_DONE)
			continue;
		sl_curl.easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		sl_curl.easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
		if (x->over)
			snprintf(x->error, sizeof(x->error), "the answer is over %zu bytes", x->max);
		else if (m->data.result != CURLE_OK && !x->error[0])
			snprintf(x->error, sizeof(x->error), "%s", sl_curl.easy_strerror(m->data.result));
		if (x->error[0])
			x->status = 0;
		sl_curl.multi_remove_handle(f->cl.multi, x->easy);
		sl_list_remove(&x->link);
		queue_done(f, x);
	}
}

int sl_fetcher_new(uv_loop_t *loop, const char *who, struct sl_fetcher **out, struct sl_err *err)
{
	struct sl_fetcher *f;

	if (!sl_curl_load(who, err))
		return SL_ERR_INVALID;
	f = sl_alloc(sizeof(*f));
	f->loop = loop;
	sl_list_init(&f->running);
	sl_list_init(&f->done);
	sl_handles_init(&f->handles);
	if (!sl_curl_loop_init(&f->cl, loop, &f->handles, on_curl_after, f)) {
		free(f);
		sl_err_set(err, "%s: libcurl failed to start", who);
		return SL_ERR_INVALID;
	}
	uv_timer_init(loop, &f->deliver);
	f->deliver.data = f;
	sl_handles_add(&f->handles, &f->deliver);
	*out = f;
	return SL_OK;
}

void sl_fetcher_free(struct sl_fetcher *f)
{
	struct fetch *x;

	while ((x = fetch_of(sl_list_first(&f->running)))) {
		sl_list_remove(&x->link);
		sl_curl.multi_remove_handle(f->cl.multi, x->easy);
		if (x->dispose)
			x->dispose(x->arg);
		fetch_free(x);
	}
	while ((x = fetch_of(sl_list_first(&f->done)))) {
		sl_list_remove(&x->link);
		if (x->dispose)
			x->dispose(x->arg);
		fetch_free(x);
	}
	f->n = 0;
	sl_curl_loop_dispose(&f->cl);
	sl_handles_close(&f->handles, free, f);
}

void sl_fetcher_unref(struct sl_fetcher *f)
{
	uv_unref((uv_handle_t *)&f->deliver);
	sl_curl_loop_unref(&f->cl);
}

unsigned sl_fetch_pending(const struct sl_fetcher *f)
{
	return f->n;
}

void sl_fetch_start(struct sl_fetcher *f, const struct sl_fetch_req *q, sl_fetch_fn *cb, void *arg)
{
	struct fetch *x = sl_alloc(sizeof(*x));
	char *h;

	x->f = f;
	x->cb = cb;
	x->dispose = q->dispose;
	x->arg = arg;
	x->max = q->max_bytes;
	f->n++;
	if (!(x->easy = sl_curl.easy_init())) {
		snprintf(x->error, sizeof(x->error), "libcurl failed to make a request");
		queue_done(f, x);
		return;
	}
	sl_curl.easy_setopt(x->easy, CURLOPT_URL, q->url);
	sl_curl.easy_setopt(x->easy, CURLOPT_PRIVATE, x);
	sl_curl.easy_setopt(x->easy, CURLOPT_USERAGENT, "sluice/" SL_VERSION);
	sl_curl.easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
	sl_curl.easy_setopt(x->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	sl_curl.easy_setopt(x->easy, CURLOPT_FOLLOWLOCATION, 0L);
	sl_curl.easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, (long)q->timeout_ms);
	sl_curl.easy_setopt(x->easy, CURLOPT_ERRORBUFFER, x->error);
	sl_curl.easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_body);
	sl_curl.easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
	sl_curl.easy_setopt(x->easy, CURLOPT_HEADERFUNCTION, on_header);
	sl_curl.easy_setopt(x->easy, CURLOPT_HEADERDATA, x);
	h = sl_printf("Accept: %s", q->accept ? q->accept : "application/json");
	x->headers = sl_curl.slist_append(NULL, h);
	free(h);
	if (q->bearer) {
		h = sl_printf("Authorization: Bearer %s", q->bearer);
		x->headers = sl_curl.slist_append(x->headers, h);
		free(h);
	}
	if (q->session_id) {
		h = sl_printf("Mcp-Session-Id: %s", q->session_id);
		x->headers = sl_curl.slist_append(x->headers, h);
		free(h);
	}
	if (q->protocol_version) {
		h = sl_printf("MCP-Protocol-Version: %s", q->protocol_version);
		x->headers = sl_curl.slist_append(x->headers, h);
		free(h);
	}
	if (q->mcp_method) {
		h = sl_printf("Mcp-Method: %s", q->mcp_method);
		x->headers = sl_curl.slist_append(x->headers, h);
		free(h);
	}
	if (q->json) {
		x->post = sl_strdup(q->json);
		x->headers = sl_curl.slist_append(x->headers, "Content-Type: application/json");
		sl_curl.easy_setopt(x->easy, CURLOPT_POSTFIELDS, x->post);
		sl_curl.easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(x->post));
	} else if (q->form) {
		x->post = sl_strdup(q->form);
		x->headers = sl_curl.slist_append(x->headers,
						  "Content-Type: application/x-www-form-urlencoded");
		sl_curl.easy_setopt(x->easy, CURLOPT_POSTFIELDS, x->post);
		sl_curl.easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(x->post));
	}
	if (q->method)
		sl_curl.easy_setopt(x->easy, CURLOPT_CUSTOMREQUEST, q->method);
	if (q->user && q->password) {
		sl_curl.easy_setopt(x->easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		sl_curl.easy_setopt(x->easy, CURLOPT_USERNAME, q->user);
		sl_curl.easy_setopt(x->easy, CURLOPT_PASSWORD, q->password);
	}
	sl_curl.easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->headers);
	if (sl_curl.multi_add_handle(f->cl.multi, x->easy) != CURLM_OK) {
		snprintf(x->error, sizeof(x->error), "libcurl refused the request");
		queue_done(f, x);
		return;
	}
	sl_list_push_front(&f->running, &x->link);
}

/*
 * The web login's pages (oauth/weblogin.h): GET /oauth/login/<id> and the
 * authorization server's callback, served to a browser without an MCP
 * credential. A page that waits (discovery, the token request) suspends
 * its connection until oauth calls back with it.
 */
#include "transport/http_int.h"
#include "gateway/gateway.h"
#include "oauth/weblogin.h"

#include <stdlib.h>
#include <string.h>

/* ---- the web login's pages (oauth/weblogin.h) ---------------------------------------------- */

void http_web_unlist(struct sl_http *h, struct req *r)
{
	(void)h;
	sl_list_remove(&r->web_link);
}

/* The page is known: kept for the connection's next call; a suspended
 * one resumes (libmicrohttpd then calls on_request again). */
static void on_web_page(void *arg, unsigned status, const char *html, const char *set_cookie)
{
	struct req *r = arg;
	struct sl_http *h = r->h;

	r->wq = NULL;
	r->web_status = status;
	free(r->web_html);
	r->web_html = sl_strdup(html);
	free(r->web_cookie);
	r->web_cookie = set_cookie ? sl_strdup(set_cookie) : NULL;
	if (sl_list_linked(&r->web_link)) {
		http_web_unlist(h, r);
		MHD_resume_connection(r->conn);
		http_kick(h);
	}
}

/* A browser's page: the web login wants no MCP credential (a browser has
 * none), and its answer comes with headers that keep it out of caches,
 * frames and Referer. */
enum MHD_Result http_web_answer(struct MHD_Connection *c, struct req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char *html = r->web_html ? r->web_html : sl_strdup("");

	r->web_html = NULL;
	resp = MHD_create_response_from_buffer(strlen(html), html, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type", "text/html; charset=utf-8");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	MHD_add_response_header(resp, "Content-Security-Policy", "default-src 'none'");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Connection", "close");
	/* The login's binder (oauth/weblogin.h): the callback wants it back. */
	if (r->web_cookie)
		MHD_add_response_header(resp, "Set-Cookie", r->web_cookie);
	ret = MHD_queue_response(c, r->web_status ? r->web_status : MHD_HTTP_INTERNAL_SERVER_ERROR,
				 resp);
	MHD_destroy_response(resp);
	return ret;
}

static const char *arg_of(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* GET /oauth/login/<id> or /oauth/callback: r is made here so that a page
 * that waits (discovery, the token request) can suspend the connection. */
enum MHD_Result http_web_start(struct sl_http *h, struct MHD_Connection *c, const char *url,
			       const char *method, void **con_cls)
{
	struct sl_weblogin_args a = { .code = arg_of(c, "code"), .state = arg_of(c, "state"),
				      .iss = arg_of(c, "iss"), .error = arg_of(c, "error"),
				      .error_description = arg_of(c, "error_description"),
				      .cookie = http_header(c, "Cookie") };
	struct req *r;

	if (strcmp(method, "GET") != 0)
		return http_refuse_method(c, "GET");
	r = sl_alloc(sizeof(*r));
	r->conn = c;
	r->h = h;
	r->web = true;
	sl_buf_init(&r->body, 0);
	*con_cls = r;
	r->wq = sl_weblogin_serve(h->gw->weblogin, url, &a, on_web_page, r);
	if (!r->wq)
		return http_web_answer(c, r);
	sl_list_push_front(&h->webs, &r->web_link);
	MHD_suspend_connection(c);
	return MHD_YES;
}

/* Shutting down: pages still waiting get 503 now, before the daemon goes. */
void http_web_stop(struct sl_http *h)
{
	struct sl_list *n;

	while ((n = sl_list_first(&h->webs))) {
		struct req *r = sl_list_entry(n, struct req, web_link);
		sl_weblogin_cancel(r->wq);
		r->wq = NULL;
		on_web_page(r, MHD_HTTP_SERVICE_UNAVAILABLE,
			    "<!doctype html>\n<title>sluice</title><p>The gateway is shutting down.</p>\n",
			    NULL);
	}
}

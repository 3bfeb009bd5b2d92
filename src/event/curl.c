/*
 * libcurl through dlopen (see curl.h for why).
 */
#include "event/curl.h"

#include "event/handles.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <uv.h>
#include <string.h>

struct sl_curl_api sl_curl;

bool sl_curl_load(const char *who, struct sl_err *err)
{
	static const char *names[] = { "libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so" };
	struct sl_curl_api api = { 0 };

	if (sl_curl.lib)
		return true;
	for (size_t i = 0; i < SL_COUNT(names) && !api.lib; i++)
		api.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!api.lib) {
		sl_err_set(err, "%s: libcurl is not installed (apt-get install libcurl4)", who);
		return false;
	}
#define SL_CURL_RESOLVE(f)                                                        \
	if (!(api.f = (__typeof__(api.f))dlsym(api.lib, "curl_" #f))) {          \
		sl_err_set(err, "%s: this libcurl lacks curl_%s, which sluice needs", who, #f); \
		dlclose(api.lib);                                                \
		return false;                                                    \
	}
	SL_CURL_FUNCTIONS(SL_CURL_RESOLVE)
#undef SL_CURL_RESOLVE
	if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		sl_err_set(err, "%s: libcurl failed to initialise", who);
		dlclose(api.lib);
		return false;
	}
	sl_curl = api;
	return true;
}

bool sl_curl_header(const char *line, size_t len, const char *name, const char **v, size_t *vl)
{
	size_t n = strlen(name);

	if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
		return false;
	*v = line + n + 1;
	*vl = len - n - 1;
	while (*vl && (**v == ' ' || **v == '\t'))
		(*v)++, (*vl)--;
	while (*vl && ((*v)[*vl - 1] == '\r' || (*v)[*vl - 1] == '\n' || (*v)[*vl - 1] == ' '))
		(*vl)--;
	return true;
}

/* ---- the multi handle on the loop ------------------------------------------ */

struct sl_curl_sock {
	uv_poll_t poll;
	struct sl_list link;     /* in cl->socks */
	struct sl_curl_loop *cl;
	curl_socket_t fd;
};

static void socket_action(struct sl_curl_loop *cl, curl_socket_t fd, int flags)
{
	int running;
	sl_curl.multi_socket_action(cl->multi, fd, flags, &running);
	cl->after(cl->arg);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct sl_curl_sock *s = h->data;
	int flags = 0;

	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	socket_action(s->cl, s->fd, flags);
}

static void sock_close(struct sl_curl_sock *s)
{
	struct sl_curl_loop *cl = s->cl;
	sl_list_remove(&s->link);
	uv_poll_stop(&s->poll);
	sl_handles_close_one(cl->handles, &s->poll, s);
}

static int on_curl_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct sl_curl_loop *cl = userp;
	struct sl_curl_sock *s = socketp;
	int events = 0;

	if (what == CURL_POLL_REMOVE) {
		if (s) {
			sl_curl.multi_assign(cl->multi, fd, NULL);
			sock_close(s);
		}
		return 0;
	}
	if (!s) {
		s = sl_alloc(sizeof(*s));
		s->cl = cl;
		s->fd = fd;
		if (uv_poll_init_socket(cl->loop, &s->poll, fd) < 0) {
			free(s);
			return -1;
		}
		s->poll.data = s;
		if (cl->unref)
			uv_unref((uv_handle_t *)&s->poll);
		sl_handles_add(cl->handles, &s->poll);
		sl_list_push_front(&cl->socks, &s->link);
		sl_curl.multi_assign(cl->multi, fd, s);
	}
	if (what & CURL_POLL_IN)
		events |= UV_READABLE;
	if (what & CURL_POLL_OUT)
		events |= UV_WRITABLE;
	uv_poll_start(&s->poll, events, on_poll);
	return 0;
}

static void on_timer_fired(uv_timer_t *t)
{
	socket_action(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static int on_curl_timer(CURLM *m, long ms, void *userp)
{
	struct sl_curl_loop *cl = userp;
	if (ms < 0)
		uv_timer_stop(cl->timer);
	else
		uv_timer_start(cl->timer, on_timer_fired, (uint64_t)ms, 0);
	return 0;
}

bool sl_curl_loop_init(struct sl_curl_loop *cl, uv_loop_t *loop, struct sl_handles *handles,
		       void (*after)(void *arg), void *arg)
{
	uv_timer_t *t;

	memset(cl, 0, sizeof(*cl));
	sl_list_init(&cl->socks);
	if (!(cl->multi = sl_curl.multi_init()))
		return false;
	cl->loop = loop;
	cl->handles = handles;
	cl->after = after;
	cl->arg = arg;
	/* The timer is freed by the handle set once closed, as the polls are. */
	t = sl_alloc(sizeof(*t));
	uv_timer_init(loop, t);
	t->data = cl;
	cl->timer = t;
	sl_handles_add(handles, t);
	sl_curl.multi_setopt(cl->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
	sl_curl.multi_setopt(cl->multi, CURLMOPT_SOCKETDATA, cl);
	sl_curl.multi_setopt(cl->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
	sl_curl.multi_setopt(cl->multi, CURLMOPT_TIMERDATA, cl);
	return true;
}

void sl_curl_loop_unref(struct sl_curl_loop *cl)
{
	struct sl_list *n;

	cl->unref = true;
	uv_unref(cl->timer);
	sl_list_each(n, &cl->socks)
		uv_unref((uv_handle_t *)&sl_list_entry(n, struct sl_curl_sock, link)->poll);
}

void sl_curl_loop_dispose(struct sl_curl_loop *cl)
{
	struct sl_list *n;

	if (!cl->multi)
		return;
	/* Stop watching curl's sockets before curl closes them. */
	while ((n = sl_list_first(&cl->socks))) {
		struct sl_curl_sock *s = sl_list_entry(n, struct sl_curl_sock, link);
		sl_curl.multi_assign(cl->multi, s->fd, NULL);
		sock_close(s);
	}
	uv_timer_stop(cl->timer);
	sl_handles_close_one(cl->handles, cl->timer, cl->timer);
	sl_curl.multi_cleanup(cl->multi);
	cl->multi = NULL;
}

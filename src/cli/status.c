/*
 * sluice status: asks a running gateway's GET /status (transport/http_operator.c,
 * answered to loopback peers only) and prints it as tables, or as the JSON
 * it is (--json). Over stdio there is no status endpoint: the gateway's
 * one client owns its stdin and stdout.
 */
#include "cli/cli.h"
#include "core/buf.h"
#include "core/escape.h"
#include "core/json.h"
#include "event/fetch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATUS_MAX_BYTES (16u << 20) /* the answer lists at most 1000 identities */
#define STATUS_TIMEOUT_MS 10000
#define NAME_WIDTH 24

/* The answer, copied out of the fetcher's callback. */
struct answer {
	bool done;
	long status;
	char *body, *error;
	size_t len;
};

static void on_answer(void *arg, const struct sl_fetch_result *res)
{
	struct answer *a = arg;

	a->done = true;
	a->status = res->status;
	if (res->error)
		a->error = sl_strdup(res->error);
	else {
		a->body = sl_strndup(res->body, res->len);
		a->len = res->len;
	}
}

/* The gateway's own address from sluice.http.listen ("host:port"): a
 * wildcard bind is asked on loopback, as /status answers nothing else. */
static char *default_url(const struct sl_config *cfg)
{
	const char *l = cfg ? cfg->http.listen : NULL, *colon;

	if (!l)
		return NULL;
	colon = strrchr(l, ':');
	if (!colon)
		return NULL;
	if (!strncmp(l, "0.0.0.0:", 8))
		return sl_printf("http://127.0.0.1%s/status", colon);
	if (!strncmp(l, "[::]:", 5) || !strncmp(l, ":::", 3))
		return sl_printf("http://[::1]%s/status", colon);
	return sl_printf("http://%s/status", l);
}

/* A name from the gateway, for a terminal: controls escaped, cut to w
 * (w < 0: whole, unpadded). */
static void put_name(const char *s, int w)
{
	struct sl_buf b;
	size_t len;
	char *e;

	sl_buf_init(&b, 4096);
	if (sl_escape(&b, s ? s : "-", s ? strlen(s) : 1, SL_ESCAPE_LOG) < 0)
		(void)!sl_buf_appends(&b, "?");
	e = sl_buf_take(&b, &len);
	if (w < 0)
		printf("%s", e);
	else
		printf("%-*.*s", w, w, e);
	free(e);
}

/* A limit or count, "-" for null (unlimited). */
static void put_num(yyjson_val *v, int w)
{
	if (yyjson_is_uint(v))
		printf(" %*llu", w, (unsigned long long)yyjson_get_uint(v));
	else
		printf(" %*s", w, "-");
}

/* The shared state (docs/internals/REPLICAS.md): one line, and the reason
 * while degraded. */
static void print_shared(yyjson_val *sh)
{
	const char *state = sl_json_str(sh, "state");

	if (!state || !strcmp(state, "off")) {
		printf("shared state: off (no sluice.shared.redis: this process keeps its own)\n");
		return;
	}
	printf("shared state: Redis at ");
	put_name(sl_json_str(sh, "redis"), -1);
	printf(", %s since %s\n", state, sl_json_str(sh, "since") ? sl_json_str(sh, "since") : "?");
	if (sl_json_str(sh, "lastError")) {
		printf("  ");
		put_name(sl_json_str(sh, "lastError"), -1);
		printf("; serving with local state\n");
	}
}

/* The replicas seen through Redis (src/shared/fleet.c). What they wrote
 * there is untrusted: every string is escaped and cut to its column. */
static void print_fleet(yyjson_val *fl)
{
	yyjson_val *it;
	size_t i, n;

	if (!yyjson_is_obj(fl))
		return;
	printf("\nfleet: this replica is ");
	put_name(sl_json_str(fl, "replica"), -1);
	printf(", read from Redis at %s\n", sl_json_str(fl, "readAt") ? sl_json_str(fl, "readAt") :
	       "- (not yet)");
	printf("%-*s %-6s %8s %-21s %-8s %4s %5s %9s %s\n", NAME_WIDTH, "REPLICA", "STATE", "PID",
	       "LISTEN", "VERSION", "SESS", "PROGS", "UPSTREAMS", "LAST SEEN");
	yyjson_arr_foreach(sl_json_arr(fl, "replicas"), i, n, it) {
		char ups[32];
		int64_t pid = 0;
		yyjson_val *u = sl_json_obj(it, "upstreams");
		const char *state = sl_json_str(it, "state");
		put_name(sl_json_str(it, "id"), NAME_WIDTH);
		printf(" %-6s", state && !strcmp(state, "alive") ? "alive" : "gone");
		(void)sl_json_int(it, "pid", &pid);
		printf(" %8lld ", (long long)pid);
		put_name(sl_json_str(it, "listen"), 21);
		printf(" ");
		put_name(sl_json_str(it, "version"), 8);
		put_num(yyjson_obj_get(it, "sessions"), 4);
		put_num(yyjson_obj_get(it, "programs"), 5);
		snprintf(ups, sizeof(ups), "%llu/%llu",
			 (unsigned long long)yyjson_get_uint(yyjson_obj_get(u, "up")),
			 (unsigned long long)yyjson_get_uint(yyjson_obj_get(u, "total")));
		printf(" %9s %.1fs ago%s\n", ups,
		       (double)yyjson_get_uint(yyjson_obj_get(it, "lastSeenMsAgo")) / 1000.0,
		       sl_json_true(it, "self") ? " (this one)" : "");
	}
	if (yyjson_get_uint(yyjson_obj_get(fl, "omitted")))
		printf("  %llu more not listed\n",
		       (unsigned long long)yyjson_get_uint(yyjson_obj_get(fl, "omitted")));
	if (yyjson_get_uint(yyjson_obj_get(fl, "ignored")))
		printf("  %llu entries ignored (malformed, too big, or with a time in the future)\n",
		       (unsigned long long)yyjson_get_uint(yyjson_obj_get(fl, "ignored")));
}

static void print_tables(yyjson_val *root)
{
	yyjson_val *ups = sl_json_arr(root, "upstreams"), *q = yyjson_obj_get(root, "quotas");
	yyjson_val *progs = yyjson_obj_get(root, "programs"), *it;
	uint64_t up = yyjson_get_uint(yyjson_obj_get(root, "uptimeSeconds"));
	size_t i, n;

	printf("sluice %s, up %lluh %02llum %02llus, config generation %llu\n",
	       sl_json_str(root, "version") ? sl_json_str(root, "version") : "?",
	       (unsigned long long)(up / 3600), (unsigned long long)(up / 60 % 60),
	       (unsigned long long)(up % 60),
	       (unsigned long long)yyjson_get_uint(yyjson_obj_get(root, "configGeneration")));
	printf("sessions %llu, requests in flight %llu",
	       (unsigned long long)yyjson_get_uint(yyjson_obj_get(root, "sessions")),
	       (unsigned long long)yyjson_get_uint(yyjson_obj_get(root, "requestsInFlight")));
	if (yyjson_is_obj(progs))
		printf(", programs running %llu, queued %llu",
		       (unsigned long long)yyjson_get_uint(yyjson_obj_get(progs, "running")),
		       (unsigned long long)yyjson_get_uint(yyjson_obj_get(progs, "queued")));
	printf("\n");
	print_shared(sl_json_obj(root, "shared"));
	print_fleet(sl_json_obj(root, "fleet"));
	printf("\n%-*s %-10s %6s\n", NAME_WIDTH, "UPSTREAM", "STATE", "TOOLS");
	yyjson_arr_foreach(ups, i, n, it) {
		put_name(sl_json_str(it, "name"), NAME_WIDTH);
		printf(" %-10s", sl_json_str(it, "state") ? sl_json_str(it, "state") : "?");
		put_num(yyjson_obj_get(it, "tools"), 6);
		printf("\n");
		if (sl_json_obj(it, "users")) {
			yyjson_val *us = sl_json_obj(it, "users");
			printf("  users with a link of their own: %llu of at most %llu (%llu open, %llu "
			       "awaiting their login)\n",
			       (unsigned long long)yyjson_get_uint(yyjson_obj_get(us, "links")),
			       (unsigned long long)yyjson_get_uint(yyjson_obj_get(us, "max")),
			       (unsigned long long)yyjson_get_uint(yyjson_obj_get(us, "open")),
			       (unsigned long long)yyjson_get_uint(yyjson_obj_get(us, "awaitingLogin")));
		}
		if (sl_json_str(it, "error")) {
			printf("  ");
			put_name(sl_json_str(it, "error"), -1);
			printf("\n");
		}
	}
	if (!yyjson_is_obj(q)) {
		printf("\nquotas: none (no sluice.quotas)\n");
		return;
	}
	printf("\nquotas: %llu identities counted (at most %llu subjects)",
	       (unsigned long long)yyjson_get_uint(yyjson_obj_get(q, "counted")),
	       (unsigned long long)yyjson_get_uint(yyjson_obj_get(q, "maxIdentities")));
	if (yyjson_get_uint(yyjson_obj_get(q, "omitted")))
		printf(", %llu least recently used not listed",
		       (unsigned long long)yyjson_get_uint(yyjson_obj_get(q, "omitted")));
	printf("\n%-8s %-*s %7s %7s %6s %8s %9s\n", "SCOPE", NAME_WIDTH, "NAME", "TOKENS",
	       "PER MIN", "BURST", "TODAY", "PER DAY");
	yyjson_arr_foreach(sl_json_arr(q, "counters"), i, n, it) {
		yyjson_val *lim = sl_json_obj(it, "limits");
		printf("%-8s ", sl_json_str(it, "scope") ? sl_json_str(it, "scope") : "?");
		put_name(sl_json_str(it, "name"), NAME_WIDTH);
		put_num(yyjson_obj_get(it, "tokens"), 7);
		put_num(yyjson_obj_get(lim, "callsPerMinute"), 7);
		put_num(yyjson_obj_get(lim, "burst"), 6);
		put_num(yyjson_obj_get(it, "callsToday"), 8);
		put_num(yyjson_obj_get(lim, "callsPerDay"), 9);
		printf("\n");
	}
}

int sl_cli_status(const struct sl_config *cfg, const char *url, bool json)
{
	char *u = url ? sl_printf("%s/status", url) : default_url(cfg);
	struct sl_fetch_req q = { .max_bytes = STATUS_MAX_BYTES, .timeout_ms = STATUS_TIMEOUT_MS };
	struct answer a = { 0 };
	struct sl_fetcher *f = NULL;
	struct sl_err err;
	yyjson_doc *doc = NULL;
	int rc = 1;

	if (!u) {
		fprintf(stderr, "sluice status: the config has no sluice.http.listen (the gateway "
			"serves stdio, which has no status): give --url http://HOST:PORT\n");
		goto out;
	}
	/* The one HTTP client path (event/fetch.h), on a loop of its own run
	 * until the answer is in: the request is bounded in time and size. */
	if (sl_fetcher_new(uv_default_loop(), "sluice status", &f, &err) < 0) {
		fprintf(stderr, "sluice status: %s\n", err.msg);
		goto out;
	}
	q.url = u;
	/* The gateway of this config, at its own listen address: its
	 * operator's token, for a gateway where this host is not local
	 * (sluice.http.proxies names it; docs/ADMIN.md, "Behind a proxy").
	 * Never to a --url, which may be anyone's. */
	q.bearer = url || !cfg ? NULL : cfg->http.admin_token;
	sl_fetch_start(f, &q, on_answer, &a);
	while (!a.done && uv_run(uv_default_loop(), UV_RUN_ONCE))
		;
	if (!a.done || a.error) {
		fprintf(stderr, "sluice status: %s: %s\n", u, a.error ? a.error : "no answer");
		goto out;
	}
	doc = sl_json_read(a.body, a.len, SL_JSON_READ_FLAGS, NULL);
	if (a.status != 200) {
		const char *msg = doc ? sl_json_str(sl_json_obj(yyjson_doc_get_root(doc), "error"),
						    "message") : NULL;
		fprintf(stderr, "sluice status: %s answered %ld%s%s\n", u, a.status, msg ? ": " : "",
			msg ? msg : "");
		goto out;
	}
	if (!doc || !yyjson_is_obj(yyjson_doc_get_root(doc))) {
		fprintf(stderr, "sluice status: %s did not answer a JSON object\n", u);
		goto out;
	}
	if (json)
		printf("%.*s\n", (int)a.len, a.body);
	else
		print_tables(yyjson_doc_get_root(doc));
	rc = 0;
out:
	if (f)
		sl_fetcher_free(f);
	yyjson_doc_free(doc);
	free(a.body);
	free(a.error);
	free(u);
	return rc;
}

/*
 * Config file -> immutable struct sl_config.
 *
 * File-level mistakes (invalid JSON, wrong types, bad values) fail the load
 * with file:line:column. Server-level problems that the user may fix in the
 * environment (an unset ${VAR}) fail only that server: it shows up as failed
 * in list_servers while the others serve. Unknown keys are warnings.
 */
#include "config/internal.h"
#include "core/glob.h"
#include "core/json.h"
#include "core/log.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_MAX_BYTES (16u << 20)

struct parser {
	struct sl_conf_ctx cx; /* first: on_warn finds the parser from it */
	struct sl_config *c;
};

static void add_warning(struct sl_config *c, char *msg)
{
	c->warnings = sl_realloc(c->warnings, (c->nwarnings + 1) * sizeof(char *));
	c->warnings[c->nwarnings++] = msg;
}

static void on_warn(struct sl_conf_ctx *cx, char *msg)
{
	add_warning(((struct parser *)cx)->c, msg);
}

const char *cfg_getenv(const char *name)
{
	return getenv(name);
}

char *sl_config_expand(const char *s, const char *(*getenv_fn)(const char *), struct sl_err *err)
{
	size_t cap = strlen(s) + 1, len = 0;
	char *out = sl_alloc(cap);

	while (*s) {
		const char *end, *name, *val;
		size_t nlen, vlen;
		char var[256];

		if (s[0] != '$' || s[1] != '{') {
			out[len++] = *s++;
			continue;
		}
		end = strchr(s + 2, '}');
		if (!end) {
			sl_err_set(err, "unterminated ${ in \"%s\"", s);
			goto fail;
		}
		name = s + 2;
		nlen = (size_t)(end - name);
		if (nlen > 4 && memcmp(name, "env:", 4) == 0) {
			name += 4;
			nlen -= 4;
		}
		if (nlen == 0 || nlen >= sizeof(var)) {
			sl_err_set(err, "bad variable reference \"%.*s\"", (int)(end - s + 1), s);
			goto fail;
		}
		memcpy(var, name, nlen);
		var[nlen] = '\0';
		val = getenv_fn(var);
		if (!val) {
			sl_err_set(err, "environment variable %s is not set", var);
			goto fail;
		}
		vlen = strlen(val);
		cap += vlen;
		out = sl_realloc(out, cap);
		memcpy(out + len, val, vlen);
		len += vlen;
		s = end + 1;
	}
	out[len] = '\0';
	return out;
fail:
	free(out);
	return NULL;
}


static int parse_require(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			 void *target)
{
	struct sl_config *c = target;
	yyjson_val *b;
	size_t i, n;

	if (!yyjson_is_arr(v))
		return sl_conf_bad(cx, k);
	yyjson_arr_foreach(v, i, n, b) {
		unsigned bit = yyjson_is_str(b) ? sl_config_modules.boundary(yyjson_get_str(b)) : 0;
		if (!bit)
			return sl_conf_fail_key(cx, k, "names are userns, pidns, netns, ipcns, mountns, "
						"rlimits, no_new_privs, landlock, seccomp");
		c->code_require |= bit;
	}
	return SL_OK;
}

/* codeMode.saveSkills: its default depends on the HTTP face, read after
 * the whole file (sl_config_parse). */
static int parse_save_skills(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			     void *target)
{
	struct sl_config *c = target;

	if (!yyjson_is_bool(v))
		return sl_conf_bad(cx, k);
	c->code_save_skills = yyjson_get_bool(v);
	c->code_save_skills_set = true;
	return SL_OK;
}

#define CODE(field) SL_CONF_AT(struct sl_config, field)
static const struct sl_conf_key code_keys[] = {
	{ "enabled", SL_CONF_BOOL, CODE(code_offered),
	  .doc = "Offers `execute_code` in every exposure mode and profile (always on in "
		 "`\"code\"`)." },
	{ "saveSkills", SL_CONF_CUSTOM, CODE(code_save_skills), .parse = parse_save_skills,
	  .shape = "true or false",
	  .dflt_doc = "`true`, but `false` when `sluice.http` authenticates callers (`bearerToken`, "
		      "`auth.tokens` or `auth.resource`)",
	  .doc = "Offers `save_skill` where `execute_code` is. A skill belongs to the caller who "
		 "saved it (docs/internals/SANDBOX.md, \"Skills\"); policy rules govern it as "
		 "`skills.save_skill`." },
	{ "timeoutMs", SL_CONF_UINT, CODE(code.timeout_ms), .min = 1, .max = 3600000, .dflt = 30000,
	  .doc = "A program's wall clock, its tool calls included." },
	{ "cpuMs", SL_CONF_UINT, CODE(code.cpu_ms), .min = 1, .max = 3600000, .dflt = 5000,
	  .doc = "A program's CPU time." },
	{ "heapBytes", SL_CONF_UINT, CODE(code.heap_bytes), .min = 1u << 20, .max = 16ull << 30,
	  .dflt = 256u << 20, .doc = "The JavaScript heap." },
	{ "stackBytes", SL_CONF_UINT, CODE(code.stack_bytes), .min = 64u << 10, .max = 64u << 20,
	  .dflt = 1u << 20, .doc = "The JavaScript stack." },
	{ "maxCalls", SL_CONF_UINT, CODE(code.max_calls), .min = 1, .max = 100000, .dflt = 32,
	  .doc = "Tool calls per program." },
	{ "maxInFlight", SL_CONF_UINT, CODE(code.max_inflight), .min = 1, .max = 1000, .dflt = 4,
	  .doc = "Tool calls of one program running at once." },
	{ "maxOutputBytes", SL_CONF_UINT, CODE(code.max_output), .min = 1024, .max = 1u << 30,
	  .dflt = 64u << 10, .doc = "The return value, as text." },
	{ "maxConsoleBytes", SL_CONF_UINT, CODE(code.max_console), .min = 0, .max = 1u << 30,
	  .dflt = 4u << 10, .doc = "Console output kept for the answer." },
	{ "maxSourceBytes", SL_CONF_UINT, CODE(code.max_source), .min = 64, .max = 1u << 30,
	  .dflt = 64u << 10, .doc = "The program's source." },
	{ "maxArgsBytes", SL_CONF_UINT, CODE(code.max_args), .min = 64, .max = 1u << 30,
	  .dflt = 256u << 10,
	  .doc = "One call's arguments, as JSON (a skill called directly, `skills__<name>`, too)." },
	{ "maxResultBytes", SL_CONF_UINT, CODE(code.max_result), .min = 1024, .max = 1u << 30,
	  .dflt = 4u << 20,
	  .doc = "One tool result handed to the program, as JSON (over it the call rejects with "
		 "`too_large`)." },
	{ "poolSize", SL_CONF_UINT, CODE(code_pool), .min = 1, .max = 8, .dflt = 2,
	  .doc = "Workers prepared in advance." },
	{ "maxConcurrent", SL_CONF_UINT, CODE(code_max_concurrent), .min = 0, .max = 1000,
	  .dflt = 0, .dflt_doc = "`0`: twice the number of cores",
	  .doc = "Programs running at once (a worker each), all sessions, stdio and both HTTP eras "
		 "together; more wait in a queue (`maxQueued`). Each may use up to `heapBytes`." },
	{ "maxQueued", SL_CONF_UINT, CODE(code_max_queued), .min = 0, .max = 100000, .dflt = 32,
	  .doc = "Programs waiting for a free slot (one caller's in the order they came; between "
		 "callers, see `maxConcurrentPerCaller`): a queued program's "
		 "`timeoutMs` starts when it runs, and a cancelled one leaves the queue. One more is "
		 "refused at once with a \"busy\" error naming this limit." },
	{ "maxConcurrentPerCaller", SL_CONF_UINT, CODE(code_max_concurrent_caller), .min = 0,
	  .max = 1000, .dflt = 0, .dflt_doc = "`0`: half of `maxConcurrent`, at least 1",
	  .doc = "Of those, the programs one caller may run at once (a caller is an identity: "
		 "authentication method, issuer and subject, whatever profile or session it comes "
		 "through). A program over it waits in the queue; when a slot comes free, the caller "
		 "holding the fewest slots (then the one served longest ago) goes first, so no "
		 "caller's programs keep another's from running. The holders of the shared "
		 "`bearerToken` are one caller. Without authentication (stdio, HTTP with no "
		 "credential configured) every peer is the same caller: only the global limits "
		 "hold." },
	{ "maxQueuedPerCaller", SL_CONF_UINT, CODE(code_max_queued_caller), .min = 0, .max = 100000,
	  .dflt = 0, .dflt_doc = "`0`: half of `maxQueued`, at least 1",
	  .doc = "Of the waiting programs, those of one caller; one more of theirs is refused at "
		 "once as \"busy\", naming this limit." },
	{ "require", SL_CONF_CUSTOM, CODE(code_require), .parse = parse_require,
	  .shape = "an array of boundary names", .dflt_doc = "`[]`",
	  .doc = "Sandbox boundaries code mode refuses to run without: `userns`, `pidns`, `netns`, "
		 "`ipcns`, `mountns`, `rlimits`, `no_new_privs`, `landlock`, `seccomp` "
		 "(`sluice doctor` shows what this machine has)." },
};
#undef CODE

static const struct sl_conf_section code_section = {
	"sluice.codeMode",
	"Code mode: `execute_code` runs a JavaScript or TypeScript program in a sandboxed worker; "
	"these are its limits (docs/internals/SANDBOX.md).",
	code_keys, SL_COUNT(code_keys), 0, NULL,
};

void sl_code_limits_default(struct sl_code_limits *l)
{
	struct sl_config c = { 0 };
	sl_conf_defaults(&code_section, &c);
	*l = c.code;
}

#define LIM(field) SL_CONF_AT(struct sl_limits, field)
static const struct sl_conf_key limits_keys[] = {
	{ "maxBufferedBytes", SL_CONF_UINT, LIM(max_buffered_bytes), .min = 1u << 20,
	  .max = 1ull << 40, .dflt = 256u << 20,
	  .doc = "Everything the HTTP transport holds for peers, all sessions together: SSE events "
		 "queued and kept for resumption, backlogs, request bodies. At the bound the session "
		 "holding the most gives up its oldest detached stream's history, then its oldest "
		 "backlog line; then a GET stream whose client is not reading ends, an answer becomes "
		 "a JSON-RPC error naming this key, and new work is refused with 503." },
	{ "maxSessionBytes", SL_CONF_UINT, LIM(max_session_bytes), .min = 64u << 10,
	  .max = 1ull << 40, .dflt = 16u << 20,
	  .doc = "What one session holds (its streams, their histories, its backlog); at the bound "
		 "the same order as `maxBufferedBytes`, within the session." },
	{ "maxRequestsInFlight", SL_CONF_UINT, LIM(max_requests), .min = 1, .max = 1000000,
	  .dflt = 256,
	  .doc = "Requests being answered at once, all sessions, stdio and both HTTP eras together: "
		 "those that wait on a server or a program (`tools/call`, `resources/read`, "
		 "`prompts/get`, `completion/complete`, subscriptions). One more gets JSON-RPC error "
		 "-32000 naming this key; lists and `ping`, answered at once, are never refused." },
	{ "maxConnections", SL_CONF_UINT, LIM(max_connections), .min = 16, .max = 1000000,
	  .dflt = 1024, .doc = "HTTP connections open at once; one more is closed at once (the "
			       "open-file limit is raised to fit, with a warning if it cannot be)." },
	{ "maxPendingConnections", SL_CONF_UINT, LIM(max_pending), .min = 1, .max = 1000000,
	  .dflt = 256,
	  .doc = "HTTP connections whose first request's headers have not all arrived and been "
		 "admitted; over it the oldest of them is closed." },
	{ "maxPendingPerAddress", SL_CONF_UINT, LIM(max_pending_per_ip), .min = 1, .max = 1000000,
	  .dflt = 32,
	  .doc = "Of those, from one client address; over it that address's oldest pending for a "
		 "second or more are closed (other addresses keep theirs)." },
	{ "headerTimeoutMs", SL_CONF_UINT, LIM(header_timeout_ms), .min = 100, .max = 3600000,
	  .dflt = 10000,
	  .doc = "A new connection must deliver its first request's headers whole within this "
		 "long in all (a peer trickling bytes gains nothing)." },
	{ "idleConnectionTimeoutMs", SL_CONF_UINT, LIM(idle_timeout_ms), .min = 1000,
	  .max = 86400000, .dflt = 120000,
	  .doc = "A kept-alive connection waits at most this long in all for its next request's "
		 "headers, and a request stalled this long (no byte either way) is closed; a stream "
		 "waiting for its next event is not." },
	{ "serverRequestsPerCall", SL_CONF_UINT, LIM(server_requests_per_call), .min = 0,
	  .max = 100000, .dflt = 16,
	  .doc = "Sampling and elicitation requests relayed to the client during one client "
		 "request (a tool call, or a whole `execute_code` program); the excess is refused to "
		 "the server with JSON-RPC error -32000 naming this key, logged once per call. `0` "
		 "relays none." },
	{ "serverRequestsPerMinute", SL_CONF_UINT, LIM(server_requests_per_minute), .min = 0,
	  .max = 1000000, .dflt = 60,
	  .doc = "The same, per server and minute (a fixed window, opened by the first request "
		 "after the last one closed); refused the same way, logged once per window." },
	{ "notificationsPerSecond", SL_CONF_UINT, LIM(notifications_per_second), .min = 1,
	  .max = 1000000, .dflt = 100,
	  .doc = "Notifications from one server (log messages, progress, list changes, resource "
		 "updates) per second (a fixed window); the excess is dropped, and one log line at the "
		 "end of the second says how many." },
	{ "tasksPerSession", SL_CONF_UINT, LIM(tasks_per_session), .min = 1, .max = 100000,
	  .dflt = 32,
	  .doc = "Tasks (MCP 2025-11-25 task-augmented `tools/call`) one client session holds: a "
		 "new task beyond it is refused with JSON-RPC error -32000 naming this key, after the "
		 "session's oldest finished task was dropped to make room. An entry goes when its "
		 "result was fetched, its session ends, or `taskTtlMs` passed (docs/internals/TASKS.md)." },
	{ "maxTasks", SL_CONF_UINT, LIM(max_tasks), .min = 1, .max = 1000000, .dflt = 1024,
	  .doc = "Tasks held for all sessions together; refused the same way." },
	{ "taskTtlMs", SL_CONF_UINT, LIM(task_ttl_ms), .min = 1000, .max = 604800000,
	  .dflt = 3600000,
	  .doc = "The longest sluice keeps a task (the server's own `ttl` when shorter): after it, "
		 "the task id is unknown to the client." },
	{ "maxParkedCalls", SL_CONF_UINT, LIM(max_parked), .min = 0, .max = 1000000, .dflt = 256,
	  .doc = "Tool calls of 2026-07-28 clients parked at once, all clients: their server asked "
		 "for sampling, elicitation or roots, the client got `input_required`, and the call "
		 "waits for the client's retry. One more: the server's request is refused with "
		 "JSON-RPC error -32000 naming this key. `0` parks none." },
	{ "maxParkedCallsPerClient", SL_CONF_UINT, LIM(max_parked_per_client), .min = 0,
	  .max = 1000000, .dflt = 16,
	  .doc = "Of those, one client's (one bearer token; over stdio, or HTTP without a token, "
		 "all requests are one client); refused the same way." },
	{ "parkTimeoutMs", SL_CONF_UINT, LIM(park_timeout_ms), .min = 100, .max = 3600000,
	  .dflt = 60000,
	  .doc = "How long a parked call waits for the client's retry; then the server's questions "
		 "are refused, its call is cancelled (`notifications/cancelled`) and the parked state "
		 "freed: a retry after it gets an error. The call's own timeout keeps running while "
		 "it is parked." },
	{ "maxInputRounds", SL_CONF_UINT, LIM(max_input_rounds), .min = 1, .max = 1000, .dflt = 8,
	  .doc = "`input_required` answers one tool call of a 2026-07-28 client may get for its "
		 "server's questions; a question after the last is refused to the server with "
		 "JSON-RPC error -32000 naming this key." },
	{ "maxListens", SL_CONF_UINT, LIM(max_listens), .min = 0, .max = 100000, .dflt = 256,
	  .doc = "`subscriptions/listen` streams of 2026-07-28 clients open at once, stdio and "
		 "HTTP together; one more gets JSON-RPC error -32000 naming this key before its "
		 "acknowledgement. `0` refuses every listen." },
	{ "maxListensPerSession", SL_CONF_UINT, LIM(max_listens_per_session), .min = 1,
	  .max = 100000, .dflt = 16,
	  .doc = "Of those, per stdio client, and over HTTP per credential (the bearer token; "
		 "without one configured, all clients together); refused the same way (HTTP 429). "
		 "A listen does not count as a request in flight." },
	{ "maxListenUris", SL_CONF_UINT, LIM(max_listen_uris), .min = 0, .max = 100000,
	  .dflt = 64,
	  .doc = "Resource URIs in one listen's `resourceSubscriptions`; more is refused with "
		 "JSON-RPC error -32602 naming this key." },
	{ "maxMetricSeries", SL_CONF_UINT, LIM(max_metric_series), .min = 10, .max = 100000,
	  .dflt = 1000,
	  .doc = "Distinct (server, tool) pairs `sluice_tool_calls_total` counts apart (`/metrics`, "
		 "docs/METRICS.md); a tool first called past the bound counts under `tool=\"_other\"`. "
		 "A reload's new value waits for a restart." },
	{ "toolsPageSize", SL_CONF_UINT, LIM(tools_page_size), .min = 0, .max = 100000, .dflt = 0,
	  .doc = "Tools in one `tools/list` answer: with more to list, the answer carries "
		 "`nextCursor` (MCP pagination), an opaque cursor bound to that caller's listing; a "
		 "cursor from a listing that has changed since, or one sluice did not issue, gets "
		 "JSON-RPC error -32602 (list again without a cursor). `0`: every tool in one answer." },
	{ "maxListings", SL_CONF_UINT, LIM(max_listings), .min = 1, .max = 100000, .dflt = 64,
	  .doc = "Rendered `tools/list` listings kept for reuse, one per view (profile, the "
		 "tools its caller may see, the client's protocol version); the least recently "
		 "used goes first. All are dropped when the catalog or the config changes "
		 "(docs/internals/LISTING.md)." },
	{ "maxListingBytes", SL_CONF_UINT, LIM(max_listing_bytes), .min = 1u << 20,
	  .max = 1ull << 40, .dflt = 64u << 20,
	  .doc = "What those listings hold together; a listing larger than this alone is "
		 "rendered for each request and not kept." },
};
#undef LIM

static const struct sl_conf_section limits_section = {
	"sluice.limits",
	"Bounds on what the gateway holds and runs on behalf of peers (docs/RELIABILITY.md, "
	"\"Bounds\"): no peer, with or without a credential, can make it use more.",
	limits_keys, SL_COUNT(limits_keys), 0, NULL,
};

/* sluice.shared.redis.url: checked here, so `sluice check` refuses a bad one. */
static int parse_redis_url(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			   void *target)
{
	struct sl_redis_config *r = target;
	struct sl_err e;

	if (!yyjson_is_str(v))
		return sl_conf_bad(cx, k);
	if (sl_config_modules.redis_url_check(yyjson_get_str(v), &e) < 0)
		return sl_conf_fail_key(cx, k, "%s", e.msg);
	free(r->url);
	r->url = sl_strdup(yyjson_get_str(v));
	return SL_OK;
}

#define RDS(field) SL_CONF_AT(struct sl_redis_config, field)
static const struct sl_conf_key redis_keys[] = {
	{ "url", SL_CONF_CUSTOM, RDS(url), .parse = parse_redis_url,
	  .shape = "\"redis://host[:port][/db]\" or \"unix:/path[?db=N]\"", .dflt_doc = "required",
	  .doc = "The Redis server (or any server of the Redis protocol) the replicas share. A "
		 "password in the URL is refused: use `password`." },
	{ "password", SL_CONF_CUSTOM, RDS(password), .parse = cfg_parse_secret,
	  .shape = "a non-empty string", .dflt_doc = "none (no `AUTH`)",
	  .doc = "Sent with `AUTH` on every connection; `${VAR}` expanded." },
	{ "keyPrefix", SL_CONF_STRING, RDS(key_prefix), .min = 1, .dflt_doc = "`\"sluice:\"`",
	  .doc = "Put before every key and channel name, so several gateways can share one Redis." },
	{ "connectTimeoutMs", SL_CONF_UINT, RDS(connect_timeout_ms), .min = 10, .max = 600000,
	  .dflt = 2000, .doc = "One connection attempt, `AUTH` and `SELECT` included." },
	{ "commandTimeoutMs", SL_CONF_UINT, RDS(command_timeout_ms), .min = 10, .max = 600000,
	  .dflt = 1000,
	  .doc = "A command without its reply after this long drops the connection (the server "
		 "is taken as down: degraded state, reconnect with backoff)." },
	{ "maxPending", SL_CONF_UINT, RDS(max_pending), .min = 1, .max = 1000000, .dflt = 1024,
	  .doc = "Commands waiting for their reply at once; one more fails at once (its caller "
		 "keeps its local state)." },
	{ "maxReplyBytes", SL_CONF_UINT, RDS(max_reply_bytes), .min = 1024, .max = 1u << 30,
	  .dflt = 16u << 20,
	  .doc = "One reply as it arrives; a bigger one drops the connection with an error "
		 "naming this key." },
};
#undef RDS

static const struct sl_conf_section redis_section = {
	"sluice.shared.redis",
	"Redis for state the replicas of one gateway share (docs/internals/REPLICAS.md): tool "
	"pins, whose approvals reach every replica within a second, and, with "
	"`sluice.shared.secret`, session records, so that a replica adopts a session another "
	"one opened. Without this section nothing is shared and no Redis is needed. Changing "
	"it takes a restart (a reload keeps the connection it has).",
	redis_keys, SL_COUNT(redis_keys), SL_CONF_STRICT, NULL,
};

static int parse_redis(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		       void *target)
{
	struct sl_redis_config *r = sl_conf_field(target, k);
	int rc;

	if (!yyjson_is_obj(v))
		return sl_conf_bad(cx, k);
	sl_conf_defaults(&redis_section, r);
	r->on = true;
	if ((rc = sl_conf_apply(cx, &redis_section, NULL, v, r)) < 0)
		return rc;
	if (!r->url)
		return sl_conf_fail(cx, "sluice.shared.redis", "needs \"url\"");
	if (!r->key_prefix)
		r->key_prefix = sl_strdup("sluice:");
	return SL_OK;
}

/* sluice.shared.replicaId: shown to operators (sluice status) and used as a
 * hash field, so bounded and printable. */
static int parse_replica_id(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			    void *target)
{
	char **id = sl_conf_field(target, k);

	if (!yyjson_is_str(v))
		return sl_conf_bad(cx, k);
	if (!sl_config_modules.replica_id_ok(yyjson_get_str(v)) ||
	    yyjson_get_len(v) != strlen(yyjson_get_str(v)))
		return sl_conf_fail_key(cx, k, "must be 1 to %u characters of printable ASCII "
					"without spaces", sl_config_modules.replica_id_max);
	free(*id);
	*id = sl_strdup(yyjson_get_str(v));
	return SL_OK;
}

#define SHR(field) SL_CONF_AT(struct sl_config, field)
static const struct sl_conf_key shared_keys[] = {
	{ "secret", SL_CONF_CUSTOM, SHR(shared_secret), .parse = cfg_parse_long_secret,
	  .shape = "a string of at least 32 characters", .dflt_doc = "none: seals are per process",
	  .doc = "The replicas' shared sealing key, `${VAR}` expanded (keep it in the environment); "
		 "never logged nor shown in `/status`. Everything a client carries back (session "
		 "ids, `requestState`, confirmations, task ids) is sealed with a key derived from "
		 "it (HMAC-SHA-256), so every replica with the same secret verifies every other's; "
		 "with `redis` too, a replica adopts a session another one opened "
		 "(docs/internals/REPLICAS.md). Read at start only." },
	{ "redis", SL_CONF_CUSTOM, SHR(redis), .parse = parse_redis, .sub = &redis_section,
	  .shape = "an object", .dflt_doc = "none: nothing shared",
	  .doc = "See `sluice.shared.redis` below." },
	{ "replicaId", SL_CONF_CUSTOM, SHR(replica_id), .parse = parse_replica_id,
	  .shape = "1 to 128 printable ASCII characters, no spaces",
	  .dflt_doc = "`\"<hostname>:<pid>\"`",
	  .doc = "This replica's name in the fleet (`sluice status`, `GET /status` `fleet`, the "
		 "Redis hash `<prefix>replicas`). Give each replica its own; read at start only." },
};
#undef SHR

static const struct sl_conf_section shared_section = {
	"sluice.shared",
	"State shared by several sluice processes serving as one gateway (replicas).",
	shared_keys, SL_COUNT(shared_keys), SL_CONF_STRICT, NULL,
};

/* Whether key names a stage (sluice.<key> is its own section). */
static bool is_stage(const char *key)
{
	const struct sl_conf_section *conf;
	const char *name;

	for (size_t i = 0; sl_config_modules.stage(i, &name, &conf); i++)
		if (strcmp(name, key) == 0)
			return true;
	return false;
}

/* A stage's own section: the stage reads it at start. */
static int stage_section(struct sl_conf_ctx *cx, const char *key, yyjson_val *v, void *target)
{
	if (!is_stage(key))
		return SL_CONF_DECLINED;
	if (!yyjson_is_obj(v))
		return sl_conf_fail(cx, key, "a stage's section must be an object");
	return SL_OK;
}

static const struct sl_conf_name exposures[] = {
	{ "passthrough", SL_EXPOSE_PASSTHROUGH },
	{ "router", SL_EXPOSE_ROUTER },
	{ "hybrid", SL_EXPOSE_HYBRID },
	{ "code", SL_EXPOSE_CODE },
	{ NULL, 0 },
};

static int parse_profile_exposure(struct sl_conf_ctx *cx, const struct sl_conf_key *k,
				  yyjson_val *v, void *target)
{
	struct sl_profile *p = target;
	for (size_t i = 0; yyjson_is_str(v) && exposures[i].name; i++)
		if (!strcmp(exposures[i].name, yyjson_get_str(v))) {
			p->exposure = (enum sl_exposure)exposures[i].value;
			p->exposure_set = true;
			return SL_OK;
		}
	return sl_conf_bad(cx, k);
}

static const struct sl_conf_name log_levels[] = {
	{ "error", SL_LOG_ERROR },
	{ "warn", SL_LOG_WARN },
	{ "info", SL_LOG_INFO },
	{ "debug", SL_LOG_DEBUG },
	{ NULL, 0 },
};

/* ---- sluice.profiles (docs/PROFILES.md) ---- */

/* 1 to SL_PROFILE_NAME_MAX of [a-z0-9_-], and [A-Z] with upper. */
static bool valid_name(const char *n, bool upper)
{
	size_t len = strlen(n);
	if (len == 0 || len > SL_PROFILE_NAME_MAX)
		return false;
	for (; *n; n++)
		if (!(('a' <= *n && *n <= 'z') || (upper && 'A' <= *n && *n <= 'Z') ||
		      ('0' <= *n && *n <= '9') || *n == '_' || *n == '-'))
			return false;
	return true;
}

/* A profile's name: it is a URL path segment, /mcp/<name>. */
static bool valid_profile_name(const char *n)
{
	return valid_name(n, false);
}

/* A name a profile gives a tool: an exposed name of the catalog's alphabet
 * (upstream/catalog.h), so that it reads the same in every mode. */
static bool valid_tool_rename(const char *n)
{
	return valid_name(n, true);
}

/* An array of 1 to SL_PROFILE_GLOBS_MAX non-empty strings. */
static int parse_globs(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		       void *target)
{
	if (yyjson_is_arr(v) && (yyjson_arr_size(v) == 0 || yyjson_arr_size(v) > SL_PROFILE_GLOBS_MAX))
		return sl_conf_bad(cx, k);
	return cfg_parse_strings(cx, k, v, target);
}

static int parse_profile_exposure(struct sl_conf_ctx *cx, const struct sl_conf_key *k,
				  yyjson_val *v, void *target);

const char *const sl_always_load_default[] = {
	"execute_code", "search_tools", "describe_tools", "list_servers", "list_tools",
	"invoke_tool", "read_result", NULL,
};

/* sluice.alwaysLoad and a profile's: unlike servers and tools, [] is
 * meaningful (no tool is marked). */
static int parse_always_load(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			     void *target)
{
	if (yyjson_is_arr(v) && yyjson_arr_size(v) > SL_ALWAYS_LOAD_MAX)
		return sl_conf_bad(cx, k);
	return cfg_parse_strings(cx, k, v, target);
}

#define ALWAYS_LOAD_DOC \
	"Globs on tool names as `tools/list` serves them (after prefixes and renames): those " \
	"tools carry `_meta[\"anthropic/alwaysLoad\"]: true`, which asks a client that defers " \
	"tools behind a search of its own (Claude Code) to load them at once. `[]`: none. " \
	"README.md, \"Clients that defer tools\"."

static int parse_rename(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			void *target)
{
	struct sl_profile *p = target;
	yyjson_obj_iter it;
	yyjson_val *key;

	if (!yyjson_is_obj(v) || yyjson_obj_size(v) > SL_PROFILE_RENAME_MAX)
		return sl_conf_bad(cx, k);
	p->rename = sl_alloc((yyjson_obj_size(v) + 1) * sizeof(*p->rename));
	yyjson_obj_iter_init(v, &it);
	while ((key = yyjson_obj_iter_next(&it))) {
		const char *from = yyjson_get_str(key) ? yyjson_get_str(key) : "", *dot = strchr(from, '.');
		const char *to = yyjson_get_str(yyjson_obj_iter_get_val(key));
		if (!dot || dot == from || !dot[1] || strlen(from) != yyjson_get_len(key))
			return sl_conf_fail_key(cx, k, "keys are \"server.tool\" (exact names, not "
						"globs): \"%.100s\" is not", from);
		if (!to || !valid_tool_rename(to))
			return sl_conf_fail_key(cx, k, "\"%.100s\": a new name is 1 to %d of "
						"[A-Za-z0-9_-]", from, SL_PROFILE_NAME_MAX);
		/* The gateway's own tools keep their names in every profile. */
		if (sl_config_modules.reserved_tool(to))
			return sl_conf_fail_key(cx, k, "\"%.100s\": \"%s\" is a tool of the gateway's "
						"own", from, to);
		for (size_t i = 0; i < p->nrename; i++) {
			if (!strcmp(p->rename[i].key, from))
				return sl_conf_fail_key(cx, k, "\"%.100s\" is renamed twice", from);
			if (!strcmp(p->rename[i].value, to))
				return sl_conf_fail_key(cx, k, "\"%.100s\" and \"%.100s\" would both be "
							"\"%s\"", p->rename[i].key, from, to);
		}
		p->rename[p->nrename].key = sl_strdup(from);
		p->rename[p->nrename++].value = sl_strdup(to);
	}
	return SL_OK;
}

#define PROF(field) SL_CONF_AT(struct sl_profile, field)
static const struct sl_conf_key profile_keys[] = {
	{ "servers", SL_CONF_CUSTOM, PROF(servers), .parse = parse_globs,
	  .shape = "an array of 1 to 256 non-empty globs", .dflt_doc = "every server",
	  .doc = "Globs on server names (`*` any run, `?` one character): the servers this "
		 "profile shows; the others contribute nothing to its sessions (no tool, resource, "
		 "prompt, completion or notification)." },
	{ "tools", SL_CONF_CUSTOM, PROF(tools), .parse = parse_globs,
	  .shape = "an array of 1 to 256 non-empty globs", .dflt_doc = "every tool of those servers",
	  .doc = "Globs on `server.tool` (the config's server name, the tool's own name): the "
		 "tools of those servers it shows. Another tool is unknown to its sessions, whatever "
		 "name they call it by." },
	{ "rename", SL_CONF_CUSTOM, PROF(rename), .parse = parse_rename,
	  .shape = "an object of \"server.tool\": \"newName\" (at most 256)", .dflt_doc = "`{}`",
	  .doc = "The name a tool of the profile has there: the whole name in passthrough and "
		 "hybrid (`tools/list`, `tools/call`), the tool's name within its server in router "
		 "and code modes (`invoke_tool`, `tools.<server>.<newName>`). 1 to 64 of "
		 "`[A-Za-z0-9_-]`; two tools of a profile never share one (a new name that another "
		 "tool of the profile has in the catalog is not applied, with a warning)." },
	{ "exposure", SL_CONF_CUSTOM, PROF(exposure), .parse = parse_profile_exposure,
	  .shape = "`\"passthrough\"`, `\"router\"`, `\"hybrid\"` or `\"code\"`",
	  .dflt_doc = "`sluice.exposure`",
	  .doc = "Its exposure mode (README.md, \"Exposure modes\"); `--exposure` changes the "
		 "default, not a profile's own." },
	{ "alwaysLoad", SL_CONF_CUSTOM, PROF(always_load), .parse = parse_always_load,
	  .shape = "an array of 0 to 256 non-empty globs", .dflt_doc = "`sluice.alwaysLoad`",
	  .doc = ALWAYS_LOAD_DOC },
};
#undef PROF

static const struct sl_conf_section profile_section = {
	"sluice.profiles.<name>",
	"A profile: a virtual server at `/mcp/<name>` showing a part of the catalog in a mode of "
	"its own (docs/PROFILES.md). Names are 1 to 64 of `[a-z0-9_-]`, at most 64 profiles; "
	"`default` shapes the plain `/mcp` (and stdio). Policy per profile is a policy rule with "
	"`who: [\"profile:NAME\"]` (docs/stages/POLICY.md).",
	profile_keys, SL_COUNT(profile_keys), SL_CONF_STRICT, NULL,
};

/* Whether "server.tool" key can name a tool the profile shows: its tools
 * globs match it, and its servers globs the part before some dot (server
 * names may hold dots themselves). */
static bool profile_covers(const struct sl_profile *p, const char *key)
{
	bool server = !p->servers, tool = !p->tools;
	for (size_t i = 0; p->tools && p->tools[i] && !tool; i++)
		tool = sl_glob_match(p->tools[i], key);
	for (const char *dot = strchr(key, '.'); dot && !server; dot = strchr(dot + 1, '.')) {
		char *name = sl_strndup(key, (size_t)(dot - key));
		for (size_t i = 0; p->servers[i] && !server; i++)
			server = sl_glob_match(p->servers[i], name);
		free(name);
	}
	return server && tool;
}

static int parse_profiles(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			  void *target)
{
	struct sl_config *c = target;
	yyjson_obj_iter it;
	yyjson_val *name;

	if (!yyjson_is_obj(v))
		return sl_conf_bad(cx, k);
	if (yyjson_obj_size(v) > SL_PROFILES_MAX)
		return sl_conf_fail_key(cx, k, "has %zu profiles, more than %d", yyjson_obj_size(v),
					SL_PROFILES_MAX);
	c->profiles = sl_alloc((yyjson_obj_size(v) + 1) * sizeof(*c->profiles));
	yyjson_obj_iter_init(v, &it);
	while ((name = yyjson_obj_iter_next(&it))) {
		const char *n = yyjson_get_str(name) ? yyjson_get_str(name) : "";
		struct sl_profile *p = &c->profiles[c->nprofiles];
		char where[128];
		int rc;

		snprintf(where, sizeof(where), "sluice.profiles.%.64s", n);
		if (!valid_profile_name(n) || strlen(n) != yyjson_get_len(name))
			return sl_conf_fail_key(cx, k, "\"%.100s\" is not a profile name (1 to %d of "
						"[a-z0-9_-])", n, SL_PROFILE_NAME_MAX);
		if (sl_config_profile(c, n))
			return sl_conf_fail(cx, where, "is given twice");
		if (!yyjson_is_obj(yyjson_obj_iter_get_val(name)))
			return sl_conf_fail(cx, where, "must be an object");
		p->name = sl_strdup(n);
		c->nprofiles++;
		rc = sl_conf_apply(cx, &profile_section, where, yyjson_obj_iter_get_val(name), p);
		if (rc != SL_OK)
			return rc;
		for (size_t i = 0; i < p->nrename; i++)
			if (!profile_covers(p, p->rename[i].key))
				return sl_conf_fail(cx, where, "renames \"%.100s\", which its servers or "
						    "tools leave out", p->rename[i].key);
	}
	return SL_OK;
}

#define GW(field) SL_CONF_AT(struct sl_config, field)
static const struct sl_conf_key gateway_keys[] = {
	{ "exposure", SL_CONF_ENUM, GW(exposure), .names = exposures, .dflt = SL_EXPOSE_PASSTHROUGH,
	  .doc = "What `tools/list` shows (README.md, \"Exposure modes\"); `--exposure` overrides it." },
	{ "alwaysLoad", SL_CONF_CUSTOM, GW(always_load), .parse = parse_always_load,
	  .shape = "an array of 0 to 256 non-empty globs",
	  .dflt_doc = "sluice's own tools: `execute_code`, `search_tools`, `describe_tools`, "
		      "`list_servers`, `list_tools`, `invoke_tool`, `read_result`",
	  .doc = ALWAYS_LOAD_DOC },
	{ "logLevel", SL_CONF_ENUM, GW(log_level), .names = log_levels, .dflt = SL_LOG_INFO,
	  .doc = "`--log-level` overrides it. It governs libmicrohttpd's messages too (logged at warn)." },
	{ "logFile", SL_CONF_STRING, GW(log_file), .shape = "a path", .dflt_doc = "stderr",
	  .doc = "Where logs go (stdout carries only MCP messages)." },
	{ "callTimeoutMs", SL_CONF_UINT, GW(call_timeout_ms), .min = 1, .max = 86400000,
	  .dflt = 60000, .doc = "One tool call, unless its server sets `timeout`." },
	{ "startupTimeoutMs", SL_CONF_UINT, GW(startup_timeout_ms), .min = 1, .max = 3600000,
	  .dflt = 30000, .doc = "How long requests that need the catalog wait for every server's "
				"first handshake." },
	{ "restartMaxBackoffMs", SL_CONF_UINT, GW(restart_max_backoff_ms), .min = 1, .max = 3600000,
	  .dflt = 30000, .doc = "The longest wait between restarts of a failed server." },
	{ "maxRequestBytes", SL_CONF_UINT, GW(max_request_bytes), .min = 1024, .max = 1u << 30,
	  .dflt = 4u << 20, .doc = "One client message." },
	{ "maxUpstreamMessageBytes", SL_CONF_UINT, GW(max_upstream_message_bytes), .min = 1024,
	  .max = 1u << 30, .dflt = 32u << 20, .doc = "One upstream message." },
	{ "maxToolsPerServer", SL_CONF_UINT, GW(max_tools), .min = 1, .max = 100000, .dflt = 2000,
	  .doc = "Tools taken from one server's list." },
	{ "codeMode", SL_CONF_OBJECT, .offset = 0, .size = sizeof(struct sl_config),
	  .sub = &code_section, .doc = "See `sluice.codeMode` below." },
	{ "http", SL_CONF_OBJECT, GW(http), .sub = &cfg_http_section, .doc = "See `sluice.http` below." },
	{ "oauth", SL_CONF_OBJECT, GW(oauth), .sub = &cfg_oauth_client_section,
	  .doc = "See `sluice.oauth` below." },
	{ "limits", SL_CONF_OBJECT, GW(limits), .sub = &limits_section,
	  .doc = "See `sluice.limits` below." },
	{ "shared", SL_CONF_OBJECT, .offset = 0, .size = sizeof(struct sl_config),
	  .sub = &shared_section, .doc = "See `sluice.shared` below." },
	{ "profiles", SL_CONF_CUSTOM, GW(profiles), .parse = parse_profiles, .sub = &profile_section,
	  .shape = "an object of profiles", .dflt_doc = "`{}`",
	  .doc = "Virtual servers at `/mcp/<name>` (`sluice.profiles.<name>` below; "
		 "docs/PROFILES.md). Reloaded on SIGHUP: a profile that goes answers 404." },
};

static const struct sl_conf_section gateway_section = {
	"sluice",
	"The gateway's own settings. Each pipeline stage applies its own section (`sluice.policy`, "
	"`sluice.pinning`, `sluice.governor`, ...: docs/stages/) when it starts; they are listed "
	"after `sluice.limits`.",
	gateway_keys, SL_COUNT(gateway_keys), 0, stage_section,
};

static int parse_servers(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			 void *target)
{
	struct sl_config *c = target;
	yyjson_obj_iter it;
	yyjson_val *sk;
	int rc = SL_OK;

	if (c->servers)
		return sl_conf_fail(cx, k->key, "use either \"mcpServers\" or \"servers\", not both");
	if (!yyjson_is_obj(v))
		return sl_conf_fail(cx, k->key, "must be an object of servers");
	c->servers_key = k->key;
	c->servers = sl_alloc((yyjson_obj_size(v) + 1) * sizeof(*c->servers));
	yyjson_obj_iter_init(v, &it);
	while (rc == SL_OK && (sk = yyjson_obj_iter_next(&it))) {
		rc = cfg_parse_server(cx, k->key, yyjson_get_str(sk), yyjson_obj_iter_get_val(sk),
				  &c->servers[c->nservers]);
		c->nservers++;
	}
	return rc;
}

static const struct sl_conf_key root_keys[] = {
	{ "mcpServers", SL_CONF_CUSTOM, GW(servers), .parse = parse_servers,
	  .shape = "an object of servers", .dflt_doc = "required (or `servers`)",
	  .doc = "The servers to aggregate, as Claude Desktop, Cursor and Claude Code write them "
		 "(`mcpServers.<name>` below)." },
	{ "servers", SL_CONF_CUSTOM, GW(servers), .parse = parse_servers,
	  .shape = "an object of servers", .doc = "VS Code's spelling of `mcpServers` (not both)." },
	{ "sluice", SL_CONF_OBJECT, .offset = 0, .size = sizeof(struct sl_config),
	  .sub = &gateway_section, .doc = "The gateway (`sluice` below)." },
};
#undef GW

static const struct sl_conf_section root_section = {
	"top level",
	"The file is JSON; comments and trailing commas are accepted. Unknown keys are warnings "
	"naming the key; a key given twice is an error.",
	root_keys, SL_COUNT(root_keys), 0, NULL,
};

void sl_config_reference(FILE *f)
{
	static const struct sl_conf_section *const sections[] = {
		&root_section, &cfg_server_section, &cfg_server_oauth_section, &gateway_section, &code_section,
		&cfg_oauth_client_section, &cfg_http_section,
		&cfg_auth_section, &cfg_token_section, &cfg_jwks_section, &cfg_introspection_section, &cfg_tls_section,
		&limits_section, &shared_section, &redis_section, &profile_section,
	};
	const struct sl_conf_section *s;
	const char *name;

	fprintf(f, "# Configuration reference\n\n"
		"Generated by `sluice config-reference` from the key tables in src/config/ "
		"and in the stages (src/stages/, in the order of the stage table) (`make docs`); a "
		"unit test fails when this file and the tables differ.\n\n");
	for (size_t i = 0; i < SL_COUNT(sections); i++)
		sl_conf_reference(f, sections[i]);
	for (size_t i = 0; sl_config_modules.stage(i, &name, &s); i++) {
		if (!s)
			continue;
		sl_conf_reference(f, s);
		for (size_t k = 0; k < s->nkeys; k++)
			if (s->keys[k].sub)
				sl_conf_reference(f, s->keys[k].sub);
	}
}

int sl_config_parse(const char *path, const char *text, size_t len,
		    struct sl_config **out, struct sl_err *err)
{
	struct sl_config *c = sl_alloc(sizeof(*c));
	struct parser p = { .cx = { .file = path, .err = err, .warn = on_warn }, .c = c };
	yyjson_read_err rerr;
	yyjson_doc *doc;
	yyjson_val *root;
	int rc = SL_OK;

	c->path = sl_strdup(path);
	sl_conf_defaults(&root_section, c);
	doc = sl_json_read(text, len, YYJSON_READ_ALLOW_COMMENTS | YYJSON_READ_ALLOW_TRAILING_COMMAS,
			   &rerr);
	if (!doc && rerr.code == SL_JSON_READ_ERROR_DEPTH) {
		sl_err_set(err, "%s: %s", path, rerr.msg);
		rc = SL_ERR_INVALID;
		goto out;
	}
	if (!doc) {
		size_t line, col;
		sl_json_position(text, len, rerr.pos, &line, &col);
		sl_err_set(err, "%s:%zu:%zu: invalid JSON: %s", path, line, col, rerr.msg);
		rc = SL_ERR_INVALID;
		goto out;
	}
	root = yyjson_doc_get_root(doc);
	if (!yyjson_is_obj(root)) {
		rc = sl_conf_fail(&p.cx, "top level", "the config must be a JSON object");
		goto out;
	}
	rc = sl_conf_apply(&p.cx, &root_section, NULL, root, c);
	c->sluice = yyjson_obj_get(root, "sluice");
	c->code_enabled = c->code_offered || c->exposure == SL_EXPOSE_CODE;
	/* A gateway whose callers authenticate is shared: saving skills there
	 * is the operator's choice. */
	if (!c->code_save_skills_set)
		c->code_save_skills = !c->http.bearer_token && !c->http.auth.ntokens &&
				      !c->http.auth.resource;
	for (size_t i = 0; i < c->nprofiles; i++)
		c->code_enabled = c->code_enabled || (c->profiles[i].exposure_set &&
						      c->profiles[i].exposure == SL_EXPOSE_CODE);
	if (rc == SL_OK && !c->servers)
		rc = sl_conf_fail(&p.cx, "top level", "no \"mcpServers\" object: nothing to serve");
	if (rc == SL_OK)
		rc = cfg_check_oauth(&p.cx, &c->http.auth);
	if (rc == SL_OK && !c->http.public_url && c->http.auth.resource)
		c->http.public_url = cfg_url_origin(c->http.auth.resource);
	for (size_t i = 0; rc == SL_OK && i < c->nservers; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(c->servers[i].name, c->servers[j].name) == 0)
				rc = sl_conf_fail(&p.cx, c->servers[i].name, "duplicate server name");
	/* A glob that names no server is most likely a typo: said, not fatal
	 * (the server may come with the next reload). */
	for (size_t i = 0; rc == SL_OK && i < c->nprofiles; i++)
		for (size_t g = 0; c->profiles[i].servers && c->profiles[i].servers[g]; g++) {
			bool hit = false;
			for (size_t j = 0; j < c->nservers && !hit; j++)
				hit = sl_glob_match(c->profiles[i].servers[g], c->servers[j].name);
			if (!hit)
				add_warning(c, sl_printf("%s: sluice.profiles.%s.servers: \"%s\" matches no "
							 "configured server", path, c->profiles[i].name,
							 c->profiles[i].servers[g]));
		}
out:
	c->doc = doc;
	if (rc != SL_OK) {
		sl_config_unref(c);
		return rc;
	}
	*out = c;
	return SL_OK;
}

int sl_config_load(const char *path, struct sl_config **out, struct sl_err *err)
{
	FILE *f = fopen(path, "rbe");
	struct stat st;
	char *text;
	size_t n;
	int rc;

	if (!f) {
		sl_err_set(err, "%s: cannot open: %s", path, strerror(errno));
		return SL_ERR_IO;
	}
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
		fclose(f);
		sl_err_set(err, "%s: not a regular file", path);
		return SL_ERR_IO;
	}
	if ((size_t)st.st_size > CONFIG_MAX_BYTES) {
		fclose(f);
		sl_err_set(err, "%s: larger than %u bytes", path, CONFIG_MAX_BYTES);
		return SL_ERR_TOO_LARGE;
	}
	text = sl_alloc((size_t)st.st_size + 1);
	n = fread(text, 1, (size_t)st.st_size, f);
	fclose(f);
	rc = sl_config_parse(path, text, n, out, err);
	free(text);
	return rc;
}

static void server_dispose(struct sl_server_config *s)
{
	free(s->name);
	free(s->command);
	for (size_t i = 0; s->args && i < s->nargs; i++)
		free(s->args[i]);
	free(s->args);
	for (size_t i = 0; s->env && i < s->nenv; i++) {
		free(s->env[i].key);
		free(s->env[i].value);
	}
	free(s->env);
	free(s->cwd);
	free(s->url);
	for (size_t i = 0; i < s->nheaders; i++) {
		free(s->headers[i].key);
		free(s->headers[i].value);
	}
	free(s->headers);
	free(s->oauth.client_id);
	free(s->oauth.client_secret);
	free(s->oauth.client_metadata_url);
	free(s->oauth.scope);
	free(s->oauth.private_key_file);
	if (s->oauth.key_free)
		s->oauth.key_free(s->oauth.key);
	free(s->error);
}

/* The count is the one field that changes in an immutable config. */
const struct sl_config *sl_config_ref(const struct sl_config *c)
{
	((struct sl_config *)c)->refs++;
	return c;
}

void sl_config_unref(const struct sl_config *cc)
{
	struct sl_config *c = (struct sl_config *)cc;
	if (!c || c->refs-- > 0)
		return;
	for (size_t i = 0; i < c->nservers; i++)
		server_dispose(&c->servers[i]);
	free(c->servers);
	for (size_t i = 0; i < c->nwarnings; i++)
		free(c->warnings[i]);
	free(c->warnings);
	free(c->log_file);
	free(c->path);
	free(c->oauth.client_metadata_url);
	free(c->oauth.client_name);
	free(c->oauth.key_file);
	free(c->http.listen);
	free(c->http.bearer_token);
	free(c->http.public_url);
	free(c->http.admin_token);
	for (size_t i = 0; i < c->http.norigins; i++)
		free(c->http.allowed_origins[i]);
	free(c->http.allowed_origins);
	cfg_strings_free(c->http.allowed_hosts);
	cfg_strings_free(c->always_load);
	free(c->http.proxies);
	sl_auth_config_dispose(&c->http.auth);
	for (size_t i = 0; i < c->nprofiles; i++) {
		struct sl_profile *p = &c->profiles[i];
		free(p->name);
		cfg_strings_free(p->servers);
		cfg_strings_free(p->tools);
		cfg_strings_free(p->always_load);
		for (size_t j = 0; j < p->nrename; j++) {
			free(p->rename[j].key);
			free(p->rename[j].value);
		}
		free(p->rename);
	}
	free(c->profiles);
	free(c->http.tls.cert_file);
	free(c->http.tls.key_file);
	free(c->redis.url);
	free(c->redis.password);
	free(c->redis.key_prefix);
	if (c->shared_secret)
		explicit_bzero(c->shared_secret, strlen(c->shared_secret));
	free(c->shared_secret);
	free(c->replica_id);
	yyjson_doc_free(c->doc);
	free(c);
}


const struct sl_profile *sl_config_profile(const struct sl_config *c, const char *name)
{
	for (size_t i = 0; i < c->nprofiles; i++)
		if (!strcmp(c->profiles[i].name, name ? name : "default"))
			return &c->profiles[i];
	return NULL;
}

const char *sl_exposure_name(enum sl_exposure e)
{
	return (size_t)e < SL_COUNT(exposures) - 1 ? exposures[e].name : "?";
}

/* What a child may inherit from the gateway: enough to find programs, run an
 * interpreter, reach a proxy and verify TLS; never secrets the gateway holds. */
static bool inherited(const char *kv)
{
	static const char *names[] = {
		"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
		"http_proxy", "https_proxy", "no_proxy", "all_proxy",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
		"CURL_CA_BUNDLE",
	};
	const char *eq = strchr(kv, '=');
	size_t n = eq ? (size_t)(eq - kv) : strlen(kv);
	if (n > 3 && memcmp(kv, "LC_", 3) == 0)
		return true;
	for (size_t i = 0; i < SL_COUNT(names); i++)
		if (strlen(names[i]) == n && memcmp(kv, names[i], n) == 0)
			return true;
	return false;
}

char **sl_config_child_env(const struct sl_server_config *s, char *const *envp)
{
	size_t n = 0, cap = s->nenv + 1;
	char **env;

	for (char *const *e = envp; e && *e; e++)
		cap++;
	env = sl_alloc(cap * sizeof(char *));
	for (char *const *e = envp; e && *e; e++) {
		bool overridden = false;
		if (!inherited(*e))
			continue;
		for (size_t i = 0; i < s->nenv; i++) {
			size_t kl = strlen(s->env[i].key);
			if (strncmp(*e, s->env[i].key, kl) == 0 && (*e)[kl] == '=')
				overridden = true;
		}
		if (!overridden)
			env[n++] = sl_strdup(*e);
	}
	for (size_t i = 0; i < s->nenv; i++)
		env[n++] = sl_printf("%s=%s", s->env[i].key, s->env[i].value);
	env[n] = NULL;
	return env;
}

void sl_config_env_free(char **env)
{
	for (char **e = env; e && *e; e++)
		free(*e);
	free(env);
}


/*
 * Config file -> immutable struct sl_config.
 *
 * File-level mistakes (invalid JSON, wrong types, bad values) fail the load
 * with file:line:column. Server-level problems that the user may fix in the
 * environment (an unset ${VAR}) fail only that server: it shows up as failed
 * in list_servers while the others serve. Unknown keys are warnings.
 */
#include "config/config.h"
#include "core/json.h"
#include "core/log.h"
#include "pipeline/call.h"
#include "sandbox/kernel.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CONFIG_MAX_BYTES (16u << 20)

struct parser {
	const char *path;
	const char *text;
	size_t len;
	struct sl_config *c;
	struct sl_err *err;
};

static void warn(struct parser *p, const char *fmt, ...) SL_PRINTF(2, 3);
static void warn(struct parser *p, const char *fmt, ...)
{
	struct sl_config *c = p->c;
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = sl_vprintf(fmt, ap);
	va_end(ap);
	c->warnings = sl_realloc(c->warnings, (c->nwarnings + 1) * sizeof(char *));
	c->warnings[c->nwarnings++] = s;
}

/* Positions come from yyjson's reader only for syntax errors; for semantic
 * errors we name the key path instead, which is what a user searches for. */
static int fail(struct parser *p, const char *where, const char *what)
{
	sl_err_set(p->err, "%s: %s: %s", p->path, where, what);
	return SL_ERR_INVALID;
}

/* JSON allows a key twice and yyjson keeps both: refuse that rather than
 * pick one silently (or, worse, size one list and fill another). */
static bool repeated(yyjson_val *obj, yyjson_val *key)
{
	yyjson_obj_iter it;
	yyjson_val *k;
	yyjson_obj_iter_init(obj, &it);
	while ((k = yyjson_obj_iter_next(&it)) && k != key)
		if (yyjson_equals(k, key))
			return true;
	return false;
}

static int fail_repeated(struct parser *p, const char *where, const char *key)
{
	char what[200];
	snprintf(what, sizeof(what), "\"%.100s\" is given twice", key);
	return fail(p, where, what);
}

static const char *env_getenv(const char *name)
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

/* Expands one server string; on failure marks the server failed. */
static char *expand_for(struct sl_server_config *s, const char *what, const char *v)
{
	struct sl_err e;
	char *r = sl_config_expand(v, env_getenv, &e);
	if (!r && !s->error)
		s->error = sl_printf("%s (in %s)", e.msg, what);
	return r;
}

static bool valid_server_name(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len > SL_SERVER_NAME_MAX)
		return false;
	for (const char *p = n; *p; p++)
		if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') ||
		      ('0' <= *p && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
			return false;
	return true;
}

/* A header name is an RFC 9110 token; no value may break a line. */
static bool valid_header(const char *name, const char *value)
{
	if (!*name || strpbrk(value, "\r\n"))
		return false;
	for (const char *c = name; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("!#$%&'*+-.^_`|~", *c))
			return false;
	return true;
}

static int parse_server(struct parser *p, const char *group, const char *name,
			yyjson_val *o, struct sl_server_config *s)
{
	char where[160];
	yyjson_val *k, *v;
	yyjson_obj_iter it;
	bool typed = false;

	if (!name) /* object keys are strings; this keeps the compiler sure of it */
		name = "";
	snprintf(where, sizeof(where), "%s.%s", group, name);
	s->name = sl_strdup(name);
	if (!valid_server_name(name))
		return fail(p, where, "server names are 1-64 characters of A-Z a-z 0-9 _ - .");
	if (!yyjson_is_obj(o))
		return fail(p, where, "a server entry must be an object");

	yyjson_obj_iter_init(o, &it);
	while ((k = yyjson_obj_iter_next(&it))) {
		const char *key = yyjson_get_str(k);
		v = yyjson_obj_iter_get_val(k);
		if (repeated(o, k))
			return fail_repeated(p, where, key);
		if (strcmp(key, "command") == 0) {
			if (!yyjson_is_str(v) || !*yyjson_get_str(v))
				return fail(p, where, "\"command\" must be a non-empty string");
			s->command = expand_for(s, "command", yyjson_get_str(v));
		} else if (strcmp(key, "args") == 0) {
			size_t i, n;
			yyjson_val *a;
			if (!yyjson_is_arr(v))
				return fail(p, where, "\"args\" must be an array of strings");
			n = yyjson_arr_size(v);
			s->args = sl_alloc((n + 1) * sizeof(char *));
			yyjson_arr_foreach(v, i, n, a) {
				char what[32];
				if (!yyjson_is_str(a))
					return fail(p, where, "\"args\" must be an array of strings");
				snprintf(what, sizeof(what), "args[%zu]", i);
				s->args[s->nargs] = expand_for(s, what, yyjson_get_str(a));
				if (s->args[s->nargs])
					s->nargs++;
			}
		} else if (strcmp(key, "env") == 0) {
			yyjson_obj_iter eit;
			yyjson_val *ek;
			if (!yyjson_is_obj(v))
				return fail(p, where, "\"env\" must be an object of strings");
			s->env = sl_alloc((yyjson_obj_size(v) + 1) * sizeof(*s->env));
			yyjson_obj_iter_init(v, &eit);
			while ((ek = yyjson_obj_iter_next(&eit))) {
				yyjson_val *ev = yyjson_obj_iter_get_val(ek);
				char what[300];
				char *val;
				if (!yyjson_is_str(ev))
					return fail(p, where, "\"env\" values must be strings");
				if (strchr(yyjson_get_str(ek), '=') || !*yyjson_get_str(ek))
					return fail(p, where, "\"env\" names must be non-empty and without '='");
				snprintf(what, sizeof(what), "env.%s", yyjson_get_str(ek));
				val = expand_for(s, what, yyjson_get_str(ev));
				if (!val)
					continue;
				s->env[s->nenv].key = sl_strdup(yyjson_get_str(ek));
				s->env[s->nenv++].value = val;
			}
		} else if (strcmp(key, "cwd") == 0) {
			if (!yyjson_is_str(v))
				return fail(p, where, "\"cwd\" must be a string");
			s->cwd = expand_for(s, "cwd", yyjson_get_str(v));
		} else if (strcmp(key, "disabled") == 0) {
			if (!yyjson_is_bool(v))
				return fail(p, where, "\"disabled\" must be true or false");
			s->disabled = yyjson_get_bool(v);
		} else if (strcmp(key, "prefix") == 0) {
			if (!yyjson_is_bool(v))
				return fail(p, where, "\"prefix\" must be true or false");
			s->unprefixed = !yyjson_get_bool(v);
		} else if (strcmp(key, "timeout") == 0) {
			if (!yyjson_is_uint(v) || yyjson_get_uint(v) == 0)
				return fail(p, where, "\"timeout\" must be a positive number of milliseconds");
			s->timeout_ms = yyjson_get_uint(v);
		} else if (strcmp(key, "type") == 0) {
			const char *t = yyjson_get_str(v);
			if (!t)
				return fail(p, where, "\"type\" must be a string");
			typed = true;
			if (strcmp(t, "stdio") == 0)
				s->transport = SL_TRANSPORT_STDIO;
			else if (strcmp(t, "http") == 0 || strcmp(t, "streamable-http") == 0 ||
				 strcmp(t, "streamableHttp") == 0)
				s->transport = SL_TRANSPORT_HTTP;
			else if (strcmp(t, "sse") == 0)
				s->transport = SL_TRANSPORT_SSE;
			else
				return fail(p, where, "\"type\" must be \"stdio\", \"http\" or \"sse\"");
		} else if (strcmp(key, "url") == 0) {
			const char *u = yyjson_get_str(v);
			if (!u || (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0))
				return fail(p, where, "\"url\" must be an http:// or https:// URL");
			s->url = expand_for(s, "url", u);
		} else if (strcmp(key, "headers") == 0) {
			yyjson_obj_iter hit;
			yyjson_val *hk;
			if (!yyjson_is_obj(v))
				return fail(p, where, "\"headers\" must be an object of strings");
			s->headers = sl_alloc((yyjson_obj_size(v) + 1) * sizeof(*s->headers));
			yyjson_obj_iter_init(v, &hit);
			while ((hk = yyjson_obj_iter_next(&hit))) {
				yyjson_val *hv = yyjson_obj_iter_get_val(hk);
				const char *hn = yyjson_get_str(hk);
				char what[300];
				char *val;
				if (!yyjson_is_str(hv) || !valid_header(hn, yyjson_get_str(hv)))
					return fail(p, where, "\"headers\" must map header names to "
						    "single-line string values");
				snprintf(what, sizeof(what), "headers.%s", hn);
				if (!(val = expand_for(s, what, yyjson_get_str(hv))))
					continue;
				if (!valid_header(hn, val)) {
					free(val);
					return fail(p, where, "a header value expands to more than one line");
				}
				s->headers[s->nheaders].key = sl_strdup(hn);
				s->headers[s->nheaders++].value = val;
			}
		} else {
			warn(p, "%s: unknown key \"%s\" ignored", where, key);
		}
	}
	if (s->url && !typed)
		s->transport = SL_TRANSPORT_HTTP;
	if (s->transport == SL_TRANSPORT_STDIO) {
		if (yyjson_obj_get(o, "url"))
			return fail(p, where, "a \"url\" needs \"type\": \"http\" or \"sse\", not \"stdio\"");
		if (!s->command && !s->error)
			return fail(p, where, "missing \"command\" (or \"url\" for a remote server)");
	} else {
		if (s->command)
			return fail(p, where, "a server has either \"command\" or \"url\", not both");
		if (!yyjson_obj_get(o, "url"))
			return fail(p, where, "missing \"url\"");
	}
	if (!s->args)
		s->args = sl_alloc(sizeof(char *));
	if (!s->env)
		s->env = sl_alloc(sizeof(*s->env));
	return SL_OK;
}

static int parse_size(struct parser *p, yyjson_val *v, const char *key, uint64_t min,
		      uint64_t max, uint64_t *out)
{
	char where[96], what[160];
	snprintf(where, sizeof(where), "sluice.%s", key);
	if (!yyjson_is_uint(v) || yyjson_get_uint(v) < min || yyjson_get_uint(v) > max) {
		snprintf(what, sizeof(what), "must be a whole number from %llu to %llu",
			 (unsigned long long)min, (unsigned long long)max);
		return fail(p, where, what);
	}
	*out = yyjson_get_uint(v);
	return SL_OK;
}

static int parse_code(struct parser *p, yyjson_val *o);
static int parse_http(struct parser *p, yyjson_val *o);

static int parse_gateway(struct parser *p, yyjson_val *o)
{
	struct sl_config *c = p->c;
	yyjson_obj_iter it;
	yyjson_val *k, *v;
	uint64_t n;
	int rc = SL_OK;

	if (!yyjson_is_obj(o))
		return fail(p, "sluice", "must be an object");
	yyjson_obj_iter_init(o, &it);
	while (rc == SL_OK && (k = yyjson_obj_iter_next(&it))) {
		const char *key = yyjson_get_str(k);
		v = yyjson_obj_iter_get_val(k);
		if (repeated(o, k)) {
			rc = fail_repeated(p, "sluice", key);
			break;
		}
		if (strcmp(key, "exposure") == 0) {
			const char *e = yyjson_get_str(v);
			if (e && strcmp(e, "passthrough") == 0)
				c->exposure = SL_EXPOSE_PASSTHROUGH;
			else if (e && strcmp(e, "router") == 0)
				c->exposure = SL_EXPOSE_ROUTER;
			else if (e && strcmp(e, "hybrid") == 0)
				c->exposure = SL_EXPOSE_HYBRID;
			else if (e && strcmp(e, "code") == 0)
				c->exposure = SL_EXPOSE_CODE;
			else
				rc = fail(p, "sluice.exposure",
					  "must be \"passthrough\", \"router\", \"hybrid\" or \"code\"");
		} else if (strcmp(key, "logLevel") == 0) {
			int l = yyjson_is_str(v) ? sl_log_level_parse(yyjson_get_str(v)) : -1;
			if (l < 0)
				rc = fail(p, "sluice.logLevel", "must be \"error\", \"warn\", \"info\" or \"debug\"");
			c->log_level = l;
		} else if (strcmp(key, "logFile") == 0) {
			if (!yyjson_is_str(v))
				rc = fail(p, "sluice.logFile", "must be a path");
			else
				c->log_file = sl_strdup(yyjson_get_str(v));
		} else if (strcmp(key, "callTimeoutMs") == 0) {
			rc = parse_size(p, v, key, 1, 86400000, &c->call_timeout_ms);
		} else if (strcmp(key, "startupTimeoutMs") == 0) {
			rc = parse_size(p, v, key, 1, 3600000, &c->startup_timeout_ms);
		} else if (strcmp(key, "restartMaxBackoffMs") == 0) {
			rc = parse_size(p, v, key, 1, 3600000, &c->restart_max_backoff_ms);
		} else if (strcmp(key, "maxRequestBytes") == 0) {
			rc = parse_size(p, v, key, 1024, 1u << 30, &n);
			c->max_request_bytes = n;
		} else if (strcmp(key, "maxUpstreamMessageBytes") == 0) {
			rc = parse_size(p, v, key, 1024, 1u << 30, &n);
			c->max_upstream_message_bytes = n;
		} else if (strcmp(key, "codeMode") == 0) {
			rc = parse_code(p, v);
		} else if (strcmp(key, "http") == 0) {
			rc = parse_http(p, v);
		} else if (sl_stages_section(key)) {
			/* A stage's own section: the stage reads it at start. */
			if (!yyjson_is_obj(v))
				rc = fail(p, key, "a stage's section must be an object");
		} else if (strcmp(key, "maxToolsPerServer") == 0) {
			rc = parse_size(p, v, key, 1, 100000, &n);
			c->max_tools = n;
		} else {
			warn(p, "sluice: unknown key \"%s\" ignored", key);
		}
	}
	return rc;
}

void sl_code_limits_default(struct sl_code_limits *l)
{
	l->timeout_ms = 30000;
	l->cpu_ms = 5000;
	l->heap_bytes = 256u << 20;
	l->stack_bytes = 1u << 20;
	l->max_calls = 32;
	l->max_inflight = 4;
	l->max_output = 64u << 10;
	l->max_console = 4u << 10;
	l->max_source = 64u << 10;
	l->max_args = 256u << 10;
	l->max_result = 4u << 20;
}

static int parse_code(struct parser *p, yyjson_val *o)
{
	static const struct {
		const char *key;
		uint64_t min, max;
		size_t off;
		int size;
	} nums[] = {
#define F(k, lo, hi, field) { k, lo, hi, offsetof(struct sl_code_limits, field), \
			      (int)sizeof(((struct sl_code_limits *)0)->field) }
		F("timeoutMs", 1, 3600000, timeout_ms),
		F("cpuMs", 1, 3600000, cpu_ms),
		F("heapBytes", 1u << 20, 16ull << 30, heap_bytes),
		F("stackBytes", 64u << 10, 64u << 20, stack_bytes),
		F("maxCalls", 1, 100000, max_calls),
		F("maxInFlight", 1, 1000, max_inflight),
		F("maxOutputBytes", 1024, 1u << 30, max_output),
		F("maxConsoleBytes", 0, 1u << 30, max_console),
		F("maxSourceBytes", 64, 1u << 30, max_source),
		F("maxArgsBytes", 64, 1u << 30, max_args),
		F("maxResultBytes", 1024, 1u << 30, max_result),
#undef F
	};
	struct sl_config *c = p->c;
	yyjson_obj_iter it;
	yyjson_val *k, *v;

	if (!yyjson_is_obj(o))
		return fail(p, "sluice.codeMode", "must be an object");
	yyjson_obj_iter_init(o, &it);
	while ((k = yyjson_obj_iter_next(&it))) {
		const char *key = yyjson_get_str(k);
		char where[96];
		bool done = false;
		v = yyjson_obj_iter_get_val(k);
		snprintf(where, sizeof(where), "sluice.codeMode.%s", key);
		if (repeated(o, k))
			return fail_repeated(p, "sluice.codeMode", key);
		for (size_t i = 0; i < SL_COUNT(nums) && !done; i++) {
			uint64_t n;
			char what[128];
			if (strcmp(key, nums[i].key) != 0)
				continue;
			done = true;
			if (!yyjson_is_uint(v) || (n = yyjson_get_uint(v)) < nums[i].min || n > nums[i].max) {
				snprintf(what, sizeof(what), "must be a whole number from %llu to %llu",
					 (unsigned long long)nums[i].min, (unsigned long long)nums[i].max);
				return fail(p, where, what);
			}
			if (nums[i].size == 4)
				*(uint32_t *)((char *)&c->code + nums[i].off) = (uint32_t)n;
			else
				*(uint64_t *)((char *)&c->code + nums[i].off) = n;
		}
		if (done)
			continue;
		if (strcmp(key, "enabled") == 0) {
			if (!yyjson_is_bool(v))
				return fail(p, where, "must be true or false");
			c->code_enabled = yyjson_get_bool(v);
		} else if (strcmp(key, "poolSize") == 0) {
			if (!yyjson_is_uint(v) || yyjson_get_uint(v) < 1 || yyjson_get_uint(v) > 8)
				return fail(p, where, "must be a whole number from 1 to 8");
			c->code_pool = (int)yyjson_get_uint(v);
		} else if (strcmp(key, "require") == 0) {
			yyjson_val *b;
			size_t i, n;
			if (!yyjson_is_arr(v))
				return fail(p, where, "must be an array of boundary names");
			yyjson_arr_foreach(v, i, n, b) {
				unsigned bit = yyjson_is_str(b) ? sl_boundary_parse(yyjson_get_str(b)) : 0;
				if (!bit)
					return fail(p, where, "names are userns, pidns, netns, ipcns, mountns, "
						    "rlimits, no_new_privs, landlock, seccomp");
				c->code_require |= bit;
			}
		} else {
			warn(p, "sluice.codeMode: unknown key \"%s\" ignored", key);
		}
	}
	return SL_OK;
}

static int parse_http(struct parser *p, yyjson_val *o)
{
	struct sl_http_config *h = &p->c->http;
	yyjson_obj_iter it;
	yyjson_val *k, *v;
	uint64_t n;
	int rc = SL_OK;

	if (!yyjson_is_obj(o))
		return fail(p, "sluice.http", "must be an object");
	yyjson_obj_iter_init(o, &it);
	while (rc == SL_OK && (k = yyjson_obj_iter_next(&it))) {
		const char *key = yyjson_get_str(k);
		v = yyjson_obj_iter_get_val(k);
		if (repeated(o, k))
			return fail_repeated(p, "sluice.http", key);
		if (strcmp(key, "listen") == 0) {
			if (!yyjson_is_str(v) || !strchr(yyjson_get_str(v), ':'))
				return fail(p, "sluice.http.listen", "must be \"host:port\"");
			free(h->listen);
			h->listen = sl_strdup(yyjson_get_str(v));
		} else if (strcmp(key, "bearerToken") == 0) {
			struct sl_err e;
			if (!yyjson_is_str(v) || !yyjson_get_len(v))
				return fail(p, "sluice.http.bearerToken", "must be a non-empty string");
			free(h->bearer_token);
			h->bearer_token = sl_config_expand(yyjson_get_str(v), env_getenv, &e);
			if (!h->bearer_token)
				return fail(p, "sluice.http.bearerToken", e.msg);
		} else if (strcmp(key, "allowedOrigins") == 0) {
			yyjson_val *s;
			size_t i, max;
			if (!yyjson_is_arr(v))
				return fail(p, "sluice.http.allowedOrigins", "must be an array of origins");
			h->allowed_origins = sl_alloc((yyjson_arr_size(v) + 1) * sizeof(char *));
			yyjson_arr_foreach(v, i, max, s) {
				if (!yyjson_is_str(s))
					return fail(p, "sluice.http.allowedOrigins", "must be an array of origins");
				h->allowed_origins[h->norigins++] = sl_strdup(yyjson_get_str(s));
			}
		} else if (strcmp(key, "maxBodyBytes") == 0) {
			rc = parse_size(p, v, "http.maxBodyBytes", 1024, 1u << 30, &n);
			h->max_body_bytes = n;
		} else if (strcmp(key, "maxSessions") == 0) {
			rc = parse_size(p, v, "http.maxSessions", 1, 100000, &n);
			h->max_sessions = (uint32_t)n;
		} else if (strcmp(key, "maxRequestsPerSession") == 0) {
			rc = parse_size(p, v, "http.maxRequestsPerSession", 1, 100000, &n);
			h->max_requests = (uint32_t)n;
		} else if (strcmp(key, "idleSessionTimeoutMs") == 0) {
			rc = parse_size(p, v, "http.idleSessionTimeoutMs", 100, 7ull * 86400000, &h->idle_timeout_ms);
		} else if (strcmp(key, "heartbeatMs") == 0) {
			rc = parse_size(p, v, "http.heartbeatMs", 100, 3600000, &h->heartbeat_ms);
		} else {
			warn(p, "sluice.http: unknown key \"%s\" ignored", key);
		}
	}
	return rc;
}

int sl_config_parse(const char *path, const char *text, size_t len,
		    struct sl_config **out, struct sl_err *err)
{
	struct parser p = { .path = path, .text = text, .len = len, .err = err };
	struct sl_config *c = sl_alloc(sizeof(*c));
	yyjson_read_err rerr;
	yyjson_doc *doc;
	yyjson_val *root, *k, *v;
	yyjson_obj_iter it;
	int rc = SL_OK;
	bool have_servers = false;

	p.c = c;
	c->path = sl_strdup(path);
	c->exposure = SL_EXPOSE_PASSTHROUGH;
	c->log_level = SL_LOG_INFO;
	c->call_timeout_ms = 60000;
	c->startup_timeout_ms = 30000;
	c->restart_max_backoff_ms = 30000;
	c->max_request_bytes = 4u << 20;
	c->max_upstream_message_bytes = 32u << 20;
	c->max_tools = 2000;
	c->http.max_body_bytes = 4u << 20;
	c->http.max_sessions = 64;
	c->http.max_requests = 32;
	c->http.idle_timeout_ms = 30ull * 60 * 1000;
	c->http.heartbeat_ms = 15000;
	sl_code_limits_default(&c->code);
	c->code_pool = 2;

	doc = yyjson_read_opts((char *)text, len,
			       YYJSON_READ_ALLOW_COMMENTS | YYJSON_READ_ALLOW_TRAILING_COMMAS,
			       NULL, &rerr);
	if (!doc) {
		size_t line, col;
		sl_json_position(text, len, rerr.pos, &line, &col);
		sl_err_set(err, "%s:%zu:%zu: invalid JSON: %s", path, line, col, rerr.msg);
		rc = SL_ERR_INVALID;
		goto out;
	}
	root = yyjson_doc_get_root(doc);
	if (!yyjson_is_obj(root)) {
		rc = fail(&p, "top level", "the config must be a JSON object");
		goto out;
	}
	yyjson_obj_iter_init(root, &it);
	while (rc == SL_OK && (k = yyjson_obj_iter_next(&it))) {
		const char *key = yyjson_get_str(k);
		v = yyjson_obj_iter_get_val(k);
		if (repeated(root, k)) {
			rc = fail_repeated(&p, "top level", key);
			break;
		}
		if (strcmp(key, "mcpServers") == 0 || strcmp(key, "servers") == 0) {
			yyjson_obj_iter sit;
			yyjson_val *sk;
			if (have_servers) {
				rc = fail(&p, key, "use either \"mcpServers\" or \"servers\", not both");
				break;
			}
			have_servers = true;
			if (!yyjson_is_obj(v)) {
				rc = fail(&p, key, "must be an object of servers");
				break;
			}
			c->servers = sl_alloc((yyjson_obj_size(v) + 1) * sizeof(*c->servers));
			yyjson_obj_iter_init(v, &sit);
			while (rc == SL_OK && (sk = yyjson_obj_iter_next(&sit))) {
				rc = parse_server(&p, key, yyjson_get_str(sk), yyjson_obj_iter_get_val(sk),
						  &c->servers[c->nservers]);
				c->nservers++;
			}
		} else if (strcmp(key, "sluice") == 0) {
			c->sluice = v;
			rc = parse_gateway(&p, v);
		} else {
			warn(&p, "unknown top-level key \"%s\" ignored", key);
		}
	}
	if (c->exposure == SL_EXPOSE_CODE)
		c->code_enabled = true;
	if (rc == SL_OK && !have_servers)
		rc = fail(&p, "top level", "no \"mcpServers\" object: nothing to serve");
	for (size_t i = 0; rc == SL_OK && i < c->nservers; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(c->servers[i].name, c->servers[j].name) == 0)
				rc = fail(&p, c->servers[i].name, "duplicate server name");
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
	free(c->http.listen);
	free(c->http.bearer_token);
	for (size_t i = 0; i < c->http.norigins; i++)
		free(c->http.allowed_origins[i]);
	free(c->http.allowed_origins);
	yyjson_doc_free(c->doc);
	free(c);
}

const char *sl_exposure_name(enum sl_exposure e)
{
	switch (e) {
	case SL_EXPOSE_PASSTHROUGH: return "passthrough";
	case SL_EXPOSE_ROUTER: return "router";
	case SL_EXPOSE_HYBRID: return "hybrid";
	case SL_EXPOSE_CODE: return "code";
	}
	return "?";
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

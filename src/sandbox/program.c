/*
 * One program: a worker taken from the pool, the RUN frame, its tool calls
 * resolved and run by its host (the gateway's runs them through the
 * pipeline: gateway/codemode.c), and the DONE frame or the way the worker
 * died. The gateway enforces the wall clock itself: at the deadline the
 * worker is killed through its pidfd, since an engine interrupt cannot stop
 * a long native built-in.
 *
 * Everything the worker sends is hostile input: a frame over its cap, of
 * the wrong kind, not JSON, or breaking the call limits kills the worker.
 */
#include "sandbox/internal.h"
#include "sandbox/frame.h"
#include "sandbox/kernel.h"
#include "core/buf.h"
#include "core/log.h"
#include "event/write.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

#define KILL_GRACE_MS 250   /* the worker's own deadline fires first */
#define EXIT_WAIT_MS 1000   /* for the zygote's report of how a worker died */

enum pstate {
	P_QUEUED,       /* waiting for a slot (sb->queued) */
	P_BUSY,         /* refused: the queue was full; ends from the loop */
	P_WAIT_WORKER,  /* holds a slot, waits for a worker (sb->waiting) */
	P_WAIT_READY,
	P_RUNNING,
	P_WAIT_EXIT,
	P_DONE,
};

/* One tool call of the program, by its id. */
struct pcall {
	struct sl_sandbox_call *h;  /* the host's, while in flight */
	char *server, *tool;        /* raw names (the program's when refused): progress, messages */
};

struct sl_program {
	struct sl_list link;      /* in sb->queued, sb->waiting or sb->running */
	struct sl_sandbox *sb;
	struct sl_sandbox_host host;
	uint64_t id;
	char *code;
	size_t code_len;
	const char *lang;         /* "js", "ts" or NULL: static strings */
	size_t pre, post;         /* sl_program_set_wrap's */
	enum pstate state;
	bool slot;                /* holds one of sb->max_running */
	struct sl_owner *owner;   /* its caller's programs (in sb->owners), or NULL */
	const char *owner_key;    /* sb->owners' copy of its key, while owner is set */
	struct sl_wslot w;
	bool have_worker;
	uv_pipe_t sock;
	bool sock_open;
	uv_timer_t timer;
	struct sl_buf in;
	struct pcall *calls;
	uint32_t ncalls, inflight;
	const char *killed_for;
	bool have_status;
	int status;
	int handles;
	bool free_wanted;
	struct sl_program_result res;
	sl_program_done_fn done;
	sl_program_step_fn step;
	void *ctx;
	uint64_t started_us;
	uint64_t deadline_ms;     /* moves later while a call waits for a person */
	unsigned humans;          /* calls waiting for a person now */
	uint64_t paused_at_ms;
	uint64_t paused_ms;       /* not yet told to the worker */
	bool fixed;               /* seed and clock given (sl_program_fix) */
	uint32_t seed[4];
	uint64_t clock_ms;
};

struct sl_program *sl_program_of(struct sl_list *n)
{
	return n ? sl_list_entry(n, struct sl_program, link) : NULL;
}

pid_t sl_program_pid(const struct sl_program *p)
{
	return p->have_worker ? p->w.pid : -1;
}

uint64_t sl_program_id(const struct sl_program *p)
{
	return p->id;
}

const struct sl_program_result *sl_program_result(const struct sl_program *p)
{
	return &p->res;
}

/* ---- ending ----------------------------------------------------------------- */

static void kill_worker(struct sl_program *p)
{
	if (!p->have_worker)
		return;
	if (p->w.pidfd >= 0)
		syscall(SYS_pidfd_send_signal, p->w.pidfd, SIGKILL, NULL, 0);
}

static void on_handle_closed(uv_handle_t *h)
{
	struct sl_program *p = h->data;
	if (--p->handles == 0 && p->free_wanted) {
		sl_buf_dispose(&p->in);
		free(p->res.text);
		free(p->res.console);
		for (uint32_t i = 0; i < p->ncalls; i++) {
			free(p->calls[i].server);
			free(p->calls[i].tool);
		}
		free(p->calls);
		free(p->code);
		free(p);
	}
}

static void admit(struct sl_program *p);

/* ---- admission: the global slots and queue, and each caller's share ---------------- */

/* p counts against owner (a host's owner) from now on. */
static void own(struct sl_sandbox *sb, struct sl_program *p, const char *owner)
{
	struct sl_owner *o;
	if (!owner)
		return;
	if (!(o = sl_map_get(&sb->owners, owner))) {
		o = sl_alloc(sizeof(*o));
		sl_map_put(&sb->owners, owner, o);
	}
	p->owner = o;
	p->owner_key = sl_map_key(&sb->owners, owner);
}

/* p no longer counts: its owner goes with its last program. */
static void disown(struct sl_sandbox *sb, struct sl_program *p)
{
	struct sl_owner *o = p->owner;
	if (!o || o->running || o->queued)
		return;
	sl_map_del(&sb->owners, p->owner_key);
	free(o);
}

static bool may_run(const struct sl_sandbox *sb, const struct sl_program *p)
{
	return !p->owner || p->owner->running < sb->caller_running;
}

/* The queue of programs waiting for a slot: appended at its tail, taken
 * by admit_next (a cancelled one from where it is). */
static void enqueue(struct sl_sandbox *sb, struct sl_program *p)
{
	sl_list_push_back(&sb->queued, &p->link);
	sb->nqueued++;
	if (p->owner)
		p->owner->queued++;
	p->state = P_QUEUED;
}

static void dequeue(struct sl_sandbox *sb, struct sl_program *p)
{
	sl_list_remove(&p->link);
	sb->nqueued--;
	if (p->owner)
		p->owner->queued--;
}

/* Of two queued programs, a goes before b: its caller holds fewer slots,
 * or as many and was served longer ago. A program without a caller counts
 * as one holding none, served never; programs of one caller go in the
 * order they came. */
static bool goes_before(const struct sl_program *a, const struct sl_program *b)
{
	unsigned ra = a->owner ? a->owner->running : 0, rb = b->owner ? b->owner->running : 0;
	uint64_t sa = a->owner ? a->owner->served : 0, sb = b->owner ? b->owner->served : 0;
	return ra < rb || (ra == rb && sa < sb);
}

/* Slots came free: they go to queued programs whose caller is under its
 * share, the caller holding the fewest first (goes_before). A scan of the
 * queue per slot given: at most maxQueued programs. */
static void admit_next(struct sl_sandbox *sb)
{
	while (sb->nslots < sb->max_running) {
		struct sl_program *best = NULL;
		struct sl_list *n;
		sl_list_each(n, &sb->queued) {
			struct sl_program *p = sl_program_of(n);
			if (may_run(sb, p) && (!best || goes_before(p, best)))
				best = p;
		}
		if (!best)
			return;
		dequeue(sb, best);
		admit(best);
	}
}

/* Ends the program with res filled in; runs done exactly once. */
static void finish(struct sl_program *p)
{
	struct sl_sandbox *sb = p->sb;

	if (p->state == P_DONE)
		return;
	if (p->state == P_QUEUED)
		dequeue(sb, p); /* cancelled while it waited */
	p->state = P_DONE;
	uv_timer_stop(&p->timer);
	kill_worker(p);
	if (p->sock_open) {
		p->sock_open = false;
		uv_close((uv_handle_t *)&p->sock, on_handle_closed);
	}
	if (p->have_worker && p->w.pidfd >= 0) {
		close(p->w.pidfd);
		p->w.pidfd = -1;
	}
	sl_list_remove(&p->link); /* from sb->running or sb->waiting */
	/* Calls still in flight are the host's to stop; it reports nothing
	 * more of them. */
	for (uint32_t i = 0; i < p->ncalls; i++) {
		struct sl_sandbox_call *h = p->calls[i].h;
		if (h) {
			p->calls[i].h = NULL;
			p->host.cancel(p->host.ctx, h);
		}
	}
	if (!p->res.console)
		p->res.console = sl_strdup("");
	if (!p->res.text)
		p->res.text = sl_strdup("");
	p->res.calls = p->ncalls;
	p->res.duration_ms = (double)(sl_now_us() - p->started_us) / 1000.0;
	if (p->slot) {
		/* Its worker is killed, and the zygote reaps it: the next program
		 * may start. */
		p->slot = false;
		sb->nslots--;
		if (p->owner)
			p->owner->running--;
		admit_next(sb);
	}
	disown(sb, p);
	p->done(p->ctx, p);
}

static void fail(struct sl_program *p, const char *kind, const char *fmt, ...) SL_PRINTF(3, 4);
static void fail(struct sl_program *p, const char *kind, const char *fmt, ...)
{
	va_list ap;
	if (p->state == P_DONE)
		return;
	va_start(ap, fmt);
	free(p->res.text);
	p->res.text = sl_vprintf(fmt, ap);
	p->res.text_len = strlen(p->res.text);
	va_end(ap);
	p->res.ok = false;
	p->res.kind = kind;
	finish(p);
}

/* A worker broke the protocol: it is treated as compromised. */
static void malformed(struct sl_program *p, const char *what)
{
	sl_log(SL_LOG_WARN, "program %llu: the worker %s; killed", (unsigned long long)p->id, what);
	fail(p, "crash", "the sandbox worker %s and was killed", what);
}

static void classify_exit(struct sl_program *p)
{
	int st = p->status;
	if (WIFSIGNALED(st)) {
		switch (WTERMSIG(st)) {
		case SIGXCPU:
			fail(p, "cpu", "the program used more than its CPU time limit (stopped by the kernel)");
			return;
		case SIGSYS:
			fail(p, "crash", "the program's worker made a forbidden system call and was killed");
			return;
		default:
			fail(p, "crash", "the program's worker was killed by signal %d (%s)", WTERMSIG(st),
			     strsignal(WTERMSIG(st)));
			return;
		}
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 5)
		fail(p, "memory", "the program's worker ran out of memory");
	else
		fail(p, "crash", "the program's worker ended without an answer (status %d)",
		     WIFEXITED(st) ? WEXITSTATUS(st) : st);
}

void sl_program_exited(struct sl_program *p, int status)
{
	p->have_status = true;
	p->status = status;
	if (p->state == P_WAIT_EXIT)
		classify_exit(p);
}

static void on_timer(uv_timer_t *t)
{
	struct sl_program *p = t->data;
	if (p->state == P_BUSY) {
		finish(p);
		return;
	}
	if (p->state == P_WAIT_EXIT) {
		fail(p, "crash", "the program's worker ended without an answer");
		return;
	}
	if (!p->sb->ctl_open && p->state == P_WAIT_WORKER) {
		fail(p, "crash", "code mode is unavailable: %s", p->sb->error);
		return;
	}
	if (p->humans > 0) {
		/* Paused: look again once the person has answered. */
		uv_timer_start(&p->timer, on_timer, 1000, 0);
		return;
	}
	p->killed_for = "timeout";
	fail(p, "timeout", "the program ran past its time limit of %llu ms",
	     (unsigned long long)p->sb->lim.timeout_ms);
}

void sl_program_cancel(struct sl_program *p)
{
	if (p->state == P_DONE)
		return;
	p->killed_for = "cancel";
	p->res.cancelled = true;
	fail(p, "cancelled", "the program was cancelled");
}

/* ---- frames to the worker ---------------------------------------------------- */

static void send_frame(struct sl_program *p, uint32_t kind, const char *json, size_t len)
{
	char *f = sl_alloc(SL_FRAME_HEADER + len);
	sl_frame_header((unsigned char *)f, kind, (uint32_t)len);
	memcpy(f + SL_FRAME_HEADER, json, len);
	if (sl_write_line((uv_stream_t *)&p->sock, f, SL_FRAME_HEADER + len) < 0)
		malformed(p, "closed its socket");
}

/* Keeps the names of keys that fit in room bytes of JSON (each at its
 * longest: every byte escaped), drops the rest; what is left of room. */
static size_t keys_within(yyjson_mut_val *keys, size_t room)
{
	size_t i = 0, n = yyjson_mut_arr_size(keys);
	for (; i < n; i++) {
		size_t cost = yyjson_mut_get_len(yyjson_mut_arr_get(keys, i)) * 6 + 3;
		if (cost > room)
			break;
		room -= cost;
	}
	if (i < n)
		yyjson_mut_arr_remove_range(keys, i, n - i);
	return i < n ? 0 : room;
}

static void send_run(struct sl_program *p)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o = yyjson_mut_obj(d), *servers = yyjson_mut_arr(d);
	const char *raw;
	size_t len;
	char *json;

	yyjson_mut_doc_set_root(d, o);
	yyjson_mut_obj_add_int(d, o, "v", SL_FRAME_VERSION);
	yyjson_mut_obj_add_strncpy(d, o, "code", p->code, p->code_len);
	if (p->lang)
		yyjson_mut_obj_add_str(d, o, "lang", p->lang);
	if (p->pre || p->post) {
		yyjson_mut_obj_add_uint(d, o, "pre", p->pre);
		yyjson_mut_obj_add_uint(d, o, "post", p->post);
	}
	for (size_t i = 0, room = SL_FRAME_KEYS_MAX; (raw = p->host.server(p->host.ctx, i)); i++) {
		char *ident = sl_alloc(strlen(raw) + 2);
		yyjson_mut_val *pair = yyjson_mut_arr(d), *keys = yyjson_mut_arr(d);
		sl_code_ident(raw, ident);
		yyjson_mut_arr_add_strcpy(d, pair, raw);
		yyjson_mut_arr_add_strcpy(d, pair, ident);
		if (p->host.tools)
			p->host.tools(p->host.ctx, raw, d, keys);
		room = keys_within(keys, room);
		yyjson_mut_arr_append(pair, keys);
		yyjson_mut_arr_append(servers, pair);
		free(ident);
	}
	yyjson_mut_obj_add_val(d, o, "servers", servers);
	{
		/* Math.random's seed: every worker starts as the same copy. */
		uint32_t seed[4];
		yyjson_mut_val *a = yyjson_mut_arr(d);
		if (p->fixed)
			memcpy(seed, p->seed, sizeof(seed));
		else if (getrandom(seed, sizeof(seed), 0) != sizeof(seed))
			for (int i = 0; i < 4; i++)
				seed[i] = (uint32_t)sl_hash64(&p->id, sizeof(p->id), sl_now_us() + (uint64_t)i);
		for (int i = 0; i < 4; i++)
			yyjson_mut_arr_add_uint(d, a, seed[i]);
		yyjson_mut_obj_add_val(d, o, "seed", a);
		if (p->fixed)
			yyjson_mut_obj_add_uint(d, o, "clock", p->clock_ms);
	}
	json = sl_json_write_mut_val(o, &len);
	send_frame(p, SL_FRAME_RUN, json, len);
	free(json);
	yyjson_mut_doc_free(d);
}

/* ---- tool calls ------------------------------------------------------------------ */

/* What a program sees of a tool result: structuredContent, else a lone text
 * block (parsed when it is a JSON object or array), else a lone other block
 * as is, else the blocks (text blocks as strings). */
yyjson_mut_val *sl_program_value(yyjson_mut_doc *d, yyjson_val *r)
{
	yyjson_val *sc = yyjson_obj_get(r, "structuredContent");
	yyjson_val *content = sl_json_arr(r, "content"), *b;
	yyjson_mut_val *arr;
	size_t i, n;

	if (sc)
		return yyjson_val_mut_copy(d, sc);
	n = yyjson_arr_size(content);
	if (n == 0)
		return yyjson_mut_null(d);
	if (n == 1) {
		b = yyjson_arr_get_first(content);
		const char *type = sl_json_str(b, "type");
		yyjson_val *tv = yyjson_obj_get(b, "text");
		if (type && strcmp(type, "text") == 0 && yyjson_is_str(tv)) {
			/* Lengths, not C strings: a program never sees text cut at a NUL. */
			const char *text = yyjson_get_str(tv);
			size_t len = yyjson_get_len(tv), sp = 0;
			while (sp < len && text[sp] && strchr(" \t\r\n", text[sp]))
				sp++;
			if (sp < len && (text[sp] == '{' || text[sp] == '[')) {
				yyjson_doc *j = sl_json_read(text, len, SL_JSON_READ_FLAGS, NULL);
				if (j) {
					yyjson_mut_val *v = yyjson_val_mut_copy(d, yyjson_doc_get_root(j));
					yyjson_doc_free(j);
					return v;
				}
			}
			return yyjson_val_mut_copy(d, tv);
		}
		/* A lone image, audio or resource block: the block itself, e.g.
		 * {type, mimeType, data}. */
		return yyjson_val_mut_copy(d, b);
	}
	arr = yyjson_mut_arr(d);
	yyjson_arr_foreach(content, i, n, b) {
		const char *type = sl_json_str(b, "type");
		yyjson_val *tv = yyjson_obj_get(b, "text");
		if (type && strcmp(type, "text") == 0 && yyjson_is_str(tv))
			yyjson_mut_arr_append(arr, yyjson_val_mut_copy(d, tv));
		else
			yyjson_mut_arr_append(arr, yyjson_val_mut_copy(d, b));
	}
	return arr;
}

/* Sends the RESULT of call id: value (built in d) or error (error_len
 * bytes). d is consumed (NULL: none yet). */
static void reply(struct sl_program *p, uint32_t id, yyjson_mut_doc *d, yyjson_mut_val *value,
		  const char *error, size_t error_len)
{
	yyjson_mut_val *o;
	char *json;
	size_t len;

	if (!d)
		d = yyjson_mut_doc_new(NULL);
	o = yyjson_mut_obj(d);
	yyjson_mut_doc_set_root(d, o);
	yyjson_mut_obj_add_uint(d, o, "id", id);
	if (value)
		yyjson_mut_obj_add_val(d, o, "value", value);
	yyjson_mut_obj_add_bool(d, o, "ok", error == NULL);
	if (error)
		yyjson_mut_obj_add_strncpy(d, o, "error", error, error_len);
	if (p->paused_ms) {
		yyjson_mut_obj_add_uint(d, o, "pausedMs", p->paused_ms);
		p->paused_ms = 0;
	}
	json = sl_json_write_mut_val(o, &len);
	if (len > p->sb->lim.max_result + 64) {
		/* Never hand a program silently cut data: say it is too large. */
		free(json);
		json = sl_printf("{\"id\":%u,\"ok\":false,\"error\":\"too_large: the result of %s.%s is "
				 "%zu bytes, over the limit of %zu for programs\"}",
				 id, p->calls[id].server, p->calls[id].tool, len, p->sb->lim.max_result);
		len = strlen(json);
	}
	p->inflight--;
	send_frame(p, SL_FRAME_RESULT, json, len);
	free(json);
	yyjson_mut_doc_free(d);
}

/* Confirmations: the program's wall clock stops while one of its calls
 * waits for a person; the worker hears of the pause with the next RESULT
 * (pausedMs) and moves its own deadline too. */
void sl_program_call_human(struct sl_program *p, bool waiting)
{
	uint64_t now = sl_now_ms();

	if (p->state == P_DONE)
		return;
	if (waiting) {
		if (p->humans++ == 0)
			p->paused_at_ms = now;
		return;
	}
	if (p->humans == 0 || --p->humans > 0)
		return;
	p->paused_ms += now - p->paused_at_ms;
	p->deadline_ms += now - p->paused_at_ms;
	uv_timer_start(&p->timer, on_timer, p->deadline_ms > now ? p->deadline_ms - now : 0, 0);
}

void sl_program_call_done(struct sl_program *p, uint32_t id, yyjson_mut_doc *d,
			  yyjson_mut_val *value, const char *error, size_t error_len)
{
	if (p->state == P_DONE || id >= p->ncalls) {
		/* The host broke its contract (a report after cancel): nobody
		 * waits for this answer. */
		yyjson_mut_doc_free(d);
		return;
	}
	p->calls[id].h = NULL;
	reply(p, id, d, value, error, error_len);
	if (p->step && p->state != P_DONE)
		p->step(p->ctx, p, p->calls[id].server, p->calls[id].tool);
}

static void handle_call(struct sl_program *p, const char *json, size_t len)
{
	yyjson_doc *doc = yyjson_read(json, len, SL_JSON_READ_FLAGS);
	yyjson_val *root = yyjson_doc_get_root(doc), *args;
	const char *server, *tool;
	struct sl_sandbox_tool t;
	struct sl_err err;
	struct pcall *pc;
	yyjson_mut_doc *ad;
	int64_t id;

	server = sl_json_str(root, "server");
	tool = sl_json_str(root, "tool");
	args = sl_json_obj(root, "args");
	if (!doc || !sl_json_int(root, "id", &id) || id != p->ncalls || !server || !tool || !args) {
		yyjson_doc_free(doc);
		malformed(p, "sent a malformed call");
		return;
	}
	if (p->ncalls >= p->sb->lim.max_calls || p->inflight >= p->sb->lim.max_inflight) {
		yyjson_doc_free(doc);
		malformed(p, "broke the call limits");
		return;
	}
	p->ncalls++;
	p->inflight++;
	pc = &p->calls[id];
	/* The depth gate (core/json.h), read only the envelope above: deep
	 * arguments are the program's mistake, answered as a failed call. */
	if (!sl_json_depth_ok(root)) {
		pc->server = sl_strdup(server);
		pc->tool = sl_strdup(tool);
		static const char deep[] = "the arguments are " SL_JSON_DEPTH_WHY;
		reply(p, (uint32_t)id, NULL, NULL, deep, sizeof(deep) - 1);
	} else if (p->host.resolve(p->host.ctx, server, tool, &t, &err) < 0) {
		pc->server = sl_strdup(server);
		pc->tool = sl_strdup(tool);
		reply(p, (uint32_t)id, NULL, NULL, err.msg, strlen(err.msg));
	} else {
		pc->server = sl_strdup(t.server_name);
		pc->tool = sl_strdup(t.tool);
		ad = yyjson_mut_doc_new(NULL);
		yyjson_mut_doc_set_root(ad, yyjson_val_mut_copy(ad, args));
		/* The host may answer before it returns: pc->h is set first. */
		p->host.call(p->host.ctx, p, (uint32_t)id, &t, ad, &pc->h);
	}
	yyjson_doc_free(doc);
}

static void handle_done(struct sl_program *p, const char *json, size_t len)
{
	static const char *kinds[] = { "error", "syntax", "timeout", "cpu", "memory", "output",
				       "calls", "crash" };
	yyjson_doc *doc = sl_json_read(json, len, 0, NULL);
	yyjson_val *root = yyjson_doc_get_root(doc);
	yyjson_val *console = yyjson_obj_get(root, "console");
	yyjson_val *text = yyjson_obj_get(root, sl_json_true(root, "ok") ? "value" : "error");
	const char *kind = sl_json_str(root, "kind");

	if (!doc || !yyjson_is_str(console) || !yyjson_is_str(text)) {
		yyjson_doc_free(doc);
		malformed(p, "sent a malformed answer");
		return;
	}
	p->res.ok = sl_json_true(root, "ok");
	p->res.kind = NULL;
	if (!p->res.ok) {
		p->res.kind = "error";
		for (size_t i = 0; kind && i < SL_COUNT(kinds); i++)
			if (strcmp(kind, kinds[i]) == 0)
				p->res.kind = kinds[i];
	}
	/* Lengths: the value and the console may hold NUL. */
	p->res.text_len = yyjson_get_len(text);
	p->res.text = sl_strndup(yyjson_get_str(text), p->res.text_len);
	p->res.console_len = yyjson_get_len(console);
	p->res.console = sl_strndup(yyjson_get_str(console), p->res.console_len);
	p->res.console_cut = sl_json_true(root, "consoleCut");
	yyjson_doc_free(doc);
	finish(p);
}

static void handle_ready(struct sl_program *p, const char *json, size_t len)
{
	yyjson_doc *doc = sl_json_read(json, len, 0, NULL);
	int64_t b;
	if (!doc || !sl_json_int(yyjson_doc_get_root(doc), "boundaries", &b)) {
		yyjson_doc_free(doc);
		malformed(p, "sent a malformed greeting");
		return;
	}
	p->sb->boundaries = ((unsigned)b & SL_B_ALL) | p->sb->ns;
	yyjson_doc_free(doc);
	if (p->sb->require & ~p->sb->boundaries) {
		char miss[256];
		sl_sandbox_describe(p->sb->require & ~p->sb->boundaries, miss, sizeof(miss));
		fail(p, "crash", "code mode requires boundaries this machine does not provide: %s "
		     "(sluice.codeMode.require)", miss);
		return;
	}
	p->state = P_RUNNING;
	send_run(p);
}

/* ---- reading the worker ---------------------------------------------------------- */

static uint32_t frame_cap(struct sl_program *p, uint32_t kind)
{
	const struct sl_code_limits *l = &p->sb->lim;
	switch (kind) {
	case SL_FRAME_READY: return 256;
	case SL_FRAME_CALL: return (uint32_t)(l->max_args + 8192);
	case SL_FRAME_DONE: return (uint32_t)((l->max_output + l->max_console) * 6 + 8192);
	default: return 0;
	}
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	static char slab[65536];
	buf->base = slab;
	buf->len = sizeof(slab);
}

static void parse_frames(struct sl_program *p)
{
	while (p->state != P_DONE && p->in.len >= SL_FRAME_HEADER) {
		uint32_t kind, len;
		if (!sl_frame_parse_header((unsigned char *)p->in.data, &kind, &len, UINT32_MAX) ||
		    len > frame_cap(p, kind)) {
			malformed(p, "sent a frame over its size limit or of an unknown kind");
			return;
		}
		if (p->in.len < SL_FRAME_HEADER + (size_t)len)
			return;
		const char *json = p->in.data + SL_FRAME_HEADER;
		if (kind == SL_FRAME_READY && p->state == P_WAIT_READY)
			handle_ready(p, json, len);
		else if (kind == SL_FRAME_CALL && p->state == P_RUNNING)
			handle_call(p, json, len);
		else if (kind == SL_FRAME_DONE && p->state == P_RUNNING)
			handle_done(p, json, len);
		else
			malformed(p, "sent a frame out of turn");
		if (p->state != P_DONE)
			sl_buf_consume(&p->in, SL_FRAME_HEADER + (size_t)len);
	}
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct sl_program *p = s->data;
	if (p->state == P_DONE)
		return;
	if (n > 0) {
		if (sl_buf_append(&p->in, buf->base, (size_t)n) < 0) {
			malformed(p, "sent more than a frame's worth of data");
			return;
		}
		parse_frames(p);
		return;
	}
	if (n < 0) {
		uv_read_stop(s);
		/* The worker is gone without a DONE frame. */
		if (p->have_status) {
			classify_exit(p);
		} else {
			p->state = P_WAIT_EXIT;
			uv_timer_start(&p->timer, on_timer, EXIT_WAIT_MS, 0);
		}
	}
}

void sl_program_take_worker(struct sl_program *p, struct sl_wslot *w)
{
	struct sl_sandbox *sb = p->sb;
	p->w = *w;
	p->have_worker = true;
	p->state = P_WAIT_READY;
	sl_list_remove(&p->link);
	sl_list_push_front(&sb->running, &p->link);
	uv_pipe_init(sb->loop, &p->sock, 0);
	p->sock.data = p;
	p->handles++;
	p->sock_open = true;
	if (uv_pipe_open(&p->sock, w->fd) < 0) {
		close(w->fd);
		malformed(p, "could not be reached");
		return;
	}
	uv_read_start((uv_stream_t *)&p->sock, on_alloc, on_read);
}

/* p takes a slot: a prepared worker at once, or the next the zygote
 * forks. Its wall clock starts here, not while it was queued. */
static void admit(struct sl_program *p)
{
	struct sl_sandbox *sb = p->sb;
	struct sl_wslot w;

	sb->nslots++;
	p->slot = true;
	if (p->owner) {
		p->owner->running++;
		p->owner->served = ++sb->admits;
	}
	p->state = P_WAIT_WORKER;
	p->deadline_ms = sl_now_ms() + sb->lim.timeout_ms + KILL_GRACE_MS;
	if (sl_sandbox_pop(sb, &w)) {
		uv_timer_start(&p->timer, on_timer, sb->lim.timeout_ms + KILL_GRACE_MS, 0);
		sl_program_take_worker(p, &w);
	} else if (!sb->ctl_open) {
		/* Answer from the loop, never inside this call. */
		uv_timer_start(&p->timer, on_timer, 0, 0);
	} else {
		uv_timer_start(&p->timer, on_timer, sb->lim.timeout_ms + KILL_GRACE_MS, 0);
		sl_list_push_back(&sb->waiting, &p->link);
	}
}

struct sl_program *sl_program_start(struct sl_sandbox *sb, const struct sl_sandbox_host *host,
				    const char *code, size_t len, sl_program_done_fn done,
				    sl_program_step_fn step, void *ctx)
{
	struct sl_program *p = sl_alloc(sizeof(*p));

	p->sb = sb;
	p->host = *host;
	p->host.owner = NULL; /* borrowed: p->owner_key is the sandbox's copy */
	own(sb, p, host->owner);
	p->id = sb->next_id++;
	p->started_us = sl_now_us();
	p->code = sl_strndup(code, len);
	p->code_len = len;
	p->done = done;
	p->step = step;
	p->ctx = ctx;
	p->calls = sl_alloc((sb->lim.max_calls + 1) * sizeof(*p->calls));
	sl_buf_init(&p->in, (sb->lim.max_output + sb->lim.max_console) * 6 + sb->lim.max_args + 65536);
	uv_timer_init(sb->loop, &p->timer);
	p->timer.data = p;
	p->handles = 1;
	if (sb->nslots < sb->max_running && may_run(sb, p)) {
		admit(p);
	} else if (sb->nqueued < sb->max_queued &&
		   (!p->owner || p->owner->queued < sb->caller_queued)) {
		enqueue(sb, p);
	} else {
		/* Refused at once, answered from the loop. */
		p->state = P_BUSY;
		p->res.kind = "busy";
		if (sb->nqueued < sb->max_queued)
			p->res.text = sl_printf("code mode is full for this caller: %u of its programs "
						"running (sluice.codeMode.maxConcurrentPerCaller) and "
						"%u waiting (sluice.codeMode.maxQueuedPerCaller); try "
						"again later", p->owner->running, p->owner->queued);
		else
			p->res.text = sl_printf("code mode is full: %u programs running "
						"(sluice.codeMode.maxConcurrent) and %u waiting "
						"(sluice.codeMode.maxQueued); try again later",
						sb->nslots, sb->nqueued);
		p->res.text_len = strlen(p->res.text);
		disown(sb, p);
		p->owner = NULL;
		uv_timer_start(&p->timer, on_timer, 0, 0);
	}
	return p;
}

void sl_program_fix(struct sl_program *p, const uint32_t seed[4], uint64_t clock_ms)
{
	p->fixed = true;
	memcpy(p->seed, seed, sizeof(p->seed));
	p->clock_ms = clock_ms;
}

void sl_program_set_language(struct sl_program *p, const char *lang)
{
	p->lang = lang && strcmp(lang, "ts") == 0 ? "ts" : lang && strcmp(lang, "js") == 0 ? "js" : NULL;
}

void sl_program_set_wrap(struct sl_program *p, size_t pre, size_t post)
{
	if (pre + post <= p->code_len && !memchr(p->code, '\n', pre)) {
		p->pre = pre;
		p->post = post;
	}
}

void sl_program_free(struct sl_program *p)
{
	p->free_wanted = true;
	uv_close((uv_handle_t *)&p->timer, on_handle_closed);
}

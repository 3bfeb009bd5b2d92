/*
 * Fuzz target: the gateway side of the sandbox protocol, fed by a hostile
 * worker: frame headers (src/sandbox/frame.c) and everything program.c
 * does with the frames (READY, CALL, DONE; caps, order, JSON, call limits).
 *
 * As in tests/unit/test_sandbox.c, no zygote runs: a hand-built sandbox
 * holds one prepared worker slot whose fd is one end of a socketpair. The
 * input is the worker's whole byte stream: it is written to the other end,
 * which is then shut for writing (the gateway can still answer into it),
 * and the worker's exit status (from the input's first byte) is reported
 * as the zygote would. The program's host (no gateway) knows no server,
 * so every CALL is refused by its resolve.
 *
 * Invariants checked:
 *   - the program ends, exactly once, within 2 s of the worker's end;
 *   - its result has a text, a console and a known kind when it failed;
 *   - every handle is closed after sl_program_free, and the loop closes.
 *
 * fuzz-flags: -max_len=16384 -dict=tests/fuzz/sandbox.dict
 */
#include "fuzz.h"

#include "core/log.h"
#include "sandbox/internal.h"
#include "sandbox/sandbox.h"

#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int done_runs;

static void on_done(void *ctx, struct sl_program *p)
{
	done_runs++;
}

static const char *no_server(void *ctx, size_t i)
{
	return NULL;
}

static int refuse(void *ctx, const char *server, const char *tool, struct sl_sandbox_tool *out,
		  struct sl_err *err)
{
	sl_err_set(err, "unknown server '%.100s'", server);
	return SL_ERR_NOT_FOUND;
}

/* Never reached: resolve refuses everything. */
static void never_call(void *ctx, struct sl_program *p, uint32_t id, const struct sl_sandbox_tool *t,
		       yyjson_mut_doc *args, struct sl_sandbox_call **handle)
{
	ASSERT(false);
}

static void never_cancel(void *ctx, struct sl_sandbox_call *h)
{
	ASSERT(false);
}

static const struct sl_sandbox_host host = { NULL, no_server, refuse, never_call, never_cancel,
					     NULL, NULL };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	signal(SIGPIPE, SIG_IGN);
	sl_log_set_level(SL_LOG_ERROR);
	return 0;
}

static void run_until(uv_loop_t *loop, bool (*cond)(uv_loop_t *))
{
	uint64_t end = sl_now_ms() + 2000;
	while (!cond(loop)) {
		ASSERT(sl_now_ms() < end);
		uv_run(loop, UV_RUN_NOWAIT);
	}
}

static bool is_done(uv_loop_t *loop)
{
	return done_runs > 0;
}

static bool is_idle(uv_loop_t *loop)
{
	return !uv_loop_alive(loop);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const kinds[] = { "error", "syntax", "timeout", "cpu", "memory",
					     "output", "calls", "crash" };
	uv_loop_t loop;
	struct sl_sandbox sb = { 0 };
	const struct sl_program_result *r;
	struct sl_program *p;
	int sv[2], status;
	bool known = false;

	if (size < 1)
		return 0;
	/* how the worker ended: exit 0, exit 5 (out of memory), SIGKILL, SIGSYS */
	status = (int[]){ 0, 5 << 8, SIGKILL, SIGSYS }[data[0] & 3];
	data++;
	size--;

	ASSERT(uv_loop_init(&loop) == 0);
	ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	sb.loop = &loop;
	sl_code_limits_default(&sb.lim);
	sb.lim.timeout_ms = 1000;
	sb.lim.max_calls = 16;
	sb.ctl = sb.zygote = -1;
	sb.ctl_open = true;
	sb.pool = 1;
	sb.max_running = 1; /* admitted at once: the program runs on the ready worker */
	sb.requested = SL_POOL_MAX; /* nothing is asked of the absent zygote */
	sb.next_id = 1;
	sl_list_init(&sb.queued);
	sl_list_init(&sb.waiting);
	sl_list_init(&sb.running);
	sb.nready = 1;
	sb.ready[0] = (struct sl_wslot){ .fd = sv[0], .pidfd = -1, .pid = 0 };

	done_runs = 0;
	p = sl_program_start(&sb, &host, "return 1", 8, on_done, NULL, NULL);
	/* The socket buffer holds the whole input (max_len is far below it). */
	ASSERT(write(sv[1], data, size) == (ssize_t)size);
	shutdown(sv[1], SHUT_WR);
	sl_program_exited(p, status);
	run_until(&loop, is_done);

	ASSERT(done_runs == 1);
	r = sl_program_result(p);
	ASSERT(r->text && r->console);
	for (size_t i = 0; i < SL_COUNT(kinds); i++)
		known |= r->kind && strcmp(r->kind, kinds[i]) == 0;
	ASSERT(r->ok || known);
	ASSERT(r->calls <= 16);
	ASSERT(sl_list_empty(&sb.running));

	sl_program_free(p);
	run_until(&loop, is_idle);
	ASSERT(done_runs == 1);
	close(sv[1]);
	ASSERT(uv_loop_close(&loop) == 0);
	return 0;
}

/*
 * The stdio link: an upstream server as a child process, one JSON-RPC
 * message per line on its stdin and stdout, its stderr logged.
 *
 * Exit is watched through a pidfd (or by polling waitpid where the kernel
 * has none); when the child is reaped, its whole process group goes too.
 */
#include "upstream/link.h"
#include "upstream/spawn.h"
#include "core/log.h"
#include "event/handles.h"
#include "event/write.h"
#include "proto/lines.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define STDERR_LINE_MAX 1024
#define TERM_GRACE_MS 500
#define KILL_GRACE_MS 1500
#define EXIT_WAIT_MS 100       /* after EOF on stdout, for the exit status */

extern char **environ;

struct sl_proc {
	struct sl_link link;
	struct sl_child child;
	uv_pipe_t in, out, err;
	uv_poll_t pidw;         /* on the pidfd */
	uv_timer_t reap;        /* polls waitpid where the kernel has no pidfd */
	uv_timer_t grace;       /* stopping: SIGTERM, then SIGKILL */
	struct sl_lines out_lines, err_lines;
	struct sl_handles handles;
	bool in_open;
	bool reaped;
};

static void proc_free(void *arg)
{
	struct sl_proc *p = arg;
	sl_lines_dispose(&p->out_lines);
	sl_lines_dispose(&p->err_lines);
	free(p);
}

static void proc_close_handle(struct sl_proc *p, uv_handle_t *h)
{
	sl_handles_close_one(&p->handles, h, NULL);
}

/* Closes the pipes now; the exit watcher stays until the child is reaped. */
static void proc_close_pipes(struct sl_proc *p)
{
	if (p->in_open) {
		p->in_open = false;
		proc_close_handle(p, (uv_handle_t *)&p->in);
	}
	proc_close_handle(p, (uv_handle_t *)&p->out);
	proc_close_handle(p, (uv_handle_t *)&p->err);
}

static void proc_detach(struct sl_link *l)
{
	struct sl_proc *p = (struct sl_proc *)l;
	p->link.up = NULL;
	proc_close_pipes(p);
	if (!p->reaped)
		sl_spawn_kill(&p->child, SIGKILL);
}

static int on_stderr_line(void *ctx, const char *line, size_t len)
{
	struct sl_proc *p = ctx;
	if (p->link.up && len)
		sl_log(SL_LOG_INFO, "[%s] %.*s", p->link.up->name, (int)len, line);
	return 0;
}

static int on_stderr_oversize(void *ctx, const char *head, size_t hl, const char *tail,
			      size_t tl, size_t total)
{
	struct sl_proc *p = ctx;
	if (p->link.up)
		sl_log(SL_LOG_INFO, "[%s] %.*s... (%zu bytes, cut)", p->link.up->name, (int)hl, head, total);
	return 0;
}

static int on_stdout_line(void *ctx, const char *line, size_t len)
{
	struct sl_proc *p = ctx;
	if (!p->link.up)
		return 1;
	sl_upstream_link_message(p->link.up, line, len);
	return p->link.up ? 0 : 1;
}

static int on_stdout_oversize(void *ctx, const char *head, size_t hl, const char *tail,
			      size_t tl, size_t total)
{
	struct sl_proc *p = ctx;
	if (p->link.up)
		sl_upstream_link_oversize(p->link.up, head, hl, tail, tl, total);
	return p->link.up ? 0 : 1;
}

static const struct sl_lines_ops stdout_ops = { on_stdout_line, on_stdout_oversize };
static const struct sl_lines_ops stderr_ops = { on_stderr_line, on_stderr_oversize };

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	static char slab[65536];
	buf->base = slab;
	buf->len = sizeof(slab);
}

static void try_reap(struct sl_proc *p);

static void on_stdout_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct sl_proc *p = s->data;
	if (n > 0) {
		sl_lines_feed(&p->out_lines, buf->base, (size_t)n);
	} else if (n < 0) {
		uv_read_stop(s);
		/* A dying process closes its output just before it can be reaped:
		 * give it a moment, so the log and the failed calls name the real
		 * exit status rather than the closed pipe. */
		for (int i = 0; i < EXIT_WAIT_MS && p->link.up && !p->reaped; i++) {
			try_reap(p);
			if (!p->reaped)
				uv_sleep(1);
		}
		/* Output closed while the process lives on: it cannot answer. */
		if (p->link.up && !p->reaped)
			sl_upstream_link_lost(p->link.up, "closed its standard output");
	}
}

static void on_stderr_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct sl_proc *p = s->data;
	if (n > 0)
		sl_lines_feed(&p->err_lines, buf->base, (size_t)n);
	else if (n < 0)
		uv_read_stop(s);
}

/* The child exited: read what it wrote before dying, then report. */
static void proc_exited(struct sl_proc *p, int status)
{
	char why[128];
	char buf[65536];
	int fd;

	p->reaped = true;
	/* Whatever the server left behind in its process group goes with it. */
	kill(-p->child.pid, SIGKILL);
	/* Its last words: answers on stdout, and on stderr often the reason
	 * it exited (a last line without its newline included). */
	if (p->link.up && uv_fileno((uv_handle_t *)&p->out, &fd) == 0) {
		ssize_t n;
		while (p->link.up && (n = read(fd, buf, sizeof(buf))) > 0)
			sl_lines_feed(&p->out_lines, buf, (size_t)n);
	}
	if (p->link.up && uv_fileno((uv_handle_t *)&p->err, &fd) == 0) {
		ssize_t n;
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			sl_lines_feed(&p->err_lines, buf, (size_t)n);
		if (p->err_lines.buf.len)
			sl_lines_feed(&p->err_lines, "\n", 1);
	}
	if (WIFEXITED(status))
		snprintf(why, sizeof(why), "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(why, sizeof(why), "was killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(why, sizeof(why), "ended (status %d)", status);
	if (p->link.up)
		sl_upstream_link_lost(p->link.up, why);
	proc_close_pipes(p);
	sl_handles_close(&p->handles, proc_free, p);
	if (p->child.pidfd >= 0)
		close(p->child.pidfd);
}

static void try_reap(struct sl_proc *p)
{
	int status;
	pid_t r;
	do
		r = waitpid(p->child.pid, &status, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == p->child.pid)
		proc_exited(p, status);
	else if (r < 0) /* someone else reaped it: report it gone */
		proc_exited(p, 0);
}

static void on_pidfd(uv_poll_t *h, int status, int events)
{
	struct sl_proc *p = h->data;
	if (!p->reaped)
		try_reap(p);
}

static void on_reap_timer(uv_timer_t *t)
{
	struct sl_proc *p = t->data;
	if (!p->reaped)
		try_reap(p);
}

/* ---- the link operations --------------------------------------------- */

static bool proc_send(struct sl_link *l, char *line, size_t len)
{
	struct sl_proc *p = (struct sl_proc *)l;

	if (!p->in_open ||
	    p->in.write_queue_size + len > 2 * l->up->gcfg->max_upstream_message_bytes) {
		free(line);
		return false;
	}
	return sl_write_line((uv_stream_t *)&p->in, line, len) == SL_OK;
}

static void on_grace(uv_timer_t *t)
{
	struct sl_proc *p = t->data;

	if (p->reaped)
		return;
	if (uv_timer_get_repeat(t) == 0) {
		sl_spawn_kill(&p->child, SIGTERM);
		uv_timer_start(t, on_grace, KILL_GRACE_MS, KILL_GRACE_MS);
	} else {
		sl_spawn_kill(&p->child, SIGKILL);
		uv_timer_stop(t);
	}
}

/* MCP 2025-11-25 stdio shutdown: close stdin, then SIGTERM, then SIGKILL. */
static void proc_stop(struct sl_link *l)
{
	struct sl_proc *p = (struct sl_proc *)l;

	if (p->in_open) {
		p->in_open = false;
		proc_close_handle(p, (uv_handle_t *)&p->in);
	}
	if (!p->reaped)
		uv_timer_start(&p->grace, on_grace, TERM_GRACE_MS, 0);
}

static const struct sl_link_ops proc_ops = { proc_send, NULL, proc_stop, proc_detach };

struct sl_link *sl_stdio_link_start(struct sl_upstream *u, struct sl_err *err)
{
	const struct sl_server_config *c = u->cfg;
	struct sl_proc *p = sl_alloc(sizeof(*p));
	char **env = sl_config_child_env(c, environ);
	int rc = sl_spawn(c->command, c->args, env, c->cwd, &p->child, err);

	sl_config_env_free(env);
	if (rc < 0) {
		free(p);
		return NULL;
	}
	p->link.ops = &proc_ops;
	p->link.up = u;
	p->link.gen = sl_link_next_gen();
	sl_lines_init(&p->out_lines, u->gcfg->max_upstream_message_bytes, &stdout_ops, p);
	sl_lines_init(&p->err_lines, STDERR_LINE_MAX, &stderr_ops, p);
	sl_handles_init(&p->handles);
	uv_pipe_init(u->loop, &p->in, 0);
	uv_pipe_init(u->loop, &p->out, 0);
	uv_pipe_init(u->loop, &p->err, 0);
	p->in.data = p->out.data = p->err.data = p;
	uv_timer_init(u->loop, &p->grace);
	p->grace.data = p;
	sl_handles_add(&p->handles, &p->in);
	sl_handles_add(&p->handles, &p->out);
	sl_handles_add(&p->handles, &p->err);
	sl_handles_add(&p->handles, &p->grace);
	p->in_open = true;
	if (uv_pipe_open(&p->in, p->child.in) || uv_pipe_open(&p->out, p->child.out) ||
	    uv_pipe_open(&p->err, p->child.err))
		sl_log(SL_LOG_ERROR, "%s: cannot watch the child's pipes", u->name);
	uv_read_start((uv_stream_t *)&p->out, on_alloc, on_stdout_read);
	uv_read_start((uv_stream_t *)&p->err, on_alloc, on_stderr_read);
	if (p->child.pidfd >= 0) {
		uv_poll_init(u->loop, &p->pidw, p->child.pidfd);
		p->pidw.data = p;
		sl_handles_add(&p->handles, &p->pidw);
		uv_poll_start(&p->pidw, UV_READABLE, on_pidfd);
	} else {
		uv_timer_init(u->loop, &p->reap);
		p->reap.data = p;
		sl_handles_add(&p->handles, &p->reap);
		uv_timer_start(&p->reap, on_reap_timer, 50, 50);
	}
	return &p->link;
}


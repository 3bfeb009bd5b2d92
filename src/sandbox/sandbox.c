/* The zygote and the pool of prepared workers; see sandbox.h. */
#include "sandbox/sandbox.h"
#include "sandbox/internal.h"
#include "sandbox/kernel.h"
#include "sandbox/zygote.h"
#include "core/log.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>


static void request_workers(struct sl_sandbox *sb)
{
	struct sl_zmsg m = { 'F', 0, 0 };
	struct sl_list *n;
	int waiting = 0;
	sl_list_each(n, &sb->waiting)
		waiting++;
	while (sb->ctl_open && sb->nready + sb->requested < sb->pool + waiting &&
	       sb->requested < SL_POOL_MAX) {
		if (send(sb->ctl, &m, sizeof(m), MSG_NOSIGNAL) != sizeof(m))
			break;
		sb->requested++;
	}
}

static void close_slot(struct sl_wslot *w)
{
	close(w->fd);
	if (w->pidfd >= 0)
		close(w->pidfd);
}

/* The zygote is gone (and with it, as pid 1 of their namespace, every
 * worker): forget its workers and reap it. */
static void on_poll_closed(uv_handle_t *h)
{
	free(h);
}

static void zygote_lost(struct sl_sandbox *sb)
{
	uv_close((uv_handle_t *)sb->ctl_poll, on_poll_closed);
	sb->ctl_poll = NULL;
	sb->ctl_open = false;
	for (int i = 0; i < sb->nready; i++)
		close_slot(&sb->ready[i]);
	sb->nready = 0;
	sb->requested = 0;
	kill(sb->zygote, SIGKILL);
	while (waitpid(sb->zygote, NULL, 0) < 0 && errno == EINTR)
		;
	close(sb->ctl);
	sb->ctl = -1;
}

static void on_ctl(uv_poll_t *h, int status, int events);

/* Starts (or restarts) the zygote. */
static bool zygote_start(struct sl_sandbox *sb, struct sl_err *err)
{
	if (sl_zygote_spawn(&sb->lim, sb->image, &sb->ctl, &sb->zygote, &sb->ns, err) < 0) {
		memcpy(sb->error, err->msg, sizeof(sb->error));
		return false;
	}
	sb->started_ms = sl_now_ms();
	sb->ctl_open = true;
	sb->ctl_poll = sl_alloc(sizeof(*sb->ctl_poll));
	uv_poll_init(sb->loop, sb->ctl_poll, sb->ctl);
	sb->ctl_poll->data = sb;
	uv_poll_start(sb->ctl_poll, UV_READABLE, on_ctl);
	request_workers(sb);
	return true;
}

static void on_ctl(uv_poll_t *h, int status, int events)
{
	struct sl_sandbox *sb = h->data;
	struct sl_zmsg m;
	char cbuf[CMSG_SPACE(2 * sizeof(int))];
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	ssize_t n = recvmsg(sb->ctl, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	struct sl_wslot w = { -1, -1, 0 };

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n != sizeof(m)) {
		snprintf(sb->error, sizeof(sb->error), "the sandbox zygote ended");
		sl_log(SL_LOG_ERROR, "code mode: %s; it is restarted with the next program", sb->error);
		zygote_lost(sb);
		return;
	}
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int fds[2] = { -1, -1 };
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			memcpy(fds, CMSG_DATA(c), (k > 2 ? 2 : k) * sizeof(int));
			w.fd = fds[0];
			w.pidfd = k > 1 ? fds[1] : -1;
		}
	}
	if (m.type == 'W' && w.fd >= 0) {
		w.pid = m.pid;
		sb->requested--;
		if (!sl_list_empty(&sb->waiting)) {
			sl_program_take_worker(sl_program_of(sl_list_first(&sb->waiting)), &w);
		} else if (sb->nready < SL_POOL_MAX) {
			sb->ready[sb->nready++] = w;
		} else {
			close_slot(&w);
		}
		request_workers(sb);
	} else if (m.type == 'X') {
		struct sl_list *l;
		sl_list_each(l, &sb->running)
			if (sl_program_pid(sl_program_of(l)) == m.pid) {
				sl_program_exited(sl_program_of(l), m.status);
				break;
			}
		request_workers(sb); /* its replacement (sl_sandbox_pop) */
	}
}

struct sl_sandbox *sl_sandbox_new(uv_loop_t *loop, const struct sl_config *cfg, struct sl_err *err)
{
	struct sl_sandbox *sb = sl_alloc(sizeof(*sb));
	int pool = cfg->code_pool;
	sb->loop = loop;
	sb->lim = cfg->code;
	sb->require = cfg->code_require;
	sb->pool = pool < 1 ? 1 : pool > SL_POOL_MAX / 2 ? SL_POOL_MAX / 2 : pool;
	sb->max_running = cfg->code_max_concurrent ? cfg->code_max_concurrent
						   : 2 * uv_available_parallelism();
	sb->max_queued = cfg->code_max_queued;
	sb->caller_running = cfg->code_max_concurrent_caller ? cfg->code_max_concurrent_caller
							     : sb->max_running / 2;
	if (sb->caller_running < 1)
		sb->caller_running = 1;
	sb->caller_queued = cfg->code_max_queued_caller ? cfg->code_max_queued_caller
							: sb->max_queued / 2;
	if (sb->caller_queued < 1)
		sb->caller_queued = 1;
	sl_map_init(&sb->owners);
	sb->next_id = 1;
	sl_list_init(&sb->queued);
	sl_list_init(&sb->waiting);
	sl_list_init(&sb->running);
	sb->image = sl_zygote_image();
	if (!zygote_start(sb, err)) {
		if (sb->image >= 0)
			close(sb->image);
		free(sb);
		return NULL;
	}
	return sb;
}

void sl_sandbox_free(struct sl_sandbox *sb)
{
	/* Programs still here end first (their owners hear about it; the
	 * queue first, so that no ending program admits one), then the zygote,
	 * and with it every worker (it is pid 1 of their namespace). */
	struct sl_list *n;

	while ((n = sl_list_first(&sb->queued)))
		sl_program_cancel(sl_program_of(n));
	while ((n = sl_list_first(&sb->running)))
		sl_program_cancel(sl_program_of(n));
	while ((n = sl_list_first(&sb->waiting)))
		sl_program_cancel(sl_program_of(n));
	if (sb->ctl_open)
		zygote_lost(sb);
	sl_map_dispose(&sb->owners); /* empty: each program's end let its owner go */
	if (sb->image >= 0)
		close(sb->image);
	free(sb);
}

unsigned sl_sandbox_boundaries(const struct sl_sandbox *sb)
{
	return sb->boundaries;
}

void sl_sandbox_load(const struct sl_sandbox *sb, unsigned *admitted, unsigned *queued)
{
	*admitted = sb->nslots;
	*queued = sb->nqueued;
}

bool sl_sandbox_can_run(const struct sl_sandbox *sb, const char *owner)
{
	const struct sl_owner *o = owner ? sl_map_get(&sb->owners, owner) : NULL;
	return sb->nqueued == 0 && sb->nslots < sb->max_running &&
	       (!o || o->running < sb->caller_running);
}

const char *sl_sandbox_describe(unsigned boundaries, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	for (unsigned bit = 1; bit < SL_B_ALL; bit <<= 1)
		if (boundaries & bit)
			len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s",
						len ? " " : "", sl_boundary_name(bit));
	return buf;
}

bool sl_sandbox_pop(struct sl_sandbox *sb, struct sl_wslot *w)
{
	bool got = sb->nready > 0;
	struct sl_err err;

	/* A lost zygote is restarted, at most once a second. */
	if (!sb->ctl_open && sl_now_ms() - sb->started_ms >= 1000) {
		if (zygote_start(sb, &err))
			sl_log(SL_LOG_INFO, "code mode: the sandbox zygote was restarted");
	}
	if (got) {
		*w = sb->ready[0];
		memmove(sb->ready, sb->ready + 1, (size_t)(sb->nready - 1) * sizeof(*w));
		sb->nready--;
	}
	/* The worker taken is replaced when its program ends (the 'X' above),
	 * not now: forking and warming a worker beside a running program slowed
	 * the program by about as much as the worker cost (SANDBOX.md, "The
	 * floor, third pass"). A pool left empty is refilled at once. */
	if (sb->nready == 0)
		request_workers(sb);
	return got;
}

void sl_code_ident(const char *name, char *out)
{
	static const char *reserved[] = {
		"await", "break", "case", "catch", "class", "const", "continue", "debugger",
		"default", "delete", "do", "else", "enum", "export", "extends", "false",
		"finally", "for", "function", "if", "implements", "import", "in", "instanceof",
		"interface", "let", "new", "null", "package", "private", "protected", "public",
		"return", "static", "super", "switch", "this", "throw", "true", "try", "typeof",
		"var", "void", "while", "with", "yield",
	};
	size_t k = 0;
	bool prefix = (name[0] >= '0' && name[0] <= '9') || name[0] == '\0';
	for (size_t i = 0; i < SL_COUNT(reserved) && !prefix; i++)
		prefix = strcmp(name, reserved[i]) == 0;
	if (prefix)
		out[k++] = '_';
	for (const char *c = name; *c; c++) {
		bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			  (*c >= '0' && *c <= '9') || *c == '_' || *c == '$';
		out[k++] = ok ? *c : '_';
	}
	out[k] = '\0';
}

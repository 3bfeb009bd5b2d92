/* The zygote process and its launcher; see zygote.h. */
#include "sandbox/zygote.h"
#include "sandbox/kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1 */
#endif

#define CTL_FD 3
#define HUGE_PAGE (2u << 20)
#define NLIMITS 11

/* ---- the launcher (in the gateway) --------------------------------------- */

struct launch {
	int ctl;
	int flags;
	uid_t uid;
	gid_t gid;
	char **argv;
};

static void write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, s, strlen(s)) < 0)
			_exit(126);
		close(fd);
	}
}

/* In the cloned child: only async-signal-safe calls, then exec. */
static int launch_child(void *arg)
{
	struct launch *ln = arg;
	char map[64];
	char *envp[] = { NULL };

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (ln->flags & CLONE_NEWUSER) {
		/* Map our own ids to root inside, nothing else. */
		write_file("/proc/self/setgroups", "deny");
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)ln->uid);
		write_file("/proc/self/uid_map", map);
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)ln->gid);
		write_file("/proc/self/gid_map", map);
	}
	if (dup2(ln->ctl, CTL_FD) < 0)
		_exit(127);
	syscall(SYS_close_range, CTL_FD + 1, ~0u, 0u);
	/* Not the gateway's stdin and stdout (the MCP client) nor its stderr. */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
		_exit(127);
	execve("/proc/self/exe", ln->argv, envp);
	_exit(127);
}

int sl_zygote_spawn(const struct sl_code_limits *l, int *ctl, pid_t *pid, unsigned *ns,
		    struct sl_err *err)
{
	static const int tries[] = {
		CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWNS,
		CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWNS, /* root without userns */
		0,
	};
	unsigned long long vals[NLIMITS] = {
		l->timeout_ms, l->cpu_ms, l->heap_bytes, l->stack_bytes, l->max_calls,
		l->max_inflight, l->max_output, l->max_console, l->max_source, l->max_args,
		l->max_result,
	};
	char nums[NLIMITS][24], *argv[NLIMITS + 3];
	struct launch ln;
	int sv[2];
	size_t stack_size = 64u << 10;
	char *stack;
	pid_t p = -1;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		sl_err_set(err, "socketpair: %s", strerror(errno));
		return SL_ERR_IO;
	}
	argv[0] = "sluice";
	argv[1] = "__zygote";
	for (int i = 0; i < NLIMITS; i++) {
		snprintf(nums[i], sizeof(nums[i]), "%llu", vals[i]);
		argv[i + 2] = nums[i];
	}
	argv[NLIMITS + 2] = NULL;
	ln.ctl = sv[1];
	ln.uid = getuid();
	ln.gid = getgid();
	ln.argv = argv;
	stack = sl_alloc(stack_size);
	for (size_t i = 0; i < SL_COUNT(tries) && p < 0; i++) {
		ln.flags = tries[i];
		p = clone(launch_child, stack + stack_size, tries[i] | SIGCHLD, &ln);
		if (p > 0) {
			*ns = 0;
			if (tries[i] & CLONE_NEWUSER)
				*ns |= SL_B_USERNS;
			if (tries[i] & CLONE_NEWPID)
				*ns |= SL_B_PIDNS;
			if (tries[i] & CLONE_NEWNET)
				*ns |= SL_B_NETNS;
			if (tries[i] & CLONE_NEWIPC)
				*ns |= SL_B_IPCNS;
			if (tries[i] & CLONE_NEWNS)
				*ns |= SL_B_MNTNS;
		}
	}
	free(stack); /* the child has its own copy: no CLONE_VM */
	close(sv[1]);
	if (p < 0) {
		sl_err_set(err, "cannot start the sandbox zygote: %s", strerror(errno));
		close(sv[0]);
		return SL_ERR_IO;
	}
	*ctl = sv[0];
	*pid = p;
	return SL_OK;
}

/* ---- sluice's code in one huge page ----------------------------------------- */

static int find_code(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t *r = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			r[0] = info->dlpi_addr + ph->p_vaddr;
			r[1] = r[0] + ph->p_memsz;
			break;
		}
	}
	return 1; /* the first object listed is the program itself */
}

/*
 * A worker is a fresh process: each page of code it runs is faulted in
 * again (a fork copies no page-table entries of a file mapping), and on the
 * VMs measured here each page it first touches also costs the hypervisor's
 * own page tables. A private anonymous huge page does neither: a fork
 * copies one entry for each. So sluice's code (linked 2 MiB aligned, see the
 * Makefile) is copied into huge pages (MADV_COLLAPSE, Linux 6.1) and moved over
 * the file's mapping at the same address, before any worker exists. The
 * bytes are the same, mapped read and execute only. Anything short of a
 * huge page (no 2 MiB alignment, THP unavailable, an older kernel, other
 * memory where the copy must go) leaves the code as it was: 4 KiB anonymous
 * pages would make every fork copy hundreds of entries instead (SANDBOX.md,
 * "The floor, second pass"). Measured: docs/internals/SANDBOX.md, "The
 * floor, third pass".
 */
static void code_to_huge_page(void)
{
	uintptr_t r[2] = { 0, 0 }, start, end, tail;
	size_t size;
	char *fresh, *at;

	dl_iterate_phdr(find_code, r);
	start = r[0];
	end = (r[1] + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	tail = (r[1] + 4095) & ~(uintptr_t)4095;
	if (!start || start % HUGE_PAGE)
		return;
	size = end - start;
	/* The rest of the 2 MiB after the code must be free: take it. */
	if (tail < end && mmap((void *)tail, end - tail, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != (void *)tail)
		return;
	fresh = mmap(NULL, size + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		     -1, 0);
	if (fresh == MAP_FAILED)
		goto keep;
	at = (char *)(((uintptr_t)fresh + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	madvise(at, size, MADV_HUGEPAGE);
	memcpy(at, (const void *)start, r[1] - start);
	if (madvise(at, size, MADV_COLLAPSE) != 0 || mprotect(at, size, PROT_READ | PROT_EXEC) != 0) {
		munmap(fresh, size + HUGE_PAGE);
		goto keep;
	}
	if (at > fresh)
		munmap(fresh, (size_t)(at - fresh));
	munmap(at + size, (size_t)(fresh + HUGE_PAGE - at)); /* at < fresh + HUGE_PAGE */
	/* One system call swaps the mappings; the code running it is in both. */
	if (mremap(at, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)start) == MAP_FAILED)
		_exit(7);
	return;
keep:
	if (tail < end)
		munmap((void *)tail, end - tail);
}

/* ---- the zygote process ----------------------------------------------------- */

static void send_msg(struct sl_zmsg *m, int *fds, int nfds)
{
	struct iovec iov = { m, sizeof(*m) };
	char cbuf[CMSG_SPACE(2 * sizeof(int))];
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		struct cmsghdr *c;
		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	while (sendmsg(CTL_FD, &mh, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			_exit(0); /* the gateway is gone */
}

SL_NORETURN static void become_worker(int sock, const struct sl_code_limits *l,
				      struct sl_worker *w)
{
	sigset_t none;

	/* The worker's only descriptor: its socket, as fd 3. */
	close(CTL_FD);
	if (dup2(sock, CTL_FD) < 0)
		_exit(6);
	syscall(SYS_close_range, CTL_FD + 1, ~0u, 0u);
	close(0);
	close(1);
	close(2);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGCHLD, SIG_DFL);
	unsigned b = sl_kernel_limit(l);
	b |= sl_kernel_lockdown(CTL_FD);
	sl_worker_run(w, CTL_FD, b);
}

static void fork_worker(const struct sl_code_limits *l, struct sl_worker *w)
{
	struct sl_zmsg m = { 'W', 0, 0 };
	int sv[2], fds[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	/* _Fork: no atfork handlers. Only libraries a worker never uses
	 * register them (GnuTLS, p11-kit), and running them in every worker
	 * faulted their code and data in (docs/internals/SANDBOX.md, "The
	 * floor"). */
	pid = _Fork();
	if (pid == 0)
		become_worker(sv[1], l, w);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return;
	}
	m.pid = pid;
	fds[0] = sv[0];
	fds[1] = (int)syscall(SYS_pidfd_open, pid, 0);
	send_msg(&m, fds, fds[1] >= 0 ? 2 : 1);
	close(sv[0]);
	if (fds[1] >= 0)
		close(fds[1]);
}

void sl_zygote_main(int argc, char **argv)
{
	struct sl_code_limits l;
	unsigned long long v[NLIMITS];
	struct pollfd pf[2];
	struct sl_worker *w;
	sigset_t set;
	int sfd;

	if (argc != NLIMITS + 2)
		_exit(2);
	for (int i = 0; i < NLIMITS; i++)
		v[i] = strtoull(argv[i + 2], NULL, 10);
	l.timeout_ms = v[0];
	l.cpu_ms = v[1];
	l.heap_bytes = v[2];
	l.stack_bytes = v[3];
	l.max_calls = (uint32_t)v[4];
	l.max_inflight = (uint32_t)v[5];
	l.max_output = v[6];
	l.max_console = v[7];
	l.max_source = v[8];
	l.max_args = v[9];
	l.max_result = v[10];

	/* Date's local time reads /etc/localtime once; do it here, where files
	 * may still be read, and make it UTC. */
	setenv("TZ", "UTC0", 1);
	tzset();
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	/* The expensive parts, once: every worker is a copy of this engine
	 * (created, never used) and loads this compiled filter. Measured here:
	 * preparing an engine costs about 400 us, a fork of a prepared one a
	 * fraction of that. */
	w = sl_worker_prepare(&l);
	if (!w)
		_exit(5);
	sl_kernel_seccomp_prepare(CTL_FD);
	/* Merge malloc's free chunks here, once: otherwise the first large
	 * allocation in every worker did it, writing to chunks all over the
	 * copied heap (about 5% of a worker's CPU here; SANDBOX.md). */
	malloc_trim(0);
	code_to_huge_page();
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	pf[0].fd = CTL_FD;
	pf[0].events = POLLIN;
	pf[1].fd = sfd;
	pf[1].events = POLLIN;
	for (;;) {
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			_exit(3);
		if (pf[1].revents) {
			struct signalfd_siginfo si;
			int status;
			pid_t pid;
			if (read(sfd, &si, sizeof(si)) < 0 && errno != EAGAIN)
				_exit(3);
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
				struct sl_zmsg m = { 'X', pid, status };
				send_msg(&m, NULL, 0);
			}
		}
		if (pf[0].revents) {
			struct sl_zmsg m;
			ssize_t n = recv(CTL_FD, &m, sizeof(m), 0);
			if (n <= 0)
				_exit(0); /* the gateway is gone: so are we, and our workers */
			if (m.type == 'F')
				fork_worker(&l, w);
		}
	}
}

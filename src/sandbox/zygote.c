/* The zygote process; see zygote.h (its launcher is launch.c). */
#include "sandbox/zygote.h"
#include "sandbox/kernel.h"

#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <poll.h>
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

#define CTL_FD SL_ZYGOTE_CTL_FD
#define HUGE_PAGE (2u << 20)
#define NLIMITS SL_ZYGOTE_NLIMITS

/* ---- the zygote's code and read-only data in huge pages ------------------- */

/* The program's code segment and the read-only segment after it, if any:
 * r[0], r[1] the code's start and end, r[2], r[3] the read-only data's. */
static int find_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t *r = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		if (ph->p_flags & PF_X) {
			r[0] = info->dlpi_addr + ph->p_vaddr;
			r[1] = r[0] + ph->p_memsz;
		} else if (r[0] && !r[2]) {
			if (!(ph->p_flags & PF_W)) {
				r[2] = info->dlpi_addr + ph->p_vaddr;
				r[3] = r[2] + ph->p_memsz;
			}
			break;
		}
	}
	return 1; /* the first object listed is the program itself */
}

/*
 * A worker is a fresh process: each page of code it runs is faulted in
 * again (a fork copies no page-table entries of a file mapping), and on the
 * VMs measured here each page it first touches, even to read it, also costs
 * the hypervisor's own page tables. A private anonymous huge page does
 * neither: a fork copies one entry for each. So the code, and the
 * read-only data after it where that fits one huge page (both linked 2 MiB
 * aligned, see the Makefile), are copied into huge pages (MADV_COLLAPSE,
 * Linux 6.1) and moved over the file's mapping at the same address, before
 * any worker exists. The bytes are the same, mapped read and execute (the
 * code) or read only (the data). Anything short of a huge page (no 2 MiB
 * alignment, THP unavailable, an older kernel, other memory where the copy
 * must go) leaves the segment as it was: 4 KiB anonymous pages would make
 * every fork copy hundreds of entries instead (SANDBOX.md, "The floor,
 * second pass"). Measured: docs/internals/SANDBOX.md, "The floor, third
 * pass" (the code) and "seventh pass" (the data).
 */
static void to_huge_pages(uintptr_t start, uintptr_t stop, int prot)
{
	uintptr_t end = (stop + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	uintptr_t tail = (stop + 4095) & ~(uintptr_t)4095;
	size_t size;
	char *fresh, *at;

	if (!start || start % HUGE_PAGE)
		return;
	size = end - start;
	/* The rest of the last 2 MiB must be free: take it. */
	if (tail < end && mmap((void *)tail, end - tail, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != (void *)tail)
		return;
	fresh = mmap(NULL, size + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		     -1, 0);
	if (fresh == MAP_FAILED)
		goto keep;
	at = (char *)(((uintptr_t)fresh + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	madvise(at, size, MADV_HUGEPAGE);
	memcpy(at, (const void *)start, stop - start);
	if (madvise(at, size, MADV_COLLAPSE) != 0 || mprotect(at, size, prot) != 0) {
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

static void segments_to_huge_pages(void)
{
	uintptr_t r[4] = { 0, 0, 0, 0 };

	dl_iterate_phdr(find_segments, r);
	to_huge_pages(r[0], r[1], PROT_READ | PROT_EXEC);
	/* At most one huge page of data: sluice's own (the zygote of
	 * sanitizer builds) is several, more memory than it saves. */
	if (r[3] - r[2] <= HUGE_PAGE)
		to_huge_pages(r[2], r[3], PROT_READ);
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
	prctl(PR_SET_NAME, "sluice-sandbox"); /* not "exe" or "memfd:...", in ps and top */
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
	segments_to_huge_pages();
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

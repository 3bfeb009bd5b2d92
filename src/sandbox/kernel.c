/* The kernel boundary applied to each worker; see kernel.h. */
#include "sandbox/kernel.h"

#include <errno.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_restrict_self 446
#endif
#define LANDLOCK_VERSION_FLAG (1u << 0)

/* Address space beyond the JS heap: the binary, libc, stacks, allocator slack. */
#define AS_MARGIN (192u << 20)

static const char *names[] = { "userns", "pidns", "netns", "ipcns", "mountns",
			       "rlimits", "no_new_privs", "landlock", "seccomp" };

const char *sl_boundary_name(unsigned bit)
{
	for (unsigned i = 0; i < SL_COUNT(names); i++)
		if (bit == 1u << i)
			return names[i];
	return NULL;
}

unsigned sl_boundary_parse(const char *name)
{
	for (unsigned i = 0; i < SL_COUNT(names); i++)
		if (strcmp(name, names[i]) == 0)
			return 1u << i;
	return 0;
}

static bool set_limit(int res, rlim_t v)
{
	struct rlimit r = { v, v };
	return setrlimit(res, &r) == 0;
}

unsigned sl_kernel_limit(const struct sl_code_limits *l)
{
	bool ok = true;
	rlim_t cpu = (rlim_t)(l->cpu_ms + 999) / 1000 + 1;

#if !defined(__SANITIZE_ADDRESS__)
	/* ASan reserves terabytes of shadow memory: no address-space cap there. */
	ok &= set_limit(RLIMIT_AS, (rlim_t)l->heap_bytes + AS_MARGIN);
#endif
	/* The soft CPU limit sends SIGXCPU (reported as "cpu"), one second
	 * after the engine's own CPU check should have stopped the program. */
	struct rlimit r = { cpu, cpu + 1 };
	ok &= setrlimit(RLIMIT_CPU, &r) == 0;
	ok &= set_limit(RLIMIT_FSIZE, 0);
	ok &= set_limit(RLIMIT_CORE, 0);
	ok &= set_limit(RLIMIT_NOFILE, 4);
	ok &= set_limit(RLIMIT_NPROC, 0);
	return ok ? SL_B_RLIMITS : 0;
}

int sl_kernel_landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_VERSION_FLAG);
	return abi < 0 ? 0 : (int)abi;
}

/* A ruleset that handles every access right the kernel knows and allows
 * none: no file can be opened, created, executed or renamed, and (ABI 4+)
 * no TCP port bound or connected, (ABI 6+) no abstract socket or signal
 * outside the domain. */
static bool landlock_deny_all(void)
{
	struct {
		uint64_t fs, net, scoped;
	} attr = { 0 };
	size_t size;
	int abi = sl_kernel_landlock_abi(), fd;

	if (abi < 1)
		return false;
	attr.fs = (1ull << 13) - 1;       /* ABI 1: execute .. make_sym */
	if (abi >= 2)
		attr.fs |= 1ull << 13;    /* refer */
	if (abi >= 3)
		attr.fs |= 1ull << 14;    /* truncate */
	if (abi >= 5)
		attr.fs |= 1ull << 15;    /* ioctl_dev */
	size = sizeof(uint64_t);
	if (abi >= 4) {
		attr.net = 3;             /* bind_tcp, connect_tcp */
		size = 2 * sizeof(uint64_t);
	}
	if (abi >= 6) {
		attr.scoped = 3;          /* abstract unix sockets, signals */
		size = 3 * sizeof(uint64_t);
	}
	fd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (fd < 0)
		return false;
	if (syscall(SYS_landlock_restrict_self, fd, 0) < 0) {
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

/* The filter, compiled once in the zygote (libseccomp takes a while to
 * generate it) and loaded by each worker with one prctl. */
static struct sock_fprog prebuilt;

/* What a running worker needs: its socket, memory, clocks, waiting, and exit. */
static scmp_filter_ctx allowlist(int fd)
{
#if defined(__SANITIZE_ADDRESS__)
	/* The sanitizer runtime makes calls of its own (signal stacks, thread
	 * ids, ...): in sanitizer builds a call outside the list fails with
	 * EPERM instead of killing the worker. Release builds kill. */
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ERRNO(EPERM));
#else
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_KILL_PROCESS);
#endif
	int rc = 0;

	if (!f)
		return NULL;
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(read), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fd));
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(write), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fd));
	/* Memory, never executable. */
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
			       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
			       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(munmap), 0);
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(mremap), 0);
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(brk), 0);
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(madvise), 0);
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(clock_gettime), 0);
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(gettimeofday), 0);
	/* Timers (setTimeout): waiting for the socket or for nothing, until
	 * a time. At most one descriptor, which can only be the socket. */
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(ppoll), 1, SCMP_A1(SCMP_CMP_LE, 1));
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(rt_sigreturn), 0);
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(exit), 0);
	rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(exit_group), 0);
#if defined(__SANITIZE_ADDRESS__)
	/* What the sanitizer runtime itself calls (seen with strace). */
	static const int san[] = { SCMP_SYS(sigaltstack), SCMP_SYS(gettid), SCMP_SYS(getpid),
				   SCMP_SYS(futex), SCMP_SYS(sched_yield), SCMP_SYS(rt_sigprocmask),
				   SCMP_SYS(rt_sigaction) };
	for (size_t i = 0; i < SL_COUNT(san); i++)
		rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, san[i], 0);
#endif
	if (rc != 0) {
		seccomp_release(f);
		return NULL;
	}
	return f;
}

bool sl_kernel_seccomp_prepare(int fd)
{
	scmp_filter_ctx f = allowlist(fd);
	int pipefd[2];
	char *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;

	if (!f)
		return false;
	/* libseccomp 2.5 exports only to a descriptor: read it back. */
	if (pipe(pipefd) < 0) {
		seccomp_release(f);
		return false;
	}
	if (seccomp_export_bpf(f, pipefd[1]) < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		seccomp_release(f);
		return false;
	}
	close(pipefd[1]);
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 4096;
			buf = sl_realloc(buf, cap);
		}
		n = read(pipefd[0], buf + len, cap - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(pipefd[0]);
	seccomp_release(f);
	if (len == 0 || len % sizeof(struct sock_filter) != 0) {
		free(buf);
		return false;
	}
	prebuilt.len = (unsigned short)(len / sizeof(struct sock_filter));
	prebuilt.filter = (struct sock_filter *)buf;
	return true;
}

static bool seccomp_allowlist(int fd)
{
	scmp_filter_ctx f;
	int rc;

	if (prebuilt.filter)
		return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prebuilt) == 0;
	f = allowlist(fd);
	if (!f)
		return false;
	rc = seccomp_load(f);
	seccomp_release(f);
	return rc == 0;
}

unsigned sl_kernel_lockdown(int fd)
{
	unsigned b = 0;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
		b |= SL_B_NO_NEW_PRIVS;
	if (landlock_deny_all())
		b |= SL_B_LANDLOCK;
	if (seccomp_allowlist(fd))
		b |= SL_B_SECCOMP;
	return b;
}

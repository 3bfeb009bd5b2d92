/* The zygote's launcher, in the gateway; see zygote.h. */
#include "sandbox/image.h"
#include "sandbox/zygote.h"
#include "sandbox/kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U /* Linux 6.3: executable even under vm.memfd_noexec=1 */
#endif

#define CTL_FD SL_ZYGOTE_CTL_FD
#define IMAGE_FD (CTL_FD + 1)
#define NLIMITS SL_ZYGOTE_NLIMITS
#define PAGE 4096u

int sl_zygote_image(void)
{
	static const unsigned char zeros[PAGE];
	size_t len, at = 0;
	const unsigned char *img = sl_sandbox_image(&len);
	int fd, high;

	if (!len)
		return -1;
	fd = memfd_create("sluice-sandbox", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (fd < 0 && errno == EINVAL) /* before Linux 6.3 */
		fd = memfd_create("sluice-sandbox", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)len) != 0)
		goto fail;
	/* The image is mostly the zeros between its 2 MiB-aligned segments:
	 * only runs of pages with a byte set are written, the rest stay
	 * holes that read as zeros and take no memory. */
	while (at < len) {
		size_t end = at;
		while (end < len) {
			size_t n = len - end < PAGE ? len - end : PAGE;
			if (!memcmp(img + end, zeros, n))
				break;
			end += n;
		}
		if (end > at && pwrite(fd, img + at, end - at, (off_t)at) != (ssize_t)(end - at))
			goto fail;
		at = end == at ? at + PAGE : end;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
		goto fail;
	/* Above the descriptors the launched child rearranges. */
	high = fcntl(fd, F_DUPFD_CLOEXEC, IMAGE_FD + 1);
	close(fd);
	return high;
fail:
	close(fd);
	return -1;
}

struct launch {
	int ctl;
	int image;
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
	/* The image (at IMAGE_FD or above, see sl_zygote_image) as IMAGE_FD,
	 * closed by the exec itself. */
	if (ln->image >= 0 && dup3(ln->image, IMAGE_FD, O_CLOEXEC) < 0)
		_exit(127);
	syscall(SYS_close_range, IMAGE_FD + 1, ~0u, 0u);
	/* Not the gateway's stdin and stdout (the MCP client) nor its stderr. */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
		_exit(127);
	if (ln->image >= 0)
		syscall(SYS_execveat, IMAGE_FD, "", ln->argv, envp, AT_EMPTY_PATH);
	/* No image, or the kernel would not run it (a memfd_noexec policy):
	 * sluice itself, whose zygote is the same code. */
	execve("/proc/self/exe", ln->argv, envp);
	_exit(127);
}

int sl_zygote_spawn(const struct sl_code_limits *l, int image, int *ctl, pid_t *pid, unsigned *ns,
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
	ln.image = image;
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

/* fork/exec of upstream servers; see spawn.h. */
#include "upstream/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

static const char *env_path(char *const *env)
{
	for (char *const *e = env; *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			return *e + 5;
	return "/usr/local/bin:/usr/bin:/bin";
}

static bool executable(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* Where execvpe would look, but with the child's PATH. */
static char *resolve(const char *cmd, char *const *env)
{
	const char *path, *end;
	if (strchr(cmd, '/'))
		return executable(cmd) ? sl_strdup(cmd) : NULL;
	for (path = env_path(env); ; path = end + 1) {
		char buf[PATH_MAX];
		end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? path : ".", cmd) < (int)sizeof(buf) &&
		    executable(buf))
			return sl_strdup(buf);
		if (!end)
			return NULL;
	}
}

static void close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
}

/* In the child, between fork and exec: only async-signal-safe calls. */
SL_NORETURN static void child(const char *file, char *const *argv, char *const *env,
			      const char *cwd, int in, int out, int err, int report, pid_t parent)
{
	sigset_t all;
	int e;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		goto fail;
	if (report != 3 && (dup2(report, 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0))
		goto fail;
	if (syscall(SYS_close_range, 4u, ~0u, 0u) < 0)
		for (int fd = 4; fd < 1024; fd++)
			close(fd);
	if (cwd && chdir(cwd) < 0)
		goto fail;
	execve(file, argv, env);
fail:
	e = errno;
	if (write(3, &e, sizeof(e)) < 0)
		_exit(126);
	_exit(127);
}

int sl_spawn(const char *cmd, char *const *args, char *const *env, const char *cwd,
	     struct sl_child *out, struct sl_err *err)
{
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 }, prep[2] = { -1, -1 };
	char *file = NULL, **argv = NULL;
	size_t nargs = 0;
	pid_t pid;
	int rc = SL_ERR_IO, e = 0;
	ssize_t n;

	file = resolve(cmd, env);
	if (!file) {
		sl_err_set(err, "command not found: %s", cmd);
		goto out;
	}
	while (args[nargs])
		nargs++;
	argv = sl_alloc((nargs + 2) * sizeof(char *));
	argv[0] = (char *)cmd;
	memcpy(argv + 1, args, nargs * sizeof(char *));

	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 ||
	    pipe2(perr, O_CLOEXEC) < 0 || pipe2(prep, O_CLOEXEC) < 0) {
		sl_err_set(err, "pipe: %s", strerror(errno));
		goto out;
	}
	pid_t parent = getpid();
	pid = fork();
	if (pid < 0) {
		sl_err_set(err, "fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		child(file, argv, env, cwd, pin[0], pout[1], perr[1], prep[1], parent);

	/* Also set the group from here: whichever runs first wins the race. */
	setpgid(pid, pid);
	close(prep[1]);
	prep[1] = -1;
	do
		n = read(prep[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	if (n == sizeof(e)) {
		sl_err_set(err, "cannot start %s: %s", cmd, strerror(e));
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		goto out;
	}
	out->pid = pid;
	out->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (out->pidfd >= 0)
		fcntl(out->pidfd, F_SETFD, FD_CLOEXEC);
	out->in = pin[1];
	out->out = pout[0];
	out->err = perr[0];
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	pin[0] = pin[1] = pout[0] = pout[1] = perr[0] = perr[1] = -1;
	rc = SL_OK;
out:
	close_pair(pin);
	close_pair(pout);
	close_pair(perr);
	close_pair(prep);
	free(argv);
	free(file);
	return rc;
}

void sl_spawn_kill(const struct sl_child *c, int sig)
{
	if (c->pid > 0 && kill(-c->pid, sig) < 0)
		kill(c->pid, sig);
}

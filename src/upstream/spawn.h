/*
 * Starting an upstream server process: its own process group, killed with
 * the gateway (PR_SET_PDEATHSIG), stdin/stdout/stderr on pipes, only those
 * fds open, and an exec failure reported back through a close-on-exec pipe
 * (h2o's spawn discipline) so "command not found" is an error, not a
 * mysterious exit.
 */
#ifndef SL_UPSTREAM_SPAWN_H
#define SL_UPSTREAM_SPAWN_H

#include "core/common.h"
#include <sys/types.h>

struct sl_child {
	pid_t pid;
	int pidfd; /* pollable, readable when the child exits; -1 if the kernel has none */
	int in;    /* the child's stdin (we write) */
	int out;   /* the child's stdout (we read) */
	int err;   /* the child's stderr (we read) */
};

/* Resolves cmd through the PATH in env (not the gateway's), starts it with
 * args (NULL-terminated, args[0] is argv[1]) in cwd (NULL: inherit).
 * Returns 0 and fills out, or SL_ERR_IO with err->msg. */
int sl_spawn(const char *cmd, char *const *args, char *const *env, const char *cwd,
	     struct sl_child *out, struct sl_err *err) SL_MUST_USE;

/* Signals the child's whole process group. */
void sl_spawn_kill(const struct sl_child *c, int sig);

#endif

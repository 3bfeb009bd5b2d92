/*
 * The zygote: a small process, started once by the gateway from a fresh
 * image of sluice (`sluice __zygote ...`, empty environment), inside new
 * user/pid/net/ipc/mount namespaces where the kernel allows them. It only
 * forks workers: each worker sets its resource limits, prepares a QuickJS
 * context, raises the kernel boundary and waits for its one program.
 *
 * Control protocol (SOCK_SEQPACKET, one struct sl_zmsg per message):
 *   gateway -> zygote  'F'            fork a worker
 *   zygote -> gateway  'W' pid        + SCM_RIGHTS [worker socket, worker pidfd]
 *   zygote -> gateway  'X' pid status a worker ended (the zygote reaps them)
 * The zygote is pid 1 of its pid namespace: when it ends, every worker ends.
 */
#ifndef SL_SANDBOX_ZYGOTE_H
#define SL_SANDBOX_ZYGOTE_H

#include "sandbox/worker.h"
#include <sys/types.h>

struct sl_zmsg {
	char type;
	int32_t pid;
	int32_t status;
};

/* Gateway side: starts the zygote. *ns is set to the namespaces it got. */
int sl_zygote_spawn(const struct sl_code_limits *l, int *ctl, pid_t *pid, unsigned *ns,
		    struct sl_err *err) SL_MUST_USE;

/* The zygote process: argv holds the limits after "__zygote". */
SL_NORETURN void sl_zygote_main(int argc, char **argv);

#endif

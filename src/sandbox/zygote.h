/*
 * The zygote: a small process, started once by the gateway from a fresh
 * image (`sluice __zygote ...`, empty environment), inside new
 * user/pid/net/ipc/mount namespaces where the kernel allows them. The image
 * is the sandbox's own static executable embedded in sluice (image.h), run
 * from a sealed memfd, or where there is none (sanitizer builds) or the
 * kernel will not run one, sluice itself: the same zygote either way. It only
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

/* The zygote's control socket, and how many limits its argv carries. */
#define SL_ZYGOTE_CTL_FD 3
#define SL_ZYGOTE_NLIMITS 11

/* Gateway side: the embedded image in a sealed memfd (close-on-exec, at a
 * descriptor above 4), to start zygotes from; -1 if this build has none or
 * the memfd cannot be made. */
int sl_zygote_image(void);
/* Gateway side: starts the zygote from image (or sluice itself if image is
 * -1 or will not run). *ns is set to the namespaces it got. */
int sl_zygote_spawn(const struct sl_code_limits *l, int image, int *ctl, pid_t *pid,
		    unsigned *ns, struct sl_err *err) SL_MUST_USE;

/* The zygote process: argv holds the limits after "__zygote". */
SL_NORETURN void sl_zygote_main(int argc, char **argv);

#endif

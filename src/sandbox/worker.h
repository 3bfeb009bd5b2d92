/*
 * The sandbox worker: runs one program in QuickJS and exits. It lives in a
 * one-shot process forked from the zygote; by the time it reads its program
 * its only open descriptor is the frame socket and the kernel boundary
 * (kernel.h) is in force.
 *
 * API (in the worker process):
 *   w = sl_worker_prepare(&limits);   runtime, context, tools and console
 *   ... the zygote applies the kernel boundary ...
 *   sl_worker_run(w, fd, boundaries);  READY -> RUN -> CALL/RESULT... -> DONE; never returns
 */
#ifndef SL_SANDBOX_WORKER_H
#define SL_SANDBOX_WORKER_H

#include "config/config.h"

struct sl_worker;

struct sl_worker *sl_worker_prepare(const struct sl_code_limits *l);
/* boundaries: the kernel boundaries in force, reported in the READY frame. */
SL_NORETURN void sl_worker_run(struct sl_worker *w, int fd, unsigned boundaries);

#endif

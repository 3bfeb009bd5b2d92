/*
 * The kernel boundary of code mode: what the operating system enforces on a
 * worker whatever the engine does.
 *
 *   namespaces  user, pid, net, ipc, mount: created once, for the zygote
 *   rlimits     address space, CPU, FSIZE 0, NOFILE, CORE 0, NPROC
 *   no_new_privs, then Landlock (deny all file access) where the kernel has it
 *   seccomp     an allowlist of the few calls a running worker makes; any
 *               other call kills the process
 *
 * Each is detected, applied when available, and reported: a kernel without
 * one still runs code mode with the rest, and says so (sluice doctor).
 */
#ifndef SL_SANDBOX_KERNEL_H
#define SL_SANDBOX_KERNEL_H

#include "sandbox/worker.h"

enum sl_boundary {
	SL_B_USERNS = 1 << 0,
	SL_B_PIDNS = 1 << 1,
	SL_B_NETNS = 1 << 2,
	SL_B_IPCNS = 1 << 3,
	SL_B_MNTNS = 1 << 4,
	SL_B_RLIMITS = 1 << 5,
	SL_B_NO_NEW_PRIVS = 1 << 6,
	SL_B_LANDLOCK = 1 << 7,
	SL_B_SECCOMP = 1 << 8,
	SL_B_ALL = (1 << 9) - 1,
};

/* Name of one boundary bit ("seccomp", "landlock", ...); NULL if unknown. */
const char *sl_boundary_name(unsigned bit);
/* Parses a boundary name; 0 if unknown. */
unsigned sl_boundary_parse(const char *name);

/* In a new worker, before the engine allocates: resource limits. */
unsigned sl_kernel_limit(const struct sl_code_limits *l);
/* In a new worker, after the engine is prepared: no_new_privs, Landlock,
 * seccomp (in that order). Returns the boundaries now in force; fd is the
 * only descriptor the worker may read or write. */
unsigned sl_kernel_lockdown(int fd);
/* In the zygote: compiles the seccomp filter for workers whose socket is
 * fd, once; sl_kernel_lockdown then only loads it. */
bool sl_kernel_seccomp_prepare(int fd);
/* The Landlock ABI the kernel offers, 0 if none. */
int sl_kernel_landlock_abi(void);

#endif

/*
 * sluice doctor: what the kernel offers code mode on this machine, and
 * which boundaries a real worker ends up with (it runs `return 1`). For each
 * boundary missing it says why and the setting that restores it, probing
 * the same system calls the sandbox makes: in a container the usual cause
 * is the runtime's default seccomp profile (docs/CONTAINERS.md).
 */
#include "cli/cli.h"
#include "gateway/codemode.h"
#include "sandbox/kernel.h"
#include "sandbox/sandbox.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif

/* The namespaces the zygote is started with (src/sandbox/zygote.c), which
 * deploy/seccomp/sluice.json allows and nothing wider. */
#define SANDBOX_NS (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWNS)
#define NS_BOUNDARIES (SL_B_USERNS | SL_B_PIDNS | SL_B_NETNS | SL_B_IPCNS | SL_B_MNTNS)

#define USE_PROFILE                                                                  \
	"run the container with deploy/seccomp/sluice.json, Docker's default profile "   \
	"plus one rule for clone() (Kubernetes: securityContext.seccompProfile: {type: " \
	"Localhost, localhostProfile: profiles/sluice.json} with the file at "           \
	"/var/lib/kubelet/seccomp/profiles/sluice.json on each node, as "                \
	"deploy/kubernetes has it; docker or podman run --security-opt "                 \
	"seccomp=sluice.json)"

struct doctor {
	struct sl_gateway *gw;
	int rc;
};

/* The first line of a file under /proc, without its newline; "" if unreadable. */
static const char *proc_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "re");
	buf[0] = '\0';
	if (f && fgets(buf, (int)n, f))
		buf[strcspn(buf, "\n")] = '\0';
	if (f)
		fclose(f);
	return buf;
}

/* The value of "Key:" in /proc/self/status; "" if absent. */
static const char *status_field(const char *key, char *buf, size_t n)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	size_t kl = strlen(key);

	buf[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
			const char *v = line + kl + 1;
			v += strspn(v, " \t");
			snprintf(buf, n, "%.*s", (int)strcspn(v, "\n"), v);
			break;
		}
	}
	if (f)
		fclose(f);
	return buf;
}

/* clone() as the zygote's launcher makes it, in a child that exits at once:
 * 0, the errno that refused it, or minus the signal that killed the caller
 * (a profile whose action is to kill). The call is made in a forked
 * process, so that such a profile kills that process and not doctor. */
static int probe_clone(unsigned long flags)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		long p = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
		int e = p < 0 ? errno : 0;
		if (p == 0)
			_exit(0);
		if (p > 0)
			waitpid((pid_t)p, NULL, 0);
		_exit(e & 0xff);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return errno ? errno : ECHILD;
	return WIFSIGNALED(st) ? -WTERMSIG(st) : WEXITSTATUS(st);
}

static const char *refusal(int e, char *buf, size_t n)
{
	if (e < 0)
		snprintf(buf, n, "the process is killed by signal %d", -e);
	else
		snprintf(buf, n, "%s", strerror(e));
	return buf;
}

/* Why the namespaces are missing, and what restores them. */
static void why_namespaces(void)
{
	char a[64], b[64], r[80];
	int e = probe_clone(SANDBOX_NS);

	printf("  userns pidns netns ipcns mountns: ");
	if (e == 0) {
		printf("clone() with the sandbox's namespaces works now; the zygote was refused "
		       "earlier (see the gateway's log)\n");
		return;
	}
	/* CLONE_NEWUSER with CLONE_FS is refused by the kernel with EINVAL
	 * before any permission check; a seccomp filter decides at entry,
	 * before the kernel sees the flags. So any other answer is a filter's. */
	if (probe_clone(SANDBOX_NS | CLONE_FS) != EINVAL) {
		printf("a seccomp profile (the container runtime's default) refuses clone() with "
		       "CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWNS (%s).\n"
		       "    To restore them: " USE_PROFILE ".\n", refusal(e, r, sizeof(r)));
		return;
	}
	printf("the kernel refuses clone() with CLONE_NEWUSER (%s).\n    To restore them: ",
	       refusal(e, r, sizeof(r)));
	if (strcmp(proc_line("/proc/sys/user/max_user_namespaces", a, sizeof(a)), "0") == 0 || e == ENOSPC)
		printf("raise the host's user.max_user_namespaces (now %s), e.g. sysctl -w "
		       "user.max_user_namespaces=15000\n", a[0] ? a : "unknown");
	else if (strcmp(proc_line("/proc/sys/kernel/unprivileged_userns_clone", a, sizeof(a)), "0") == 0)
		printf("set kernel.unprivileged_userns_clone=1 on the host (sysctl)\n");
	else if (strcmp(proc_line("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", b,
				  sizeof(b)), "1") == 0)
		printf("the host's AppArmor restricts user namespaces "
		       "(kernel.apparmor_restrict_unprivileged_userns=1): run the container under an "
		       "AppArmor profile that has the userns rule, or set that sysctl to 0\n");
	else
		printf("allow unprivileged user namespaces to this process (a chroot, or a security "
		       "module, refuses them)\n");
}

/* Why a boundary other than the namespaces is missing. */
static void why(unsigned bit)
{
	char a[64];
	long r;
	int e;

	printf("  %s: ", sl_boundary_name(bit));
	switch (bit) {
	case SL_B_LANDLOCK:
		r = syscall(SYS_landlock_create_ruleset, NULL, 0, 1u);
		e = errno;
		if (r >= 0)
			printf("Landlock answers now (ABI %ld); the worker's ruleset was refused\n", r);
		else if (e == EOPNOTSUPP)
			printf("Landlock is built into the kernel but not enabled.\n    To restore it: "
			       "add landlock to the kernel's lsm= boot parameter\n");
		else if (e == ENOSYS)
			printf("the kernel has no Landlock.\n    To restore it: Linux 5.13 or later "
			       "built with CONFIG_SECURITY_LANDLOCK (or a seccomp profile answers ENOSYS "
			       "for landlock_create_ruleset: " USE_PROFILE ")\n");
		else
			printf("landlock_create_ruleset() is refused (%s).\n    To restore it: " USE_PROFILE
			       "\n", strerror(e));
		break;
	case SL_B_SECCOMP:
		if (!proc_line("/proc/sys/kernel/seccomp/actions_avail", a, sizeof(a))[0])
			printf("the kernel has no seccomp filters.\n    To restore it: a kernel built "
			       "with CONFIG_SECCOMP_FILTER\n");
		else
			printf("the worker could not load its filter (prctl(PR_SET_SECCOMP) or seccomp() "
			       "refused).\n    To restore it: " USE_PROFILE "\n");
		break;
	case SL_B_NO_NEW_PRIVS:
		printf("prctl(PR_SET_NO_NEW_PRIVS) was refused.\n    To restore it: " USE_PROFILE "\n");
		break;
	default:
		printf("setrlimit() was refused.\n    To restore it: " USE_PROFILE "\n");
		break;
	}
}

static void on_stopped(void *ctx)
{
	struct doctor *dr = ctx;
	sl_gateway_free(dr->gw);
}

static void on_done(void *ctx, struct sl_program *p, struct sl_gen *gen)
{
	struct doctor *dr = ctx;
	const struct sl_program_result *r = sl_program_result(p);
	unsigned have = sl_sandbox_boundaries(dr->gw->sandbox);
	char buf[256];

	printf("a worker ran `return 1`: %s%s%s\n", r->ok ? "ok, " : "FAILED: ",
	       r->ok ? "result " : r->kind, r->ok ? r->text : "");
	if (!r->ok) {
		printf("  %s\n", r->text);
		dr->rc = 1;
	}
	printf("\nboundaries in force for each program:\n");
	printf("  engine: QuickJS heap limit %zu MiB, stack %zu KiB, interrupt at the deadline\n",
	       dr->gw->gen->cfg->code.heap_bytes >> 20, dr->gw->gen->cfg->code.stack_bytes >> 10);
	for (unsigned bit = 1; bit < SL_B_ALL; bit <<= 1)
		printf("  %-13s %s\n", sl_boundary_name(bit), have & bit ? "yes" : "NO");
	if (have != (unsigned)SL_B_ALL) {
		printf("\nmissing, and what restores it:\n");
		if ((have & NS_BOUNDARIES) != NS_BOUNDARIES)
			why_namespaces();
		for (unsigned bit = SL_B_RLIMITS; bit < SL_B_ALL; bit <<= 1)
			if (!(have & bit))
				why(bit);
	}
	if (dr->gw->gen->cfg->code_require & ~have) {
		printf("\nmissing boundaries required by sluice.codeMode.require: %s\n",
		       sl_sandbox_describe(dr->gw->gen->cfg->code_require & ~have, buf, sizeof(buf)));
		dr->rc = 1;
	}
	fflush(stdout);
	sl_program_free(p);
	sl_gateway_stop(dr->gw, on_stopped, dr);
}

static void on_settled(void *ctx)
{
	struct doctor *dr = ctx;
	if (!dr->gw->sandbox) {
		printf("code mode is unavailable: %s\n", dr->gw->code_error);
		dr->rc = 1;
		sl_gateway_stop(dr->gw, on_stopped, dr);
		return;
	}
	sl_codemode_run(dr->gw, NULL, "return 1", 8, on_done, NULL, dr);
}

int sl_cli_doctor(struct sl_gen *gen)
{
	uv_loop_t *loop = uv_default_loop();
	struct doctor dr = { 0 };
	FILE *f;
	char line[256];
	bool filtered;

	printf("sluice %s\n\nkernel:\n", SL_VERSION);
	f = fopen("/proc/sys/kernel/osrelease", "re");
	if (f && fgets(line, sizeof(line), f))
		printf("  release       %s", line);
	if (f)
		fclose(f);
	f = fopen("/proc/sys/kernel/seccomp/actions_avail", "re");
	printf("  seccomp       %s", f && fgets(line, sizeof(line), f) ? line : "not available\n");
	if (f)
		fclose(f);
	printf("  landlock ABI  %d%s\n", sl_kernel_landlock_abi(),
	       sl_kernel_landlock_abi() ? "" : " (not available)");
	f = fopen("/proc/sys/user/max_user_namespaces", "re");
	printf("  user namespaces allowed: %s", f && fgets(line, sizeof(line), f) ? line : "unknown\n");
	if (f)
		fclose(f);
	/* What the process itself runs under: in a container, the runtime's
	 * seccomp profile (mode 2) and capabilities. */
	filtered = strcmp(status_field("Seccomp", line, sizeof(line)), "2") == 0;
	printf("\nthis process:\n  seccomp       %s",
	       filtered ? "filtered" : strcmp(line, "0") == 0 ? "none" : line[0] ? line : "unknown");
	if (filtered && status_field("Seccomp_filters", line, sizeof(line))[0])
		printf(" (%s filter%s)", line, strcmp(line, "1") ? "s" : "");
	printf("\n  capabilities  %s\n",
	       strcmp(status_field("CapEff", line, sizeof(line)), "0000000000000000") == 0 ? "none" : line);
	printf("\n");
	fflush(stdout);

	/* main gave it no upstream: none is needed to look at the sandbox. */
	dr.gw = sl_gateway_new(loop, gen);
	sl_gateway_start(dr.gw, NULL);
	sl_gateway_when_settled(dr.gw, on_settled, &dr);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	return dr.rc;
}

/* Between sandbox.c (the pool) and program.c (one execution); not public:
 * the queues of programs live here, and only src/sandbox/ (and its unit
 * tests, which build a sandbox by hand) sees them. */
#ifndef SL_SANDBOX_INTERNAL_H
#define SL_SANDBOX_INTERNAL_H

#include "sandbox/sandbox.h"
#include "core/list.h"
#include "core/map.h"

#define SL_POOL_MAX 16

struct sl_wslot {
	int fd;
	int pidfd;
	pid_t pid;
};

struct sl_sandbox {
	uv_loop_t *loop;
	struct sl_code_limits lim;
	int image;                /* the sandbox's executable (sl_zygote_image), or -1 */
	int ctl;
	pid_t zygote;
	uv_poll_t *ctl_poll;      /* one per zygote: a restart makes a new one */
	bool ctl_open;
	unsigned ns;              /* namespaces the zygote got */
	unsigned boundaries;      /* everything in force, from the last READY */
	unsigned require;         /* boundaries a program must have, or it is refused */
	struct sl_wslot ready[SL_POOL_MAX];
	int nready;
	int requested;            /* forks asked for, not yet received */
	int pool;
	/* Admission (codeMode.maxConcurrent, maxQueued): a program holds one
	 * of max_running slots from the moment it is admitted until it ends
	 * (waiting for its worker, then running); the others wait in queued,
	 * first come first served, at most max_queued of them. */
	unsigned max_running, max_queued;
	unsigned nslots, nqueued;    /* slots held; programs in queued */
	/* Per caller (codeMode.maxConcurrentPerCaller, maxQueuedPerCaller): a
	 * program whose host names an owner holds at most caller_running of
	 * the slots and caller_queued of the queue with that owner's other
	 * programs. owners: owner key -> struct sl_owner, one per owner with a
	 * program here (so at most max_running + max_queued of them). */
	unsigned caller_running, caller_queued;
	struct sl_map owners;
	uint64_t admits;             /* slots given so far: the order owners were last served in */
	/* A program is in at most one of these. */
	struct sl_list queued;       /* programs waiting for a slot, oldest first */
	struct sl_list waiting;      /* programs with a slot, waiting for a worker, oldest first */
	struct sl_list running;      /* programs with a worker, newest first */
	uint64_t next_id;
	uint64_t started_ms;      /* when the zygote was last started */
	char error[512];
};

/* The programs of one caller, while it has any (program.c). */
struct sl_owner {
	unsigned running, queued;    /* slots held; programs in sb->queued */
	uint64_t served;             /* sb->admits when one of its programs last got a slot */
};

/* program.c */
/* p leaves sb->waiting (if it was there) for sb->running. */
void sl_program_take_worker(struct sl_program *p, struct sl_wslot *w);
void sl_program_exited(struct sl_program *p, int status);
/* The program linked by n in sb->queued, waiting or running; NULL for NULL. */
struct sl_program *sl_program_of(struct sl_list *n);
pid_t sl_program_pid(const struct sl_program *p);

/* sandbox.c */
/* Pops a prepared worker, or returns false; either way asks for more. */
bool sl_sandbox_pop(struct sl_sandbox *sb, struct sl_wslot *w);

#endif

/* Between sandbox.c (the pool) and program.c (one execution); not public. */
#ifndef SL_SANDBOX_INTERNAL_H
#define SL_SANDBOX_INTERNAL_H

#include "sandbox/sandbox.h"

/* program.c */
void sl_program_take_worker(struct sl_program *p, struct sl_wslot *w);
void sl_program_exited(struct sl_program *p, int status);
struct sl_program *sl_program_next(struct sl_program *p);
pid_t sl_program_pid(const struct sl_program *p);
/* Removes p from the list at *head (sb->waiting or sb->running). */
void sl_program_unqueue(struct sl_sandbox *sb, struct sl_program **head, struct sl_program *p);

/* sandbox.c */
/* Pops a prepared worker, or returns false; either way asks for more. */
bool sl_sandbox_pop(struct sl_sandbox *sb, struct sl_wslot *w);

#endif

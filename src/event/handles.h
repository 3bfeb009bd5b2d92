/*
 * A handle set: the libuv handles an object owns, counted as they are added
 * and closed together, with one callback when the last close has completed.
 * It replaces hand-kept counts ("handles = 5", "if (--open == 0) free(x)")
 * that must be changed wherever a handle is added or removed.
 *
 * An object cannot free itself until libuv has called every close callback
 * of its handles; the set does that waiting. A member closed early (a pipe
 * at EOF, a socket curl let go) is closed with sl_handles_close_one and may
 * carry memory to free once it is closed (the struct around a transient
 * handle).
 *
 * A closed member's handle->data belongs to the set: libuv calls nothing
 * else of a closing handle, so the owner's callbacks never see it.
 *
 * API:
 *   struct x { struct sl_handles handles; uv_timer_t t; uv_poll_t p; };
 *   sl_handles_init(&x->handles);
 *   uv_timer_init(loop, &x->t); sl_handles_add(&x->handles, &x->t);
 *   ...
 *   sl_handles_close_one(&x->handles, &x->p, NULL);   early, optional
 *   sl_handles_close(&x->handles, free, x);           free(x) after the last close
 */
#ifndef SL_EVENT_HANDLES_H
#define SL_EVENT_HANDLES_H

#include "core/common.h"
#include <uv.h>

struct sl_handle_member {
	uv_handle_t *h;
	void *free_after; /* freed once h is closed; NULL: none */
	bool closing;
};

struct sl_handles {
	struct sl_handle_member *m;
	size_t n, cap;
	bool ending;              /* sl_handles_close was called */
	void (*done)(void *arg);
	void *arg;
};

void sl_handles_init(struct sl_handles *s);
/* Adds h, an initialised handle (uv_*_init returned 0). */
void sl_handles_add(struct sl_handles *s, void *h);
/* Closes member h now; free_after (may be NULL) is freed once it is closed.
 * Nothing happens if h is already closing or not a member. */
void sl_handles_close_one(struct sl_handles *s, void *h, void *free_after);
/* Closes every member not closed yet. done(arg) runs once, after the last
 * close callback (at once, before returning, if the set is empty); the set
 * is disposed of before, so done may free the memory that holds it. */
void sl_handles_close(struct sl_handles *s, void (*done)(void *arg), void *arg);

#endif

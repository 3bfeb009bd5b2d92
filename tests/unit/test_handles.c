/* Unit tests of src/event/handles.c on a real libuv loop. */
#include "unit.h"

#include "event/handles.h"

#include <stdlib.h>

struct owner {
	struct sl_handles handles;
	uv_timer_t a, b;
	uv_idle_t c;
	int done;
};

static void on_done(void *arg)
{
	struct owner *o = arg;
	o->done++;
	/* Every member's close callback has run: the loop has nothing left. */
	CHECK(!uv_is_active((uv_handle_t *)&o->a));
	CHECK(o->handles.n == 0 && o->handles.m == NULL);
}

static void on_idle(uv_idle_t *h)
{
}

TEST(handles_close_all_calls_back_after_the_last_close)
{
	uv_loop_t loop;
	struct owner o = { 0 };
	uv_timer_t *transient = malloc(sizeof(*transient));

	uv_loop_init(&loop);
	sl_handles_init(&o.handles);
	uv_timer_init(&loop, &o.a);
	sl_handles_add(&o.handles, &o.a);
	uv_timer_init(&loop, &o.b);
	sl_handles_add(&o.handles, &o.b);
	uv_idle_init(&loop, &o.c);
	sl_handles_add(&o.handles, &o.c);
	uv_idle_start(&o.c, on_idle);
	uv_timer_init(&loop, transient);
	sl_handles_add(&o.handles, transient);
	CHECK_INT(o.handles.n, 4);

	/* Closed early, its memory freed with it (ASan checks both). */
	sl_handles_close_one(&o.handles, transient, transient);
	sl_handles_close_one(&o.handles, transient, NULL); /* twice: nothing */
	uv_run(&loop, UV_RUN_NOWAIT);
	CHECK_INT(o.handles.n, 3);
	CHECK_INT(o.done, 0);

	sl_handles_close_one(&o.handles, &o.b, NULL);
	sl_handles_close(&o.handles, on_done, &o);
	CHECK_INT(o.done, 0); /* close callbacks come from the loop */
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(o.done, 1);
	CHECK_INT(uv_loop_close(&loop), 0);
}

TEST(handles_empty_set_calls_back_at_once)
{
	struct owner o = { 0 };
	sl_handles_init(&o.handles);
	sl_handles_close(&o.handles, on_done, &o);
	CHECK_INT(o.done, 1);
}

/* Unit tests of src/event/handles.c and write.c on a real libuv loop. */
#include "unit.h"

#include "event/handles.h"
#include "event/write.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* A line with a blob's bytes spliced in goes out as one message, in order,
 * and the write holds its reference until it is written. */
TEST(write_spliced_sends_three_parts_and_drops_its_reference)
{
	uv_loop_t loop;
	uv_pipe_t out;
	int fds[2];
	char *line = sl_strdup("{\"tools\":[]}\n"), *data = sl_strdup("xx{\"a\":1},{\"b\":2}yy");
	struct sl_blob *k = sl_blob_new(data, strlen(data));
	char got[64];
	ssize_t n;

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	uv_loop_init(&loop);
	uv_pipe_init(&loop, &out, 0);
	CHECK_INT(uv_pipe_open(&out, fds[0]), 0);
	/* At line[10] (inside the brackets), bytes [2, 17) of the blob. */
	CHECK_INT(sl_write_spliced((uv_stream_t *)&out, line, strlen(line), 10, sl_blob_ref(k), 2,
				   15), SL_OK);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(k->refs, 1);
	n = read(fds[1], got, sizeof(got) - 1);
	CHECK_INT(n, 28);
	got[n > 0 ? n : 0] = '\0';
	CHECK_STR(got, "{\"tools\":[{\"a\":1},{\"b\":2}]}\n");
	sl_blob_unref(k);
	uv_close((uv_handle_t *)&out, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	close(fds[1]);
}

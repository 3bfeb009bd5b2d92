/*
 * The handle set. See handles.h.
 */
#include "event/handles.h"

#include <stdlib.h>

void sl_handles_init(struct sl_handles *s)
{
	*s = (struct sl_handles){ 0 };
}

void sl_handles_add(struct sl_handles *s, void *h)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 4;
		s->m = sl_realloc(s->m, s->cap * sizeof(*s->m));
	}
	s->m[s->n++] = (struct sl_handle_member){ .h = h };
}

static struct sl_handle_member *member(struct sl_handles *s, const uv_handle_t *h)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->m[i].h == h)
			return &s->m[i];
	return NULL;
}

/* The last member gone after sl_handles_close: the owner may go too. */
static void finish(struct sl_handles *s)
{
	void (*done)(void *) = s->done;
	void *arg = s->arg;
	free(s->m);
	*s = (struct sl_handles){ 0 };
	done(arg);
}

static void on_closed(uv_handle_t *h)
{
	struct sl_handles *s = h->data;
	struct sl_handle_member *m = member(s, h);

	free(m->free_after);
	*m = s->m[--s->n];
	if (s->ending && s->n == 0)
		finish(s);
}

static void close_member(struct sl_handles *s, struct sl_handle_member *m, void *free_after)
{
	m->closing = true;
	m->free_after = free_after;
	m->h->data = s;
	uv_close(m->h, on_closed);
}

void sl_handles_close_one(struct sl_handles *s, void *h, void *free_after)
{
	struct sl_handle_member *m = member(s, h);
	if (m && !m->closing)
		close_member(s, m, free_after);
}

void sl_handles_close(struct sl_handles *s, void (*done)(void *arg), void *arg)
{
	s->ending = true;
	s->done = done;
	s->arg = arg;
	if (s->n == 0) {
		finish(s);
		return;
	}
	for (size_t i = 0; i < s->n; i++)
		if (!s->m[i].closing)
			close_member(s, &s->m[i], NULL);
}

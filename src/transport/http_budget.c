/*
 * The memory budget (sluice.limits.maxSessionBytes, maxBufferedBytes;
 * docs/internals/HTTP.md, "Bounds"): the one place held bytes are counted,
 * per stream, per session and in all, and the order in which held events
 * are given up when a bound is reached (detached streams' histories, then
 * backlog lines).
 */
#include "transport/http_int.h"
#include "core/log.h"

#include <malloc.h>
#include <stdlib.h>

/* ---- the memory budget (sluice.limits.maxSessionBytes, maxBufferedBytes) ----- */

/* What a line costs the budget: its text and its node as the allocator
 * holds them (usable size and chunk header: for the many small events of a
 * progress flood that is about a third more than the bytes themselves). */
size_t http_cost(const struct line *l)
{
	return malloc_usable_size((void *)l) + malloc_usable_size(l->data) + 2 * 2 * sizeof(size_t);
}

/* The one place held bytes are counted: in all, in the stream (whose bytes
 * leave its session with it, see http_stream_unlink) and in its session. A
 * request body has neither stream nor session; a backlog line no stream. */
void http_charge(struct sl_http *h, struct hsess *hs, struct stream *st, size_t n)
{
	h->bytes += n;
	if (h->bytes > h->bytes_peak)
		h->bytes_peak = h->bytes;
	if (st) {
		st->bytes += n;
		hs = st->hs;
	}
	if (hs)
		hs->bytes += n;
}

void http_release(struct sl_http *h, struct hsess *hs, struct stream *st, size_t n)
{
	h->bytes -= n;
	if (st) {
		st->bytes -= n;
		hs = st->hs;
	}
	if (hs)
		hs->bytes -= n;
}

static enum bound over(const struct sl_http *h, const struct hsess *hs, size_t n)
{
	if (hs && hs->bytes + n > h->lim->max_session_bytes)
		return OVER_SESSION;
	if (h->bytes + n > h->lim->max_buffered_bytes)
		return OVER_ALL;
	return FITS;
}

/* Why new work is refused at a bound; owned by the caller. */
char *http_busy_why(const struct sl_http *h, enum bound b)
{
	if (b == OVER_SESSION)
		return sl_printf("busy: sluice.limits.maxSessionBytes (%zu bytes) reached",
				 h->lim->max_session_bytes);
	return sl_printf("busy: sluice.limits.maxBufferedBytes (%zu bytes) reached",
			 h->lim->max_buffered_bytes);
}

void http_lines_release(struct stream *st, struct line *l)
{
	while (l) {
		struct line *n = l->next;
		http_release(st->h, NULL, st, http_cost(l));
		free(l->data);
		free(l);
		l = n;
	}
}

void http_detached_add(struct stream *st)
{
	struct hsess *hs = st->hs;
	st->detached = true;
	sl_list_push_back(&hs->detached, &st->dlink);
}

/* Takes st off its session's list of streams to give up first. */
void http_detached_del(struct stream *st)
{
	sl_list_remove(&st->dlink);
}

void http_hist_drop_oldest(struct stream *st)
{
	struct line *old = st->hist;
	st->hist = old->next;
	if (!st->hist)
		st->hist_tail = &st->hist;
	st->hist_bytes -= old->len;
	st->dropped = old->n;
	old->next = NULL;
	http_lines_release(st, old);
}

/* Gives up a detached stream's history: a resumption of it fails from now
 * on. A stream still waiting for its answer stays (it counts as a request
 * in flight) and is freed once answered; any other goes now. */
static void forget(struct stream *st)
{
	sl_log(SL_LOG_DEBUG, "http: session %.8s…: stream %u's history given up to the memory budget",
	       st->hs->id, st->no);
	http_detached_del(st);
	st->lost = true;
	http_lines_release(st, st->hist);
	st->hist = NULL;
	st->hist_tail = &st->hist;
	st->hist_bytes = 0;
	if (st->answered || st->is_get)
		http_stream_free(st);
}

void http_backlog_drop_oldest(struct hsess *hs)
{
	struct line *l = hs->backlog;
	hs->backlog = l->next;
	if (!hs->backlog)
		hs->backlog_tail = &hs->backlog;
	hs->nbacklog--;
	hs->backlog_bytes -= http_cost(l);
	http_release(hs->h, hs, NULL, http_cost(l));
	free(l->data);
	free(l);
}

/* The oldest detached stream of hs other than keep, or NULL. */
static struct stream *to_give(const struct hsess *hs, const struct stream *keep)
{
	struct sl_list *n = sl_list_first(&hs->detached);
	if (n && sl_list_entry(n, struct stream, dlink) == keep)
		n = n->next != &hs->detached ? n->next : NULL;
	return n ? sl_list_entry(n, struct stream, dlink) : NULL;
}

static bool can_give(const struct hsess *hs, const struct stream *keep)
{
	return to_give(hs, keep) || hs->backlog;
}

/* The order at a bound (docs/internals/HTTP.md, "Bounds"): the oldest
 * detached stream's history, then the oldest backlog line; of hs when its
 * own bound is hit, else of the session holding the most that has either.
 * keep (being charged) is never given up. False when nothing is left. */
static bool make_room(struct sl_http *h, struct hsess *hs, const struct stream *keep)
{
	struct stream *d;
	struct sl_list *n;
	if (!hs)
		sl_list_each(n, &h->sessions) {
			struct hsess *x = sl_list_entry(n, struct hsess, link);
			if (can_give(x, keep) && (!hs || x->bytes > hs->bytes))
				hs = x;
		}
	if (!hs)
		return false;
	d = to_give(hs, keep);
	if (d) {
		forget(d);
		return true;
	}
	if (hs->backlog) {
		http_backlog_drop_oldest(hs);
		return true;
	}
	return false;
}

/* Charges n bytes to st (or to hs, or in all only when both are NULL),
 * making room in the order above; at a bound that nothing more can be
 * given up for, charges nothing and says which bound. */
enum bound http_reserve(struct sl_http *h, struct hsess *hs, struct stream *st, size_t n)
{
	enum bound b;
	if (st)
		hs = st->hs;
	while ((b = over(h, hs, n)) != FITS && make_room(h, b == OVER_SESSION ? hs : NULL, st))
		;
	if (b == FITS)
		http_charge(h, hs, st, n);
	return b;
}

/*
 * The audit sinks' queue (audit_sink.h): records in order, bounded by
 * count and bytes, counted in the process's registry as they go (sent,
 * dropped, and how many wait).
 */
#include "stages/audit_sink.h"

#include <stdlib.h>
#include <string.h>

void audit_queue_init(struct audit_queue *q, enum sl_metrics_sink sink, size_t max_n,
		      size_t max_bytes)
{
	*q = (struct audit_queue){ .max_n = max_n, .max_bytes = max_bytes, .sink = sink };
	sl_list_init(&q->recs);
}

static void gauge(struct audit_queue *q)
{
	if (q->metrics)
		q->metrics->audit_queued[q->sink] = q->n;
}

bool audit_queue_put(struct audit_queue *q, struct sl_metrics *m, const char *data, size_t len)
{
	struct audit_rec *r;

	if (!q->metrics && m)
		q->metrics = sl_metrics_ref(m);
	if (q->n >= q->max_n || len > q->max_bytes - q->bytes) {
		if (q->metrics)
			q->metrics->audit_dropped[q->sink]++;
		return false;
	}
	r = sl_alloc(sizeof(*r) + len);
	r->len = len;
	memcpy(r->data, data, len);
	sl_list_push_back(&q->recs, &r->link);
	q->n++;
	q->bytes += len;
	gauge(q);
	return true;
}

struct audit_rec *audit_queue_head(struct audit_queue *q)
{
	return q->n ? sl_list_entry(q->recs.next, struct audit_rec, link) : NULL;
}

void audit_queue_take(struct audit_queue *q, bool sent)
{
	struct audit_rec *r = audit_queue_head(q);

	if (!r)
		return;
	sl_list_remove(&r->link);
	q->n--;
	q->bytes -= r->len;
	free(r);
	if (q->metrics)
		(sent ? q->metrics->audit_sent : q->metrics->audit_dropped)[q->sink]++;
	gauge(q);
}

void audit_queue_dispose(struct audit_queue *q)
{
	while (q->n)
		audit_queue_take(q, false);
	sl_metrics_unref(q->metrics);
	q->metrics = NULL;
}

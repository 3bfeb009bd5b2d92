/*
 * The process's counters: tool calls by server, tool, origin and outcome,
 * call latency per server, programs by outcome and failure kind, cache
 * lookups, redactions and guard verdicts. One registry per process, made
 * with the first generation and handed to every later one (gen.h), so a
 * reload never resets a count; the pipeline's stages add to it through
 * their call (c->gen->metrics), a program's output or a peer's text
 * (o->metrics, p->metrics), and nothing reads it to decide anything.
 *
 * Two readers, one copy of each count: GET /metrics renders it in the
 * Prometheus text format (gateway/metrics.c adds the gauges the gateway
 * owns), and the telemetry stage exports the same counters over OTLP.
 *
 * Bounds (docs/METRICS.md): a tool the server does not advertise (not in
 * the list the gateway holds: a name a caller made up) counts under
 * (server, "_other") from the start; at most max_series (sluice.limits.
 * maxMetricSeries) distinct (server, tool) pairs; a new pair past it counts
 * under (server, "_other"), at most SL_METRICS_OTHER_MAX such servers, and
 * past those under ("_other", "_other"). At most SL_METRICS_SERVERS_MAX
 * latency histograms, then server="_other". A server or tool name is kept
 * to its first SL_METRICS_LABEL_MAX bytes (cut at a character boundary).
 *
 * API:
 *   m = sl_metrics_new(max_series);     sl_metrics_ref(m) / sl_metrics_unref(m)
 *   sl_metrics_call(m, c);              a finished call (the telemetry stage's finish)
 *   sl_metrics_program(m, o);           a finished program (its output hook)
 *   sl_metrics_redacted(m, where, n);   sl_metrics_guard(m, where, withheld);
 *   sl_metrics_work(m, kind, n);        work on tool definitions (by catalog change)
 *   m->audit_sent[sink]++ ...           the audit sinks count in place (audit_sink.c)
 *   sl_metrics_render(m, &buf);         the families, Prometheus text format 0.0.4
 */
#ifndef SL_PIPELINE_METRICS_H
#define SL_PIPELINE_METRICS_H

#include "core/buf.h"
#include "core/map.h"

struct sl_call;
struct sl_output;

#define SL_METRICS_NORIGIN 3   /* enum sl_origin */
#define SL_METRICS_NOUTCOME 7  /* enum sl_outcome, pending included */
#define SL_METRICS_NBOUNDS 17  /* latency buckets, +Inf aside */
#define SL_METRICS_NPROGRAM 12 /* sl_metrics_program_outcomes */
#define SL_METRICS_LABEL_MAX 128
#define SL_METRICS_OTHER_MAX 64
#define SL_METRICS_SERVERS_MAX 256

/* Upper bounds of the latency buckets, in seconds: 100 µs to 30 s. */
extern const double sl_metrics_bounds[SL_METRICS_NBOUNDS];
/* "ok", "cancelled", then the failure kinds of a program (sandbox.h's
 * kinds, "busy" and "other" for anything else). */
extern const char *const sl_metrics_program_outcomes[SL_METRICS_NPROGRAM];

/* Where text was redacted or scored. */
enum sl_metrics_where {
	SL_METRICS_ARGUMENTS,  /* a call's arguments (redaction only) */
	SL_METRICS_RESULT,     /* a tool's result */
	SL_METRICS_OUTPUT,     /* a program's final answer */
	SL_METRICS_PEER,       /* other peer text (stages' peer hook) */
	SL_METRICS_NWHERE,
};

/* Work done on tool definitions, the cost that should follow a catalog's
 * changes and not its requests (issue 35; docs/METRICS.md). */
enum sl_metrics_work {
	SL_METRICS_PIN_HASH,   /* a definition hashed for pinning */
	SL_METRICS_PRESENTED,  /* a definition cleaned and written as clients see it */
	SL_METRICS_LISTING,    /* a tools/list listing rendered whole */
	SL_METRICS_INDEXED,    /* a definition added to the search index */
	SL_METRICS_SIGNATURE,  /* a definition's TypeScript signature made */
	SL_METRICS_NWORK,
};

/* The audit stage's network sinks (stages/audit_sink.h). */
enum sl_metrics_sink {
	SL_METRICS_SYSLOG,
	SL_METRICS_OTLP,
	SL_METRICS_NSINK,
};

/* A histogram: counts per bucket (not cumulative), the last past every
 * bound, and the sum of the observations in seconds. */
struct sl_metrics_hist {
	uint64_t n[SL_METRICS_NBOUNDS + 1];
	double sum;
};

struct sl_metrics_pair {
	char *server, *tool;   /* as rendered: cut to SL_METRICS_LABEL_MAX, or "_other" */
	uint64_t calls[SL_METRICS_NORIGIN][SL_METRICS_NOUTCOME];
};

struct sl_metrics_server {
	char *server;
	struct sl_metrics_hist latency;
};

struct sl_metrics {
	unsigned refs;                 /* references beyond the first */
	double start_time;             /* Unix seconds when made: the process's start */
	size_t max_series;
	struct sl_map index;           /* "<len>:<server><tool>" -> pair index + 1 */
	struct sl_metrics_pair *pairs; /* in order of first call */
	size_t npairs, nother;         /* nother: the (server, "_other") pairs */
	struct sl_metrics_server *servers;
	size_t nservers;
	uint64_t programs[SL_METRICS_NPROGRAM];
	struct sl_metrics_hist program_time;
	uint64_t cache_hits, cache_misses;
	uint64_t redactions[SL_METRICS_NWHERE];
	uint64_t guard[SL_METRICS_NWHERE][2]; /* [where][withheld] */
	uint64_t work[SL_METRICS_NWORK];
	/* Audit records per sink: sent whole, dropped (the queue was full:
	 * the audit file alone holds them), and waiting now (a gauge). */
	uint64_t audit_sent[SL_METRICS_NSINK], audit_dropped[SL_METRICS_NSINK];
	uint64_t audit_queued[SL_METRICS_NSINK];
	uint64_t moved;                /* grows with every count (the OTLP export's "dirty") */
};

struct sl_metrics *sl_metrics_new(size_t max_series);
struct sl_metrics *sl_metrics_ref(struct sl_metrics *m);
void sl_metrics_unref(struct sl_metrics *m);

/* A call that finished (any outcome): its pair's counter (by c->up's
 * advertised tools, see Bounds), its server's
 * latency (started_us to finished_us), a cache hit or miss (c->cache_lookup).
 * m may be NULL (nothing counted), here and below. */
void sl_metrics_call(struct sl_metrics *m, const struct sl_call *c);
/* A program that finished: its outcome (o->outcome) and duration. */
void sl_metrics_program(struct sl_metrics *m, const struct sl_output *o);
/* n secrets replaced in text of where. */
void sl_metrics_redacted(struct sl_metrics *m, enum sl_metrics_where where, size_t n);
/* The guard flagged text of where: withheld, or marked with a warning. */
void sl_metrics_guard(struct sl_metrics *m, enum sl_metrics_where where, bool withheld);
/* n units of work of kind done. */
void sl_metrics_work(struct sl_metrics *m, enum sl_metrics_work kind, size_t n);

/* The index of a program outcome in sl_metrics_program_outcomes ("other"
 * for one not listed; NULL is "error"). */
size_t sl_metrics_program_kind(const char *outcome);
/* A where's label value: "arguments", "result", "output", "peer". */
const char *sl_metrics_where_name(enum sl_metrics_where w);

/* Appends m's families to b (uncapped by the caller: the registry's size is
 * bounded above), each with HELP and TYPE, in the text format 0.0.4. */
void sl_metrics_render(const struct sl_metrics *m, struct sl_buf *b);

/* For renderers of other families: appends `name="value"`, the len bytes
 * of value escaped as the text format asks (backslash, double quote and
 * newline), invalid UTF-8 and other control characters (NUL included)
 * written as U+FFFD. */
void sl_metrics_label(struct sl_buf *b, const char *name, const char *value, size_t len);
/* Appends a histogram's _bucket, _sum and _count samples; labels is the
 * text between the braces before le (may be ""). */
void sl_metrics_hist_render(struct sl_buf *b, const char *name, const char *labels,
			    const struct sl_metrics_hist *h);
/* Adds one observation of secs seconds to h. */
void sl_metrics_observe(struct sl_metrics_hist *h, double secs);

#endif

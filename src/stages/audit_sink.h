/*
 * The audit stage's network sinks (docs/stages/audit.md, "To a collector"):
 * copies of every audit record sent to syslog (RFC 5424 over UDP, TCP with
 * RFC 6587 octet counting, or TLS as RFC 5425 says) and as OpenTelemetry
 * logs (OTLP/HTTP JSON). The file stays the record of truth: every record
 * is written there first, whatever happens to the copies.
 *
 * Each sink has its own bounded queue (records and bytes): the gateway
 * never waits on a collector. A record is taken off the queue only once it
 * went out whole (written to the socket; a 2xx answer for OTLP), so a
 * collector that is down holds records in the queue, and they go out when
 * it is back; a record that finds the queue full is not queued (the file
 * has it) and is counted as dropped in GET /metrics
 * (sluice_audit_records_total). Connections are made on the first record,
 * never at start, and again with backoff after a failure.
 *
 * API (audit.c only):
 *   struct audit_syslog *S; if (audit_syslog_new(&conf, &S, err) < 0) ...
 *   audit_syslog_put(S, metrics, "call", &ts, line, len);     a copy, queued
 *   audit_syslog_free(S);       at exit: sends what is queued (at most
 *                               timeoutMs, running the loop), then closes
 *   and the same with audit_otlp_*.
 */
#ifndef SL_STAGES_AUDIT_SINK_H
#define SL_STAGES_AUDIT_SINK_H

#include "config/conf.h"
#include "core/list.h"
#include "pipeline/metrics.h"

#include <time.h>

/* A queue of records waiting for one sink, bounded by count and bytes. */
struct audit_rec {
	struct sl_list link;
	size_t len;
	char data[];
};

struct audit_queue {
	struct sl_list recs;        /* oldest first */
	size_t n, bytes;
	size_t max_n, max_bytes;    /* maxQueueRecords, maxQueueBytes */
	struct sl_metrics *metrics; /* a reference, from the first record */
	enum sl_metrics_sink sink;
};

void audit_queue_init(struct audit_queue *q, enum sl_metrics_sink sink, size_t max_n,
		      size_t max_bytes);
/* Queues a copy of data (len bytes); false, counted as dropped, when the
 * queue is full. */
bool audit_queue_put(struct audit_queue *q, struct sl_metrics *m, const char *data, size_t len);
/* The oldest record (NULL: none); audit_queue_take takes it off, counted
 * as sent or as dropped. */
struct audit_rec *audit_queue_head(struct audit_queue *q);
void audit_queue_take(struct audit_queue *q, bool sent);
void audit_queue_dispose(struct audit_queue *q);

/* sluice.audit.syslog */
struct audit_syslog_conf {
	char *url;            /* udp://, tcp:// or tls:// host[:port]; NULL: no syslog */
	char *ca_file;        /* tls: the CA bundle; NULL: the system's trust store */
	char *cert_file, *key_file; /* tls: sluice's own certificate and key (both or neither) */
	char *server_name;    /* tls: the name the certificate must carry; NULL: the URL's host */
	char *hostname;       /* the HOSTNAME field; NULL: gethostname() */
	int facility;
	uint64_t max_records, max_bytes, timeout_ms, reconnect_max_ms;
};

/* sluice.audit.otlp */
struct audit_otlp_conf {
	char *endpoint;       /* http:// or https:// base; NULL: no OTLP */
	char *service;        /* service.name; NULL: "sluice" */
	uint64_t interval_ms, timeout_ms, max_records, max_bytes, batch;
};

/* RFC 3339, UTC, milliseconds, as the records' "time" (audit.c). */
void audit_stamp(const struct timespec *now, char out[40]);

extern const struct sl_conf_section audit_syslog_section, audit_otlp_section;
void audit_syslog_conf_dispose(struct audit_syslog_conf *c);
void audit_otlp_conf_dispose(struct audit_otlp_conf *c);

struct audit_syslog;
struct audit_otlp;

/* Takes c's strings. Fails on a URL that does not parse (config checked
 * it) or a CA file GnuTLS cannot read. Connects nothing yet. */
int audit_syslog_new(struct audit_syslog_conf *c, struct audit_syslog **out,
		     struct sl_err *err) SL_MUST_USE;
/* line: the record's JSON with its newline (not sent); type: the MSGID. */
void audit_syslog_put(struct audit_syslog *S, struct sl_metrics *m, const char *type,
		      const struct timespec *ts, const char *line, size_t len);
void audit_syslog_free(struct audit_syslog *S);

int audit_otlp_new(struct audit_otlp_conf *c, struct audit_otlp **out,
		   struct sl_err *err) SL_MUST_USE;
void audit_otlp_put(struct audit_otlp *O, struct sl_metrics *m, const char *type,
		    const struct timespec *ts, const char *line, size_t len);
void audit_otlp_free(struct audit_otlp *O);

#endif

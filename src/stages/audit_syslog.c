/*
 * Audit records to syslog (audit_sink.h): RFC 5424 messages over UDP (RFC
 * 5426, one datagram each), TCP with RFC 6587 octet counting, or TLS (RFC
 * 5425: the same framing inside a GnuTLS client session that checks the
 * collector's certificate against caFile and its name).
 *
 * One connection, made on the loop when there is something to send: an
 * asynchronous resolve, a non-blocking connect, the TLS handshake, then
 * writes straight from the queue's head record. The socket is watched for
 * reading as long as it is open: a collector sends nothing, so readable
 * means it closed the connection (or, over UDP, that an ICMP error came
 * back), and the same check runs before each write after a pause, so a
 * record is not written into a connection the collector already closed.
 * A record is taken off the queue once its last byte was written; a
 * record cut by a broken connection is sent whole on the next (octet
 * counting makes the collector throw away a frame that never ended).
 */
#include "stages/audit_sink.h"
#include "core/log.h"
#include "event/handles.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#define BACKOFF_FIRST_MS 100
#define HOST_MAX 255          /* RFC 5424 HOSTNAME */
#define MSGID_MAX 32          /* RFC 5424 MSGID */
#define SEVERITY_INFO 6

enum kind { K_UDP, K_TCP, K_TLS };
enum state { ST_IDLE, ST_RESOLVING, ST_CONNECTING, ST_HANDSHAKE, ST_READY, ST_BACKOFF };

struct conn {
	uv_poll_t poll;
	int fd;
};

struct resolve {
	uv_getaddrinfo_t req;
	struct audit_syslog *S;  /* NULL: the sink went first; the answer is thrown away */
};

struct audit_syslog {
	uv_loop_t *loop;
	enum kind kind;
	char *url, *host, *port, *server_name, *hostname;
	int facility;
	uint64_t timeout_ms, reconnect_max_ms, backoff_ms;
	gnutls_certificate_credentials_t cred;
	gnutls_session_t tls;          /* on the current connection, kind K_TLS */
	struct audit_queue q;
	size_t off;                    /* bytes of the head record written */
	enum state state;
	struct conn *c;
	struct resolve *res;
	int events;                    /* what c->poll waits for */
	uv_timer_t timer;              /* the attempt's deadline, or the backoff */
	uv_timer_t deadline;           /* at exit: how long sending what is left may take */
	struct sl_handles handles;
	bool warned;                   /* this outage was logged */
	unsigned long pid;
};

/* ---- config ------------------------------------------------------------------------- */

/* "udp://host:port", "tcp://[::1]", "tls://collector.example:6514". */
static bool parse_url(const char *u, enum kind *kind, char **host, char **port)
{
	const char *p, *end;
	size_t hl;

	if (strncmp(u, "udp://", 6) == 0)
		*kind = K_UDP;
	else if (strncmp(u, "tcp://", 6) == 0)
		*kind = K_TCP;
	else if (strncmp(u, "tls://", 6) == 0)
		*kind = K_TLS;
	else
		return false;
	p = u + 6;
	if (*p == '[') {
		if (!(end = strchr(p, ']')))
			return false;
		hl = (size_t)(end - p - 1);
		p++;
		end++;
	} else {
		end = p + strcspn(p, ":/?#@");
		hl = (size_t)(end - p);
	}
	if (hl == 0 || hl > HOST_MAX)
		return false;
	if (*end == ':') {
		char *stop;
		unsigned long n = strtoul(end + 1, &stop, 10);
		if (stop == end + 1 || *stop || n < 1 || n > 65535)
			return false;
		if (port)
			*port = sl_printf("%lu", n);
	} else if (*end) {
		return false;
	} else if (port) {
		*port = sl_strdup(*kind == K_TLS ? "6514" : "514");
	}
	if (host)
		*host = sl_strndup(p, hl);
	return true;
}

static int parse_syslog_url(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			    void *target)
{
	const char *u = yyjson_get_str(v);
	char **field = sl_conf_field(target, k);
	enum kind kind;

	if (!u || !parse_url(u, &kind, NULL, NULL))
		return sl_conf_bad(cx, k);
	free(*field);
	*field = sl_strdup(u);
	return SL_OK;
}

/* RFC 5424 section 6.2.1, by their usual names. */
static const struct sl_conf_name facilities[] = {
	{ "kern", 0 }, { "user", 1 }, { "mail", 2 }, { "daemon", 3 }, { "auth", 4 },
	{ "syslog", 5 }, { "lpr", 6 }, { "news", 7 }, { "uucp", 8 }, { "cron", 9 },
	{ "authpriv", 10 }, { "ftp", 11 }, { "ntp", 12 }, { "audit", 13 }, { "alert", 14 },
	{ "clock", 15 }, { "local0", 16 }, { "local1", 17 }, { "local2", 18 }, { "local3", 19 },
	{ "local4", 20 }, { "local5", 21 }, { "local6", 22 }, { "local7", 23 }, { NULL, 0 },
};

#define SC(field) SL_CONF_AT(struct audit_syslog_conf, field)
static const struct sl_conf_key syslog_keys[] = {
	{ "url", SL_CONF_CUSTOM, SC(url), .parse = parse_syslog_url,
	  .shape = "a udp://, tcp:// or tls:// URL with a host and an optional port "
		   "(514; 6514 for tls)",
	  .doc = "Set, every record also goes to this syslog collector as an RFC 5424 message "
		 "(TCP and TLS: RFC 6587 octet counting)." },
	{ "caFile", SL_CONF_STRING, SC(ca_file), .min = 1, .shape = "a path to PEM certificates",
	  .dflt_doc = "the system's trust store",
	  .doc = "tls: the CA certificates the collector's certificate must chain to." },
	{ "certFile", SL_CONF_STRING, SC(cert_file), .min = 1, .shape = "a path to a PEM certificate chain",
	  .dflt_doc = "none",
	  .doc = "tls: the certificate sluice presents, for a collector that asks for one (with "
		 "keyFile)." },
	{ "keyFile", SL_CONF_STRING, SC(key_file), .min = 1, .shape = "a path to a PEM private key",
	  .dflt_doc = "none", .doc = "tls: the unencrypted private key of certFile." },
	{ "serverName", SL_CONF_STRING, SC(server_name), .min = 1, .dflt_doc = "the URL's host",
	  .doc = "tls: the name (or IP address) the collector's certificate must carry." },
	{ "facility", SL_CONF_ENUM, SC(facility), .names = facilities, .dflt = 10,
	  .dflt_doc = "`\"authpriv\"`",
	  .doc = "The facility of every message (RFC 5424 names: `auth`, `authpriv`, `audit`, "
		 "`local0` to `local7`, ...); the severity is informational." },
	{ "hostname", SL_CONF_STRING, SC(hostname), .min = 1, .dflt_doc = "the machine's host name",
	  .doc = "The HOSTNAME field (printable ASCII, at most 255 characters; others become `_`)." },
	{ "maxQueueRecords", SL_CONF_UINT, SC(max_records), .min = 1, .max = 1000000,
	  .dflt = 10000,
	  .doc = "Records waiting for the collector; past it (or past maxQueueBytes) a record is "
		 "not queued and counts as dropped: the file has it." },
	{ "maxQueueBytes", SL_CONF_UINT, SC(max_bytes), .min = 4096, .max = 1ull << 30,
	  .dflt = 16u << 20, .doc = "Bytes of the records waiting for the collector." },
	{ "timeoutMs", SL_CONF_UINT, SC(timeout_ms), .min = 100, .max = 600000, .dflt = 5000,
	  .doc = "A connection attempt (resolve, connect, TLS handshake); also how long sluice "
		 "waits at exit to send what is queued." },
	{ "reconnectMaxMs", SL_CONF_UINT, SC(reconnect_max_ms), .min = 100, .max = 600000,
	  .dflt = 30000,
	  .doc = "After a failure the next attempt waits 100 ms, doubling up to this." },
};
#undef SC

const struct sl_conf_section audit_syslog_section = {
	"sluice.audit.syslog",
	"A copy of every audit record to a syslog collector (docs/stages/audit.md, \"To a "
	"collector\"); off unless `url` is set.",
	syslog_keys, SL_COUNT(syslog_keys), SL_CONF_STRICT, NULL,
};

void audit_syslog_conf_dispose(struct audit_syslog_conf *c)
{
	free(c->url);
	free(c->ca_file);
	free(c->cert_file);
	free(c->key_file);
	free(c->server_name);
	free(c->hostname);
	*c = (struct audit_syslog_conf){ 0 };
}

/* ---- the connection ----------------------------------------------------------------- */

static void connect_next(struct audit_syslog *S);
static void pump(struct audit_syslog *S);

static void close_conn(struct audit_syslog *S)
{
	if (S->tls) {
		gnutls_deinit(S->tls);
		S->tls = NULL;
	}
	if (S->c) {
		int fd = S->c->fd;
		/* libuv stops watching fd in uv_close; it may be closed then. */
		sl_handles_close_one(&S->handles, &S->c->poll, S->c);
		close(fd);
		S->c = NULL;
	}
	S->events = 0;
}

static void on_timer(uv_timer_t *t);

/* The connection failed or broke: what was cut of the head record goes
 * again whole, after the backoff. */
static void down(struct audit_syslog *S, const char *why)
{
	close_conn(S);
	S->off = 0;
	if (!S->warned)
		sl_log(SL_LOG_WARN, "audit: syslog %s: %s; records wait in the queue (at most %zu)",
		       S->url, why, S->q.max_n);
	S->warned = true;
	S->state = ST_BACKOFF;
	uv_timer_start(&S->timer, on_timer, S->backoff_ms, 0);
	S->backoff_ms = S->backoff_ms * 2 > S->reconnect_max_ms ? S->reconnect_max_ms
								 : S->backoff_ms * 2;
}

static void on_timer(uv_timer_t *t)
{
	struct audit_syslog *S = t->data;

	if (S->state == ST_BACKOFF) {
		S->state = ST_IDLE;
		if (S->q.n)
			connect_next(S);
	} else if (S->state != ST_READY && S->state != ST_IDLE) {
		if (S->res) {
			S->res->S = NULL;
			S->res = NULL;
		}
		down(S, "timed out");
	}
}

static void watch(struct audit_syslog *S, int events);

/* Connected: the backoff and the outage end only once a record went out,
 * so a collector that accepts and closes at once is retried ever later
 * and warned about once. */
static void ready(struct audit_syslog *S)
{
	uv_timer_stop(&S->timer);
	S->state = ST_READY;
	pump(S);
}

static void progress(struct audit_syslog *S)
{
	S->backoff_ms = BACKOFF_FIRST_MS;
	if (S->warned)
		sl_log(SL_LOG_INFO, "audit: syslog %s: connected again; %zu queued records go out",
		       S->url, S->q.n);
	S->warned = false;
}

static void handshake(struct audit_syslog *S)
{
	int g = gnutls_handshake(S->tls);

	if (g == GNUTLS_E_AGAIN || g == GNUTLS_E_INTERRUPTED) {
		watch(S, gnutls_record_get_direction(S->tls) ? UV_WRITABLE : UV_READABLE);
		return;
	}
	if (g == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
		gnutls_datum_t d = { 0 };
		char *why;
		gnutls_certificate_verification_status_print(
			gnutls_session_get_verify_cert_status(S->tls), GNUTLS_CRT_X509, &d, 0);
		why = sl_printf("the collector's certificate is not trusted: %s",
				d.data ? (char *)d.data : "?");
		gnutls_free(d.data);
		down(S, why);
		free(why);
		return;
	}
	if (g < 0) {
		char *why = sl_printf("TLS handshake: %s", gnutls_strerror(g));
		down(S, why);
		free(why);
		return;
	}
	ready(S);
}

static int start_tls(struct audit_syslog *S)
{
	const char *name = S->server_name ? S->server_name : S->host;
	unsigned char ip[16];
	int g;

	if ((g = gnutls_init(&S->tls, GNUTLS_CLIENT | GNUTLS_NONBLOCK)) < 0)
		return g;
	if ((g = gnutls_set_default_priority(S->tls)) < 0 ||
	    (g = gnutls_credentials_set(S->tls, GNUTLS_CRD_CERTIFICATE, S->cred)) < 0)
		return g;
	/* SNI names a host, never an address (RFC 6066). */
	if (inet_pton(AF_INET, name, ip) != 1 && inet_pton(AF_INET6, name, ip) != 1 &&
	    (g = gnutls_server_name_set(S->tls, GNUTLS_NAME_DNS, name, strlen(name))) < 0)
		return g;
	/* The chain to caFile and the name, checked by the handshake itself. */
	gnutls_session_set_verify_cert(S->tls, name, 0);
	gnutls_transport_set_int(S->tls, S->c->fd);
	return 0;
}

/* Reads what the collector sent: nothing is expected, so this finds out
 * whether it closed the connection (or refused a datagram). False: it is
 * down now. */
static bool still_up(struct audit_syslog *S)
{
	char buf[512];

	for (int i = 0; i < 64; i++) {
		ssize_t r;
		if (S->tls) {
			r = gnutls_record_recv(S->tls, buf, sizeof(buf));
			if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
				return true;
			if (r == 0 || (r < 0 && gnutls_error_is_fatal((int)r))) {
				down(S, r == 0 ? "the collector closed the connection"
					       : gnutls_strerror((int)r));
				return false;
			}
			continue;
		}
		r = recv(S->c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return true;
		if (r < 0 || (r == 0 && S->kind != K_UDP)) {
			down(S, r == 0 ? "the collector closed the connection" : strerror(errno));
			return false;
		}
	}
	return true;
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct audit_syslog *S = h->data;

	if (status < 0) {
		down(S, uv_strerror(status));
		return;
	}
	if (S->state == ST_CONNECTING) {
		int e = 0;
		socklen_t l = sizeof(e);
		if (getsockopt(S->c->fd, SOL_SOCKET, SO_ERROR, &e, &l) < 0)
			e = errno;
		if (e) {
			down(S, strerror(e));
			return;
		}
		if (S->kind == K_TLS) {
			int g;
			S->state = ST_HANDSHAKE;
			if ((g = start_tls(S)) < 0) {
				down(S, gnutls_strerror(g));
				return;
			}
			handshake(S);
		} else {
			ready(S);
		}
		return;
	}
	if (S->state == ST_HANDSHAKE) {
		handshake(S);
		return;
	}
	if ((events & UV_READABLE) && !still_up(S))
		return;
	if (events & UV_WRITABLE)
		pump(S);
}

/* While connected the socket is always watched for reading. */
static void watch(struct audit_syslog *S, int events)
{
	if (S->state == ST_READY)
		events |= UV_READABLE;
	if (events == S->events)
		return;
	S->events = events;
	uv_poll_start(&S->c->poll, events, on_poll);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *ai)
{
	struct resolve *res = (struct resolve *)req;
	struct audit_syslog *S = res->S;
	int fd = -1;

	free(res);
	if (!S) {
		uv_freeaddrinfo(ai);
		return;
	}
	S->res = NULL;
	if (status < 0 || !ai) {
		char *why = sl_printf("cannot resolve %s: %s", S->host, uv_strerror(status));
		uv_freeaddrinfo(ai);
		down(S, why);
		free(why);
		return;
	}
	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0 || (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS)) {
		int e = errno;
		uv_freeaddrinfo(ai);
		if (fd >= 0)
			close(fd);
		down(S, strerror(e));
		return;
	}
	uv_freeaddrinfo(ai);
	S->c = sl_alloc(sizeof(*S->c));
	S->c->fd = fd;
	if (uv_poll_init_socket(S->loop, &S->c->poll, fd) < 0) {
		free(S->c);
		S->c = NULL;
		close(fd);
		down(S, "cannot watch the socket");
		return;
	}
	S->c->poll.data = S;
	sl_handles_add(&S->handles, &S->c->poll);
	uv_unref((uv_handle_t *)&S->c->poll);
	if (S->kind == K_UDP) {
		ready(S);
		return;
	}
	S->state = ST_CONNECTING;
	watch(S, UV_WRITABLE);
}

static void connect_next(struct audit_syslog *S)
{
	struct addrinfo hints = { .ai_socktype = S->kind == K_UDP ? SOCK_DGRAM : SOCK_STREAM };
	struct resolve *res = sl_alloc(sizeof(*res));
	int rc;

	res->S = S;
	S->res = res;
	S->state = ST_RESOLVING;
	uv_timer_start(&S->timer, on_timer, S->timeout_ms, 0);
	if ((rc = uv_getaddrinfo(S->loop, &res->req, on_resolved, S->host, S->port, &hints)) < 0) {
		S->res = NULL;
		free(res);
		down(S, uv_strerror(rc));
	}
}

/* Writes queued records until the socket is full, the queue empty, or
 * the connection breaks. */
static void pump(struct audit_syslog *S)
{
	struct audit_rec *r;

	if (S->state == ST_IDLE && S->q.n) {
		connect_next(S);
		return;
	}
	if (S->state != ST_READY)
		return;
	/* After a pause the collector may have gone: ask before writing. */
	if (!(S->events & UV_WRITABLE) && !still_up(S))
		return;
	while ((r = audit_queue_head(&S->q))) {
		ssize_t w;
		if (S->tls) {
			w = gnutls_record_send(S->tls, r->data + S->off, r->len - S->off);
			if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED) {
				watch(S, UV_WRITABLE);
				return;
			}
			if (w < 0) {
				down(S, gnutls_strerror((int)w));
				return;
			}
		} else {
			w = send(S->c->fd, r->data + S->off, r->len - S->off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
				watch(S, UV_WRITABLE);
				return;
			}
			if (w < 0 && S->kind == K_UDP && errno == EMSGSIZE) {
				/* Larger than a datagram can be: only the file has it. */
				sl_log(SL_LOG_WARN, "audit: syslog %s: a %zu-byte record does not fit "
				       "in a datagram; use tcp:// or tls://", S->url, r->len);
				audit_queue_take(&S->q, false);
				continue;
			}
			if (w < 0) {
				down(S, strerror(errno));
				return;
			}
		}
		S->off += (size_t)w;
		if (S->off == r->len) {
			S->off = 0;
			progress(S);
			audit_queue_take(&S->q, true);
		}
	}
	watch(S, 0);
}

/* ---- records ------------------------------------------------------------------------ */

/* A header field as RFC 5424 allows it: printable US-ASCII, no space,
 * at most max characters; "-" when empty. Returns past the space after it. */
static char *field(char *p, const char *s, size_t max)
{
	size_t n = 0;

	for (; s && s[n] && n < max; n++)
		*p++ = (unsigned char)s[n] > 32 && (unsigned char)s[n] < 127 ? s[n] : '_';
	if (n == 0)
		*p++ = '-';
	*p++ = ' ';
	return p;
}

/* The fields before the MSG: at most this long. */
#define HEAD_MAX (24 + 8 + 40 + HOST_MAX + 1 + 7 + 24 + MSGID_MAX + 1 + 2)

void audit_syslog_put(struct audit_syslog *S, struct sl_metrics *m, const char *type,
		      const struct timespec *ts, const char *line, size_t len)
{
	size_t body = len && line[len - 1] == '\n' ? len - 1 : len;
	char *rec = sl_alloc(HEAD_MAX + body), *msg = rec + 24, *p = msg, stamp[40], pid[24];
	size_t n;

	audit_stamp(ts, stamp);
	p += sprintf(p, "<%d>1 %s ", S->facility * 8 + SEVERITY_INFO, stamp);
	p = field(p, S->hostname, HOST_MAX);
	p = field(p, "sluice", 6);
	snprintf(pid, sizeof(pid), "%lu", S->pid);
	p = field(p, pid, sizeof(pid));
	p = field(p, type, MSGID_MAX);
	/* No structured data; the MSG is the record's JSON, in which every
	 * control character is escaped: one line, one record. */
	memcpy(p, "- ", 2);
	memcpy(p + 2, line, body);
	n = (size_t)(p + 2 + body - msg);
	if (S->kind == K_UDP) {
		(void)audit_queue_put(&S->q, m, msg, n);
	} else {
		/* RFC 6587 octet counting: "LEN SP MSG", the count just before the MSG. */
		char count[24];
		int cl = snprintf(count, sizeof(count), "%zu ", n);
		memcpy(msg - cl, count, (size_t)cl);
		(void)audit_queue_put(&S->q, m, msg - cl, n + (size_t)cl);
	}
	free(rec);
	if (S->state == ST_IDLE || (S->state == ST_READY && !(S->events & UV_WRITABLE)))
		pump(S);
}

/* ---- lifetime ----------------------------------------------------------------------- */

int audit_syslog_new(struct audit_syslog_conf *c, struct audit_syslog **out, struct sl_err *err)
{
	struct audit_syslog *S = sl_alloc(sizeof(*S));
	char host[HOST_MAX + 1];
	int g;

	if (!parse_url(c->url, &S->kind, &S->host, &S->port)) {
		sl_err_set(err, "sluice.audit.syslog.url: cannot parse %s", c->url);
		goto fail;
	}
	/* TLS settings on a plain URL would promise what is not done. */
	if (S->kind != K_TLS && (c->ca_file || c->cert_file || c->key_file || c->server_name)) {
		sl_err_set(err, "sluice.audit.syslog.%s: only for a tls:// url",
			   c->ca_file ? "caFile" : c->cert_file ? "certFile" : c->key_file ? "keyFile"
									  : "serverName");
		goto fail;
	}
	if (!c->cert_file != !c->key_file) {
		sl_err_set(err, "sluice.audit.syslog.%s: certFile and keyFile go together",
			   c->cert_file ? "keyFile" : "certFile");
		goto fail;
	}
	if (S->kind == K_TLS) {
		if ((g = gnutls_certificate_allocate_credentials(&S->cred)) < 0 ||
		    (g = c->ca_file ? gnutls_certificate_set_x509_trust_file(S->cred, c->ca_file,
									      GNUTLS_X509_FMT_PEM)
				    : gnutls_certificate_set_x509_system_trust(S->cred)) <= 0) {
			if (c->ca_file)
				sl_err_set(err, "sluice.audit.syslog.caFile: %s: %s", c->ca_file,
					   g < 0 ? gnutls_strerror(g) : "no certificate in it");
			else
				sl_err_set(err, "sluice.audit.syslog: no system trust store (%s); set "
					   "caFile", g < 0 ? gnutls_strerror(g) : "empty");
			goto fail;
		}
		if (c->cert_file &&
		    (g = gnutls_certificate_set_x509_key_file(S->cred, c->cert_file, c->key_file,
							      GNUTLS_X509_FMT_PEM)) < 0) {
			sl_err_set(err, "sluice.audit.syslog.certFile: %s with keyFile %s: %s",
				   c->cert_file, c->key_file, gnutls_strerror(g));
			goto fail;
		}
	}
	S->loop = uv_default_loop();
	S->url = c->url;
	S->server_name = c->server_name;
	if (c->hostname)
		S->hostname = c->hostname;
	else if (gethostname(host, sizeof(host)) == 0)
		S->hostname = sl_strndup(host, strnlen(host, sizeof(host)));
	free(c->ca_file);
	free(c->cert_file);
	free(c->key_file);
	*c = (struct audit_syslog_conf){ .facility = c->facility, .max_records = c->max_records,
		.max_bytes = c->max_bytes, .timeout_ms = c->timeout_ms,
		.reconnect_max_ms = c->reconnect_max_ms };
	S->facility = c->facility;
	S->timeout_ms = c->timeout_ms;
	S->reconnect_max_ms = c->reconnect_max_ms;
	S->backoff_ms = BACKOFF_FIRST_MS;
	S->pid = (unsigned long)getpid();
	audit_queue_init(&S->q, SL_METRICS_SYSLOG, (size_t)c->max_records, (size_t)c->max_bytes);
	sl_handles_init(&S->handles);
	uv_timer_init(S->loop, &S->timer);
	S->timer.data = S;
	sl_handles_add(&S->handles, &S->timer);
	uv_unref((uv_handle_t *)&S->timer);
	uv_timer_init(S->loop, &S->deadline);
	sl_handles_add(&S->handles, &S->deadline);
	sl_log(SL_LOG_INFO, "audit: a copy of every record to syslog %s", S->url);
	*out = S;
	return SL_OK;
fail:
	if (S->cred)
		gnutls_certificate_free_credentials(S->cred);
	free(S->host);
	free(S->port);
	free(S);
	audit_syslog_conf_dispose(c);
	return SL_ERR_INVALID;
}

static void on_deadline(uv_timer_t *t)
{
}

static void free_sink(void *arg)
{
	struct audit_syslog *S = arg;

	audit_queue_dispose(&S->q);
	if (S->cred)
		gnutls_certificate_free_credentials(S->cred);
	free(S->url);
	free(S->host);
	free(S->port);
	free(S->server_name);
	free(S->hostname);
	free(S);
}

void audit_syslog_free(struct audit_syslog *S)
{
	if (!S)
		return;
	/* At exit: what is queued goes out if the collector takes it within
	 * timeoutMs (the deadline, referenced, keeps the loop running). */
	if (S->q.n) {
		uv_timer_start(&S->deadline, on_deadline, S->timeout_ms, 0);
		if (S->state == ST_BACKOFF) {
			uv_timer_stop(&S->timer);
			S->state = ST_IDLE;
		}
		pump(S);
		while (S->q.n && S->state != ST_BACKOFF && uv_is_active((uv_handle_t *)&S->deadline))
			uv_run(S->loop, UV_RUN_ONCE);
		if (S->q.n)
			sl_log(SL_LOG_WARN, "audit: syslog %s: %zu records not sent at exit (the audit "
			       "file has them)", S->url, S->q.n);
	}
	if (S->res)
		S->res->S = NULL;
	close_conn(S);
	sl_handles_close(&S->handles, free_sink, S);
	uv_run(uv_default_loop(), UV_RUN_NOWAIT);
}

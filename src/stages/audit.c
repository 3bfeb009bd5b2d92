/*
 * Audit: the last stage of the table. Its finish hook runs for every call
 * (ok, rpc_error, denied, failed, cancelled) and writes one JSON line; code
 * mode's owners call sl_audit_program once per program. The arguments are
 * represented only by their size and the SHA-256 of their canonical JSON,
 * taken after the redaction stage rewrote them, so the log can prove that
 * two calls had the same arguments without ever holding a value.
 *
 * The file is opened once at start with O_APPEND and every line goes out in
 * one write(2): lines from one process never interleave, and a log shipper
 * tailing the file never sees half a line. By default it is audit.jsonl in
 * the state directory, never stderr: stderr also carries log lines and
 * `sluice exec`'s failures, text a peer partly writes, and nothing read
 * from a stream that mixes the two can be told to be an audit line.
 *
 * The file is the record of truth: every line is written there first, and
 * a copy then goes to each configured collector's queue (syslog, OTLP
 * logs: audit_sink.h), which sends it without ever making a call wait.
 */
#include "stages/audit.h"
#include "stages/audit_sink.h"
#include "config/conf.h"
#include "core/digest.h"
#include "core/log.h"
#include "auth/caller.h"
#include "pipeline/gen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The stage's state: none when sluice.audit.enabled is false. */
struct audit {
	int fd;
	bool regular;           /* a regular file (not a pipe, a device): a partial line can be cut */
	char *file;             /* its path: the admin page reads the tail there */
	/* Copies to collectors (audit_sink.h), NULL when not configured. */
	struct audit_syslog *syslog;
	struct audit_otlp *otlp;
};


/* ---- the lines ------------------------------------------------------------------ */

/* RFC 3339, UTC, milliseconds: 2026-11-30T06:17:41.123Z. The second's
 * part is formatted once per second (the loop's thread is the only one
 * that writes audit lines): every call writes a line. */
void audit_stamp(const struct timespec *now, char out[40])
{
	static time_t last = (time_t)-1;
	static char second[32];
	static size_t n;
	int ms = (int)(now->tv_nsec / 1000000) % 1000;

	if (now->tv_sec != last) {
		struct tm tm;
		time_t t = now->tv_sec;
		gmtime_r(&t, &tm);
		n = strftime(second, sizeof(second), "%Y-%m-%dT%H:%M:%S", &tm);
		last = now->tv_sec;
	}
	memcpy(out, second, n);
	out[n] = '.';
	out[n + 1] = (char)('0' + ms / 100);
	out[n + 2] = (char)('0' + ms / 10 % 10);
	out[n + 3] = (char)('0' + ms % 10);
	out[n + 4] = 'Z';
	out[n + 5] = '\0';
}

static void add_str_or_null(yyjson_mut_doc *d, yyjson_mut_val *o, const char *key, const char *v)
{
	if (v)
		yyjson_mut_obj_add_strcpy(d, o, key, v);
	else
		yyjson_mut_obj_add_null(d, o, key);
}

/* Every line says who: the session and, behind it, the caller's subject,
 * OAuth client and profile (null where none); never a token. */
static yyjson_mut_val *line_start(yyjson_mut_doc *d, const char *type, const struct timespec *now,
				  uint64_t session_id, const struct sl_caller *who)
{
	char ts[40];
	yyjson_mut_val *o = yyjson_mut_obj(d);

	audit_stamp(now, ts);
	yyjson_mut_doc_set_root(d, o);
	yyjson_mut_obj_add_str(d, o, "type", type);
	yyjson_mut_obj_add_strcpy(d, o, "time", ts);
	if (session_id)
		yyjson_mut_obj_add_uint(d, o, "session", session_id);
	else
		yyjson_mut_obj_add_null(d, o, "session");
	add_str_or_null(d, o, "subject", who ? who->subject : NULL);
	add_str_or_null(d, o, "client", who ? who->client_id : NULL);
	add_str_or_null(d, o, "profile", who ? who->profile : NULL);
	return o;
}

static char *line_end(yyjson_mut_doc *d, size_t *len)
{
	char *s = sl_json_write_line(d, len);
	yyjson_mut_doc_free(d);
	return s;
}

/* Whole milliseconds to three decimals, so lines stay short and stable. */
static double ms3(double ms)
{
	return (double)(int64_t)(ms * 1000.0 + 0.5) / 1000.0;
}

static size_t result_bytes(struct sl_call *c, bool *is_error)
{
	yyjson_doc *tmp = NULL;
	yyjson_val *v = NULL;
	size_t n = 0;
	char *s;

	*is_error = false;
	if (c->outcome == SL_OUTCOME_OK) {
		v = sl_call_result_view(c, &tmp);
		*is_error = yyjson_is_true(yyjson_obj_get(v, "isError"));
	} else if (c->outcome == SL_OUTCOME_RPC_ERROR) {
		v = c->rpc_error;
	}
	if (v && (s = yyjson_val_write(v, YYJSON_WRITE_ALLOW_INVALID_UNICODE, &n)))
		free(s);
	yyjson_doc_free(tmp);
	return n;
}

char *sl_audit_call_line(struct sl_call *c, const struct timespec *now, size_t *len)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o;
	size_t in_len;
	char *canon, hash[65];
	bool is_error;
	size_t out_len = result_bytes(c, &is_error);

	if (!d)
		sl_oom();
	canon = sl_json_canonical(c->args, &in_len);
	sl_sha256_hex(canon, in_len, hash);
	free(canon);

	o = line_start(d, "call", now, c->session_id, c->who);
	yyjson_mut_obj_add_uint(d, o, "call", c->id);
	yyjson_mut_obj_add_strcpy(d, o, "server", c->up ? c->up->name : "");
	yyjson_mut_obj_add_strcpy(d, o, "tool", c->tool);
	yyjson_mut_obj_add_str(d, o, "origin", sl_origin_name(c->origin));
	if (c->origin == SL_ORIGIN_CODE)
		yyjson_mut_obj_add_uint(d, o, "program", c->parent);
	else
		yyjson_mut_obj_add_null(d, o, "program");
	yyjson_mut_obj_add_real(d, o, "duration_ms",
				ms3((double)(c->finished_us - c->started_us) / 1000.0));
	yyjson_mut_obj_add_str(d, o, "outcome", sl_outcome_name(c->outcome));
	yyjson_mut_obj_add_bool(d, o, "is_error", is_error);
	yyjson_mut_obj_add_bool(d, o, "cache_hit", c->cache_hit);
	yyjson_mut_obj_add_uint(d, o, "bytes_in", in_len);
	yyjson_mut_obj_add_uint(d, o, "bytes_out", out_len);
	yyjson_mut_obj_add_strcpy(d, o, "args_sha256", hash);
	/* Whose token the server saw: the caller's own (a perUser server),
	 * the gateway's login, or none of sluice's (stdio, a static header,
	 * or the call never reached a server). */
	add_str_or_null(d, o, "upstream_token", !c->via ? NULL : c->via->user ? "caller" :
						c->via->oauth ? "gateway" : NULL);
	return line_end(d, len);
}

/* The end of a program's or a skill run's line: how it ended and what it did. */
static char *run_end(yyjson_mut_doc *d, yyjson_mut_val *o, const char *outcome, uint32_t calls,
		     double duration_ms, size_t output_bytes, size_t *len)
{
	yyjson_mut_obj_add_strcpy(d, o, "outcome", outcome ? outcome : "error");
	yyjson_mut_obj_add_uint(d, o, "calls", calls);
	yyjson_mut_obj_add_real(d, o, "duration_ms", ms3(duration_ms));
	yyjson_mut_obj_add_uint(d, o, "output_bytes", output_bytes);
	return line_end(d, len);
}

char *sl_audit_program_line(uint64_t program_id, uint64_t session_id,
			    const struct sl_caller *who, const char *outcome,
			    uint32_t calls, double duration_ms, size_t output_bytes,
			    const struct timespec *now, size_t *len)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o;

	if (!d)
		sl_oom();
	o = line_start(d, "program", now, session_id, who);
	yyjson_mut_obj_add_uint(d, o, "program", program_id);
	return run_end(d, o, outcome, calls, duration_ms, output_bytes, len);
}

char *sl_audit_skill_line(uint64_t run_id, uint64_t parent_id, uint64_t session_id,
			  const struct sl_caller *who, const char *skill, const char *owner,
			  const char *outcome, uint32_t calls, double duration_ms,
			  size_t output_bytes, const struct timespec *now, size_t *len)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o;

	if (!d)
		sl_oom();
	o = line_start(d, "skill", now, session_id, who);
	yyjson_mut_obj_add_uint(d, o, "program", run_id);
	yyjson_mut_obj_add_uint(d, o, "parent", parent_id);
	yyjson_mut_obj_add_strcpy(d, o, "skill", skill);
	add_str_or_null(d, o, "owner", owner);
	return run_end(d, o, outcome, calls, duration_ms, output_bytes, len);
}

char *sl_audit_admin_line(const char *action, const char *server, const char *tool,
			  const char *peer, const char *outcome, const char *detail,
			  const struct timespec *now, size_t *len)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o;

	if (!d)
		sl_oom();
	o = line_start(d, "admin", now, 0, NULL);
	yyjson_mut_obj_add_strcpy(d, o, "action", action);
	add_str_or_null(d, o, "server", server);
	add_str_or_null(d, o, "tool", tool);
	yyjson_mut_obj_add_strcpy(d, o, "peer", peer);
	yyjson_mut_obj_add_strcpy(d, o, "outcome", outcome);
	add_str_or_null(d, o, "detail", detail);
	return line_end(d, len);
}

/* ---- writing ---------------------------------------------------------------------- */

/* The file first, the record of truth; then a copy to each collector's
 * queue (type names the record for syslog's MSGID). */
static void emit(const struct audit *A, struct sl_metrics *m, const char *type,
		 const struct timespec *ts, char *line, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t w = write(A->fd, line + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			/* Never fail a call over its log line; say it once per line. */
			sl_log(SL_LOG_ERROR, "audit: write failed: %s", w < 0 ? strerror(errno) : "no progress");
			/* A disk that filled up mid-line: cut the part that went out,
			 * so the file holds whole lines only. With O_APPEND the
			 * offset is the end of what was written (no stat per line). */
			if (off > 0 && A->regular) {
				off_t end = lseek(A->fd, 0, SEEK_CUR);
				if (end < (off_t)off || ftruncate(A->fd, end - (off_t)off) < 0)
					sl_log(SL_LOG_ERROR, "audit: cannot remove a partial line: %s",
					       strerror(errno));
			}
			break;
		}
		off += (size_t)w;
	}
	if (A->syslog)
		audit_syslog_put(A->syslog, m, type, ts, line, len);
	if (A->otlp)
		audit_otlp_put(A->otlp, m, type, ts, line, len);
	free(line);
}

static void now_real(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

static void audit_output(void *state, struct sl_output *o)
{
	struct timespec ts;
	size_t len;
	char *line;
	if (!state)
		return;
	now_real(&ts);
	line = sl_audit_program_line(o->program, o->session_id, o->who, o->outcome, o->calls,
				     o->duration_ms, o->output_bytes, &ts, &len);
	emit(state, o->metrics, "program", &ts, line, len);
}

static void audit_finish(void *state, struct sl_call *c)
{
	struct timespec ts;
	size_t len;
	char *line;

	if (sl_log_enabled(SL_LOG_DEBUG))
		sl_log(SL_LOG_DEBUG, "call %llu %s.%s origin=%s outcome=%s %.3f ms%s%s",
		       (unsigned long long)c->id, c->up->name, c->tool, sl_origin_name(c->origin),
		       sl_outcome_name(c->outcome), (double)(c->finished_us - c->started_us) / 1000.0,
		       c->why ? ": " : "", c->why ? c->why : "");
	if (!state)
		return;
	now_real(&ts);
	line = sl_audit_call_line(c, &ts, &len);
	emit(state, c->gen->metrics, "call", &ts, line, len);
}

void sl_audit_admin(const struct sl_gen *gen, const char *action, const char *server,
		    const char *tool, const char *peer, const char *outcome, const char *detail)
{
	struct audit *A = sl_gen_state(gen, &sl_stage_audit);
	struct timespec ts;
	size_t len;
	char *line;

	sl_log(SL_LOG_INFO, "admin: %s %s%s%s from %s: %s%s%s", action, server ? server : "",
	       tool ? "." : "", tool ? tool : "", peer, outcome, detail ? ": " : "",
	       detail ? detail : "");
	if (!A)
		return;
	now_real(&ts);
	line = sl_audit_admin_line(action, server, tool, peer, outcome, detail, &ts, &len);
	emit(A, gen->metrics, "admin", &ts, line, len);
}

void sl_audit_skill(const struct sl_gen *gen, uint64_t run_id, uint64_t parent_id,
		    uint64_t session_id, const struct sl_caller *who, const char *skill,
		    const char *owner, const char *outcome, uint32_t calls, double duration_ms,
		    size_t output_bytes)
{
	struct audit *A = sl_gen_state(gen, &sl_stage_audit);
	struct timespec ts;
	size_t len;
	char *line;

	if (!A)
		return;
	now_real(&ts);
	line = sl_audit_skill_line(run_id, parent_id, session_id, who, skill, owner, outcome, calls,
				   duration_ms, output_bytes, &ts, &len);
	emit(A, gen->metrics, "skill", &ts, line, len);
}

int sl_audit_tail(const struct sl_gen *gen, size_t max_lines, size_t max_bytes,
		  char ***lines, size_t *n, struct sl_err *err)
{
	struct audit *A = sl_gen_state(gen, &sl_stage_audit);
	size_t want = max_lines * (max_bytes + 1), got = 0, cap = max_lines + 1;
	char *buf, *p, *end;
	struct stat st;
	off_t from;
	int fd, rc = SL_OK;

	*lines = NULL;
	*n = 0;
	if (!A)
		return SL_OK;
	fd = open(A->file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0) {
		sl_err_set(err, "cannot read %s: %s", A->file, strerror(errno));
		if (fd >= 0)
			close(fd);
		return SL_ERR_IO;
	}
	/* Only the end of the file, and the byte before it: a newline there
	 * means the window starts on a whole line. */
	from = st.st_size > (off_t)want ? st.st_size - (off_t)want - 1 : 0;
	want += from > 0;
	buf = sl_alloc(want + 1);
	while (got < want) {
		ssize_t r = pread(fd, buf + got, want - got, from + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			sl_err_set(err, "cannot read %s: %s", A->file, strerror(errno));
			rc = SL_ERR_IO;
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	end = buf + got;
	p = buf;
	/* Started mid-line: that part is not a line. */
	if (from > 0) {
		p = memchr(buf, '\n', got);
		p = p ? p + 1 : end;
	}
	*lines = sl_alloc(cap * sizeof(**lines));
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (*n == max_lines) {
			/* Keep the newest: drop the oldest. */
			free((*lines)[0]);
			memmove(*lines, *lines + 1, (max_lines - 1) * sizeof(**lines));
			(*n)--;
		}
		(*lines)[(*n)++] = sl_strndup(p, len < max_bytes ? len : max_bytes);
		p = nl ? nl + 1 : end;
	}
out:
	free(buf);
	close(fd);
	return rc;
}

/* ---- config ------------------------------------------------------------------------- */

static void audit_fini(void *state)
{
	struct audit *A = state;
	/* At exit (a restart_only stage): the copies get what is queued. */
	audit_syslog_free(A->syslog);
	audit_otlp_free(A->otlp);
	close(A->fd);
	free(A->file);
	free(A);
}

/* The settings of sluice.audit, read before the state exists (none when
 * disabled). */
struct audit_conf {
	bool enabled;
	char *file;
	struct audit_syslog_conf syslog;
	struct audit_otlp_conf otlp;
};

#define AC(field) SL_CONF_AT(struct audit_conf, field)
static const struct sl_conf_key audit_keys[] = {
	{ "enabled", SL_CONF_BOOL, AC(enabled), .dflt = 1, .doc = "`false`: no lines at all." },
	{ "file", SL_CONF_STRING, AC(file), .min = 1, .shape = "a non-empty path",
	  .dflt_doc = "`$XDG_STATE_HOME/sluice/audit.jsonl`, else `~/.local/state/sluice/audit.jsonl`",
	  .doc = "Opened at start in append mode (created `0600`); one that cannot be opened "
		 "stops sluice. Never stderr by default, where log lines are. Every record is "
		 "written here, whatever happens to the copies sent to collectors." },
	{ "syslog", SL_CONF_OBJECT, AC(syslog), .sub = &audit_syslog_section,
	  .doc = "A copy of every record to a syslog collector (`sluice.audit.syslog`)." },
	{ "otlp", SL_CONF_OBJECT, AC(otlp), .sub = &audit_otlp_section,
	  .doc = "A copy of every record as OpenTelemetry logs (`sluice.audit.otlp`)." },
};
#undef AC

static const struct sl_conf_section audit_conf = {
	"sluice.audit",
	"The audit log: one JSON line per call and per program, never a value, in a file and, "
	"as copies, to syslog and OpenTelemetry collectors (docs/stages/audit.md). A change "
	"takes effect at the next start.",
	audit_keys, SL_COUNT(audit_keys), SL_CONF_STRICT, NULL,
};

static int audit_init(const struct sl_config *cfg, const struct sl_services *svc,
		      yyjson_val *section, void **state, struct sl_err *err)
{
	struct audit_conf ac = { 0 };
	struct audit *A;
	struct stat st;
	char *dir;
	int fd, rc = sl_conf_load(&audit_conf, section, &ac, err);

	if (rc < 0 || !ac.enabled)
		goto out;
	if (!ac.file) {
		dir = sl_state_dir();
		if (!dir) {
			sl_err_set(err, "sluice.audit: no state directory for the default file (set "
				   "sluice.audit.file, XDG_STATE_HOME or HOME)");
			rc = SL_ERR_INVALID;
			goto out;
		}
		if (sl_make_dirs(dir) < 0) {
			sl_err_set(err, "sluice.audit: cannot create %s: %s", dir, strerror(errno));
			free(dir);
			rc = SL_ERR_INVALID;
			goto out;
		}
		ac.file = sl_printf("%s/audit.jsonl", dir);
		free(dir);
	}
	fd = open(ac.file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0) {
		sl_err_set(err, "sluice.audit.file: cannot open %s: %s", ac.file, strerror(errno));
		rc = SL_ERR_INVALID;
		goto out;
	}
	A = sl_alloc(sizeof(*A));
	A->fd = fd;
	A->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	A->file = ac.file;
	ac.file = NULL;
	if ((ac.syslog.url && (rc = audit_syslog_new(&ac.syslog, &A->syslog, err)) < 0) ||
	    (ac.otlp.endpoint && (rc = audit_otlp_new(&ac.otlp, &A->otlp, err)) < 0)) {
		audit_fini(A);
		goto out;
	}
	*state = A;
out:
	free(ac.file);
	audit_syslog_conf_dispose(&ac.syslog);
	audit_otlp_conf_dispose(&ac.otlp);
	return rc;
}

const struct sl_stage sl_stage_audit = {
	.name = "audit",
	.conf = &audit_conf,
	.init = audit_init,
	.fini = audit_fini,
	.finish = audit_finish,
	.output = audit_output,
	/* Its fini sends what the collectors' queues hold by running the loop;
	 * a reload must not throw the queues away. */
	.restart_only = true,
};

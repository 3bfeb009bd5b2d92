/*
 * The process's counters (see metrics.h) and their Prometheus families.
 *
 * Server and tool names come from upstreams: they are cut to a bounded
 * length when a series is made, and escaped (with invalid UTF-8 and control
 * characters replaced) each time they are written, so no name can break a
 * line of the exposition or grow the registry past its bound.
 */
#include "pipeline/metrics.h"
#include "pipeline/call.h"
#include "core/json.h"
#include "upstream/upstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const double sl_metrics_bounds[SL_METRICS_NBOUNDS] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
};

const char *const sl_metrics_program_outcomes[SL_METRICS_NPROGRAM] = {
	"ok", "cancelled", "error", "syntax", "timeout", "cpu", "memory", "output", "calls",
	"crash", "busy", "other",
};

static const char *const where_names[SL_METRICS_NWHERE] = { "arguments", "result", "output",
							    "peer" };

_Static_assert(SL_OUTCOME_INPUT_REQUIRED + 1 == SL_METRICS_NOUTCOME, "one counter per outcome");
_Static_assert(SL_ORIGIN_CODE + 1 == SL_METRICS_NORIGIN, "one counter per origin");

#define OTHER "_other"

/* Appends to a buffer without a cap: it cannot fail. */
#define PUT(b, ...) ((void)!sl_buf_printf((b), __VA_ARGS__))
#define PUTS(b, s) ((void)!sl_buf_appends((b), (s)))

struct sl_metrics *sl_metrics_new(size_t max_series)
{
	struct sl_metrics *m = sl_alloc(sizeof(*m));
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	m->start_time = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	m->max_series = max_series;
	sl_map_init(&m->index);
	return m;
}

struct sl_metrics *sl_metrics_ref(struct sl_metrics *m)
{
	m->refs++;
	return m;
}

void sl_metrics_unref(struct sl_metrics *m)
{
	if (!m || m->refs-- > 0)
		return;
	for (size_t i = 0; i < m->npairs; i++) {
		free(m->pairs[i].server);
		free(m->pairs[i].tool);
	}
	for (size_t i = 0; i < m->nservers; i++)
		free(m->servers[i].server);
	free(m->pairs);
	free(m->servers);
	sl_map_dispose(&m->index);
	free(m);
}

/* ---- series -------------------------------------------------------------------- */

/* s cut to SL_METRICS_LABEL_MAX bytes, not inside a UTF-8 sequence. */
static char *cut(const char *s)
{
	size_t n = strlen(s);
	if (n > SL_METRICS_LABEL_MAX) {
		n = SL_METRICS_LABEL_MAX;
		for (int k = 0; k < 3 && n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80; k++)
			n--;
	}
	return sl_strndup(s, n);
}

static char *pair_key(const char *server, const char *tool)
{
	return sl_printf("%zu:%s%s", strlen(server), server, tool);
}

static struct sl_metrics_pair *pair_find(struct sl_metrics *m, const char *server, const char *tool)
{
	char *k = pair_key(server, tool);
	uintptr_t i = (uintptr_t)sl_map_get(&m->index, k);
	free(k);
	return i ? &m->pairs[i - 1] : NULL;
}

/* Takes server and tool. */
static struct sl_metrics_pair *pair_add(struct sl_metrics *m, char *server, char *tool, bool other)
{
	struct sl_metrics_pair *p;
	char *k = pair_key(server, tool);

	if ((m->npairs & (m->npairs - 1)) == 0) /* 0, 1, 2, 4...: grow by doubling */
		m->pairs = sl_realloc(m->pairs, (m->npairs ? 2 * m->npairs : 1) * sizeof(*m->pairs));
	p = &m->pairs[m->npairs++];
	memset(p, 0, sizeof(*p));
	p->server = server;
	p->tool = tool;
	sl_map_put(&m->index, k, (void *)(uintptr_t)m->npairs);
	free(k);
	m->nother += other;
	return p;
}

/* Whether up lists tool: asked once per name that has no series yet. */
static bool advertised(const struct sl_upstream *up, const char *tool)
{
	if (!up || !tool)
		return false;
	for (size_t i = 0; i < up->tools.n; i++) {
		const char *name = sl_json_str(up->tools.items[i], "name");
		if (name && strcmp(name, tool) == 0)
			return true;
	}
	return false;
}

/* The pair a call of up's tool counts under (see metrics.h, Bounds): its
 * own once it has one. A name the server does not advertise never takes a
 * series of its own: callers choose such names, so they would fill the
 * bound and push the real tools into _other. The list is looked at only
 * for a name without a series, not on every call. */
static struct sl_metrics_pair *pair_of(struct sl_metrics *m, const char *server, const char *tool,
				       const struct sl_upstream *up)
{
	char *s = cut(server), *t = cut(tool);
	struct sl_metrics_pair *p = pair_find(m, s, t);

	if (p) {
		free(s);
		free(t);
		return p;
	}
	if (m->npairs - m->nother < m->max_series && advertised(up, tool))
		return pair_add(m, s, t, false);
	free(t);
	if ((p = pair_find(m, s, OTHER))) {
		free(s);
		return p;
	}
	if (m->nother < SL_METRICS_OTHER_MAX)
		return pair_add(m, s, sl_strdup(OTHER), true);
	free(s);
	if ((p = pair_find(m, OTHER, OTHER)))
		return p;
	return pair_add(m, sl_strdup(OTHER), sl_strdup(OTHER), true);
}

static struct sl_metrics_server *server_of(struct sl_metrics *m, const char *server)
{
	char *s = cut(server);
	struct sl_metrics_server *v;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < m->nservers; i++)
			if (!strcmp(m->servers[i].server, s)) {
				free(s);
				return &m->servers[i];
			}
		if (m->nservers < SL_METRICS_SERVERS_MAX || !strcmp(s, OTHER))
			break;
		/* Full: the one past the bound collects the rest. */
		free(s);
		s = sl_strdup(OTHER);
	}
	if ((m->nservers & (m->nservers - 1)) == 0)
		m->servers = sl_realloc(m->servers,
					(m->nservers ? 2 * m->nservers : 1) * sizeof(*m->servers));
	v = &m->servers[m->nservers++];
	memset(v, 0, sizeof(*v));
	v->server = s;
	return v;
}

/* ---- counting ------------------------------------------------------------------- */

void sl_metrics_observe(struct sl_metrics_hist *h, double secs)
{
	size_t b = 0;
	while (b < SL_METRICS_NBOUNDS && secs > sl_metrics_bounds[b])
		b++;
	h->n[b]++;
	h->sum += secs;
}

/* The server's list as the gateway holds it has the tool. */
void sl_metrics_call(struct sl_metrics *m, const struct sl_call *c)
{
	const char *server = c->up ? c->up->name : "";
	double secs = (double)(c->finished_us - c->started_us) / 1e6;

	if (!m)
		return;
	pair_of(m, server, c->tool ? c->tool : "", c->up)
		->calls[c->origin][c->outcome]++;
	sl_metrics_observe(&server_of(m, server)->latency, secs);
	if (c->cache_hit)
		m->cache_hits++;
	else if (c->cache_lookup)
		m->cache_misses++;
	m->moved++;
}

size_t sl_metrics_program_kind(const char *outcome)
{
	if (!outcome)
		outcome = "error";
	for (size_t i = 0; i < SL_METRICS_NPROGRAM - 1; i++)
		if (!strcmp(sl_metrics_program_outcomes[i], outcome))
			return i;
	return SL_METRICS_NPROGRAM - 1;
}

void sl_metrics_program(struct sl_metrics *m, const struct sl_output *o)
{
	if (!m)
		return;
	m->programs[sl_metrics_program_kind(o->outcome)]++;
	sl_metrics_observe(&m->program_time, o->duration_ms / 1000.0);
	m->moved++;
}

void sl_metrics_redacted(struct sl_metrics *m, enum sl_metrics_where where, size_t n)
{
	if (!m || !n)
		return;
	m->redactions[where] += n;
	m->moved++;
}

void sl_metrics_guard(struct sl_metrics *m, enum sl_metrics_where where, bool withheld)
{
	if (!m)
		return;
	m->guard[where][withheld]++;
	m->moved++;
}

static const char *const sink_names[SL_METRICS_NSINK] = {
	[SL_METRICS_SYSLOG] = "syslog",
	[SL_METRICS_OTLP] = "otlp",
};

static const char *const work_names[SL_METRICS_NWORK] = {
	[SL_METRICS_PIN_HASH] = "pin_hash",
	[SL_METRICS_PRESENTED] = "presented",
	[SL_METRICS_LISTING] = "listing",
	[SL_METRICS_INDEXED] = "indexed",
	[SL_METRICS_SIGNATURE] = "signature",
};

void sl_metrics_work(struct sl_metrics *m, enum sl_metrics_work kind, size_t n)
{
	if (!m || !n)
		return;
	m->work[kind] += n;
	m->moved++;
}

const char *sl_metrics_where_name(enum sl_metrics_where w)
{
	return where_names[w];
}

/* ---- the text format -------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at s (n bytes left), 0 if none. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned cp;
	size_t k;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		k = 2, cp = s[0] & 0x1F;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		k = 3, cp = s[0] & 0x0F;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		k = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n < k)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return k;
}

void sl_metrics_label(struct sl_buf *b, const char *name, const char *value, size_t len)
{
	const unsigned char *s = (const unsigned char *)value;
	size_t i = 0, k;

	PUT(b, "%s=\"", name);
	while (i < len) {
		if (s[i] == '\\' || s[i] == '"') {
			PUT(b, "\\%c", s[i]);
			i++;
		} else if (s[i] == '\n') {
			PUTS(b, "\\n");
			i++;
		} else if (s[i] < 0x20 || s[i] == 0x7F || !(k = utf8_seq(s + i, len - i))) {
			PUTS(b, "\xEF\xBF\xBD"); /* U+FFFD: nothing a parser must guess about */
			i++;
		} else {
			(void)!sl_buf_append(b, s + i, k);
			i += k;
		}
	}
	PUTS(b, "\"");
}

static void family(struct sl_buf *b, const char *name, const char *type, const char *help)
{
	PUT(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The shortest decimal form of v that reads back equal (0.0001, not
 * 0.00010000000000000000479), so le labels are the bounds as written. */
static void number(struct sl_buf *b, double v)
{
	for (int p = 1; p <= 17; p++) {
		char s[32];
		snprintf(s, sizeof(s), "%.*g", p, v);
		/* Positional where it reads back ("30", not "3e+01"). */
		if ((strtod(s, NULL) == v && !strchr(s, 'e')) || p == 17) {
			PUTS(b, s);
			return;
		}
	}
}

void sl_metrics_hist_render(struct sl_buf *b, const char *name, const char *labels,
			    const struct sl_metrics_hist *h)
{
	const char *sep = labels[0] ? "," : "";
	uint64_t cum = 0;

	for (size_t i = 0; i <= SL_METRICS_NBOUNDS; i++) {
		cum += h->n[i];
		PUT(b, "%s_bucket{%s%sle=\"", name, labels, sep);
		if (i < SL_METRICS_NBOUNDS)
			number(b, sl_metrics_bounds[i]);
		else
			PUTS(b, "+Inf");
		PUT(b, "\"} %llu\n", (unsigned long long)cum);
	}
	PUT(b, "%s_sum%s%s%s ", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "");
	number(b, h->sum);
	PUT(b, "\n%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
	    (unsigned long long)cum);
}

void sl_metrics_render(const struct sl_metrics *m, struct sl_buf *b)
{
	struct sl_buf l;

	family(b, "sluice_tool_calls_total", "counter",
	       "Tool calls by server, tool, origin (direct, router, code) and outcome.");
	for (size_t i = 0; i < m->npairs; i++) {
		const struct sl_metrics_pair *p = &m->pairs[i];
		for (int o = 0; o < SL_METRICS_NORIGIN; o++)
			for (int k = 0; k < SL_METRICS_NOUTCOME; k++) {
				if (!p->calls[o][k])
					continue;
				PUTS(b, "sluice_tool_calls_total{");
				sl_metrics_label(b, "server", p->server, strlen(p->server));
				PUTS(b, ",");
				sl_metrics_label(b, "tool", p->tool, strlen(p->tool));
				PUT(b, ",origin=\"%s\",outcome=\"%s\"} %llu\n",
				    sl_origin_name((enum sl_origin)o), sl_outcome_name((enum sl_outcome)k),
				    (unsigned long long)p->calls[o][k]);
			}
	}

	family(b, "sluice_tool_call_duration_seconds", "histogram",
	       "Tool call latency per server, the pipeline's stages included.");
	sl_buf_init(&l, SIZE_MAX);
	for (size_t i = 0; i < m->nservers; i++) {
		sl_buf_reset(&l);
		sl_metrics_label(&l, "server", m->servers[i].server, strlen(m->servers[i].server));
		sl_metrics_hist_render(b, "sluice_tool_call_duration_seconds", l.data,
				       &m->servers[i].latency);
	}
	sl_buf_dispose(&l);

	family(b, "sluice_programs_total", "counter",
	       "Code-mode programs by outcome (ok, cancelled, failed) and failure kind.");
	for (size_t k = 0; k < SL_METRICS_NPROGRAM; k++)
		PUT(b, "sluice_programs_total{outcome=\"%s\",failure=\"%s\"} %llu\n",
		    k == 0 ? "ok" : k == 1 ? "cancelled" : "failed",
		    k < 2 ? "none" : sl_metrics_program_outcomes[k], (unsigned long long)m->programs[k]);
	family(b, "sluice_program_duration_seconds", "histogram",
	       "Code-mode program wall time, from start to answer.");
	sl_metrics_hist_render(b, "sluice_program_duration_seconds", "", &m->program_time);

	family(b, "sluice_cache_lookups_total", "counter",
	       "Tool calls the cache stage looked up, by result.");
	PUT(b, "sluice_cache_lookups_total{result=\"hit\"} %llu\n",
	    (unsigned long long)m->cache_hits);
	PUT(b, "sluice_cache_lookups_total{result=\"miss\"} %llu\n",
	    (unsigned long long)m->cache_misses);

	family(b, "sluice_redactions_total", "counter",
	       "Secrets the redaction stage replaced, by where they were found.");
	for (int w = 0; w < SL_METRICS_NWHERE; w++)
		PUT(b, "sluice_redactions_total{where=\"%s\"} %llu\n", where_names[w],
		    (unsigned long long)m->redactions[w]);

	family(b, "sluice_guard_flags_total", "counter",
	       "Texts the injection guard scored at its threshold, by where and action.");
	for (int w = SL_METRICS_RESULT; w < SL_METRICS_NWHERE; w++)
		for (int a = 0; a < 2; a++)
			PUT(b, "sluice_guard_flags_total{where=\"%s\",action=\"%s\"} %llu\n",
			    where_names[w], a ? "withheld" : "warned", (unsigned long long)m->guard[w][a]);

	family(b, "sluice_catalog_work_total", "counter",
	       "Work done on tool definitions, by kind: it follows the catalog's changes, not requests.");
	for (int k = 0; k < SL_METRICS_NWORK; k++)
		PUT(b, "sluice_catalog_work_total{kind=\"%s\"} %llu\n", work_names[k],
		    (unsigned long long)m->work[k]);

	family(b, "sluice_audit_records_total", "counter",
	       "Audit records per network sink: sent, or dropped because its queue was full "
	       "(the audit file holds every record).");
	for (int k = 0; k < SL_METRICS_NSINK; k++) {
		PUT(b, "sluice_audit_records_total{sink=\"%s\",result=\"sent\"} %llu\n",
		    sink_names[k], (unsigned long long)m->audit_sent[k]);
		PUT(b, "sluice_audit_records_total{sink=\"%s\",result=\"dropped\"} %llu\n",
		    sink_names[k], (unsigned long long)m->audit_dropped[k]);
	}
	family(b, "sluice_audit_queued_records", "gauge",
	       "Audit records waiting for a network sink's collector.");
	for (int k = 0; k < SL_METRICS_NSINK; k++)
		PUT(b, "sluice_audit_queued_records{sink=\"%s\"} %llu\n", sink_names[k],
		    (unsigned long long)m->audit_queued[k]);
}

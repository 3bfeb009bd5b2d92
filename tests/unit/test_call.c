/* Unit tests of the pipeline hold in src/pipeline/call.c (sl_calls_hold,
 * sl_calls_release), which a config reload uses to replace the stages'
 * settings between calls: calls started while held queue in order, a queued
 * call that is cancelled finishes at once, a queued call freed leaves the
 * queue, release runs the queue. The upstream is a bare struct that is not
 * running, so each call that runs ends without an answer from it (failed or
 * denied, never pending). */
#include "unit.h"

#include "pipeline/call.h"

#include <stdio.h>
#include <stdlib.h>

static const struct sl_config gcfg = { .call_timeout_ms = 1000 };
static struct sl_upstream bare = { .name = (char *)"bare", .gcfg = &gcfg };

struct seen {
	int done;
	int order[8];
	int n;
	enum sl_outcome last;
};

static void on_done(void *ctx, struct sl_call *c)
{
	struct seen *s = ctx;
	s->done++;
	s->last = c->outcome;
	if (s->n < 8)
		s->order[s->n++] = (int)c->timeout_ms; /* the test's tag for the call */
}

static int idles;
static void on_idle(void *ctx)
{
	idles++;
}

static struct sl_call *mk(struct seen *s, int tag)
{
	return sl_call_new(SL_ORIGIN_DIRECT, &bare, "echo", NULL, (uint64_t)tag, on_done, NULL, s);
}

TEST(call_hold_queues_cancels_frees_and_releases_in_order)
{
	struct seen s = { 0 };
	struct sl_call *a = mk(&s, 1), *b = mk(&s, 2), *c = mk(&s, 3), *d = mk(&s, 4), *e;

	idles = 0;
	CHECK_INT(sl_calls_running(), 0);
	/* Nothing running: the hold is idle at once. */
	sl_calls_hold(on_idle, NULL);
	CHECK_INT(idles, 1);

	sl_call_run(a);
	sl_call_run(b);
	sl_call_run(c);
	sl_call_run(d);
	CHECK_INT(s.done, 0);          /* all queued, none started */
	CHECK_INT(sl_calls_running(), 0);

	sl_call_cancel(b, "the client cancelled");
	CHECK_INT(s.done, 1);          /* a queued call that is cancelled ends now */
	CHECK(s.last == SL_OUTCOME_CANCELLED);
	sl_call_free(b);
	sl_call_free(c);               /* freed while queued: it leaves the queue */

	sl_calls_release();
	CHECK_INT(s.done, 3);          /* a and d ran, in arrival order */
	CHECK_INT(s.order[1], 1);
	CHECK_INT(s.order[2], 4);
	CHECK(s.last == SL_OUTCOME_FAILED || s.last == SL_OUTCOME_DENIED);
	CHECK_INT(sl_calls_running(), 0);
	CHECK_INT(idles, 1);

	/* Released: a new call runs at once. */
	e = mk(&s, 5);
	sl_call_run(e);
	CHECK_INT(s.done, 4);
	CHECK_INT(s.order[3], 5);
	sl_call_free(a);
	sl_call_free(d);
	sl_call_free(e);
}

/* ---- sl_stages_reload: a config reload's new stage settings -------------------- */

static struct sl_config *cfg_of(const char *sluice)
{
	char *text = sl_printf("{\"mcpServers\":{},\"sluice\":{\"pinning\":{\"stateDir\":"
			       "\"/nonexistent/sluice-unit\",\"new\":\"off\",\"changed\":\"off\"}%s}}",
			       sluice);
	struct sl_config *cfg = NULL;
	struct sl_err err;
	CHECK_INT(sl_config_parse("unit.json", text, strlen(text), &cfg, &err), 0);
	free(text);
	return cfg;
}

TEST(stages_reload_replaces_changed_sections_and_keeps_old_on_failure)
{
	static const char merge[] = "{\"name\":\"merge_pull_request\"}";
	struct sl_config *deny = cfg_of(",\"policy\":{\"rules\":[{\"match\":\"github.merge_*\",\"action\":\"deny\"}]}");
	struct sl_config *none = cfg_of("");
	struct sl_config *bad = cfg_of(",\"policy\":{\"rules\":[{\"match\":\"github.*\",\"action\":\"nope\"}]}");
	struct sl_config *tele = cfg_of(",\"telemetry\":{\"endpoint\":\"http://127.0.0.1:9/\"}");
	struct sl_upstream gh = { .name = (char *)"github", .gcfg = &gcfg };
	yyjson_doc *tool = yyjson_read(merge, sizeof(merge) - 1, 0);
	struct sl_err err = { 0 };
	char skipped[64];
	size_t n = 99;

	CHECK(deny && none && bad && tele);
	CHECK_INT(sl_stages_init(deny, &err), 0);
	CHECK(!sl_stages_visible(&gh, yyjson_doc_get_root(tool)));
	CHECK_INT(sl_stages_changed(deny, deny), 0);
	CHECK_INT(sl_stages_changed(deny, none), 1);

	/* The policy section went away: the tool is allowed again. */
	CHECK_INT(sl_stages_reload(deny, none, &n, skipped, sizeof(skipped), &err), 0);
	CHECK_INT(n, 1);
	CHECK_STR(skipped, "");
	CHECK(sl_stages_visible(&gh, yyjson_doc_get_root(tool)));

	/* A section its stage refuses: an error naming it, the old settings back. */
	CHECK(sl_stages_reload(none, deny, &n, skipped, sizeof(skipped), &err) == 0);
	CHECK(!sl_stages_visible(&gh, yyjson_doc_get_root(tool)));
	CHECK(sl_stages_reload(deny, bad, &n, skipped, sizeof(skipped), &err) < 0);
	CHECK(strstr(err.msg, "sluice.policy") != NULL);
	CHECK_INT(n, 0);
	CHECK(!sl_stages_visible(&gh, yyjson_doc_get_root(tool)));

	/* Telemetry's section takes effect at restart only (policy's goes). */
	CHECK_INT(sl_stages_reload(deny, tele, &n, skipped, sizeof(skipped), &err), 0);
	CHECK_INT(n, 1);
	CHECK_STR(skipped, "telemetry");
	CHECK(sl_stages_visible(&gh, yyjson_doc_get_root(tool)));

	sl_stages_shutdown();
	yyjson_doc_free(tool);
	sl_config_free(deny);
	sl_config_free(none);
	sl_config_free(bad);
	sl_config_free(tele);
}

/* Unit tests of the call engine (src/pipeline/call.c) and of generations
 * (src/pipeline/gen.c), driven with fake stages: the order of the hooks,
 * what each return code does, a cancel while a stage holds the call
 * suspended, and a reload while a call is in flight. The upstream is a
 * bare struct that is not running, so a call that reaches dispatch fails
 * there at once ("not running"), never waits. */
#include "unit.h"

#include "fixture.h"

#include <stdio.h>
#include <stdlib.h>

static const struct sl_config gcfg = { .call_timeout_ms = 1000 };
static struct sl_upstream bare = { .name = (char *)"bare", .gcfg = &gcfg };

/* What the fake stages saw, in order: "a.req", "b.res", "a.fin" ... */
static char trace[512];

static void note(const char *stage, const char *what)
{
	size_t n = strlen(trace);
	snprintf(trace + n, sizeof(trace) - n, "%s%s.%s", n ? " " : "", stage, what);
}

/* A fake stage's state: its name, what its request hook returns, and
 * counters a test reads. */
struct fake {
	char name[8];
	enum sl_stage_rc on_request;
	struct sl_call *held;  /* suspended by this stage (AGAIN) */
	int cancels;
	const struct sl_services *svc; /* what init was handed */
};
static int inits, finis;

static int fake_init(const struct sl_config *cfg, const struct sl_services *svc,
		     yyjson_val *section, void **state, struct sl_err *err)
{
	struct fake *f = sl_alloc(sizeof(*f));
	const char *mode = section ? yyjson_get_str(yyjson_obj_get(section, "request")) : NULL;

	if (mode && strcmp(mode, "refuse") == 0) {
		sl_err_set(err, "sluice.fake: refused");
		free(f);
		return SL_ERR_INVALID;
	}
	f->on_request = !mode ? SL_STAGE_NEXT :
			strcmp(mode, "done") == 0 ? SL_STAGE_DONE :
			strcmp(mode, "again") == 0 ? SL_STAGE_AGAIN :
			strcmp(mode, "error") == 0 ? SL_STAGE_ERROR : SL_STAGE_DECLINED;
	f->svc = svc;
	inits++;
	*state = f;
	return SL_OK;
}

static void fake_fini(void *state)
{
	finis++;
	free(state);
}

static enum sl_stage_rc fake_request(void *state, struct sl_call *c)
{
	struct fake *f = state;
	note(f->name[0] ? f->name : "?", "req");
	if (f->on_request == SL_STAGE_DONE)
		sl_call_set_error(c, SL_OUTCOME_DENIED, "denied by %s", f->name);
	if (f->on_request == SL_STAGE_AGAIN)
		f->held = c;
	return f->on_request;
}

static enum sl_stage_rc fake_response(void *state, struct sl_call *c)
{
	note(((struct fake *)state)->name, "res");
	return SL_STAGE_NEXT;
}

static void fake_finish(void *state, struct sl_call *c)
{
	note(((struct fake *)state)->name, "fin");
}

static void fake_cancel(void *state, struct sl_call *c)
{
	struct fake *f = state;
	f->cancels++;
	f->held = NULL;
	sl_call_resume(c);
}

/* Two stages with the same hooks. They borrow the names of real sections,
 * which the config loader accepts and leaves to the stage. */
static const struct sl_stage stage_a = { .name = "cache", .init = fake_init, .fini = fake_fini,
	.request = fake_request, .response = fake_response, .finish = fake_finish,
	.cancel = fake_cancel };
static const struct sl_stage stage_b = { .name = "guard", .init = fake_init, .fini = fake_fini,
	.request = fake_request, .response = fake_response, .finish = fake_finish,
	.cancel = fake_cancel };
static const struct sl_stage *const table[] = { &stage_a, &stage_b };

/* A generation of the fake table from a "sluice" object. */
static struct sl_gen *gen_of(const char *sluice, const struct sl_gen *prev, struct sl_err *err)
{
	char *text = sl_printf("{\"mcpServers\": {}, \"sluice\": %s}", sluice);
	struct sl_config *cfg = NULL;
	struct sl_gen *g = NULL;

	err->msg[0] = '\0';
	if (sl_config_parse("unit.json", text, strlen(text), &cfg, err) == SL_OK &&
	    sl_gen_new(cfg, prev, table, SL_COUNT(table), &g, err) == SL_OK) {
		strcpy(((struct fake *)sl_gen_state(g, &stage_a))->name, "a");
		strcpy(((struct fake *)sl_gen_state(g, &stage_b))->name, "b");
	}
	sl_config_unref(cfg);
	free(text);
	return g;
}

struct seen {
	int done;
	enum sl_outcome outcome;
};

static void on_done(void *ctx, struct sl_call *c)
{
	struct seen *s = ctx;
	s->done++;
	s->outcome = c->outcome;
}

static struct sl_call *run(struct sl_gen *g, struct seen *s)
{
	struct sl_call *c = sl_call_new(g, SL_ORIGIN_DIRECT, &bare, "echo", NULL, 100, on_done, NULL, s);
	trace[0] = '\0';
	sl_call_run(c);
	return c;
}

TEST(call_engine_runs_hooks_in_table_order)
{
	struct sl_err err;
	struct seen s = { 0 };
	struct sl_gen *g = gen_of("{}", NULL, &err);
	struct sl_call *c;

	CHECK(g != NULL);
	c = run(g, &s);
	/* Dispatch to the bare upstream fails at once: the response half still runs. */
	CHECK_STR(trace, "a.req b.req a.res b.res a.fin b.fin");
	CHECK_INT(s.done, 1);
	CHECK(s.outcome == SL_OUTCOME_FAILED);
	sl_call_free(c);
	sl_gen_unref(g);
}

TEST(call_engine_return_codes)
{
	struct sl_err err;
	struct seen s = { 0 };
	struct sl_gen *g;
	struct sl_call *c;

	/* DONE: the rest of the request half and dispatch are skipped. */
	g = gen_of("{\"cache\": {\"request\": \"done\"}}", NULL, &err);
	c = run(g, &s);
	CHECK_STR(trace, "a.req a.res b.res a.fin b.fin");
	CHECK(s.outcome == SL_OUTCOME_DENIED);
	CHECK_STR(c->why, "denied by a");
	sl_call_free(c);
	sl_gen_unref(g);

	/* DECLINED: not its business, the next stage runs. */
	g = gen_of("{\"cache\": {\"request\": \"declined\"}}", NULL, &err);
	c = run(g, &s);
	CHECK_STR(trace, "a.req b.req a.res b.res a.fin b.fin");
	sl_call_free(c);
	sl_gen_unref(g);

	/* ERROR: the call fails naming the stage and goes to finish. */
	g = gen_of("{\"guard\": {\"request\": \"error\"}}", NULL, &err);
	c = run(g, &s);
	CHECK_STR(trace, "a.req b.req a.fin b.fin");
	CHECK(s.outcome == SL_OUTCOME_FAILED);
	CHECK(strstr(c->why, "stage guard failed") != NULL);
	sl_call_free(c);
	sl_gen_unref(g);
}

/* A slot per stage of the call's table (nginx's r->ctx): each stage sees
 * its own, and a stage outside the table has none. */
TEST(call_engine_stage_slots)
{
	struct sl_err err;
	struct seen s = { 0 };
	struct sl_gen *g = gen_of("{}", NULL, &err);
	struct sl_call *c = sl_call_new(g, SL_ORIGIN_DIRECT, &bare, "echo", NULL, 100, on_done, NULL, &s);
	int x, y;

	CHECK(sl_call_ctx(c, &stage_a) == NULL && sl_call_ctx(c, &stage_b) == NULL);
	sl_call_set_ctx(c, &stage_a, &x);
	sl_call_set_ctx(c, &stage_b, &y);
	CHECK(sl_call_ctx(c, &stage_a) == &x);
	CHECK(sl_call_ctx(c, &stage_b) == &y);
	sl_call_set_ctx(c, &sl_stage_policy, &x);
	CHECK(sl_call_ctx(c, &sl_stage_policy) == NULL);
	sl_call_set_ctx(c, &stage_a, NULL);
	CHECK(sl_call_ctx(c, &stage_a) == NULL && sl_call_ctx(c, &stage_b) == &y);
	sl_call_free(c);
	sl_gen_unref(g);
}

TEST(call_engine_suspends_resumes_and_cancels_through_the_hook)
{
	struct sl_err err;
	struct seen s = { 0 };
	struct sl_gen *g = gen_of("{\"cache\": {\"request\": \"again\"}}", NULL, &err);
	struct fake *a = sl_gen_state(g, &stage_a);
	struct sl_call *c = run(g, &s);

	/* AGAIN: suspended in stage a, nothing else ran. */
	CHECK_STR(trace, "a.req");
	CHECK_INT(s.done, 0);
	CHECK(a->held == c);
	/* The owner cancels: the engine tells the holding stage, which resumes
	 * the call; it finishes as cancelled, exactly once. */
	sl_call_cancel(c, "the client cancelled");
	CHECK_INT(a->cancels, 1);
	CHECK_INT(s.done, 1);
	CHECK(s.outcome == SL_OUTCOME_CANCELLED);
	CHECK_STR(trace, "a.req a.fin b.fin");
	sl_call_cancel(c, "again");   /* finished: nothing more happens */
	CHECK_INT(a->cancels, 1);
	CHECK_INT(s.done, 1);
	sl_call_free(c);

	/* A suspended call resumed by its stage goes on where it was. */
	c = run(g, &s);
	a->on_request = SL_STAGE_NEXT;
	a->held = NULL;
	sl_call_resume(c);
	CHECK_STR(trace, "a.req b.req a.res b.res a.fin b.fin");
	CHECK_INT(s.done, 2);
	sl_call_resume(c);            /* a second resume is ignored */
	CHECK_INT(s.done, 2);
	sl_call_free(c);
	sl_gen_unref(g);
}

TEST(gen_shares_unchanged_state_and_refuses_as_a_whole)
{
	struct sl_err err;
	struct seen s = { 0 };
	struct sl_gen *one, *two, *bad;
	struct sl_call *held;
	struct fake *a1;

	inits = finis = 0;
	one = gen_of("{\"cache\": {\"request\": \"again\"}}", NULL, &err);
	CHECK_INT(inits, 2);
	a1 = sl_gen_state(one, &stage_a);
	/* A call in flight on the first generation. */
	held = run(one, &s);
	CHECK(a1->held == held);

	/* Reload: b's section unchanged shares its state, a's changed gets a new one. */
	two = gen_of("{\"cache\": {\"request\": \"declined\"}}", one, &err);
	CHECK(two != NULL);
	CHECK_INT(inits, 3);
	CHECK_INT(two->changed, 1);
	CHECK(sl_gen_state(two, &stage_b) == sl_gen_state(one, &stage_b));
	CHECK(sl_gen_state(two, &stage_a) != sl_gen_state(one, &stage_a));

	/* A section a stage refuses: no generation, the message names it. */
	bad = gen_of("{\"guard\": {\"request\": \"refuse\"}}", two, &err);
	CHECK(bad == NULL);
	CHECK_STR(err.msg, "sluice.fake: refused");
	CHECK_INT(finis, 1);          /* a's state made for it went with it */

	/* The gateway drops the first generation; the call still holds it and
	 * finishes on its settings. */
	sl_gen_unref(one);
	CHECK_INT(finis, 1);
	a1->on_request = SL_STAGE_NEXT;
	sl_call_resume(held);
	CHECK_INT(s.done, 1);
	CHECK_STR(trace, "a.req b.req a.res b.res a.fin b.fin");
	sl_call_free(held);           /* the last holder: a's old state goes */
	CHECK_INT(finis, 2);
	sl_gen_unref(two);
	CHECK_INT(finis, 4);
}

/* ---- the production table: a reload through real stages ------------------------ */

static void on_tools_changed(void *ctx)
{
	(*(int *)ctx)++;
}

TEST(gen_hands_one_set_of_services_to_every_init)
{
	struct sl_err err;
	struct sl_gen *one, *two;
	int heard = 0;

	one = gen_of("{\"cache\": {\"request\": \"again\"}}", NULL, &err);
	CHECK(one != NULL && one->services != NULL);
	CHECK(((struct fake *)sl_gen_state(one, &stage_a))->svc == one->services);
	/* What the gateway registers after the first generation reaches the
	 * states of every generation: they all hold the one set. */
	one->services->tools_changed = on_tools_changed;
	one->services->tools_changed_ctx = &heard;
	two = gen_of("{\"cache\": {\"request\": \"declined\"}}", one, &err);
	CHECK(two != NULL && two->services == one->services);
	CHECK(((struct fake *)sl_gen_state(two, &stage_a))->svc == one->services);
	sl_gen_unref(one);
	sl_services_tools_changed(((struct fake *)sl_gen_state(two, &stage_a))->svc);
	CHECK_INT(heard, 1);
	sl_services_tools_changed(NULL); /* nobody listens: nothing happens */
	sl_gen_unref(two);
}

TEST(gen_reload_of_real_stages_changes_visibility)
{
	static const char merge[] = "{\"name\":\"merge_pull_request\"}";
	static const char pins[] = "\"pinning\":{\"stateDir\":\"/nonexistent/sluice-unit\","
				   "\"new\":\"off\",\"changed\":\"off\"}";
	struct sl_upstream gh = { .name = (char *)"github", .gcfg = &gcfg };
	yyjson_doc *tool = yyjson_read(merge, sizeof(merge) - 1, 0);
	struct sl_err err;
	char *text = sl_printf("{%s,\"policy\":{\"rules\":[{\"match\":\"github.merge_*\","
			       "\"action\":\"deny\"}]}}", pins);
	struct sl_gen *deny = t_gen_sluice(text, &err), *none, *bad;
	struct sl_config *cfg;

	free(text);
	CHECK(deny != NULL);
	CHECK(!sl_stages_visible(deny, NULL, &gh, yyjson_doc_get_root(tool)));

	/* The policy section went away: the tool is visible again. */
	text = sl_printf("{\"mcpServers\":{},\"sluice\":{%s}}", pins);
	CHECK_INT(sl_config_parse("unit.json", text, strlen(text), &cfg, &err), 0);
	free(text);
	CHECK_INT(sl_gen_new(cfg, deny, sl_stages, sl_nstages, &none, &err), 0);
	sl_config_unref(cfg);
	CHECK_INT(none->changed, 1);
	CHECK(sl_stages_visible(none, NULL, &gh, yyjson_doc_get_root(tool)));
	/* The old generation is unchanged by the new one. */
	CHECK(!sl_stages_visible(deny, NULL, &gh, yyjson_doc_get_root(tool)));

	/* A section its stage refuses: an error naming the key. */
	text = sl_printf("{\"mcpServers\":{},\"sluice\":{%s,\"policy\":{\"rules\":[{\"match\":"
			 "\"github.*\",\"action\":\"nope\"}]}}}", pins);
	CHECK_INT(sl_config_parse("unit.json", text, strlen(text), &cfg, &err), 0);
	free(text);
	CHECK(sl_gen_new(cfg, none, sl_stages, sl_nstages, &bad, &err) < 0);
	CHECK(strstr(err.msg, "sluice.policy") != NULL);
	sl_config_unref(cfg);

	/* Telemetry's section takes effect at restart only: it is named. */
	text = sl_printf("{\"mcpServers\":{},\"sluice\":{%s,\"telemetry\":{\"endpoint\":"
			 "\"http://127.0.0.1:9/\"}}}", pins);
	CHECK_INT(sl_config_parse("unit.json", text, strlen(text), &cfg, &err), 0);
	free(text);
	CHECK_INT(sl_gen_new(cfg, none, sl_stages, sl_nstages, &bad, &err), 0);
	CHECK_STR(bad->restart_only, "telemetry");
	CHECK(sl_gen_state(bad, &sl_stage_telemetry) == NULL);
	sl_config_unref(cfg);
	sl_gen_unref(bad);

	sl_gen_unref(none);
	sl_gen_unref(deny);
	yyjson_doc_free(tool);
}

/*
 * Skills as tools (skills.h has the store, docs/internals/SANDBOX.md
 * "Skills" the contract): save_skill, which asks the person before a
 * program becomes a skill; skills__<name> in tools/list (passthrough and
 * hybrid); the skills' lines in search_tools and their .d.ts in
 * describe_tools. Skills exist only where execute_code is offered: each
 * runs as a program.
 *
 * Whose: every listing, search, description and call is for the request's
 * caller (m->who, v->who), who sees the operator's published shelf and
 * their own, never another caller's (gateway/skills.h, shelves); a save
 * goes to the saver's shelf. save_skill is offered where
 * codeMode.saveSkills holds, and policy decides it as skills.save_skill and
 * each skill as skills.<name> (deny: it does not exist for that caller).
 */
#include "gateway/session_int.h"
#include "auth/caller.h"
#include "core/buf.h"
#include "core/common.h"
#include "core/digest.h"
#include "core/escape.h"
#include "core/log.h"
#include "discovery/discovery.h"
#include "gateway/codemode.h"
#include "gateway/skills.h"
#include "gateway/view.h"
#include "pipeline/gen.h"
#include "proto/mcp.h"
#include "shared/once.h"
#include "stages/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKILLS_ANSWER_MAX (4u << 20) /* one search or describe answer */

static int by_name(const void *a, const void *b)
{
	return strcmp((*(const struct sl_skill *const *)a)->name,
		      (*(const struct sl_skill *const *)b)->name);
}

/* Appends to v (room for SL_SKILLS_MAX more) the skills of owner's shelf
 * (NULL: the operator's) that v's caller may run now (readable, approved,
 * not denied), leaving out the names in skip (the caller's own files,
 * which decide for their names). Returns the shelf as read (borrowed). */
static const struct sl_skills_read *load_shelf(const struct sl_view *vw, const char *owner,
					       const struct sl_skills_read *skip,
					       const struct sl_skill **v, size_t *n)
{
	struct sl_skill_shelf sh;
	const struct sl_skills_read *r;

	sl_skills_shelf(owner, &sh);
	r = sl_skills_read(&sh);
	sl_skills_shelf_dispose(&sh);
	for (size_t i = 0; i < r->napproved; i++) {
		const char *name = r->approved[i].name;
		bool shadowed = false;
		for (size_t j = 0; skip && j < skip->nnames && !shadowed; j++)
			shadowed = strcmp(skip->names[j], name) == 0;
		if (!shadowed && !sl_codemode_skill_denied(vw->gw, vw->who, name))
			v[(*n)++] = &r->approved[i];
	}
	return r;
}

/* The skills v's caller may run now: its own, then the operator's that it
 * has no file of the same name of, sorted by name, at most twice
 * SL_SKILLS_MAX; borrowed from the shelves as read (sl_skills_read) until
 * the caller returns. Free the array. */
static const struct sl_skill **load_visible(const struct sl_view *vw, size_t *n)
{
	const struct sl_skill **v = sl_alloc(2 * SL_SKILLS_MAX * sizeof(*v));
	const struct sl_skills_read *own = NULL;
	char owner[SL_SHA256_HEX];

	*n = 0;
	if (sl_skills_owner(vw->who, owner))
		own = load_shelf(vw, owner, NULL, v, n);
	(void)load_shelf(vw, NULL, own, v, n);
	qsort(v, *n, sizeof(*v), by_name);
	return v;
}

/* ---- tools/list --------------------------------------------------------------- */

static const char save_skill_def[] =
	"{\"name\":\"save_skill\",\"description\":\"Save a program that worked, once the person "
	"confirms, as `await tools.skills.<name>(args)` (its code reads `args`).\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
	"\"name\":{\"type\":\"string\"},"
	"\"description\":{\"type\":\"string\"},\"code\":{\"type\":\"string\"},"
	"\"inputSchema\":{\"type\":\"object\"}},"
	"\"required\":[\"name\",\"description\",\"code\"]},"
	"\"annotations\":{\"destructiveHint\":false,\"openWorldHint\":false}}";

static yyjson_mut_val *skill_def(yyjson_mut_doc *d, const struct sl_skill *sk)
{
	yyjson_mut_val *t = yyjson_mut_obj(d), *ann;
	yyjson_doc *schema = sk->schema ? sl_json_read(sk->schema, strlen(sk->schema), 0, NULL) : NULL;
	char *name = sl_printf("%s%s", SL_SKILL_PREFIX, sk->name);

	yyjson_mut_obj_add_strcpy(d, t, "name", name);
	yyjson_mut_obj_add_strcpy(d, t, "description", sk->description);
	if (schema) {
		yyjson_mut_obj_add_val(d, t, "inputSchema",
				       yyjson_val_mut_copy(d, yyjson_doc_get_root(schema)));
	} else {
		yyjson_mut_val *o = yyjson_mut_obj(d);
		yyjson_mut_obj_add_str(d, o, "type", "object");
		yyjson_mut_obj_add_val(d, t, "inputSchema", o);
	}
	/* A program may call any tool. */
	ann = yyjson_mut_obj(d);
	yyjson_mut_obj_add_bool(d, ann, "openWorldHint", true);
	yyjson_mut_obj_add_val(d, t, "annotations", ann);
	yyjson_doc_free(schema);
	free(name);
	return t;
}

/* Why v's caller may not save skills (allocated), or NULL: saving is off
 * on this gateway (codeMode.saveSkills), or policy denies skills.save_skill. */
static char *save_refusal(const struct sl_view *v)
{
	const struct sl_gateway *gw = v->gw;
	const struct sl_policy *p =
		sl_policy_current(gw->gen ? sl_gen_state(gw->gen, &sl_stage_policy) : NULL);
	char reason[600];
	int rule;

	if (!gw->gen->cfg->code_save_skills)
		return sl_strdup("save_skill: saving skills is off on this gateway "
				 "(sluice.codeMode.saveSkills; off by default where callers "
				 "authenticate)");
	/* As any tool's: a rule's glob on skills.save_skill, for this caller.
	 * No annotations: a save always asks the person. */
	if (sl_policy_decide(p, v->who, SL_SKILLS_SERVER, SL_SAVE_SKILL, NULL, false, &rule) !=
	    SL_POLICY_DENY)
		return NULL;
	sl_policy_reason(p, rule, reason, sizeof(reason));
	return sl_printf("policy: %s.%s is denied by %s", SL_SKILLS_SERVER, SL_SAVE_SKILL, reason);
}

void sl_skills_list(const struct sl_view *v, yyjson_mut_doc *d, yyjson_mut_val *arr)
{
	char *refused = save_refusal(v);
	const struct sl_skill **sk;
	size_t n;

	if (!refused) {
		yyjson_doc *def = sl_json_read(save_skill_def, sizeof(save_skill_def) - 1, 0, NULL);
		yyjson_mut_arr_append(arr, yyjson_val_mut_copy(d, yyjson_doc_get_root(def)));
		yyjson_doc_free(def);
	}
	free(refused);
	if (v->exposure != SL_EXPOSE_PASSTHROUGH && v->exposure != SL_EXPOSE_HYBRID)
		return; /* router and code mode: search_tools finds them */
	sk = load_visible(v, &n);
	for (size_t i = 0; i < n; i++)
		yyjson_mut_arr_append(arr, skill_def(d, sk[i]));
	free(sk);
}

bool sl_skills_handles(const struct sl_view *v, const char *name)
{
	return v->code && (strcmp(name, SL_SAVE_SKILL) == 0 ||
			   strncmp(name, SL_SKILL_PREFIX, strlen(SL_SKILL_PREFIX)) == 0);
}

/* ---- save_skill --------------------------------------------------------------- */

/* A save waiting for the person: answered once, by the person or by the
 * deadline (policy.confirmTimeoutMs), whichever comes first; freed once
 * the elicitation's callback ran (it always runs, at the latest when the
 * session closes) and the timer closed. */
struct confirm {
	struct sl_session *s;
	uint64_t sid;      /* s's id: s is gone when no open session has both */
	struct sl_gateway *gw;
	struct sl_msg msg;
	bool modern;
	bool answered;     /* the tools/call has its answer */
	bool heard;        /* the elicitation's callback ran */
	uv_timer_t timer;
	struct sl_skill sk;
	struct sl_skill_shelf shelf; /* the saver's */
	char who_key[SL_SHA256_HEX]; /* the saver's identity digest (2026-07-28 states) */
	struct sl_once_wait *claim;  /* a 2026-07-28 approval being marked used */
};

static void answer_text(struct sl_session *s, struct sl_msg *m, bool modern, const char *text,
			bool is_error)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *r;
	if (is_error) {
		r = sl_calls_error_result(d, text);
	} else {
		yyjson_mut_val *content = yyjson_mut_arr(d), *t = yyjson_mut_obj(d);
		r = yyjson_mut_obj(d);
		yyjson_mut_obj_add_str(d, t, "type", "text");
		yyjson_mut_obj_add_strcpy(d, t, "text", text);
		yyjson_mut_arr_append(content, t);
		yyjson_mut_obj_add_val(d, r, "content", content);
	}
	sl_session_answer(s, m, modern, false, d, r);
}

/* Writes and pins what the person confirmed on the saver's shelf: the
 * text is the answer. */
static char *store(const struct confirm *c, bool *ok)
{
	struct sl_err err = { 0 };
	char *text;

	*ok = false;
	if (sl_skill_save(&c->shelf, &c->sk, &err) < 0)
		text = sl_printf("the skill was not saved: %s", err.msg);
	else {
		*ok = true;
		sl_log(SL_LOG_INFO, "skills: saved '%s' (%zu bytes of code, sha256 %.12s) for %s",
		       c->sk.name, c->sk.code_len, c->sk.sha,
		       c->sk.owner ? c->sk.owner : "the operator (published)");
		text = sl_printf("saved skill '%s': programs call it as await tools.skills.%s(args)",
				 c->sk.name, c->sk.name);
	}
	return text;
}

static void confirm_free(struct confirm *c);

static void on_timer_closed(uv_handle_t *h)
{
	confirm_free(h->data);
}

/* The answer is out: the request's part is done. */
static void settle(struct confirm *c, const char *text, bool is_error)
{
	if (!c->s->closing)
		answer_text(c->s, &c->msg, c->modern, text, is_error);
	c->answered = true;
	uv_timer_stop(&c->timer);
}

static void on_deadline(uv_timer_t *t)
{
	struct confirm *c = t->data;
	settle(c, "save_skill: the person did not answer in time; the skill was not saved", true);
	if (c->heard)
		uv_close((uv_handle_t *)&c->timer, on_timer_closed);
}

static void on_confirm(void *ctx, const char *action, yyjson_val *content)
{
	struct confirm *c = ctx;
	struct sl_session *s = c->s;
	bool ok = false;
	char *text;

	c->heard = true;
	if (c->answered) {
		/* Too late: the deadline answered; nothing is saved. */
		uv_close((uv_handle_t *)&c->timer, on_timer_closed);
		return;
	}
	if (!action)
		text = sl_strdup("save_skill: the person could not be asked (no answer came); the "
				 "skill was not saved");
	else if (strcmp(action, "accept") != 0 || !sl_json_true(content, "approve"))
		text = sl_strdup("save_skill: the person declined; the skill was not saved");
	else
		text = store(c, &ok);
	settle(c, text, !ok);
	if (ok)
		sl_gateway_tools_changed_for(s->gw, *c->shelf.owner ? c->shelf.owner : NULL);
	free(text);
	uv_close((uv_handle_t *)&c->timer, on_timer_closed);
}

/* What the person reads: every line of the code, with its control
 * characters escaped, so that it cannot pass for something else. */
static char *confirm_message(const struct sl_skill *sk)
{
	struct sl_buf b;
	const char *p = sk->code, *end = sk->code + sk->code_len;

	sl_buf_init(&b, SIZE_MAX);
	(void)!sl_buf_printf(&b, "Save the skill \"%s\"? (sluice save_skill) Once saved, a program "
			     "or tools/call runs it whenever the model calls it.\nDescription: ",
			     sk->name);
	(void)!sl_escape(&b, sk->description, strlen(sk->description), SL_ESCAPE_LOG);
	if (sk->schema) {
		(void)!sl_buf_appends(&b, "\nInput schema: ");
		(void)!sl_escape(&b, sk->schema, strlen(sk->schema), SL_ESCAPE_LOG);
	}
	(void)!sl_buf_printf(&b, "\nCode (%zu bytes, SHA-256 of the skill %.16s):\n", sk->code_len,
			     sk->sha);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		(void)!sl_escape(&b, p, len, SL_ESCAPE_LOG);
		(void)!sl_buf_appends(&b, "\n");
		p += len + (nl ? 1 : 0);
	}
	return sl_buf_take(&b, NULL);
}

/* The generation's policy.confirmTimeoutMs: a save waits as long as a
 * confirmed call does. */
static uint64_t confirm_timeout(struct sl_gateway *gw)
{
	const struct sl_policy *p =
		sl_policy_current(gw->gen ? sl_gen_state(gw->gen, &sl_stage_policy) : NULL);
	return p && p->confirm_timeout_ms ? p->confirm_timeout_ms : 120000;
}

static void confirm_free(struct confirm *c)
{
	if (c->claim)
		sl_once_cancel(c->claim);
	sl_msg_dispose(&c->msg);
	sl_skill_dispose(&c->sk);
	sl_skills_shelf_dispose(&c->shelf);
	free(c);
}

/* ---- save_skill on 2026-07-28: input_required with a protected state ---- */

/* The requestState, "sluice-skill.NONCE.EXPIRY.MAC", binds the person's
 * answer to this skill (its pin: name, description, code and schema) for
 * this caller until the expiry (policy.confirmTimeoutMs), sealed under the
 * generation's key as the policy's confirmations are (stages/policy.c);
 * an approval saves once (shared/once.h, purpose "skill"). */
#define SKILL_STATE_PREFIX "sluice-skill."

static char *state_what(const struct confirm *c, const char *nonce)
{
	return sl_printf("sluice-skill\n%s\n%s\n%s", nonce, c->who_key, c->sk.sha);
}

/* Answers the first request with the question and frees c. */
static void ask_mrtr(struct confirm *c)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *r = yyjson_mut_obj(d), *reqs = yyjson_mut_obj(d), *q = yyjson_mut_obj(d);
	yyjson_mut_val *params = yyjson_mut_obj(d);
	uint8_t raw[SL_SEAL_ID_HEX / 2];
	char nonce[SL_SEAL_ID_HEX + 1], *what, *sealed, *state, *msg;

	sl_random(raw, sizeof(raw));
	sl_hex(raw, sizeof(raw), nonce);
	what = state_what(c, nonce);
	sealed = sl_seal(c->gw->gen->key, sizeof(c->gw->gen->key),
			 sl_seal_now() + (confirm_timeout(c->gw) + 999) / 1000, what);
	state = sl_printf(SKILL_STATE_PREFIX "%s.%s", nonce, sealed);
	msg = confirm_message(&c->sk);
	yyjson_mut_obj_add_str(d, params, "mode", "form");
	yyjson_mut_obj_add_strcpy(d, params, "message", msg);
	yyjson_mut_obj_add_val(d, params, "requestedSchema",
			       sl_mcp_yes_no_schema(d, "approve", "Save this skill"));
	yyjson_mut_obj_add_str(d, q, "method", "elicitation/create");
	yyjson_mut_obj_add_val(d, q, "params", params);
	yyjson_mut_obj_add_val(d, reqs, "confirm", q);
	yyjson_mut_obj_add_str(d, r, "resultType", "input_required");
	yyjson_mut_obj_add_val(d, r, "inputRequests", reqs);
	yyjson_mut_obj_add_strcpy(d, r, "requestState", state);
	sl_session_answer(c->s, &c->msg, c->modern, false, d, r);
	free(msg);
	free(state);
	free(sealed);
	free(what);
	confirm_free(c);
}

/* Whether state is one of c's, unexpired: its nonce and expiry out. */
static bool state_valid(const struct confirm *c, const char *state, char nonce[SL_SEAL_ID_HEX + 1],
			unsigned long long *expiry)
{
	size_t skip = strlen(SKILL_STATE_PREFIX) + SL_SEAL_ID_HEX + 1;
	char *what;
	bool ok;

	if (strncmp(state, SKILL_STATE_PREFIX, strlen(SKILL_STATE_PREFIX)) != 0 ||
	    strlen(state) < skip || state[skip - 1] != '.')
		return false;
	memcpy(nonce, state + strlen(SKILL_STATE_PREFIX), SL_SEAL_ID_HEX);
	nonce[SL_SEAL_ID_HEX] = '\0';
	if (strspn(nonce, "0123456789abcdef") != SL_SEAL_ID_HEX)
		return false;
	what = state_what(c, nonce);
	ok = sl_seal_check(c->gw->gen->key, sizeof(c->gw->gen->key), state + skip, what) ==
	     SL_SEAL_OK;
	free(what);
	*expiry = sl_seal_expiry(state + skip);
	return ok;
}

/* The session c's request came on, when it is still open (its memory may
 * hold another one by now: the id tells). */
static struct sl_session *live_session(const struct confirm *c)
{
	struct sl_list *n;
	sl_list_each(n, &c->gw->sessions) {
		struct sl_session *x = sl_list_entry(n, struct sl_session, link);
		if (x == c->s && x->id == c->sid && !x->closing)
			return x;
	}
	return NULL;
}

/* The approval's verdict: saved once, or refused saying why; c freed. */
static void claim_apply(struct confirm *c, enum sl_once_verdict v, const char *why)
{
	bool ok = false;
	char *text;

	if (!live_session(c)) {
		confirm_free(c);
		return;
	}
	if (v == SL_ONCE_FIRST)
		text = store(c, &ok);
	else if (v == SL_ONCE_USED)
		text = sl_strdup("save_skill: this approval was used already (a requestState saves "
				 "once); call save_skill again to be asked again");
	else
		text = sl_printf("save_skill: the approval was not used: %s; the skill was not "
				 "saved; call save_skill again to be asked again", why);
	answer_text(c->s, &c->msg, c->modern, text, !ok);
	if (ok)
		sl_gateway_tools_changed_for(c->gw, *c->shelf.owner ? c->shelf.owner : NULL);
	free(text);
	confirm_free(c);
}

static void on_claimed(void *ctx, enum sl_once_verdict v, const char *why)
{
	struct confirm *c = ctx;
	c->claim = NULL; /* answered: nothing to cancel */
	claim_apply(c, v, why);
}

/* The retry of a 2026-07-28 save: the person's answer in responses. */
static void answered_mrtr(struct confirm *c, const char *state, yyjson_val *responses)
{
	yyjson_val *resp = yyjson_obj_get(responses, "confirm");
	const char *action = sl_json_str(resp, "action"), *why = NULL;
	const struct sl_services *svc = c->gw->gen->services;
	unsigned long long expiry, life;
	char nonce[SL_SEAL_ID_HEX + 1];
	enum sl_once_verdict v;

	if (!state_valid(c, state, nonce, &expiry)) {
		answer_text(c->s, &c->msg, c->modern, "save_skill: the confirmation came back with a "
			    "requestState that is not ours, is for another skill or another caller, "
			    "or expired; the skill was not saved", true);
		confirm_free(c);
		return;
	}
	if (!action || strcmp(action, "accept") != 0 ||
	    !sl_json_true(sl_json_obj(resp, "content"), "approve")) {
		answer_text(c->s, &c->msg, c->modern,
			    action && strcmp(action, "cancel") == 0 ?
			    "save_skill: the person cancelled; the skill was not saved" :
			    "save_skill: the person declined; the skill was not saved", true);
		confirm_free(c);
		return;
	}
	life = (confirm_timeout(c->gw) + 999) / 1000;
	v = sl_once_claim(svc ? svc->once : NULL, svc ? svc->redis : NULL, "skill", nonce,
			  expiry > life ? expiry - life : 0, expiry, on_claimed, c, &c->claim, &why);
	if (v != SL_ONCE_WAIT)
		claim_apply(c, v, why);
}

/* Asks the person to approve c's skill; answers the request when it cannot. */
static void ask(struct confirm *c)
{
	struct sl_session *s = c->s;
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	char *msg;
	bool asked;

	if (c->modern) {
		yyjson_mut_doc_free(d);
		ask_mrtr(c);
		return;
	}
	msg = confirm_message(&c->sk);
	asked = sl_session_elicit(s, msg, d, sl_mcp_yes_no_schema(d, "approve", "Save this skill"),
				  on_confirm, c);
	yyjson_mut_doc_free(d);
	free(msg);
	if (!asked) {
		answer_text(s, &c->msg, c->modern, "save_skill: the person could not be asked; the "
			    "skill was not saved", true);
		confirm_free(c);
		return;
	}
	uv_timer_init(s->gw->loop, &c->timer);
	c->timer.data = c;
	uv_timer_start(&c->timer, on_deadline, confirm_timeout(s->gw), 0);
}

/* What the syntax check runs: the skill's code behind a return, so that
 * all of it is parsed (by the engine, or the stripper first when it is
 * TypeScript) and none of it runs. On the first line: lines stay. */
#define CHECK_HEAD "return; "

/* The syntax check ended: a code that does not parse is answered with the
 * error (its position in the skill's own source) and nobody is asked. */
static void on_checked(void *ctx, struct sl_program *p, struct sl_gen *gen)
{
	struct confirm *c = ctx;
	const struct sl_program_result *r = sl_program_result(p);
	/* The session may have closed meanwhile. */
	struct sl_session *s = r->cancelled ? NULL : live_session(c);
	char *text, *at;

	if (!s) {
		sl_program_free(p);
		confirm_free(c);
		return;
	}
	if (r->ok) {
		sl_program_free(p);
		ask(c);
		return;
	}
	text = sl_strndup(r->text ? r->text : "", r->text ? r->text_len : 0);
	if (strcmp(r->kind, "syntax") == 0)
		at = sl_printf("save_skill: the code does not parse: %s; nobody was asked, and the "
			       "skill was not saved", text);
	else
		at = sl_printf("save_skill: the code could not be checked (%s: %s); the skill was "
			       "not saved", r->kind, text);
	answer_text(s, &c->msg, c->modern, at, true);
	free(at);
	free(text);
	sl_program_free(p);
	confirm_free(c);
}

static void save_skill(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_val *args)
{
	yyjson_val *code = yyjson_obj_get(args, "code");
	char owner[SL_SHA256_HEX];
	struct sl_err err = { 0 };
	struct confirm *c;
	struct sl_view v;
	struct sl_caller *who = m->who;
	/* MCP 2026-07-28: the retry of a save that asked (input_required). */
	const char *state = modern && m->params ? sl_json_str(m->params, "requestState") : NULL;
	yyjson_val *responses = modern && m->params ? sl_json_obj(m->params, "inputResponses") : NULL;
	char *msg, *check;

	sl_view_of(s->gw, m->who, &v);
	if ((msg = save_refusal(&v))) {
		answer_text(s, m, modern, msg, true);
		free(msg);
		return;
	}
	if (!yyjson_is_str(code)) {
		answer_text(s, m, modern, "save_skill needs name, description and code strings", true);
		return;
	}
	c = sl_alloc(sizeof(*c));
	if (sl_skill_make(sl_json_str(args, "name"), sl_json_str(args, "description"),
			  yyjson_get_str(code), yyjson_get_len(code), yyjson_obj_get(args, "inputSchema"),
			  &c->sk, &err) < 0) {
		free(c);
		msg = sl_printf("save_skill: %s", err.msg);
		answer_text(s, m, modern, msg, true);
		free(msg);
		return;
	}
	/* The request's caller owns it (none: the operator's own gateway). */
	sl_skills_shelf(sl_skills_owner(m->who, owner) ? owner : NULL, &c->shelf);
	c->sk.owner = sl_skills_owner_label(m->who);
	if (c->sk.code_len > s->gw->gen->cfg->code.max_source) {
		/* It runs as a program: the programs' own bound holds. */
		msg = sl_printf("save_skill: the code is %zu bytes, over codeMode.maxSourceBytes (%zu)",
				c->sk.code_len, s->gw->gen->cfg->code.max_source);
	} else if (sl_skill_save_room(&c->shelf, c->sk.name, &err) < 0) {
		msg = sl_printf("save_skill: %s", err.msg);
	} else if (modern ? !state && !yyjson_obj_get(sl_session_caps(s, m, true), "elicitation") :
		   !sl_session_can_elicit(s)) {
		/* Policy confirm, always: a skill is code that will run later. A
		 * 2026-07-28 request is asked by input_required when it declares
		 * elicitation (as execute_code's replay, calls.c). */
		msg = sl_strdup("save_skill needs the person's confirmation, and this client cannot "
				"be asked (it did not declare elicitation); the skill was not saved");
	} else {
		msg = NULL;
	}
	if (msg) {
		answer_text(s, m, modern, msg, true);
		free(msg);
		sl_skill_dispose(&c->sk);
		sl_skills_shelf_dispose(&c->shelf);
		free(c);
		return;
	}
	c->s = s;
	c->sid = s->id;
	c->gw = s->gw;
	c->modern = modern;
	c->msg = *m;
	c->msg.who = NULL; /* borrowed, and the save needs no caller */
	if (who)
		memcpy(c->who_key, who->key, sizeof(c->who_key));
	else
		sl_caller_identity_digest(NULL, NULL, NULL, NULL, c->who_key);
	memset(m, 0, sizeof(*m));
	if (state) {
		/* Checked when it asked: the state binds this very code. */
		answered_mrtr(c, state, responses);
		return;
	}
	if (!s->gw->sandbox) {
		ask(c); /* nothing to check with: it cannot run here either */
		return;
	}
	/* Checked in a worker, as programs are: the gateway parses no code. It
	 * counts as one of the saver's programs; it sees no session. */
	check = sl_printf(CHECK_HEAD "%.*s", (int)c->sk.code_len, c->sk.code);
	/* Positions are the skill's own: CHECK_HEAD is not counted. */
	sl_program_set_wrap(sl_codemode_run_replay(s->gw, NULL, who, check, strlen(check), NULL,
						   NULL, on_checked, NULL, c),
			    strlen(CHECK_HEAD), 0);
	free(check);
}

/* ---- skills__<name> ------------------------------------------------------------- */

static void run_skill(struct sl_session *s, struct sl_msg *m, bool modern, const char *name,
		      yyjson_val *args)
{
	struct sl_err err = { 0 };
	struct sl_skill sk;
	char *json, *code;
	size_t len, pre, post;

	int rc = sl_codemode_skill(s->gw, m->who, name, &sk, &err);

	if (rc == SL_ERR_TOO_LARGE) {
		answer_text(s, m, modern, err.msg, true);
		return;
	}
	if (rc < 0) {
		char msg[300];
		snprintf(msg, sizeof(msg), "Unknown tool: %s%.100s", SL_SKILL_PREFIX, name);
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, msg);
		return;
	}
	if (!s->gw->sandbox) {
		char *msg = sl_printf("code mode is unavailable: %s", s->gw->code_error);
		answer_text(s, m, modern, msg, true);
		free(msg);
		sl_skill_dispose(&sk);
		return;
	}
	json = args ? sl_json_write_val(args, &len) : sl_strdup("{}");
	len = strlen(json);
	if (len > s->gw->gen->cfg->code.max_args) {
		/* The bound a program's call to it would meet. */
		char *msg = sl_printf("the arguments are %zu bytes of JSON, over the limit of %zu "
				      "(codeMode.maxArgsBytes)", len, s->gw->gen->cfg->code.max_args);
		answer_text(s, m, modern, msg, true);
		free(msg);
		free(json);
		sl_skill_dispose(&sk);
		return;
	}
	code = sl_codemode_skill_code(&sk, json, len, false, &len, &pre, &post);
	sl_calls_run_program(s, m, modern, code, len, NULL, pre, post);
	free(code);
	free(json);
	sl_skill_dispose(&sk);
}

void sl_skills_call(struct sl_session *s, struct sl_msg *m, bool modern, const char *name,
		    yyjson_val *args)
{
	if (strcmp(name, SL_SAVE_SKILL) == 0)
		save_skill(s, m, modern, args);
	else
		run_skill(s, m, modern, name + strlen(SL_SKILL_PREFIX), args);
}

/* ---- search_tools and describe_tools ------------------------------------------- */

struct hit {
	size_t i;
	double score;
};

static int by_score(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;
	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* The TypeScript type of sk's arguments, in ts; "unknown" without one. */
static char *args_type(struct sl_ts *ts, const struct sl_skill *sk, const char *name)
{
	yyjson_doc *doc = sk->schema ? sl_json_read(sk->schema, strlen(sk->schema), 0, NULL) : NULL;
	yyjson_val *root = yyjson_doc_get_root(doc);
	char *t = root ? sl_ts_type(ts, root, root, name, NULL) : NULL;
	yyjson_doc_free(doc);
	return t ? t : sl_strdup("unknown");
}

/* The description's first line, at most 200 bytes. */
static void first_line(struct sl_buf *b, const char *desc)
{
	size_t n = strcspn(desc, "\r\n");
	(void)!sl_escape(b, desc, n > 200 ? 200 : n, SL_ESCAPE_LOG);
}

char *sl_skills_search(const struct sl_view *v, const char *query, size_t k)
{
	struct sl_bm25 *ix = sl_bm25_new();
	const struct sl_skill **sk;
	struct hit *hits;
	double *scores;
	size_t n, nhits = 0;
	struct sl_ts *ts;
	struct sl_buf b;

	sk = load_visible(v, &n);
	for (size_t i = 0; i < n; i++) {
		size_t doc = sl_bm25_doc(ix);
		sl_bm25_add(ix, doc, SL_BM25_SERVER, SL_SKILLS_SERVER);
		sl_bm25_add(ix, doc, SL_BM25_NAME, sk[i]->name);
		sl_bm25_add(ix, doc, SL_BM25_DESCRIPTION, sk[i]->description);
	}
	scores = sl_alloc((n + 1) * sizeof(*scores));
	hits = sl_alloc((n + 1) * sizeof(*hits));
	if (n)
		sl_bm25_rank(ix, query, scores);
	for (size_t i = 0; i < n; i++)
		if (scores[i] > 0)
			hits[nhits++] = (struct hit){ i, scores[i] };
	qsort(hits, nhits, sizeof(*hits), by_score);
	if (nhits > k)
		nhits = k;
	ts = sl_ts_new(false);
	sl_buf_init(&b, SKILLS_ANSWER_MAX);
	for (size_t i = 0; i < nhits; i++) {
		const struct sl_skill *s = sk[hits[i].i];
		char *t = args_type(ts, s, NULL);
		(void)!sl_buf_printf(&b, "tools.%s.%s(args: %s): Promise<unknown>  // skill: ",
				     SL_SKILLS_SERVER, s->name, t);
		first_line(&b, s->description);
		(void)!sl_buf_appends(&b, "\n");
		free(t);
	}
	sl_ts_free(ts);
	sl_bm25_free(ix);
	free(scores);
	free(hits);
	free(sk);
	if (nhits == 0) {
		sl_buf_dispose(&b);
		return NULL;
	}
	return sl_buf_take(&b, NULL);
}

char *sl_skills_describe(const struct sl_view *v, const char **names, size_t n, char **msg)
{
	const struct sl_skill **sk;
	struct sl_ts *ts = sl_ts_new(true);
	struct sl_buf members, b;
	size_t count = 0, nsk;

	sk = load_visible(v, &nsk);
	for (size_t j = 0; j < n; j++) {
		bool found = false;
		for (size_t i = 0; i < nsk && !found; i++)
			found = strcmp(sk[i]->name, names[j]) == 0;
		if (!found) {
			*msg = sl_printf("there is no skill '%.100s' (or it is hidden)", names[j]);
			sl_ts_free(ts);
			free(sk);
			return NULL;
		}
	}
	sl_buf_init(&members, SKILLS_ANSWER_MAX);
	for (size_t i = 0; i < nsk; i++) {
		bool want = n == 0;
		char *aname, *t, *doc;
		for (size_t j = 0; j < n; j++)
			want = want || strcmp(sk[i]->name, names[j]) == 0;
		if (!want)
			continue;
		aname = sl_printf("%s_args", sk[i]->name);
		t = args_type(ts, sk[i], aname);
		doc = sl_ts_doc(sk[i]->description);
		if (doc)
			(void)!sl_buf_printf(&members, "    /** %s */\n", doc);
		(void)!sl_buf_printf(&members, "    %s(args: %s): Promise<unknown>;\n", sk[i]->name, t);
		free(doc);
		free(t);
		free(aname);
		count++;
	}
	sl_buf_init(&b, SKILLS_ANSWER_MAX);
	(void)!sl_buf_printf(&b, "// %zu skill%s, called in programs as tools.%s.<name>(args).\n",
			     count, count == 1 ? "" : "s", SL_SKILLS_SERVER);
	(void)!sl_ts_decls(ts, &b, true);
	(void)!sl_buf_printf(&b, "export declare const tools: {\n  %s: {\n", SL_SKILLS_SERVER);
	(void)!sl_buf_append(&b, members.data ? members.data : "", members.len);
	(void)!sl_buf_appends(&b, "  };\n};\n");
	sl_buf_dispose(&members);
	sl_ts_free(ts);
	free(sk);
	return sl_buf_take(&b, NULL);
}

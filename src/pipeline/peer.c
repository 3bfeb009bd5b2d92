/*
 * Peer text outside tool calls (call.h, struct sl_peer): the one entry
 * point, sl_stages_peer, that every path carrying such text through the
 * gateway calls, and what its callers share.
 */
#include "pipeline/call.h"

#include <stdlib.h>
#include <string.h>

void sl_peer_init(struct sl_peer *p, enum sl_peer_kind kind, const char *method,
		  const struct sl_upstream *up, yyjson_mut_doc *d, yyjson_mut_val *val)
{
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->method = method;
	p->up = up;
	p->doc = d;
	p->val = val;
}

const char *sl_peer_noun(enum sl_peer_kind k)
{
	static const char *const n[] = {
		[SL_PEER_ANSWER] = "answer", [SL_PEER_ERROR] = "error",
		[SL_PEER_NOTIFICATION] = "notification", [SL_PEER_REQUEST] = "request",
		[SL_PEER_UPSTREAM] = "message",
	};
	return n[k];
}

void sl_stages_peer(const struct sl_gen *g, struct sl_peer *p)
{
	p->metrics = g->metrics;
	for (size_t i = 0; i < g->nstages && !p->withheld; i++)
		if (g->stages[i]->peer)
			g->stages[i]->peer(sl_gen_state_at(g, i), p);
}

void sl_peer_error_apply(struct sl_peer *p)
{
	yyjson_mut_val *e = p->val, *code;
	const char *msg;
	char *text;

	if (!yyjson_mut_is_obj(e) || (!p->withheld && !p->warning))
		return;
	if (p->withheld) {
		/* JSON-RPC 2.0: code and message are required; what the server
		 * said is withheld whole, its data too. */
		code = yyjson_mut_obj_get(e, "code");
		code = yyjson_mut_is_int(code) ? yyjson_mut_val_mut_copy(p->doc, code) :
		       yyjson_mut_int(p->doc, -32603);
		p->val = yyjson_mut_obj(p->doc);
		yyjson_mut_obj_add_val(p->doc, p->val, "code", code);
		yyjson_mut_obj_add_strcpy(p->doc, p->val, "message", p->withheld);
	} else {
		msg = yyjson_mut_get_str(yyjson_mut_obj_get(e, "message"));
		text = sl_printf("%s %s", p->warning, msg ? msg : "");
		yyjson_mut_obj_remove_key(e, "message");
		yyjson_mut_obj_add_strcpy(p->doc, e, "message", text);
		free(text);
	}
	p->changed = true;
}

yyjson_doc *sl_peer_freeze(const struct sl_peer *p)
{
	yyjson_doc *d = yyjson_mut_val_imut_copy(p->val, NULL);
	if (!d)
		sl_oom();
	return d;
}

void sl_peer_dispose(struct sl_peer *p)
{
	free(p->withheld);
	free(p->warning);
	p->withheld = p->warning = NULL;
}

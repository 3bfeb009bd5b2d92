/*
 * What GET /status answers (gateway.h, sl_gateway_status): the gateway's
 * state for its operator, read from the objects that own it. The admin
 * page (gateway/admin.c) renders the same object.
 */
#include "gateway/gateway.h"
#include "gateway/session.h"
#include "pipeline/call.h"
#include "sandbox/sandbox.h"
#include "shared/fleet.h"
#include "shared/redis.h"
#include "stages/quota.h"
#include "upstream/upstream.h"

yyjson_mut_val *sl_gateway_status_doc(struct sl_gateway *gw, uint32_t sessions,
				      yyjson_mut_doc *d)
{
	yyjson_mut_val *root = yyjson_mut_obj(d), *ups;

	yyjson_mut_obj_add_str(d, root, "version", SL_VERSION);
	yyjson_mut_obj_add_str(d, root, "commit", sl_build_commit);
	yyjson_mut_obj_add_uint(d, root, "uptimeSeconds", (sl_now_ms() - gw->started_ms) / 1000);
	yyjson_mut_obj_add_uint(d, root, "configGeneration", gw->gen->number);
	ups = yyjson_mut_arr(d);
	for (size_t i = 0; i < gw->nups; i++) {
		struct sl_upstream *u = gw->ups[i];
		yyjson_mut_val *o = yyjson_mut_obj(d);
		yyjson_mut_obj_add_str(d, o, "name", u->name);
		yyjson_mut_obj_add_str(d, o, "state", sl_upstream_state_name(u->state));
		yyjson_mut_obj_add_uint(d, o, "tools", u->tools.n);
		/* oauth.perUser: its callers' own links (upstream/users.c). */
		if (u->cfg->oauth.per_user) {
			yyjson_mut_val *users = yyjson_mut_obj(d);
			size_t open, awaiting;
			sl_upstream_users_count(u, &open, &awaiting);
			yyjson_mut_obj_add_uint(d, users, "links", u->users.count);
			yyjson_mut_obj_add_uint(d, users, "open", open);
			yyjson_mut_obj_add_uint(d, users, "awaitingLogin", awaiting);
			yyjson_mut_obj_add_uint(d, users, "max", u->gcfg->oauth.max_users);
			yyjson_mut_obj_add_val(d, o, "users", users);
		}
		/* What to do about it, when something is (a login to run, say). */
		if (u->error)
			yyjson_mut_obj_add_str(d, o, "error", u->error);
		yyjson_mut_arr_append(ups, o);
	}
	yyjson_mut_obj_add_val(d, root, "upstreams", ups);
	yyjson_mut_obj_add_uint(d, root, "sessions", sessions);
	yyjson_mut_obj_add_uint(d, root, "requestsInFlight", gw->requests);
	if (gw->sandbox) {
		yyjson_mut_val *o = yyjson_mut_obj(d);
		unsigned admitted, queued;
		sl_sandbox_load(gw->sandbox, &admitted, &queued);
		yyjson_mut_obj_add_uint(d, o, "running", admitted);
		yyjson_mut_obj_add_uint(d, o, "queued", queued);
		yyjson_mut_obj_add_val(d, root, "programs", o);
	} else {
		yyjson_mut_obj_add_null(d, root, "programs");
	}
	{
		/* Replicas: what is shared through Redis, and whether it is now. */
		yyjson_mut_val *o = yyjson_mut_obj(d);
		sl_redis_status(gw->redis, d, o);
		yyjson_mut_obj_add_val(d, root, "shared", o);
	}
	if (gw->fleet) {
		/* Replicas: the others, as seen through Redis. */
		yyjson_mut_val *o = yyjson_mut_obj(d);
		sl_fleet_status(gw->fleet, d, o);
		yyjson_mut_obj_add_val(d, root, "fleet", o);
	}
	sl_quota_status(sl_gen_state(gw->gen, &sl_stage_quota), d, root);
	return root;
}

char *sl_gateway_status(struct sl_gateway *gw, uint32_t sessions, size_t *len)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	char *out;

	if (!d)
		sl_oom();
	out = sl_json_write_mut_val(sl_gateway_status_doc(gw, sessions, d), len);
	yyjson_mut_doc_free(d);
	return out;
}

void sl_gateway_fleet_load(void *ctx, struct sl_fleet_load *out)
{
	const struct sl_gateway *gw = ctx;
	unsigned running = 0, queued = 0;
	const struct sl_list *n;

	*out = (struct sl_fleet_load){ .ups_total = gw->nups };
	sl_list_each(n, &gw->sessions)
		out->sessions += sl_list_entry(n, struct sl_session, link)->era == SL_ERA_LEGACY;
	for (size_t i = 0; i < gw->nups; i++)
		out->ups_up += gw->ups[i]->state == SL_UP_READY;
	if (gw->sandbox)
		sl_sandbox_load(gw->sandbox, &running, &queued);
	out->programs = running;
}

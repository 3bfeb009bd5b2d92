/*
 * Roots across the callers of one session-era server (upstream.h,
 * sl_upstream_roots_before; docs/internals/UPSTREAMS.md, "Roots").
 *
 * Roots belong to a client (MCP 2025-11-25 client features, "Roots"), and
 * a server asks for them when it likes: right after initialize (outside any
 * call: the gateway answers an empty list, gateway.c), or when told
 * notifications/roots/list_changed. Servers keep the answer (the SDK's
 * server-everything does) and use it in later calls, whoever makes them.
 * So before a call made for another client than the one whose roots the
 * server was last told, the server is told its roots changed, and the
 * call waits until it has asked and been answered (the question reaches
 * the client whose call waits: gateway.c, relay.c) or for
 * SL_UPSTREAM_ROOTS_WAIT_MS. The wait holds requests as a user link's
 * start does (r->held in upstream.c), so they go out in order; it is
 * bounded by its time, and a server that does not even ask again within
 * it is not waited for again on that link (it only gets the notification).
 */
#include "upstream/link.h"
#include "core/log.h"
#include "proto/mcp.h"

#include <stdio.h>
#include <string.h>

static void roots_release(struct sl_upstream *u)
{
	if (!u->roots_hold)
		return;
	u->roots_hold = false;
	uv_timer_stop(&u->roots_timer);
	sl_upstream_send_held(u);
}

static void on_roots_timer(uv_timer_t *t)
{
	struct sl_upstream *u = t->data;

	/* One that asked, and whose client is slow to answer, is waited for
	 * again next time; one that did not ask is not. */
	if (!u->roots_reasked) {
		sl_log(SL_LOG_DEBUG, "server '%s' did not ask for roots within %d ms of %s: its "
		       "calls no longer wait for it", u->name, SL_UPSTREAM_ROOTS_WAIT_MS,
		       SL_MCP_ROOTS_CHANGED);
		u->roots_deaf = true;
	}
	roots_release(u);
}

void sl_upstream_roots_before(struct sl_upstream *u, const char *client)
{
	if (u->modern || !u->roots_asked || u->state != SL_UP_READY || !strcmp(u->roots_for, client))
		return;
	/* Taken for told now: if it asks, the question goes to the client
	 * whose call waits (or gets an empty list), and roots_given says so. */
	snprintf(u->roots_for, sizeof(u->roots_for), "%s", client);
	sl_upstream_notify(u, SL_MCP_ROOTS_CHANGED);
	if (u->roots_deaf || u->roots_hold)
		return;
	u->roots_hold = true;
	u->roots_reasked = false;
	uv_timer_start(&u->roots_timer, on_roots_timer, SL_UPSTREAM_ROOTS_WAIT_MS, 0);
}

void sl_upstream_roots_given(struct sl_upstream *u, const char *client)
{
	u->roots_asked = true;
	snprintf(u->roots_for, sizeof(u->roots_for), "%s", client);
	roots_release(u);
}

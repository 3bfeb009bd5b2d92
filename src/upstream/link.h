/*
 * A link: the connection to one incarnation of an upstream server. Two
 * kinds: a child process on stdio (stdio.c) and a remote server over HTTP
 * (remote.c: Streamable HTTP, or the older HTTP+SSE transport). The upstream
 * (upstream.c) speaks JSON-RPC through whichever it has and never looks
 * inside; a link reports what it reads, and its own end, through the
 * sl_upstream_link_* functions.
 *
 * Lifetime: the upstream owns its current link. When it gives one up
 * (detach), the link stops reporting at once and frees itself once its
 * handles have closed, so a new link can start meanwhile.
 */
#ifndef SL_UPSTREAM_LINK_H
#define SL_UPSTREAM_LINK_H

#include "upstream/upstream.h"

struct sl_link;

struct sl_link_ops {
	/* Sends one message (takes line, which ends in "\n"). False if it
	 * cannot be sent now: the peer is not reading, or is gone. */
	bool (*send)(struct sl_link *l, char *line, size_t len);
	/* The handshake finished with this protocol version (borrowed). */
	void (*established)(struct sl_link *l, const char *version);
	/* Graceful end. The link reports lost once it is over. */
	void (*stop)(struct sl_link *l);
	/* Gives the link up at once; it reports nothing more. */
	void (*detach)(struct sl_link *l);
};

struct sl_link {
	const struct sl_link_ops *ops;
	struct sl_upstream *up; /* NULL once detached */
	unsigned gen;           /* distinguishes incarnations (sl_upstream_generation) */
};

/* Starts a link for u->cfg; NULL with err set if it cannot even start. */
struct sl_link *sl_stdio_link_start(struct sl_upstream *u, struct sl_err *err);
struct sl_link *sl_remote_link_start(struct sl_upstream *u, struct sl_err *err);

/* What links report. line is one JSON-RPC message, borrowed. */
void sl_upstream_link_message(struct sl_upstream *u, const char *msg, size_t len);
void sl_upstream_link_oversize(struct sl_upstream *u, const char *head, size_t hl,
			       const char *tail, size_t tl, size_t total);
/* The link is over: the process exited, the session ended, the connection
 * failed. why completes "server 'x' ...". */
void sl_upstream_link_lost(struct sl_upstream *u, const char *why);

unsigned sl_link_next_gen(void);
/* Sends the requests held (a user link come up, a roots wait over), oldest first. */
void sl_upstream_send_held(struct sl_upstream *u);

/* sl_upstream_new for a user link (user: its key, which its OAuth client
 * stores under); NULL user: a server. */
struct sl_upstream *sl_upstream_make(uv_loop_t *loop, const struct sl_server_config *cfg,
				     const struct sl_config *gcfg, const struct sl_upstream_ops *ops,
				     void *ctx, const char *user);

/* A server's user links (users.c) follow it: stopped, freed and
 * reconfigured with it. sl_upstream_users_init: none yet, for any upstream. */
void sl_upstream_users_init(struct sl_upstream *u);
void sl_upstream_users_stop(struct sl_upstream *u);
bool sl_upstream_users_stopped(const struct sl_upstream *u);
void sl_upstream_users_free(struct sl_upstream *u);
void sl_upstream_users_reconfigure(struct sl_upstream *u);

#endif

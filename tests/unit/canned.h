/*
 * A canned MCP server and authorization server on 127.0.0.1, for the unit
 * tests of the OAuth client (test_oauthflow.c) and of the web login
 * (test_weblogin.c): discovery's probe, its Protected Resource Metadata,
 * the authorization server's metadata and its token endpoint.
 */
#ifndef SL_TESTS_CANNED_H
#define SL_TESTS_CANNED_H

#include <stdbool.h>
#include <uv.h>

/* A server that lets initialize through without a token (its answer names
 * a session) and guards what follows: tools/list gets the 401 challenge
 * (list_status: another answer to it); notifications/initialized gets 202,
 * DELETE 405 (delete_hangs: no answer at all); sse_init: initialize is
 * answered as an event stream choosing 2025-06-18. Each connection carries
 * one request. */
struct canned {
	uv_tcp_t tcp;
	int port;
	int list_status;         /* 0: 401 with the challenge */
	bool delete_hangs;
	bool sse_init;
	bool meta_issuer_slash;  /* the AS metadata names its issuer with a trailing slash */
	bool modern;             /* 2026-07-28 only: initialize gets 400, server/discover answers */
	char list_method[16];    /* the Mcp-Method header tools/list came with */
	char list_version[16];   /* the MCP-Protocol-Version tools/list came with */
	char seen[8][128];       /* each request's method, Mcp-Session-Id and JSON-RPC method */
	int nseen;
	bool done;
	bool ok;
	char *why;
	char *scope;
	char token_body[2048];   /* the last POST /token's form */
	const char *token_error; /* set: /token answers 400 with this OAuth error */
};

/* Listens on 127.0.0.1 (a port the system picks: s->port) on loop. Close
 * s->tcp to stop. */
void t_canned_listen(uv_loop_t *loop, struct canned *s);

#endif

/*
 * Configuration: a JSON file in the shape MCP clients already use (the
 * "mcpServers" object of Claude Desktop, Cursor and Claude Code, or the
 * "servers" object of VS Code) plus a "sluice" object for the gateway.
 * Once loaded it is immutable and reference-counted: the loader hands out
 * the first reference; a generation (pipeline/gen.h), an upstream or a
 * front end that keeps it beyond a call takes its own.
 *
 * API:
 *   struct sl_config *c;
 *   if (sl_config_load(path, &c, &err) < 0) fprintf(stderr, "%s\n", err.msg);
 *   for (i < c->nwarnings) print c->warnings[i];
 *   sl_config_unref(c);
 */
#ifndef SL_CONFIG_CONFIG_H
#define SL_CONFIG_CONFIG_H

#include "core/common.h"
#include <stdio.h>
#include <yyjson.h>

enum sl_exposure {
	SL_EXPOSE_PASSTHROUGH, /* every upstream tool as server__tool */
	SL_EXPOSE_ROUTER,      /* search_tools, list_servers, list_tools, invoke_tool */
	SL_EXPOSE_HYBRID,      /* passthrough plus search_tools */
	SL_EXPOSE_CODE,        /* search_tools and execute_code */
};

/* The limits of one code-mode program, the same on both sides of the
 * gateway-worker socket. */
struct sl_code_limits {
	uint64_t timeout_ms;   /* wall clock, tool calls included */
	uint64_t cpu_ms;
	size_t heap_bytes;     /* exact, from the engine */
	size_t stack_bytes;    /* never 0 */
	uint32_t max_calls;
	uint32_t max_inflight;
	size_t max_output;     /* the return value, as text */
	size_t max_console;
	size_t max_source;
	size_t max_args;       /* one call's arguments, as JSON */
	size_t max_result;     /* one tool result handed to the program, as JSON */
};

void sl_code_limits_default(struct sl_code_limits *l);

struct sl_kv {
	char *key;
	char *value;
};

#define SL_SERVER_NAME_MAX 64 /* checked by the loader; code mode relies on it */

/* How sluice reaches an upstream server. */
enum sl_transport {
	SL_TRANSPORT_STDIO, /* "command": a child process */
	SL_TRANSPORT_HTTP,  /* "url": Streamable HTTP (the default for a url) */
	SL_TRANSPORT_SSE,   /* "url" with "type": "sse": the 2024-11-05 HTTP+SSE transport */
};

/* "protocol": the version sluice speaks with a server (upstream.c). */
enum sl_protocol_pin {
	SL_PROTOCOL_AUTO,   /* probed: docs/internals/UPSTREAMS.md, "Choosing the era" */
	SL_PROTOCOL_2026_07_28,
	SL_PROTOCOL_2025_11_25,
	SL_PROTOCOL_2025_06_18,
	SL_PROTOCOL_2025_03_26,
	SL_PROTOCOL_2024_11_05,
};
/* The version a pin names, or NULL for auto. */
const char *sl_protocol_pin_version(enum sl_protocol_pin p);

/* mcpServers.<name>.oauth: how sluice gets tokens for a remote server
 * (src/oauth/). Without the object, a server that answers 401 with a
 * Bearer challenge is discovered the same way, with dynamic registration. */
enum sl_oauth_grant_type { SL_GRANT_AUTHORIZATION_CODE, SL_GRANT_CLIENT_CREDENTIALS };

/* oauth.signingAlg: how a private_key_jwt assertion is signed. */
enum sl_oauth_sign_alg {
	SL_OAUTH_ALG_AUTO = 0,        /* from the key: EC P-256 -> ES256, RSA -> RS256 */
	SL_OAUTH_ALG_ES256,
	SL_OAUTH_ALG_RS256,
};

struct sl_oauth_key; /* the OAuth module's (oauth/oauth.h) */

struct sl_server_oauth {
	bool given;                /* the entry has an "oauth" object */
	enum sl_oauth_grant_type grant;
	char *client_id;           /* pre-registered; NULL: register */
	char *client_secret;       /* ${VAR} expanded */
	char *client_metadata_url; /* NULL: sluice.oauth.clientMetadataUrl */
	char *scope;               /* asked for besides what the server asks */
	char *private_key_file;    /* private_key_jwt: the key's path (absolute) */
	enum sl_oauth_sign_alg signing_alg;
	/* Read from private_key_file by the OAuth module when a command loads
	 * the config (sl_oauth_keys_load), not by the parser; NULL until then.
	 * Freed with the config by key_free, which the module sets with it. */
	struct sl_oauth_key *key;
	void (*key_free)(struct sl_oauth_key *key);
	bool per_user;             /* each authenticated caller uses its own tokens */
	bool token_exchange;       /* per_user: RFC 8693 of the caller's own token first */
};

struct sl_server_config {
	char *name;
	enum sl_transport transport;
	char *url;             /* HTTP and SSE */
	struct sl_kv *headers; /* HTTP and SSE: sent on every request, ${VAR} expanded */
	size_t nheaders;
	char *command;
	char **args;           /* NULL-terminated */
	size_t nargs;
	struct sl_kv *env;     /* declared by the entry, ${VAR} expanded */
	size_t nenv;
	char *cwd;             /* NULL: the gateway's */
	uint64_t timeout_ms;   /* per call; 0: the gateway default */
	bool disabled;
	bool unprefixed;       /* "prefix": false: its names and URIs as it gives them */
	enum sl_protocol_pin protocol; /* "protocol": auto, or the one version spoken */
	struct sl_server_oauth oauth;
	char *error;           /* set: this server cannot start, and why */
};

/* sluice.oauth: sluice as an OAuth client of remote servers. */
struct sl_oauth_config {
	char *client_metadata_url; /* sluice's Client ID Metadata Document, or NULL */
	char *client_name;         /* in dynamic registrations */
	char *key_file;            /* encrypts the token store; NULL: SLUICE_TOKEN_KEY or none */
	uint32_t refresh_before_s; /* a token this close to expiry is refreshed first (60) */
	uint32_t max_held;         /* requests held per server while a token is fetched (256) */
	uint32_t max_users;        /* per-user links of one server (1000) */
	uint32_t user_idle_s;      /* a per-user link this long unused is closed (300) */
};

/* sluice.http.auth.tokens[]: a static token naming who holds it. */
struct sl_auth_token {
	char *token;               /* ${VAR} expanded */
	char *subject;
	char **groups;             /* NULL-terminated, or NULL */
	char **scopes;             /* NULL-terminated, or NULL */
};

/* sluice.http.auth.jwks: the authorization servers' signing keys. */
struct sl_jwks_config {
	uint32_t min_refresh_s;    /* one issuer's keys fetched at most this often (30) */
	uint32_t max_age_s;        /* keys older are fetched again, used meanwhile (3600) */
	uint32_t max_keys;         /* kept per issuer (32) */
};

/* sluice.http.auth.introspection: RFC 7662 for opaque tokens. */
struct sl_introspection_config {
	char *endpoint;            /* NULL: opaque tokens are refused */
	char *client_id;
	char *client_secret;       /* ${VAR} expanded */
	uint32_t cache_s;          /* an answer is reused this long at most (60) */
	uint32_t stale_s;          /* then an active one serves this long more while it is
				    * asked again (60) */
	uint32_t max_entries;      /* answers remembered (4096) */
	uint32_t max_in_flight;    /* introspection requests at once (32) */
};

/* sluice.http.auth: how callers prove who they are (src/auth/). */
struct sl_auth_config {
	struct sl_auth_token *tokens;
	size_t ntokens;
	/* OAuth 2.1 resource server (docs/internals/AUTH.md): on when resource is set. */
	char *resource;            /* this gateway's canonical URI (RFC 8707, RFC 9728) */
	char *resource_name;       /* Protected Resource Metadata's resource_name */
	char **authorization_servers; /* issuers, NULL-terminated */
	char *jwks_uri;            /* NULL: from the issuer's metadata */
	char **audiences;          /* NULL: { resource } */
	char **algorithms;         /* NULL: RS256, ES256, PS256 */
	char **token_types;        /* JWT "typ" accepted; NULL: at+jwt (RFC 9068) */
	uint32_t clock_skew_s;     /* exp, nbf, iat leeway (60) */
	char **scopes_supported;   /* NULL: none advertised */
	char **required_scopes;    /* NULL: none */
	char **groups_claims;      /* NULL: "groups", "roles" */
	uint32_t cache_entries;    /* validated JWTs remembered, by SHA-256 (4096) */
	uint32_t max_waiting;      /* requests waiting for a fetch (256) */
	uint32_t fetch_timeout_ms; /* one metadata, key set or introspection request (5 s) */
	uint32_t max_document_bytes; /* one such answer (256 KiB) */
	struct sl_jwks_config jwks;
	struct sl_introspection_config introspection;
};

/* sluice.http.tls: HTTPS on the front end (src/transport/tls.c). Both set,
 * or the section absent (both NULL). */
struct sl_tls_config {
	char *cert_file;           /* PEM: the server's certificate, then its chain; absolute */
	char *key_file;            /* PEM: its private key, unencrypted; absolute */
};

/* An address range of sluice.http.proxies: an IPv6 address (IPv4 as
 * ::ffff:a.b.c.d) and how many of its leading bits a peer must share. */
struct sl_net {
	uint8_t addr[16];
	unsigned bits;
};

#define SL_HTTP_NAMES_MAX 64 /* entries of sluice.http.proxies, of allowedHosts */

/* sluice.http: the Streamable HTTP front end (src/transport/http.c). */
struct sl_http_config {
	char *listen;              /* "host:port"; NULL: serve on stdio unless --http */
	char *bearer_token;        /* ${VAR} expanded; NULL: none (loopback only) */
	char *admin_token;         /* ${VAR} expanded, >= 32 chars: the operator's pages
				    * (/status, /metrics, /admin) from another host; NULL:
				    * loopback peers only */
	char **allowed_origins;    /* NULL-terminated; NULL: loopback origins (https too with tls) */
	size_t norigins;
	char **allowed_hosts;      /* NULL-terminated host names, lower case, besides loopback
				    * names, IP literals and publicUrl's host; NULL: none */
	struct sl_net *proxies;    /* peers that relay others' requests (never "local") */
	size_t nproxies;
	size_t max_body_bytes;     /* one POST body (4 MiB) */
	uint32_t max_sessions;     /* live session-era sessions (64) */
	uint32_t max_sessions_caller; /* at that bound, one caller's share; 0: half, at least 1 */
	uint32_t max_requests;     /* requests in flight in one session (32) */
	uint64_t idle_timeout_ms;  /* a session with no request and no open stream (30 min) */
	uint64_t heartbeat_ms;     /* SSE comment on every open stream (15 s) */
	char *public_url;          /* how browsers reach this gateway ("https://host[:port][/path]",
				    * no trailing slash); default: the origin of auth.resource;
				    * NULL: none (no web login, oauth/weblogin.h) */
	struct sl_auth_config auth;
	struct sl_tls_config tls;
};

/* sluice.limits: what the gateway holds and runs on behalf of peers, with
 * what happens at each bound (docs/RELIABILITY.md, "Bounds"). */
struct sl_limits {
	size_t max_buffered_bytes;      /* everything buffered for peers, all sessions (256 MiB) */
	size_t max_session_bytes;       /* one session's share of it (16 MiB) */
	uint32_t max_requests;          /* requests in flight, all sessions, both eras (256) */
	uint32_t max_connections;       /* HTTP connections open at once (1024) */
	uint32_t max_pending;           /* HTTP connections not yet admitted (256) */
	uint32_t max_pending_per_ip;    /* of those, from one address (32) */
	uint64_t header_timeout_ms;     /* a connection's request headers, whole (10 s) */
	uint64_t idle_timeout_ms;       /* a kept-alive connection with nothing to do (120 s) */
	uint32_t server_requests_per_call; /* sampling, elicitation relayed in one call (16) */
	uint32_t server_requests_per_minute; /* the same, per server (60) */
	uint32_t notifications_per_second;   /* relayed from one server (100) */
	uint32_t tasks_per_session;     /* tasks a client session holds (32) */
	uint32_t max_tasks;             /* tasks held, all sessions (1024) */
	uint64_t task_ttl_ms;           /* the longest a task entry is kept (1 h) */
	/* MCP 2026-07-28 clients: tool calls parked while their server's
	 * question travels as input_required (gateway/park.c). */
	uint32_t max_parked;            /* parked calls, all clients (256) */
	uint32_t max_parked_per_client; /* of those, one credential's (16) */
	uint64_t park_timeout_ms;       /* how long one waits for the client's retry (60 s) */
	uint32_t max_input_rounds;      /* input_required answers to one call (8) */
	uint32_t max_listens;           /* subscriptions/listen streams open, all clients (256) */
	uint32_t max_listens_per_session; /* per stdio client, per HTTP credential (16) */
	uint32_t max_listen_uris;       /* resourceSubscriptions in one listen (64) */
	uint32_t max_metric_series;     /* (server, tool) pairs the call counter keeps (1000) */
	/* tools/list (gateway/listing.c): */
	uint32_t tools_page_size;       /* tools in one answer; 0: all in one (0) */
	uint32_t max_listings;          /* rendered listings kept, all views (64) */
	size_t max_listing_bytes;       /* what they hold together (64 MiB) */
};

/* sluice.profiles.<name>: a virtual server at /mcp/<name> (docs/PROFILES.md):
 * a curated part of the catalog, in an exposure mode of its own. Matching
 * and naming are src/gateway/view.c's. */
#define SL_PROFILE_NAME_MAX 64 /* [a-z0-9_-]{1,64} */
#define SL_PROFILES_MAX 64     /* profiles in one config */
#define SL_PROFILE_RENAME_MAX 256 /* renames in one profile */
#define SL_PROFILE_GLOBS_MAX 256  /* globs in one profile's servers, or tools */
#define SL_ALWAYS_LOAD_MAX 256    /* globs in sluice.alwaysLoad, or a profile's */
/* sluice.alwaysLoad when not given: sluice's own tools (code mode's and the
 * router's), NULL-terminated. */
extern const char *const sl_always_load_default[];

struct sl_profile {
	char *name;            /* "default": the one /mcp serves */
	char **servers;        /* globs on server names, NULL-terminated; NULL: all */
	char **tools;          /* globs on "server.tool", NULL-terminated; NULL: all */
	struct sl_kv *rename;  /* "server.tool" -> the name it has in this profile */
	size_t nrename;
	enum sl_exposure exposure;
	bool exposure_set;     /* false: sluice.exposure's (or --exposure) */
	char **always_load;    /* globs on served tool names, NULL-terminated; NULL:
				* sluice.alwaysLoad's (an empty list: none) */
};

/* sluice.shared.redis (src/shared/, docs/internals/REPLICAS.md): where the
 * replicas of one gateway keep the state they share. on: the section is
 * present; without it nothing of src/shared/ runs. */
struct sl_redis_config {
	bool on;
	char *url;                 /* "redis://host:port/db" or "unix:/path" */
	char *password;            /* ${VAR} expanded; NULL: no AUTH */
	char *key_prefix;          /* before every key and channel; default "sluice:" */
	uint32_t connect_timeout_ms;
	uint32_t command_timeout_ms;
	uint32_t max_pending;      /* commands waiting for a reply; one more fails at once */
	uint32_t max_reply_bytes;  /* one reply; a bigger one drops the connection */
};

struct sl_config {
	unsigned refs;                     /* references beyond the first */
	char *path;
	struct sl_http_config http;
	struct sl_oauth_config oauth;
	struct sl_server_config *servers;
	size_t nservers;
	const char *servers_key;           /* "mcpServers" or "servers", as the file has it */
	enum sl_exposure exposure;
	char **always_load;                /* sluice.alwaysLoad: globs on served tool names,
					    * NULL-terminated; NULL: SL_ALWAYS_LOAD_DEFAULT */
	int log_level;
	char *log_file;
	uint64_t call_timeout_ms;
	uint64_t startup_timeout_ms;
	uint64_t restart_max_backoff_ms;
	size_t max_request_bytes;          /* one client message */
	size_t max_upstream_message_bytes; /* one upstream message */
	size_t max_tools;                  /* per upstream */
	bool code_enabled;                 /* code mode runs: a sandbox is started (execute_code
					    * is offered somewhere) */
	bool code_offered;                 /* sluice.codeMode.enabled: offered in every mode */
	bool code_save_skills;             /* sluice.codeMode.saveSkills, resolved: save_skill
					    * is offered (given, else true unless the HTTP
					    * face authenticates its callers) */
	bool code_save_skills_set;         /* the key was given */
	struct sl_profile *profiles;       /* sluice.profiles, in file order */
	size_t nprofiles;
	struct sl_code_limits code;
	int code_pool;                     /* workers prepared in advance */
	uint32_t code_max_concurrent;      /* programs running at once; 0: twice the cores */
	uint32_t code_max_queued;          /* programs waiting for one of those */
	uint32_t code_max_concurrent_caller; /* of those, one caller's; 0: half, at least 1 */
	uint32_t code_max_queued_caller;   /* of the waiting, one caller's; 0: half, at least 1 */
	struct sl_limits limits;
	struct sl_redis_config redis;      /* sluice.shared.redis */
	char *shared_secret;               /* sluice.shared.secret, ${VAR} expanded; NULL: none.
					    * Never logged: the generation's key is derived from it */
	char *replica_id;                  /* sluice.shared.replicaId; NULL: "<hostname>:<pid>" */
	unsigned code_require;             /* boundaries code mode refuses to run without */
	yyjson_doc *doc;                   /* the file, kept for the stages' sections */
	yyjson_val *sluice;                /* the "sluice" object, or NULL */
	char **warnings;
	size_t nwarnings;
};

/* What the loader needs from the modules above config/, which it includes
 * none of: the stages' own sections, and names and syntaxes that other
 * modules own. The one instance, sl_config_modules, is defined by the
 * layer that links them all (src/gateway/modules.c), as nginx's configure
 * writes ngx_modules[] (docs/ARCHITECTURE.md, "Config"). */
struct sl_conf_section;
struct sl_config_modules {
	/* Stage i of the stage table (pipeline/stages.c): its name, whose
	 * sluice.<name> object the stage applies at init, and its section
	 * (NULL: none) for the reference. False past the last stage. */
	bool (*stage)(size_t i, const char **name, const struct sl_conf_section **conf);
	/* A tool of the gateway's own (gateway/router.h): no profile renames to it. */
	bool (*reserved_tool)(const char *name);
	/* A sandbox boundary's bit by name (sandbox/kernel.h), 0 if unknown. */
	unsigned (*boundary)(const char *name);
	/* sluice.shared.replicaId's syntax (shared/fleet.h): 1 to replica_id_max bytes. */
	bool (*replica_id_ok)(const char *id);
	unsigned replica_id_max;
	/* sluice.shared.redis.url (shared/url.h): 0, or SL_ERR_INVALID with err
	 * saying what is wrong with url. */
	int (*redis_url_check)(const char *url, struct sl_err *err);
};
extern const struct sl_config_modules sl_config_modules;

/* Loads and validates path. Returns 0, or SL_ERR_* with err->msg saying
 * where (file:line:column) and what. */
int sl_config_load(const char *path, struct sl_config **out, struct sl_err *err) SL_MUST_USE;
/* Parses a config from memory (path is used in messages only). */
int sl_config_parse(const char *path, const char *text, size_t len,
		    struct sl_config **out, struct sl_err *err) SL_MUST_USE;
/* Takes another reference (returns c); sl_config_unref drops one and
 * frees the config with the last. */
const struct sl_config *sl_config_ref(const struct sl_config *c);
void sl_config_unref(const struct sl_config *c);

const char *sl_exposure_name(enum sl_exposure e);
/* The profile named name (NULL: "default"), or NULL if c has none by that
 * name (for "default": /mcp then serves everything in sluice.exposure). */
const struct sl_profile *sl_config_profile(const struct sl_config *c, const char *name);
void sl_auth_config_dispose(struct sl_auth_config *a);

/* Writes the markdown reference of every config key to f: the sections
 * this module parses, then each stage's own (struct sl_stage's conf, in
 * table order). docs/CONFIG.md is its output. */
void sl_config_reference(FILE *f);

/* The environment for a child: a least-privilege allowlist taken from envp
 * plus what the entry declares. Returns a NULL-terminated array; free it
 * with sl_config_env_free. */
char **sl_config_child_env(const struct sl_server_config *s, char *const *envp);
void sl_config_env_free(char **env);

/* Expands ${VAR} and ${env:VAR} from getenv_fn. Returns a new string, or
 * NULL with err set (unset variable, unterminated reference). */
char *sl_config_expand(const char *s, const char *(*getenv_fn)(const char *), struct sl_err *err);

/* A path as the config file gives it: ${VAR} and a leading ~/ expanded, a
 * relative one taken from the directory of config_path (the current
 * directory when config_path is NULL or has no slash). Returns a new
 * absolute path, or NULL with err set (an unset variable). */
char *sl_config_path(const char *config_path, const char *value, struct sl_err *err);

#endif

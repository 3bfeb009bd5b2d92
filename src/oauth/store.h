/*
 * Tokens and registrations on disk: one file per (server URL, user) under
 * $XDG_STATE_HOME/sluice/oauth/ (~/.local/state/sluice/oauth), the directory
 * 0700 and each file 0600, written whole to a temporary file, synced and
 * renamed over the old one, so a crash leaves the old record or the new,
 * never half of one. The file's name is a digest of the URL and the user:
 * a server renamed in the config keeps its login, two configs with a
 * server called `github` pointing at different URLs do not share one.
 *
 * Optionally encrypted (AES-256-GCM, Nettle) with a key from the
 * environment (SLUICE_TOKEN_KEY) or a file (sluice.oauth.keyFile): the key
 * material is hashed to 32 bytes; each write has a fresh random nonce; a
 * file that does not decrypt (another key, tampered) is refused with a
 * message, never read as empty. A record is at most SL_OAUTH_RECORD_MAX
 * bytes on disk.
 *
 *   struct sl_oauth_store *st;
 *   if (sl_oauth_store_open(cfg, &st, &err) < 0) ... err.msg
 *   struct sl_oauth_record rec = { 0 };
 *   rc = sl_oauth_store_load(st, url, user, &rec, &err);   SL_ERR_NOT_FOUND: none
 *   ... rec.tokens.access_token ...
 *   sl_oauth_store_save(st, &rec, &err);
 *   sl_oauth_record_dispose(&rec);
 *   sl_oauth_store_free(st);
 */
#ifndef SL_OAUTH_STORE_H
#define SL_OAUTH_STORE_H

#include "oauth/oauth.h"

struct sl_caller;
struct sl_config;

#define SL_OAUTH_RECORD_MAX (256 * 1024)
#define SL_OAUTH_KEY_LEN 32 /* AES-256: SHA-256 of the key material */

/* What is kept for one server and one user. */
struct sl_oauth_record {
	char *url;                    /* the server's URL (the key, with user) */
	char *user;                   /* "" : the gateway's own login; else a caller's key */
	char *server;                 /* its name in the config when saved (for status) */
	char *subject;                /* who logged in, if known; else NULL */
	struct sl_oauth_server as;    /* discovery's answer */
	struct sl_oauth_registration reg;
	struct sl_oauth_tokens tokens;
	char *needs_scope;            /* the server asked for more (step-up); NULL: no */
	int64_t saved_at;             /* unix seconds */
};

void sl_oauth_record_dispose(struct sl_oauth_record *r);

struct sl_oauth_store;

/* The store for cfg (sluice.oauth.keyFile, SLUICE_TOKEN_KEY). Creates the
 * directory when first saving, not here. */
int sl_oauth_store_open(const struct sl_config *cfg, struct sl_oauth_store **out,
			struct sl_err *err) SL_MUST_USE;
void sl_oauth_store_free(struct sl_oauth_store *st);

int sl_oauth_store_load(struct sl_oauth_store *st, const char *url, const char *user,
			struct sl_oauth_record *out, struct sl_err *err) SL_MUST_USE;
int sl_oauth_store_save(struct sl_oauth_store *st, const struct sl_oauth_record *r,
			struct sl_err *err) SL_MUST_USE;
/* SL_ERR_NOT_FOUND: there was none. */
int sl_oauth_store_remove(struct sl_oauth_store *st, const char *url, const char *user,
			  struct sl_err *err) SL_MUST_USE;
/* Per-user records saved under an older user key move to who's key now
 * (user): those saved before the identity digest (auth/caller.h) are
 * named SHA-256 of "ISSUER\nSUBJECT" (ISSUER "sluice:token" for a static
 * token); those of a token no issuer names (an introspection answer
 * without "iss") by the identity digest of its subject alone, before the
 * key took its method and realm. Moves who's record for url, if there is
 * one, removing the old file; a record already under user is kept and
 * the old one left alone. Called as a person's link is made
 * (upstream/users.c), so no login is lost. 0 (also when there was nothing
 * to move), or the store's error. */
int sl_oauth_store_migrate(struct sl_oauth_store *st, const char *url,
			   const struct sl_caller *who, const char *user,
			   struct sl_err *err) SL_MUST_USE;
/* The file a record lives in (it may not exist): malloc'd. For watching. */
char *sl_oauth_store_path(const struct sl_oauth_store *st, const char *url, const char *user);

/* Every record, for `sluice auth status`: fn(arg, rec) for each readable
 * one, fn(arg, NULL) never; unreadable files are reported through warn
 * (the first one's message and how many more; empty when none). At most
 * 10000 files are read. Fails only when the directory cannot be read (a
 * directory not made yet holds no records). */
typedef void sl_oauth_store_each_fn(void *arg, const struct sl_oauth_record *r);
int sl_oauth_store_each(struct sl_oauth_store *st, sl_oauth_store_each_fn *fn, void *arg,
			struct sl_err *warn) SL_MUST_USE;

/* The file format, for the store and the fuzzer: a record's bytes on disk
 * (the JSON, or sealed under key, SL_OAUTH_KEY_LEN bytes; NULL: plain).
 * Malloc'd; *len its length. NULL when a string is not UTF-8 (what
 * decode returns always is). */
char *sl_oauth_record_encode(const struct sl_oauth_record *r, const uint8_t *key, size_t *len);
/* The record in the n bytes data of the file name (for messages), sealed
 * or plain (a plain one is read with a key too). SL_ERR_TOO_LARGE over
 * SL_OAUTH_RECORD_MAX; SL_ERR_INVALID for a file that is not a record, has
 * a member of the wrong type, is sealed without a key or does not open
 * with this one. *out is set only on success. */
int sl_oauth_record_decode(const char *name, const char *data, size_t n, const uint8_t *key,
			   struct sl_oauth_record *out, struct sl_err *err) SL_MUST_USE;

#endif

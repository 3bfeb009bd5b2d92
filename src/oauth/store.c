/*
 * The token store (see store.h and docs/internals/AUTH.md, "Token
 * store"): one file per (URL, user), named by the SHA-256 of
 * "URL\nUSER". A file is either the record's JSON or, with a key,
 * "sluice-sealed-v1:" and base64url(nonce || AES-256-GCM(JSON) || tag).
 *
 * Also the lifecycle of oauth.h's value types (dispose, deep copy): they
 * are what a record holds.
 */
#include "oauth/store.h"

#include "auth/caller.h"
#include "config/config.h"
#include "core/digest.h"
#include "core/json.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nettle/base64.h>
#include <nettle/sha2.h>

#define SEALED_PREFIX "sluice-sealed-v1:"
#define KEY_FILE_MAX 4096            /* bytes of sluice.oauth.keyFile */
#define EACH_MAX 10000               /* record files sl_oauth_store_each reads */
#define NAME_LEN (2 * SHA256_DIGEST_SIZE + 5) /* hex + ".json" */
#define FORMAT_VERSION 1

struct sl_oauth_store {
	char *dir;                   /* $XDG_STATE_HOME/sluice/oauth */
	bool sealed;                 /* a key is set: every save is encrypted */
	uint8_t key[SL_OAUTH_KEY_LEN];
};

/* ---- the value types ------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
	return s ? sl_strdup(s) : NULL;
}

void sl_oauth_server_dispose(struct sl_oauth_server *s)
{
	free(s->resource);
	free(s->issuer);
	free(s->authorization_endpoint);
	free(s->token_endpoint);
	free(s->registration_endpoint);
	free(s->revocation_endpoint);
	free(s->scope);
	memset(s, 0, sizeof(*s));
}

void sl_oauth_server_copy(struct sl_oauth_server *dst, const struct sl_oauth_server *src)
{
	*dst = *src;
	dst->resource = dup_or_null(src->resource);
	dst->issuer = dup_or_null(src->issuer);
	dst->authorization_endpoint = dup_or_null(src->authorization_endpoint);
	dst->token_endpoint = dup_or_null(src->token_endpoint);
	dst->registration_endpoint = dup_or_null(src->registration_endpoint);
	dst->revocation_endpoint = dup_or_null(src->revocation_endpoint);
	dst->scope = dup_or_null(src->scope);
}

void sl_oauth_registration_dispose(struct sl_oauth_registration *r)
{
	free(r->issuer);
	free(r->client_id);
	free(r->client_secret);
	free(r->auth_method);
	free(r->redirect_uri);
	free(r->how);
	memset(r, 0, sizeof(*r));
}

void sl_oauth_registration_copy(struct sl_oauth_registration *dst,
				const struct sl_oauth_registration *src)
{
	dst->issuer = dup_or_null(src->issuer);
	dst->client_id = dup_or_null(src->client_id);
	dst->client_secret = dup_or_null(src->client_secret);
	dst->key = src->key;
	dst->auth_method = dup_or_null(src->auth_method);
	dst->redirect_uri = dup_or_null(src->redirect_uri);
	dst->how = dup_or_null(src->how);
}

void sl_oauth_tokens_dispose(struct sl_oauth_tokens *t)
{
	free(t->access_token);
	free(t->refresh_token);
	free(t->scope);
	memset(t, 0, sizeof(*t));
}

void sl_oauth_tokens_copy(struct sl_oauth_tokens *dst, const struct sl_oauth_tokens *src)
{
	dst->access_token = dup_or_null(src->access_token);
	dst->refresh_token = dup_or_null(src->refresh_token);
	dst->scope = dup_or_null(src->scope);
	dst->expires_at = src->expires_at;
	dst->issued_at = src->issued_at;
}

void sl_oauth_record_dispose(struct sl_oauth_record *r)
{
	free(r->url);
	free(r->user);
	free(r->server);
	free(r->subject);
	sl_oauth_server_dispose(&r->as);
	sl_oauth_registration_dispose(&r->reg);
	sl_oauth_tokens_dispose(&r->tokens);
	free(r->needs_scope);
	memset(r, 0, sizeof(*r));
}

/* ---- the file format: writing ---------------------------------------------- */

static const struct {
	unsigned bit;
	const char *name;
} auth_methods[] = {
	{ SL_OAUTH_AUTH_NONE, "none" },
	{ SL_OAUTH_AUTH_BASIC, "client_secret_basic" },
	{ SL_OAUTH_AUTH_POST, "client_secret_post" },
};

static void put_str(yyjson_mut_doc *d, yyjson_mut_val *o, const char *key, const char *v)
{
	if (v)
		yyjson_mut_obj_add_strcpy(d, o, key, v);
}

static char *to_json(const struct sl_oauth_record *r, size_t *len)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *root = yyjson_mut_obj(d), *as, *reg, *tok, *methods;
	yyjson_write_err we;
	char *text;

	if (!d || !root)
		sl_oom();
	yyjson_mut_doc_set_root(d, root);
	yyjson_mut_obj_add_int(d, root, "version", FORMAT_VERSION);
	put_str(d, root, "url", r->url);
	put_str(d, root, "user", r->user);
	put_str(d, root, "server", r->server);
	put_str(d, root, "subject", r->subject);

	as = yyjson_mut_obj_add_obj(d, root, "as");
	put_str(d, as, "resource", r->as.resource);
	put_str(d, as, "issuer", r->as.issuer);
	put_str(d, as, "authorization_endpoint", r->as.authorization_endpoint);
	put_str(d, as, "token_endpoint", r->as.token_endpoint);
	put_str(d, as, "registration_endpoint", r->as.registration_endpoint);
	put_str(d, as, "revocation_endpoint", r->as.revocation_endpoint);
	put_str(d, as, "scope", r->as.scope);
	methods = yyjson_mut_obj_add_arr(d, as, "auth_methods");
	for (size_t i = 0; i < SL_COUNT(auth_methods); i++)
		if (r->as.auth_methods & auth_methods[i].bit)
			yyjson_mut_arr_add_str(d, methods, auth_methods[i].name);
	yyjson_mut_obj_add_bool(d, as, "cimd", r->as.cimd);
	yyjson_mut_obj_add_bool(d, as, "offline_access", r->as.offline_access);
	yyjson_mut_obj_add_bool(d, as, "legacy", r->as.legacy);

	reg = yyjson_mut_obj_add_obj(d, root, "reg");
	put_str(d, reg, "issuer", r->reg.issuer);
	put_str(d, reg, "client_id", r->reg.client_id);
	put_str(d, reg, "client_secret", r->reg.client_secret);
	put_str(d, reg, "auth_method", r->reg.auth_method);
	put_str(d, reg, "redirect_uri", r->reg.redirect_uri);
	put_str(d, reg, "how", r->reg.how);

	tok = yyjson_mut_obj_add_obj(d, root, "tokens");
	put_str(d, tok, "access_token", r->tokens.access_token);
	put_str(d, tok, "refresh_token", r->tokens.refresh_token);
	put_str(d, tok, "scope", r->tokens.scope);
	yyjson_mut_obj_add_int(d, tok, "expires_at", r->tokens.expires_at);

	put_str(d, root, "needs_scope", r->needs_scope);
	yyjson_mut_obj_add_int(d, root, "saved_at", r->saved_at);

	text = yyjson_mut_write_opts(d, YYJSON_WRITE_PRETTY_TWO_SPACES, NULL, len, &we);
	yyjson_mut_doc_free(d);
	if (!text && we.code == YYJSON_WRITE_ERROR_MEMORY_ALLOCATION)
		sl_oom();
	return text; /* NULL: a string is not UTF-8 */
}

/* nonce || ciphertext || tag under key (core/digest.h's AEAD, no
 * associated data), as base64url after the prefix. */
static char *seal(const uint8_t *key, const char *plain, size_t n, size_t *len)
{
	size_t blen = n + SL_AEAD_OVERHEAD, hdr = strlen(SEALED_PREFIX), done;
	uint8_t *blob = sl_alloc(blen);
	struct base64_encode_ctx b64;
	char *out;

	sl_aead_seal(key, NULL, 0, plain, n, blob);
	out = sl_alloc(hdr + BASE64_ENCODE_LENGTH(blen) + BASE64_ENCODE_FINAL_LENGTH + 1);
	memcpy(out, SEALED_PREFIX, hdr);
	base64url_encode_init(&b64);
	done = hdr + base64_encode_update(&b64, out + hdr, blen, blob);
	done += base64_encode_final(&b64, out + done);
	out[done] = '\0';
	*len = done;
	free(blob);
	return out;
}

char *sl_oauth_record_encode(const struct sl_oauth_record *r, const uint8_t *key, size_t *len)
{
	size_t n;
	char *json = to_json(r, &n), *out;

	if (!json)
		return NULL;
	if (!key) {
		*len = n;
		return json;
	}
	out = seal(key, json, n, len);
	explicit_bzero(json, n);
	free(json);
	return out;
}

/* ---- the file format: reading ------------------------------------------------ */

/* Reading one file: its name for messages, where the error goes. */
struct rd {
	const char *name;
	struct sl_err *err;
};

/* A string member (absent or null: *dst stays NULL). A string holding a
 * NUL is refused: it could not come back the same. */
static int get_str(struct rd *rd, yyjson_val *o, const char *obj, const char *key, char **dst)
{
	yyjson_val *v = yyjson_obj_get(o, key);

	if (!v || yyjson_is_null(v))
		return 0;
	if (!yyjson_is_str(v) || strlen(yyjson_get_str(v)) != yyjson_get_len(v)) {
		sl_err_set(rd->err, "%s: \"%s%s%s\" is not a string", rd->name, obj,
			   obj[0] ? "." : "", key);
		return SL_ERR_INVALID;
	}
	*dst = sl_strndup(yyjson_get_str(v), yyjson_get_len(v));
	return 0;
}

/* A token goes into an HTTP header as it is: a control character (CR LF
 * above all, which would add a header of the file's choosing), a space or
 * a byte over 0x7e is refused here, so no record can carry one there. The
 * token endpoint's answers are held to the same rule (flow.c). */
static int header_value(struct rd *rd, const char *key, const char *v)
{
	for (const char *c = v; c && *c; c++) {
		if (*c < 0x21 || *c > 0x7e) {
			sl_err_set(rd->err, "%s: \"tokens.%s\" holds a control character, a space or a "
				   "byte over 0x7e: refused (log in again)", rd->name, key);
			return SL_ERR_INVALID;
		}
	}
	return 0;
}

static int get_bool(struct rd *rd, yyjson_val *o, const char *obj, const char *key, bool *dst)
{
	yyjson_val *v = yyjson_obj_get(o, key);

	if (!v || yyjson_is_null(v))
		return 0;
	if (!yyjson_is_bool(v)) {
		sl_err_set(rd->err, "%s: \"%s.%s\" is not true or false", rd->name, obj, key);
		return SL_ERR_INVALID;
	}
	*dst = yyjson_get_bool(v);
	return 0;
}

/* Unix seconds: a whole number from 0 to INT64_MAX. */
static int get_time(struct rd *rd, yyjson_val *o, const char *obj, const char *key, int64_t *dst)
{
	yyjson_val *v = yyjson_obj_get(o, key);

	if (!v || yyjson_is_null(v))
		return 0;
	if (!(yyjson_is_uint(v) && yyjson_get_uint(v) <= INT64_MAX) &&
	    !(yyjson_is_sint(v) && yyjson_get_sint(v) >= 0)) {
		sl_err_set(rd->err, "%s: \"%s%s%s\" is not a time (unix seconds)", rd->name, obj,
			   obj[0] ? "." : "", key);
		return SL_ERR_INVALID;
	}
	*dst = yyjson_is_uint(v) ? (int64_t)yyjson_get_uint(v) : yyjson_get_sint(v);
	return 0;
}

/* An object member (absent or null: NULL, which every getter takes). */
static int get_obj(struct rd *rd, yyjson_val *o, const char *key, yyjson_val **dst)
{
	yyjson_val *v = yyjson_obj_get(o, key);

	*dst = NULL;
	if (!v || yyjson_is_null(v))
		return 0;
	if (!yyjson_is_obj(v)) {
		sl_err_set(rd->err, "%s: \"%s\" is not an object", rd->name, key);
		return SL_ERR_INVALID;
	}
	*dst = v;
	return 0;
}

static int get_methods(struct rd *rd, yyjson_val *as, unsigned *dst)
{
	yyjson_val *v = yyjson_obj_get(as, "auth_methods"), *m;
	size_t i, max;

	if (!v || yyjson_is_null(v))
		return 0;
	if (!yyjson_is_arr(v))
		goto bad;
	yyjson_arr_foreach(v, i, max, m) {
		if (!yyjson_is_str(m))
			goto bad;
		/* A method this sluice does not know is one it cannot use. */
		for (size_t k = 0; k < SL_COUNT(auth_methods); k++)
			if (yyjson_equals_str(m, auth_methods[k].name))
				*dst |= auth_methods[k].bit;
	}
	return 0;
bad:
	sl_err_set(rd->err, "%s: \"as.auth_methods\" is not a list of names", rd->name);
	return SL_ERR_INVALID;
}

static int from_json(struct rd *rd, const char *s, size_t n, struct sl_oauth_record *r)
{
	yyjson_read_err re;
	yyjson_doc *doc = sl_json_read(s, n, SL_JSON_READ_FLAGS, &re);
	yyjson_val *root, *as, *reg, *tok, *ver;
	int rc = SL_ERR_INVALID;

	if (!doc) {
		sl_err_set(rd->err, "%s: not JSON: %s at byte %zu", rd->name, re.msg, re.pos);
		return SL_ERR_INVALID;
	}
	root = yyjson_doc_get_root(doc);
	if (!yyjson_is_obj(root)) {
		sl_err_set(rd->err, "%s: not a JSON object", rd->name);
		goto out;
	}
	ver = yyjson_obj_get(root, "version");
	if (!yyjson_is_int(ver)) {
		sl_err_set(rd->err, "%s: no \"version\" number: not a sluice token record", rd->name);
		goto out;
	}
	if (!(yyjson_is_uint(ver) && yyjson_get_uint(ver) == FORMAT_VERSION)) {
		sl_err_set(rd->err, "%s: record version %s (this sluice reads version %d)", rd->name,
			   yyjson_is_uint(ver) && yyjson_get_uint(ver) > FORMAT_VERSION ?
				   "of a newer sluice" : "unknown",
			   FORMAT_VERSION);
		goto out;
	}
	if (get_str(rd, root, "", "url", &r->url) < 0 || get_str(rd, root, "", "user", &r->user) < 0 ||
	    get_str(rd, root, "", "server", &r->server) < 0 ||
	    get_str(rd, root, "", "subject", &r->subject) < 0 ||
	    get_str(rd, root, "", "needs_scope", &r->needs_scope) < 0 ||
	    get_time(rd, root, "", "saved_at", &r->saved_at) < 0 ||
	    get_obj(rd, root, "as", &as) < 0 || get_obj(rd, root, "reg", &reg) < 0 ||
	    get_obj(rd, root, "tokens", &tok) < 0)
		goto out;
	if (!r->url || !r->user) {
		sl_err_set(rd->err, "%s: no \"%s\"", rd->name, r->url ? "user" : "url");
		goto out;
	}
	if (get_str(rd, as, "as", "resource", &r->as.resource) < 0 ||
	    get_str(rd, as, "as", "issuer", &r->as.issuer) < 0 ||
	    get_str(rd, as, "as", "authorization_endpoint", &r->as.authorization_endpoint) < 0 ||
	    get_str(rd, as, "as", "token_endpoint", &r->as.token_endpoint) < 0 ||
	    get_str(rd, as, "as", "registration_endpoint", &r->as.registration_endpoint) < 0 ||
	    get_str(rd, as, "as", "revocation_endpoint", &r->as.revocation_endpoint) < 0 ||
	    get_str(rd, as, "as", "scope", &r->as.scope) < 0 ||
	    get_methods(rd, as, &r->as.auth_methods) < 0 ||
	    get_bool(rd, as, "as", "cimd", &r->as.cimd) < 0 ||
	    get_bool(rd, as, "as", "offline_access", &r->as.offline_access) < 0 ||
	    get_bool(rd, as, "as", "legacy", &r->as.legacy) < 0)
		goto out;
	if (get_str(rd, reg, "reg", "issuer", &r->reg.issuer) < 0 ||
	    get_str(rd, reg, "reg", "client_id", &r->reg.client_id) < 0 ||
	    get_str(rd, reg, "reg", "client_secret", &r->reg.client_secret) < 0 ||
	    get_str(rd, reg, "reg", "auth_method", &r->reg.auth_method) < 0 ||
	    get_str(rd, reg, "reg", "redirect_uri", &r->reg.redirect_uri) < 0 ||
	    get_str(rd, reg, "reg", "how", &r->reg.how) < 0)
		goto out;
	if (get_str(rd, tok, "tokens", "access_token", &r->tokens.access_token) < 0 ||
	    get_str(rd, tok, "tokens", "refresh_token", &r->tokens.refresh_token) < 0 ||
	    get_str(rd, tok, "tokens", "scope", &r->tokens.scope) < 0 ||
	    get_time(rd, tok, "tokens", "expires_at", &r->tokens.expires_at) < 0 ||
	    header_value(rd, "access_token", r->tokens.access_token) < 0 ||
	    header_value(rd, "refresh_token", r->tokens.refresh_token) < 0)
		goto out;
	rc = 0;
out:
	yyjson_doc_free(doc);
	return rc;
}

/* The JSON inside a sealed file, or an error that says what to do. */
static int unseal(struct rd *rd, const uint8_t *key, const char *s, size_t n, char **plain,
		  size_t *plen)
{
	struct base64_decode_ctx b64;
	uint8_t *blob = sl_alloc(BASE64_DECODE_LENGTH(n) + 1);
	size_t blen = 0, clen;
	int rc = SL_ERR_INVALID;

	if (!key) {
		sl_err_set(rd->err, "%s: the record is encrypted: set SLUICE_TOKEN_KEY or "
			   "sluice.oauth.keyFile to the key it was saved with", rd->name);
		goto out;
	}
	base64url_decode_init(&b64);
	if (!base64_decode_update(&b64, &blen, blob, n, s) || !base64_decode_final(&b64) ||
	    blen < SL_AEAD_OVERHEAD) {
		sl_err_set(rd->err, "%s: a damaged encrypted record (not base64url of a nonce, "
			   "ciphertext and tag)", rd->name);
		goto out;
	}
	clen = blen - SL_AEAD_OVERHEAD;
	*plain = sl_alloc(clen + 1);
	if (!sl_aead_open(key, NULL, 0, blob, blen, *plain)) {
		free(*plain);
		*plain = NULL;
		sl_err_set(rd->err, "%s: does not open with this key: encrypted with another key "
			   "(SLUICE_TOKEN_KEY or sluice.oauth.keyFile), or changed since", rd->name);
		goto out;
	}
	*plen = clen;
	rc = 0;
out:
	free(blob);
	return rc;
}

int sl_oauth_record_decode(const char *name, const char *data, size_t n, const uint8_t *key,
			   struct sl_oauth_record *out, struct sl_err *err)
{
	struct rd rd = { name, err };
	struct sl_oauth_record r = { 0 };
	size_t hdr = strlen(SEALED_PREFIX), plen = 0;
	char *plain = NULL;
	int rc;

	if (n > SL_OAUTH_RECORD_MAX) {
		sl_err_set(err, "%s: over %d bytes: not a token record", name, SL_OAUTH_RECORD_MAX);
		return SL_ERR_TOO_LARGE;
	}
	if (n >= hdr && memcmp(data, SEALED_PREFIX, hdr) == 0) {
		rc = unseal(&rd, key, data + hdr, n - hdr, &plain, &plen);
		if (rc < 0)
			return rc;
		rc = from_json(&rd, plain, plen, &r);
		explicit_bzero(plain, plen);
		free(plain);
	} else {
		/* A plain record is read with a key set too: the next save
		 * seals it (turning encryption on needs no migration). */
		rc = from_json(&rd, data, n, &r);
	}
	if (rc < 0) {
		sl_oauth_record_dispose(&r);
		return rc;
	}
	*out = r;
	return 0;
}

/* ---- the store --------------------------------------------------------------- */

/* sluice.oauth.keyFile's contents (trailing line ends dropped, so `echo
 * KEY > file` and SLUICE_TOKEN_KEY=KEY are the same key). */
static int read_key_file(const char *path, char *buf, size_t *len, struct sl_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *where = sl_printf("sluice.oauth.keyFile %s", path), *data = NULL;
	size_t n = 0, got;
	int rc;

	if (fd < 0) {
		sl_err_set(err, "%s: %s", where, strerror(errno));
		free(where);
		return SL_ERR_IO;
	}
	rc = sl_read_fd(fd, where, KEY_FILE_MAX, "a key", &data, &n, err);
	close(fd);
	if (rc == SL_OK) {
		got = n;
		while (n > 0 && (data[n - 1] == '\n' || data[n - 1] == '\r'))
			n--;
		if (n == 0) {
			sl_err_set(err, "%s: empty", where);
			rc = SL_ERR_INVALID;
		} else {
			memcpy(buf, data, n);
			*len = n;
		}
		explicit_bzero(data, got);
		free(data);
	}
	free(where);
	return rc;
}

int sl_oauth_store_open(const struct sl_config *cfg, struct sl_oauth_store **out,
			struct sl_err *err)
{
	const char *env = getenv("SLUICE_TOKEN_KEY");
	const char *key_file = cfg ? cfg->oauth.key_file : NULL;
	char material[KEY_FILE_MAX + 1];
	size_t mlen = 0;
	char *state = sl_state_dir();
	struct sl_oauth_store *st;
	struct sha256_ctx h;
	int rc;

	if (!state) {
		sl_err_set(err, "no state directory for OAuth tokens (set XDG_STATE_HOME or HOME)");
		return SL_ERR_STATE;
	}
	if (key_file) {
		rc = read_key_file(key_file, material, &mlen, err);
		if (rc < 0) {
			free(state);
			return rc;
		}
	} else if (env) {
		mlen = strlen(env);
		if (mlen == 0 || mlen > KEY_FILE_MAX) {
			sl_err_set(err, "SLUICE_TOKEN_KEY is %s", mlen ? "over 4096 bytes" : "empty");
			free(state);
			return SL_ERR_INVALID;
		}
		memcpy(material, env, mlen);
	}
	st = sl_alloc(sizeof(*st));
	st->dir = sl_printf("%s/oauth", state);
	free(state);
	if (mlen) {
		sha256_init(&h);
		sha256_update(&h, mlen, (const uint8_t *)material);
		sha256_digest(&h, sizeof(st->key), st->key);
		explicit_bzero(material, mlen);
		st->sealed = true;
	}
	*out = st;
	return 0;
}

void sl_oauth_store_free(struct sl_oauth_store *st)
{
	if (!st)
		return;
	explicit_bzero(st->key, sizeof(st->key));
	free(st->dir);
	free(st);
}

char *sl_oauth_store_path(const struct sl_oauth_store *st, const char *url, const char *user)
{
	char *k = sl_printf("%s\n%s", url, user), hex[SL_SHA256_HEX];

	sl_sha256_hex(k, strlen(k), hex);
	free(k);
	return sl_printf("%s/%s.json", st->dir, hex);
}

static const uint8_t *key_of(const struct sl_oauth_store *st)
{
	return st->sealed ? st->key : NULL;
}

/* Reads one record file: a regular file of ours, private, bounded. */
static int load_path(struct sl_oauth_store *st, const char *path, struct sl_oauth_record *out,
		     struct sl_err *err)
{
	struct stat sb;
	char *buf = NULL;
	size_t n = 0;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT) {
			sl_err_set(err, "%s: no such record", path);
			return SL_ERR_NOT_FOUND;
		}
		sl_err_set(err, "%s: %s", path,
			   errno == ELOOP ? "a symbolic link: refused" : strerror(errno));
		return SL_ERR_IO;
	}
	rc = SL_ERR_INVALID;
	if (fstat(fd, &sb) < 0) {
		sl_err_set(err, "%s: %s", path, strerror(errno));
		rc = SL_ERR_IO;
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		sl_err_set(err, "%s: not a regular file", path);
		goto out;
	}
	/* Tokens are secrets: like ssh with a private key, a file others may
	 * read (or one another user owns) is refused, not used. */
	if (sb.st_uid != geteuid()) {
		sl_err_set(err, "%s: owned by another user (uid %u): refused", path,
			   (unsigned)sb.st_uid);
		goto out;
	}
	if (sb.st_mode & 077) {
		sl_err_set(err, "%s: mode %04o lets other users at the tokens: refused (chmod 600 "
			   "it, and revoke the tokens if others could read them)", path,
			   (unsigned)(sb.st_mode & 07777));
		goto out;
	}
	if (sb.st_size > SL_OAUTH_RECORD_MAX) {
		sl_err_set(err, "%s: over %d bytes: not a token record", path, SL_OAUTH_RECORD_MAX);
		rc = SL_ERR_TOO_LARGE;
		goto out;
	}
	if ((rc = sl_read_fd(fd, path, SL_OAUTH_RECORD_MAX, "a token record", &buf, &n, err)) < 0)
		goto out;
	rc = sl_oauth_record_decode(path, buf, n, key_of(st), out, err);
out:
	if (buf) {
		explicit_bzero(buf, n);
		free(buf);
	}
	close(fd);
	return rc;
}

int sl_oauth_store_load(struct sl_oauth_store *st, const char *url, const char *user,
			struct sl_oauth_record *out, struct sl_err *err)
{
	char *path = sl_oauth_store_path(st, url, user);
	struct sl_oauth_record r = { 0 };
	int rc = load_path(st, path, &r, err);

	if (rc == 0 && (strcmp(r.url, url) != 0 || strcmp(r.user, user) != 0)) {
		/* Only a file copied or renamed by hand gets here. */
		sl_err_set(err, "%s: holds the record of another server or user (%s)", path, r.url);
		sl_oauth_record_dispose(&r);
		rc = SL_ERR_INVALID;
	}
	if (rc == 0)
		*out = r;
	free(path);
	return rc;
}

static int sync_dir(const char *dir, struct sl_err *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0 || fsync(fd) < 0) {
		sl_err_set(err, "%s: %s", dir, strerror(errno));
		rc = SL_ERR_IO;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

int sl_oauth_store_save(struct sl_oauth_store *st, const struct sl_oauth_record *r,
			struct sl_err *err)
{
	struct sl_oauth_record w;
	char *path, *text;
	size_t len;
	int rc = SL_ERR_IO;

	if (!r->url || !r->user) {
		sl_err_set(err, "a token record needs a url and a user");
		return SL_ERR_INVALID;
	}
	w = *r; /* shallow: only saved_at differs */
	w.saved_at = (int64_t)time(NULL);
	text = sl_oauth_record_encode(&w, key_of(st), &len);
	path = sl_oauth_store_path(st, r->url, r->user);
	if (!text) {
		sl_err_set(err, "%s: the record holds text that is not UTF-8: not saved", path);
		rc = SL_ERR_INVALID;
		goto out;
	}
	if (len > SL_OAUTH_RECORD_MAX) {
		sl_err_set(err, "%s: the record would be %zu bytes (at most %d)", path, len,
			   SL_OAUTH_RECORD_MAX);
		rc = SL_ERR_TOO_LARGE;
		goto out;
	}
	if (sl_make_dirs(st->dir) < 0) {
		sl_err_set(err, "%s: %s", st->dir, strerror(errno));
		goto out;
	}
	/* The temporary name starts with a dot and does not end in .json:
	 * sl_oauth_store_each never takes it for a record. */
	rc = sl_write_file_atomic(path, text, len, 0600, err);
out:
	if (text) {
		explicit_bzero(text, len);
		free(text);
	}
	free(path);
	return rc;
}

int sl_oauth_store_remove(struct sl_oauth_store *st, const char *url, const char *user,
			  struct sl_err *err)
{
	char *path = sl_oauth_store_path(st, url, user);
	int rc = 0;

	if (unlink(path) < 0) {
		rc = errno == ENOENT ? SL_ERR_NOT_FOUND : SL_ERR_IO;
		sl_err_set(err, "%s: %s", path, errno == ENOENT ? "no such record" : strerror(errno));
	} else {
		rc = sync_dir(st->dir, err);
	}
	free(path);
	return rc;
}

/* The record of url under old, if any, to user (unless one is there). */
static int move_record(struct sl_oauth_store *st, const char *url, const char *old,
		       const char *user, struct sl_err *err)
{
	struct sl_oauth_record r = { 0 };
	char *path;
	int rc;

	if (!strcmp(old, user))
		return 0;
	rc = sl_oauth_store_load(st, url, old, &r, err);
	if (rc < 0)
		return rc == SL_ERR_NOT_FOUND ? 0 : rc;
	path = sl_oauth_store_path(st, url, user);
	if (access(path, F_OK) != 0) {
		free(r.user);
		r.user = sl_strdup(user);
		if ((rc = sl_oauth_store_save(st, &r, err)) == 0)
			rc = sl_oauth_store_remove(st, url, old, err);
	}
	free(path);
	sl_oauth_record_dispose(&r);
	return rc;
}

int sl_oauth_store_migrate(struct sl_oauth_store *st, const char *url,
			   const struct sl_caller *who, const char *user, struct sl_err *err)
{
	char *id, old[SL_SHA256_HEX];

	if (!who || !who->subject)
		return 0;
	/* A token no issuer names: identity digest 1 keyed it by its subject
	 * alone (no method, no issuer), a key no other kind of caller had
	 * (a JWT always names its issuer, a static token is "token"); the
	 * format before that named it as a static token of the same name:
	 * such a record is nobody's to take. */
	if (!who->issuer && strcmp(who->method, "token")) {
		sl_caller_identity_digest(NULL, NULL, who->subject, NULL, old);
		return move_record(st, url, old, user, err);
	}
	id = sl_printf("%s\n%s", who->issuer ? who->issuer : "sluice:token", who->subject);
	sl_sha256_hex(id, strlen(id), old);
	free(id);
	return move_record(st, url, old, user, err);
}

/* A record's file name: 64 lowercase hex digits and ".json". */
static bool record_name(const char *s)
{
	if (strlen(s) != NAME_LEN || strcmp(s + NAME_LEN - 5, ".json") != 0)
		return false;
	for (size_t i = 0; i < NAME_LEN - 5; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* The first problem in full, then how many more. */
static void warn_add(struct sl_err *warn, unsigned *nwarn, const char *msg)
{
	if (warn && (*nwarn)++ == 0)
		sl_err_set(warn, "%s", msg);
}

int sl_oauth_store_each(struct sl_oauth_store *st, sl_oauth_store_each_fn *fn, void *arg,
			struct sl_err *warn)
{
	DIR *d = opendir(st->dir);
	struct dirent *e;
	unsigned nfiles = 0, nwarn = 0;
	struct sl_err e1;

	if (warn)
		warn->msg[0] = '\0';
	if (!d) {
		if (errno == ENOENT)
			return 0; /* nothing saved yet */
		sl_err_set(warn, "%s: %s", st->dir, strerror(errno));
		return SL_ERR_IO;
	}
	while ((e = readdir(d))) {
		struct sl_oauth_record r = { 0 };
		char *path, *want;

		if (!record_name(e->d_name))
			continue;
		if (++nfiles > EACH_MAX) {
			sl_err_set(&e1, "%s: more than %d records: the rest are not read", st->dir,
				   EACH_MAX);
			warn_add(warn, &nwarn, e1.msg);
			break;
		}
		path = sl_printf("%s/%s", st->dir, e->d_name);
		if (load_path(st, path, &r, &e1) < 0) {
			warn_add(warn, &nwarn, e1.msg);
		} else {
			want = sl_oauth_store_path(st, r.url, r.user);
			if (strcmp(want, path) == 0) {
				fn(arg, &r);
			} else {
				sl_err_set(&e1, "%s: holds the record of another server or user (%s)",
					   path, r.url);
				warn_add(warn, &nwarn, e1.msg);
			}
			free(want);
			sl_oauth_record_dispose(&r);
		}
		free(path);
	}
	closedir(d);
	if (warn && nwarn > 1) {
		size_t l = strlen(warn->msg);
		snprintf(warn->msg + l, sizeof(warn->msg) - l, " (and %u more)", nwarn - 1);
	}
	return 0;
}

/*
 * private_key_jwt (RFC 7523 2.2; MCP's client-credentials extension,
 * SEP-1046): sluice proves itself to the token endpoint with a JWT it signs
 * with a key the authorization server knows the public half of, instead of
 * a shared secret. The key is read once per config load (sl_oauth_keys_load,
 * by whoever loads the config for a start, a reload or a check) and kept in
 * the config; each token request signs a fresh assertion.
 *
 * All the cryptography is GnuTLS's: parsing the PEM, signing, and taking
 * an ECDSA signature's DER apart into the fixed-size r || s that JWS wants
 * (RFC 7518 3.4).
 */
#include "oauth/oauth.h"
#include "core/escape.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yyjson.h>

#define ES256_HALF 32 /* P-256: r and s are 32 bytes each in a JWS */

struct sl_oauth_key {
	gnutls_privkey_t priv;
	enum sl_oauth_sign_alg alg;   /* never AUTO */
};

static const char *alg_name(enum sl_oauth_sign_alg alg)
{
	return alg == SL_OAUTH_ALG_ES256 ? "ES256" : "RS256";
}

const char *sl_oauth_key_alg(const struct sl_oauth_key *k)
{
	return alg_name(k->alg);
}

void sl_oauth_key_free(struct sl_oauth_key *k)
{
	if (!k)
		return;
	gnutls_privkey_deinit(k->priv);
	free(k);
}

/* The algorithm the key is for: ES256 only on P-256 (its r and s are 32
 * bytes; another curve would need another alg), RS256 on RSA of at least
 * 2048 bits (RFC 7518 3.3). 0, or why not in err. */
static int fit_alg(gnutls_privkey_t priv, enum sl_oauth_sign_alg *alg, const char *where,
		   struct sl_err *err)
{
	unsigned bits = 0;
	int pk = gnutls_privkey_get_pk_algorithm(priv, &bits);
	gnutls_ecc_curve_t curve = GNUTLS_ECC_CURVE_INVALID;
	gnutls_pubkey_t pub;

	if (pk == GNUTLS_PK_ECDSA) {
		if (gnutls_pubkey_init(&pub) < 0)
			sl_oom();
		if (gnutls_pubkey_import_privkey(pub, priv, 0, 0) < 0 ||
		    gnutls_pubkey_export_ecc_raw2(pub, &curve, NULL, NULL, 0) < 0)
			curve = GNUTLS_ECC_CURVE_INVALID;
		gnutls_pubkey_deinit(pub);
	}
	if (*alg == SL_OAUTH_ALG_AUTO)
		*alg = pk == GNUTLS_PK_RSA ? SL_OAUTH_ALG_RS256 : SL_OAUTH_ALG_ES256;
	if (*alg == SL_OAUTH_ALG_ES256 && curve != GNUTLS_ECC_CURVE_SECP256R1) {
		sl_err_set(err, "%s: not an EC P-256 key, which ES256 needs (this one is %s%s%s)", where,
			   gnutls_pk_get_name((gnutls_pk_algorithm_t)pk) ?
				   gnutls_pk_get_name((gnutls_pk_algorithm_t)pk) : "of an unknown kind",
			   curve != GNUTLS_ECC_CURVE_INVALID ? " on " : "",
			   curve != GNUTLS_ECC_CURVE_INVALID ? gnutls_ecc_curve_get_name(curve) : "");
		return SL_ERR_INVALID;
	}
	if (*alg == SL_OAUTH_ALG_RS256 && (pk != GNUTLS_PK_RSA || bits < 2048)) {
		sl_err_set(err, "%s: not an RSA key of 2048 bits or more, which RS256 needs", where);
		return SL_ERR_INVALID;
	}
	return SL_OK;
}

int sl_oauth_key_parse(const char *pem, size_t len, enum sl_oauth_sign_alg alg,
		       const char *where, struct sl_oauth_key **out, struct sl_err *err)
{
	gnutls_datum_t d = { .data = (unsigned char *)pem, .size = (unsigned)len };
	gnutls_privkey_t priv;
	int rc, g;

	if (gnutls_privkey_init(&priv) < 0)
		sl_oom();
	g = gnutls_privkey_import_x509_raw(priv, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (g < 0) {
		sl_err_set(err, "%s: not an unencrypted PEM private key (%s)", where,
			   gnutls_strerror(g));
		gnutls_privkey_deinit(priv);
		return SL_ERR_INVALID;
	}
	if ((rc = fit_alg(priv, &alg, where, err)) < 0) {
		gnutls_privkey_deinit(priv);
		return rc;
	}
	*out = sl_alloc(sizeof(**out));
	(*out)->priv = priv;
	(*out)->alg = alg;
	return SL_OK;
}

int sl_oauth_key_load(const char *path, enum sl_oauth_sign_alg alg, struct sl_oauth_key **out,
		      struct sl_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	char *buf = NULL;
	size_t n = 0;
	struct stat st;
	int rc = SL_ERR_IO;

	if (fd < 0) {
		sl_err_set(err, "%s: cannot open: %s", path, strerror(errno));
		return SL_ERR_IO;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		sl_err_set(err, "%s: not a regular file", path);
		goto out;
	}
	/* A private key: like ssh, refused when every user may read it. Group
	 * access is allowed, for a secret shared through a group (a
	 * Kubernetes fsGroup mount is 0440). */
	if (st.st_mode & 007) {
		sl_err_set(err, "%s: mode %04o lets every user read the private key: refused "
			   "(chmod 600 it, and replace the key if others could read it)", path,
			   (unsigned)(st.st_mode & 07777));
		rc = SL_ERR_INVALID;
		goto out;
	}
	if ((rc = sl_read_fd(fd, path, SL_OAUTH_KEY_FILE_MAX, "a private key", &buf, &n, err)) < 0)
		goto out;
	rc = sl_oauth_key_parse(buf, n, alg, path, out, err);
out:
	if (buf) {
		explicit_bzero(buf, n);
		free(buf);
	}
	close(fd);
	return rc;
}

/* base64url of a JSON document, malloc'd. */
static char *b64_json(yyjson_mut_doc *d)
{
	size_t len;
	char *json = yyjson_mut_write(d, 0, &len), *out;

	if (!json)
		sl_oom();
	out = sl_alloc(SL_BASE64URL_SIZE(len));
	sl_base64url(json, len, out);
	free(json);
	return out;
}

/* One ECDSA integer as the JWS wants it: 32 bytes, big-endian. A DER
 * integer is minimal (shorter when it starts with zeros: left-padded here)
 * and carries a leading 0 when its top bit is set (dropped). */
static int put_half(unsigned char out[ES256_HALF], const gnutls_datum_t *v, struct sl_err *err)
{
	const unsigned char *p = v->data;
	unsigned n = v->size;

	while (n > ES256_HALF && *p == 0) {
		p++;
		n--;
	}
	if (n > ES256_HALF) {
		sl_err_set(err, "signing the client assertion failed: an ECDSA value of %u bytes", n);
		return SL_ERR_INVALID;
	}
	memset(out, 0, ES256_HALF - n);
	memcpy(out + ES256_HALF - n, p, n);
	return SL_OK;
}

/* The JWS signature over input: RSASSA-PKCS1-v1_5 as GnuTLS gives it, or
 * for ECDSA the DER SEQUENCE { r, s } GnuTLS gives, made r || s with each
 * left-padded to the curve's 32 bytes (RFC 7518 3.4). Base64url, malloc'd. */
static char *sign(const struct sl_oauth_key *k, const char *input, struct sl_err *err)
{
	gnutls_datum_t data = { .data = (unsigned char *)input, .size = (unsigned)strlen(input) };
	gnutls_datum_t sig = { 0 }, r = { 0 }, s = { 0 };
	unsigned char raw[2 * ES256_HALF];
	char *out = NULL;
	int g;

	g = gnutls_privkey_sign_data2(k->priv, k->alg == SL_OAUTH_ALG_ES256 ?
					      GNUTLS_SIGN_ECDSA_SHA256 : GNUTLS_SIGN_RSA_SHA256,
				      0, &data, &sig);
	if (g < 0) {
		sl_err_set(err, "signing the client assertion failed: %s", gnutls_strerror(g));
		return NULL;
	}
	if (k->alg == SL_OAUTH_ALG_RS256) {
		out = sl_alloc(SL_BASE64URL_SIZE(sig.size));
		sl_base64url(sig.data, sig.size, out);
		goto out;
	}
	if ((g = gnutls_decode_rs_value(&sig, &r, &s)) < 0) {
		sl_err_set(err, "signing the client assertion failed: %s", gnutls_strerror(g));
		goto out;
	}
	if (put_half(raw, &r, err) < 0 || put_half(raw + ES256_HALF, &s, err) < 0)
		goto out;
	out = sl_alloc(SL_BASE64URL_SIZE(sizeof(raw)));
	sl_base64url(raw, sizeof(raw), out);
out:
	gnutls_free(r.data);
	gnutls_free(s.data);
	gnutls_free(sig.data);
	return out;
}

char *sl_oauth_assertion(const struct sl_oauth_key *k, const char *client_id,
			 const char *audience, int64_t now, struct sl_err *err)
{
	yyjson_mut_doc *hd = yyjson_mut_doc_new(NULL), *cd = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *h = yyjson_mut_obj(hd), *c = yyjson_mut_obj(cd);
	unsigned char jti_raw[16];
	char jti[SL_BASE64URL_SIZE(sizeof(jti_raw))];
	char *head, *claims, *input, *sig, *out = NULL;

	if (!hd || !cd || !h || !c)
		sl_oom();
	yyjson_mut_doc_set_root(hd, h);
	yyjson_mut_obj_add_str(hd, h, "alg", alg_name(k->alg));
	yyjson_mut_obj_add_str(hd, h, "typ", "JWT");
	/* RFC 7523 3: iss and sub are the client; aud the authorization
	 * server; exp short (the assertion is used once, at once); jti makes
	 * each one unique, so an AS that remembers them can refuse a replay. */
	sl_random(jti_raw, sizeof(jti_raw));
	sl_base64url(jti_raw, sizeof(jti_raw), jti);
	yyjson_mut_doc_set_root(cd, c);
	yyjson_mut_obj_add_str(cd, c, "iss", client_id);
	yyjson_mut_obj_add_str(cd, c, "sub", client_id);
	yyjson_mut_obj_add_str(cd, c, "aud", audience);
	yyjson_mut_obj_add_int(cd, c, "iat", now);
	yyjson_mut_obj_add_int(cd, c, "exp", now + SL_OAUTH_ASSERTION_TTL_S);
	yyjson_mut_obj_add_str(cd, c, "jti", jti);
	head = b64_json(hd);
	claims = b64_json(cd);
	input = sl_printf("%s.%s", head, claims);
	if ((sig = sign(k, input, err)))
		out = sl_printf("%s.%s", input, sig);
	free(sig);
	free(input);
	free(claims);
	free(head);
	yyjson_mut_doc_free(hd);
	yyjson_mut_doc_free(cd);
	return out;
}

int sl_oauth_keys_load(struct sl_config *cfg, struct sl_err *err)
{
	for (size_t i = 0; i < cfg->nservers; i++) {
		struct sl_server_oauth *o = &cfg->servers[i].oauth;
		struct sl_err e;

		if (!o->private_key_file || o->key)
			continue;
		if (sl_oauth_key_load(o->private_key_file, o->signing_alg, &o->key, &e) < 0) {
			sl_err_set(err, "%s: %s.%s: \"oauth\": \"privateKeyFile\" %s", cfg->path,
				   cfg->servers_key, cfg->servers[i].name, e.msg);
			return SL_ERR_INVALID;
		}
		o->key_free = sl_oauth_key_free;
	}
	return SL_OK;
}

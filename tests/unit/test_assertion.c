/* private_key_jwt client assertions (src/oauth/assertion.c): keys made here
 * with GnuTLS, the assertion's header and claims read back, and its
 * signature checked with GnuTLS's public-key verify, as an authorization
 * server would; the key file's checks (permissions, size, kind); and the
 * config keys that load it (src/config/config.c). */
#include "config/config.h"
#include "oauth/oauth.h"
#include "unit.h"

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <nettle/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yyjson.h>

/* A fresh key of pk (bits: RSA size or GNUTLS_CURVE_TO_BITS), as PKCS#8
 * PEM (what `openssl genpkey` and jose's exportPKCS8 write). Malloc'd. */
static char *new_pem(gnutls_pk_algorithm_t pk, unsigned bits)
{
	gnutls_x509_privkey_t x;
	gnutls_datum_t out = { 0 };
	char *pem;

	CHECK_INT(gnutls_x509_privkey_init(&x), 0);
	CHECK_INT(gnutls_x509_privkey_generate2(x, pk, bits, 0, NULL, 0), 0);
	CHECK_INT(gnutls_x509_privkey_export2_pkcs8(x, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN,
						     &out), 0);
	pem = strndup((const char *)out.data, out.size);
	gnutls_free(out.data);
	gnutls_x509_privkey_deinit(x);
	return pem;
}

/* Unpadded base64url -> bytes (Nettle wants the padding back). */
static unsigned char *unb64(const char *s, size_t n, size_t *len)
{
	char *padded = malloc(n + 4);
	unsigned char *out = malloc(n + 4);
	struct base64_decode_ctx ctx;
	size_t pad = (4 - n % 4) % 4;

	memcpy(padded, s, n);
	memset(padded + n, '=', pad);
	*len = 0;
	base64url_decode_init(&ctx);
	CHECK(base64_decode_update(&ctx, len, out, n + pad, padded) && base64_decode_final(&ctx));
	free(padded);
	return out;
}

static yyjson_doc *part_json(const char *s, size_t n)
{
	size_t len;
	unsigned char *raw = unb64(s, n, &len);
	yyjson_doc *d = yyjson_read((const char *)raw, len, 0);

	free(raw);
	CHECK(d != NULL);
	return d;
}

/* Checks jwt as an authorization server would: header and claims, then
 * the signature with the public half of pem. tamper: flip a byte of the
 * claims first (then the signature must not verify). True when an ES256
 * signature's r or s starts with a zero byte (left-padded). */
static bool check_assertion(const char *jwt, const char *pem, const char *alg, bool tamper)
{
	const char *d1 = strchr(jwt, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	gnutls_datum_t data, sig, r, s, der = { 0 };
	gnutls_privkey_t priv;
	gnutls_pubkey_t pub;
	gnutls_datum_t pd = { .data = (unsigned char *)pem, .size = (unsigned)strlen(pem) };
	yyjson_doc *h, *c;
	yyjson_val *hr, *cr;
	unsigned char *raw;
	size_t rawlen;
	char *input;
	int64_t iat;
	int rc;
	bool padded = false;

	CHECK(d1 && d2 && !strchr(d2 + 1, '.'));
	if (!d1 || !d2)
		return false;
	h = part_json(jwt, (size_t)(d1 - jwt));
	c = part_json(d1 + 1, (size_t)(d2 - d1 - 1));
	hr = yyjson_doc_get_root(h);
	cr = yyjson_doc_get_root(c);
	CHECK_STR(yyjson_get_str(yyjson_obj_get(hr, "alg")), alg);
	CHECK_STR(yyjson_get_str(yyjson_obj_get(hr, "typ")), "JWT");
	CHECK_STR(yyjson_get_str(yyjson_obj_get(cr, "iss")), "client-1");
	CHECK_STR(yyjson_get_str(yyjson_obj_get(cr, "sub")), "client-1");
	CHECK_STR(yyjson_get_str(yyjson_obj_get(cr, "aud")), "https://as.example");
	iat = yyjson_get_sint(yyjson_obj_get(cr, "iat"));
	CHECK_INT(iat, 1700000000);
	CHECK_INT(yyjson_get_sint(yyjson_obj_get(cr, "exp")), iat + SL_OAUTH_ASSERTION_TTL_S);
	/* 128 bits of jti: 22 base64url characters. */
	CHECK(yyjson_get_len(yyjson_obj_get(cr, "jti")) == 22);
	yyjson_doc_free(h);
	yyjson_doc_free(c);

	input = strndup(jwt, (size_t)(d2 - jwt));
	if (tamper)
		input[d1 - jwt + 3] ^= 1;
	data.data = (unsigned char *)input;
	data.size = (unsigned)strlen(input);
	raw = unb64(d2 + 1, strlen(d2 + 1), &rawlen);
	CHECK_INT(gnutls_privkey_init(&priv), 0);
	CHECK_INT(gnutls_privkey_import_x509_raw(priv, &pd, GNUTLS_X509_FMT_PEM, NULL, 0), 0);
	CHECK_INT(gnutls_pubkey_init(&pub), 0);
	CHECK_INT(gnutls_pubkey_import_privkey(pub, priv, 0, 0), 0);
	if (!strcmp(alg, "ES256")) {
		/* JWS's r || s, 32 bytes each, back into the DER GnuTLS checks. */
		CHECK_INT(rawlen, 64);
		padded = raw[0] == 0 || raw[32] == 0;
		r.data = raw;
		r.size = 32;
		s.data = raw + 32;
		s.size = 32;
		CHECK_INT(gnutls_encode_rs_value(&der, &r, &s), 0);
		rc = gnutls_pubkey_verify_data2(pub, GNUTLS_SIGN_ECDSA_SHA256, 0, &data, &der);
	} else {
		CHECK_INT(rawlen, 256);
		sig.data = raw;
		sig.size = (unsigned)rawlen;
		rc = gnutls_pubkey_verify_data2(pub, GNUTLS_SIGN_RSA_SHA256, 0, &data, &sig);
	}
	if (tamper)
		CHECK(rc < 0);
	else
		CHECK(rc >= 0);
	gnutls_free(der.data);
	gnutls_pubkey_deinit(pub);
	gnutls_privkey_deinit(priv);
	free(raw);
	free(input);
	return padded;
}

/* Signs two assertions with pem and checks one. True as check_assertion. */
static bool sign_and_check(const char *pem, enum sl_oauth_sign_alg alg, const char *name)
{
	struct sl_oauth_key *k = NULL;
	struct sl_err err;
	char *a, *b;
	bool padded = false;

	CHECK_INT(sl_oauth_key_parse(pem, strlen(pem), alg, "test.pem", &k, &err), SL_OK);
	if (!k)
		return false;
	CHECK_STR(sl_oauth_key_alg(k), name);
	a = sl_oauth_assertion(k, "client-1", "https://as.example", 1700000000, &err);
	b = sl_oauth_assertion(k, "client-1", "https://as.example", 1700000000, &err);
	CHECK(a && b && strcmp(a, b)); /* a new jti (and for ECDSA a new signature) each time */
	if (a) {
		padded = check_assertion(a, pem, name, false);
		check_assertion(a, pem, name, true);
	}
	free(a);
	free(b);
	sl_oauth_key_free(k);
	return padded;
}

TEST(oauth_assertion_es256_verifies)
{
	char *pem = new_pem(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1));

	int i, padded = 0;

	/* Until a signature whose r or s has a leading zero byte (1 in 128)
	 * has verified: the DER integer is shorter then, and the JWS form
	 * keeps it left-padded to 32 bytes. */
	for (i = 0; i < 5000 && (i < 16 || !padded); i++)
		padded += sign_and_check(pem, i % 2 ? SL_OAUTH_ALG_AUTO : SL_OAUTH_ALG_ES256, "ES256");
	CHECK(padded > 0);
	free(pem);
}

TEST(oauth_assertion_rs256_verifies)
{
	char *pem = new_pem(GNUTLS_PK_RSA, 2048);

	sign_and_check(pem, SL_OAUTH_ALG_AUTO, "RS256");
	sign_and_check(pem, SL_OAUTH_ALG_RS256, "RS256");
	free(pem);
}

TEST(oauth_assertion_key_must_fit_the_alg)
{
	char *ec = new_pem(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1));
	char *p384 = new_pem(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP384R1));
	char *ed = new_pem(GNUTLS_PK_EDDSA_ED25519, 0);
	struct sl_oauth_key *k = NULL;
	struct sl_err err;

	CHECK_INT(sl_oauth_key_parse(ec, strlen(ec), SL_OAUTH_ALG_RS256, "k.pem", &k, &err),
		  SL_ERR_INVALID);
	CHECK(strstr(err.msg, "k.pem: not an RSA key") != NULL);
	CHECK_INT(sl_oauth_key_parse(p384, strlen(p384), SL_OAUTH_ALG_AUTO, "k.pem", &k, &err),
		  SL_ERR_INVALID);
	CHECK(strstr(err.msg, "not an EC P-256 key") && strstr(err.msg, "SECP384R1"));
	CHECK_INT(sl_oauth_key_parse(ed, strlen(ed), SL_OAUTH_ALG_AUTO, "k.pem", &k, &err),
		  SL_ERR_INVALID);
	CHECK(strstr(err.msg, "not an EC P-256 key") != NULL);
	CHECK_INT(sl_oauth_key_parse("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
				     60, SL_OAUTH_ALG_AUTO, "k.pem", &k, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, "k.pem: not an unencrypted PEM private key") != NULL);
	CHECK(k == NULL);
	free(ec);
	free(p384);
	free(ed);
}

static char *write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	char *path = malloc(strlen(dir) + strlen(name) + 2);
	FILE *f;

	sprintf(path, "%s/%s", dir, name);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	CHECK_INT(chmod(path, mode), 0);
	return path;
}

TEST(oauth_assertion_key_file_checks)
{
	char dir[] = "/tmp/sluice-unit-key-XXXXXX";
	char *pem = new_pem(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1));
	char *big = malloc(SL_OAUTH_KEY_FILE_MAX + 2);
	char *path, *large;
	struct sl_oauth_key *k = NULL;
	struct sl_err err;

	CHECK(mkdtemp(dir) != NULL);
	path = write_file(dir, "k.pem", pem, 0600);
	CHECK_INT(sl_oauth_key_load(path, SL_OAUTH_ALG_AUTO, &k, &err), SL_OK);
	sl_oauth_key_free(k);
	k = NULL;
	/* Group-readable: allowed (a secret shared through a group). */
	CHECK_INT(chmod(path, 0640), 0);
	CHECK_INT(sl_oauth_key_load(path, SL_OAUTH_ALG_AUTO, &k, &err), SL_OK);
	sl_oauth_key_free(k);
	k = NULL;
	/* Every user may read it: refused, naming the file and the fix. */
	CHECK_INT(chmod(path, 0644), 0);
	CHECK_INT(sl_oauth_key_load(path, SL_OAUTH_ALG_AUTO, &k, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, path) && strstr(err.msg, "0644") && strstr(err.msg, "chmod 600"));
	CHECK(k == NULL);
	unlink(path);
	CHECK_INT(sl_oauth_key_load(path, SL_OAUTH_ALG_AUTO, &k, &err), SL_ERR_IO);
	CHECK(strstr(err.msg, path) && strstr(err.msg, "cannot open"));
	CHECK_INT(sl_oauth_key_load(dir, SL_OAUTH_ALG_AUTO, &k, &err), SL_ERR_IO);
	CHECK(strstr(err.msg, "not a regular file") != NULL);
	memset(big, 'A', SL_OAUTH_KEY_FILE_MAX + 1);
	big[SL_OAUTH_KEY_FILE_MAX + 1] = '\0';
	large = write_file(dir, "big.pem", big, 0600);
	CHECK_INT(sl_oauth_key_load(large, SL_OAUTH_ALG_AUTO, &k, &err), SL_ERR_TOO_LARGE);
	unlink(large);
	rmdir(dir);
	free(large);
	free(path);
	free(big);
	free(pem);
}

/* ---- the config keys ------------------------------------------------------------- */

/* The config as a command loads it: parsed, then its keys read by the OAuth
 * module (src/cli/load.c). */
static struct sl_config *parse_in(const char *dir, const char *oauth, struct sl_err *err)
{
	char *cfgpath = malloc(strlen(dir) + 16), *text;
	struct sl_config *c = NULL;

	sprintf(cfgpath, "%s/sluice.json", dir);
	text = malloc(strlen(oauth) + 100);
	sprintf(text, "{\"mcpServers\":{\"r\":{\"url\":\"https://x/mcp\",\"oauth\":%s}}}", oauth);
	if (sl_config_parse(cfgpath, text, strlen(text), &c, err) < 0)
		c = NULL;
	else if (sl_oauth_keys_load(c, err) < 0) {
		sl_config_unref(c);
		c = NULL;
	}
	free(text);
	free(cfgpath);
	return c;
}

TEST(config_oauth_private_key_file)
{
	char dir[] = "/tmp/sluice-unit-keycfg-XXXXXX";
	char *pem = new_pem(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1));
	char *path;
	struct sl_config *c;
	struct sl_err err;

	CHECK(mkdtemp(dir) != NULL);
	path = write_file(dir, "client.pem", pem, 0600);
	/* Relative to the config file; client credentials without a secret. */
	c = parse_in(dir, "{\"grant\":\"client_credentials\",\"clientId\":\"c\","
			  "\"privateKeyFile\":\"client.pem\"}", &err);
	CHECK(c != NULL);
	if (c) {
		CHECK_STR(c->servers[0].oauth.private_key_file, path);
		CHECK(c->servers[0].oauth.key != NULL);
		CHECK_STR(sl_oauth_key_alg(c->servers[0].oauth.key), "ES256");
		sl_config_unref(c);
	}
	c = parse_in(dir, "{\"clientId\":\"c\",\"privateKeyFile\":\"client.pem\",\"signingAlg\":\"RS256\"}",
		     &err);
	CHECK(c == NULL && strstr(err.msg, "not an RSA key") && strstr(err.msg, path));
	c = parse_in(dir, "{\"privateKeyFile\":\"client.pem\"}", &err);
	CHECK(c == NULL && strstr(err.msg, "needs \"clientId\""));
	c = parse_in(dir, "{\"clientId\":\"c\",\"clientSecret\":\"s\",\"privateKeyFile\":\"client.pem\"}",
		     &err);
	CHECK(c == NULL && strstr(err.msg, "set one"));
	c = parse_in(dir, "{\"clientId\":\"c\",\"signingAlg\":\"ES256\"}", &err);
	CHECK(c == NULL && strstr(err.msg, "needs \"privateKeyFile\""));
	c = parse_in(dir, "{\"clientId\":\"c\",\"privateKeyFile\":\"missing.pem\"}", &err);
	CHECK(c == NULL && strstr(err.msg, "missing.pem: cannot open") &&
	      strstr(err.msg, "mcpServers.r"));
	c = parse_in(dir, "{\"clientId\":\"c\",\"privateKeyFile\":\"client.pem\",\"signingAlg\":\"HS256\"}",
		     &err);
	CHECK(c == NULL && strstr(err.msg, "signingAlg"));
	unlink(path);
	rmdir(dir);
	free(path);
	free(pem);
}

/* The parser keeps the path and reads nothing; the OAuth module reads the
 * key, and its message names the file, the server and the key as the
 * config's own do. */
TEST(config_oauth_key_read_by_the_module)
{
	static const char *const texts[] = {
		"{\"mcpServers\":{\"r\":{\"url\":\"https://x/mcp\",\"oauth\":"
		"{\"clientId\":\"c\",\"privateKeyFile\":\"/nonexistent/k.pem\"}}}}",
		"{\"servers\":{\"r\":{\"url\":\"https://x/mcp\",\"oauth\":"
		"{\"clientId\":\"c\",\"privateKeyFile\":\"/nonexistent/k.pem\"}}}}",
	};
	static const char *const want[] = {
		"/t/sluice.json: mcpServers.r: \"oauth\": \"privateKeyFile\" /nonexistent/k.pem: "
		"cannot open",
		"/t/sluice.json: servers.r: \"oauth\": \"privateKeyFile\" /nonexistent/k.pem: "
		"cannot open",
	};

	for (size_t i = 0; i < SL_COUNT(texts); i++) {
		struct sl_config *c = NULL;
		struct sl_err err;

		CHECK_INT(sl_config_parse("/t/sluice.json", texts[i], strlen(texts[i]), &c, &err),
			  SL_OK);
		if (!c)
			continue;
		CHECK(c->servers[0].oauth.key == NULL);
		CHECK_INT(sl_oauth_keys_load(c, &err), SL_ERR_INVALID);
		CHECK(strncmp(err.msg, want[i], strlen(want[i])) == 0);
		sl_config_unref(c);
	}
}

/* ---- a configured client with a key ------------------------------------------------ */

static void on_reg(void *arg, const struct sl_oauth_registration *r, const char *why)
{
	struct sl_oauth_registration *out = arg;

	CHECK(r != NULL);
	if (r)
		sl_oauth_registration_copy(out, r);
}

TEST(oauth_register_configured_client_with_key)
{
	char *pem = new_pem(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1));
	struct sl_oauth_server s = { .issuer = "https://as.example", .auth_methods = SL_OAUTH_AUTH_BASIC };
	struct sl_oauth_registration got = { 0 }, again = { 0 };
	struct sl_oauth_key *k = NULL;
	struct sl_err err;

	CHECK_INT(sl_oauth_key_parse(pem, strlen(pem), SL_OAUTH_ALG_AUTO, "k.pem", &k, &err), SL_OK);
	/* No request: the callback runs before the call returns. Whatever
	 * the AS lists, a client with a key authenticates with it. */
	sl_oauth_register(NULL, &s, &(struct sl_oauth_client_want){ .client_id = "c", .key = k }, NULL,
			  NULL, on_reg, &got);
	CHECK_STR(got.auth_method, "private_key_jwt");
	CHECK(got.key == k && got.client_secret == NULL);
	/* A copy borrows the same key (the config's), it does not own it. */
	sl_oauth_registration_copy(&again, &got);
	CHECK(again.key == k);
	sl_oauth_registration_dispose(&again);
	sl_oauth_registration_dispose(&got);
	sl_oauth_key_free(k);
	free(pem);
}

/*
 * Unit tests of src/stages/redaction.c: a positive sample for every
 * built-in pattern, negatives that must never be touched (UUIDs, SHAs, a
 * base64 PNG, prose, code), custom patterns, config errors and the JSON walk.
 *
 * No real-looking secret is written in this file: each sample is built at
 * run time from a prefix and pseudo-random characters, so that secret
 * scanners do not flag the repository.
 */
#include "unit.h"

#include "core/json.h"
#include "pipeline/call.h"
#include "stages/redaction.h"

#include <stdio.h>
#include <stdlib.h>

#define UPPER "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define LOWER "abcdefghijklmnopqrstuvwxyz"
#define DIGIT "0123456789"
#define ALNUM UPPER LOWER DIGIT
#define HEX   DIGIT "abcdef"
#define B64   ALNUM "+/"
#define URL64 ALNUM "_-"

static uint64_t rng = 88172645463325252ull;

/* n pseudo-random characters of set, appended to b (deterministic). */
static void rnd(char *b, const char *set, size_t n)
{
	size_t len = strlen(b), m = strlen(set);
	for (size_t i = 0; i < n; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		b[len + i] = set[rng % m];
	}
	b[len + n] = '\0';
}

static void cat(char *b, const char *s)
{
	strcat(b, s);
}

/* The stage's state under test (NULL before init_with, or after a failed
 * one) and the section it was made from (a state may borrow from it). */
static struct sl_redaction *red;
static yyjson_doc *red_section;

/* Frees the state and its section. */
static void done(void)
{
	sl_stage_redaction.fini(red);
	yyjson_doc_free(red_section);
	red = NULL;
	red_section = NULL;
}

/* Replaces the state by one the stage's init makes from a config section
 * written as JSON (NULL: no section). Returns the init's result; err holds
 * its message. */
static int init_with(const char *json, struct sl_err *err)
{
	void *st = NULL;
	int rc;

	done();
	red_section = json ? yyjson_read(json, strlen(json), 0) : NULL;
	rc = sl_stage_redaction.init(NULL, NULL, red_section ? yyjson_doc_get_root(red_section) : NULL,
				     &st, err);
	red = st;
	return rc;
}

static void init_default(void)
{
	struct sl_err err;
	CHECK_INT(init_with(NULL, &err), 0);
}

/* Builds the sample for kind into b: text with one secret of that kind;
 * secret receives the part that must disappear. */
static bool sample(const char *kind, char *b, char *secret)
{
	b[0] = secret[0] = '\0';
#define S(s) cat(secret, s)
#define R(set, n) rnd(secret, set, n)
	if (!strcmp(kind, "ssh_private_key")) {
		S("-----BEGIN OPENSSH" " PRIVATE KEY-----\n"); R(B64, 70); S("\n"); R(B64, 70);
		S("\n-----END OPENSSH" " PRIVATE KEY-----");
	} else if (!strcmp(kind, "pgp_private_key")) {
		S("-----BEGIN PGP" " PRIVATE KEY BLOCK-----\n\n"); R(B64, 64); S("\n=");
		R(B64, 4); S("\n-----END PGP" " PRIVATE KEY BLOCK-----");
	} else if (!strcmp(kind, "private_key")) {
		/* As in a GCP service-account file shown as JSON text. */
		S("-----BEGIN" " PRIVATE KEY-----\\n"); R(B64, 64); S("\\n"); R(B64, 64);
		S("\\n-----END" " PRIVATE KEY-----\\n");
	} else if (!strcmp(kind, "age_secret_key")) {
		S("AGE-SECRET" "-KEY-1"); R("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58);
	} else if (!strcmp(kind, "aws_access_key_id")) {
		S("AK" "IA"); R(UPPER DIGIT, 16);
	} else if (!strcmp(kind, "aws_secret_access_key")) {
		cat(b, "aws_secret" "_access_key = ");
		R(B64, 40);
	} else if (!strcmp(kind, "aws_session_token")) {
		cat(b, "AWS_SESSION" "_TOKEN=");
		R(B64, 300);
	} else if (!strcmp(kind, "gcp_api_key")) {
		S("AI" "za"); R(URL64, 35);
	} else if (!strcmp(kind, "gcp_oauth_token")) {
		S("ya" "29."); R(URL64, 120);
	} else if (!strcmp(kind, "gcp_refresh_token")) {
		S("1/" "/0"); R(URL64, 90);
	} else if (!strcmp(kind, "gcp_oauth_client_secret")) {
		S("GOC" "SPX-"); R(URL64, 28);
	} else if (!strcmp(kind, "azure_storage_key")) {
		cat(b, "DefaultEndpointsProtocol=https;AccountName=acme;Account" "Key=");
		R(B64, 86); S("==");
	} else if (!strcmp(kind, "azure_shared_access_key")) {
		cat(b, "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=root;"
		       "SharedAccess" "Key=");
		R(B64, 43); S("=");
	} else if (!strcmp(kind, "azure_sas_signature")) {
		cat(b, "https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&sr=b&si" "g=");
		R(B64, 43); S("%3D");
	} else if (!strcmp(kind, "azure_client_secret")) {
		cat(b, "abc8");
		S("Q" "~"); R(ALNUM "_~.-", 34);
	} else if (!strcmp(kind, "digitalocean_token")) {
		S("dop" "_v1_"); R(HEX, 64);
	} else if (!strcmp(kind, "heroku_api_key")) {
		S("HR" "KU-"); R(URL64, 60);
	} else if (!strcmp(kind, "github_fine_grained_token")) {
		S("github" "_pat_"); R(ALNUM, 22); S("_"); R(ALNUM, 59);
	} else if (!strcmp(kind, "github_token")) {
		S("gh" "p_"); R(ALNUM, 36);
	} else if (!strcmp(kind, "gitlab_token")) {
		S("gl" "pat-"); R(URL64, 20);
	} else if (!strcmp(kind, "atlassian_api_token")) {
		S("ATA" "TT3"); R(URL64 "=", 180);
	} else if (!strcmp(kind, "npm_token")) {
		S("np" "m_"); R(ALNUM, 36);
	} else if (!strcmp(kind, "pypi_token")) {
		S("py" "pi-AgEIcHlwaS5vcmc"); R(URL64, 70);
	} else if (!strcmp(kind, "vault_token")) {
		S("hv" "s."); R(URL64, 90);
	} else if (!strcmp(kind, "postman_api_key")) {
		S("PM" "AK-"); R(HEX, 24); S("-"); R(HEX, 34);
	} else if (!strcmp(kind, "slack_token")) {
		S("xo" "xb-"); R(DIGIT, 12); S("-"); R(DIGIT, 13); S("-"); R(ALNUM, 24);
	} else if (!strcmp(kind, "slack_webhook")) {
		S("https://hooks.slack.com/services/T"); R(UPPER DIGIT, 8); S("/B");
		R(UPPER DIGIT, 8); S("/"); R(ALNUM, 24);
	} else if (!strcmp(kind, "stripe_secret_key")) {
		S("sk" "_live_"); R(ALNUM, 24);
	} else if (!strcmp(kind, "stripe_webhook_secret")) {
		S("wh" "sec_"); R(ALNUM, 32);
	} else if (!strcmp(kind, "square_token")) {
		S("sq0" "atp-"); R(URL64, 22);
	} else if (!strcmp(kind, "twilio_api_key")) {
		S("S" "K"); R(HEX, 32);
	} else if (!strcmp(kind, "sendgrid_api_key")) {
		S("S" "G."); R(URL64, 22); S("."); R(URL64, 43);
	} else if (!strcmp(kind, "mailgun_api_key")) {
		S("ke" "y-"); R(HEX, 32);
	} else if (!strcmp(kind, "shopify_token")) {
		S("shp" "at_"); R(HEX, 32);
	} else if (!strcmp(kind, "datadog_api_key")) {
		cat(b, "DD_API" "_KEY=");
		R(HEX, 32);
	} else if (!strcmp(kind, "telegram_bot_token")) {
		cat(b, "123456789:");
		S("A" "A"); R(URL64, 33);
	} else if (!strcmp(kind, "linear_api_key")) {
		S("lin" "_api_"); R(ALNUM, 40);
	} else if (!strcmp(kind, "notion_token")) {
		S("nt" "n_"); R(DIGIT, 11); R(ALNUM, 35);
	} else if (!strcmp(kind, "anthropic_api_key")) {
		S("sk-" "ant-api03-"); R(URL64, 93);
	} else if (!strcmp(kind, "openai_api_key")) {
		S("sk-" "proj-"); R(URL64, 120);
	} else if (!strcmp(kind, "huggingface_token")) {
		S("h" "f_"); R("Ab", 2); R(UPPER LOWER, 32);
	} else if (!strcmp(kind, "jwt")) {
		S("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" ".eyJ"); R(URL64, 40); S(".");
		R(URL64, 43);
	} else if (!strcmp(kind, "basic_auth")) {
		cat(b, "Authorization: Basic ");
		R(ALNUM, 24); S("==");
	} else if (!strcmp(kind, "bearer_token")) {
		cat(b, "Authorization: Bearer ");
		R(DIGIT, 2); R(ALNUM "._-", 40);
	} else if (!strcmp(kind, "url_password")) {
		cat(b, "postgres://admin:");
		R(ALNUM, 12);
		strcat(secret, "!x");
	} else if (!strcmp(kind, "secret_assignment")) {
		cat(b, "DB_PASS" "WORD=");
		R(ALNUM, 14);
	} else {
		return false;
	}
#undef S
#undef R
	cat(b, secret);
	if (!strcmp(kind, "url_password"))
		cat(b, "@db.internal:5432/app");
	cat(b, " (end)");
	return true;
}

TEST(redaction_every_builtin_has_a_positive_sample)
{
	static char b[4096], secret[4096], want[256];
	size_t i;
	const char *kind;

	init_default();
	for (i = 0; (kind = sl_redact_builtin_kind(i)); i++) {
		char *out = NULL;
		size_t n;
		if (!sample(kind, b, secret)) {
			fprintf(stderr, "  no sample for built-in kind %s\n", kind);
			CHECK(!"every built-in kind has a sample");
			continue;
		}
		n = sl_redact_text(red, b, strlen(b), &out);
		snprintf(want, sizeof(want), "[REDACTED:%s]", kind);
		if (n != 1 || !out || !strstr(out, want) || strstr(out, secret) ||
		    !strstr(out, " (end)")) {
			fprintf(stderr, "  kind %s: %zu replacement(s): %s\n", kind, n, out ? out : "(none)");
			CHECK(!"the sample is redacted once, with its kind");
		}
		free(out);
	}
	CHECK(i >= 30);
	done();
}

/* A pattern is not tried on a rest of the text shorter than its shortest
 * match (PCRE2's minimum length): a secret that ends the text exactly, the
 * tightest case, is still found (a URL's password needs its host after it). */
TEST(redaction_secret_that_ends_the_text)
{
	static char b[4096], secret[4096];
	const char *kind;

	init_default();
	for (size_t i = 0; (kind = sl_redact_builtin_kind(i)); i++) {
		char *out = NULL;
		size_t n, len;
		if (!strcmp(kind, "url_password") || !sample(kind, b, secret))
			continue;
		len = strlen(b) - strlen(" (end)");
		b[len] = '\0';
		n = sl_redact_text(red, b, len, &out);
		if (n != 1 || !out || strstr(out, secret)) {
			fprintf(stderr, "  kind %s at the end: %zu replacement(s): %s\n", kind, n,
				out ? out : "(none)");
			CHECK(!"a secret ending the text is redacted");
		}
		free(out);
	}
	done();
}

TEST(redaction_keeps_context_around_secret)
{
	char *out = NULL;
	char in[256] = "postgres://admin:";
	init_default();
	rnd(in, ALNUM, 10);
	cat(in, "@db:5432/x and DB_PASS" "WORD=");
	rnd(in, ALNUM, 10);
	cat(in, " done");
	CHECK_INT(sl_redact_text(red, in, strlen(in), &out), 2);
	CHECK_STR(out, "postgres://admin:[REDACTED:url_password]@db:5432/x and "
		       "DB_PASSWORD=[REDACTED:secret_assignment] done");
	free(out);
	done();
}

/* Found by tests/fuzz/fuzz_redaction.c: a PEM block cut before its END
 * line runs (by design) to the end of its body, which stopped in the middle
 * of a token ("... lin" then "_api_..."); the token's own match began inside
 * the PEM one and was dropped as an overlap, so its last 40 characters were
 * passed on in clear. Overlapping matches now merge. */
TEST(redaction_overlapping_matches_leak_nothing)
{
	char *out = NULL;
	char in[256] = "-----BEGIN" " PRIVATE KEY-----\\nFA ", token[64] = "lin_" "api_";
	init_default();
	rnd(token, ALNUM, 40);
	cat(in, token);
	cat(in, " tail");
	CHECK_INT(sl_redact_text(red, in, strlen(in), &out), 1);
	CHECK_STR(out, "[REDACTED:private_key] tail");
	CHECK(out && !strstr(out, token + 8));
	free(out);
	done();
}

TEST(redaction_more_token_shapes)
{
	/* The other GitHub prefixes, Slack app tokens, Stripe restricted keys,
	 * OpenAI legacy keys, Heroku keys by context, quoted assignments. */
	static const char *const prefixes[] = { "gh" "o_", "gh" "u_", "gh" "s_", "gh" "r_" };
	char in[512], *out;
	init_default();
	for (size_t i = 0; i < SL_COUNT(prefixes); i++) {
		snprintf(in, sizeof(in), "token %s", prefixes[i]);
		rnd(in, ALNUM, 36);
		out = NULL;
		CHECK_INT(sl_redact_text(red, in, strlen(in), &out), 1);
		CHECK_STR(out, "token [REDACTED:github_token]");
		free(out);
	}
	strcpy(in, "xa" "pp-1-A");
	rnd(in, UPPER DIGIT, 10);
	cat(in, "-1234567890-");
	rnd(in, HEX, 64);
	out = NULL;
	CHECK_INT(sl_redact_text(red, in, strlen(in), &out), 1);
	CHECK_STR(out, "[REDACTED:slack_token]");
	free(out);
	strcpy(in, "rk" "_live_");
	rnd(in, ALNUM, 30);
	out = NULL;
	CHECK_INT(sl_redact_text(red, in, strlen(in), &out), 1);
	CHECK_STR(out, "[REDACTED:stripe_secret_key]");
	free(out);
	strcpy(in, "sk" "-");
	rnd(in, ALNUM, 20);
	cat(in, "T3Blbk" "FJ");
	rnd(in, ALNUM, 20);
	out = NULL;
	CHECK_INT(sl_redact_text(red, in, strlen(in), &out), 1);
	CHECK_STR(out, "[REDACTED:openai_api_key]");
	free(out);
	strcpy(in, "HEROKU_API" "_KEY: 4f1c2a3b-1d2e-4f5a-8b9c-0d1e2f3a4b5c");
	out = NULL;
	CHECK_INT(sl_redact_text(red, in, strlen(in), &out), 1);
	CHECK_STR(out, "HEROKU_API_KEY: [REDACTED:heroku_api_key]");
	free(out);
	strcpy(in, "{\"password\": \"correct horse battery\", \"user\": \"bob\"}");
	out = NULL;
	CHECK_INT(sl_redact_text(red, in, strlen(in), &out), 1);
	CHECK_STR(out, "{\"password\": \"[REDACTED:secret_assignment]\", \"user\": \"bob\"}");
	free(out);
	/* The key "api_key" and an AWS id as its value: the specific kind wins. */
	strcpy(in, "api" "_key=AK" "IA");
	rnd(in, UPPER DIGIT, 16);
	out = NULL;
	CHECK_INT(sl_redact_text(red, in, strlen(in), &out), 1);
	CHECK_STR(out, "api_key=[REDACTED:aws_access_key_id]");
	free(out);
	done();
}

TEST(redaction_is_idempotent)
{
	char in[256] = "url https://u:";
	char *once = NULL, *twice = NULL;
	init_default();
	rnd(in, ALNUM, 12);
	cat(in, "@h/ and passw" "ord: \"");
	rnd(in, ALNUM, 12);
	cat(in, "\" and bearer ");
	rnd(in, DIGIT, 30);
	CHECK_INT(sl_redact_text(red, in, strlen(in), &once), 3);
	CHECK(once != NULL);
	CHECK_INT(sl_redact_text(red, once, strlen(once), &twice), 0);
	CHECK(twice == NULL);
	free(once);
	done();
}

static void check_clean(const char *what, const char *s, size_t len)
{
	char *out = NULL;
	size_t n = sl_redact_text(red, s, len, &out);
	if (n != 0) {
		fprintf(stderr, "  %s: %zu false positive(s): %.300s\n", what, n, out ? out : "");
		CHECK(!"no false positive");
	}
	free(out);
}

TEST(redaction_negatives_uuid_sha_base64_prose_code)
{
	static char b[1 << 17];
	init_default();
	for (int i = 0; i < 200; i++) {
		b[0] = '\0';
		cat(b, "id ");
		rnd(b, HEX, 8); cat(b, "-"); rnd(b, HEX, 4); cat(b, "-4"); rnd(b, HEX, 3);
		cat(b, "-a"); rnd(b, HEX, 3); cat(b, "-"); rnd(b, HEX, 12);
		cat(b, " commit ");
		rnd(b, HEX, 40);
		cat(b, " sha256:");
		rnd(b, HEX, 64);
		cat(b, " {\"uuid\":\"");
		rnd(b, HEX "ABCDEF", 8); cat(b, "-"); rnd(b, HEX, 4); cat(b, "-"); rnd(b, HEX, 4);
		cat(b, "-"); rnd(b, HEX, 4); cat(b, "-"); rnd(b, HEX, 12); cat(b, "\"}");
		check_clean("uuid/sha", b, strlen(b));
	}
	/* A PNG as a data URL: 96 KiB of base64. */
	strcpy(b, "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA");
	rnd(b, B64, 96 << 10);
	cat(b, "==");
	check_clean("base64 png", b, strlen(b));
	/* base64url (JWS payloads, QR codes). */
	b[0] = '\0';
	rnd(b, URL64, 64 << 10);
	check_clean("base64url", b, strlen(b));
	static const char *const prose[] = {
		"Reset your password: go to Settings, choose Security, then enter the secret "
		"question. A bearer token is sent in the Authorization header; basic understanding "
		"of OAuth helps. The api key is shown once.",
		"password: required\nsecret: true\napi_key: see the docs\ntoken: null",
		"const apiKey = process.env.API_KEY;\nconst password = getPassword();\n"
		"db.connect({ password: password });\nf(password=password)",
		"Use https://example.com/path?q=1 or mailto:bob@example.com; ssh git@github.com:acme/api.git",
		"Authorization: Bearer <token>\nAuthorization: Bearer ${TOKEN}\nsk-learn and "
		"scikit-learn are the same; key-value stores; the SKU list; AKIA is a prefix.",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
		"-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----",
		"time 12:34:56, ratio 3:2, https://host:8443/x, http://[::1]:8080/, user@host:22",
		"{\"id\":5000,\"name\":\"api\",\"full_name\":\"acme/api\",\"private\":false,"
		"\"html_url\":\"https://github.com/acme/api\",\"secret_scanning\":\"enabled\"}",
		"hf_hub_download, github_pat is a prefix, xoxb- alone, sk_live_ alone, glpat-short",
	};
	for (size_t i = 0; i < SL_COUNT(prose); i++)
		check_clean(prose[i], prose[i], strlen(prose[i]));
	done();
}

TEST(redaction_custom_patterns_and_disable)
{
	struct sl_err err;
	char in[128] = "AK" "IA", *out = NULL;
	rnd(in, UPPER DIGIT, 16);
	cat(in, " EMP-123456 and EMP-12345 for José");
	CHECK_INT(init_with("{\"patterns\":[{\"name\":\"employee_id\",\"regex\":\"EMP-[0-9]{6}\"},"
			    "{\"name\":\"custom name\",\"regex\":\"Jos.\"}],"
			    "\"disable\":[\"aws_access_key_id\"]}", &err), 0);
	CHECK_INT(sl_redact_text(red, in, strlen(in), &out), 2);
	CHECK(out && strstr(out, "AKIA") == out);
	CHECK(out && strstr(out, " [REDACTED:employee_id] and EMP-12345 for [REDACTED:custom name]"));
	free(out);
	done();
}

TEST(redaction_config_errors)
{
	struct sl_err err;
	CHECK(init_with("{\"patterns\":[{\"name\":\"broken\",\"regex\":\"a(b\"}]}", &err) < 0);
	CHECK(strstr(err.msg, "broken") && strstr(err.msg, "regex"));
	CHECK(init_with("{\"disable\":[\"no_such_kind\"]}", &err) < 0);
	CHECK(strstr(err.msg, "disable[0]"));
	CHECK(init_with("{\"enable\":true}", &err) < 0);
	CHECK(strstr(err.msg, "unknown key \"enable\" (known: enabled, patterns, disable, maxDepth)"));
	CHECK(init_with("{\"patterns\":[{\"name\":\"a]b\",\"regex\":\"x\"}]}", &err) < 0);
	CHECK(init_with("{\"patterns\":[{\"regex\":\"x\"}]}", &err) < 0);
	CHECK(init_with("{\"maxDepth\":0}", &err) < 0);
	CHECK(init_with("[]", &err) < 0);
	/* A failed init leaves nothing behind: texts pass unchanged. */
	{
		char in[64] = "gh" "p_", *out = (char *)1;
		rnd(in, ALNUM, 36);
		CHECK_INT(sl_redact_text(red, in, strlen(in), &out), 0);
		CHECK(out == NULL);
	}
	/* Disabled: nothing is compiled, nothing redacted. */
	CHECK_INT(init_with("{\"enabled\":false}", &err), 0);
	{
		char in[64] = "gh" "p_", *out = NULL;
		rnd(in, ALNUM, 36);
		CHECK_INT(sl_redact_text(red, in, strlen(in), &out), 0);
	}
	done();
}

TEST(redaction_runaway_pattern_fails_cleanly)
{
	struct sl_err err;
	char in[64], *out = (char *)1;
	size_t outlen;
	memset(in, 'a', 40);
	in[40] = '\0';
	CHECK_INT(init_with("{\"patterns\":[{\"name\":\"slow\",\"regex\":\"^(a+)+[^a]\"}]}", &err), 0);
	CHECK(sl_redact_textn(red, in, strlen(in), &out, &outlen, &err) == SL_REDACT_FAILED);
	CHECK(out == NULL);
	CHECK(strstr(err.msg, "slow") != NULL);
	done();
}

TEST(redaction_json_walk)
{
	struct sl_err err;
	char text[2048], tok[64] = "gh" "p_";
	yyjson_mut_doc *d;
	yyjson_doc *id;
	size_t n = 0;
	char *json;

	init_default();
	rnd(tok, ALNUM, 36);
	snprintf(text, sizeof(text),
		 "{\"%s\":\"a key\",\"a\":[\"x %s y\",{\"deep\":{\"deeper\":[\"%s\"]}}],"
		 "\"password\":\"hunter2\",\"apiKey\":\"abc\",\"n\":1,\"nextToken\":\"page-2\","
		 "\"structuredContent\":{\"token\":\"%s\"},"
		 "\"resource\":{\"uri\":\"file:///x\",\"text\":\"TOKEN=%s\"}}",
		 tok, tok, tok, tok, tok);
	id = yyjson_read(text, strlen(text), 0);
	CHECK(id != NULL);
	d = yyjson_doc_mut_copy(id, NULL);
	yyjson_doc_free(id);
	CHECK_INT(sl_redact_json(red, d, yyjson_mut_doc_get_root(d), &n, &err), 0);
	CHECK_INT(n, 7);
	json = yyjson_mut_write(d, 0, NULL);
	CHECK(strstr(json, tok) == NULL);
	CHECK(strstr(json, "{\"[REDACTED:github_token]\":\"a key\","));
	CHECK(strstr(json, "\"x [REDACTED:github_token] y\""));
	CHECK(strstr(json, "\"deeper\":[\"[REDACTED:github_token]\"]"));
	CHECK(strstr(json, "\"password\":\"[REDACTED:secret_field]\""));
	CHECK(strstr(json, "\"apiKey\":\"[REDACTED:secret_field]\""));
	CHECK(strstr(json, "\"nextToken\":\"page-2\""));
	CHECK(strstr(json, "\"token\":\"[REDACTED:github_token]\""));
	CHECK(strstr(json, "\"text\":\"TOKEN=[REDACTED:github_token]\""));
	free(json);
	yyjson_mut_doc_free(d);
	done();
}

TEST(redaction_json_depth_limit)
{
	struct sl_err err;
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *root = yyjson_mut_arr(d), *v = root;
	size_t n = 0;

	CHECK_INT(init_with("{\"maxDepth\":8}", &err), 0);
	for (int i = 0; i < 8; i++) {
		yyjson_mut_val *a = yyjson_mut_arr(d);
		yyjson_mut_arr_append(v, a);
		v = a;
	}
	yyjson_mut_arr_add_str(d, v, "deep");
	CHECK(sl_redact_json(red, d, root, &n, &err) < 0);
	CHECK(strstr(err.msg, "deeper than 8"));
	/* Seven levels are fine. */
	CHECK_INT(sl_redact_json(red, d, yyjson_mut_arr_get_first(root), &n, &err), 0);
	yyjson_mut_doc_free(d);
	done();
}

TEST(redaction_secret_field_can_be_disabled)
{
	struct sl_err err;
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o = yyjson_mut_obj(d);
	size_t n = 0;

	CHECK_INT(init_with("{\"disable\":[\"secret_field\"]}", &err), 0);
	yyjson_mut_obj_add_str(d, o, "password", "hunter2");
	CHECK_INT(sl_redact_json(red, d, o, &n, &err), 0);
	CHECK_INT(n, 0);
	CHECK_STR(yyjson_mut_get_str(yyjson_mut_obj_get(o, "password")), "hunter2");
	yyjson_mut_doc_free(d);
	done();
}

/*
 * Redaction of secrets, both directions: see redaction.h and
 * docs/stages/redaction.md.
 *
 * Each pattern is its own PCRE2 program, so that each keeps PCRE2's own
 * start-of-match optimisation (most begin with a literal: "ghp_", "AKIA",
 * "-----BEGIN"): one alternation of forty patterns would start a match
 * attempt at almost every byte. A text is scanned by every pattern in turn;
 * the matches are then ordered by position (ties go to the earlier pattern,
 * which is the more specific one) and overlapping ones dropped. Patterns
 * that need context to be tight ("aws_secret_access_key = ...") use \K so
 * that only the secret is replaced, never its key.
 *
 * Subject strings are matched as bytes (no UTF mode): the built-in patterns
 * only consume ASCII, so a replacement never splits a UTF-8 sequence, and
 * invalid UTF-8 can never make a match fail. Custom patterns run in UTF mode
 * that tolerates invalid input, so their "." is a character.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "stages/redaction.h"
#include "config/conf.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/log.h"
#include "core/map.h"
#include "core/regex.h"
#include "pipeline/call.h"
#include "pipeline/metrics.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Left and right boundaries: a token is not the middle of a longer word or
 * of a base64 run (a PNG's base64 must never be redacted). */
#define LB    "(?<![A-Za-z0-9_])"
#define LB64  "(?<![A-Za-z0-9+/])"
#define LBX   "(?<![A-Za-z0-9_+/-])"
#define RB    "(?![A-Za-z0-9_])"
#define RBD   "(?![A-Za-z0-9_-])"
/* Between a key and its value: key=value, key: value, "key": "value". */
#define SEP   "[\"']?\\s*[:=]\\s*[\"']?"
/* Never redact a redaction again. */
#define NOTRED "(?!\\[REDACTED)"
#define PEM_END(x) "-----END[ A-Z0-9]*" x "-----"
/* The body of a PEM block, raw or inside a JSON text (newlines as \n). */
#define PEM_BODY "(?:[A-Za-z0-9+/=\\s:,.-]|\\\\[rn])"

struct builtin {
	const char *kind;
	const char *re;
};

/* Tried in this order; on a tie (two matches starting at the same byte)
 * the earlier entry wins, so specific formats come before generic ones. */
static const struct builtin builtins[] = {
	/* Private key blocks: PEM (RSA, EC, DSA, PKCS#8, encrypted), OpenSSH and
	 * PGP; a block cut before its END line is redacted to the end of its
	 * body. */
	{ "ssh_private_key",
	  "-----BEGIN OPENSSH PRIVATE KEY-----(?:" PEM_BODY "*?" PEM_END("PRIVATE KEY") "|"
	  PEM_BODY "*)" },
	{ "pgp_private_key",
	  "-----BEGIN PGP PRIVATE KEY BLOCK-----(?:" PEM_BODY "*?" PEM_END("PRIVATE KEY BLOCK")
	  "|" PEM_BODY "*)" },
	{ "private_key",
	  "-----BEGIN[ A-Z0-9]*PRIVATE KEY-----(?:" PEM_BODY "*?" PEM_END("PRIVATE KEY") "|"
	  PEM_BODY "*)" },
	{ "age_secret_key", "AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}" },

	/* Cloud providers. */
	{ "aws_access_key_id", LB64 "(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9+/])" },
	{ "aws_secret_access_key",
	  "(?i)(?:aws.{0,20}?secret.{0,20}?|secret_?access_?key)" SEP "\\K" NOTRED
	  "[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])" },
	{ "aws_session_token",
	  "(?i)(?:aws_?session_?token|sessiontoken|security_?token)" SEP "\\K" NOTRED
	  "[A-Za-z0-9/+=]{100,}" },
	{ "gcp_api_key", LBX "AIza[0-9A-Za-z_-]{35}" RBD },
	{ "gcp_oauth_token", LBX "ya29\\.[0-9A-Za-z_-]{20,}" },
	{ "gcp_refresh_token", LBX "1//0[0-9A-Za-z_-]{40,}" },
	{ "gcp_oauth_client_secret", LBX "GOCSPX-[0-9A-Za-z_-]{28}" RBD },
	{ "azure_storage_key", "(?i)AccountKey=\\K[A-Za-z0-9+/]{86}==" },
	{ "azure_shared_access_key", "(?i)SharedAccessKey=\\K[A-Za-z0-9+/]{42,43}=" },
	{ "azure_sas_signature", "[?&]sig=\\K[A-Za-z0-9%+/]{40,}(?:%3D|=){0,2}" },
	/* Entra ID client secrets: "xxx8Q~" then 31-34 characters; the four
	 * characters before Q~ are left (a lookbehind must have a fixed length). */
	{ "azure_client_secret",
	  "(?<=[A-Za-z0-9_~.-]{3}[0-9])Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])" },
	{ "digitalocean_token", LB "do[opr]_v1_[a-f0-9]{64}" RB },
	{ "heroku_api_key",
	  "(?:" LBX "HRKU-[A-Za-z0-9_-]{60}" RBD "|(?i)heroku[a-z_ -]{0,20}?(?:key|token|secret)"
	  SEP "\\K[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})" },

	/* Source hosting and CI. */
	{ "github_fine_grained_token", LB "github_pat_[A-Za-z0-9_]{50,255}" },
	{ "github_token", LB "gh[pousr]_[A-Za-z0-9]{36,251}" RB },
	{ "gitlab_token", LBX "gl(?:pat|dt|rt|ptt|cbt|oas|ft|imt)-[A-Za-z0-9_-]{20,}" },
	{ "atlassian_api_token", LBX "ATATT3[A-Za-z0-9_=-]{50,}" },
	{ "npm_token", LB "npm_[A-Za-z0-9]{36}" RB },
	{ "pypi_token", LBX "pypi-AgE[A-Za-z0-9_-]{60,}" },
	{ "vault_token", "(?<![A-Za-z0-9_.-])hv[sb]\\.[A-Za-z0-9_-]{24,}" },
	{ "postman_api_key", LBX "PMAK-[a-f0-9]{24}-[a-f0-9]{34}" RBD },

	/* Messaging, payments, SaaS. */
	{ "slack_token",
	  LBX "(?:xox[abposr]-[0-9A-Za-z-]{10,250}|xapp-[0-9]-[A-Za-z0-9-]{10,250})" },
	{ "slack_webhook",
	  "https://hooks\\.slack\\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}" },
	{ "stripe_secret_key", LB "(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{20,247}" RB },
	{ "stripe_webhook_secret", LB "whsec_[A-Za-z0-9+/=]{32,}" },
	{ "square_token", LBX "sq0(?:atp|csp)-[0-9A-Za-z_-]{22,43}" RBD },
	{ "twilio_api_key", "(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![A-Za-z0-9])" },
	{ "sendgrid_api_key", LBX "SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}" RBD },
	{ "mailgun_api_key", LBX "key-[0-9a-f]{32}" RBD },
	{ "shopify_token", LB "shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" RB },
	{ "datadog_api_key",
	  "(?i)(?:datadog|\\bdd)[_ -]?(?:api|app|application)[_ -]?key" SEP "\\K[0-9a-f]{32,40}"
	  "(?![0-9a-f])" },
	{ "telegram_bot_token",
	  "(?<=[0-9]{8}:|[0-9]{9}:|[0-9]{10}:)AA[0-9A-Za-z_-]{33}" RBD },
	{ "linear_api_key", LB "lin_api_[A-Za-z0-9]{40}" RB },
	{ "notion_token", LB "(?:secret_[A-Za-z0-9]{43}|ntn_[0-9]{11}[A-Za-z0-9]{35})" RB },

	/* AI providers: Anthropic before OpenAI (both begin with "sk-"). */
	{ "anthropic_api_key", LBX "sk-ant-[a-z]{2,8}[0-9]{0,3}-[A-Za-z0-9_-]{32,}" },
	{ "openai_api_key",
	  LBX "sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}"
	  "|[A-Za-z0-9]{48})" RBD },
	{ "huggingface_token",
	  LB "hf_(?=[A-Za-z]{0,33}[A-Z])(?=[A-Za-z]{0,33}[a-z])[A-Za-z]{34,40}" RB },

	/* Tokens by shape and by context. */
	{ "jwt", LBX "eyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]*" },
	{ "basic_auth",
	  "(?i)authorization" SEP "basic\\s+\\K" NOTRED "[A-Za-z0-9+/]{8,}={0,2}" },
	{ "bearer_token",
	  "(?i)(?<![A-Za-z0-9])bearer\\s+\\K" NOTRED "(?=[A-Za-z0-9._~+/-]*[0-9])"
	  "[A-Za-z0-9._~+/-]{20,}=*" },
	/* scheme://user:password@host: only the password goes. */
	{ "url_password",
	  "://[^\\s:/@\"'<>\\[\\]]{1,128}:\\K" NOTRED "[^\\s@/\"'<>]{1,256}(?=@)" },
	/* password=..., "api_key": "...", SECRET_KEY: x9...: a quoted value, a
	 * value right after "=" (not a call such as password=get()), or after
	 * ":" a value holding a digit or a symbol, so that prose ("password:
	 * required") and code ("apiKey = process.env.API_KEY") stay. */
	{ "secret_assignment",
	  "(?i)(?<![A-Za-z0-9])(?:password|passwd|passphrase|secret|client[_-]?secret|"
	  "secret[_-]?key|api[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|"
	  "private[_-]?key)(?:"
	  "[\"']?\\s*[:=]\\s*[\"']\\K" NOTRED "[^\"'`\\\\\\r\\n]{4,}"
	  "|[\"']?=\\K" NOTRED "[^\\s\"'`&,;<>(){}\\[\\]\\\\]{4,}+(?![()])"
	  "|\\s*:\\s*\\K" NOTRED "(?=[^\\s\"']*[0-9!@#$%^*+~])[^\\s\"'`&,;<>(){}\\[\\]\\\\]{4,}+"
	  ")" },
};

/* Not a pattern: a JSON string member whose key names a secret is replaced
 * whole (the key is compared lower-cased, without '_' and '-'). */
#define SECRET_FIELD "secret_field"
static const char *const secret_keys[] = {
	"password", "passwd", "passphrase", "secret", "clientsecret", "secretkey", "apikey",
	"accesstoken", "authtoken", "refreshtoken", "privatekey", "secretaccesskey",
	"sessiontoken",
};

#define DEFAULT_MAX_DEPTH 64
#define MATCH_LIMIT 10000000u   /* per match attempt: a runaway custom pattern fails */

struct pattern {
	char *kind;
	struct sl_re re; /* its code (owned), least length, first bytes: a rest of the
			  * text that cannot match is not tried (most strings of a call
			  * are keys and short values; core/regex.h) */
	size_t rank;     /* its place in the configuration: of two matches at one
			  * offset, the earlier pattern's wins */
};

/* One generation's redaction: its compiled patterns and settings. */
struct sl_redaction {
	bool ready;                 /* redaction is enabled */
	bool secret_fields;
	size_t max_depth;
	struct pattern *pats;       /* by least match length (then rank) */
	size_t npats;
	/* Scratch for pcre2_match (the loop's thread only). */
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	pcre2_jit_stack *jstack;
};

struct hit {
	size_t start, end, pat, rank;
};

static int hit_cmp(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int by_minlen(const void *a, const void *b)
{
	const struct pattern *x = a, *y = b;
	if (x->re.minlen != y->re.minlen)
		return x->re.minlen < y->re.minlen ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* ---- the engine ---------------------------------------------------------- */

/* Collects every pattern's matches in in[0..len): 0, or SL_ERR_TOO_LARGE
 * with err set (a match limit, a JIT stack overflow). */
static int find_hits(const struct sl_redaction *r, const char *in, size_t len, struct hit **hits,
		     size_t *nhits, struct sl_err *err)
{
	size_t n = 0, cap = 0;
	struct hit *h = NULL;
	struct sl_re_bytes b;

	sl_re_scan(&b, in, len);
	for (size_t p = 0; p < r->npats; p++) {
		size_t off = 0;
		if (len < r->pats[p].re.minlen)
			break; /* and so is every pattern after it */
		while (off <= len && sl_re_may_match(&r->pats[p].re, &b, len - off)) {
			int rc = sl_re_match(&r->pats[p].re, in, len, off, r->md, r->mctx);
			PCRE2_SIZE *ov;
			if (rc == PCRE2_ERROR_NOMATCH)
				break;
			if (rc < 0) {
				PCRE2_UCHAR msg[128];
				pcre2_get_error_message(rc, msg, sizeof(msg));
				sl_err_set(err, "pattern %s: %s", r->pats[p].kind, (char *)msg);
				free(h);
				return SL_ERR_TOO_LARGE;
			}
			ov = pcre2_get_ovector_pointer(r->md);
			if (ov[1] <= off || ov[0] >= ov[1]) {
				/* Empty (or \K-inverted) match: nothing to replace. */
				off = (ov[1] > off ? ov[1] : off) + 1;
				continue;
			}
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				h = sl_realloc(h, cap * sizeof(*h));
			}
			h[n++] = (struct hit){ ov[0], ov[1], p, r->pats[p].rank };
			off = ov[1];
		}
	}
	*hits = h;
	*nhits = n;
	return SL_OK;
}

size_t sl_redact_textn(const struct sl_redaction *r, const char *in, size_t len, char **out,
		       size_t *outlen, struct sl_err *err)
{
	struct hit *hits = NULL;
	size_t nhits = 0, count = 0, pos = 0;
	struct sl_buf b;
	struct sl_err scratch;

	*out = NULL;
	if (outlen)
		*outlen = 0;
	if (!err)
		err = &scratch;
	if (!r || !r->ready || len == 0)
		return 0;
	if (find_hits(r, in, len, &hits, &nhits, err) < 0)
		return SL_REDACT_FAILED;
	if (nhits == 0)
		return 0;
	qsort(hits, nhits, sizeof(*hits), hit_cmp);
	/* Output cap: the text plus a marker per replacement, within reason. */
	sl_buf_init(&b, len + (len < (64u << 20) ? len : (64u << 20)) + 4096);
	for (size_t i = 0; i < nhits; i++) {
		if (hits[i].start < pos) {
			/* Overlaps a replacement already made: one that ends
			 * further grows it, or the rest of a secret that begins
			 * inside an earlier match (a PEM body running into a
			 * token) would be passed on in clear. */
			if (hits[i].end > pos)
				pos = hits[i].end;
			continue;
		}
		if (sl_buf_append(&b, in + pos, hits[i].start - pos) < 0 ||
		    sl_buf_printf(&b, "[REDACTED:%s]", r->pats[hits[i].pat].kind) < 0) {
			sl_err_set(err, "the redacted text would exceed %zu bytes", b.max);
			sl_buf_dispose(&b);
			free(hits);
			return SL_REDACT_FAILED;
		}
		pos = hits[i].end;
		count++;
	}
	free(hits);
	if (sl_buf_append(&b, in + pos, len - pos) < 0) {
		sl_err_set(err, "the redacted text would exceed %zu bytes", b.max);
		sl_buf_dispose(&b);
		return SL_REDACT_FAILED;
	}
	*out = sl_buf_take(&b, outlen);
	return count;
}

size_t sl_redact_text(const struct sl_redaction *r, const char *in, size_t len, char **out)
{
	return sl_redact_textn(r, in, len, out, NULL, NULL);
}

const char *sl_redact_builtin_kind(size_t i)
{
	return i < SL_COUNT(builtins) ? builtins[i].kind : NULL;
}

/* ---- JSON ------------------------------------------------------------------ */

static bool is_secret_key(const char *k, size_t n)
{
	char norm[32];
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		char ch = k[i];
		if (ch == '_' || ch == '-')
			continue;
		if (m + 1 >= sizeof(norm))
			return false;
		norm[m++] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
	}
	norm[m] = '\0';
	for (size_t i = 0; i < SL_COUNT(secret_keys); i++)
		if (strcmp(norm, secret_keys[i]) == 0)
			return true;
	return false;
}

static bool already_redacted(const char *s, size_t n)
{
	return n > 11 && memcmp(s, "[REDACTED:", 10) == 0 && s[n - 1] == ']';
}

/* Redacts the string v (a value or an object's key) in place. */
static int redact_str(const struct sl_redaction *r, yyjson_mut_doc *d, yyjson_mut_val *v,
		      size_t *count, struct sl_err *err)
{
	char *out;
	size_t outlen, n = sl_redact_textn(r, yyjson_mut_get_str(v), yyjson_mut_get_len(v), &out,
					   &outlen, err);
	yyjson_mut_val *copy;

	if (n == SL_REDACT_FAILED)
		return SL_ERR_TOO_LARGE;
	if (n == 0)
		return SL_OK;
	copy = yyjson_mut_strncpy(d, out, outlen);
	free(out);
	if (!copy)
		sl_oom();
	yyjson_mut_set_strn(v, yyjson_mut_get_str(copy), outlen);
	*count += n;
	return SL_OK;
}

/* True if the key k is known to hold no secret in this walk (a listing
 * repeats the same few keys in every row: each distinct one is scanned
 * once); else remembers it when it holds none (hits 0). */
static bool key_clean(struct sl_map *clean, const char *k, size_t n, size_t hits, bool check)
{
	if (memchr(k, '\0', n))
		return false; /* not a map key: always scanned */
	if (check)
		return sl_map_get(clean, k) != NULL;
	if (hits == 0)
		sl_map_put(clean, k, clean);
	return false;
}

/* One walk's context: the clean-key memory and the running count. */
struct walk {
	const struct sl_redaction *r;
	struct sl_map clean;
	size_t *count;
};

static int on_str(void *ctx, yyjson_mut_doc *d, yyjson_mut_val *v, yyjson_mut_val *k,
		  struct sl_err *err)
{
	struct walk *w = ctx;
	if (k && w->r->secret_fields && yyjson_mut_get_len(v) > 0 &&
	    is_secret_key(yyjson_mut_get_str(k), yyjson_mut_get_len(k)) &&
	    !already_redacted(yyjson_mut_get_str(v), yyjson_mut_get_len(v))) {
		yyjson_mut_set_str(v, "[REDACTED:" SECRET_FIELD "]");
		(*w->count)++;
		return SL_OK;
	}
	return redact_str(w->r, d, v, w->count, err);
}

/* A key is text a peer reads too ({"ghp_...": 1}). */
static int on_key(void *ctx, yyjson_mut_doc *d, yyjson_mut_val *k, struct sl_err *err)
{
	struct walk *w = ctx;
	size_t before = *w->count;
	if (key_clean(&w->clean, yyjson_mut_get_str(k), yyjson_mut_get_len(k), 0, true))
		return SL_OK;
	if (redact_str(w->r, d, k, w->count, err) < 0)
		return SL_ERR_TOO_LARGE;
	key_clean(&w->clean, yyjson_mut_get_str(k), yyjson_mut_get_len(k), *w->count - before, false);
	return SL_OK;
}

int sl_redact_json(const struct sl_redaction *r, yyjson_mut_doc *d, yyjson_mut_val *v,
		   size_t *count, struct sl_err *err)
{
	struct sl_err scratch;
	struct walk w = { .r = r, .count = count };
	struct sl_json_strings walk = { on_str, on_key, 0, &w };
	int rc;
	if (!r || !r->ready || !v)
		return SL_OK;
	walk.max_depth = r->max_depth;
	sl_map_init(&w.clean);
	rc = sl_json_walk_strings(&walk, d, v, err ? err : &scratch);
	sl_map_dispose(&w.clean);
	return rc;
}

static int count_str(const struct sl_redaction *r, yyjson_val *v, size_t *count,
		     struct sl_err *err)
{
	struct hit *hits = NULL;
	size_t n = 0;
	if (find_hits(r, yyjson_get_str(v), yyjson_get_len(v), &hits, &n, err) < 0)
		return SL_ERR_TOO_LARGE;
	free(hits);
	*count += n;
	return SL_OK;
}

/* Counts what redact_mut would replace in an immutable value, so that a
 * result without secrets is never copied. */
static int scan_imm(const struct sl_redaction *r, yyjson_val *v, size_t depth,
		    struct sl_map *clean, size_t *count, struct sl_err *err)
{
	if (depth > r->max_depth) {
		sl_err_set(err, "JSON nested deeper than %zu levels", r->max_depth);
		return SL_ERR_INVALID;
	}
	if (yyjson_is_str(v)) {
		if (count_str(r, v, count, err) < 0)
			return SL_ERR_TOO_LARGE;
	} else if (yyjson_is_arr(v)) {
		size_t i, max;
		yyjson_val *e;
		yyjson_arr_foreach(v, i, max, e)
			if (scan_imm(r, e, depth + 1, clean, count, err) < 0)
				return SL_ERR_INVALID;
	} else if (yyjson_is_obj(v)) {
		size_t i, max;
		yyjson_val *k, *e;
		yyjson_obj_foreach(v, i, max, k, e) {
			if (r->secret_fields && yyjson_is_str(e) && yyjson_get_len(e) > 0 &&
			    is_secret_key(yyjson_get_str(k), yyjson_get_len(k)) &&
			    !already_redacted(yyjson_get_str(e), yyjson_get_len(e))) {
				(*count)++;
			} else if (scan_imm(r, e, depth + 1, clean, count, err) < 0) {
				return SL_ERR_INVALID;
			}
			if (!key_clean(clean, yyjson_get_str(k), yyjson_get_len(k), 0, true)) {
				size_t before = *count;
				if (count_str(r, k, count, err) < 0)
					return SL_ERR_TOO_LARGE;
				key_clean(clean, yyjson_get_str(k), yyjson_get_len(k), *count - before,
					  false);
			}
		}
	}
	return SL_OK;
}

/* ---- the stage ------------------------------------------------------------ */

static enum sl_stage_rc redaction_request(void *state, struct sl_call *c)
{
	const struct sl_redaction *r = state;
	struct sl_err err;
	size_t n = 0;

	if (!r || !r->ready)
		return SL_STAGE_DECLINED;
	if (sl_redact_json(r, c->doc, c->args, &n, &err) < 0) {
		/* The arguments may be half redacted: they must not be sent. */
		sl_call_set_error(c, SL_OUTCOME_FAILED,
				  "redaction of the arguments failed (%s); the call was not sent",
				  err.msg);
		return SL_STAGE_ERROR;
	}
	sl_metrics_redacted(c->gen->metrics, SL_METRICS_ARGUMENTS, n);
	if (n > 0)
		sl_log(SL_LOG_DEBUG, "call %llu %s.%s: %zu secret(s) redacted from the arguments",
		       (unsigned long long)c->id, c->up->name, c->tool, n);
	return SL_STAGE_NEXT;
}

static enum sl_stage_rc redaction_response(void *state, struct sl_call *c)
{
	const struct sl_redaction *r = state;
	struct sl_err err;
	yyjson_mut_val *m;
	size_t n = 0;

	if (!r || !r->ready || c->outcome != SL_OUTCOME_OK || !c->result)
		return SL_STAGE_DECLINED;
	if (!c->mresult) {
		struct sl_map clean;
		int rc;
		sl_map_init(&clean);
		rc = scan_imm(r, c->result, 0, &clean, &n, &err);
		sl_map_dispose(&clean);
		if (rc < 0)
			goto fail;
		if (n == 0)
			return SL_STAGE_NEXT;
		n = 0;
	}
	m = sl_call_result_mut(c);
	if (sl_redact_json(r, c->doc, m, &n, &err) < 0)
		goto fail;
	sl_metrics_redacted(c->gen->metrics, SL_METRICS_RESULT, n);
	if (n > 0)
		sl_log(SL_LOG_DEBUG, "call %llu %s.%s: %zu secret(s) redacted from the result",
		       (unsigned long long)c->id, c->up->name, c->tool, n);
	return SL_STAGE_NEXT;
fail:
	sl_call_set_error(c, SL_OUTCOME_FAILED,
			  "redaction of the result failed (%s); the result was withheld", err.msg);
	return SL_STAGE_ERROR;
}

static void redaction_free(struct sl_redaction *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->npats; i++) {
		pcre2_code_free(r->pats[i].re.code);
		free(r->pats[i].kind);
	}
	free(r->pats);
	pcre2_match_data_free(r->md);
	pcre2_match_context_free(r->mctx);
	pcre2_jit_stack_free(r->jstack);
	free(r);
}

static int add_pattern(struct sl_redaction *r, const char *kind, const char *re, uint32_t opts,
		       const char *what, struct sl_err *err)
{
	int ec;
	PCRE2_SIZE eo;
	pcre2_code *code = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, opts, &ec, &eo, NULL);

	if (!code) {
		PCRE2_UCHAR msg[128];
		pcre2_get_error_message(ec, msg, sizeof(msg));
		sl_err_set(err, "sluice.redaction: %s '%s': bad regex at offset %zu: %s", what, kind,
			   (size_t)eo, (char *)msg);
		return SL_ERR_INVALID;
	}
	r->pats = sl_realloc(r->pats, (r->npats + 1) * sizeof(*r->pats));
	r->pats[r->npats].kind = sl_strdup(kind);
	r->pats[r->npats].rank = r->npats;
	/* JIT-compiles it; without JIT (a kernel that forbids executable
	 * mappings) PCRE2's interpreter runs the same pattern, only slower. */
	sl_re_init(&r->pats[r->npats++].re, code);
	return SL_OK;
}

static bool valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || *s == ']' || *s == '[')
			return false;
	return true;
}

static bool is_disabled(yyjson_val *disable, const char *kind)
{
	size_t i, max;
	yyjson_val *e;
	yyjson_arr_foreach(disable, i, max, e)
		if (yyjson_equals_str(e, kind))
			return true;
	return false;
}

static bool known_kind(const char *s)
{
	if (strcmp(s, SECRET_FIELD) == 0)
		return true;
	for (size_t i = 0; i < SL_COUNT(builtins); i++)
		if (strcmp(s, builtins[i].kind) == 0)
			return true;
	return false;
}

/* The settings of sluice.redaction; disable and patterns are borrowed from
 * the section, which outlives init. */
struct options {
	bool enabled;
	uint64_t depth;
	yyjson_val *disable, *patterns;
};

static int parse_disable(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			 void *target)
{
	yyjson_val *e;
	size_t i, max;

	if (!yyjson_is_arr(v))
		return sl_conf_bad(cx, k);
	yyjson_arr_foreach(v, i, max, e) {
		if (!yyjson_is_str(e) || !known_kind(yyjson_get_str(e))) {
			char where[64];
			snprintf(where, sizeof(where), "sluice.redaction.disable[%zu]", i);
			return sl_conf_fail(cx, where, "not a built-in pattern kind "
					    "(see docs/stages/redaction.md)");
		}
	}
	((struct options *)target)->disable = v;
	return SL_OK;
}

/* Only the shape here: the items are checked as they are compiled, when
 * redaction is enabled. */
static int parse_patterns(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			  void *target)
{
	if (!yyjson_is_arr(v))
		return sl_conf_bad(cx, k);
	((struct options *)target)->patterns = v;
	return SL_OK;
}

#define OPT(field) SL_CONF_AT(struct options, field)
static const struct sl_conf_key redaction_keys[] = {
	{ "enabled", SL_CONF_BOOL, OPT(enabled), .dflt = 1,
	  .doc = "`false`: nothing is compiled, nothing redacted (final answers included)." },
	{ "patterns", SL_CONF_CUSTOM, OPT(patterns), .parse = parse_patterns,
	  .shape = "an array of {name, regex}", .dflt_doc = "`[]`",
	  .doc = "Custom patterns, PCRE2 syntax; a match becomes `[REDACTED:<name>]` (a name is 1-64 "
		 "printable characters, no `[` `]`)." },
	{ "disable", SL_CONF_CUSTOM, OPT(disable), .parse = parse_disable,
	  .shape = "an array of pattern kinds", .dflt_doc = "`[]`",
	  .doc = "Built-in kinds to turn off (docs/stages/redaction.md lists them), or "
		 "`secret_field`." },
	{ "maxDepth", SL_CONF_UINT, OPT(depth), .min = 1, .max = 1000, .dflt = DEFAULT_MAX_DEPTH,
	  .doc = "The deepest JSON nesting scanned; deeper fails the call." },
};
#undef OPT

static const struct sl_conf_section redaction_conf = {
	"sluice.redaction",
	"Secret redaction in arguments, results and final answers (docs/stages/redaction.md).",
	redaction_keys, SL_COUNT(redaction_keys), SL_CONF_STRICT, NULL,
};

/* Compiles what o enables into r and makes it ready. */
static int load(struct sl_redaction *r, const struct options *o, struct sl_err *err)
{
	yyjson_val *v;
	size_t i, max;

	r->max_depth = (size_t)o->depth;
	r->secret_fields = !is_disabled(o->disable, SECRET_FIELD);
	for (size_t j = 0; j < SL_COUNT(builtins); j++)
		if (!is_disabled(o->disable, builtins[j].kind) &&
		    add_pattern(r, builtins[j].kind, builtins[j].re, 0, "built-in pattern", err) < 0)
			return SL_ERR_INVALID;
	yyjson_arr_foreach(o->patterns, i, max, v) {
		const char *name = sl_json_str(v, "name"), *re = sl_json_str(v, "regex");
		if (!yyjson_is_obj(v) || !name || !re || yyjson_obj_size(v) != 2) {
			sl_err_set(err, "sluice.redaction.patterns[%zu] must be {\"name\": ..., "
				   "\"regex\": ...}", i);
			return SL_ERR_INVALID;
		}
		if (!valid_name(name)) {
			sl_err_set(err, "sluice.redaction.patterns[%zu]: name must be 1 to 64 printable "
				   "characters without '[' or ']'", i);
			return SL_ERR_INVALID;
		}
		if (add_pattern(r, name, re, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, "pattern", err) < 0)
			return SL_ERR_INVALID;
	}
	/* A string shorter than a pattern's least match is shorter than every
	 * later one's: find_hits stops there. */
	qsort(r->pats, r->npats, sizeof(*r->pats), by_minlen);
	r->md = pcre2_match_data_create(1, NULL);
	r->mctx = pcre2_match_context_create(NULL);
	r->jstack = pcre2_jit_stack_create(32u << 10, 1u << 20, NULL);
	if (!r->md || !r->mctx || !r->jstack)
		sl_oom();
	pcre2_set_match_limit(r->mctx, MATCH_LIMIT);
	pcre2_jit_stack_assign(r->mctx, NULL, r->jstack);
	r->ready = true;
	return SL_OK;
}

/* The state always exists, also when disabled (it then redacts nothing).
 * It borrows nothing from section. */
static int redaction_init(const struct sl_config *cfg, const struct sl_services *svc,
			  yyjson_val *section, void **state, struct sl_err *err)
{
	struct options o = { 0 };
	struct sl_redaction *r = sl_alloc(sizeof(*r));
	int rc = SL_ERR_INVALID;

	*state = NULL;
	if (sl_conf_load(&redaction_conf, section, &o, err) < 0)
		goto out;
	if (o.enabled && load(r, &o, err) < 0)
		goto out;
	rc = SL_OK;
	*state = r;
out:
	if (rc < 0)
		redaction_free(r);
	return rc;
}

static void redaction_fini(void *state)
{
	redaction_free(state);
}

/* A program's answer is scanned again: a program can build a secret from
 * pieces no single tool result showed. */
static void redaction_output(void *state, struct sl_output *o)
{
	char *red;
	size_t n, len;

	if (!o->text)
		return;
	n = sl_redact_textn(state, o->text, o->text_len, &red, &len, NULL);
	if (n != SL_REDACT_FAILED)
		sl_metrics_redacted(o->metrics, SL_METRICS_OUTPUT, n);
	sl_output_rewrite(o, n == SL_REDACT_FAILED, red, len, "secrets");
}

/* Everything else a peer sends through the gateway: the same patterns,
 * keys included. Text that cannot be scanned is not passed on. */
static void redaction_peer(void *state, struct sl_peer *p)
{
	const struct sl_redaction *r = state;
	struct sl_err err;
	size_t n = 0;
	const char *dir = p->kind == SL_PEER_UPSTREAM ? "to" : "from";

	if (!r || !r->ready)
		return;
	if (sl_redact_json(r, p->doc, p->val, &n, &err) < 0) {
		p->withheld = sl_printf("redaction of the %s %s %s server '%s' failed (%s); it was "
					"withheld", p->method, sl_peer_noun(p->kind), dir, p->up->name,
					err.msg);
		return;
	}
	sl_metrics_redacted(p->metrics, SL_METRICS_PEER, n);
	if (n > 0) {
		p->changed = true;
		sl_log(SL_LOG_DEBUG, "%s %s %s server '%s': %zu secret(s) redacted", p->method,
		       sl_peer_noun(p->kind), dir, p->up->name, n);
	}
}

const struct sl_stage sl_stage_redaction = {
	.name = "redaction",
	.conf = &redaction_conf,
	.init = redaction_init,
	.fini = redaction_fini,
	.request = redaction_request,
	.response = redaction_response,
	.output = redaction_output,
	.peer = redaction_peer,
};

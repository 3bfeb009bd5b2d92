/*
 * Tokenised personal data: see tokenize.h and docs/stages/tokenize.md.
 *
 * Built-in detectors are hand-written scanners, not regexes: each tries a
 * match only where a token can begin (the previous byte is no part of
 * one), reads at most a fixed number of bytes from there, and the scan
 * goes on after a match, so a text costs time linear in its length. A
 * byte >= 0x80 counts as a boundary: an address inside Chinese text with
 * no spaces is still found. Checksums (Luhn, mod 97, SSN and NINO rules)
 * keep order numbers and the like out. Custom patterns are PCRE2, as in
 * the redaction stage, compiled with a match limit.
 *
 * A map (one per session) is two string maps, value -> placeholder and
 * placeholder -> value, with a counter per kind. Maps are kept in a
 * bounded map (core/lru.h) in LRU order, bounded in number and idle time
 * (each use renews a map's deadline); a full map makes new values
 * <KIND_REDACTED> instead of growing.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "stages/tokenize.h"
#include "config/conf.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/log.h"
#include "core/lru.h"
#include "core/map.h"
#include "pipeline/call.h"

#include <ctype.h>
#include <fnmatch.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PATTERNS   16
#define MAX_REGEX      512
#define MATCH_LIMIT    1000000u
#define MAX_DEPTH      64
#define LABEL_MAX      32

enum kind { K_EMAIL, K_PHONE, K_CARD, K_IBAN, K_SSN, K_NINO, K_BUILTIN };

static const char *const kind_names[K_BUILTIN] = { "email", "phone", "card", "iban", "ssn", "nino" };

struct custom {
	char label[LABEL_MAX + 1];
	pcre2_code *re;
};

struct tmap {
	struct sl_lru_entry e;    /* key: the session's; until_ms: idle past ttl */
	struct sl_map by_value;   /* "<kind>\x1f<value>" -> placeholder (owned) */
	struct sl_map by_token;   /* placeholder -> value (owned) */
	size_t count;
	uint32_t next[K_BUILTIN + MAX_PATTERNS];
};

struct sl_tokenize {
	bool on[K_BUILTIN];
	struct custom pats[MAX_PATTERNS];
	size_t npats;
	char **restore;           /* restoreTo's entries (owned) */
	size_t nrestore;
	uint64_t max_values, max_value_bytes, max_text, ttl_ms, max_total;
	struct sl_lru maps;       /* key -> struct tmap, at most maxSessions */
	size_t total;             /* values in all maps */
	pcre2_match_data *md;
	pcre2_match_context *mctx;
};

/* ---- detectors -------------------------------------------------------------- */

static bool alnum(unsigned char c)
{
	return c < 0x80 && isalnum(c);
}

static bool digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool upper(unsigned char c)
{
	return c >= 'A' && c <= 'Z';
}

static bool local_char(unsigned char c)
{
	return alnum(c) || (c && strchr("._%+-", c));
}

bool sl_tokenize_luhn(const char *d, size_t n)
{
	unsigned sum = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned v = (unsigned)(d[n - 1 - i] - '0');
		if (i % 2 == 1 && (v *= 2) > 9)
			v -= 9;
		sum += v;
	}
	return n > 0 && sum % 10 == 0;
}

bool sl_tokenize_iban_ok(const char *s, size_t n)
{
	unsigned rem = 0;
	if (n < 15 || n > 34 || !upper(s[0]) || !upper(s[1]) || !digit(s[2]) || !digit(s[3]))
		return false;
	/* The first four characters go to the end; letters count 10..35. */
	for (size_t k = 0; k < n; k++) {
		unsigned char c = (unsigned char)s[(k + 4) % n];
		if (digit(c))
			rem = (rem * 10 + (c - '0')) % 97;
		else if (upper(c))
			rem = (rem * 100 + (c - 'A' + 10)) % 97;
		else
			return false;
	}
	return rem == 1;
}

/* Each returns the end of a match that begins at i, or 0. */

static size_t det_email(const char *s, size_t len, size_t i)
{
	size_t j = i, dot = 0, pdot = 0, label = 0;

	if (i > 0 && local_char((unsigned char)s[i - 1]))
		return 0;
	if (s[i] == '.')
		return 0;
	while (j < len && j - i < 64 && local_char((unsigned char)s[j]))
		j++;
	if (j == i || j >= len || s[j] != '@')
		return 0;
	for (size_t k = ++j; k < len && k - j < 253; k++) {
		unsigned char c = (unsigned char)s[k];
		if (alnum(c) || c == '-') {
			label++;
			continue;
		}
		if (c != '.' || label == 0)
			break;
		pdot = dot;
		dot = k;
		label = 0;
	}
	if (label == 0)
		dot = pdot; /* "write to a@example.com.": the last dot ends the sentence */
	if (!dot)
		return 0;
	/* The top-level label: two or more letters, and no more of the name
	 * after it. */
	{
		size_t e = dot + 1, n = 0;
		while (e < len && n < 64 && alnum((unsigned char)s[e]) && !digit((unsigned char)s[e]))
			e++, n++;
		if (n < 2 || n == 64 || (e < len && (alnum((unsigned char)s[e]) || s[e] == '-' || s[e] == '_')))
			return 0;
		return e;
	}
}

/* Digits from i with single separators from seps between them; returns
 * the end after the last digit, and the digits in d (at most max, else 0). */
static size_t digit_run(const char *s, size_t len, size_t i, const char *seps, char *d,
			size_t max, size_t *nd)
{
	size_t j = i, end = 0, n = 0;
	while (j < len) {
		if (digit((unsigned char)s[j])) {
			if (n == max)
				return 0;
			d[n++] = s[j++];
			end = j;
		} else if (s[j] && strchr(seps, s[j]) && end > 0 &&
			   (end == j || s[j - 1] == ')') && j + 1 < len &&
			   (digit((unsigned char)s[j + 1]) || s[j + 1] == '(')) {
			j++;
		} else if ((s[j] == '(' && j + 1 < len && digit((unsigned char)s[j + 1])) ||
			   (s[j] == ')' && end == j)) {
			j++;
		} else {
			break;
		}
	}
	*nd = n;
	return end;
}

static size_t det_phone(const char *s, size_t len, size_t i)
{
	char d[16];
	size_t n, end;
	if (s[i] != '+' || (i > 0 && (alnum((unsigned char)s[i - 1]) || s[i - 1] == '+')))
		return 0;
	if (i + 1 >= len || !digit((unsigned char)s[i + 1]) || s[i + 1] == '0')
		return 0;
	end = digit_run(s, len, i + 1, " -.", d, 15, &n);
	if (!end || n < 8 || (end < len && alnum((unsigned char)s[end])))
		return 0;
	return end;
}

static size_t det_card(const char *s, size_t len, size_t i)
{
	char d[20];
	size_t n, end;
	if (!digit((unsigned char)s[i]) || s[i] < '2' || s[i] > '6')
		return 0;
	if (i > 0 && (alnum((unsigned char)s[i - 1]) || strchr(".-+", s[i - 1])))
		return 0;
	end = digit_run(s, len, i, " -", d, 19, &n);
	if (!end || n < 13 || memchr(s + i, '(', end - i) || memchr(s + i, ')', end - i))
		return 0;
	if (end < len && (alnum((unsigned char)s[end]) || (s[end] == '.' && end + 1 < len &&
							     digit((unsigned char)s[end + 1]))))
		return 0;
	return sl_tokenize_luhn(d, n) ? end : 0;
}

static size_t det_iban(const char *s, size_t len, size_t i)
{
	char c[35] = { 0 };
	size_t n = 0, j = i, ends[10], nends = 0;

	if (!upper((unsigned char)s[i]) || (i > 0 && alnum((unsigned char)s[i - 1])))
		return 0;
	/* Compact, or printed in groups of four with single spaces. */
	while (j < len && n < 34) {
		unsigned char ch = (unsigned char)s[j];
		if (upper(ch) || digit(ch)) {
			c[n++] = (char)ch;
			j++;
			if (n % 4 == 0 && nends < 10)
				ends[nends++] = j;
		} else if (ch == ' ' && n % 4 == 0 && n > 0 && j + 1 < len &&
			   (upper((unsigned char)s[j + 1]) || digit((unsigned char)s[j + 1]))) {
			j++;
		} else {
			break;
		}
	}
	if (j < len && alnum((unsigned char)s[j])) {
		/* Runs into a word: only a group boundary can end it. */
	} else if (sl_tokenize_iban_ok(c, n)) {
		return j;
	}
	/* A printed IBAN followed by more groups of text: try shorter. */
	while (nends > 0) {
		size_t e = ends[--nends], m = 0;
		for (size_t k = i; k < e; k++)
			m += s[k] != ' ';
		if (e < len && s[e] != ' ' && alnum((unsigned char)s[e]))
			continue;
		if (m < n && sl_tokenize_iban_ok(c, m))
			return e;
	}
	return 0;
}

static size_t det_ssn(const char *s, size_t len, size_t i)
{
	const char *p = s + i;
	int area, group, serial;
	if (i + 11 > len || (i > 0 && (alnum((unsigned char)s[i - 1]) || s[i - 1] == '-')))
		return 0;
	for (int k = 0; k < 11; k++)
		if ((k == 3 || k == 6) ? p[k] != '-' : !digit((unsigned char)p[k]))
			return 0;
	if (i + 11 < len && (alnum((unsigned char)p[11]) || p[11] == '-'))
		return 0;
	area = (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
	group = (p[4] - '0') * 10 + (p[5] - '0');
	serial = (p[7] - '0') * 1000 + (p[8] - '0') * 100 + (p[9] - '0') * 10 + (p[10] - '0');
	if (area == 0 || area == 666 || area >= 900 || group == 0 || serial == 0)
		return 0;
	return i + 11;
}

static size_t det_nino(const char *s, size_t len, size_t i)
{
	static const char *const bad[] = { "BG", "GB", "KN", "NK", "NT", "TN", "ZZ" };
	size_t j = i + 2, n = 0;
	if (i + 9 > len || (i > 0 && alnum((unsigned char)s[i - 1])))
		return 0;
	if (!upper((unsigned char)s[i]) || !upper((unsigned char)s[i + 1]) ||
	    strchr("DFIQUV", s[i]) || strchr("DFIOQUV", s[i + 1]))
		return 0;
	for (size_t k = 0; k < SL_COUNT(bad); k++)
		if (!memcmp(s + i, bad[k], 2))
			return 0;
	/* Six digits, compact or as "AB 12 34 56 C". */
	while (n < 6 && j < len) {
		if (s[j] == ' ' && n % 2 == 0 && j + 1 < len && digit((unsigned char)s[j + 1]))
			j++;
		if (j >= len || !digit((unsigned char)s[j]))
			return 0;
		j++, n++;
	}
	if (n < 6)
		return 0;
	if (j < len && s[j] == ' ' && j + 1 < len && s[j + 1] >= 'A' && s[j + 1] <= 'D')
		j++;
	if (j >= len || s[j] < 'A' || s[j] > 'D')
		return 0;
	j++;
	if (j < len && alnum((unsigned char)s[j]))
		return 0;
	return j;
}

typedef size_t (*detector)(const char *s, size_t len, size_t i);
static const detector detectors[K_BUILTIN] = { det_email, det_phone, det_card, det_iban, det_ssn,
					       det_nino };

/* ---- maps ------------------------------------------------------------------- */

static void free_entry(const char *key, void *value, void *ctx)
{
	(void)key;
	(void)ctx;
	free(value);
}

static void map_free(struct sl_lru_entry *e, void *arg)
{
	struct tmap *m = sl_lru_item(e, struct tmap, e);
	struct sl_tokenize *t = arg;

	sl_map_each(&m->by_value, free_entry, NULL);
	sl_map_each(&m->by_token, free_entry, NULL);
	sl_map_dispose(&m->by_value);
	sl_map_dispose(&m->by_token);
	t->total -= m->count;
	free(m);
}

/* key's map, made when create (evicting idle and the least recently used
 * ones past maxSessions), or NULL. */
static struct tmap *get_map(struct sl_tokenize *t, const char *key, bool create)
{
	uint64_t now = sl_now_ms();
	/* Idle for more than ttl_ms: expired. */
	uint64_t until = now + t->ttl_ms + 1;
	struct sl_lru_entry *e;
	struct tmap *m;

	/* Every use renews: the oldest end is the soonest to expire. */
	while ((e = sl_lru_oldest(&t->maps)) && now >= e->until_ms)
		sl_lru_drop(&t->maps, e);
	if ((e = sl_lru_get(&t->maps, key, now))) {
		e->until_ms = until;
		sl_lru_touch(&t->maps, e);
		return sl_lru_item(e, struct tmap, e);
	}
	if (!create)
		return NULL;
	m = sl_alloc(sizeof(*m));
	sl_map_init(&m->by_value);
	sl_map_init(&m->by_token);
	(void)sl_lru_put(&t->maps, key, &m->e, 0, until);
	return m;
}

static const char *label_of(const struct sl_tokenize *t, size_t kind, char *buf)
{
	if (kind >= K_BUILTIN)
		return t->pats[kind - K_BUILTIN].label;
	for (size_t i = 0; kind_names[kind][i]; i++)
		buf[i] = (char)toupper((unsigned char)kind_names[kind][i]);
	buf[strlen(kind_names[kind])] = '\0';
	return buf;
}

/* The map's key for a value: its kind and, for numbers, its characters
 * without separators, so "4111 1111 1111 1111" and "4111-1111-1111-1111"
 * are one card (restored as first seen). */
static char *value_key(const char *label, size_t kind, const char *v, size_t n)
{
	struct sl_buf b;
	sl_buf_init(&b, SIZE_MAX);
	if (sl_buf_printf(&b, "%s\x1f", label) < 0)
		sl_oom();
	for (size_t i = 0; i < n; i++) {
		if (kind != K_EMAIL && kind < K_BUILTIN && strchr(" -.()", v[i]))
			continue;
		if (sl_buf_append(&b, v + i, 1) < 0)
			sl_oom();
	}
	return sl_buf_take(&b, NULL);
}

/* Appends the placeholder of value v (kind) to b. */
static int put_token(struct sl_tokenize *t, struct tmap *m, size_t kind, const char *v, size_t n,
		     struct sl_buf *b)
{
	char lb[LABEL_MAX + 1];
	const char *label = label_of(t, kind, lb), *tok;
	char *vk;

	if (n > t->max_value_bytes || memchr(v, '\0', n))
		return sl_buf_printf(b, "<%s_REDACTED>", label);
	vk = value_key(label, kind, v, n);
	tok = sl_map_get(&m->by_value, vk);
	if (!tok) {
		char *ntok;
		/* All maps together are bounded too: the least recently used
		 * other maps go first (m is the newest: get_map just used it). */
		while (t->total >= t->max_total && sl_lru_oldest(&t->maps) != &m->e)
			sl_lru_drop(&t->maps, sl_lru_oldest(&t->maps));
		if (m->count >= t->max_values || t->total >= t->max_total) {
			free(vk);
			return sl_buf_printf(b, "<%s_REDACTED>", label);
		}
		ntok = sl_printf("<%s_%u>", label, ++m->next[kind]);
		sl_map_put(&m->by_value, vk, ntok);
		sl_map_put(&m->by_token, ntok, sl_strndup(v, n));
		m->count++;
		t->total++;
		tok = ntok;
	}
	free(vk);
	return sl_buf_append(b, tok, strlen(tok));
}

/* ---- scanning ---------------------------------------------------------------- */

struct hit {
	size_t start, end, kind;
};

static int hit_order(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->kind < y->kind ? -1 : x->kind > y->kind;
}

static void add_hit(struct hit **h, size_t *n, size_t *cap, size_t s, size_t e, size_t k)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*h = sl_realloc(*h, *cap * sizeof(**h));
	}
	(*h)[(*n)++] = (struct hit){ s, e, k };
}

static int find(struct sl_tokenize *t, const char *s, size_t len, struct hit **h, size_t *n)
{
	size_t cap = 0;
	*h = NULL;
	*n = 0;
	for (size_t i = 0; i < len;) {
		size_t e = 0, k;
		for (k = 0; k < K_BUILTIN && !e; k++)
			if (t->on[k])
				e = detectors[k](s, len, i);
		if (e > i) {
			add_hit(h, n, &cap, i, e, k - 1);
			i = e;
		} else {
			i++;
		}
	}
	for (size_t p = 0; p < t->npats; p++) {
		size_t off = 0;
		while (off < len) {
			int rc = pcre2_match(t->pats[p].re, (PCRE2_SPTR)s, len, off, 0, t->md, t->mctx);
			PCRE2_SIZE *ov;
			if (rc == PCRE2_ERROR_NOMATCH)
				break;
			if (rc < 0) {
				free(*h);
				*h = NULL;
				return SL_ERR_TOO_LARGE;
			}
			ov = pcre2_get_ovector_pointer(t->md);
			if (ov[1] <= ov[0]) {
				off = (ov[1] > off ? ov[1] : off) + 1;
				continue;
			}
			add_hit(h, n, &cap, ov[0], ov[1], K_BUILTIN + p);
			off = ov[1];
		}
	}
	if (*n > 1)
		qsort(*h, *n, sizeof(**h), hit_order);
	return SL_OK;
}

size_t sl_tokenize_text(struct sl_tokenize *t, const char *key, const char *in, size_t len,
			char **out, size_t *outlen)
{
	struct hit *h;
	size_t n, pos = 0, count = 0;
	struct tmap *m;
	struct sl_buf b;

	*out = NULL;
	if (outlen)
		*outlen = 0;
	if (!t || len == 0)
		return 0;
	if (len > t->max_text || find(t, in, len, &h, &n) < 0)
		return SL_TOKENIZE_FAILED;
	if (n == 0)
		return 0;
	m = get_map(t, key, true);
	sl_buf_init(&b, len + 64 * n + 64);
	for (size_t i = 0; i < n; i++) {
		/* Overlapping hits (a custom pattern across a built-in kind's
		 * value) are one value: the union, of the first hit's kind, so
		 * no part of either stays in clear. */
		size_t start = h[i].start, end = h[i].end, kind = h[i].kind;
		while (i + 1 < n && h[i + 1].start < end) {
			i++;
			if (h[i].end > end)
				end = h[i].end;
		}
		if (sl_buf_append(&b, in + pos, start - pos) < 0 ||
		    put_token(t, m, kind, in + start, end - start, &b) < 0)
			goto fail;
		pos = end;
		count++;
	}
	if (sl_buf_append(&b, in + pos, len - pos) < 0)
		goto fail;
	free(h);
	*out = sl_buf_take(&b, outlen);
	return count;
fail:
	free(h);
	sl_buf_dispose(&b);
	return SL_TOKENIZE_FAILED;
}

size_t sl_tokenize_restore(struct sl_tokenize *t, const char *key, const char *in, size_t len,
			   char **out, size_t *outlen)
{
	struct tmap *m;
	struct sl_buf b;
	size_t pos = 0, count = 0;

	*out = NULL;
	if (outlen)
		*outlen = 0;
	if (!t || len == 0 || !memchr(in, '<', len) || !(m = get_map(t, key, false)))
		return 0;
	if (len > t->max_text)
		return SL_TOKENIZE_FAILED;
	sl_buf_init(&b, len + t->max_value_bytes * (len / 4 + 1));
	for (size_t i = 0; i < len; i++) {
		char tok[LABEL_MAX + 16];
		size_t j = i + 1;
		const char *v;
		if (in[i] != '<')
			continue;
		while (j < len && j - i < sizeof(tok) - 1 && (upper((unsigned char)in[j]) ||
							     digit((unsigned char)in[j]) || in[j] == '_'))
			j++;
		if (j >= len || in[j] != '>' || j - i + 1 >= sizeof(tok))
			continue;
		memcpy(tok, in + i, j - i + 1);
		tok[j - i + 1] = '\0';
		if (!(v = sl_map_get(&m->by_token, tok)))
			continue;
		if (sl_buf_append(&b, in + pos, i - pos) < 0 || sl_buf_append(&b, v, strlen(v)) < 0) {
			sl_buf_dispose(&b);
			return SL_TOKENIZE_FAILED;
		}
		pos = i = j + 1;
		i--;
		count++;
	}
	if (count == 0) {
		sl_buf_dispose(&b);
		return 0;
	}
	if (sl_buf_append(&b, in + pos, len - pos) < 0) {
		sl_buf_dispose(&b);
		return SL_TOKENIZE_FAILED;
	}
	*out = sl_buf_take(&b, outlen);
	return count;
}

size_t sl_tokenize_count(const struct sl_tokenize *t, const char *key)
{
	struct sl_lru_entry *e = t ? sl_lru_peek(&t->maps, key) : NULL;
	return e ? sl_lru_item(e, struct tmap, e)->count : 0;
}

size_t sl_tokenize_maps(const struct sl_tokenize *t)
{
	return t ? t->maps.count : 0;
}

bool sl_tokenize_restores_to(const struct sl_tokenize *t, const char *up, const char *tool)
{
	char full[512];

	if (!t)
		return false;
	snprintf(full, sizeof(full), "%s.%s", up, tool);
	for (size_t i = 0; i < t->nrestore; i++) {
		const char *p = t->restore[i];
		if (strcmp(p, up) == 0 || strcmp(p, full) == 0 || fnmatch(p, full, 0) == 0)
			return true;
	}
	return false;
}

/* ---- JSON --------------------------------------------------------------------- */

typedef size_t (*text_fn)(struct sl_tokenize *t, const char *key, const char *in, size_t len,
			  char **out, size_t *outlen);

/* One walk (core/json.h's, as redaction's): fn on every string value and
 * object key. */
struct walk {
	struct sl_tokenize *t;
	text_fn fn;
	const char *key;
	size_t count;
};

static int on_str(void *ctx, yyjson_mut_doc *d, yyjson_mut_val *v, yyjson_mut_val *member,
		  struct sl_err *err)
{
	struct walk *w = ctx;
	char *out;
	size_t len, n = w->fn(w->t, w->key, yyjson_mut_get_str(v), yyjson_mut_get_len(v), &out, &len);
	yyjson_mut_val *copy;

	(void)member;
	if (n == SL_TOKENIZE_FAILED) {
		sl_err_set(err, "a string over %llu bytes, or a pattern's match limit",
			   (unsigned long long)w->t->max_text);
		return SL_ERR_TOO_LARGE;
	}
	if (n == 0)
		return SL_OK;
	copy = yyjson_mut_strncpy(d, out, len);
	free(out);
	if (!copy)
		sl_oom();
	yyjson_mut_set_strn(v, yyjson_mut_get_str(copy), len);
	w->count += n;
	return SL_OK;
}

/* An object's key is text the model reads as well ({"alice@example.com":
 * {...}}, a _meta key): it is rewritten like a value. Two keys may become
 * one ("a@x.org" next to a literal "<EMAIL_1>"); the object then holds the
 * key twice, as redaction leaves it. */
static int on_key(void *ctx, yyjson_mut_doc *d, yyjson_mut_val *k, struct sl_err *err)
{
	return on_str(ctx, d, k, NULL, err);
}

/* Applies fn to every string value and object key under v in key's map,
 * in place; adds the replacements to *count. */
static int walk(struct sl_tokenize *t, text_fn fn, const char *key, yyjson_mut_doc *d,
		yyjson_mut_val *v, size_t *count, struct sl_err *err)
{
	struct walk w = { t, fn, key, 0 };
	struct sl_json_strings strings = { on_str, on_key, MAX_DEPTH, &w };
	int rc = sl_json_walk_strings(&strings, d, v, err);
	*count += w.count;
	return rc;
}

/* ---- the stage ------------------------------------------------------------------ */

/* Toward a server restoreTo allows, placeholders become real values;
 * toward any other, whatever tokenize finds personal is sent as its
 * placeholder, whoever wrote it: a program holds real values (results
 * into programs are not tokenised), and a value restored toward one
 * server must not go on to another through it. */
static enum sl_stage_rc tokenize_request(void *state, struct sl_call *c)
{
	struct sl_tokenize *t = state;
	struct sl_err err;
	size_t n = 0;

	if (!t || !c->args)
		return SL_STAGE_DECLINED;
	if (!sl_tokenize_restores_to(t, c->up->name, c->tool)) {
		if (walk(t, sl_tokenize_text, c->client_key, c->doc, c->args, &n, &err) < 0) {
			sl_call_set_error(c, SL_OUTCOME_FAILED,
					  "the arguments could not be scanned for personal data (%s); "
					  "the call was not sent", err.msg);
			return SL_STAGE_ERROR;
		}
		if (n > 0)
			sl_log(SL_LOG_DEBUG, "call %llu %s.%s: %zu personal value(s) sent as "
			       "placeholders (not in restoreTo)", (unsigned long long)c->id,
			       c->up->name, c->tool, n);
		return SL_STAGE_NEXT;
	}
	if (walk(t, sl_tokenize_restore, c->client_key, c->doc, c->args, &n, &err) < 0) {
		sl_call_set_error(c, SL_OUTCOME_FAILED,
				  "placeholders in the arguments could not be restored (%s); the call "
				  "was not sent", err.msg);
		return SL_STAGE_ERROR;
	}
	if (n > 0)
		sl_log(SL_LOG_DEBUG, "call %llu %s.%s: %zu placeholder(s) restored",
		       (unsigned long long)c->id, c->up->name, c->tool, n);
	return SL_STAGE_NEXT;
}

/* A program's own calls get real values: the program computes on them in
 * the sandbox, and its answer is tokenised on the way out (output). */
static enum sl_stage_rc tokenize_response(void *state, struct sl_call *c)
{
	struct sl_tokenize *t = sl_gen_state(c->gen, &sl_stage_tokenize);
	struct sl_err err;
	size_t n = 0;

	(void)state;
	if (!t || c->origin == SL_ORIGIN_CODE || c->outcome != SL_OUTCOME_OK || !c->result)
		return SL_STAGE_DECLINED;
	if (walk(t, sl_tokenize_text, c->client_key, c->doc, sl_call_result_mut(c), &n, &err) < 0) {
		sl_call_set_error(c, SL_OUTCOME_FAILED,
				  "the result could not be scanned for personal data (%s); it was "
				  "withheld", err.msg);
		return SL_STAGE_ERROR;
	}
	return SL_STAGE_NEXT;
}

static void tokenize_output(void *state, struct sl_output *o)
{
	char *out;
	size_t len, n;

	if (!state || !o->text)
		return;
	n = sl_tokenize_text(state, o->client_key, o->text, o->text_len, &out, &len);
	sl_output_rewrite(o, n == SL_TOKENIZE_FAILED, out, len, "personal data");
}

/* Peer text is tokenised in the map of the client it goes to when the
 * path knows it (p->client_key: forwarded answers and errors, a call's
 * error); else (notifications, relayed requests, a task's status) in a
 * map of its own, "-", whose placeholders no client can restore. */
static void tokenize_peer(void *state, struct sl_peer *p)
{
	struct sl_err err;
	size_t n = 0;

	if (!state || p->kind == SL_PEER_UPSTREAM || p->to_program)
		return;
	if (walk(state, sl_tokenize_text, p->client_key ? p->client_key : "-", p->doc, p->val, &n,
		 &err) < 0) {
		p->withheld = sl_printf("the %s %s server '%s' could not be scanned for personal "
					"data (%s); it was withheld", p->method,
					sl_peer_noun(p->kind), p->up->name, err.msg);
		return;
	}
	if (n > 0)
		p->changed = true;
}

/* ---- config ----------------------------------------------------------------------- */

struct options {
	bool enabled;
	yyjson_val *kinds, *patterns, *restore;
	uint64_t max_values, max_value_bytes, max_text, max_maps, ttl_s, max_total;
};

static int parse_array(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		       void *target)
{
	if (!yyjson_is_arr(v))
		return sl_conf_bad(cx, k);
	*(yyjson_val **)(void *)((char *)target + k->offset) = v;
	return SL_OK;
}

#define OPT(field) SL_CONF_AT(struct options, field)
static const struct sl_conf_key tokenize_keys[] = {
	{ "enabled", SL_CONF_BOOL, OPT(enabled), .dflt = 0,
	  .doc = "`true`: personal data in what reaches the model becomes per-session placeholders "
		 "(`<EMAIL_1>`)." },
	{ "kinds", SL_CONF_CUSTOM, OPT(kinds), .parse = parse_array,
	  .shape = "an array of kinds", .dflt_doc = "all: `email`, `phone`, `card`, `iban`, `ssn`, "
	  "`nino`",
	  .doc = "The built-in detectors to run (docs/stages/tokenize.md)." },
	{ "patterns", SL_CONF_CUSTOM, OPT(patterns), .parse = parse_array,
	  .shape = "an array of {name, regex}", .dflt_doc = "`[]`",
	  .doc = "Custom kinds, PCRE2 syntax (at most 16, a regex at most 512 bytes); a match "
		 "becomes `<NAME_n>` (name: 1-32 of `A-Za-z0-9_`, upper-cased)." },
	{ "restoreTo", SL_CONF_CUSTOM, OPT(restore), .parse = parse_array,
	  .shape = "an array of \"server\", \"server.tool\" or globs", .dflt_doc = "`[]`",
	  .doc = "Where placeholders in tool-call arguments are restored to real values; "
		 "elsewhere they are sent as they are, and personal values in the arguments "
		 "(a program's, the model's own) are sent as placeholders." },
	{ "maxValues", SL_CONF_UINT, OPT(max_values), .min = 1, .max = 1u << 20, .dflt = 4096,
	  .doc = "Values one session's map holds; past it new values become `<KIND_REDACTED>`." },
	{ "maxValueBytes", SL_CONF_UINT, OPT(max_value_bytes), .min = 8, .max = 4096, .dflt = 256,
	  .doc = "A longer match becomes `<KIND_REDACTED>`." },
	{ "maxTextBytes", SL_CONF_UINT, OPT(max_text), .min = 1024, .max = 1u << 30,
	  .dflt = 16u << 20,
	  .doc = "The longest string scanned; a longer one fails the call (withheld)." },
	{ "maxTotalValues", SL_CONF_UINT, OPT(max_total), .min = 1, .max = 1u << 24,
	  .dflt = 131072,
	  .doc = "Values all maps hold together (memory: at most about 700 bytes each); past it the "
		 "least recently used other maps are dropped." },
	{ "maxSessions", SL_CONF_UINT, OPT(max_maps), .min = 1, .max = 1u << 20, .dflt = 1024,
	  .doc = "Maps kept (one per session or stateless caller); the least recently used goes." },
	{ "ttlSeconds", SL_CONF_UINT, OPT(ttl_s), .min = 1, .max = 30u * 86400, .dflt = 3600,
	  .doc = "A map unused this long is dropped (its placeholders no longer restore)." },
};
#undef OPT

static const struct sl_conf_section tokenize_conf = {
	"sluice.tokenize",
	"Personal data as per-session placeholders (docs/stages/tokenize.md).",
	tokenize_keys, SL_COUNT(tokenize_keys), SL_CONF_STRICT, NULL,
};

static void tokenize_free(struct sl_tokenize *t)
{
	if (!t)
		return;
	sl_lru_dispose(&t->maps);
	for (size_t i = 0; i < t->npats; i++)
		pcre2_code_free(t->pats[i].re);
	pcre2_match_data_free(t->md);
	pcre2_match_context_free(t->mctx);
	for (size_t i = 0; i < t->nrestore; i++)
		free(t->restore[i]);
	free(t->restore);
	free(t);
}

static bool valid_label(const char *s, char *label)
{
	size_t n = strlen(s);
	if (n == 0 || n > LABEL_MAX)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && !alnum((unsigned char)s[i]) && s[i] != '_')
			return false;
		label[i] = (char)toupper((unsigned char)s[i]);
	}
	return true;
}

static int load_kinds(struct sl_tokenize *t, yyjson_val *kinds, struct sl_err *err)
{
	yyjson_val *e;
	size_t i, max;
	for (size_t k = 0; k < K_BUILTIN; k++)
		t->on[k] = !kinds;
	yyjson_arr_foreach(kinds, i, max, e) {
		size_t k = 0;
		while (k < K_BUILTIN && !yyjson_equals_str(e, kind_names[k]))
			k++;
		if (k == K_BUILTIN) {
			sl_err_set(err, "sluice.tokenize.kinds[%zu]: not a kind (email, phone, card, "
				   "iban, ssn, nino)", i);
			return SL_ERR_INVALID;
		}
		t->on[k] = true;
	}
	return SL_OK;
}

static int load_patterns(struct sl_tokenize *t, yyjson_val *pats, struct sl_err *err)
{
	yyjson_val *v;
	size_t i, max;
	if (yyjson_arr_size(pats) > MAX_PATTERNS) {
		sl_err_set(err, "sluice.tokenize.patterns: at most %d", MAX_PATTERNS);
		return SL_ERR_INVALID;
	}
	yyjson_arr_foreach(pats, i, max, v) {
		const char *name = sl_json_str(v, "name"), *re = sl_json_str(v, "regex");
		int ec;
		PCRE2_SIZE eo;
		struct custom *c = &t->pats[t->npats];
		if (!yyjson_is_obj(v) || !name || !re || yyjson_obj_size(v) != 2 ||
		    !valid_label(name, c->label) || strlen(re) > MAX_REGEX) {
			sl_err_set(err, "sluice.tokenize.patterns[%zu] must be {\"name\": 1-32 of "
				   "A-Za-z0-9_, \"regex\": at most %d bytes}", i, MAX_REGEX);
			return SL_ERR_INVALID;
		}
		c->re = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED,
				      PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &ec, &eo, NULL);
		if (!c->re) {
			PCRE2_UCHAR msg[128];
			pcre2_get_error_message(ec, msg, sizeof(msg));
			sl_err_set(err, "sluice.tokenize.patterns[%zu]: bad regex at offset %zu: %s", i,
				   (size_t)eo, (char *)msg);
			return SL_ERR_INVALID;
		}
		(void)pcre2_jit_compile(c->re, PCRE2_JIT_COMPLETE);
		t->npats++;
	}
	return SL_OK;
}

static int load_restore(struct sl_tokenize *t, yyjson_val *r, struct sl_err *err)
{
	yyjson_val *e;
	size_t i, max;
	yyjson_arr_foreach(r, i, max, e) {
		if (!yyjson_is_str(e) || yyjson_get_len(e) == 0 || yyjson_get_len(e) > 256) {
			sl_err_set(err, "sluice.tokenize.restoreTo[%zu]: a server, server.tool or a "
				   "glob (1-256 bytes)", i);
			return SL_ERR_INVALID;
		}
	}
	yyjson_arr_foreach(r, i, max, e) {
		t->restore = sl_realloc(t->restore, (t->nrestore + 1) * sizeof(*t->restore));
		t->restore[t->nrestore++] = sl_strdup(yyjson_get_str(e));
	}
	return SL_OK;
}

/* No state when disabled: every hook then declines. */
static int tokenize_init(const struct sl_config *cfg, const struct sl_services *svc,
			 yyjson_val *section, void **state, struct sl_err *err)
{
	struct options o = { 0 };
	struct sl_tokenize *t;
	(void)cfg;

	*state = NULL;
	if (sl_conf_load(&tokenize_conf, section, &o, err) < 0)
		return SL_ERR_INVALID;
	if (!o.enabled)
		return SL_OK;
	t = sl_alloc(sizeof(*t));
	sl_lru_init(&t->maps, o.max_maps, 0, map_free, t);
	t->max_values = o.max_values;
	t->max_value_bytes = o.max_value_bytes;
	t->max_text = o.max_text;
	t->ttl_ms = o.ttl_s * 1000;
	t->max_total = o.max_total;
	if (load_kinds(t, o.kinds, err) < 0 || load_patterns(t, o.patterns, err) < 0 ||
	    load_restore(t, o.restore, err) < 0) {
		tokenize_free(t);
		return SL_ERR_INVALID;
	}
	t->md = pcre2_match_data_create(1, NULL);
	t->mctx = pcre2_match_context_create(NULL);
	if (!t->md || !t->mctx)
		sl_oom();
	pcre2_set_match_limit(t->mctx, MATCH_LIMIT);
	*state = t;
	return SL_OK;
}

static void tokenize_fini(void *state)
{
	tokenize_free(state);
}

const struct sl_stage sl_stage_tokenize = {
	.name = "tokenize",
	.conf = &tokenize_conf,
	.init = tokenize_init,
	.fini = tokenize_fini,
	.request = tokenize_request,
	.output = tokenize_output,
	.peer = tokenize_peer,
};

/* The response half, after the cache: shares sl_stage_tokenize's state
 * (same name, no section of its own). */
const struct sl_stage sl_stage_tokenize_result = {
	.name = "tokenize",
	.response = tokenize_response,
};

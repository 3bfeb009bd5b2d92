/*
 * Tokens and BM25F ranking for search_tools (see discovery.h and
 * docs/internals/DISCOVERY.md for the weights and why).
 *
 * A document is one tool, in fields of different weight; a term's
 * frequency in a document is the weighted sum of its counts in the fields,
 * and so is the document's length (BM25F, one shared k1 and b). The index
 * is inverted (term -> the documents that have it) and made of parts, one
 * per server list (index.c keeps them): a search reads only the postings
 * of its terms, with frequencies and lengths summed over the parts it is
 * given, so the scores are those of one index of all their documents.
 */
#include "discovery/discovery.h"
#include "core/map.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define K1 1.2
#define B 0.75
#define MAX_QUERY_TERMS 32
#define MAX_FIELD_TOKENS 512 /* tokens read from one field of one tool */
#define SYNONYM_WEIGHT 0.6   /* a synonym counts a little less than the word */

/* The field weights (1.5, 3, 1, 0.75 and 0.4) in twentieths: frequencies
 * and lengths are sums of whole UNITs, exact whatever the order of the
 * additions, and a posting is 8 bytes. */
#define UNIT 20.0
static const uint32_t field_weight[SL_BM25_NFIELDS] = {
	[SL_BM25_SERVER] = 30,
	[SL_BM25_NAME] = 60,
	[SL_BM25_DESCRIPTION] = 20,
	[SL_BM25_PARAM] = 15,
	[SL_BM25_PARAM_DESC] = 8,
};

static const char *const stop_words[] = { /* sorted, at most 5 letters */
	"a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "does", "e", "eg",
	"for", "from", "g", "how", "i", "in", "into", "is", "it", "its", "me", "my", "of", "on",
	"or", "so", "some", "that", "the", "their", "them", "this", "to", "what", "which", "with",
};

/* Words that mean the same thing, after stemming: the left one is written
 * as the right one (or ones) in documents and queries alike. */
static const struct { const char *word, *as[2]; } same[] = {
	{ "repository", { "repo" } },
	{ "pr", { "pull", "request" } },
	{ "prs", { "pull", "request" } }, /* too short for the stemmer */
	{ "db", { "databas" } },
};

/* Related words a query also looks for, at SYNONYM_WEIGHT: a ticket of a
 * tracker is an issue or a bug elsewhere, and the other way round. */
static const char *const related[][3] = {
	{ "ticket", "issu", "bug" },
};

static bool ends(const char *w, size_t n, const char *suf)
{
	size_t l = strlen(suf);
	return n >= l && memcmp(w + n - l, suf, l) == 0;
}

static bool vowel(char c)
{
	return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y';
}

static bool has_vowel(const char *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (vowel(w[i]))
			return true;
	return false;
}

/* "runn" -> "run", "committ" -> "commit"; "fill" and "pass" stay. */
static size_t undouble(const char *w, size_t n)
{
	if (n >= 3 && w[n - 1] == w[n - 2] && !vowel(w[n - 1]) && w[n - 1] != 'l' &&
	    w[n - 1] != 's' && w[n - 1] != 'z')
		return n - 1;
	return n;
}

/* A light stemmer (plural -s/-es/-ies, -ing, -ed, final -e): it only has to
 * send the forms of one word to the same token, not to find the root. */
void sl_bm25_stem(char *w)
{
	size_t n = strlen(w);

	if (n <= 3)
		return;
	if (ends(w, n, "ies") && n > 4) {
		w[n - 3] = 'y';
		n -= 2;
	} else if (ends(w, n, "sses")) {
		n -= 2;
	} else if (ends(w, n, "es") && !ends(w, n, "aes") && !ends(w, n, "ees") && !ends(w, n, "oes")) {
		n -= 1;
	} else if (ends(w, n, "s") && !ends(w, n, "ss") && !ends(w, n, "us") && !ends(w, n, "is")) {
		n -= 1;
	} else if (ends(w, n, "ing") && n > 5 && has_vowel(w, n - 3)) {
		n = undouble(w, n - 3);
	} else if (ends(w, n, "ed") && n > 4 && has_vowel(w, n - 2)) {
		n = undouble(w, n - 2);
	}
	if (n > 3 && w[n - 1] == 'e')
		n--;
	w[n] = '\0';
}

static int by_word(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

/* stop_words is sorted: a binary search (this runs for every word of every
 * tool on each search). */
static bool is_stop(const char *w)
{
	return strlen(w) <= 5 &&
	       bsearch(w, stop_words, SL_COUNT(stop_words), sizeof(stop_words[0]), by_word) != NULL;
}

static bool lower(char c) { return c >= 'a' && c <= 'z'; }
static bool upper(char c) { return c >= 'A' && c <= 'Z'; }
static bool digit(char c) { return c >= '0' && c <= '9'; }
/* Bytes of UTF-8 sequences count as letters: they are kept, not split. */
static bool wordc(char c) { return lower(c) || upper(c) || digit(c) || (unsigned char)c >= 0x80; }

static size_t push(char (*out)[SL_BM25_TOKEN_MAX + 1], size_t n, size_t max, const char *w)
{
	if (n < max) {
		size_t l = strnlen(w, SL_BM25_TOKEN_MAX);
		memcpy(out[n], w, l);
		out[n][l] = '\0';
		n++;
	}
	return n;
}

size_t sl_bm25_tokens(const char *text, char (*out)[SL_BM25_TOKEN_MAX + 1], size_t max)
{
	size_t n = 0;
	const char *p = text ? text : "";

	while (*p && n < max) {
		char w[SL_BM25_TOKEN_MAX + 1];
		size_t l = 0;

		while (*p && !wordc(*p))
			p++;
		if (!*p)
			break;
		/* One word: camelCase and HTMLParser split, snake_case and
		 * kebab-case were split by the loop above; "PRs" stays one. */
		do {
			if (l < SL_BM25_TOKEN_MAX)
				w[l++] = upper(*p) ? (char)(*p - 'A' + 'a') : *p;
			p++;
		} while (wordc(*p) && !(upper(*p) && (lower(p[-1]) || digit(p[-1]))) &&
			 !(upper(*p) && upper(p[-1]) && lower(p[1]) && !(p[1] == 's' && !lower(p[2]))));
		w[l] = '\0';
		if (l < 2 || is_stop(w))
			continue;
		sl_bm25_stem(w);
		bool mapped = false;
		for (size_t i = 0; i < SL_COUNT(same) && !mapped; i++) {
			if (strcmp(w, same[i].word) != 0)
				continue;
			mapped = true;
			for (size_t j = 0; j < SL_COUNT(same[i].as) && same[i].as[j]; j++)
				n = push(out, n, max, same[i].as[j]);
		}
		if (!mapped)
			n = push(out, n, max, w);
	}
	return n;
}

/* ---- the index ------------------------------------------------------------ */

/* One document's weighted frequency of a term. Postings are appended in
 * document order (documents are added one after the other), so each list
 * is sorted by doc and holds a document at most once. */
struct posting {
	uint32_t doc;
	uint32_t tf;  /* in UNITs */
};

struct term {
	struct posting *v;
	uint32_t n, cap;
};

struct sl_bm25 {
	struct sl_map terms;  /* token -> (void *)(index in term + 1) */
	struct term *term;
	size_t nterms, cap;
	uint32_t *len;        /* weighted length of each document, in UNITs */
	size_t n, ncap;
	uint64_t total;       /* the sum of the lengths */
};

struct sl_bm25 *sl_bm25_new(void)
{
	struct sl_bm25 *ix = sl_alloc(sizeof(struct sl_bm25));
	sl_map_init(&ix->terms);
	return ix;
}

void sl_bm25_free(struct sl_bm25 *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->nterms; i++)
		free(ix->term[i].v);
	free(ix->term);
	free(ix->len);
	sl_map_dispose(&ix->terms);
	free(ix);
}

size_t sl_bm25_doc(struct sl_bm25 *ix)
{
	if (ix->n == ix->ncap) {
		ix->ncap = ix->ncap ? ix->ncap * 2 : 64;
		ix->len = sl_realloc(ix->len, ix->ncap * sizeof(*ix->len));
	}
	ix->len[ix->n] = 0;
	return ix->n++;
}

size_t sl_bm25_count(const struct sl_bm25 *ix)
{
	return ix->n;
}

/* malloc's own cost of one allocation (glibc: a 16-byte header, sizes
 * rounded up to 16). */
static size_t chunk(size_t n)
{
	return n ? (n + 8 + 15) / 16 * 16 : 0;
}

size_t sl_bm25_bytes(const struct sl_bm25 *ix)
{
	size_t b = chunk(sizeof(*ix)) + chunk(ix->ncap * sizeof(*ix->len)) +
		   chunk(ix->cap * sizeof(*ix->term)) + chunk(ix->terms.cap * sizeof(struct sl_map_slot));
	for (size_t i = 0; i < ix->nterms; i++)
		b += chunk(ix->term[i].cap * sizeof(struct posting));
	/* Each term's key is the map's copy: a token of at most 32 bytes. */
	return b + ix->nterms * 32;
}

void sl_bm25_seal(struct sl_bm25 *ix)
{
	for (size_t i = 0; i < ix->nterms; i++) {
		struct term *t = &ix->term[i];
		if (t->cap > t->n) {
			t->v = sl_realloc(t->v, t->n * sizeof(*t->v));
			t->cap = t->n;
		}
	}
	if (ix->ncap > ix->n) {
		ix->len = sl_realloc(ix->len, (ix->n + 1) * sizeof(*ix->len));
		ix->ncap = ix->n + 1;
	}
	if (ix->cap > ix->nterms) {
		ix->term = sl_realloc(ix->term, (ix->nterms + 1) * sizeof(*ix->term));
		ix->cap = ix->nterms + 1;
	}
}

void sl_bm25_add(struct sl_bm25 *ix, size_t doc, enum sl_bm25_field f, const char *text)
{
	char toks[MAX_FIELD_TOKENS][SL_BM25_TOKEN_MAX + 1]; /* 17 KiB */
	size_t n = sl_bm25_tokens(text, toks, MAX_FIELD_TOKENS);

	for (size_t i = 0; i < n; i++) {
		uintptr_t at = (uintptr_t)sl_map_get(&ix->terms, toks[i]);
		struct term *t;
		if (!at) {
			if (ix->nterms == ix->cap) {
				ix->cap = ix->cap ? ix->cap * 2 : 64;
				ix->term = sl_realloc(ix->term, ix->cap * sizeof(*ix->term));
			}
			memset(&ix->term[ix->nterms], 0, sizeof(ix->term[0]));
			at = ++ix->nterms;
			sl_map_put(&ix->terms, toks[i], (void *)at);
		}
		t = &ix->term[at - 1];
		if (t->n == 0 || t->v[t->n - 1].doc != (uint32_t)doc) {
			if (t->n == t->cap) {
				t->cap = t->cap ? t->cap * 2 : 2;
				t->v = sl_realloc(t->v, t->cap * sizeof(*t->v));
			}
			t->v[t->n++] = (struct posting){ (uint32_t)doc, 0 };
		}
		t->v[t->n - 1].tf += field_weight[f];
	}
	ix->len[doc] += field_weight[f] * (uint32_t)n;
	ix->total += field_weight[f] * (uint64_t)n;
}

static const struct term *term_of(const struct sl_bm25 *ix, const char *tok)
{
	uintptr_t at = (uintptr_t)sl_map_get(&ix->terms, tok);
	return at ? &ix->term[at - 1] : NULL;
}

/* The query's terms, each once, with the related words added: weight[t]
 * is 1 for a word asked, SYNONYM_WEIGHT for a related one, and origin[t]
 * the word it was added for (itself for a word asked). */
static size_t query_terms(const char *query, char (*terms)[SL_BM25_TOKEN_MAX + 1],
			  double *weight, size_t *origin)
{
	char toks[MAX_QUERY_TERMS][SL_BM25_TOKEN_MAX + 1];
	size_t n = sl_bm25_tokens(query, toks, MAX_QUERY_TERMS), nt = 0;

	for (size_t i = 0; i < n; i++) {
		const char *add[3] = { toks[i], NULL, NULL };
		size_t first = 0;
		for (size_t r = 0; r < SL_COUNT(related); r++)
			for (size_t j = 0; j < 3; j++)
				if (strcmp(toks[i], related[r][j]) == 0) {
					add[1] = related[r][(j + 1) % 3];
					add[2] = related[r][(j + 2) % 3];
				}
		for (size_t a = 0; a < 3 && add[a]; a++) {
			double w = a ? SYNONYM_WEIGHT : 1.0;
			size_t t;
			for (t = 0; t < nt && strcmp(terms[t], add[a]) != 0; t++)
				;
			if (t == nt) {
				strcpy(terms[nt], add[a]);
				origin[nt] = a ? first : nt;
				weight[nt++] = w;
			} else if (weight[t] < w) {
				weight[t] = w;
				origin[t] = t;
			}
			if (a == 0)
				first = t;
		}
	}
	return nt;
}

static int by_rank(const void *a, const void *b)
{
	const struct sl_bm25_hit *x = a, *y = b;
	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	return x->doc < y->doc ? -1 : x->doc > y->doc;
}

/* The worst of the heap h[0..m) at its root (by_rank: the largest). */
static void sift(struct sl_bm25_hit *h, size_t m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, w = i;
		if (l < m && by_rank(&h[l], &h[w]) > 0)
			w = l;
		if (r < m && by_rank(&h[r], &h[w]) > 0)
			w = r;
		if (w == i)
			return;
		struct sl_bm25_hit t = h[i];
		h[i] = h[w];
		h[w] = t;
		i = w;
	}
}

void sl_bm25_best(struct sl_bm25_hit *hits, size_t n, size_t m)
{
	if (m > n)
		m = n;
	if (m == 0)
		return;
	if (m < n / 4) {
		/* A heap of the best m so far, its worst at the root: n log m. */
		for (size_t i = m / 2 + 1; i-- > 0;)
			sift(hits, m, i);
		for (size_t i = m; i < n; i++)
			if (by_rank(&hits[i], &hits[0]) < 0) {
				struct sl_bm25_hit t = hits[0];
				hits[0] = hits[i];
				hits[i] = t;
				sift(hits, m, 0);
			}
	} else {
		m = n;
	}
	qsort(hits, m, sizeof(*hits), by_rank);
}

size_t sl_bm25_search(const struct sl_bm25 *const *parts, size_t nparts, const char *query,
		      size_t best, struct sl_bm25_hit **out)
{
	char terms[MAX_QUERY_TERMS * 3][SL_BM25_TOKEN_MAX + 1];
	double weight[MAX_QUERY_TERMS * 3], idf[MAX_QUERY_TERMS * 3], w[MAX_QUERY_TERMS * 3];
	double avg, ndocs = 0;
	size_t origin[MAX_QUERY_TERMS * 3], nt = query_terms(query, terms, weight, origin);
	size_t nhits = 0, npost = 0, cap = 16, *base;
	uint64_t total = 0;
	uint32_t *slot;
	struct sl_bm25_hit *hits;

	*out = NULL;
	for (size_t p = 0; p < nparts; p++) {
		ndocs += (double)parts[p]->n;
		total += parts[p]->total; /* whole UNITs: the same sum in any order */
	}
	if (ndocs == 0 || nt == 0)
		return 0;
	avg = total > 0 ? (double)total / UNIT / ndocs : 1;
	/* Document frequencies over every part: those of all their documents. */
	for (size_t t = 0; t < nt; t++) {
		double df = 0;
		for (size_t p = 0; p < nparts; p++) {
			const struct term *te = term_of(parts[p], terms[t]);
			df += te ? te->n : 0;
		}
		idf[t] = df == 0 ? 0 : log(1 + (ndocs - df + 0.5) / (df + 0.5));
	}
	for (size_t t = 0; t < nt; t++) {
		/* A synonym is worth no more than the word asked for: a rare
		 * synonym must not outrank the word itself. */
		w[t] = idf[t];
		if (origin[t] != t && idf[origin[t]] > 0 && idf[origin[t]] < w[t])
			w[t] = idf[origin[t]];
		for (size_t p = 0; w[t] > 0 && p < nparts; p++) {
			const struct term *te = term_of(parts[p], terms[t]);
			npost += te ? te->n : 0;
		}
	}
	if (npost == 0)
		return 0;
	/* Each document's score summed term by term, as one pass over the
	 * terms would (the same score to the last bit whatever the parts), in
	 * a table sized by the postings read, not by the catalog. */
	while (cap < 2 * npost)
		cap *= 2;
	slot = sl_alloc(cap * sizeof(*slot)); /* index in hits + 1, 0: free */
	hits = sl_alloc(npost * sizeof(*hits));
	base = sl_alloc((nparts + 1) * sizeof(*base));
	for (size_t p = 0; p < nparts; p++)
		base[p + 1] = base[p] + parts[p]->n;
	for (size_t t = 0; t < nt; t++) {
		for (size_t p = 0; w[t] > 0 && p < nparts; p++) {
			const struct term *te = term_of(parts[p], terms[t]);
			for (uint32_t i = 0; te && i < te->n; i++) {
				double tf = te->v[i].tf / UNIT, len = parts[p]->len[te->v[i].doc] / UNIT;
				uint64_t g = base[p] + te->v[i].doc;
				size_t at = (size_t)(g * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
				struct sl_bm25_hit *h;
				while (slot[at] && (base[hits[slot[at] - 1].part] + hits[slot[at] - 1].doc) != g)
					at = (at + 1) & (cap - 1);
				if (!slot[at]) {
					hits[nhits] = (struct sl_bm25_hit){ (uint32_t)p, te->v[i].doc, 0 };
					slot[at] = (uint32_t)++nhits;
				}
				h = &hits[slot[at] - 1];
				h->score += weight[t] * w[t] * tf * (K1 + 1) /
					    (tf + K1 * (1 - B + B * len / avg));
			}
		}
	}
	free(slot);
	free(base);
	sl_bm25_best(hits, nhits, best);
	*out = hits;
	return nhits;
}

void sl_bm25_rank(struct sl_bm25 *ix, const char *query, double *scores)
{
	const struct sl_bm25 *parts[1] = { ix };
	struct sl_bm25_hit *hits;
	size_t n = sl_bm25_search(parts, 1, query, 0, &hits);

	for (size_t d = 0; d < ix->n; d++)
		scores[d] = 0;
	for (size_t i = 0; i < n; i++)
		scores[hits[i].doc] = hits[i].score;
	free(hits);
}

/*
 * Tokens and BM25F ranking for search_tools (see discovery.h and
 * docs/internals/DISCOVERY.md for the weights and why).
 *
 * A document is one tool, in fields of different weight; a term's
 * frequency in a document is the weighted sum of its counts in the fields,
 * and so is the document's length (BM25F, one shared k1 and b). The index
 * is small (one entry per tool) and rebuilt for each search: the catalog
 * and what policy and pinning hide can change between two searches.
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

static const double field_weight[SL_BM25_NFIELDS] = {
	[SL_BM25_SERVER] = 1.5,
	[SL_BM25_NAME] = 3.0,
	[SL_BM25_DESCRIPTION] = 1.0,
	[SL_BM25_PARAM] = 0.75,
	[SL_BM25_PARAM_DESC] = 0.4,
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

struct doc {
	struct sl_map at;  /* token -> (void *)(index in tf + 1) */
	double *tf;        /* weighted term frequencies */
	size_t ntf, cap;
	double len;        /* weighted length */
};

struct sl_bm25 {
	struct doc *docs;
	size_t n, cap;
};

struct sl_bm25 *sl_bm25_new(void)
{
	return sl_alloc(sizeof(struct sl_bm25));
}

void sl_bm25_free(struct sl_bm25 *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->n; i++) {
		sl_map_dispose(&ix->docs[i].at);
		free(ix->docs[i].tf);
	}
	free(ix->docs);
	free(ix);
}

size_t sl_bm25_doc(struct sl_bm25 *ix)
{
	if (ix->n == ix->cap) {
		ix->cap = ix->cap ? ix->cap * 2 : 64;
		ix->docs = sl_realloc(ix->docs, ix->cap * sizeof(*ix->docs));
	}
	memset(&ix->docs[ix->n], 0, sizeof(ix->docs[ix->n]));
	sl_map_init(&ix->docs[ix->n].at);
	return ix->n++;
}

void sl_bm25_add(struct sl_bm25 *ix, size_t doc, enum sl_bm25_field f, const char *text)
{
	char toks[MAX_FIELD_TOKENS][SL_BM25_TOKEN_MAX + 1]; /* 17 KiB */
	struct doc *d = &ix->docs[doc];
	size_t n = sl_bm25_tokens(text, toks, MAX_FIELD_TOKENS);

	for (size_t i = 0; i < n; i++) {
		uintptr_t at = (uintptr_t)sl_map_get(&d->at, toks[i]);
		if (!at) {
			if (d->ntf == d->cap) {
				d->cap = d->cap ? d->cap * 2 : 16;
				d->tf = sl_realloc(d->tf, d->cap * sizeof(*d->tf));
			}
			d->tf[d->ntf] = 0;
			at = ++d->ntf;
			sl_map_put(&d->at, toks[i], (void *)at);
		}
		d->tf[at - 1] += field_weight[f];
	}
	d->len += field_weight[f] * (double)n;
}

static double tf_of(const struct doc *d, const char *tok)
{
	uintptr_t at = (uintptr_t)sl_map_get(&d->at, tok);
	return at ? d->tf[at - 1] : 0;
}

void sl_bm25_rank(struct sl_bm25 *ix, const char *query, double *scores)
{
	char toks[MAX_QUERY_TERMS][SL_BM25_TOKEN_MAX + 1], terms[MAX_QUERY_TERMS * 3][SL_BM25_TOKEN_MAX + 1];
	double weight[MAX_QUERY_TERMS * 3], idf[MAX_QUERY_TERMS * 3], avg = 0;
	size_t origin[MAX_QUERY_TERMS * 3];
	size_t n = sl_bm25_tokens(query, toks, MAX_QUERY_TERMS), nt = 0;

	/* The query's terms, each once, with the related words added. */
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
	for (size_t d = 0; d < ix->n; d++) {
		scores[d] = 0;
		avg += ix->docs[d].len;
	}
	if (ix->n == 0)
		return;
	avg = avg > 0 ? avg / (double)ix->n : 1;
	for (size_t t = 0; t < nt; t++) {
		double df = 0;
		for (size_t d = 0; d < ix->n; d++)
			df += tf_of(&ix->docs[d], terms[t]) > 0;
		idf[t] = df == 0 ? 0 : log(1 + ((double)ix->n - df + 0.5) / (df + 0.5));
	}
	for (size_t t = 0; t < nt; t++) {
		/* A synonym is worth no more than the word asked for: a rare
		 * synonym must not outrank the word itself. */
		double w = idf[t];
		if (origin[t] != t && idf[origin[t]] > 0 && idf[origin[t]] < w)
			w = idf[origin[t]];
		if (w == 0)
			continue;
		for (size_t d = 0; d < ix->n; d++) {
			double tf = tf_of(&ix->docs[d], terms[t]);
			if (tf > 0)
				scores[d] += weight[t] * w * tf * (K1 + 1) /
					     (tf + K1 * (1 - B + B * ix->docs[d].len / avg));
		}
	}
}
